"""Running executors: `info`, a persistent `serve` process, and merged `sweep` streams.

Every read from an executor has a time limit: a process that dies or stops talking is a
CopyfuzzError with its stderr, never a silent hang of the tool.
"""

from __future__ import annotations

import os
import queue
import select
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Iterator

from . import records
from .errors import CopyfuzzError

if TYPE_CHECKING:
    from .plugin import PluginMemory

MAGIC_SIZE = 4
STDERR_KEEP = 16384  # bytes of an executor's stderr kept for messages
# DONE's aux: why a sweep ended before its last case (enum cf_sweep_stop).
STOP_REASONS = dict(enumerate(records.SWEEP_STOPS[1:], start=1))


class ExecutorError(CopyfuzzError):
    """The executor failed or broke its protocol (exit 2, like any run that cannot judge)."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message, exit_code=2, details=details)


def _start(argv: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
            pass_fds=pass_fds,
        )
    except OSError as e:
        raise ExecutorError(f"cannot start {' '.join(argv)}: {e.strerror}") from e


class _StderrTail:
    """Drains a process's stderr in the background (a full pipe would block it)."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        self._buf = bytearray()
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        for chunk in iter(lambda: stream.read(4096), b""):
            self._buf += chunk
            if len(self._buf) > STDERR_KEEP:
                del self._buf[: len(self._buf) - STDERR_KEEP]

    def text(self, wait: float = 1.0) -> str:
        self._thread.join(wait)
        return self._buf.decode(errors="replace").rstrip()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


# ---- info ----


