"""The command line's options as data (options.py): each command's parsed arguments build
its frozen options once, with what the command line leaves to be worked out settled in."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Callable

import pytest
from copyfuzz import options
from copyfuzz.cli import build_parser
from copyfuzz.cmd_repro import spec_argument
from copyfuzz.errors import CopyfuzzError
from copyfuzz.options import (
    CheckOptions,
    ConfirmOptions,
    FileOptions,
    FuzzOptions,
    HistoryOptions,
    IsaOptions,
    KernelBuildOptions,
    KernelSweepOptions,
    KnownOptions,
    ReplayOptions,
    ReproOptions,
    RoutineOptions,
    SweepOptions,
    TargetCommandOptions,
)

Builder = Callable[[argparse.Namespace], object]


def parsed(*argv: str) -> argparse.Namespace:
    """The Namespace the CLI gives these words (one command's parser, as cli.main builds it)."""
    return build_parser(argv[0]).parse_args(list(argv))


@pytest.fixture(autouse=True)
def _jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COPYFUZZ_JOBS", "3")


# ---- defaults ----


def test_a_bare_sweep_has_the_documented_defaults() -> None:
    opts = SweepOptions.from_args(parsed("sweep"))
    assert opts.max_len == options.DEFAULT_MAX_LEN == 256 and not opts.max_len_given
    assert (opts.min_len, opts.random, opts.seed, opts.random_max_len) == (0, 0, None, None)
    assert opts.jobs == 3  # COPYFUZZ_JOBS, settled in
    assert opts.findings == Path("findings") and opts.granule == 0 and opts.profile is None
    assert opts.routines == () and not opts.mutants and not opts.memcheck and not opts.no_audit
    assert opts.target == RoutineOptions() and opts.known == KnownOptions()


def test_jobs_fall_back_to_the_cpus_and_a_bad_copyfuzz_jobs_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COPYFUZZ_JOBS")
    assert SweepOptions.from_args(parsed("sweep")).jobs >= 1
    assert SweepOptions.from_args(parsed("sweep", "--jobs", "5")).jobs == 5
    monkeypatch.setenv("COPYFUZZ_JOBS", "0")
    with pytest.raises(CopyfuzzError, match="COPYFUZZ_JOBS: 0 is out of range"):
        SweepOptions.from_args(parsed("sweep"))


def test_the_dataclass_defaults_agree_with_the_parsers() -> None:
    """A command that lacks an option builds the dataclass default; the parser's default,
    where it has one, is the same value (one default, not two that differ)."""
    fuzz = FuzzOptions.from_args(parsed("fuzz", "riscv/copy_user"))
    plain = FuzzOptions()
    for name in ("engine", "time", "jobs", "regressions", "max_len", "granule", "triage_time"):
        assert getattr(fuzz, name) == getattr(plain, name), name
    sweep = SweepOptions.from_args(parsed("sweep", "--max-len", "256"))
    assert sweep.min_len == SweepOptions().min_len and sweep.findings == SweepOptions().findings
    replay = ReplayOptions.from_args(parsed("replay", "d"))
    assert replay.max_len == ReplayOptions(Path("d")).max_len is None
    assert replay.raw_max_len == options.RAW_MAX_LEN
    repro = ReproOptions.from_args(parsed("repro", "x:n=1"))
    assert repro.max_len == ReproOptions("x").max_len is None and repro.raw_max_len == options.RAW_MAX_LEN
    assert ReproOptions.from_args(parsed("repro", "x:n=1", "--max-len", "300")).raw_max_len == 300


# ---- every command's Namespace builds ----


@pytest.mark.parametrize("argv, build", [
    (("sweep", "riscv/*", "--mutants", "--max-len", "16", "--random", "4", "--seed", "9", "--json"),
     SweepOptions.from_args),
    (("check", "f.S", "--symbol", "s:copy", "-D", "X=1", "--cpu", "max", "--granule", "16"), CheckOptions.from_args),
    (("history", "repo", "--file", "a.S", "--symbol", "s", "--bisect", "wrong-data", "--good", "g", "--bad", "b"),
     HistoryOptions.from_args),
    (("fuzz", "riscv/copy_user", "--engine", "afl", "--afl-host", "h1", "--until", "wrong-data"),
     FuzzOptions.from_args),
    (("repro", "riscv/copy_user:n=3", "--memcheck", "--timeout-ms", "9"), ReproOptions.from_args),
    (("replay", "dir", "--routine", "r", "--known", "k.txt", "--isa", "rv64gcv"), ReplayOptions.from_args),
    (("bench", "riscv/copy_user", "--vs", "riscv/copy_user"), TargetCommandOptions.from_args),
    (("cov", "f.S", "--symbol", "s"), TargetCommandOptions.from_args),
    (("confirm", "f.S:s:n=1", "--as", "arch/riscv/lib/f.S", "--arch", "riscv"), ConfirmOptions.from_args),
    (("kernel", "build", "--arch", "arm64"), KernelBuildOptions.from_args),
    (("kernel", "sweep", "--syscalls", "read", "--max-len", "8", "--known", "k"), KernelSweepOptions.from_args),
])
def test_each_commands_namespace_builds(argv: tuple[str, ...], build: Builder) -> None:
    opts = build(parsed(*argv))
    assert dataclasses.is_dataclass(opts)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(opts, dataclasses.fields(opts)[0].name, None)


def test_audit_takes_its_positional_as_is() -> None:
    opts = TargetCommandOptions.from_args(parsed("audit", "f.S", "--symbol", "s"), positional="target",
                                          take_file=False)
    assert (opts.routine, opts.file, opts.target.file.symbol) == ("f.S", None, ("s",))


def test_values_land_where_the_command_reads_them() -> None:
    check = CheckOptions.from_args(parsed("check", "f.S", "--symbol", "s:copy", "-D", "X=1", "-D", "Y",
                                          "--with", "w.S", "--cpu", "max", "--max-len", "8", "--confirm"))
    assert check.file == check.sweep.file == "f.S" and check.confirm and check.sweep.profile == "linux"
    f = check.sweep.target.file
    assert (f.symbol, f.define, f.with_files, f.cpu) == (("s:copy",), ("X=1", "Y"), ("w.S",), "max")
    assert check.sweep.max_len == 8 and check.sweep.max_len_given
    assert f.build().defines == ("X=1", "Y") and f.build().arch == ""
    kernel = KernelSweepOptions.from_args(parsed("kernel", "sweep", "--arch", "arm", "--replace", "a=b"))
    assert kernel.build == KernelBuildOptions("arm", "6.12", None, ("a=b",), None)
    assert kernel.known == KnownOptions() and kernel.max_len is None


def test_history_settles_its_own_sweep() -> None:
    """No random phase, a private findings directory, the class by its current name."""
    opts = HistoryOptions.from_args(parsed("history", "repo", "--file", "a.S", "--symbol", "s", "--bisect",
                                           "wrong-data", "--good", "g", "--bad", "b"))
    assert (opts.sweep.random, opts.sweep.seed, opts.sweep.random_max_len) == (0, None, None)
    assert opts.sweep.findings != Path("findings") and opts.sweep.file is None
    assert opts.sweep.jobs == 3 and opts.file == "a.S" and opts.bisect == "wrong-data"


def test_min_len_above_max_len_is_refused_while_building() -> None:
    with pytest.raises(CopyfuzzError, match="--min-len 9 is above --max-len 8"):
        SweepOptions.from_args(parsed("sweep", "--min-len", "9", "--max-len", "8"))


# ---- frozen ----


@pytest.mark.parametrize("opts, name", [
    (SweepOptions(), "max_len"), (FileOptions(), "define"), (IsaOptions(), "isa"), (RoutineOptions(), "xlen"),
    (KnownOptions(), "known"), (FuzzOptions(), "routine"), (ReproOptions("x"), "memcheck"),
    (KernelBuildOptions("riscv"), "arch"),
])
def test_options_refuse_assignment(opts: object, name: str) -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(opts, name, None)


# ---- what is settled while building ----


def test_a_file_positional_is_the_file() -> None:
    for command in ("fuzz", "bench", "cov"):
        ns = parsed(command, "lib/uaccess.S", "--symbol", "s")
        built = FuzzOptions.from_args(ns) if command == "fuzz" else TargetCommandOptions.from_args(ns)
        assert (built.routine, built.file) == (None, "lib/uaccess.S"), command
    named = FuzzOptions.from_args(parsed("fuzz", "riscv/copy_user"))
    assert (named.routine, named.file) == ("riscv/copy_user", None)


@pytest.mark.parametrize("argv, message", [
    (("fuzz", "a.S", "--file", "b.S", "--symbol", "s"), "give the file once: a.S or --file b.S"),
    (("bench", "riscv/copy_user", "--file", "b.S"), r"give a routine \(riscv/copy_user\) or a file"),
    (("cov", "riscv/copy_user", "-D", "X", "--cpu", "max"), "-D, --cpu: for a FILE.S target only"),
])
def test_a_target_given_twice_or_file_options_without_a_file_are_refused(argv: tuple[str, ...],
                                                                         message: str) -> None:
    with pytest.raises(CopyfuzzError, match=message):
        TargetCommandOptions.from_args(parsed(*argv)) if argv[0] != "fuzz" else FuzzOptions.from_args(parsed(*argv))


def test_the_isa_settles_the_width() -> None:
    assert SweepOptions.from_args(parsed("sweep", "--isa", "rv32gcv")).target.xlen == 32
    assert SweepOptions.from_args(parsed("sweep", "--isa", "rv64gc")).target.xlen == 64
    assert SweepOptions.from_args(parsed("sweep")).target.xlen is None
    with pytest.raises(CopyfuzzError, match="--isa rv32gc is RV32, --xlen 64 is not"):
        SweepOptions.from_args(parsed("sweep", "--isa", "rv32gc", "--xlen", "64"))
    # fuzz has no --xlen: its ISA names no width (RISC-V runs at 64 bits, ARM at its own)
    assert FuzzOptions.from_args(parsed("fuzz", "riscv/copy_user", "--isa", "rv32gc")).target.xlen is None


def test_a_bad_isa_is_refused_while_building_for_every_command() -> None:
    for argv in (("sweep", "--isa", "nonsense"), ("fuzz", "r", "--isa", "nonsense"),
                 ("replay", "d", "--isa", "nonsense")):
        builders: dict[str, Builder] = {"sweep": SweepOptions.from_args, "fuzz": FuzzOptions.from_args,
                                        "replay": ReplayOptions.from_args}
        build = builders[argv[0]]
        with pytest.raises(CopyfuzzError):
            build(parsed(*argv))


def test_saved_options_fill_what_the_command_line_left_unset() -> None:
    given = RoutineOptions(FileOptions(define=("MINE",), cpu="max"))
    saved = given.with_saved("-DTHEIRS --alternative -I inc --with w.S --defsym a=1 --kind copy --xlen 32 "
                             "--arch riscv --cpu rv64 --isa rv32gcv --vlen 256", "x.spec")
    f = saved.file
    assert f.define == ("MINE",) and f.cpu == "max"  # the command line wins
    assert (f.alternative, f.include, f.with_files, f.defsym, f.kind, f.arch) == (
        True, ("inc",), ("w.S",), ("a=1",), "copy", "riscv")
    assert saved.isa == IsaOptions("rv32gcv", 256) and saved.xlen == 32
    assert given.file.define == ("MINE",) and given.xlen is None  # a new value; the old one unchanged


def test_saved_options_are_checked() -> None:
    for text, message in (("--xlen 16", "--xlen '16' is not 32 or 64"), ("--arch vax", "--arch 'vax'"),
                          ("--frob", "'--frob' is not one of"), ("-D 1bad", "-D '1bad'"),
                          ("--isa rv32gc --xlen 64", "--isa rv32gc is RV32, --xlen 64 is not")):
        with pytest.raises(CopyfuzzError, match=message):
            RoutineOptions().with_saved(text, "x.spec")


def test_a_spec_files_header_lands_in_the_repro_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "case.spec"
    spec.write_text("# class: load-out-of-bounds\n# options: -DFOO --kind copy --xlen 32\n"
                    "lib/f.S:sym:n=3,src_off=0,dst_off=0\n")
    before = ReproOptions.from_args(parsed("repro", str(spec)))
    name, fields, after = spec_argument(before)
    assert (name, fields) == ("lib/f.S:sym", "n=3,src_off=0,dst_off=0")
    assert after.target.file.define == ("FOO",) and after.target.file.kind == "copy" and after.target.xlen == 32
    assert after.memcheck and "--memcheck on" in capsys.readouterr().err  # a memory-audit class
    assert not before.memcheck and before.target.file.define == ()
    # confirm reads the same header, and runs no executor: no --memcheck to settle
    _, _, quiet = spec_argument(before, audit_on=False)
    assert not quiet.memcheck and quiet.target.xlen == 32 and capsys.readouterr().err == ""


def test_confirm_reads_a_memory_audit_class_spec_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """confirm has no --memcheck: a .spec file of a memory-audit class was an AttributeError
    traceback while the options were a Namespace; now the case's own problem is the one line."""
    from copyfuzz.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.S").write_text("ENTRY(__asm_copy_to_user)\n")
    (tmp_path / "c.spec").write_text("# class: load-out-of-bounds\n# options: --kind copy\n"
                                     "f.S:__asm_copy_to_user:n=3,src_off=0,dst_off=0\n")
    assert main(["confirm", "c.spec", "--arch", "arm64"]) == 2
    err = capsys.readouterr().err
    assert "confirm: neither side faults in this case" in err and "Traceback" not in err
