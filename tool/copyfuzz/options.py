"""The command line's options as data: frozen dataclasses, one per concern, each built once
at the CLI edge (a cmd_*.run_* entry point) from the parsed argparse.Namespace by its
from_args. Everything below the entry points reads these, never the Namespace.

The builders are the one place that reads the Namespace with a default (_opt): commands
share these dataclasses, and one command's parser lacks another's options. What the
command line leaves to be worked out (the width an --isa names, --jobs from COPYFUZZ_JOBS,
a FILE.S positional, a .spec file's saved `# options:`) is settled while building, or into
a new value by dataclasses.replace: an options object is never changed once built.
"""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import envs, records, targets
from . import isa as isas
from .checkfile import FileBuild, check_defines
from .errors import CopyfuzzError

DEFAULT_MAX_LEN = 256  # sweep's and check's exhaustive phase, without --max-len
RAW_MAX_LEN = 65536  # COPYFUZZ_MAX_LEN of raw engine inputs, without --max-len


def _opt(args: argparse.Namespace, name: str, default: Any = None) -> Any:
    """An option of the command line, or `default` when this command has no such option."""
    return getattr(args, name, default)


def _present(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options of these names this command has: the ones it lacks keep the dataclass's
    default (one default each: the parser's when it has the option, else the dataclass's)."""
    return {name: getattr(args, name) for name in names if name in args}


def _words(value: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    return tuple(value or ())


def wants_json(args: argparse.Namespace) -> bool:
    """Did the command ask for --json output (cli.main: an error is answered in JSON too)?"""
    return bool(_opt(args, "json", False))


# ---- what routine runs, and how it is built ----

# The options that only a FILE.S target takes, as the command line spells them.
FILE_FLAGS = {"symbol": "--symbol", "define": "-D", "alternative": "--alternative", "include": "-I",
              "with_files": "--with", "defsym": "--defsym", "arch": "--arch", "cpu": "--cpu"}


@dataclass(frozen=True)
class FileOptions:
    """How a .S file from outside the tree is built (cli._file_options)."""

    symbol: tuple[str, ...] = ()
    kind: str | None = None
    define: tuple[str, ...] = ()
    alternative: bool = False
    include: tuple[str, ...] = ()
    with_files: tuple[str, ...] = ()
    defsym: tuple[str, ...] = ()
    arch: str | None = None
    cpu: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> FileOptions:
        return cls(symbol=_words(_opt(args, "symbol")), kind=_opt(args, "kind"), define=_words(_opt(args, "define")),
                   alternative=bool(_opt(args, "alternative", False)), include=_words(_opt(args, "include")),
                   with_files=_words(_opt(args, "with_files")), defsym=_words(_opt(args, "defsym")),
                   arch=_opt(args, "arch"), cpu=_opt(args, "cpu"))

    def build(self) -> FileBuild:
        """The build options of a file target (as given, or from a saved `# options:`)."""
        return FileBuild(defines=self.define, alternative=self.alternative, includes=self.include,
                         withs=self.with_files, defsyms=self.defsym, arch=self.arch or "", cpu=self.cpu or "")

    def given(self) -> list[str]:
        """The file-only options given, as flags (for the error when the target is not a file)."""
        return [flag for name, flag in FILE_FLAGS.items() if getattr(self, name)]


@dataclass(frozen=True)
class IsaOptions:
    """--isa and --vlen (cli._isa_options)."""

    isa: str | None = None
    vlen: int | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> IsaOptions:
        return cls(isa=_opt(args, "isa"), vlen=_opt(args, "vlen"))

    def parsed(self) -> isas.Isa | None:
        """--isa [--vlen] as given (None without --isa)."""
        return isas.parse(self.isa, self.vlen) if self.isa else None


@dataclass(frozen=True)
class RoutineOptions:
    """How a command's routine is built and run: a file's build options, the ISA, the width."""

    file: FileOptions = field(default_factory=FileOptions)
    isa: IsaOptions = field(default_factory=IsaOptions)
    xlen: int | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> RoutineOptions:
        out = cls(FileOptions.from_args(args), IsaOptions.from_args(args), _opt(args, "xlen"))
        # A command with --xlen takes its width from --isa too (one without it, fuzz, does
        # not); a bad --isa is refused either way, before the command runs.
        if "xlen" in args:
            return out.settled()
        out.isa.parsed()
        return out

    def settled(self) -> RoutineOptions:
        """--isa names the register width too: --isa rv32gcv is --xlen 32 (a contradicting
        --xlen is an error). Settled before the command runs: a bad value is one line."""
        isa = self.isa.parsed()
        if isa is None:
            return self
        if self.xlen is not None and self.xlen != isa.xlen:
            raise CopyfuzzError(f"--isa {self.isa.isa} is RV{isa.xlen}, --xlen {self.xlen} is not")
        return replace(self, xlen=isa.xlen)

    def with_saved(self, text: str, where: str) -> RoutineOptions:
        """What the command line left unset, filled from a regression's `# options:` line:
        the flags `repro` needs to rebuild a file routine as the campaign built it
        (Routine.repro_options: -DNAME[=VALUE], --alternative, -I DIR, --with FILE,
        --defsym NAME=VALUE, --kind K, --xlen N, --isa ISA, --vlen N, --arch A, --cpu M).
        Flags given on the command line win."""
        saved = _parse_saved(text, where)
        f = self.file
        f = replace(f, define=f.define or tuple(check_defines(saved.define)),
                    include=f.include or saved.include, with_files=f.with_files or saved.with_files,
                    defsym=f.defsym or saved.defsym, alternative=f.alternative or saved.alternative,
                    kind=saved.kind if f.kind is None else f.kind,
                    arch=saved.arch if not f.arch and saved.arch else f.arch,
                    cpu=saved.cpu if not f.cpu and saved.cpu else f.cpu)
        out = replace(self, file=f, xlen=saved.xlen if self.xlen is None and saved.xlen else self.xlen)
        isa, vlen = self.isa.isa, self.isa.vlen
        if not isa and saved.isa:
            if not vlen and saved.vlen is not None:
                vlen = saved.vlen or -1  # -1: refused by isa.parse, never taken for the default
            return replace(out, isa=IsaOptions(saved.isa, vlen)).settled()
        if not vlen and saved.vlen is not None:
            vlen = saved.vlen or -1
        return replace(out, isa=IsaOptions(isa, vlen))


@dataclass
class _Saved:
    define: list[str] = field(default_factory=list)
    include: tuple[str, ...] = ()
    with_files: tuple[str, ...] = ()
    defsym: tuple[str, ...] = ()
    alternative: bool = False
    kind: str | None = None
    xlen: int | None = None
    isa: str | None = None
    vlen: int | None = None
    arch: str | None = None
    cpu: str | None = None


def _parse_saved(text: str, where: str) -> _Saved:
    """The words of a `# options:` line."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise CopyfuzzError(f"{where}: `# options: {text}`: {e}") from None
    out = _Saved()
    lists: dict[str, list[str]] = {"-I": [], "--with": [], "--defsym": []}
    i = 0
    while i < len(words):
        w = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        if w.startswith("-D") and len(w) > 2:
            out.define.append(w[2:])
        elif w in ("-D", "--kind", "--xlen", "--isa", "--vlen", "--arch", "--cpu", *lists) and value is not None:
            if w == "-D":
                out.define.append(value)
            elif w in lists:
                lists[w].append(value)
            elif w == "--kind":
                out.kind = value
            elif w == "--isa":
                out.isa = value
            elif w == "--cpu":
                out.cpu = value
            elif w == "--arch":
                if value not in targets.ARCHES:
                    raise CopyfuzzError(f"{where}: `# options: {text}`: --arch {value!r} is not one of "
                                        f"{', '.join(targets.ARCHES)}")
                out.arch = value
            elif w == "--vlen":
                out.vlen = int(value) if value.isdigit() else 0
            elif value in ("32", "64"):
                out.xlen = int(value)
            else:
                raise CopyfuzzError(f"{where}: `# options: {text}`: --xlen {value!r} is not 32 or 64")
            i += 1
        elif w == "--alternative":
            out.alternative = True
        else:
            raise CopyfuzzError(f"{where}: `# options: {text}`: {w!r} is not one of -DNAME[=VALUE], "
                                "--alternative, -I DIR, --with FILE, --defsym NAME=VALUE, --kind KIND, --xlen N, "
                                "--isa ISA, --vlen N, --arch ARCH, --cpu MODEL")
        i += 1
    out.include, out.with_files, out.defsym = (tuple(lists[f]) for f in ("-I", "--with", "--defsym"))
    return out


def is_file_target(text: str) -> bool:
    return text.endswith((".S", ".s")) or Path(text).is_file()


def take_file_target(routine: str | None, file: str | None, target: RoutineOptions) -> tuple[str | None, str | None]:
    """One CLI shape: `bench|cov|fuzz FILE.S --symbol S` like `check FILE.S --symbol S`.
    A positional that is a file is the file (where --file, its alias, puts it):
    (routine, file) as settled."""
    if routine is not None and is_file_target(routine):
        if file:
            raise CopyfuzzError(f"give the file once: {routine} or --file {file}, not both")
        routine, file = None, routine
    elif routine is not None and file:
        raise CopyfuzzError(f"give a routine ({routine}) or a file (--file {file}), not both")
    if not file and target.file.given():
        raise CopyfuzzError(f"{', '.join(target.file.given())}: for a FILE.S target only")
    return routine, file


# ---- baselines ----


@dataclass(frozen=True)
class KnownOptions:
    """--known and --write-known (cli._known_options, the kernel sweep's)."""

    known: Path | None = None
    write_known: Path | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> KnownOptions:
        return cls(_opt(args, "known"), _opt(args, "write_known"))


# ---- commands ----


def settled_jobs(jobs: int | None) -> int:
    """An executor --jobs not given: COPYFUZZ_JOBS (a machine or a test suite that runs
    several commands at once), else one per CPU."""
    if jobs is not None:
        return jobs
    text = envs.value("COPYFUZZ_JOBS")
    if not text:
        return os.cpu_count() or 1
    from .cli import _int_in  # the parser's own check of --jobs

    try:
        return _int_in(1, 1024)(text)
    except argparse.ArgumentTypeError as e:
        raise CopyfuzzError(f"COPYFUZZ_JOBS: {e}") from None


@dataclass(frozen=True)
class SweepOptions:
    """What an exhaustive (and random) sweep runs with: sweep, check, and each version of
    history (cli._sweep_options)."""

    target: RoutineOptions = field(default_factory=RoutineOptions)
    known: KnownOptions = field(default_factory=KnownOptions)
    routines: tuple[str, ...] = ()  # sweep's ROUTINE patterns
    mutants: bool = False
    file: str | None = None  # check's FILE.S
    profile: str | None = None
    max_len: int = DEFAULT_MAX_LEN
    max_len_given: bool = True  # False: lowered to a routine's max-len= line (routine_max_len)
    min_len: int = 0
    random: int = 0
    seed: int | None = None
    random_max_len: int | None = None
    jobs: int = 1
    timeout_ms: int | None = None
    findings: Path = Path("findings")
    memcheck: bool = False
    no_audit: bool = False
    granule: int = 0
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace, **settled: Any) -> SweepOptions:
        """settled: values the command decides itself (history's random phase and findings)."""
        target = RoutineOptions.from_args(args)
        jobs = settled_jobs(_opt(args, "jobs"))
        given = _present(args, "mutants", "file", "profile", "min_len", "random", "seed", "random_max_len",
                         "timeout_ms", "findings", "memcheck", "no_audit", "json")
        given.update(settled)
        max_len = _opt(args, "max_len")
        out = cls(target=target, known=KnownOptions.from_args(args), routines=_words(_opt(args, "routines")),
                  max_len=DEFAULT_MAX_LEN if max_len is None else max_len, max_len_given=max_len is not None,
                  jobs=jobs, granule=_opt(args, "granule") or 0, **given)
        if out.min_len > out.max_len:
            raise CopyfuzzError(f"--min-len {out.min_len} is above --max-len {out.max_len}")
        return out


