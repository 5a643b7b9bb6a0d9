"""Baselines of known findings: `--known FILE` and `--write-known FILE` (docs/ci.md).

A baseline is a text file, one accepted finding a line:

    CLASS PC [ROUTINE]

- CLASS is a class name as reports show it (records.CLASS_NAMES: no-progress, ...);
- PC is the fault pc as reports symbolize it (elfinfo.Symbolizer.describe):
  `SYMBOL+0xOFF`, a plain `SYMBOL` (offset 0), or a bare `0xADDR` where no name
  precedes the pc; or `*`, any pc, including none (a finding whose case did not fault,
  such as a wrong-data of a routine that never touched a guard page);
- ROUTINE, optional, limits the line to one routine (its name as reports show it:
  riscv/copy_user, or FILE.S:SYMBOL). Without it, the line holds for every routine, and
  SYMBOL alone tells routines apart. Bundled routines share symbols
  (__asm_copy_to_user), so a baseline written from a run of several routines scopes
  each line.

`#` starts a comment (a whole line, or after whitespace at the end of one); blank lines
are ignored. Anything else is bad input: the file's name and line number and why, exit 2.

The key of a finding is (routine, class, pc): pc is the symbolized fault pc of the case
the finding stands for, None when that case did not fault (only `CLASS *` matches it).
Which case that is depends on the command (docs/ci.md, "Baselines"): `sweep` and
`check` keep one reproducer per class, the first case of the enumeration that shows it,
so a class's pc is that case's; `fuzz` and `replay` judge each reproduced case, and a
case is known when each of its error classes is.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from . import atomic, files, records
from .elfinfo import Symbolizer, where
from .errors import CopyfuzzError

if TYPE_CHECKING:
    from .options import KnownOptions

ANY_PC = "*"
_NAME = re.compile(r"[A-Za-z_.$][A-Za-z0-9_.$@]*")
_HEX = re.compile(r"0x[0-9a-fA-F]+")


@dataclass(frozen=True)
class Entry:
    """One line of a baseline."""

    cls: str
    pc: str  # ANY_PC or a canonical symbolized pc
    routine: str | None  # None: any routine
    source: str  # FILE:LINE, for reports

    def matches(self, routine: str, cls: str, pc: str | None) -> bool:
        return (cls == self.cls and (self.routine is None or self.routine == routine)
                and (self.pc == ANY_PC or self.pc == pc))

    @property
    def text(self) -> str:
        return format_line(self.cls, self.pc, self.routine)


@dataclass(frozen=True)
class Finding:
    """A finding's key: what a baseline line is matched against."""

    routine: str
    cls: str
    pc: str | None  # symbolized fault pc; None: the case did not fault


def key_text(cls: str, pc: str | None) -> str:
    """A finding key as one baseline line shows it (and as reports name it): `CLASS PC`,
    `CLASS *` when the case did not fault."""
    return f"{cls} {pc or ANY_PC}"


def format_line(cls: str, pc: str | None, routine: str | None = None) -> str:
    """One baseline line; a routine whose name holds a blank, a quote, a backslash or a
    `#` (a file path) is shell-quoted, so that parse() reads it back as it was."""
    return key_text(cls, pc) + (f" {_quote(routine)}" if routine else "")


def _quote(routine: str) -> str:
    if routine.splitlines() != [routine]:  # a baseline is read line by line
        raise CopyfuzzError(f"routine {routine!r}: its name holds a line break, which no baseline line can")
    return routine if re.fullmatch(r"[^\s'\"\\#]+", routine) else shlex.quote(routine)


def canonical_pc(text: str) -> str:
    """The pc as Symbolizer.describe writes it; ValueError saying why it is not one."""
    if text == ANY_PC:
        return text
    if _HEX.fullmatch(text):
        return f"{int(text, 16):#x}"
    name, plus, off = text.partition("+")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{text!r} is not a fault pc (SYMBOL+0xOFFSET, SYMBOL, 0xADDRESS or *)")
    if not plus:
        return name
    if not _HEX.fullmatch(off):
        raise ValueError(f"{text!r}: the offset must be hexadecimal, as reports print it (SYMBOL+0x1c)")
    value = int(off, 16)
    return f"{name}+{value:#x}" if value else name


def _strip_comment(line: str) -> str:
    """The line without its comment: `#` at its start or after a blank, outside quotes. A
    quote opens only at the start of a word (as format_line writes one), so an older,
    unquoted `it's.S:f   # note` keeps its comment apart; `\\"` inside "..." is no end."""
    quote = ""
    escaped = glued = False  # glued: just after a closing quote ('it'"'"'s: one word)
    for i, c in enumerate(line):
        if quote:
            if escaped:
                escaped = False
            elif quote == '"' and c == "\\":
                escaped = True
            elif c == quote:
                quote, glued = "", True
            continue
        if c in "'\"" and (i == 0 or line[i - 1].isspace() or glued):
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].strip()
        glued = False
    return line.strip()


