"""`python -m copyfuzz` for the tests without an interpreter start each time: a zygote.

The suite starts the tool some 700 times; each start spent about a quarter of a second
of CPU starting Python and importing the tool, a fifth of the suite's own Python
(docs/perf.md, "What the test suite costs"). A zygote is one Python per pytest worker
that has imported the tool once and forks a child for each run: the child takes the
run's standard output and error, environment and working directory, then runs
`copyfuzz/__main__.py` as `python -m` runs it and exits as that process would (its
threads joined, its atexit handlers run, its streams flushed, its exit status or signal
is the run's). Each run is still a process of its own, as a user's is: nothing it does
stays in the zygote or in pytest.

A run that ends by SystemExit (every command) then skips the interpreter's teardown of
its modules, as os._exit does: that teardown wrote to most of the heap the child shares
with the zygote, copying each page (copy-on-write), 40-60 ms of a run's 0.1-0.14 s
(docs/perf.md). What only that teardown does is left to the runs through a fresh
interpreter (the docs' commands, the CI scripts, the tests of the start): a message
printed while modules are torn down, and the finalizers of objects still alive then
(`__del__`, an unclosed file's last flush, an unclosed NamedTemporaryFile's removal).
The tool closes what it opens; a run that counted on those would lose output here, which
a test sees, rather than hide anything.

What a child cannot share with a fresh interpreter is what Python decides at its own
start: the hash seed, `sys.flags`, the encoding of the standard streams, and the
interpreter's own signal dispositions (the zygote starts as any `python` does and sets
none of them, but for SIGCHLD, which each child resets). conftest.run_cli starts a fresh
interpreter for a run whose environment changes a PYTHON* variable or the locale, and
when asked (fresh=True), for tests of the start itself.

Protocol, over an AF_UNIX SOCK_SEQPACKET socket (one connection a run): the client sends
one JSON message {"args", "env", "cwd"} with two file descriptors (the run's stdout and
stderr); the zygote answers with the child's pid, and when the child has ended, its
status as subprocess gives it (negative: killed by that signal).
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

MESSAGE_MAX = 1 << 20
# Imported before the first fork: the tool and what its commands import lazily.
WARM = ("copyfuzz.cli", "capstone", "elftools.elf.elffile", "elftools.dwarf.dwarfinfo", "rich.console",
        "rich.table")
# Variables read when Python starts, which a forked child would not honour.
START_VARIABLES = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE")


# ---- the zygote's side ----

def _warm() -> None:
    import importlib
    import pkgutil

    for name in WARM:
        importlib.import_module(name)
    import copyfuzz

    for module in pkgutil.walk_packages(copyfuzz.__path__, "copyfuzz."):
        if module.name != "copyfuzz.__main__":
            importlib.import_module(module.name)


def _serve(listener: socket.socket) -> tuple[socket.socket, dict[str, Any], list[int]] | None:
    """Forks a child for each connection; returns in the child (its request), or None in
    the zygote when its parent closed the zygote's stdin."""
    woken_r, woken_w = os.pipe()
    os.set_blocking(woken_w, False)
    signal.set_wakeup_fd(woken_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    waiting: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener, sys.stdin, woken_r], [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
            return None
        if woken_r in ready:
            os.read(woken_r, 4096)
        while waiting:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = waiting.pop(pid)  # every child is a run's
            with conn, contextlib.suppress(OSError):  # the client may have gone (its timeout)
                conn.send(str(os.waitstatus_to_exitcode(status)).encode())
        if listener in ready:
            conn, _ = listener.accept()
            try:
                message, fds, _, _ = socket.recv_fds(conn, MESSAGE_MAX, 2)
            except OSError:
                conn.close()
                continue
            if len(fds) != 2:  # not a client of ours: nothing to run
                for fd in fds:
                    os.close(fd)
                conn.close()
                continue
            pid = os.fork()
            if pid == 0:
                signal.set_wakeup_fd(-1)
                for sig, disposition in _INHERITED.items():  # as a fresh Python has them
                    signal.signal(sig, disposition)
                for fd in (woken_r, woken_w):
                    os.close(fd)
                listener.close()
                for other in waiting.values():
                    other.close()
                return conn, json.loads(message), fds
            for fd in fds:
                os.close(fd)
            with contextlib.suppress(OSError):
                conn.send(str(pid).encode())
            waiting[pid] = conn


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(path))


def _start_and_serve(path: str) -> tuple[socket.socket, dict[str, Any], list[int]] | None:
    _warm()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    gc.freeze()  # the collector leaves what is shared alone: no copy-on-write of the whole heap
    print("ready", flush=True)
    return _serve(listener)


