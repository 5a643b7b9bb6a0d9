"""The command line: `copyfuzz list | sweep | check | history | audit | bench | cov | repro | fuzz | replay |
junit | kernel build | kernel sweep | confirm`.

Exit status everywhere: 0 clean, 1 findings, 2 bad input or a build/tool problem.
Every expected problem is a CopyfuzzError, printed as one line (plus details such as
compiler output), never as a traceback; under --json, exit 2 also prints one object
{"error": ..., "details": ...} on stdout (main(), the one place errors become exit 2).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, TextIO, cast

from . import envs, infer, records, targets
from .errors import CopyfuzzError, interrupted, os_error_message
from .options import wants_json

PROG = "copyfuzz"


def repo_root() -> Path:
    """The checkout this package lives in (COPYFUZZ_ROOT overrides, for tests)."""
    env = os.environ.get("COPYFUZZ_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[2]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit 2 like ours."""

    def error(self, message: str) -> NoReturn:
        raise CopyfuzzError(f"{message} (see '{self.prog} --help')")


def _int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An integer option within [lo, hi]; argparse prefixes the option name to errors."""

    def parse(text: str) -> int:
        try:
            value = int(text, 0)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is out of range {lo}..{hi}")
        return value

    return parse


def _xlen_option(p: argparse.ArgumentParser) -> None:
    """--xlen, unset unless given: an architecture of one width runs at it, and a width it
    does not have is refused (targets.Target.width), --xlen 64 on ARM as --xlen 32 on arm64."""
    p.add_argument("--xlen", type=int, choices=(64, 32), default=None,
                   help="register width: 32 builds and runs RV32 executors under qemu-riscv32 "
                        "(default: the architecture's, 64 for RISC-V)")


class _Unbuilt:
    """The options of a command not on this command line: every call is taken and does
    nothing. The command itself is listed, with its help; a start builds only its own
    command's options (they were a fifth of every start: docs/perf.md)."""

    def __getattr__(self, name: str) -> Callable[..., "_Unbuilt"]:
        return lambda *args, **kwargs: self


