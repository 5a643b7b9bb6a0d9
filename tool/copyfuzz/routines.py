"""Which routines exist: every arch/<arch>/*.S and arch/<arch>/mutants/*.S, for every
architecture in targets.py.

A routine file says what it is in its header comment, one ` * copyfuzz: key=value`
line per key within the first 40 lines:
  symbol   the entry point the harness calls (required)
  kind     copy | clear | memcpy | memset | memmove | copy_from_user | copy_to_user
           (required; docs/semantics.md)
  profile  linux | exact: the contract it is held to (default linux)
  about    one line for people
  expect   mutants only: the classes a sweep must find (comma-separated)
  needs    mutants only: memcheck when only the plugin's memory audit can catch it
  max-len  the longest n of its exhaustive sweep when --max-len is not given: for a
           routine whose behaviour repeats with a short period (a vector loop)
  isa      the ISA it needs, e.g. rv64gcv (isa.py): assembled with that -march, run on
           a QEMU CPU with those extensions (under --xlen 32, the same at rv32)
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import isa as isas
from . import paths, records, targets
from .errors import CopyfuzzError

HEADER_LINES = 40
_META = re.compile(r"^[ \t/*]*copyfuzz:\s*([A-Za-z_][\w-]*)\s*=\s*(.*?)\s*$")
KEYS = ("symbol", "kind", "profile", "about", "expect", "needs", "isa", "max-len")
NEEDS = ("memcheck",)  # what a mutant needs to be caught: memcheck = the QEMU plugin


@dataclass(frozen=True)
class Routine:
    name: str  # path under arch/ without .S, e.g. riscv/mutants/fixup-full-size
    path: Path
    symbol: str
    kind: str
    profile: str
    about: str = ""
    expect: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    xlen: int = 64
    # A file from outside the tree (copyfuzz check): its executor, and the assembler flags
    # harness/link-executor.sh links it with (build.py runs it, no make).
    external_elf: str | None = None
    asflags: tuple[str, ...] = ()
    link_args: tuple[str, ...] = ()  # --with FILE / --defsym NAME=VALUE, for link-executor.sh
    build_flags: tuple[str, ...] = ()  # -D..., --alternative, -I, --with, --defsym: for `copyfuzz repro`
    isa: isas.Isa | None = None  # what it is built and run with (None: the harness's rv64gc/rv32gc)
    declared_isa: isas.Isa | None = None  # a bundled routine's ` * copyfuzz: isa=` line
    max_len: int = 0  # its max-len= line: the default sweep's longest n (0: the sweep's default)
    arch: str = field(kw_only=True)  # targets.py: arch/<arch>/ of a bundled routine, --arch of a file
    # A file's routine whose kind or architecture the command line did not give: why it
    # is what it is (infer.py), said with the results. "" when given.
    kind_reason: str = ""
    arch_reason: str = ""
    cpu: str = ""  # --cpu: the QEMU CPU model a file's routine runs on ("": the default or the ISA's)

    @property
    def qemu_cpu(self) -> str:
        """QEMU's -cpu: --cpu's, else its ISA's ('' for the default CPU)."""
        return self.cpu or (self.isa.cpu if self.isa else "")

    @property
    def link_pairs(self) -> list[tuple[str, str]]:
        """link_args as (flag, value) pairs: ("--with", FILE) or ("--defsym", NAME=VALUE)."""
        return list(zip(self.link_args[::2], self.link_args[1::2], strict=True))

    @property
    def with_files(self) -> list[Path]:
        """The files linked in with the routine's (link_args' --with)."""
        return [Path(a) for flag, a in self.link_pairs if flag == "--with"]

    @property
    def is_mutant(self) -> bool:
        # A bundled one only: a file checked from outside the tree (copyfuzz check
        # arch/riscv/mutants/X.S) is judged like any kernel file, whatever its path.
        return self.external_elf is None and "mutants" in self.name.split("/")[1:-1]

    @property
    def elf(self) -> str:
        """The executor as make names it (paths.REL): relative to the repository root unless
        O is absolute; root / elf is where it is."""
        return self.external_elf or str(paths.executor(paths.REL, self.name, self.xlen))

    @property
    def file_stem(self) -> str:
        """The name as one path component, for per-routine files."""
        stem = re.sub(r"[^\w.-]+", "__", self.name).strip("_.")
        return stem if self.xlen == targets.get(self.arch).widths[0] else f"{stem}.rv{self.xlen}"

    @property
    def repro_options(self) -> list[str]:
        """What `copyfuzz repro SPEC` needs besides the spec to rebuild this routine."""
        opts = list(self.build_flags)
        if self.isa and self.isa != self.declared_isa:
            opts += self.isa.options
        if self.external_elf and ":" in self.name:  # a file's symbol (bundled names have no ':')
            opts += ["--kind", self.kind]
        if self.xlen != targets.get(self.arch).widths[0]:
            opts += ["--xlen", str(self.xlen)]
        return opts


