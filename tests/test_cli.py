"""The command line as a user meets it: exit codes, messages, never a traceback.

Sweeps here run against tests/fake_executor.py (through the QEMU variable, as the
real executors run under qemu-riscv64), so they are quick and know their answers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import ROOT, TOOL, run_cli

FAKE = Path(__file__).parent / "fake_executor.py"
MAKEFILE = ("$(O)/riscv64/%.elf:\n\t@mkdir -p $(dir $@) && touch $@\n"
            # the fake executor's plan stands in for libcfref.so (tool/copyfuzz/plan.py)
            f"$(O)/host/libcfref.so:\n\t@mkdir -p $(dir $@) && cc -shared -fPIC -o $@ "
            f"{Path(__file__).parent / 'c' / 'fake_cfref.c'}\n")
# The fake executors are no ELF files: sweeps against them pass --no-audit.


def _routine(root: Path, rel: str, *meta: str) -> None:
    path = root / "arch" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("/*\n" + "".join(f" * copyfuzz: {m}\n" for m in meta) + " */\n")


@pytest.fixture
def fake_tree(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "tree"
    _routine(root, "riscv/clean_copy.S", "symbol=f", "kind=copy", "profile=exact", "about=never wrong")
    _routine(root, "riscv/buggy.S", "symbol=f", "kind=copy")
    _routine(root, "riscv/mutants/caught.S", "symbol=f", "kind=copy", "expect=wrong-data")
    _routine(root, "riscv/mutants/clean-escapes.S", "symbol=f", "kind=copy", "expect=hang")
    (root / "Makefile").write_text(MAKEFILE)
    env = {"COPYFUZZ_ROOT": str(root), "QEMU": f"{sys.executable} {FAKE}", "CROSS_COMPILE": ""}
    return root, env


def _assert_clean_failure(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in proc.stderr


# ---- bad input, on the real tree ----

@pytest.mark.parametrize("args, needles", [
    (["repro", "riscv/copy_usr:n=3"], ["unknown routine 'riscv/copy_usr'", "riscv/copy_user"]),
    (["sweep", "riscv/nope*"], ["unknown routine 'riscv/nope*'"]),
    (["sweep", "--profile", "loose"], ["invalid choice: 'loose'"]),
    (["repro", "riscv/copy_user:n=3", "--profile", "strict"], ["invalid choice: 'strict'"]),
    (["repro", "riscv/copy_user:n=zz"], ["not a number"]),
    (["repro", "riscv/copy_user"], ["malformed case spec"]),
    (["repro", "riscv/copy_user:n=10,src_off=3,src_fault=37"], ["src_off=4059"]),
    (["sweep", "--max-len", "1048577"], ["--max-len", "out of range 0..1048576"]),
    (["sweep", "--max-len", "-1"], ["--max-len"]),
    (["sweep", "--max-len", "ten"], ["must be an integer"]),
    (["sweep", "--min-len", "9", "--max-len", "8"], ["--min-len 9 is above --max-len 8"]),
    (["sweep", "--jobs", "0"], ["--jobs"]),
    (["sweep", "--seed", "3"], ["--seed only makes sense with --random"]),
    (["frobnicate"], ["invalid choice: 'frobnicate'"]),
    ([], ["required"]),
    # a width the architecture does not have, asked for, is refused the same way everywhere
    (["sweep", "arm/copy_to_user", "--xlen", "64"], ["--xlen 64: arm routines are 32-bit only"]),
    (["sweep", "arm64/copy_to_user", "--xlen", "32"], ["--xlen 32: arm64 routines are 64-bit only"]),
    (["repro", "arm/copy_to_user:n=1,src_off=0,dst_off=0", "--xlen", "64"], ["arm routines are 32-bit only"]),
    (["check", "tests/fixtures/kernel/arch/arm/uaccess_domains.S", "--symbol", "__clear_user", "--xlen", "64"],
     ["--xlen 64: arm routines are 32-bit only"]),
    # --isa sets the width, but it is --isa that is wrong for ARM, and so says the error
    (["sweep", "arm/copy_from_user", "--isa", "rv64gcv"], ["--isa/--vlen name RISC-V extensions"]),
    (["repro", "arm/copy_from_user:n=1,src_off=0,dst_off=0", "--isa", "rv64gc"], ["name RISC-V extensions"]),
    (["check", "tests/fixtures/kernel/arch/arm/uaccess_domains.S", "--symbol", "__clear_user", "--isa", "rv64gcv"],
     ["--isa/--vlen name RISC-V extensions"]),
    (["check", "tests/fixtures/kernel/arch/arm/uaccess_domains.S", "--symbol", "__clear_user", "--vlen", "256"],
     ["--vlen 256 is the vector length of an --isa with V"]),  # alone, it was ignored
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], needles: list[str]) -> None:
    _assert_clean_failure(run_cli(*args), *needles)


# ---- --json: exit 2 is one JSON object on stdout too (cli.main) ----

# One bad input per command that takes --json; a new such command must be added here.
JSON_BAD_INPUT = {
    "list": (["list", "--json", "--bogus"], "unrecognized arguments: --bogus"),
    "sweep": (["sweep", "riscv/nope", "--json"], "unknown routine 'riscv/nope'"),
    "check": (["check", "no/such/file.S", "--symbol", "x", "--json"], "no such file"),
    "audit": (["audit", "riscv/nope", "--json"], "unknown routine 'riscv/nope'"),
    "bench": (["bench", "riscv/copy_user", "--json", "--sizes", "0"], "--sizes"),
    "cov": (["cov", "riscv/copy_user", "--json", "-D", "X"], "-D: for a FILE.S target only"),
    "repro": (["repro", "riscv/copy_user:n=zz", "--json"], "not a number"),
    "fuzz": (["fuzz", "riscv/nope", "--json"], "unknown routine 'riscv/nope'"),
    "replay": (["replay", "no/such/dir", "--json"], "not a directory"),
    "history": (["history", "no/such/repo", "--file", "a.S", "--symbol", "x", "--json"], "no such directory"),
    "kernel": (["kernel", "sweep", "--json", "--replace", "nothing"], "expected PATH=FILE"),
    "confirm": (["confirm", "riscv/copy_user:n=1,dst_fault=0", "--json"], "is not FILE.S:SYMBOL"),
}


def test_every_json_command_is_listed() -> None:
    from copyfuzz.cli import build_parser, json_commands

    assert json_commands(build_parser()) == set(JSON_BAD_INPUT)


def test_a_start_builds_its_own_commands_options_as_the_full_parser_does() -> None:
    """main() builds the parser for the command on the line only (build_parser(command)):
    that command's options, defaults and help are the full parser's; the others are listed."""
    from copyfuzz.cli import build_parser

    def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(action.choices)

    def shape(parser: argparse.ArgumentParser) -> list[tuple[object, ...]]:
        rows: list[tuple[object, ...]] = [(tuple(a.option_strings), a.dest, a.default, a.help, a.nargs)
                                          for a in parser._actions]
        for name, inner in (commands(parser) if parser._subparsers else {}).items():
            rows += [(name, *row) for row in shape(inner)]
        return rows

    full = commands(build_parser())
    for name in full:
        one = commands(build_parser(name))
        assert list(one) == list(full)
        assert shape(one[name]) == shape(full[name]), name
        assert len(shape(full[name])) > 1, name  # more than -h
        assert all(len(shape(one[other])) == 1 for other in one if other != name), name


@pytest.mark.parametrize("command", sorted(JSON_BAD_INPUT))
def test_json_bad_input_prints_one_error_object(command: str) -> None:
    args, needle = JSON_BAD_INPUT[command]
    proc = run_cli(*args)
    _assert_clean_failure(proc, needle)
    out = json.loads(proc.stdout)  # one object, nothing else
    assert set(out) == {"error", "details"} and needle in out["error"]


def test_without_json_bad_input_prints_nothing_on_stdout() -> None:
    proc = run_cli("sweep", "riscv/nope")
    _assert_clean_failure(proc, "unknown routine")
    assert proc.stdout == ""


def test_a_missing_cross_compiler_names_make_deps(tmp_path: Path) -> None:
    """The default toolchain not installed (not on PATH): a package to install."""
    (tmp_path / "make").symlink_to(shutil.which("make") or "/usr/bin/make")
    proc = run_cli("sweep", "--max-len", "1", env={"PATH": str(tmp_path)})
    _assert_clean_failure(proc, "-linux-gnu", "-gcc' not found: run 'make deps' to install it")


def test_a_cross_compiler_the_user_named_is_theirs_to_fix() -> None:
    proc = run_cli("sweep", "--max-len", "1", env={"CROSS_COMPILE": "no-such-cross-"})
    _assert_clean_failure(proc, "no-such-cross-gcc", "(from CROSS_COMPILE='no-such-cross-'): set CROSS_COMPILE")
    assert "make deps" not in proc.stderr


def test_a_qemu_the_user_named_is_theirs_to_fix(fake_tree: tuple[Path, dict[str, str]]) -> None:
    _, env = fake_tree
    proc = run_cli("repro", "riscv/buggy:n=3", env={**env, "QEMU": "no-such-qemu-riscv64"})
    _assert_clean_failure(proc, "no-such-qemu-riscv64", "(from QEMU='no-such-qemu-riscv64'): set QEMU")
    assert "make deps" not in proc.stderr


def test_bad_metadata_is_named(fake_tree: tuple[Path, dict[str, str]]) -> None:
    root, env = fake_tree
    _routine(root, "riscv/broken.S", "symbol=f", "kind=strcpy")
    _assert_clean_failure(run_cli("list", env=env), "arch/riscv/broken.S", "kind='strcpy'")


def test_build_failure_shows_make_output(fake_tree: tuple[Path, dict[str, str]]) -> None:
    root, env = fake_tree
    (root / "Makefile").write_text("$(O)/riscv64/%.elf:\n\t@echo 'copy.S:12: Error: unknown opcode' >&2; exit 1\n")
    proc = run_cli("sweep", "--no-audit", "riscv/buggy", env=env)
    assert proc.returncode == 2
    assert "build failed" in proc.stderr and "copy.S:12: Error: unknown opcode" in proc.stderr
    assert "Traceback" not in proc.stderr


# ---- list ----

def test_list_json(fake_tree: tuple[Path, dict[str, str]]) -> None:
    _, env = fake_tree
    proc = run_cli("list", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    items = json.loads(proc.stdout)
    assert [i["name"] for i in items] == [
        "riscv/buggy", "riscv/clean_copy", "riscv/mutants/caught", "riscv/mutants/clean-escapes"]
    assert items[1]["profile"] == "exact" and items[1]["about"] == "never wrong"
    assert items[2]["mutant"] is True and items[2]["expect"] == ["wrong-data"]
    assert "expect" not in items[0]


def test_list_table(fake_tree: tuple[Path, dict[str, str]]) -> None:
    _, env = fake_tree
    proc = run_cli("list", env=env)
    assert proc.returncode == 0
    assert "riscv/mutants/caught" in proc.stdout and "expect wrong-data" in proc.stdout


# ---- sweep (fake executor) ----

def test_sweep_clean_routine_exits_0(fake_tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = fake_tree
    proc = run_cli("sweep", "--no-audit", "riscv/clean_copy", "--findings", str(tmp_path / "f"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "clean" in proc.stdout
    assert not (tmp_path / "f").exists()


def test_sweep_findings_json_and_files(fake_tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = fake_tree
    findings = tmp_path / "found"
    proc = run_cli("sweep", "--no-audit", "--json", "--jobs", "3", "--findings", str(findings), env=env)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    assert report["profile"] is None and report["max_len"] == 256
    by = {r["name"]: r for r in report["routines"]}
    assert set(by) == {"riscv/buggy", "riscv/clean_copy"}  # no mutants by default
    buggy = by["riscv/buggy"]
    assert buggy["profile"] == "linux" and buggy["cases"] == 100
    assert buggy["findings"] == {"wrong-data": 22}
    assert buggy["notes"] == {"imprecise": 9}  # not an error under linux
    assert buggy["reproducers"]["wrong-data"] == "riscv/buggy:n=3,src_off=3,dst_off=3"
    assert by["riscv/clean_copy"]["findings"] == {}
    lines = [json.loads(x) for x in (findings / "riscv__buggy.jsonl").read_text().splitlines()]
    assert {x["class"] for x in lines} == {"wrong-data", "imprecise"}
    last = {x["class"]: x for x in lines}
    assert last["wrong-data"]["spec"] == "riscv/buggy:n=3,src_off=3,dst_off=3"
    assert last["imprecise"]["error"] is False


def test_sweep_profile_override(fake_tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = fake_tree
    proc = run_cli("sweep", "--no-audit", "riscv/b*", "--json", "--profile", "exact", "--findings", str(tmp_path),
                   env=env)
    report = json.loads(proc.stdout)
    assert report["profile"] == "exact"
    assert report["routines"][0]["findings"] == {"wrong-data": 22, "imprecise": 9}


def test_sweep_mutants(fake_tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = fake_tree
    args = ["sweep", "--no-audit", "riscv/clean_copy", "--mutants", "--findings", str(tmp_path), "--jobs", "2"]
    proc = run_cli(*args, "--json", env=env)
    by = {r["name"]: r for r in json.loads(proc.stdout)["routines"]}
    caught = by["riscv/mutants/caught"]
    assert caught["mutant"] is True and caught["caught"] is True and caught["expect"] == ["wrong-data"]
    assert caught["cases_until_caught"] == 4
    assert by["riscv/mutants/clean-escapes"]["caught"] is False
    assert proc.returncode == 1  # one mutant escaped
    text = run_cli(*args, env=env)
    assert "ESCAPED" in text.stdout and "caught" in text.stdout
    assert "riscv/mutants/caught:n=3,src_off=3,dst_off=3" in text.stdout
    # Only caught mutants and clean routines: exit 0.
    ok = run_cli("sweep", "--no-audit", "riscv/clean_copy", "riscv/mutants/caught", "--findings", str(tmp_path),
                 env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr


def test_sweep_executor_crash_is_exit_2(fake_tree: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    _, env = fake_tree
    proc = run_cli("sweep", "--no-audit", "riscv/buggy", "--findings", str(tmp_path),
                   env={**env, "FAKE_SCENARIO": "crash"})
    assert proc.returncode == 2
    assert "exited with status 3" in proc.stderr and "internal error on purpose" in proc.stderr
    assert "Traceback" not in proc.stderr


# ---- repro (fake executor) ----

def test_repro_exit_codes(fake_tree: tuple[Path, dict[str, str]]) -> None:
    _, env = fake_tree
    bad = run_cli("repro", "riscv/buggy:n=3,dst_off=1", env=env)
    assert bad.returncode == 1, bad.stderr
    assert "wrong-data" in bad.stdout
    good = run_cli("repro", "riscv/buggy:n=4", env=env)
    assert good.returncode == 0, good.stderr
    both = run_cli("repro", "riscv/buggy:n=5", "--json", env=env)
    assert both.returncode == 1
    report = json.loads(both.stdout)
    assert report["errors"] == ["wrong-data"] and report["notes"] == ["imprecise"]  # linux
    exact = run_cli("repro", "riscv/buggy:n=16", "--profile", "exact", "--json", env=env)
    assert json.loads(exact.stdout)["errors"] == ["wrong-data", "imprecise"]
    # --max-len and --granule decode a raw input: with a spec they would be ignored, so 2.
    for flag, value in (("--max-len", "3"), ("--granule", "16")):
        raw_only = run_cli("repro", "riscv/buggy:n=5", flag, value, env=env)
        assert raw_only.returncode == 2 and raw_only.stderr.strip() == (
            f"copyfuzz: {flag} is for a raw fuzzer input FILE (decoded as its campaign decoded it); "
            "a case spec says its own n and granule"), raw_only.stderr


def test_root_has_requirements_pinned() -> None:
    lines = (ROOT / "requirements.txt").read_text().split()
    assert lines and all("==" in line for line in lines)


def test_a_caught_ctrl_c_in_execd_code_still_ends_with_130(tmp_path: Path) -> None:
    """A KeyboardInterrupt raised in code run by exec() of a string (a dataclass's methods
    being made, at import) sets CPython's _Py_UnhandledKeyboardInterrupt even when the tool
    catches it, and `python -m` then ends by SIGINT (-2), not 130: seen 1 run in 15 of a
    Ctrl-C early in a Hypothesis campaign. Here the same flag, then a command that
    returns 130, run as `python -m` runs the tool."""
    (tmp_path / "ctrl_c_probe.py").write_text(textwrap.dedent("""
        import runpy
        import copyfuzz.cli
        copyfuzz.cli.main = lambda argv=None: 130  # the tool's answer to a Ctrl-C it caught
        try:  # the last exec() of a string decides the flag: this one, after the imports
            exec("raise KeyboardInterrupt")  # as a dataclass's exec'd __init__ being made
        except KeyboardInterrupt:
            pass
        runpy.run_module("copyfuzz", run_name="__main__")
    """))
    proc = subprocess.run([sys.executable, "-m", "ctrl_c_probe"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}:{TOOL}"})
    assert proc.returncode == 130, (proc.returncode, proc.stderr)


def test_a_ctrl_c_python_would_drop_still_ends_the_tool(tmp_path: Path) -> None:
    """A KeyboardInterrupt raised in a weakref callback (an import lock's clean-up, which
    Ctrl-C hit 1 run in 300 while the tool started) is printed as "Exception ignored" and
    dropped by Python: the tool raises it again in ordinary code, and ends with 130."""
    (tmp_path / "dropped_ctrl_c_probe.py").write_text(textwrap.dedent("""
        import runpy, time, weakref
        import copyfuzz.cli

        class Lock:
            pass

        def callback(_ref):
            raise KeyboardInterrupt  # as the signal handler does, inside the callback

        def main(argv=None):
            try:
                lock = Lock()
                ref = weakref.ref(lock, callback)
                del lock
                time.sleep(5)
                return 0
            except KeyboardInterrupt:  # as cli.main ends on a Ctrl-C
                print("copyfuzz: interrupted", file=__import__("sys").stderr)
                return 130

        copyfuzz.cli.main = main
        runpy.run_module("copyfuzz", run_name="__main__")
    """))
    proc = subprocess.run([sys.executable, "-m", "dropped_ctrl_c_probe"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": f"{tmp_path}:{TOOL}"})
    assert proc.returncode == 130 and proc.stderr == "copyfuzz: interrupted\n", (proc.returncode, proc.stderr)


def test_ctrl_c_while_the_tool_starts_is_no_traceback() -> None:
    """SIGINT during the launcher, the interpreter's start, the imports or the parser's
    set-up (the first tenths of a second) ends the tool with 130 and one line, as it does
    later, or goes unseen while Python starts (the launcher holds it off: `python -m`
    alone prints a traceback of its own when Ctrl-C hits its import of runpy); -2 is the
    launcher's shell ended by it."""
    for i in range(10):
        proc = subprocess.Popen([str(ROOT / "copyfuzz"), "list"], cwd=ROOT, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.03 + 0.03 * i)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert "Traceback" not in err and proc.returncode in (130, -signal.SIGINT, 0), (i, proc.returncode, err)