def parse(text: str, source: str, classes: tuple[str, ...] | None = None) -> list[Entry]:
    """The entries of a baseline's text; CopyfuzzError `SOURCE:LINE: why` at the first bad line.
    classes: the class names a line may give (default the routines' records.CLASS_NAMES;
    `copyfuzz kernel sweep` has its own, kernel/casedef.py)."""
    entries: list[Entry] = []
    seen: dict[tuple[str, str, str | None], int] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _strip_comment(raw)
        if not line:
            continue
        where_ = f"{source}:{lineno}"
        words = line.split(maxsplit=2)
        if len(words) < 2:
            raise CopyfuzzError(f"{where_}: expected 'CLASS PC [ROUTINE]' (PC: SYMBOL+0xOFFSET or *), "
                                f"not {line!r}")
        names = records.CLASS_NAMES if classes is None else classes
        cls, pc_text = (records.canonical_class(words[0]) if classes is None else words[0]), words[1]
        if cls not in names:
            raise CopyfuzzError(f"{where_}: unknown class {cls!r} (classes: {', '.join(names)})")
        try:
            pc = canonical_pc(pc_text)
        except ValueError as e:
            raise CopyfuzzError(f"{where_}: {e}") from None
        routine = words[2] if len(words) > 2 else None
        if routine is not None and routine[0] in "'\"":  # quoted by format_line: a path with blanks
            try:
                quoted = shlex.split(routine)
            except ValueError:
                quoted = []
            if len(quoted) != 1:
                raise CopyfuzzError(f"{where_}: expected 'CLASS PC [ROUTINE]', not {line!r} (a quoted routine "
                                    "is one shell word)")
            routine = quoted[0]
        elif routine is not None and len(routine.split()) > 1:
            raise CopyfuzzError(f"{where_}: expected 'CLASS PC [ROUTINE]', not {line!r} (one routine a line)")
        key = (cls, pc, routine)
        if key in seen:
            raise CopyfuzzError(f"{where_}: the same entry as line {seen[key]}")
        seen[key] = lineno
        entries.append(Entry(cls, pc, routine, where_))
    return entries


@dataclass
class Baseline:
    """The entries of a --known file, and which of them a run matched."""

    path: Path
    entries: list[Entry]
    used: set[Entry] = field(default_factory=set)

    def match(self, finding: Finding) -> Entry | None:
        """The line that accepts the finding, or None (a new finding): the first naming its
        pc, else the first `CLASS *`."""
        hits = [e for e in self.entries if e.matches(finding.routine, finding.cls, finding.pc)]
        hits.sort(key=lambda e: e.pc == ANY_PC)  # stable: file order within each kind
        if not hits:
            return None
        self.used.add(hits[0])
        return hits[0]

    def unused(self) -> list[Entry]:
        """Lines no finding of the run matched (stale ones, or bugs fixed since)."""
        return [e for e in self.entries if e not in self.used]

    def to_json(self) -> dict[str, object]:
        return {"file": str(self.path), "entries": len(self.entries),
                "unused": [f"{e.source}: {e.text}" for e in self.unused()]}


MAX_BYTES = 64 << 20  # a baseline larger than this is a mistake, not a list of findings
SHOWN_UNUSED = 50  # unused lines a text report lists (JSON gives them all)


def load(path: Path, classes: tuple[str, ...] | None = None) -> Baseline:
    return Baseline(path, parse(files.read_input_text(path, "--known", MAX_BYTES), str(path), classes))


def from_options(opts: KnownOptions, classes: tuple[str, ...] | None = None) -> Baseline | None:
    """The --known baseline of a command's options (None without one), read and checked
    before anything runs."""
    return load(Path(opts.known), classes) if opts.known is not None else None


def check_output(opts: KnownOptions) -> None:
    """--write-known's file: checked before the run (files.check_file)."""
    if opts.write_known is not None:
        files.check_file(Path(opts.write_known), "--write-known")


def judge(baseline: Baseline | None, finding: Finding) -> Entry | None:
    return baseline.match(finding) if baseline is not None else None


def reason(entry: Entry) -> str:
    """Why a finding counts as known, for reports: the baseline line that accepts it."""
    return f"known: {entry.source}: {entry.text}"


# ---- the fault pc of a case ----


