"""Child processes that die with the tool, and process groups stopped for good.

A SIGKILL of the tool runs no `finally`: an engine it started (libFuzzer, afl-fuzz) would
go on until its own time limit. So every long-running child is started with
PR_SET_PDEATHSIG(SIGKILL), set between fork and exec:

    proc = procs.popen(argv, cwd=..., env=..., stdout=...)      # as subprocess.Popen
    procs.run(argv, timeout=60, ...)                             # as subprocess.run
    subprocess.Popen(argv, preexec_fn=procs.die_with_parent())   # the same, by hand

What the child starts in turn is the child's business: the fuzz driver makes its own
processes die with their parents, and with COPYFUZZ_WATCH_PID=<the tool's pid> (see
fuzz/envs.def) a driver whose parent is a shell (libFuzzer's -jobs workers) stops when
the tool has ended.

Caveat: the kernel sends the signal when the *thread* that forked the child ends, not
the process. Start children from a thread that lives as long as they should (the main
thread), never from a short-lived worker thread.

kill_group(proc) kills a child started with new_session=True and everything in its
process group, and reaps the child; stop(proc) asks first (SIGTERM, SIGINT...).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import weakref
from typing import Any, Callable, Sequence

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

# Loaded now, in the parent: the child between fork and exec should do as little as it can.
_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl
_prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_prctl.restype = ctypes.c_int

# Children started as leaders of their own process group (new_session=True).
_leaders: weakref.WeakSet[subprocess.Popen[Any]] = weakref.WeakSet()


def die_with_parent(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A preexec_fn that makes the child get `sig` when this process (its forking thread)
    ends. Made in the parent: it knows the parent's pid, so a child whose parent died
    before the prctl took effect kills itself rather than live on unnoticed."""
    parent = os.getpid()

    def preexec() -> None:
        if _prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"prctl(PR_SET_PDEATHSIG): {os.strerror(err)}")
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def popen(argv: Sequence[str | os.PathLike[str]], *, new_session: bool = False,
          **kwargs: Any) -> subprocess.Popen[Any]:
    """subprocess.Popen(argv, **kwargs) for a child that dies with this process. With
    new_session=True it also leads a session and process group of its own (a Ctrl-C on
    the terminal then reaches only the tool, which must stop it), for kill_group."""
    if "preexec_fn" in kwargs or "start_new_session" in kwargs:
        raise TypeError("procs.popen sets preexec_fn and start_new_session itself")
    proc = subprocess.Popen(argv, preexec_fn=die_with_parent(), start_new_session=new_session, **kwargs)
    if new_session:
        _leaders.add(proc)
    return proc


def run(argv: Sequence[str | os.PathLike[str]], *, timeout: float | None = None, check: bool = False,
        input: Any = None, capture_output: bool = False, **kwargs: Any) -> subprocess.CompletedProcess[Any]:
    """subprocess.run for a child that dies with this process. It runs in a process group
    of its own: on a timeout (subprocess.TimeoutExpired, as subprocess.run raises) the whole
    group is killed, what it started too."""
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with popen(argv, new_session=True, **kwargs) as proc:
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except BaseException:  # a timeout, or Ctrl-C: nothing of it stays
            kill_group(proc)
            raise
        code = proc.poll()
        assert code is not None
    if check and code:
        raise subprocess.CalledProcessError(code, proc.args, out, err)
    return subprocess.CompletedProcess(proc.args, code, out, err)


def kill_group(proc: subprocess.Popen[Any]) -> int:
    """SIGKILL to proc's process group if proc leads one (started with new_session=True,
    even if proc itself has ended: the rest of its group may not have), else to proc;
    then reaps proc. Its exit status."""
    try:
        if proc in _leaders:
            os.killpg(proc.pid, signal.SIGKILL)  # a group id stays taken while it has members
        elif proc.poll() is None:
            proc.kill()
    except ProcessLookupError:  # nothing of it is left
        pass
    return proc.wait()


def stop(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace_s: float = 10.0) -> int:
    """Asks proc to end (sig to proc alone: an engine that saves its state on SIGINT or
    SIGTERM stops its own children), waits up to grace_s, then kill_group for whatever
    is left. proc's exit status (the one it chose, if it ended in time)."""
    if proc.poll() is None:
        proc.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    return kill_group(proc)