def test_an_error_raised_while_handling_ctrl_c_is_an_interrupt() -> None:
    """Python 3.11 wraps a KeyboardInterrupt raised in a class's __set_name__ (an import
    that Ctrl-C hit) in a RuntimeError: it is still Ctrl-C (exit 130), anything else not."""
    from copyfuzz.errors import interrupted

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as k:
            raise RuntimeError("Error calling __set_name__") from k
    except RuntimeError as e:
        assert interrupted(e)
    assert not interrupted(RuntimeError("a bug")) and not interrupted(None)


@pytest.mark.e2e
def test_a_json_check_loads_neither_rich_nor_the_kernel_modules(tmp_path: Path) -> None:
    """What every start pays: a `check --json` (the commonest run in CI and in this suite)
    imports no console library (ui.py loads rich on use) and none of the booted-kernel
    modules (only `kernel`, `confirm` and `check --confirm` need them)."""
    fixture = ROOT / "tests/fixtures/kernel/uaccess_new.S"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "copyfuzz", "check", str(fixture), "--symbol",
                           "__asm_copy_to_user", "--max-len", "2", "--json", "--findings", str(tmp_path)],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(TOOL)}, cwd=ROOT,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "copyfuzz.cmd_sweep" in loaded, sorted(loaded)
    assert not {m for m in loaded if m == "rich" or m.startswith("rich.")}, "rich was loaded"
    heavy = {"copyfuzz.kernel.runner", "copyfuzz.kernel.build", "copyfuzz.kernel.report", "copyfuzz.cmd_confirm"}
    assert not loaded & heavy, loaded & heavy