def _become(conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
    """In the child: take the run's streams, environment and directory, then run the tool
    as `python -m copyfuzz ARGS` does (this returns only by SystemExit, which _end ends as
    Python would, or by an exception, which ends the process as it ends that one)."""
    import runpy

    conn.close()
    devnull = os.open(os.devnull, os.O_RDONLY)
    for fd, target in ((devnull, 0), (fds[0], 1), (fds[1], 2)):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = os.getcwd()  # `python -m` puts its working directory first
    sys.argv = ["", *request["args"]]
    runpy.run_module("copyfuzz", run_name="__main__", alter_sys=True)


# Signals that end the zygote (a pytest worker stopped with its process group): it removes
# its socket and directory, then dies of the signal as it would have. One its parent
# ignores (nohup) it ignores too, as a fresh Python would.
_LEAVING = (signal.SIGTERM, signal.SIGHUP)
_INHERITED: dict[int, Any] = {}  # what the zygote started with, for its runs


class _Signalled(BaseException):
    def __init__(self, sig: int) -> None:
        self.sig = sig


def _leave(sig: int, _frame: object) -> None:
    raise _Signalled(sig)


def main() -> None:
    path = sys.argv[1]
    sys.path[0] = os.getcwd()  # as `python -m` has it, not this file's directory
    _INHERITED.update((sig, signal.getsignal(sig)) for sig in (signal.SIGCHLD, *_LEAVING))
    for sig in _LEAVING:
        if _INHERITED[sig] == signal.SIG_DFL:
            signal.signal(sig, _leave)
    zygote = os.getpid()
    try:
        request = _start_and_serve(path)
    except _Signalled as e:
        if os.getpid() == zygote:  # a run's child leaves the zygote's files alone
            for sig in _LEAVING:  # a second signal does not cut the removal short
                signal.signal(sig, signal.SIG_IGN)
            _remove(path)
        signal.signal(e.sig, signal.SIG_DFL)
        os.kill(os.getpid(), e.sig)
        raise
    except BaseException:  # Ctrl-C (KeyboardInterrupt) or a failed start
        if os.getpid() == zygote:
            _remove(path)
        raise
    if request is None:
        _remove(path)
    else:
        try:
            _become(*request)
        except SystemExit as e:
            _end(e.code)


def _end(code: object) -> None:
    """The end of a run that raised SystemExit(code), as Python's own (Py_FinalizeEx):
    the threads joined, the atexit handlers run, the streams flushed (a failed flush of
    stdout said as Python says it, and 120), then the exit, without tearing the modules
    down."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF if -(2**63) <= code < 2**63 else 255  # a C long, or -1
    else:
        try:
            text = f"{code}\n"
        except Exception:  # Python prints an empty line then
            text = "\n"
        _say(text)
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # private: what the interpreter calls
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is None or stream.closed:
            continue  # Python leaves these alone
        try:
            stream.flush()
        except Exception as e:  # Python at its exit: said, and 120 for stdout
            if stream is sys.stdout:
                import traceback

                _say(f"Exception ignored in: {stream!r}\n" + "".join(traceback.format_exception_only(e)))
                status = 120
    os._exit(status)


def _say(text: str) -> None:
    """text on stderr, or on fd 2 where sys.stderr is gone (as Python's exit writes)."""
    try:
        if sys.stderr is not None and not sys.stderr.closed:
            sys.stderr.write(text)
            sys.stderr.flush()
            return
    except Exception:  # then fd 2, as Python does
        pass
    with contextlib.suppress(OSError):
        os.write(2, text.encode(errors="replace"))


# ---- the tests' side ----

class Zygote:
    """One zygote process (started on first use) and the runs it forks."""

    def __init__(self, tool: Path) -> None:
        self.tool = tool
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir = ""
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        return os.path.join(self._dir, "zygote")

    def _ensure(self) -> None:
        """Started with the tests' own environment (and the tool on PYTHONPATH), never a
        run's: a run's environment is its child's alone."""
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return
            env = {**os.environ, "PYTHONPATH": str(self.tool)}
            self._dir = tempfile.mkdtemp(prefix="copyfuzz-zygote-")
            self.proc = subprocess.Popen([sys.executable, __file__, self.path],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                         cwd=self.tool.parent)
            assert self.proc.stdout is not None
            if self.proc.stdout.readline() != b"ready\n":
                raise RuntimeError(f"the test zygote did not start (exit {self.proc.wait()})")

    def run(self, args: list[str], env: dict[str, str], cwd: Path, timeout: float
            ) -> subprocess.CompletedProcess[str]:
        self._ensure()
        argv = [sys.executable, "-m", "copyfuzz", *args]
        output = _Output()
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
                try:
                    conn.connect(self.path)
                    socket.send_fds(conn, [json.dumps({"args": args, "env": env, "cwd": str(cwd)}).encode()],
                                    [output.out_w, output.err_w])
                finally:
                    output.handed_over()
                pid = int(conn.recv(64))
                deadline = time.monotonic() + timeout
                ended = output.read(deadline)
                if ended:
                    conn.settimeout(max(1.0, deadline - time.monotonic()))
                    with contextlib.suppress(TimeoutError):
                        return subprocess.CompletedProcess(argv, int(conn.recv(64)), *output.text())
                _kill(pid)  # as subprocess.run does at its timeout
                output.read(time.monotonic() + 30)
                raise subprocess.TimeoutExpired(argv, timeout, *output.text())
        finally:
            output.close()

    def stop(self) -> None:
        if self.proc is None:
            return
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        _remove(self.path)


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


class _Output:
    """A run's stdout and stderr pipes, read to their end (every writer closed them) as
    communicate() reads them."""

    def __init__(self) -> None:
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        self._open = [self.out_r, self.err_r]
        self._chunks: dict[int, list[bytes]] = {self.out_r: [], self.err_r: []}

    def handed_over(self) -> None:
        os.close(self.out_w)
        os.close(self.err_w)

    def read(self, deadline: float) -> bool:
        """True when both ended before the deadline."""
        while self._open:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select(self._open, [], [], left)
            for fd in ready:
                data = os.read(fd, 65536)
                if data:
                    self._chunks[fd].append(data)
                else:
                    self._open.remove(fd)
                    os.close(fd)
        return True

    def close(self) -> None:
        for fd in self._open:  # a process the run left holds it: what it wrote is dropped
            os.close(fd)
        self._open = []

    def text(self) -> tuple[str, str]:
        return _text(b"".join(self._chunks[self.out_r])), _text(b"".join(self._chunks[self.err_r]))


def _text(data: bytes) -> str:
    """As subprocess's text=True decodes a stream: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


if __name__ == "__main__":
    main()
