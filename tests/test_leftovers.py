"""The end-of-session checks (tests/leftovers.py, conftest.py): for processes left behind
(what it counts as the session's, and that a session leaving one fails and names it), and
for the suite's time limit."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from conftest import CHECKOUT_FINDINGS, SESSION, SUITE_LIMIT
from leftovers import GRACE, MARKER, session_processes, wait_for_session_end, wait_gone

ME = os.getpid()


@pytest.fixture
def spawned() -> Iterator[list[int]]:
    """pids this test left on purpose: killed at its end, whatever happens."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_gone(pids, 5)


def orphan(argv: list[str], env: dict[str, str]) -> int:
    """argv started through a shell that exits at once: a process whose parent is not us."""
    out = subprocess.run(["sh", "-c", '"$@" >/dev/null 2>&1 & echo $!', "sh", *argv], env=env, capture_output=True,
                         text=True, check=True)
    return int(out.stdout)


def pids(marker: str, dirs: list[str]) -> set[int]:
    return {p.pid for p in session_processes(marker, dirs, ME)}


def test_a_process_of_ours_is_found_running_stopped_or_orphaned(spawned: list[int]) -> None:
    child = subprocess.Popen(["sleep", "600"])  # our child, with the session's marker
    spawned.append(child.pid)
    lost = orphan(["sleep", "600"], dict(os.environ))  # adopted by init, still marked
    spawned.append(lost)
    assert {child.pid, lost} <= pids(SESSION, [])
    os.kill(lost, signal.SIGSTOP)
    assert lost in pids(SESSION, [])
    assert lost not in pids(uuid.uuid4().hex, [])  # another session's marker


def test_a_fuzzing_process_without_the_marker_is_found_by_its_directories(tmp_path: Path,
                                                                          spawned: list[int]) -> None:
    qemu = tmp_path / "qemu-riscv64"
    qemu.symlink_to("/bin/sleep")
    env = {k: v for k, v in os.environ.items() if k != MARKER}
    lost = orphan([str(qemu), "600"], env)
    spawned.append(lost)
    assert lost in pids(SESSION, [f"{tmp_path}/"])
    assert lost not in pids(SESSION, ["/elsewhere/"])  # someone else's qemu is none of ours
    plain = orphan(["sleep", "600", str(tmp_path)], env)  # not a fuzzing process
    spawned.append(plain)
    assert plain not in pids(SESSION, [f"{tmp_path}/"])
    beside = orphan([str(qemu), "601"], {**env, MARKER: "another-session"})  # a session running beside
    spawned.append(beside)
    assert beside not in pids(SESSION, [f"{tmp_path}/"])


def test_the_dead_do_not_count(spawned: list[int]) -> None:
    child = subprocess.Popen(["true"])
    wait_gone([child.pid], 5)  # a zombie until reaped below
    assert child.pid not in pids(SESSION, [])
    child.wait()


def test_waiting_ends_as_soon_as_nothing_is_left(spawned: list[int]) -> None:
    marker = uuid.uuid4().hex
    assert wait_for_session_end(marker, [], ME, grace_s=60) == []
    child = subprocess.Popen(["sleep", "600"], env={**os.environ, MARKER: marker})
    spawned.append(child.pid)
    (left,) = [p for p in wait_for_session_end(marker, [], ME, grace_s=0.5) if p.pid == child.pid]
    assert left.argv == ("sleep", "600")
    child.kill()
    child.wait()


def run_session(tmp_path: Path, body: str, *opts: str,
                env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """pytest on one test file of BODY, with this conftest as a plugin (and env added)."""
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_it.py").write_text("import subprocess\n\n\ndef test_it():\n" + body)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider", *opts,
                           str(tmp_path / "test_it.py")], cwd=tmp_path, capture_output=True, text=True,
                          env={**session_env(), **(env or {})}, timeout=120)


def session_env() -> dict[str, str]:
    """A new session's environment: not an xdist worker's; 1 s for its processes to end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST_") and k != SUITE_LIMIT}
    return {**env, "PYTHONPATH": str(Path(__file__).parent), GRACE: "1"}


@pytest.mark.parametrize("opts", [(), ("-n", "2")], ids=["one process", "two xdist workers"])
def test_a_session_that_leaves_a_process_fails_and_names_it(tmp_path: Path, opts: tuple[str, ...]) -> None:
    """Under xdist the worker that ran the test has ended by the time the controller
    checks: the process is found by the marker the workers share."""
    marker = str(tmp_path / "pid")
    run = run_session(tmp_path, f"    p = subprocess.Popen(['sleep', '600'])\n"
                                f"    open({marker!r}, 'w').write(str(p.pid))\n", *opts)
    assert run.returncode == 1, run.stdout + run.stderr
    pid = int((tmp_path / "pid").read_text())
    assert f"pid {pid} " in run.stdout and "sleep 600" in run.stdout and "left 1 process" in run.stdout, run.stdout
    assert wait_gone([pid], 5) == []  # and it was killed


def test_a_clean_session_passes_and_a_session_a_test_starts_has_a_marker_of_its_own(tmp_path: Path) -> None:
    seen = tmp_path / "marker"
    run = run_session(tmp_path, "    subprocess.run(['true'], check=True)\n"
                                f"    import os; open({str(seen)!r}, 'w').write(os.environ[{MARKER!r}])\n")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "left" not in run.stdout
    assert seen.read_text() not in ("", SESSION)  # else it would check this session's processes


@pytest.mark.parametrize("limit, status", [("0.5", 1), ("120", 0)])
def test_a_session_over_its_time_limit_fails_and_says_so(tmp_path: Path, limit: str, status: int) -> None:
    """`make check` gives the suite COPYFUZZ_TEST_SUITE_LIMIT_S (conftest.check_suite_time):
    a session that takes longer fails, with its time and the limit in one line."""
    run = run_session(tmp_path, "    import time; time.sleep(1)\n", env={SUITE_LIMIT: limit})
    assert run.returncode == status, run.stdout + run.stderr
    assert ("over its limit of 0.5 s" in run.stdout) == (status == 1), run.stdout
    assert "Traceback" not in run.stdout + run.stderr


def test_a_session_that_writes_into_the_checkouts_findings_fails_and_names_it(tmp_path: Path) -> None:
    """conftest.check_findings_untouched: a command a test runs without --findings writes
    into the checkout's findings/, among the user's own; the session fails naming it."""
    name = f"written-by-a-test-{uuid.uuid4().hex}.jsonl"
    target = CHECKOUT_FINDINGS / name
    body = (f"    import pathlib; p = pathlib.Path({str(target)!r})\n"
            "    p.parent.mkdir(exist_ok=True); p.write_text('{}')\n")
    try:
        run = run_session(tmp_path, body)
    finally:
        target.unlink(missing_ok=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "tests wrote into" in run.stdout and name in run.stdout, run.stdout
    clean = run_session(tmp_path, "    pass\n")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    # A test whose purpose is to write there (a docs command run as written) says so.
    accepted = ("    import conftest; before = conftest.findings_state()\n" + body
                + "    conftest.accept_findings_written(before)\n")
    try:
        run = run_session(tmp_path, accepted)
    finally:
        target.unlink(missing_ok=True)
    assert run.returncode == 0, run.stdout + run.stderr