def test_the_executors_default_jobs_come_from_copyfuzz_jobs(tmp_path: Path) -> None:
    """--jobs not given: COPYFUZZ_JOBS, else one per CPU; --jobs wins; a bad value is one line."""
    def jobs(*args: str, env: str | None) -> int:
        proc = run_cli("sweep", "riscv/copy_user", "--max-len", "1", "--json", "--findings", str(tmp_path), *args,
                       env={"COPYFUZZ_JOBS": env} if env is not None else {})
        assert proc.returncode == 0, proc.stderr
        return int(json.loads(proc.stdout)["jobs"])

    assert jobs(env="3") == 3 and jobs("--jobs", "2", env="3") == 2
    assert jobs(env="") == (os.cpu_count() or 1)
    bad = run_cli("sweep", "riscv/copy_user", "--max-len", "1", "--findings", str(tmp_path), env={"COPYFUZZ_JOBS": "x"})
    assert bad.returncode == 2 and bad.stderr == "copyfuzz: COPYFUZZ_JOBS: must be an integer, not 'x'\n", bad.stderr


def test_an_exported_arch_of_the_kernels_kind_does_not_reach_make() -> None:
    # ARCH=x86_64 and XLEN are a kernel developer's exports; the host-side builds (the
    # oracle library, the plugin) give make the architecture themselves.
    proc = run_cli("repro", "riscv/mutants/fixup-off-by-one:n=1,dst_fault=0", "--json",
                   env={"ARCH": "x86_64", "XLEN": "32"})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["classes"], proc.stdout


