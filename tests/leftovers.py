"""Processes a test run left behind: what conftest.py's end-of-session check and the
process hygiene tests look for.

A process is the session's when it carries the session's marker in its environment
(conftest.py sets MARKER in os.environ, so every process a test starts inherits it, even
one that outlives its parent and is adopted by init), or when it is one of the fuzzing
processes (qemu-riscv*, afl-fuzz, the fuzz targets), carries no other session's marker
and its command line names one of the session's directories (for those started with an
environment of their own), or when it is a child of the pytest process. Zombies are
dead: they do not count.

conftest.py calls finish_session at the end of every session: `make check` fails when a
test left something running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARKER = "COPYFUZZ_TEST_SESSION"
OWNER = "COPYFUZZ_TEST_SESSION_OWNER"  # the pid that set MARKER (conftest.py)
FUZZING = ("qemu-riscv64", "qemu-riscv32", "afl-fuzz", "copyfuzz_fuzzer", "copyfuzz_afl_fuzzer")


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    state: str  # as /proc/PID/stat says: R, S, D, T, t, Z, ...
    argv: tuple[str, ...]
    environ: dict[str, str] = field(repr=False)

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.state}, parent {self.ppid}): {' '.join(self.argv)[:300]}"

    @property
    def fuzzing(self) -> bool:
        """qemu, afl-fuzz or a fuzz target, by any of its words (a bundled qemu runs as
        `ld.so ... qemu-riscv64 ...`; a ClusterFuzzLite target is <routine>_fuzzer)."""
        return any(Path(a).name in FUZZING or Path(a).name.endswith("_fuzzer") for a in self.argv)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def read_proc(pid: int) -> Proc | None:
    """One process as /proc shows it now (None: gone, or not readable)."""
    base = Path(f"/proc/{pid}")
    stat = _read(base / "stat").decode(errors="replace")
    if not stat:
        return None
    rest = stat[stat.rfind(")") + 2:].split()  # the name in (...) may hold spaces
    argv = tuple(a.decode(errors="replace") for a in _read(base / "cmdline").split(b"\0") if a)
    environ = {}
    for item in _read(base / "environ").split(b"\0"):
        key, eq, value = item.decode(errors="replace").partition("=")
        if eq:
            environ[key] = value
    return Proc(pid, int(rest[1]), rest[0], argv, environ)


def processes() -> list[Proc]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (p := read_proc(int(entry))) is not None:
            out.append(p)
    return out


def descendants(pid: int) -> list[Proc]:
    """Every process below pid (by parent links, as they are now), read whole. The tree
    comes from stat alone (descendants_by_stat): only the processes below pid are read
    whole, never another test's busy fuzzers (see stat_of)."""
    return [p for child, _ in descendants_by_stat(pid) if (p := read_proc(child)) is not None]


def stat_of(pid: int) -> tuple[str, int, str] | None:
    """(name, parent, state) from /proc/PID/stat alone (None: gone). Reading a process's
    cmdline or environ waits for its memory map lock, which a busy fuzzing process
    (libFuzzer mapping and unmapping every input) can keep from a reader for as long as
    it runs; stat does not."""
    stat = _read(Path(f"/proc/{pid}/stat")).decode(errors="replace")
    if not stat:
        return None
    rest = stat[stat.rfind(")") + 2:].split()
    return stat[stat.find("(") + 1:stat.rfind(")")], int(rest[1]), rest[0]


def descendants_by_stat(pid: int) -> list[tuple[int, str]]:
    """(pid, name) of every process below pid, read from stat only (see stat_of)."""
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := stat_of(int(entry))) is not None:
            children.setdefault(st[1], []).append((int(entry), st[0]))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def alive(pids: list[int]) -> list[Proc]:
    """Those of pids that still run or are stopped (not gone, not zombies); only those
    are read whole."""
    running = [pid for pid in pids if (st := stat_of(pid)) is not None and st[2] not in ("Z", "X")]
    return [p for pid in running if (p := read_proc(pid)) is not None and p.state not in ("Z", "X")]


def wait_gone(pids: list[int], seconds: float) -> list[Proc]:
    """Polls until none of pids is alive, at most `seconds`; those still alive."""
    end = time.monotonic() + seconds
    while (left := alive(pids)) and time.monotonic() < end:
        time.sleep(0.1)
    return left


def session_processes(marker: str, dirs: list[str], parent: int) -> list[Proc]:
    """The processes of the session marked `marker` still alive or stopped, but `parent`
    (the pytest process) itself: see the module's docstring."""
    out = []
    for p in processes():
        if p.pid in (parent, os.getpid()) or p.state in ("Z", "X") or _is_zygote(p, parent):
            continue
        theirs = p.environ.get(MARKER, marker) != marker  # another session's (one running beside)
        ours = (p.environ.get(MARKER) == marker or p.ppid == parent
                or (p.fuzzing and not theirs and any(d in arg for arg in p.argv for d in dirs)))
        if ours:
            out.append(p)
    return out


def _is_zygote(p: Proc, parent: int) -> bool:
    """The session's own zygote (tests/zygote.py, stopped before the session's end): a
    child of pytest running that file. The runs it forks are its children, and count."""
    return p.ppid == parent and len(p.argv) > 1 and p.argv[1] == ZYGOTE


ZYGOTE = str(Path(__file__).with_name("zygote.py"))


def wait_for_session_end(marker: str, dirs: list[str], parent: int, grace_s: float) -> list[Proc]:
    """session_processes after at most grace_s for them to end; [] as soon as none are left."""
    end = time.monotonic() + grace_s
    while (left := session_processes(marker, dirs, parent)) and time.monotonic() < end:
        time.sleep(0.2)
    return left


GRACE = "COPYFUZZ_TEST_LEFTOVER_GRACE_S"


def grace_s() -> float:
    from copyfuzz import envs  # conftest.py put tool/ on sys.path

    return float(envs.value(GRACE) or 0)  # its default is in fuzz/envs.def


def finish_session(session: Any, marker: str, root: Path) -> None:
    """pytest_sessionfinish: the session fails (exit 1, naming them) if any of its
    processes is still there after grace_s(); they are killed then, by pid."""
    dirs = [f"{root}/"]
    factory = getattr(session.config, "_tmp_path_factory", None)
    basetemp = getattr(factory, "_basetemp", None)  # only if the session made one
    if basetemp is not None:
        dirs.append(f"{basetemp}/")
    left = wait_for_session_end(marker, dirs, os.getpid(), grace_s())
    if not left:
        return
    lines = [f"the test session left {len(left)} process(es) behind (killed now):", *(f"  {p}" for p in left)]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    for line in lines:
        if reporter is not None:
            reporter.write_line(line, red=True)
        else:
            print(line, file=sys.stderr)
    for p in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p.pid, signal.SIGKILL)
    if session.exitstatus == 0:
        session.exitstatus = 1  # pytest.ExitCode.TESTS_FAILED