def read_metadata(path: Path) -> dict[str, str]:
    meta: dict[str, str] = {}
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                if lineno > HEADER_LINES:
                    break
                m = _META.match(line)
                if not m:
                    continue
                key, value = m.group(1), m.group(2)
                if key not in KEYS:
                    raise CopyfuzzError(
                        f"{path}:{lineno}: unknown copyfuzz metadata key {key!r} (known: {', '.join(KEYS)})"
                    )
                if key in meta:
                    raise CopyfuzzError(f"{path}:{lineno}: copyfuzz metadata key {key!r} given twice")
                meta[key] = value
    except OSError as e:
        raise CopyfuzzError(f"cannot read routine {path}: {e.strerror}") from e
    return meta


def load_routine(root: Path, path: Path) -> Routine:
    name = path.relative_to(root / "arch").with_suffix("").as_posix()
    where = f"{path.relative_to(root)}"
    arch = name.split("/", 1)[0]
    if arch not in targets.ARCHES:
        raise CopyfuzzError(f"{where}: arch/{arch}/ is not an architecture copyfuzz builds for "
                            f"(known: {', '.join(targets.ARCHES)}; docs/adding.md)")
    meta = read_metadata(path)
    for key in ("symbol", "kind"):
        if not meta.get(key):
            raise CopyfuzzError(f"{where}: missing ' * copyfuzz: {key}=...' line in its first {HEADER_LINES} lines")
    kind = meta["kind"]
    if kind not in records.KINDS:
        raise CopyfuzzError(f"{where}: kind={kind!r} is not one of {', '.join(records.KINDS)}")
    profile = meta.get("profile") or "linux"
    if profile not in records.PROFILES:
        raise CopyfuzzError(f"{where}: profile={profile!r} is not one of {', '.join(records.PROFILES)}")
    expect = tuple(records.canonical_class(e.strip()) for e in meta.get("expect", "").split(",") if e.strip())
    unknown = [e for e in expect if e not in records.CLASS_BY_NAME]
    if unknown:
        raise CopyfuzzError(
            f"{where}: expect names unknown classes {', '.join(unknown)} (classes: {', '.join(records.CLASS_NAMES)})"
        )
    needs = tuple(n.strip() for n in meta.get("needs", "").split(",") if n.strip())
    if any(n not in NEEDS for n in needs):
        raise CopyfuzzError(f"{where}: needs={meta['needs']!r}: known needs are {', '.join(NEEDS)}")
    if meta.get("isa") and arch != "riscv":
        raise CopyfuzzError(f"{where}: isa= names RISC-V extensions; an {arch} routine has none")
    declared = isas.parse(meta["isa"], what=f"{where}: isa=") if meta.get("isa") else None
    if declared and declared.xlen != 64:
        raise CopyfuzzError(f"{where}: isa={meta['isa']}: give the rv64 ISA "
                            "(--xlen 32 runs the same extensions at rv32)")
    max_len = meta.get("max-len", "0")
    if not max_len.isdigit() or not 0 <= int(max_len) <= records.MAX_LEN:
        raise CopyfuzzError(f"{where}: max-len={max_len!r}: expected a length 1..{records.MAX_LEN}")
    routine = Routine(name, path, meta["symbol"], kind, profile, meta.get("about", ""), expect, needs,
                      xlen=targets.get(arch).widths[0], isa=declared, declared_isa=declared,
                      max_len=int(max_len), arch=arch)
    if routine.is_mutant and not expect:
        raise CopyfuzzError(f"{where}: a mutant needs ' * copyfuzz: expect=CLASS[,CLASS]' (what must catch it)")
    if not routine.is_mutant and expect:
        raise CopyfuzzError(f"{where}: expect= is for mutants (arch/<arch>/mutants/) only")
    return routine


def discover(root: Path) -> list[Routine]:
    """All routines under root/arch, sorted by name (routines before their mutants)."""
    arch = root / "arch"
    if not arch.is_dir():
        return []
    paths = sorted(arch.glob("*/*.S")) + sorted(arch.glob("*/mutants/*.S"))
    routines = [load_routine(root, p) for p in paths]
    return sorted(routines, key=lambda r: (r.is_mutant, r.name))


def select(routines: list[Routine], patterns: list[str]) -> list[Routine]:
    """Routines matching any pattern (fnmatch), in discovery order, each once.

    A pattern that matches nothing is an error listing close names."""
    chosen: dict[str, Routine] = {}
    for pattern in patterns:
        hits = [r for r in routines if fnmatch.fnmatchcase(r.name, pattern)]
        if not hits:
            raise unknown_routine(pattern, routines)
        for r in hits:
            chosen.setdefault(r.name, r)
    return [r for r in routines if r.name in chosen]


def find(routines: list[Routine], name: str) -> Routine:
    for r in routines:
        if r.name == name:
            return r
    raise unknown_routine(name, routines)


def unknown_routine(name: str, routines: list[Routine]) -> CopyfuzzError:
    names = [r.name for r in routines]
    close = difflib.get_close_matches(name, names, n=4, cutoff=0.5)
    if not close:
        # Also try by the last component: 'copy_user' for 'riscv/copy_user'.
        close = [n for n in names if n.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]]
    hint = f"; did you mean {', '.join(close)}?" if close else "; see 'copyfuzz list'"
    if not names:
        hint = "; there are no routines under arch/"
    return CopyfuzzError(f"unknown routine {name!r}{hint}")