def test_an_unbalanced_quote_in_qemu_is_one_json_error() -> None:
    proc = run_cli("repro", "riscv/copy_user:n=5", "--json", env={"QEMU": 'qemu-riscv64 -cpu "x'})
    _assert_clean_failure(proc, 'QEMU=qemu-riscv64 -cpu "x: unbalanced quote')
    assert json.loads(proc.stdout)["error"] == 'QEMU=qemu-riscv64 -cpu "x: unbalanced quote'


@pytest.mark.parametrize("given, why", [("/", "not a regular file"), ("/no/such/file", "no such file")])
def test_repro_routine_says_what_is_wrong_with_the_file(given: str, why: str) -> None:
    proc = run_cli("repro", given, "--routine", "riscv/copy_user")
    _assert_clean_failure(proc, f"{given}: {why} (--routine is for a FILE argument")


@pytest.mark.parametrize("line, extra", [("riscv/copy_user:n=5,src_off=0,dst_off=0", ["--granule", "16"]),
                                         ("riscv/copy_user:n=5,src_off=0,dst_off=0,granule=16", [])])
def test_replay_of_granule_cases_on_a_routine_without_mte_is_one_line(tmp_path: Path, line: str,
                                                                      extra: list[str]) -> None:
    (tmp_path / "a.spec").write_text(line + "\n")
    proc = run_cli("replay", str(tmp_path), *extra)
    _assert_clean_failure(proc, "need MTE (arm64); riscv/copy_user cannot have them")
