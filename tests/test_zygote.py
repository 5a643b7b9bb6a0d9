"""The tests' zygote (tests/zygote.py): a run forked from it is the run a fresh
`python -m copyfuzz` makes, and nothing of one run reaches the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import conftest
import pytest
from conftest import ROOT, TOOL, run_cli
from zygote import Zygote


@pytest.fixture(scope="module")
def zyg() -> Iterator[Zygote]:
    z = Zygote(TOOL)
    yield z
    z.stop()
    assert z.proc is None


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(TOOL), **extra}


@pytest.mark.parametrize("args", [["list", "--json"], ["check", "absent.S", "--symbol", "f"], ["nonsense"],
                                  ["sweep", "riscv/copy_user", "--max-len", "-1", "--json"]])
def test_a_forked_run_is_a_fresh_run(zyg: Zygote, args: list[str]) -> None:
    forked = zyg.run(args, env(), ROOT, 120)
    fresh = run_cli(*args, fresh=True)
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert forked.args[-len(args):] == args


def test_environment_and_directory_are_each_runs_own(zyg: Zygote, tmp_path: Path) -> None:
    misspelt = "COPYFUZZ_" + "JOSB"  # spelt apart: not a name of the registry's (tests/test_envs.py)
    warned = zyg.run(["list", "--json"], env(**{misspelt: "1"}), ROOT, 120)
    assert "did you mean COPYFUZZ_JOBS?" in warned.stderr
    assert misspelt not in zyg.run(["list", "--json"], env(), ROOT, 120).stderr
    (tmp_path / "mine.S").write_text("\t.text\n")
    here = zyg.run(["check", "mine.S", "--symbol", "nowhere"], env(), tmp_path, 120)
    assert here.returncode == 2 and "mine.S" in here.stderr and "no such file" not in here.stderr.lower()
    there = zyg.run(["check", "mine.S", "--symbol", "nowhere"], env(), ROOT, 120)
    assert there.returncode == 2 and there.stderr != here.stderr


def test_a_run_past_its_timeout_is_killed_as_subprocess_kills_it(zyg: Zygote, tmp_path: Path) -> None:
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        zyg.run(["fuzz", "riscv/copy_user", "--engine", "hypothesis", "--time", "60", "--findings",
                 str(tmp_path / "f"), "--corpus", str(tmp_path / "c"), "--regressions", str(tmp_path / "r")],
                env(), ROOT, 3)
    assert time.monotonic() - started < 40
    after = zyg.run(["list", "--json"], env(), ROOT, 120)  # the zygote serves on
    assert after.returncode == 0


def test_concurrent_runs_keep_their_own_output(zyg: Zygote) -> None:
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    def one(i: int) -> None:
        results[i] = zyg.run(["check", f"absent-{i}.S", "--symbol", "f"], env(), ROOT, 120)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, proc in results.items():
        assert proc.returncode == 2 and f"absent-{i}.S" in proc.stderr
        assert all(f"absent-{j}.S" not in proc.stderr for j in results if j != i)
    assert len(results) == 6


def test_what_python_reads_at_its_start_takes_a_fresh_interpreter() -> None:
    assert not conftest._changes_the_start({})
    assert not conftest._changes_the_start({"COPYFUZZ_JOBS": "2", "PYTHONPATH": "/elsewhere"})
    assert conftest._changes_the_start({"PYTHONHASHSEED": "1"})
    assert conftest._changes_the_start({"LC_ALL": "C" if os.environ.get("LC_ALL") != "C" else "C.UTF-8"})
    same = {k: v for k, v in os.environ.items() if k.startswith("PYTHON")}
    assert not conftest._changes_the_start(same)  # the value it has already


# A stand-in tool: a non-daemon thread still printing, an atexit handler, output left in
# the buffer, then sys.exit with the argument (none, a number or a message).
_ENDING_MAIN = """\
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran", flush=True))
threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
sys.stdout.write("buffered ")
how = sys.argv[1]
sys.exit(None if how == "none" else int(how) if how.lstrip("-").isdigit() else how)
"""


def stand_in_tool(tool: Path, main: str) -> Path:
    """A `copyfuzz` package under tool whose __main__ is main (and a cli module, which the
    zygote imports first)."""
    (tool / "copyfuzz").mkdir(parents=True)
    for name, text in (("__init__.py", ""), ("cli.py", ""), ("__main__.py", main)):
        (tool / "copyfuzz" / name).write_text(text)
    return tool


@pytest.fixture(scope="module")
def ending_tool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Zygote]]:
    tool = stand_in_tool(tmp_path_factory.mktemp("ending"), _ENDING_MAIN)
    z = Zygote(tool)
    yield tool, z
    z.stop()


@pytest.mark.parametrize("how", ["none", "3", "-1", "a message"])
def test_a_forked_run_ends_as_python_ends_it(ending_tool: tuple[Path, Zygote], how: str) -> None:
    """The child skips the interpreter's teardown (zygote._end), not what comes before it:
    threads joined, atexit handlers run, buffers flushed, the status and message Python
    gives for each kind of exit code."""
    tool, z = ending_tool
    run_env = {**os.environ, "PYTHONPATH": str(tool)}
    forked = z.run([how], run_env, tool, 60)
    fresh = subprocess.run([sys.executable, "-m", "copyfuzz", how], env=run_env, cwd=tool, capture_output=True,
                           text=True, timeout=60)
    assert fresh.stdout == "buffered thread done\natexit ran\n"
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


@pytest.mark.parametrize("how", ["2**64", "'closed'", "'broken'"])
def test_a_forked_run_ends_as_python_ends_it_at_the_edges(tmp_path: Path, how: str) -> None:
    """A code no C long holds (255), a closed stdout (left alone: 0), and a stdout whose
    last flush fails (said on stderr, 120 whatever the code): as a fresh Python."""
    main = {"2**64": "sys.exit(2**64)",
            "'closed'": "sys.stdout.close(); sys.exit(0)",
            # a buffered stdout of its own (whatever PYTHONUNBUFFERED says), its fd closed under it
            "'broken'": "sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(os.dup(1), 'w'))); "
                        "sys.stdout.write('x'); os.close(sys.stdout.fileno()); sys.exit(3)"}[how]
    tool = stand_in_tool(tmp_path / "tool", f"import io, os, sys\n{main}\n")
    run_env = {**os.environ, "PYTHONPATH": str(tool)}
    z = Zygote(tool)
    try:
        forked = z.run([], run_env, tool, 60)
    finally:
        z.stop()
    fresh = subprocess.run([sys.executable, "-m", "copyfuzz"], env=run_env, cwd=tool, capture_output=True,
                           text=True, timeout=60)
    assert fresh.returncode == {"2**64": 255, "'closed'": 0, "'broken'": 120}[how], fresh
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_zygote_ended_by_a_signal_leaves_no_files_and_its_runs_fresh_dispositions(
        tmp_path: Path, sig: signal.Signals) -> None:
    """A worker stopped with its process group: the zygote removes its socket and directory,
    then dies of the signal (unless this process ignores it, as under nohup: then so does the
    zygote). Its runs have the signal dispositions a fresh Python has."""
    main = ("import signal\n"
            "print([signal.getsignal(s) == signal.SIG_DFL for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)])\n")
    tool = stand_in_tool(tmp_path / "tool", main)
    run_env = {**os.environ, "PYTHONPATH": str(tool)}
    z = Zygote(tool)
    try:
        forked = z.run([], run_env, tool, 60)
        assert z.proc is not None and os.path.exists(z.path)
        z.proc.send_signal(sig)
        if signal.getsignal(sig) == signal.SIG_IGN:
            time.sleep(0.5)
            assert z.proc.poll() is None and os.path.exists(z.path)
        else:
            assert z.proc.wait(30) == -sig
            assert not os.path.exists(os.path.dirname(z.path))
    finally:
        z.stop()
    fresh = subprocess.run([sys.executable, "-m", "copyfuzz"], env=run_env, cwd=tool, capture_output=True,
                           text=True, timeout=60)
    assert fresh.returncode == 0 and fresh.stdout.startswith("["), fresh
    assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout)
