"""End to end: a fuzz campaign leaves no process behind, however it is killed, and a CPU
claimed by a driver that is stopped or gone is taken over by the next one.

Every process that runs inputs dies with its parent: the executor with its driver, AFL++'s
persistent children with the forkserver (which afl-fuzz puts in a session of its own, out
of reach of a kill of the campaign's process group), the forkserver with afl-fuzz, a
libFuzzer -jobs worker with the tool (COPYFUZZ_WATCH_PID: its parent is a shell). Needs
clang, AFL++ and QEMU: a missing tool FAILS these tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest
from conftest import ROOT, TOOL
from copyfuzz import envs, paths
from leftovers import Proc, alive, descendants, descendants_by_stat, read_proc, stat_of, wait_gone

pytestmark = pytest.mark.e2e

LIBFUZZER = paths.libfuzzer_target(ROOT)
AFL = paths.afl_target(ROOT)
ELF = paths.executor(ROOT, "riscv/copy_user", 64)


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all", "fuzz-targets"], cwd=ROOT, check=True)


@pytest.fixture
def started() -> Iterator[list[int]]:
    """pids a test saw; whatever of them is left at the end is killed (by pid), so that a
    failing test does not leave its processes to the next."""
    pids: list[int] = []
    yield pids
    for p in alive(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGKILL)


def wait_for(what: Callable[[], object], seconds: float, proc: subprocess.Popen[str] | None = None) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if what():
            return
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"ended first: {proc.stderr.read()[-2000:] if proc.stderr else ''}")
        time.sleep(0.2)
    raise AssertionError(f"not seen within {seconds} s")


def campaign(tmp: Path, engine: str, *extra: str) -> subprocess.Popen[str]:
    """`copyfuzz fuzz riscv/copy_user` in a session of its own, for 60 s."""
    argv = [sys.executable, "-m", "copyfuzz", "fuzz", "riscv/copy_user", "--engine", engine, "--time", "60",
            "--seed", "5", "--corpus", str(tmp / "corpus"), "--findings", str(tmp / "findings"),
            "--regressions", str(tmp / "regressions"), "--json", *extra]
    return subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(TOOL)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def snapshots(tmp: Path) -> list[Path]:
    """The campaign's coverage snapshots: a driver writes its first (cov-PID) once 256
    inputs have gone through its executor, then about once a second (fuzz/driver.c)."""
    return [p for p in (tmp / "findings").glob(".runs/*/coverage/cov-*") if p.suffix != ".tmp"]


def running_cases(proc: subprocess.Popen[str], tmp: Path, drivers: int = 1) -> list[Proc]:
    """Waits until `drivers` executors run under the campaign and as many drivers have
    sent cases through theirs; then everything below it."""
    def executors() -> list[Proc]:
        return [p for p in descendants(proc.pid) if str(ELF) in p.argv and "serve" in p.argv]
    wait_for(lambda: len(executors()) >= drivers, 120, proc)
    # cases go through them (this was a fixed 2 s): the snapshots say so, then a moment more
    wait_for(lambda: len(snapshots(tmp)) >= drivers, 120, proc)
    time.sleep(0.3)
    below = descendants(proc.pid)
    assert any(Path(p.argv[0]).name == "qemu-riscv64" for p in below if p.argv), below
    return below


def assert_all_gone(pids: list[int], seconds: float = 10) -> None:
    left = wait_gone(pids, seconds)
    assert not left, "left behind:\n" + "\n".join(map(str, left))


def test_killing_an_afl_campaigns_process_group_leaves_nothing_behind(tmp_path: Path, started: list[int]) -> None:
    proc = campaign(tmp_path, "afl")
    below = running_cases(proc, tmp_path)
    started += [proc.pid, *(p.pid for p in below)]
    # the forkserver (and so its persistent children) is in a session of afl-fuzz's making
    assert any(os.getsid(p.pid) != proc.pid for p in below if read_proc(p.pid))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert_all_gone([p.pid for p in below])


@pytest.mark.parametrize("engine, jobs", [("libfuzzer", 1), ("libfuzzer", 2), ("afl", 1)])
def test_killing_only_the_tool_leaves_nothing_behind(tmp_path: Path, started: list[int], engine: str,
                                                     jobs: int) -> None:
    """A SIGKILL of the tool alone, which runs no `finally` (cmd_fuzz starts its engines
    through procs.py and gives the drivers COPYFUZZ_WATCH_PID)."""
    proc = campaign(tmp_path, engine, "--jobs", str(jobs))
    below = running_cases(proc, tmp_path, drivers=jobs)
    started += [proc.pid, *(p.pid for p in below)]
    proc.kill()
    proc.communicate(timeout=30)
    assert_all_gone([p.pid for p in below])


# ---- CPU claims ----

def two_cpus() -> set[int]:
    cpus = sorted(os.sched_getaffinity(0))
    assert len(cpus) >= 2, "CPU claims need two CPUs to choose from"
    return set(cpus[:2])


def claim_file(locks: Path, cpu: int) -> Path:
    return locks / f"copyfuzz-cpu{cpu}.lock"


def claimant(locks: Path, cpu: int) -> int | None:
    text = claim_file(locks, cpu).read_text() if claim_file(locks, cpu).exists() else ""
    return int(text) if text.strip() else None


def blocked_driver(tmp: Path, locks: Path, cpus: set[int], started: list[int]) -> subprocess.Popen[bytes]:
    """A libFuzzer driver pinned by its claim (COPYFUZZ_PIN=1 on `cpus`), then waiting on
    an executor that never answers (a shell script: `sleep`)."""
    exe = tmp / "silent.sh"
    exe.write_text("#!/bin/sh\nexec sleep 600\n")
    exe.chmod(0o755)
    (tmp / "input").write_bytes(bytes(10))
    env = envs.driver_env(executor=exe, qemu="", plugin="", findings=tmp, pin=1, lock_dir=locks,
                          timeout_ms=100000)
    proc = subprocess.Popen([str(LIBFUZZER), str(tmp / "input")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    started.append(proc.pid)
    wait_for(lambda: any(p.argv[:2] == ("sleep", "600") for p in descendants(proc.pid)), 60)
    started += [p.pid for p in descendants(proc.pid)]
    return proc


def test_a_cpu_claimed_by_a_stopped_driver_is_taken_over(tmp_path: Path, started: list[int]) -> None:
    locks = tmp_path / "locks"
    locks.mkdir()
    first, second = sorted(two_cpus())
    a = blocked_driver(tmp_path, locks, {first, second}, started)
    b = blocked_driver(tmp_path, locks, {first, second}, started)
    assert (os.sched_getaffinity(a.pid), claimant(locks, first)) == ({first}, a.pid)
    assert (os.sched_getaffinity(b.pid), claimant(locks, second)) == ({second}, b.pid)
    os.kill(a.pid, signal.SIGSTOP)  # holds its flock for ever, and runs nothing
    # stopped once /proc says so: a signal is taken when the process next runs, which on a
    # busy machine can be after c has looked (c would find no CPU free and stay unpinned)
    wait_for(lambda: (st := stat_of(a.pid)) is not None and st[2] in "Tt", 30)
    c = blocked_driver(tmp_path, locks, {first, second}, started)
    assert (os.sched_getaffinity(c.pid), claimant(locks, first)) == ({first}, c.pid)
    # c's claim is now the truth: b's CPU and c's are both taken
    d = blocked_driver(tmp_path, locks, {first, second}, started)
    assert claimant(locks, first) == c.pid and claimant(locks, second) == b.pid, d.pid
    for p in (a, b, c, d):
        p.kill()
        p.wait()


def test_a_cpu_whose_claimant_is_gone_is_taken_over_though_its_lock_is_held(tmp_path: Path,
                                                                              started: list[int]) -> None:
    """A flock kept by another process (a child that inherited it, say) does not keep the
    CPU of a driver that has ended; one naming a live, running process does."""
    locks = tmp_path / "locks"
    locks.mkdir()
    first, second = sorted(two_cpus())
    with open(claim_file(locks, first), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write(f"{os.getpid()}\n")  # a running process: taken
        held.flush()
        a = blocked_driver(tmp_path, locks, {first, second}, started)
        assert os.sched_getaffinity(a.pid) == {second}
        a.kill()
        a.wait()
        gone = subprocess.Popen(["true"])
        gone.wait()
        held.seek(0)
        held.truncate()
        held.write(f"{gone.pid}\n")  # it has ended: free
        held.flush()
        b = blocked_driver(tmp_path, locks, {first, second}, started)
        assert (os.sched_getaffinity(b.pid), claimant(locks, first)) == ({first}, b.pid)
        b.kill()
        b.wait()


def test_a_cpu_whose_claimant_a_tracer_holds_stays_taken(tmp_path: Path, started: list[int]) -> None:
    """A claimant in a tracing stop ("t": strace or gdb holds it at a system call or
    signal, then lets it go on) still owns its CPU: only a job-control stop gives it up."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    locks = tmp_path / "locks"
    locks.mkdir()
    first, second = sorted(two_cpus())
    traced = subprocess.Popen(["sleep", "600"], preexec_fn=lambda: libc.ptrace(0, 0, None, None))
    started.append(traced.pid)
    os.waitpid(traced.pid, os.WUNTRACED)  # its exec's SIGTRAP: a tracing stop until we say
    st = stat_of(traced.pid)
    assert st is not None and st[2] == "t", st
    with open(claim_file(locks, first), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write(f"{traced.pid}\n")
        held.flush()
        a = blocked_driver(tmp_path, locks, {first, second}, started)
        assert (os.sched_getaffinity(a.pid), claimant(locks, first)) == ({second}, traced.pid)
        a.kill()
        a.wait()
    traced.kill()
    traced.wait()


def test_afl_children_neither_hold_the_cpu_claim_nor_outlive_afl_fuzz(tmp_path: Path, started: list[int]) -> None:
    """Without afl-fuzz's binding (AFL_NO_AFFINITY) the forkserver claims a CPU; its
    persistent children, forked from it, must not keep that claim alive."""
    locks = tmp_path / "locks"
    locks.mkdir()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "seed").write_bytes(bytes(10))
    (tmp_path / "f").mkdir()
    env = {**envs.driver_env(executor=ELF, plugin=paths.plugin(ROOT), kind="copy", profile="exact",
                             findings=tmp_path / "f", pin=1, lock_dir=locks),
           "AFL_NO_AFFINITY": "1", "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_QUIET": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1"}
    cpus = two_cpus()
    afl = subprocess.Popen(["afl-fuzz", "-i", str(tmp_path / "in"), "-o", str(tmp_path / "out"), "-V", "60",
                            "-t", "10000", "--", str(AFL)], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, preexec_fn=lambda: os.sched_setaffinity(0, cpus))
    started.append(afl.pid)

    def targets() -> list[Proc]:
        return [p for p in descendants(afl.pid) if p.argv[:1] == (str(AFL),)]
    wait_for(lambda: len(targets()) >= 2 and any(str(ELF) in p.argv for p in descendants(afl.pid)), 120)
    below = descendants(afl.pid)
    started += [p.pid for p in below]
    (forkserver,) = [p for p in targets() if p.ppid == afl.pid]
    children = [p for p in targets() if p.ppid == forkserver.pid]
    assert children

    def claims(pid: int) -> list[str]:
        fds = Path(f"/proc/{pid}/fd")
        return [link for fd in fds.iterdir() if (link := os.readlink(fd)).startswith(str(locks))]
    assert len(claims(forkserver.pid)) == 1 and claimant(locks, min(cpus)) == forkserver.pid
    assert [claims(c.pid) for c in children] == [[] for _ in children]
    afl.kill()  # afl-fuzz alone: the forkserver and its children go with it
    afl.wait()
    assert_all_gone([p.pid for p in below])


# Two pinned workers on every CPU of this 2-CPU VM starve the kernel's own work for up to
# two minutes (dmesg: workqueue lockup): the watched `sleep` cannot even exit, and the
# workers ran to -max_total_time, alone in CI too (docs/perf.md). So the workers share one
# CPU (a one-CPU mask is left as it is) and the other stays free, as fuzz/README.md advises.
@pytest.mark.alone
def test_drivers_stop_when_the_process_they_work_for_ends(tmp_path: Path, started: list[int]) -> None:
    """COPYFUZZ_WATCH_PID: libFuzzer's -jobs workers are children of a shell, which no
    parent-death signal reaches; they stop within seconds of the watched process."""
    tool = subprocess.Popen(["sleep", "600"])
    started.append(tool.pid)
    (tmp_path / "corpus").mkdir()
    env = envs.driver_env(executor=ELF, plugin=paths.plugin(ROOT), kind="copy", profile="exact",
                          findings=tmp_path, watch_pid=tool.pid)
    lf = subprocess.Popen([str(LIBFUZZER), "-jobs=2", "-workers=2", "-max_total_time=120",
                           str(tmp_path / "corpus")], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, start_new_session=True,
                          preexec_fn=lambda: os.sched_setaffinity(0, {min(os.sched_getaffinity(0))}))
    started.append(lf.pid)
    # both workers fuzzing: each has logged its first status line, after its executor ran
    # the first input. The wait reads only the logs: scanning /proc in a loop, beside another
    # test's builds on a 2-vCPU VM, met processes whose entries could not be read while the
    # two pinned workers ran, and the scan then waited until -max_total_time (docs/perf.md)
    logs_of = [tmp_path / "fuzz-0.log", tmp_path / "fuzz-1.log"]
    wait_for(lambda: all(log.is_file() and "INITED" in log.read_text(errors="replace") for log in logs_of), 120)
    # one scan, from stat alone (qemu-user names its process after the guest executable)
    below = descendants_by_stat(lf.pid)
    assert sum(name in ("qemu-riscv64", ELF.name[:15]) for _, name in below) >= 2, below
    started += [pid for pid, _ in below]
    tool.kill()
    tool.wait()
    assert_all_gone([pid for pid, _ in below] + [lf.pid], 15)
    assert lf.wait(timeout=30) == 0
    for log in logs_of:  # each worker stopped for that reason, not at -max_total_time
        text = log.read_text(errors="replace")
        assert "the process it works for (COPYFUZZ_WATCH_PID) has ended" in text, f"{log.name}:\n{text[-3000:]}"