@dataclass(frozen=True)
class CheckOptions:
    """check: a file's sweep, and --confirm on a booted kernel."""

    sweep: SweepOptions
    confirm: bool = False
    confirm_as: str | None = None
    kernel_source: str = "6.12"
    kernel_tree: Path | None = None
    confirm_timeout: float = 2.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> CheckOptions:
        return cls(SweepOptions.from_args(args), args.confirm, args.confirm_as, args.kernel_source, args.kernel_tree,
                   args.confirm_timeout)

    @property
    def file(self) -> str:
        assert self.sweep.file is not None
        return self.sweep.file


@dataclass(frozen=True)
class HistoryOptions:
    """history: a sweep per version of a file in a git repository, or a bisection."""

    sweep: SweepOptions
    repo: str
    file: str
    since: str | None = None
    until: str | None = None
    bisect: str | None = None  # a class by its current name (records.canonical_class)
    good: str | None = None
    bad: str | None = None
    fixed: bool = False
    cache: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> HistoryOptions:
        # No random phase; each version logs into its private directory (cmd_history).
        sweep = SweepOptions.from_args(args, random=0, seed=None, random_max_len=None,
                                       findings=Path(tempfile.gettempdir()), file=None)
        bisect = records.canonical_class(args.bisect) if args.bisect is not None else None
        return cls(sweep, args.repo, args.file, args.since, args.until, bisect, args.good, args.bad, args.fixed,
                   args.cache)