def fault_trail(sym: Symbolizer | None, result: records.Result) -> list[dict[str, object]]:
    """The faults of a reproducer in order (its first is what fault_pc keys a finding by):
    each one's number, pc and the fixup the table sent it to, and whether the call
    returned through that fixup. Empty for a case with one fault or none."""
    if result.faults < 2:
        return []
    return [{"number": result.fault_number(i), "pc": where(sym, pc), "fixup": where(sym, fixup) if fixup else None,
             "returned_through": result.fault_number(i) == result.returned_through}
            for i, (pc, _, fixup) in enumerate(result.trail)]


def trail_text(trail: list[dict[str, object]]) -> str:
    """A reproducer's faults in order on one line, for the text reports."""
    return "; ".join(f"{t['number']}. {t['pc']} -> {t['fixup'] or 'no fixup'}"
                     + (" (the return came through it)" if t["returned_through"] else "") for t in trail)


def fault_pc(sym: Symbolizer | None, result: records.Result) -> str | None:
    """A result's fault pc as reports and baselines name it; None when it did not fault."""
    if not result.faults:
        return None
    return where(sym, result.fault_pc)


_DESCRIBED = re.compile(r"(0x[0-9a-fA-F]+)(?: \((.+)\))?")


def pc_of_described(text: str) -> str | None:
    """The symbolized pc in triage's `0x1234 (symbol+0x10)` (a bare `0x1234` where the pc
    has no name; "" when the case did not fault: None)."""
    text = text.strip()
    if not text:
        return None
    m = _DESCRIBED.fullmatch(text)
    if m is None:
        return text
    return m.group(2) or f"{int(m.group(1), 16):#x}"


def address_of_described(text: str) -> int:
    """The address in triage's `0x1234 (symbol+0x10)`; 0 when the case did not fault, as
    the fuzz driver keys a finding (COPYFUZZ_SEEN, fuzz/driver.c)."""
    m = _DESCRIBED.fullmatch(text.strip())
    return int(m.group(1), 16) if m else 0


# ---- writing ----


def from_result(data: object) -> tuple[list[str], list[Finding]]:
    """The routines and finding keys of one `fuzz --json` or `replay --json` result (the
    CI scripts write one baseline from all their runs' results)."""
    if isinstance(data, dict) and isinstance(data.get("finds"), list):
        routine = str(data.get("routine", "?"))
        keys = [Finding(routine, str(cls), pc_of_described(str(f.get("fault_pc") or "")))
                for f in data["finds"] if isinstance(f, dict)
                for cls in f.get("classes") or [f.get("cls", "?")]]
        return [routine], keys
    if isinstance(data, list):
        entries = [e for e in data if isinstance(e, dict)]
        keys = [Finding(str(e.get("routine", "?")), str(u.get("class")), u.get("pc") or None)
                for e in entries for u in e.get("unique_findings") or [] if isinstance(u, dict)]
        return [str(e.get("routine", "?")) for e in entries], keys
    raise CopyfuzzError("not the --json output of copyfuzz fuzz or replay")


def _pc_order(pc: str | None) -> tuple[str, int]:
    """Lines of one class by symbol, then by offset as a number (`*` first)."""
    if pc is None:
        return "", -1
    if _HEX.fullmatch(pc):
        return "", int(pc, 16)
    name, _, off = pc.partition("+")
    return name, int(off, 16) if off else 0


def render(findings: Iterable[Finding], routines: Iterable[str], command: str | None = None) -> str:
    """A baseline accepting these findings: sorted, each once, under a comment header
    naming the command and the run's routines. With more than one routine in the run,
    each line names its routine (bundled routines share symbols)."""
    found = set(findings)
    names = sorted(set(routines) | {f.routine for f in found})
    scoped = len(names) > 1
    order = {name: i for i, name in enumerate(records.CLASS_NAMES)}
    keyed: dict[str, tuple[str, int, str, int]] = {}
    for f in found:
        routine = f.routine if scoped else None
        keyed[format_line(f.cls, f.pc, routine)] = (routine or "", order.get(f.cls, len(order)), *_pc_order(f.pc))
    lines = sorted(keyed, key=keyed.__getitem__)
    if command is None:
        command = shlex.join(["copyfuzz", *sys.argv[1:]])
    head = [
        "# copyfuzz known findings: CLASS PC [ROUTINE], one a line (docs/ci.md, Baselines)",
        f"# command: {command}",
        *(f"# routine: {r}" for r in names),
    ]
    if not found:
        head.append("# no findings")
    return "\n".join([*head, *lines]) + "\n"


def write(path: Path, findings: Iterable[Finding], routines: Iterable[str], command: str | None = None) -> None:
    """--write-known: written aside and renamed (atomic.write)."""
    atomic.write(path, render(findings, routines, command))
