"""Case files: the one home of their formats (docs/formats.md): regression `.spec`
files, the fuzz driver's `.finding` files and Hypothesis's `.failure` files.

A regression is a `.spec` file: `# key: value` header lines, then one spec line, e.g.

    # class: no-progress
    # classes: no-progress
    # found-by: libfuzzer
    # fault-pc: 0x12baa (__asm_copy_to_user+0x12)
    # profile: linux
    # options: -DCONFIG_X --kind copy
    riscv/copy_user:n=5,src_off=4093,src_fault=3

Campaigns save one per (routine build, class, fault pc); replay, repro, junit and the
ci/ scripts read them. A case a campaign had no time left to triage is saved in the same
format with an `# untriaged:` line saying why and no class of its own (save_untriaged):
replay reads it as any other. A `.spec` that is not whole (no spec line, a last line cut short,
bytes that are not text) is an error naming the file: a lost regression must never pass
as a clean replay.

A driver's `.finding` is `key=value` lines (spec=, classes=, why=, input=: read_finding).
A Hypothesis campaign's `.failure` (format_failure) is a spec file too: `# key: value`
lines (the command that found it, its classes, the build's options, the case as
Hypothesis shows it), then its spec line; repro and replay read it as they read a `.spec`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import atomic, files, records
from .errors import CopyfuzzError
from .spec import Spec, format_spec

if TYPE_CHECKING:
    from .routines import Routine

SUFFIX = ".spec"
FINDING_SUFFIX = ".finding"  # a fuzz driver's (fuzz/driver.c)
FAILURE_SUFFIX = ".failure"  # a Hypothesis campaign's (format_failure)
# Files whose spec lines are the whole story: read_specs reads them, and they must be whole.
SPEC_SUFFIXES = (SUFFIX, FINDING_SUFFIX, FAILURE_SUFFIX)
LOCK = ".lock"  # in the regressions directory: dedupe-then-write is one step across runs
# A spec line: optional `spec=` (driver .finding files), optional routine, then fields.
SPEC_LINE = re.compile(r"^(?:spec=)?(?:(?P<routine>\S+):)?(?P<fields>n=\S*)$")


class DamagedFile(CopyfuzzError):
    """A case file that is not whole: exit 2, naming it."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: damaged case file ({why}); restore it from version control or delete it")


def parse_header(text: str) -> dict[str, str]:
    """The `# key: value` lines (the first of a key wins)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("#") and ":" in line:
            key, _, value = line[1:].partition(":")
            out.setdefault(key.strip(), value.strip())
    return out


def header(path: Path) -> dict[str, str]:
    """The header of a case file; {} if it cannot be read."""
    try:
        return parse_header(path.read_text(errors="replace"))
    except OSError:
        return {}


def spec_lines(text: str) -> list[tuple[str | None, str]] | None:
    """(routine or None, fields) of each spec line if the text is a spec file (its
    non-comment lines are all specs, or `key=value` lines of a driver .finding), else None."""
    out: list[tuple[str | None, str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith(("classes=", "why=", "input=")):
            continue
        m = SPEC_LINE.match(line)
        if not m:
            return None
        out.append((m.group("routine"), m.group("fields")))
    return out or None


# The most a case file may hold (a spec file, a driver's .finding, an engine's input):
# far more than any real one, and read whole (then split into lines) well within memory.
CASE_FILE_LIMIT = 64 << 20


def read_specs(path: Path) -> list[tuple[str | None, str]]:
    """The spec lines of a `.spec` (or driver `.finding`) file, which must be whole."""
    return specs_of(path, files.read_input_bytes(path, CASE_FILE_LIMIT))


def specs_of(path: Path, data: bytes) -> list[tuple[str | None, str]]:
    """read_specs of a file's bytes already read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DamagedFile(path, "not text") from None
    if not text.strip():
        raise DamagedFile(path, "empty")
    if not text.endswith("\n"):
        raise DamagedFile(path, "its last line is cut short")
    lines = spec_lines(text)
    if lines is None:
        if all(not ln.strip() or ln.startswith("#") for ln in text.splitlines()):
            raise DamagedFile(path, "no case spec line")
        raise DamagedFile(path, "a line is neither a comment nor a case spec")
    return lines