@dataclass(frozen=True)
class FuzzOptions:
    """fuzz: one routine's campaign."""

    target: RoutineOptions = field(default_factory=RoutineOptions)
    known: KnownOptions = field(default_factory=KnownOptions)
    routine: str | None = None
    file: str | None = None
    engine: str = "libfuzzer"
    time: int = 60
    triage_time: int | None = None
    jobs: int = 1
    corpus: Path | None = None
    findings: Path | None = None
    regressions: Path = Path("corpora/regressions")
    seed: int | None = None
    profile: str | None = None
    max_len: int = RAW_MAX_LEN
    afl_host: str | None = None
    until: str | None = None
    granule: int = 0
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> FuzzOptions:
        # No --xlen: RISC-V at 64 bits, ARM at its own width (nor the width of an --isa).
        target = replace(RoutineOptions.from_args(args), xlen=None)
        routine, file = take_file_target(args.routine, args.file, target)
        return cls(target, KnownOptions.from_args(args), routine, file, args.engine, args.time, args.triage_time,
                   args.jobs, args.corpus, args.findings, args.regressions, args.seed, args.profile, args.max_len,
                   args.afl_host, args.until, args.granule or 0, args.json)


class _DecodesRawInputs:
    """Options of a command that decodes raw engine inputs (repro, replay): their --max-len."""

    max_len: int | None  # None: not given

    @property
    def raw_max_len(self) -> int:
        """The max-len a raw input is decoded with."""
        return RAW_MAX_LEN if self.max_len is None else self.max_len