def info(argv: list[str], timeout_s: float = 60.0) -> dict[str, str]:
    """`executor info` as a dict of its key=value lines."""
    try:
        proc = subprocess.run(
            [*argv, "info"], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired as e:
        raise ExecutorError(f"{argv[-1]} info did not answer within {timeout_s:.0f} s") from e
    except OSError as e:
        raise ExecutorError(f"cannot start {' '.join(argv)}: {e.strerror}") from e
    if proc.returncode != 0:
        raise ExecutorError(
            f"{argv[-1]} info exited with status {proc.returncode}",
            proc.stderr.decode(errors="replace").rstrip(),
        )
    out: dict[str, str] = {}
    for line in proc.stdout.decode(errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


# ---- serve ----


class Server:
    """One `executor serve` process: send a case record, get its result record."""

    def __init__(self, argv: list[str], *, timeout_ms: int | None = None, read_timeout_s: float = 60.0,
                 plugin: "PluginMemory | None" = None, bare: bool = False) -> None:
        args = [*(plugin.wrap(argv) if plugin else argv), "serve",
                *(plugin.executor_options() if plugin else []), *(["--bare"] if bare else [])]
        if timeout_ms is not None:
            args += ["--timeout-ms", str(timeout_ms)]
        self.name = argv[-1]
        # Never give up on a case before the executor's own watchdog could have fired.
        self.read_timeout_s = max(read_timeout_s, 2 * (timeout_ms or 0) / 1000 + 30) if timeout_ms else read_timeout_s
        self.proc = _start(args, plugin.pass_fds if plugin else ())
        self._stderr = _StderrTail(self.proc.stderr)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _died(self, what: str) -> ExecutorError:
        _kill(self.proc)
        return ExecutorError(
            f"{self.name} serve {what} (exit status {self.proc.returncode})", self._stderr.text()
        )

    def _read_exact(self, size: int) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + self.read_timeout_s
        buf = bytearray()
        while len(buf) < size:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                _kill(self.proc)
                raise ExecutorError(
                    f"{self.name} serve gave no result within {self.read_timeout_s:.0f} s (killed it)",
                    self._stderr.text(),
                )
            chunk = os.read(fd, size - len(buf))
            if not chunk:
                raise self._died("ended its output in the middle of a result" if buf else "exited without a result")
            buf += chunk
        return bytes(buf)

    def run(self, case: records.Case) -> records.Result:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(case.pack())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died("is gone")
        data = self._read_exact(records.RESULT_SIZE)
        result = records.Result.unpack(data)
        if result.magic != records.RESULT_MAGIC:
            _kill(self.proc)
            raise ExecutorError(f"{self.name} serve wrote something that is not a result record (magic {result.magic:#x})")
        return result

    def time(self, case: records.Case, reps: int, chunk: int = 256) -> float:
        """Seconds to run the same case reps times, sent in chunks so that neither
        pipe fills up while the other side waits."""
        assert self.proc.stdin is not None
        started = time.perf_counter()
        left = reps
        while left:
            k = min(chunk, left)
            try:
                self.proc.stdin.write(case.pack() * k)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise self._died("stopped reading cases") from None
            self._read_exact(k * records.RESULT_SIZE)
            left -= k
        return time.perf_counter() - started

    def close(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _kill(self.proc)


# ---- sweep stream ----


@dataclass(frozen=True)
class Finding:
    """A case that showed a class its shard had not seen, with its result."""

    case: records.Case
    result: records.Result


class StreamParser:
    """Cuts a sweep's byte stream into records, told apart by their magic."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pending: records.Case | None = None

    def feed(self, data: bytes) -> list[Finding | records.Result]:
        self._buf += data
        out: list[Finding | records.Result] = []
        while len(self._buf) >= MAGIC_SIZE:
            magic = int.from_bytes(self._buf[:MAGIC_SIZE], "little")
            if magic == records.CASE_MAGIC:
                if len(self._buf) < records.CASE_SIZE:
                    break
                if self._pending is not None:
                    raise ExecutorError("sweep stream out of order: two case records in a row")
                self._pending = records.Case.unpack(bytes(self._buf[: records.CASE_SIZE]))
                del self._buf[: records.CASE_SIZE]
            elif magic == records.RESULT_MAGIC:
                if len(self._buf) < records.RESULT_SIZE:
                    break
                result = records.Result.unpack(bytes(self._buf[: records.RESULT_SIZE]))
                del self._buf[: records.RESULT_SIZE]
                if result.type == records.RESULT_CASE:
                    if self._pending is None or self._pending.id != result.id:
                        raise ExecutorError(f"sweep stream out of order: result {result.id} without its case record")
                    out.append(Finding(self._pending, result))
                    self._pending = None
                else:
                    out.append(result)
            else:
                raise ExecutorError(f"sweep stream out of sync: unknown record magic {magic:#010x}")
        return out

    def finish(self) -> None:
        if self._buf or self._pending is not None:
            raise ExecutorError("sweep stream ended in the middle of a record")


@dataclass(frozen=True)
class Progress:
    done: int  # summed over shards
    total: int


@dataclass(frozen=True)
class NewReproducer:
    """A class's smallest reproducer so far (merged over shards)."""

    cls: str
    case: records.Case
    result: records.Result


@dataclass
class Finished:
    cases: int
    counts: dict[str, int]  # class -> cases showing it
    reproducers: dict[str, Finding]
    elapsed_s: float
    stderr: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)  # why shards stopped early, if any


class Reproducers:
    """Per class, the finding with the smallest case id: the sweep's smallest reproducer
    because case ids number the whole enumeration in order, across shards."""

    def __init__(self) -> None:
        self.best: dict[str, Finding] = {}

    def add(self, finding: Finding) -> list[str]:
        """Classes for which this finding is the new smallest reproducer."""
        improved = []
        for cls in records.class_names(finding.result.classes):
            old = self.best.get(cls)
            if old is None or finding.case.id < old.case.id:
                self.best[cls] = finding
                improved.append(cls)
        return improved


_EOF = object()


def _read_stream(shard: int, proc: subprocess.Popen[bytes], q: "queue.Queue[tuple[int, object]]") -> None:
    parser = StreamParser()
    assert proc.stdout is not None
    try:
        while True:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            for item in parser.feed(chunk):
                q.put((shard, item))
        parser.finish()
    except Exception as e:  # handed to the main thread, which reports it
        q.put((shard, e))
    q.put((shard, _EOF))


def sweep(
    argv: list[str],
    options: list[str],
    *,
    jobs: int = 1,
    stall_timeout_s: float = 600.0,  # PROGRESS comes every 8192 cases; slow cases under QEMU
    plugins: "list[PluginMemory] | None" = None,
) -> Iterator[Progress | NewReproducer | Finished]:
    """Run `executor sweep OPTIONS` as `jobs` shards and merge their streams; with
    plugins (one per shard) each shard runs under the QEMU plugin (--memcheck)."""
    jobs = max(1, jobs)
    name = argv[-1]
    started = time.monotonic()
    q: queue.Queue[tuple[int, object]] = queue.Queue()
    procs: list[subprocess.Popen[bytes]] = []
    tails: list[_StderrTail] = []
    try:
        for shard in range(jobs):
            shard_opts = ["--shard", f"{shard}/{jobs}"] if jobs > 1 else []
            plugin = plugins[shard] if plugins else None
            proc = _start([*(plugin.wrap(argv) if plugin else argv), "sweep", *options, *shard_opts,
                           *(plugin.executor_options() if plugin else [])],
                          plugin.pass_fds if plugin else ())
            assert proc.stdin is not None
            proc.stdin.close()
            procs.append(proc)
            tails.append(_StderrTail(proc.stderr))
            threading.Thread(target=_read_stream, args=(shard, proc, q), daemon=True).start()

        def who(shard: int) -> str:
            return f"{name} sweep" + (f" (shard {shard}/{jobs})" if jobs > 1 else "")

        progress = [(0, 0)] * jobs
        done: list[int | None] = [None] * jobs
        counts: dict[str, int] = {}
        best = Reproducers()
        live = set(range(jobs))
        stopped: list[str] = []
        while live:
            try:
                shard, item = q.get(timeout=stall_timeout_s)
            except queue.Empty:
                raise ExecutorError(
                    f"{name} sweep wrote nothing for {stall_timeout_s:.0f} s: stopped it",
                    "\n".join(t.text(0.1) for t in tails),
                ) from None
            if item is _EOF:
                live.discard(shard)
                proc = procs[shard]
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    _kill(proc)
                    raise ExecutorError(f"{who(shard)} closed its output but did not exit", tails[shard].text())
                if proc.returncode != 0:
                    raise ExecutorError(f"{who(shard)} exited with status {proc.returncode}", tails[shard].text())
                if done[shard] is None:
                    raise ExecutorError(f"{who(shard)} ended its stream without DONE", tails[shard].text())
            elif isinstance(item, Exception):
                _kill(procs[shard])
                raise ExecutorError(f"{who(shard)}: {item}", tails[shard].text())
            elif isinstance(item, Finding):
                for cls in best.add(item):
                    yield NewReproducer(cls, item.case, item.result)
            elif isinstance(item, records.Result):
                if item.type == records.RESULT_PROGRESS:
                    progress[shard] = (item.id, item.ret)
                    yield Progress(sum(p[0] for p in progress), sum(p[1] for p in progress))
                elif item.type == records.RESULT_COUNT:
                    cls = records.class_of_bit(item.aux)
                    counts[cls] = counts.get(cls, 0) + item.id
                elif item.type == records.RESULT_DONE:
                    done[shard] = item.id
                    if item.aux in STOP_REASONS and STOP_REASONS[item.aux] not in stopped:
                        stopped.append(STOP_REASONS[item.aux])
                elif item.type == records.RESULT_ERROR:
                    raise ExecutorError(f"{who(shard)} rejected a case: {records.case_error_message(item.aux)}")
                else:
                    raise ExecutorError(f"{who(shard)} wrote a result of unknown type {item.type}")
        ordered = {c: counts[c] for c in records.CLASS_NAMES if c in counts}
        ordered.update({c: n for c, n in counts.items() if c not in ordered})
        yield Finished(
            cases=sum(d or 0 for d in done),
            counts=ordered,
            reproducers=dict(best.best),
            elapsed_s=time.monotonic() - started,
            stderr=[t.text(1.0) for t in tails if t.text(1.0)],
            stopped=stopped,
        )
    finally:
        for proc in procs:
            _kill(proc)


def executor_argv(root: Path, elf: str, prefix: list[str]) -> list[str]:
    return [*prefix, str(root / elf)]