def read_finding(path: Path) -> dict[str, str]:
    """The `key=value` lines of a fuzz driver's `.finding` file (fuzz/driver.c writes
    spec=, classes=, why=, input=); {} if it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    return {k: v for k, sep, v in (line.partition("=") for line in text.splitlines()) if sep}


def files_by_spec(directory: Path) -> dict[str, Path]:
    """Each spec line of the `.spec` files under directory -> the first file holding it
    (a file that cannot be read is skipped: this is for showing headers, not replaying)."""
    out: dict[str, Path] = {}
    for path in sorted(directory.rglob(f"*{SUFFIX}")) if directory.is_dir() else []:
        try:
            lines = spec_lines(path.read_text(errors="replace")) or []
        except OSError:
            continue
        for routine, fields in lines:
            out.setdefault(f"{routine}:{fields}" if routine else fields, path)
    return out


@dataclass(frozen=True)
class Regression:
    path: Path
    routine: str
    fields: str
    header: dict[str, str]

    @property
    def line(self) -> str:
        return f"{self.routine}:{self.fields}"

    @property
    def cls(self) -> str:
        return records.canonical_class(self.header.get("class", ""))

    @property
    def fault_pc_key(self) -> str:
        """The fault pc's address alone ('none' without one): what deduplication compares."""
        return pc_key(self.header.get("fault-pc", ""))

    @property
    def options(self) -> str:
        return self.header.get("options", "")


def pc_key(fault_pc: str) -> str:
    return fault_pc.split()[0] if fault_pc and fault_pc != "none" else "none"


def read(path: Path) -> Regression:
    """One regression file; DamagedFile if it is not whole or names no routine."""
    lines = read_specs(path)
    routine, fields = lines[0]
    if not routine:
        raise DamagedFile(path, "its spec line names no routine")
    return Regression(path, routine, fields, header(path))


def read_dir(directory: Path) -> list[Regression]:
    """Every regression in the directory (not below it), in name order."""
    if not directory.is_dir():
        return []
    return [read(p) for p in sorted(directory.glob(f"*{SUFFIX}")) if p.is_file()]


def same_build(reg: Regression, routine: "Routine") -> bool:
    """Was the regression saved from this build of the routine (same -D, --alternative)?"""
    try:
        return reg.routine == routine.name and shlex.split(reg.options) == routine.repro_options
    except ValueError:
        return False


def for_routine(directory: Path, routine: "Routine") -> list[Regression]:
    return [r for r in read_dir(directory) if same_build(r, routine)]


def format_text(spec: Spec, cls: str, classes: list[str], engine: str, fault_pc: str, profile: str,
                options: list[str]) -> str:
    return (f"# class: {cls}\n# classes: {','.join(classes)}\n# found-by: {engine}\n"
            f"# fault-pc: {fault_pc or 'none'}\n# profile: {profile}\n"
            + (f"# options: {shlex.join(options)}\n" if options else "")
            + f"{format_spec(spec)}\n")


def failure_name(cls: str) -> str:
    """A Hypothesis campaign's failure file for a class: one a class, rewritten as it shrinks."""
    return f"hypothesis-{cls}{FAILURE_SUFFIX}"


def format_failure(spec: Spec, classes: list[str], command: str, options: list[str], example: str) -> str:
    """A `.failure` file: the command that found it, its classes, the build's options (repro
    reads them back as a regression's), the case as Hypothesis shows it (example), its spec."""
    return (f"# Hypothesis failure: {command}\n# classes: {','.join(classes)}\n"
            + (f"# options: {shlex.join(options)}\n" if options else "")
            + f"# Falsifying example: {example}\n{format_spec(spec)}\n")


def save(directory: Path, routine: "Routine", spec: Spec, cls: str, classes: list[str], *,
         engine: str, fault_pc: str, profile: str) -> tuple[Path, bool]:
    """Write the regression unless one of the same build, class and fault pc exists:
    (its path, True if new). Concurrent campaigns saving into one directory neither
    collide nor duplicate (the check and the write happen under one lock)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CopyfuzzError(f"cannot create {directory}: {e.strerror or e}") from e
    key = pc_key(fault_pc)
    with atomic.locked(directory / LOCK):
        for reg in for_routine(directory, routine):
            if reg.cls == cls and reg.fault_pc_key == key:
                return reg.path, False
        text = format_text(spec, cls, classes, engine, fault_pc, profile, routine.repro_options)
        return atomic.write_unique(directory, f"{routine.file_stem}--{cls}", SUFFIX, text), True


def save_untriaged(directory: Path, routine: "Routine", specs: list[Spec], *, engine: str, profile: str,
                   classes: list[str], why: str, tag: str) -> Path:
    """A failure the campaign did not triage (not re-run, not shrunk) as a replayable spec
    file: its cases, the classes the engine saw, and why. tag makes the name the caller's
    own (a run's name and a count), so a name is never tried twice."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CopyfuzzError(f"cannot create {directory}: {e.strerror or e}") from e
    text = (f"# untriaged: {why}\n# classes: {','.join(classes) or 'unknown'}\n# found-by: {engine}\n"
            f"# profile: {profile}\n"
            + (f"# options: {shlex.join(routine.repro_options)}\n" if routine.repro_options else "")
            + "".join(f"{format_spec(s)}\n" for s in dict.fromkeys(specs)))
    return atomic.write_unique(directory, f"{routine.file_stem}--untriaged-{tag}", SUFFIX, text)