@dataclass(frozen=True)
class ReproOptions(_DecodesRawInputs):
    """repro: one case, explained. A .spec file's saved `# options:` and audit class are
    settled in by cmd_repro.spec_argument (a new ReproOptions)."""

    spec: str
    target: RoutineOptions = field(default_factory=RoutineOptions)
    routine: str | None = None
    profile: str | None = None
    timeout_ms: int | None = None
    memcheck: bool = False
    granule: int = 0
    max_len: int | None = None  # None: not given (a spec has its own n: --max-len is refused there)
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReproOptions:
        return cls(args.spec, RoutineOptions.from_args(args), granule=_opt(args, "granule") or 0,
                   **_present(args, "routine", "profile", "timeout_ms", "memcheck", "max_len", "json"))


@dataclass(frozen=True)
class ReplayOptions(_DecodesRawInputs):
    """replay: the saved cases of a directory."""

    dir: Path
    isa: IsaOptions = field(default_factory=IsaOptions)
    known: KnownOptions = field(default_factory=KnownOptions)
    routine: str | None = None
    profile: str | None = None
    max_len: int | None = None
    granule: int = 0
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ReplayOptions:
        # The ISA alone: a spec's routine is built as its file's `# options:` say (cmd_replay).
        isa = IsaOptions.from_args(args)
        RoutineOptions(isa=isa).settled()  # a bad --isa: one line before any case is read
        return cls(args.dir, isa, KnownOptions.from_args(args), args.routine, args.profile, args.max_len,
                   args.granule or 0, args.json)


