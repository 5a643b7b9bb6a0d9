"""procs.py: children that die with the tool, and process groups killed and reaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import TOOL
from copyfuzz import procs
from leftovers import alive, descendants, wait_gone


def killed_parent_leaves(spawn: str, tmp_path: Path, wait_s: float = 5) -> list[int]:
    """A Python process that starts `sleep 600` with SPAWN (an expression), is SIGKILLed:
    the sleeps still alive wait_s later (they are killed before returning)."""
    code = textwrap.dedent(f"""
        import os, signal, subprocess, sys, time
        from copyfuzz import procs
        child = {spawn}
        print(child.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": str(TOOL)})
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    left = [p.pid for p in wait_gone([child], wait_s)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def test_a_child_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    assert killed_parent_leaves('procs.popen(["sleep", "600"])', tmp_path) == []
    assert killed_parent_leaves('subprocess.Popen(["sleep", "600"], preexec_fn=procs.die_with_parent())',
                                tmp_path) == []
    # what procs is for: without it the child lives on (it would be gone in a few ms)
    assert killed_parent_leaves('subprocess.Popen(["sleep", "600"])', tmp_path, wait_s=1) != []


def test_a_child_whose_parent_died_before_the_prctl_kills_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    preexec = procs.die_with_parent()
    monkeypatch.setattr(os, "getppid", lambda: 1)  # the child, a copy of us, sees a new parent
    proc = subprocess.Popen(["sleep", "600"], preexec_fn=preexec)
    assert proc.wait(timeout=30) == -signal.SIGKILL


def sh(script: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return procs.popen(["sh", "-c", script], new_session=True, **kwargs)


def test_kill_group_kills_what_the_child_started_and_reaps_it() -> None:
    proc = sh("sleep 600 & sleep 600 & wait")
    end = time.monotonic() + 10
    while len(below := descendants(proc.pid)) < 2 and time.monotonic() < end:
        time.sleep(0.05)
    assert len(below) == 2
    assert procs.kill_group(proc) == -signal.SIGKILL
    assert proc.returncode == -signal.SIGKILL  # reaped
    assert wait_gone([p.pid for p in below], 5) == []


def test_kill_group_reaches_the_group_after_its_leader_ended(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    proc = sh(f"sleep 600 & echo $! > {pidfile}")
    assert proc.wait(timeout=30) == 0
    orphan = int(pidfile.read_text())
    assert alive([orphan])
    assert procs.kill_group(proc) == 0
    assert wait_gone([orphan], 5) == []


def test_kill_group_of_a_child_in_our_group_kills_only_it() -> None:
    proc = procs.popen(["sleep", "600"])
    assert procs.kill_group(proc) == -signal.SIGKILL
    assert os.getpgid(0) == os.getpgrp()  # (we are still here)


def test_run_kills_the_group_on_timeout(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    with pytest.raises(subprocess.TimeoutExpired):
        procs.run(["sh", "-c", f"sleep 600 & echo $! > {pidfile}; wait"], timeout=1)
    assert wait_gone([int(pidfile.read_text())], 5) == []


def test_run_is_subprocess_run() -> None:
    done = procs.run(["sh", "-c", "cat; echo out; echo err >&2; exit 3"], input="in ", capture_output=True,
                     text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (3, "in out\n", "err\n")
    with pytest.raises(subprocess.CalledProcessError):
        procs.run(["false"], check=True, timeout=30)


def test_stop_asks_first_then_kills() -> None:
    polite = procs.popen([sys.executable, "-c", "import signal, sys, time\n"
                          "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\nprint(flush=True)\ntime.sleep(600)"],
                         new_session=True, stdout=subprocess.PIPE)
    assert polite.stdout is not None and polite.stdout.readline()  # its handler is in place
    assert procs.stop(polite) == 7
    deaf = procs.popen(["sh", "-c", "trap '' TERM; sleep 600 & echo; wait"], new_session=True,
                       stdout=subprocess.PIPE)
    assert deaf.stdout is not None and deaf.stdout.readline()
    below = descendants(deaf.pid)
    assert procs.stop(deaf, grace_s=0.5) == -signal.SIGKILL
    assert wait_gone([p.pid for p in below], 5) == []


def test_popen_keeps_its_policy() -> None:
    with pytest.raises(TypeError, match="preexec_fn"):
        procs.popen(["true"], preexec_fn=lambda: None)