def command_word(argv: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option (the top
    level takes no option with a value)."""
    return next((w for w in argv if not w.startswith("-")), None)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's options, or with `command`, that one's
    (any other command is listed with its help and takes none)."""
    p = _Parser(prog=PROG, description="Fuzz and differential-test kernel user-copy routines.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add_command(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        made = sub.add_parser(name, **kwargs)
        return made if command in (None, name) else cast(argparse.ArgumentParser, _Unbuilt())

    ls = add_command("list", help="list the routines and mutants")
    ls.add_argument("--json", action="store_true", help="machine-readable output")

    sw = add_command("sweep", help="sweep routines exhaustively (and randomly) against the oracle",
                        epilog="exit status: 0 clean (and every mutant caught), 1 findings, audit problems "
                               "or an escaped mutant, 2 bad input or build error")
    sw.add_argument("routines", nargs="*", metavar="ROUTINE",
                    help="routine names or fnmatch patterns (default: all non-mutant routines)")
    sw.add_argument("--mutants", action="store_true", help="also sweep every mutant; each must be caught")
    sw.add_argument("--profile", choices=records.PROFILES,
                    help="contract to judge by (default: each routine's declared profile)")
    _sweep_options(sw)

    ck = add_command("check", help="check a kernel-style .S file as it is (build, audit, sweep)",
                        epilog="exit status: 0 clean, 1 findings or audit problems, 2 bad input or build error")
    ck.add_argument("file", metavar="FILE.S", help="e.g. linux/arch/riscv/lib/uaccess.S")
    _file_options(ck)
    ck.add_argument("--profile", choices=records.PROFILES, default="linux",
                    help="contract to judge by (default linux)")
    _sweep_options(ck)
    cc = ck.add_argument_group("confirm on a booted kernel (docs/kernel-sweep.md)")
    cc.add_argument("--confirm", action="store_true",
                    help="run each user-copy finding's smallest case as the syscalls that drive it, on a kernel "
                         "built with FILE in its place")
    cc.add_argument("--confirm-as", metavar="PATH", help="FILE's path in the kernel tree (default: from its own "
                                                           "path, .../arch/<arch>/...)")
    cc.add_argument("--kernel-source", choices=("6.12", "6.1"), default="6.12",
                    help="Debian's linux-source the kernel is built from (default 6.12)")
    cc.add_argument("--kernel-tree", type=Path, metavar="DIR", help="your kernel tree instead (read only)")
    cc.add_argument("--confirm-timeout", type=float, default=2.0, metavar="S",
                    help="a call that has not returned after S seconds is a hang (default 2)")

    hs = add_command("history", help="check a .S file at every commit of a git repository that changed it; bisect",
                        description="Check PATH as it was at every commit that changed it (renames followed; "
                                    "quoted includes taken from the same commit), one row per commit, results "
                                    "cached by the texts and the options. The repository's work tree and index "
                                    "are never touched. With --bisect CLASS --good REV --bad REV: the first "
                                    "commit where CLASS appears (--fixed: disappears), like git bisect run.",
                        epilog="exit status: history 0 when the newest version is clean, 1 when it has "
                               "findings, 2 bad input or the newest version does not build; --bisect 0 when "
                               "the commit is found, 2 when it cannot be (docs/history.md)")
    hs.add_argument("repo", metavar="REPO", help="a git repository (work tree or bare), e.g. ../linux")
    hs.add_argument("--file", required=True, metavar="PATH",
                    help="the file's path in the repository at HEAD (or at --until, --bad), "
                         "e.g. arch/riscv/lib/uaccess.S")
    _file_options(hs)
    hs.add_argument("--profile", choices=records.PROFILES, default="linux",
                    help="contract to judge by (default linux)")
    hs.add_argument("--since", metavar="REV",
                    help="start from the file as it is at REV (a first row), then the commits after it")
    hs.add_argument("--until", metavar="REV", help="the newest commit to look at (default HEAD)")
    hs.add_argument("--bisect", metavar="CLASS",
                    help="find the first commit whose version shows CLASS (a finding class, or 'audit')")
    hs.add_argument("--good", metavar="REV", help="--bisect: a revision without CLASS")
    hs.add_argument("--bad", metavar="REV", help="--bisect: a revision with CLASS")
    hs.add_argument("--fixed", action="store_true",
                    help="--bisect: find where CLASS disappears (--bad is then the older revision)")
    hs.add_argument("--cache", metavar="DIR",
                    help="where results are kept (default $XDG_CACHE_HOME/copyfuzz/history, "
                         "else ~/.cache/copyfuzz/history)")
    _isa_options(hs)
    _xlen_option(hs)
    hs.add_argument("--max-len", type=_int_in(0, records.MAX_LEN), metavar="L",
                    help="longest n of each version's exhaustive sweep (default 256)")
    hs.add_argument("--min-len", type=_int_in(0, records.MAX_LEN), default=0, metavar="M",
                    help="shortest n of the exhaustive sweep (default 0)")
    hs.add_argument("--jobs", type=_int_in(1, 1024), metavar="N",
                    help="executor processes, used by one version after another (default: COPYFUZZ_JOBS, "
                         "else the number of CPUs)")
    hs.add_argument("--timeout-ms", type=_int_in(1, records.EXEC_TIMEOUT_MS_MAX), metavar="T",
                    help="per-case watchdog of the executor")
    hs.add_argument("--memcheck", action="store_true", help="run under the QEMU plugin (as sweep --memcheck)")
    hs.add_argument("--no-audit", action="store_true", help="skip the static exception-table audit")
    hs.add_argument("--json", action="store_true", help="machine-readable output")

    au = add_command("audit", help="static audit of a routine's exception table (Capstone)",
                        epilog="exit status: 0 no problems, 1 problems, 2 bad input or build error")
    au.add_argument("target", metavar="ROUTINE|FILE.S", help="a routine name, or a .S file with --symbol")
    _file_options(au, required=False)
    _xlen_option(au)
    au.add_argument("--json", action="store_true", help="machine-readable output")
    _isa_options(au)

    bn = add_command("bench", help="instructions per byte, accesses and speed of a routine (QEMU plugin)",
                        epilog="exit status: 0 measured, 2 bad input, build error or a case that is not clean")
    bn.add_argument("routine", nargs="?", metavar="ROUTINE|FILE.S", help="a routine name, or a .S file with --symbol")
    bn.add_argument("--vs", metavar="ROUTINE2", help="a second routine, measured side by side; adds ratios")
    bn.add_argument("--file", metavar="FILE.S", help="the same as a FILE.S positional (an alias)")
    _file_options(bn, required=False)
    _xlen_option(bn)
    bn.add_argument("--sizes", type=_size_list, metavar="N,N,...", help="large sizes (default 8192,16384,32768)")
    bn.add_argument("--reps", type=_int_in(1, 1_000_000), default=200, metavar="R",
                    help="repetitions per cell for the wall clock (default 200)")
    bn.add_argument("--no-small", action="store_true", help="skip the small sizes 1..256")
    bn.add_argument("--no-mix", action="store_true", help="skip the workload mix")
    _isa_options(bn)
    out = bn.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="one CSV row per cell")
    bn.add_argument("--plot", metavar="FILE.png|svg", help="also draw instructions per byte (matplotlib)")

    cv = add_command("cov", help="per-instruction execution counts of a routine (QEMU plugin), terminal and HTML")
    cv.add_argument("routine", nargs="?", metavar="ROUTINE|FILE.S", help="a routine name, or a .S file with --symbol")
    cv.add_argument("--file", metavar="FILE.S", help="the same as a FILE.S positional (an alias)")
    _file_options(cv, required=False)
    _xlen_option(cv)
    src = cv.add_mutually_exclusive_group()
    src.add_argument("--sweep", action="store_true", help="run the exhaustive sweep (the default)")
    src.add_argument("--corpus", metavar="DIR", help="run the cases in DIR (case records or spec lines)")
    cv.add_argument("--max-len", type=_int_in(0, records.MAX_LEN), metavar="L",
                    help="longest n of the sweep (default 64); with --corpus, COPYFUZZ_MAX_LEN the raw "
                         "inputs were fuzzed with (default 65536)")
    _granule_option(cv, "arm64: faults at 16-byte MTE tag granules too: the sweep's, or with --corpus the "
                        "cases of a `fuzz --granule 16` campaign, raw inputs decoded as it decoded them")
    cv.add_argument("--html", metavar="FILE", help="also write the listing as one HTML file")
    cv.add_argument("--json", action="store_true", help="machine-readable output")
    _isa_options(cv)

    rp = add_command("repro", help="run one case and explain it",
                        epilog="exit status: 0 no error class, 1 an error class under the profile, "
                               "2 bad input or build error")
    rp.add_argument("spec", metavar="SPEC|FILE",
                    help="ROUTINE:n=N[,src_off=O,src_fault=F,dst_off=O,dst_fault=F], a .spec file, "
                         "or a raw fuzzer input with --routine")
    rp.add_argument("--profile", choices=records.PROFILES,
                    help="contract to judge by (default: the routine's declared profile)")
    rp.add_argument("--timeout-ms", type=_int_in(1, records.EXEC_TIMEOUT_MS_MAX), metavar="T",
                    help="watchdog of the executor")
    rp.add_argument("--json", action="store_true", help="machine-readable output")
    _isa_options(rp)
    _xlen_option(rp)
    rp.add_argument("--memcheck", action="store_true",
                    help="run under the QEMU plugin and show its counters and any access outside the windows")
    rp.add_argument("--routine", metavar="NAME",
                    help="the routine a raw input FILE (libFuzzer artifact, AFL crash) is decoded for")
    _granule_option(rp, "a raw input FILE of a `fuzz --granule 16` campaign: decoded as it decoded it")
    _raw_max_len_option(rp)
    _file_options(rp, required=False)

    fz = add_command("fuzz", help="coverage-guided fuzzing of one routine (native driver, libFuzzer)",
                        epilog="exit status: 0 no finding, 1 findings (saved as regression specs) or failures "
                               "not triaged in time, 2 bad input or build error")
    fz.add_argument("routine", nargs="?", metavar="ROUTINE|FILE.S", help="a routine name, or a .S file with --symbol")
    fz.add_argument("--file", metavar="FILE.S", help="the same as a FILE.S positional (an alias)")
    _file_options(fz, required=False)
    fz.add_argument("--engine", choices=("libfuzzer", "afl", "hypothesis"), default="libfuzzer",
                    help="fuzzing engine (default libfuzzer)")
    fz.add_argument("--time", type=_int_in(1, 10**9), default=60, metavar="SECONDS",
                    help="how long the campaign runs (default 60)")
    fz.add_argument("--triage-time", type=_int_in(0, 10**9), metavar="SECONDS",
                    help="how long triage (re-running and shrinking findings) may go on after --time; "
                         "what is left then is saved under FINDINGS/untriaged/ for replay "
                         "(default 10%% of --time, at least 5)")
    fz.add_argument("--jobs", type=_int_in(1, 1024), default=1, metavar="N",
                    help="parallel fuzzing processes (libFuzzer -jobs=N -workers=N; default 1)")
    fz.add_argument("--corpus", type=Path, metavar="DIR",
                    help="corpus directory, resumed if not empty (default corpora/<routine>/)")
    fz.add_argument("--findings", type=Path, metavar="DIR",
                    help="artifacts and driver findings (default findings/fuzz/<routine>/)")
    fz.add_argument("--regressions", type=Path, default=Path("corpora/regressions"), metavar="DIR",
                    help="where findings are saved as regression specs (default corpora/regressions/)")
    fz.add_argument("--seed", type=_int_in(0, 2**31 - 2), metavar="S",
                    help="seed of the first round (libFuzzer -seed, afl-fuzz -s, hypothesis.seed; "
                         "default: a fresh one, printed)")
    fz.add_argument("--profile", choices=records.PROFILES,
                    help="contract to judge by (default: the routine's declared profile)")
    fz.add_argument("--max-len", type=_int_in(0, records.MAX_LEN), default=65536, metavar="L",
                    help="longest n an input can ask for (COPYFUZZ_MAX_LEN, default 65536)")
    fz.add_argument("--afl-host", type=_afl_host, metavar="NAME",
                    help="--engine afl: name the instances after this host, main-NAME (-M) and secN-NAME "
                         "(-S), even with --jobs 1, so that hosts can sync their queues (ci/afl-sync.sh); "
                         "each run imports the synced queues first (AFL_IMPORT_FIRST)")
    fz.add_argument("--until", metavar="CLASS[,CLASS]",
                    help="stop at the first finding of one of these classes (e.g. a mutant's own class)")
    fz.add_argument("--json", action="store_true", help="machine-readable output")
    _granule_option(fz, "arm64, libFuzzer and AFL++: inputs may also ask for faults at 16-byte MTE tag "
                        "granules anywhere in a page (input byte 14), not only at page boundaries")
    _isa_options(fz)
    _known_options(fz)

    rl = add_command("replay", help="re-run saved cases: regression specs, corpora, artifacts",
                        epilog="exit status: 0 nothing reproduces, 1 a finding reproduces, "
                               "2 bad input or build error")
    rl.add_argument("dir", metavar="DIR", type=Path,
                    help="a directory of .spec files, driver .finding files and raw engine inputs")
    rl.add_argument("--routine", metavar="NAME",
                    help="the routine of raw inputs and of specs without one (a libFuzzer corpus)")
    rl.add_argument("--profile", choices=records.PROFILES,
                    help="contract to judge by (default: each routine's declared profile)")
    _raw_max_len_option(rl)
    _granule_option(rl, "raw inputs of a `fuzz --granule 16` campaign: decoded as it decoded them")
    rl.add_argument("--json", action="store_true", help="machine-readable output")
    _isa_options(rl)
    _known_options(rl)

    from .kernel import options as kernel_options

    kernel_options.add_parsers(sub, _int_in, command)  # the kernel and confirm commands'

    ju = add_command("junit", help="JUnit XML from the --json results of fuzz and replay (for CI)",
                        epilog="exit status: 0 every testcase passed or was skipped, 1 a failure, "
                               "2 an error (a run that failed, an unreadable result) or bad input")
    ju.add_argument("results", nargs="*", type=Path, metavar="RESULT.json",
                    help="output of 'copyfuzz fuzz --json' or 'replay --json'; RESULT.status and "
                         "RESULT.stderr beside it are read if present (docs/ci.md); none: an empty report")
    ju.add_argument("--out", type=Path, required=True, metavar="FILE", help="the JUnit XML file to write")
    ju.add_argument("--suite", default="copyfuzz", metavar="NAME", help="testsuite name (default copyfuzz)")
    ju.add_argument("--expect-mutants", action="store_true",
                    help="replay results: a bundled mutant's cases must reproduce (they are the mutant "
                         "catalogue), any other routine's must not")
    return p


def _afl_host(text: str) -> str:
    """An AFL++ instance name part: a file name in the sync dir, no separators."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,39}", text):
        raise argparse.ArgumentTypeError(f"{text!r}: letters, digits, '_', '.' and '-' only (at most 40)")
    return text


def _size_list(text: str) -> list[int]:
    try:
        sizes = [int(x, 0) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 8192,16384, not {text!r}") from None
    if not sizes or any(not 1 <= n <= records.MAX_LEN for n in sizes):
        raise argparse.ArgumentTypeError(f"sizes must be 1..{records.MAX_LEN}")
    return sizes


def _file_options(p: argparse.ArgumentParser, required: bool = True) -> None:
    """How a .S file from outside the tree is built."""
    p.add_argument("--symbol", action="append", required=required, metavar="SYM[:KIND]",
                   help="routine entry to check, repeatable (KIND: " + ", ".join(records.KINDS) + ")")
    p.add_argument("--kind", choices=records.KINDS,
                   help="kind of symbols given without one (default: what the name says, said on stderr; "
                        "a name that says none is refused)")
    p.add_argument("-D", dest="define", action="append", metavar="NAME[=VALUE]",
                   help="define a kernel config switch or macro (CONFIG_* are off otherwise)")
    p.add_argument("--alternative", action="store_true",
                   help="build ALTERNATIVE() sites with their replacement instead of the original")
    p.add_argument("-I", dest="include", action="append", metavar="DIR",
                   help="a directory of headers the file includes (after the compat tree), repeatable")
    p.add_argument("--with", dest="with_files", action="append", metavar="FILE.S|FILE.c",
                   help="another source linked with the file (e.g. one defining what it calls), repeatable")
    p.add_argument("--defsym", action="append", metavar="NAME=VALUE",
                   help="define a symbol the file references but nothing defines, repeatable")
    p.add_argument("--cpu", metavar="MODEL",
                   help="the QEMU CPU to run the file's routine on (e.g. cortex-a72: a 64-byte DC ZVA block, "
                        "where QEMU's default arm64 CPU has 512; `qemu-aarch64 -cpu help` lists them)")
    p.add_argument("--arch", choices=tuple(targets.ARCHES),
                   help="the file's architecture (default: the name after an arch/ component of its path, "
                        "e.g. linux/arch/arm64/lib/..., else what its instructions say; said on stderr)")


def _isa_options(p: argparse.ArgumentParser) -> None:
    """The routine's ISA (isa.py): its -march and QEMU's -cpu; the harness stays rv64gc."""
    p.add_argument("--isa", metavar="ISA",
                   help="build the routine (and --with files) with -march=ISA and run it on a QEMU CPU "
                        "with those extensions, e.g. rv64gcv, rv64gc_zba_zbb, rv32gcv (default: the "
                        "routine's own isa= line, else rv64gc/rv32gc)")
    p.add_argument("--vlen", type=int, metavar="BITS",
                   help="vector register length of a V CPU: 128 (default), 256, 512 or 1024")


def _known_options(p: argparse.ArgumentParser) -> None:
    """Baselines of known findings (known.py, docs/ci.md)."""
    p.add_argument("--known", type=Path, metavar="FILE",
                   help="accepted findings, one 'CLASS SYMBOL+0xOFF' (or 'CLASS *') a line: shown as known, "
                        "they do not make the exit status 1")
    p.add_argument("--write-known", type=Path, metavar="FILE",
                   help="write the run's unique findings to FILE in the --known format")


def _sweep_options(p: argparse.ArgumentParser) -> None:
    _isa_options(p)
    _known_options(p)
    _xlen_option(p)
    p.add_argument("--max-len", type=_int_in(0, records.MAX_LEN), metavar="L",
                   help="longest n of the exhaustive phase (default 256, or less for a routine whose "
                        "max-len= line says so; at most 1048576)")
    p.add_argument("--min-len", type=_int_in(0, records.MAX_LEN), default=0, metavar="M",
                   help="shortest n of the exhaustive phase (default 0)")
    p.add_argument("--random", type=_int_in(0, 2**63 - 1), default=0, metavar="N",
                   help="also run N random cases")
    p.add_argument("--seed", type=_int_in(0, 2**64 - 1), metavar="S",
                   help="seed of the random phase (default: a fresh one, printed)")
    p.add_argument("--random-max-len", type=_int_in(1, records.MAX_LEN), metavar="R",
                   help="longest n of the random phase (default 65536)")
    p.add_argument("--jobs", type=_int_in(1, 1024), metavar="N",
                   help="executor processes per routine (default: COPYFUZZ_JOBS, else the number of CPUs)")
    p.add_argument("--timeout-ms", type=_int_in(1, records.EXEC_TIMEOUT_MS_MAX), metavar="T",
                   help="per-case watchdog of the executor")
    p.add_argument("--findings", type=Path, default=Path("findings"), metavar="DIR",
                   help="where reproducers are appended as JSON lines (default findings/)")
    p.add_argument("--memcheck", action="store_true",
                   help="run under the QEMU plugin: every load and store checked against the windows "
                        f"(adds {', '.join(records.MEMCHECK_CLASSES)}; sees over-reads guard pages miss)")
    p.add_argument("--no-audit", action="store_true",
                   help="skip the static exception-table audit that runs before the sweep")
    _granule_option(p, "arm64: fault boundaries at 16-byte MTE tag granules anywhere in a page (tagged "
                       "memory, synchronous tag-check faults) instead of at page boundaries")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _raw_max_len_option(p: argparse.ArgumentParser) -> None:
    """How raw engine inputs are decoded: the max-len of the campaign that made them (replay, repro)."""
    p.add_argument("--max-len", type=_int_in(0, records.MAX_LEN), metavar="L",
                   help="COPYFUZZ_MAX_LEN the raw inputs were fuzzed with (default 65536)")


def _granule_option(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--granule", type=int, choices=(records.GRANULE_MTE,), help=help_text)


# Commands whose module is not cmd_<command>.py (run_<command> in it all the same).
_MODULES = {"junit": ".junit"}


def _terminate(signum: int, frame: object) -> None:
    # Unwind like Ctrl-C so running executors are stopped by their `finally`.
    raise KeyboardInterrupt


STDOUT_NAME = "standard output"


class _NamedStdout:
    """sys.stdout, whose write errors name it: a full disk under `> FILE` is reported as
    standard output's, not as a nameless OSError. Everything else is the real stream's."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.written = False  # has the command printed anything (its --json object)?

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        try:
            return self._stream.write(text)
        except OSError as e:
            raise OSError(e.errno, e.strerror, STDOUT_NAME) from e  # EPIPE stays BrokenPipeError

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as e:
            raise OSError(e.errno, e.strerror, STDOUT_NAME) from e

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def json_commands(parser: argparse.ArgumentParser) -> set[str]:
    """The commands that take --json (`kernel` when a subcommand of it does)."""
    out: set[str] = set()
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        for name, sub in getattr(action, "choices", {}).items():
            if "--json" in sub._option_string_actions or json_commands(sub):
                out.add(name)
    return out


def _json_requested(parser: argparse.ArgumentParser, argv: list[str], args: argparse.Namespace | None) -> bool:
    """Did the command line ask for --json output? From the parsed arguments when they
    parsed, else from the words (a usage error under --json is answered in JSON too)."""
    if args is not None:
        return wants_json(args)
    return "--json" in argv and command_word(argv) in json_commands(parser)


def _report_error(message: str, details: str, as_json: bool, stdout: _NamedStdout) -> None:
    """A problem (exit 2): one line on stderr (plus details); under --json also one object
    {"error", "details"} on stdout, unless the command already printed its object."""
    print(f"{PROG}: {message}", file=sys.stderr)
    if details:
        print(details, file=sys.stderr)
    if as_json and not stdout.written:
        try:
            print(json.dumps({"error": message, "details": details}), file=stdout)
            stdout.flush()
        except OSError:
            pass  # standard output itself is what failed: stderr has it


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    stdout = sys.stdout
    named = _NamedStdout(stdout)
    sys.stdout = named
    words = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(command_word(words))
    except (KeyboardInterrupt, RuntimeError) as e:
        if not interrupted(e):
            raise
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    args: argparse.Namespace | None = None
    try:
        args = parser.parse_args(words)
        envs.warn_unknown()
        root = repo_root()
        # Imported on use: `copyfuzz list` should not pay for Capstone or matplotlib.
        module = importlib.import_module(_MODULES.get(args.command, f".cmd_{args.command}"), __package__)
        run: Callable[[Path, argparse.Namespace], int] = getattr(module, f"run_{args.command}")
        status = run(root, args)
        infer.flush()  # what the command worked out and did not say yet
        sys.stdout.flush()  # here, not at exit: a full disk is an error like any other
        return status
    except CopyfuzzError as e:
        infer.drop()  # an error is one line
        _report_error(str(e), e.details, e.exit_code == 2 and _json_requested(parser, words, args), named)
        return e.exit_code
    except (KeyboardInterrupt, RuntimeError) as e:
        if not interrupted(e):  # a RuntimeError that Ctrl-C did not cause is a bug: its traceback
            raise
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into something like `head` that stopped reading.
        sys.stderr.close()
        return 1
    except OSError as e:
        # A file that could not be read or written (a full disk, a path under a file, a
        # read-only file system ...): bad input or a tool problem, one line.
        as_json = _json_requested(parser, words, args) and e.filename != STDOUT_NAME
        _report_error(os_error_message(e), "", as_json, named)
        if e.filename == STDOUT_NAME:
            # What standard output still buffers would fail again when Python exits.
            os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return 2
    finally:
        sys.stdout = stdout