@dataclass(frozen=True)
class TargetCommandOptions:
    """audit, bench and cov: one routine by name (or patterns), or a FILE.S's symbols."""

    target: RoutineOptions = field(default_factory=RoutineOptions)
    routine: str | None = None  # the ROUTINE positional (audit's ROUTINE|FILE.S)
    file: str | None = None  # a FILE.S target, positional or --file

    @classmethod
    def from_args(cls, args: argparse.Namespace, positional: str = "routine",
                  take_file: bool = True) -> TargetCommandOptions:
        """take_file: a positional that is a file is the file (bench, cov); audit decides itself."""
        target = RoutineOptions.from_args(args)
        routine, file = _opt(args, positional), _opt(args, "file")
        if take_file:
            routine, file = take_file_target(routine, file, target)
        return cls(target, routine, file)


# ---- the kernel commands ----


@dataclass(frozen=True)
class KernelBuildOptions:
    """The kernel a command builds (kernel/options.add_build_options)."""

    arch: str
    source: str = ""
    tree: Path | None = None
    replace: tuple[str, ...] = ()
    config: Path | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace, arch: str | None = None) -> KernelBuildOptions:
        """arch: the architecture a command settled (confirm: from the file's path)."""
        return cls(arch or args.arch, args.source, args.tree, _words(args.replace), args.config)


@dataclass(frozen=True)
class ConfirmOptions:
    """confirm: one case of a kernel file's routine, as syscalls on a booted kernel."""

    spec: str
    # confirm's --kind, and the kernel's --arch and --cpu, where a .spec file's saved
    # `# options:` fill what is not given (cmd_confirm, through cmd_repro.spec_argument).
    target: RoutineOptions = field(default_factory=RoutineOptions)
    tree_path: str | None = None  # --as
    source: str = ""
    tree: Path | None = None
    replace: tuple[str, ...] = ()
    config: Path | None = None
    timeout: float = 2.0
    no_host: bool = False
    findings: Path = Path("findings")
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ConfirmOptions:
        return cls(args.spec, RoutineOptions.from_args(args), args.tree_path, args.source, args.tree,
                   _words(args.replace), args.config, args.timeout, args.no_host, args.findings, args.json)

    def kernel(self, arch: str) -> KernelBuildOptions:
        """The kernel to build, for the architecture the file or --arch settled."""
        return KernelBuildOptions(arch, self.source, self.tree, self.replace, self.config)


@dataclass(frozen=True)
class KernelSweepOptions:
    """kernel sweep: the prober's options, and how the VMs run."""

    build: KernelBuildOptions
    known: KnownOptions = field(default_factory=KnownOptions)
    # The prober's options, None when not given (kernel/runner.PROBER_OPTIONS).
    syscalls: str | None = None
    max_len: int | None = None
    sizes: str | None = None
    koffs: str | None = None
    segs: str | None = None
    prots: str | None = None
    timeout: float = 2.0
    hang_budget: int | None = None
    jobs: int = 1
    cpu: str | None = None
    no_host: bool = False
    findings: Path = Path("findings")
    json: bool = False

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> KernelSweepOptions:
        return cls(KernelBuildOptions.from_args(args), KnownOptions.from_args(args), args.syscalls, args.max_len,
                   _opt(args, "sizes"), _opt(args, "koffs"), _opt(args, "segs"), _opt(args, "prots"), args.timeout,
                   args.hang_budget, args.jobs, args.cpu, args.no_host, args.findings, args.json)
