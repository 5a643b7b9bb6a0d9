"""Running executors: `info`, a persistent `serve` process, and merged `sweep` streams.

The routine under test runs inside the executor with the executor's full rights, so the
tool believes nothing the executor process says without a check it makes from outside
(docs/executor.md#the-channel):
  - cases and sealed records travel on private pipes at randomly chosen descriptor
    numbers (never stdin or stdout: those carry messages only, drained and kept);
  - every record's seal (a keyed checksum with its place in the stream) is checked;
  - a sweep shard's DONE count must equal the plan this process computes (plan.py);
  - an executor that dies, stops, stops answering or breaks its stream during a case is
    a `crash` (or `hang`) result for that case: in serve at once; in a sweep once the
    case, named by the shared control block and rebuilt from the plan, does it again
    alone in a fresh executor; the shard then goes on after it.
Anything else (an executor that cannot start, fails before its first case, or whose
failure does not come back when its case runs alone) is an ExecutorError: exit 2, with
what the executor said.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import queue
import resource
import secrets
import select
import signal
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Iterator

from . import procs, records
from .errors import CopyfuzzError
from .execopts import opt
from .plan import NO_END
from .spec import format_spec, from_case

if TYPE_CHECKING:
    from .plan import SweepPlan
    from .plugin import PluginMemory

MAGIC_SIZE = 4
MESSAGES_KEEP = 16384  # bytes of an executor's stdout and stderr kept for messages
# DONE's aux: why a sweep ended before its last case (enum cf_sweep_stop).
STOP_REASONS = dict(enumerate(records.SWEEP_STOPS[1:], start=1))
MAX_HANGS = records.EXEC_MAX_HANGS_DEFAULT  # --max-hangs the tool gives every sweep (so it can check a max-hangs stop)
MAX_DEATHS = 16  # cases that killed a shard's executor before the shard gives up ("max-crashes")
FD_LOW, FD_HIGH = 64, 1024  # where the channel's descriptors land in the executor
STOP_POLL_S = 0.1  # how often a silent serve executor is checked for being stopped (a /proc read)
STALL_TIMEOUT_S = 600.0  # a sweep's silence that kills it: PROGRESS comes every 8192 cases; slow cases under QEMU


class ExecutorError(CopyfuzzError):
    """The executor failed or broke its protocol (exit 2, like any run that cannot judge)."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message, exit_code=2, details=details)


def signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "did not exit"
    if returncode < 0:
        return f"was killed by {signal_name(-returncode)}"
    return f"exited with status {returncode}"


def _stopped(pid: int) -> bool:
    """Is the process stopped (SIGSTOP, SIGTSTP ...)? /proc, because waitpid would reap it.
    Only a job-control stop ("T") counts: a tracing stop ("t") is what strace or gdb holds
    a process in at every system call or signal, and the tracer lets it go on (a sweep run
    under `strace -f` had its shards killed as stopped, then narrowed to no case)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state == b"T"


def _at_random_fd(fd: int) -> int:
    """An inheritable copy of fd at a free, randomly chosen descriptor number."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    high = min(FD_HIGH, soft) if soft > FD_LOW + 64 else FD_HIGH
    for _ in range(1000):
        n = FD_LOW + secrets.randbelow(high - FD_LOW)
        try:
            os.fstat(n)
        except OSError:
            os.dup2(fd, n, inheritable=True)
            return n
    raise ExecutorError("no free file descriptor for the executor's channel")


class Channel:
    """The private pipes and the control block of one executor process.

    The case pipe carries the 16-byte seal key first, then (serve) case records; the
    record pipe brings sealed records back. Both ends the executor gets sit at random
    descriptor numbers, named by --cases-fd/--records-fd; the control block is a memfd
    (--control-fd, struct cf_control)."""

    def __init__(self) -> None:
        self.key = (secrets.randbits(64), secrets.randbits(64))
        self.seq = 0  # the next record's place in the stream
        self.control_fd = os.memfd_create("copyfuzz-control", 0)  # inherited: no MFD_CLOEXEC
        os.ftruncate(self.control_fd, records.CONTROL_SIZE)
        self._map = mmap.mmap(self.control_fd, records.CONTROL_SIZE)
        self._control = records.ControlStruct.from_buffer(self._map)
        cases_r, self.cases_w = os.pipe()
        self.records_r, records_w = os.pipe()
        self._theirs = [_at_random_fd(cases_r), _at_random_fd(records_w)]
        os.close(cases_r)
        os.close(records_w)

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (*self._theirs, self.control_fd)

    def options(self) -> list[str]:
        return [*opt("cases-fd", self._theirs[0]), *opt("records-fd", self._theirs[1]),
                *opt("control-fd", self.control_fd)]

    def handed_over(self) -> None:
        """The executor has its ends: drop ours (so its death is EOF here), send the key."""
        for fd in self._theirs:
            os.close(fd)
        self._theirs = []
        os.write(self.cases_w, struct.pack("<QQ", *self.key))  # 16 bytes: a pipe takes them at once

    def check(self, data: bytes) -> bool:
        """Is this the next record of the stream, sealed with our key?"""
        ok = records.sealed(self.key, self.seq, data)
        self.seq += 1
        return ok

    def control(self) -> tuple[int, int, list[int]]:
        """(cases begun, the id of the last one begun, class counts) as the executor left them."""
        c = self._control
        if c.magic != records.CONTROL_MAGIC:
            return 0, 0, [0] * records.CONTROL_COUNTS
        return int(c.started), int(c.current), list(c.counts)

    def end_cases(self) -> None:
        """Close the case pipe: a serving executor exits 0 at its end."""
        if self.cases_w >= 0:
            os.close(self.cases_w)
            self.cases_w = -1

    def close(self) -> None:
        self.end_cases()
        for fd in (*self._theirs, self.records_r):
            os.close(fd)
        self._theirs = []
        self.records_r = -1
        del self._control
        self._map.close()
        os.close(self.control_fd)


def _start(argv: list[str], pass_fds: tuple[int, ...] = ()) -> subprocess.Popen[bytes]:
    """An executor with stdin closed and stdout and stderr merged into one message pipe;
    it dies with the tool (procs.py), whatever kills the tool."""
    try:
        return procs.popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0,
            pass_fds=pass_fds,
        )
    except OSError as e:
        raise ExecutorError(f"cannot start {' '.join(argv)}: {e.strerror}") from e


# Control characters a routine may write (all but tab and newline) shown as "?".
_UNPRINTABLE = {c: "?" for c in (*range(0, 9), *range(11, 32), 127)}


class _Messages:
    """Drains a process's stdout and stderr in the background (a full pipe would block it):
    whatever the routine writes there ends up here, as text for messages, never as records."""

    def __init__(self, stream: IO[bytes] | None) -> None:
        self._buf = bytearray()
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[bytes] | None) -> None:
        if stream is None:
            return
        for chunk in iter(lambda: stream.read(4096), b""):
            self._buf += chunk
            if len(self._buf) > MESSAGES_KEEP:
                del self._buf[: len(self._buf) - MESSAGES_KEEP]

    def text(self, wait: float = 1.0) -> str:
        self._thread.join(wait)
        return self._buf.decode(errors="replace").translate(_UNPRINTABLE).rstrip()


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


# ---- info ----


_INFO: dict[tuple[object, ...], dict[str, str]] = {}


def info(argv: list[str], timeout_s: float = 60.0) -> dict[str, str]:
    """`executor info` as a dict of its key=value lines; asked once a process for an
    executor file that has not changed since (check and audit both ask: a QEMU start each)."""
    try:
        st = os.stat(argv[-1])
        key: tuple[object, ...] | None = (*argv, st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None and key in _INFO:
        return dict(_INFO[key])
    out = _ask_info(argv, timeout_s)
    if key is not None:
        _INFO[key] = dict(out)
    return out


def _ask_info(argv: list[str], timeout_s: float) -> dict[str, str]:
    try:
        proc = subprocess.run(
            [*argv, "info"], stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout_s
        )
    except subprocess.TimeoutExpired as e:
        raise ExecutorError(f"{argv[-1]} info did not answer within {timeout_s:.0f} s") from e
    except OSError as e:
        raise ExecutorError(f"cannot start {' '.join(argv)}: {e.strerror}") from e
    if proc.returncode == -signal.SIGILL and "-cpu" in argv:  # --cpu: a CPU older than the harness needs
        cpu = argv[argv.index("-cpu") + 1] if argv.index("-cpu") + 1 < len(argv) else "?"
        raise ExecutorError(f"{argv[-1]} cannot start on QEMU CPU {cpu}: its own code (the harness) uses "
                            "instructions that CPU lacks (SIGILL): choose a newer --cpu")
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


def death_result(case: records.Case, cls: str, signum: int = 0) -> records.Result:
    """The result of a case during which the executor died (crash) or went silent (hang)."""
    mask = records.class_mask([cls])
    profile = records.PROFILES[case.profile] if case.profile < len(records.PROFILES) else "exact"
    return records.Result(type=records.RESULT_CASE, id=case.id, classes=mask,
                          errors=mask & records.ERROR_MASK[profile], signal=signum)


PIPELINE = 32  # cases Server.run_many writes ahead: their records fit either pipe's 64 KiB


def accepted(result: records.Result, prefix: str = "") -> records.Result:
    """result, unless the executor rejected its case (an error record, as for a case the
    executor's own check refuses): then a CopyfuzzError saying why, after prefix (the
    case, where the caller has it)."""
    if result.type == records.RESULT_ERROR:
        raise CopyfuzzError(f"{prefix}the executor rejected the case: {records.case_error_message(result.aux)}")
    return result


class Server:
    """One `executor serve` process: send a case record, get its result record.

    If the executor dies, stops, goes silent or breaks the channel during a case, run()
    returns a `crash` (silent: `hang`) result for that case, says how in last_death, and
    starts a fresh executor for the next case. A failure before the case began (the
    executor cannot start, say) is an ExecutorError."""

    def __init__(self, argv: list[str], *, timeout_ms: int | None = None, read_timeout_s: float = 60.0,
                 plugin: "PluginMemory | None" = None, bare: bool = False, granule: int = 0) -> None:
        # granule: serve cases whose faults are at MTE tag granules too (--granule 16)
        self._args = [*(plugin.wrap(argv) if plugin else argv), "serve",
                      *(plugin.executor_options() if plugin else []), *(opt("bare") if bare else []),
                      *(opt("granule", granule) if granule else [])]
        if timeout_ms is not None:
            self._args += opt("timeout-ms", timeout_ms)
        self._pass_fds = plugin.pass_fds if plugin else ()
        self.name = argv[-1]
        # Never give up on a case before the executor's own watchdog could have fired.
        self.read_timeout_s = max(read_timeout_s, 2 * (timeout_ms or 0) / 1000 + 30) if timeout_ms else read_timeout_s
        self.last_death: str | None = None  # how the executor ended during the last case, if it did
        self.proc: subprocess.Popen[bytes] | None = None
        self._start()

    def _start(self) -> None:
        self.channel = Channel()
        try:
            self.proc = _start([*self._args, *self.channel.options()], (*self._pass_fds, *self.channel.pass_fds))
            self.channel.handed_over()
        except BaseException:
            self.channel.close()
            raise
        self._messages = _Messages(self.proc.stdout)
        self._sent = 0  # cases written to this process

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, size: int, until: float = math.inf) -> tuple[bytes, str | None]:
        """(size bytes of records, None), or (b"", "eof" | "timeout" | "stopped"), or
        (b"", "late") once time.monotonic() reaches until."""
        assert self.proc is not None
        fd = self.channel.records_r
        deadline = time.monotonic() + self.read_timeout_s
        buf = bytearray()
        while len(buf) < size:
            now = time.monotonic()
            if now >= until:
                return b"", "late"
            left = min(deadline, until) - now
            if deadline <= now:
                return b"", "timeout"
            ready, _, _ = select.select([fd], [], [], min(left, STOP_POLL_S))
            if not ready:
                if _stopped(self.proc.pid):
                    return b"", "stopped"
                continue
            chunk = os.read(fd, size - len(buf))
            if not chunk:
                return b"", "eof"
            buf += chunk
        return bytes(buf), None

    def _end(self) -> tuple[int | None, str]:
        """Stop this process for good: its exit status and what it said."""
        assert self.proc is not None
        proc, self.proc = self.proc, None
        with contextlib.suppress(subprocess.TimeoutExpired):  # on EOF it is exiting anyway
            proc.wait(timeout=5)
        _kill(proc)  # anything else gets killed
        text = self._messages.text()
        self.channel.close()
        return proc.returncode, text

    def _failed(self, case: records.Case, why: str) -> records.Result:
        begun = self.channel.control()[0] >= self._sent
        if why in ("timeout", "stopped") or why.startswith("broke"):
            assert self.proc is not None
            self.proc.kill()  # before waiting: it will not end by itself
        returncode, text = self._end()
        death = {"eof": describe_exit(returncode),
                 "timeout": f"gave no result within {self.read_timeout_s:.0f} s (killed it)",
                 "stopped": "was stopped (SIGSTOP or the like; killed it)"}.get(why, why)
        if not begun:
            raise ExecutorError(f"{self.name} serve {death} before it ran the case", text)
        self.last_death = f"the executor {death} during this case"
        signum = -returncode if why == "eof" and returncode is not None and returncode < 0 else 0
        return death_result(case, "hang" if why == "timeout" else "crash", signum)

    def run(self, case: records.Case) -> records.Result:
        return self.run_many([case])[0]

    def run_many(self, cases: list[records.Case], until: float = math.inf) -> list[records.Result]:
        """run() of each case, in order, the same results; up to PIPELINE cases written
        before their results are read (a round trip per case costs about eight cases'
        time under QEMU). A case that ends the executor is that case's result, as with
        run(); the cases after it go to a fresh executor; last_death is the last case's.
        At until (time.monotonic()), the results so far: the executor, maybe amid a long
        case, is stopped (the next call starts another), as a triage time requires."""
        out: list[records.Result] = []
        while len(out) < len(cases) and time.monotonic() < until:
            batch = cases[len(out):len(out) + PIPELINE]
            self.last_death = None
            if self.proc is None:
                self._start()
            base = self._sent
            self._sent += len(batch)
            try:
                _write_all(self.channel.cases_w, b"".join(c.pack() for c in batch))
            except OSError:
                self._sent = base + 1
                out.append(self._failed(batch[0], "eof"))
                continue
            for k, case in enumerate(batch):
                data, why = self._read(records.RESULT_SIZE, until)
                if why == "late":
                    assert self.proc is not None
                    self.proc.kill()
                    self._end()
                    return out
                if why is None and not self.channel.check(data):
                    why = "broke its channel: a record failed its seal check"
                result = records.Result.unpack(data) if why is None else None
                if result is not None and (result.id != case.id or
                                           result.type not in (records.RESULT_CASE, records.RESULT_ERROR)):
                    why = (f"broke its channel: answered case {case.id} with a "
                           f"type {result.type} record for id {result.id}")
                if why is not None:
                    self._sent = base + k + 1  # the case _failed() asks about
                    out.append(self._failed(case, why))
                    break
                assert result is not None
                out.append(result)
        return out

    def time(self, case: records.Case, reps: int, chunk: int = 256) -> float:
        """Seconds to run the same case reps times, sent in chunks so that neither
        pipe fills up while the other side waits (no per-record checks: timing only)."""
        if self.proc is None:
            self._start()
        started = time.perf_counter()
        left = reps
        while left:
            k = min(chunk, left)
            try:
                _write_all(self.channel.cases_w, case.pack() * k)
            except OSError:
                why: str | None = "eof"
            else:
                _, why = self._read(k * records.RESULT_SIZE)
            if why is not None:
                returncode, text = self._end()
                raise ExecutorError(f"{self.name} serve stopped answering while timed ({why}, "
                                    f"{describe_exit(returncode)})", text)
            self.channel.seq += k
            left -= k
        return time.perf_counter() - started

    def close(self) -> None:
        if self.proc is None:
            return
        self.channel.end_cases()
        proc = self.proc
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        self._end()


# ---- sweep stream ----


@dataclass(frozen=True)
class NewClassCase:
    """A case that showed a class its shard had not seen, with its result."""

    case: records.Case
    result: records.Result


class StreamParser:
    """Cuts a sweep's byte stream into records, told apart by their magic, each checked
    against its seal (key, and its place in the stream)."""

    def __init__(self, key: tuple[int, int] = (0, 0)) -> None:
        self._buf = bytearray()
        self._pending: records.Case | None = None
        self._key = key
        self._seq = 0

    def _take(self, size: int) -> bytes:
        data = bytes(self._buf[:size])
        del self._buf[:size]
        if not records.sealed(self._key, self._seq, data):
            raise ExecutorError(f"record {self._seq} fails its seal check (bytes the executor did not write)")
        self._seq += 1
        return data

    def feed(self, data: bytes) -> list[NewClassCase | records.Result]:
        self._buf += data
        out: list[NewClassCase | records.Result] = []
        while len(self._buf) >= MAGIC_SIZE:
            magic = int.from_bytes(self._buf[:MAGIC_SIZE], "little")
            if magic == records.CASE_MAGIC:
                if len(self._buf) < records.CASE_SIZE:
                    break
                case = records.Case.unpack(self._take(records.CASE_SIZE))
                if self._pending is not None:
                    raise ExecutorError("out of order: two case records in a row")
                self._pending = case
            elif magic == records.RESULT_MAGIC:
                if len(self._buf) < records.RESULT_SIZE:
                    break
                result = records.Result.unpack(self._take(records.RESULT_SIZE))
                if result.type == records.RESULT_CASE:
                    if self._pending is None or self._pending.id != result.id:
                        raise ExecutorError(f"out of order: result {result.id} without its case record")
                    out.append(NewClassCase(self._pending, result))
                    self._pending = None
                else:
                    out.append(result)
            else:
                raise ExecutorError(f"out of sync: unknown record magic {magic:#010x}")
        return out

    def finish(self) -> None:
        if self._buf or self._pending is not None:
            raise ExecutorError("ended in the middle of a record")


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
    reproducers: dict[str, NewClassCase]
    elapsed_s: float
    stderr: list[str] = field(default_factory=list)  # what the executors wrote on stdout and stderr
    stopped: list[str] = field(default_factory=list)  # why shards stopped early, if any
    deaths: list[str] = field(default_factory=list)  # cases that killed an executor, and how


class Reproducers:
    """Per class, the finding with the smallest case id: the sweep's smallest reproducer
    because case ids number the whole enumeration in order, across shards."""

    def __init__(self) -> None:
        self.best: dict[str, NewClassCase] = {}

    def add(self, finding: NewClassCase) -> list[str]:
        """Classes for which this finding is the new smallest reproducer."""
        improved = []
        for cls in records.class_names(finding.result.classes):
            old = self.best.get(cls)
            if old is None or finding.case.id < old.case.id:
                self.best[cls] = finding
                improved.append(cls)
        return improved


_EOF = object()


class _Segment:
    """One executor process running a shard's cases with ids in [start, end), with the
    thread that reads its records into a queue."""

    def __init__(self, shard: int, start: int, planned: int, argv: list[str], pass_fds: tuple[int, ...],
                 q: "queue.Queue[tuple[_Segment, object]]") -> None:
        self.shard, self.start, self.planned = shard, start, planned
        self.channel = Channel()
        try:
            self.proc = _start([*argv, *self.channel.options()], (*pass_fds, *self.channel.pass_fds))
            self.channel.handed_over()
        except BaseException:
            self.channel.close()
            raise
        self.channel.end_cases()  # a sweep reads nothing after the key
        self.messages = _Messages(self.proc.stdout)
        self.done: int | None = None  # DONE's count
        self.why = 0  # DONE's aux
        self.announced: int | None = None  # the first PROGRESS's total
        self.progress = 0
        self.counts: dict[str, int] = {}
        self.seen = 0  # classes of its findings
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, args=(q,), daemon=True)
        self._reader.start()

    def _read(self, q: "queue.Queue[tuple[_Segment, object]]") -> None:
        parser = StreamParser(self.channel.key)
        fd = self.channel.records_r
        try:
            while not self._stop.is_set():
                ready, _, _ = select.select([fd], [], [], 0.2)
                if not ready:
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    parser.finish()
                    q.put((self, _EOF))
                    return
                for item in parser.feed(chunk):
                    q.put((self, item))
        except Exception as e:  # handed to the main thread, which judges it
            q.put((self, e))

    def take(self, item: object) -> str | None:
        """Book one item of the stream; what is wrong with it, if anything."""
        if isinstance(item, Exception):
            return f"broke its record stream ({item})"
        if isinstance(item, NewClassCase):
            self.seen |= item.result.classes
            return None
        assert isinstance(item, records.Result)
        if item.type == records.RESULT_PROGRESS:
            if self.announced is None:
                self.announced = item.ret
            self.progress = item.id
        elif item.type == records.RESULT_COUNT:
            cls = records.class_of_bit(item.aux)
            self.counts[cls] = self.counts.get(cls, 0) + item.id
        elif item.type == records.RESULT_DONE:
            self.done, self.why = item.id, item.aux
        elif item.type == records.RESULT_ERROR:
            return f"rejected a case it generated: {records.case_error_message(item.aux)}"
        else:
            return f"wrote a result of unknown type {item.type}"
        return None

    def verdict(self, stop_mask: int) -> str | None:
        """After a clean exit: why its account cannot be believed, or None."""
        if self.done is None:
            return "ended its stream without DONE"
        if self.announced != self.planned:
            return f"announced {self.announced} cases, but the plan has {self.planned}"
        if self.why == 0 and self.done != self.planned:
            return f"reported {self.done} cases run, but the plan has {self.planned}"
        if self.why == 1 and not (self.done <= self.planned and stop_mask
                                  and self.seen & stop_mask == stop_mask):
            return "claimed to have met its stop mask, but its findings do not"
        if self.why == 2 and not (self.done <= self.planned and self.counts.get("hang", 0) >= MAX_HANGS):
            return "claimed to have stopped on hangs, but did not count enough of them"
        if self.why not in (0, *STOP_REASONS):
            return f"ended for an unknown reason ({self.why})"
        return None

    def end(self) -> tuple[int | None, str, tuple[int, int, list[int]]]:
        """Kill it if it still runs: its exit status, what it said, and its control block."""
        _kill(self.proc)
        control = self.channel.control()
        self._stop.set()
        self._reader.join(5)
        text = self.messages.text()
        if not self._reader.is_alive():  # else it may still read the fd: leave it open
            self.channel.close()
        return self.proc.returncode, text, control


@dataclass
class _Shard:
    index: int
    segment: _Segment | None = None
    cases: int = 0  # run in its judged segments
    counts: dict[str, int] = field(default_factory=dict)
    deaths: int = 0
    messages: list[str] = field(default_factory=list)


def _add_counts(into: dict[str, int], counts: dict[str, int]) -> None:
    for cls, n in counts.items():
        into[cls] = into.get(cls, 0) + n


def _control_counts(counts: list[int]) -> dict[str, int]:
    return {records.class_of_bit(bit): n for bit, n in enumerate(counts) if n}


class Sweep:
    """`executor sweep` over a plan as `jobs` shards, their streams merged: each shard runs
    as segments (executor processes), a segment that goes wrong is judged and the shard goes
    on after its case. Each step is a method, so that it can be tested alone; run() ties
    them together. With plugins (one per shard) each shard runs under the QEMU plugin
    (--memcheck); label names the routine in messages (default: the executor's path);
    bare: the executor's bare timing mode (bench/sweep_throughput.py's baseline)."""

    def __init__(
        self,
        argv: list[str],
        plan: "SweepPlan",
        *,
        jobs: int = 1,
        timeout_ms: int | None = None,
        stop_mask: int = 0,
        stall_timeout_s: float = STALL_TIMEOUT_S,
        plugins: "list[PluginMemory] | None" = None,
        label: str | None = None,
        bare: bool = False,
    ) -> None:
        self.argv, self.plan = argv, plan
        self.jobs = max(1, jobs)
        self.timeout_ms, self.stop_mask, self.stall_timeout_s = timeout_ms, stop_mask, stall_timeout_s
        self.plugins = plugins
        self.name = label or argv[-1]
        self.options = [*plan.options(), *opt("max-hangs", MAX_HANGS), *(opt("bare") if bare else [])]
        if timeout_ms is not None:
            self.options += opt("timeout-ms", timeout_ms)
        if stop_mask:
            self.options += opt("stop-mask", f"{stop_mask:#x}")
        self.total = plan.count()
        self.queue: queue.Queue[tuple[_Segment, object]] = queue.Queue()  # every running segment's items
        self.shards = [_Shard(i) for i in range(self.jobs)]
        self.best = Reproducers()
        self.stopped: list[str] = []  # why shards stopped early
        self.deaths: list[tuple[int, str]] = []  # (case id, how it killed its executor)
        self.started = time.monotonic()
        self.last_heard = self.started  # when any segment last said something (the stall watchdog)

    # ---- naming ----

    def who(self, shard: int) -> str:
        return f"{self.name} sweep" + (f" (shard {shard}/{self.jobs})" if self.jobs > 1 else "")

    def spec_of(self, case: records.Case) -> str:
        return format_spec(from_case(self.name, case))

    # ---- starting ----

    def segment(self, shard: int, start: int, end: int, into: "queue.Queue[tuple[_Segment, object]]") -> _Segment:
        """An executor running the shard's cases with ids in [start, end), its items into `into`."""
        plugin = self.plugins[shard] if self.plugins else None
        shard_opts = opt("shard", f"{shard}/{self.jobs}") if self.jobs > 1 else []
        range_opts = (opt("start", start) if start else []) + (opt("end", end) if end != NO_END else [])
        return _Segment(
            shard, start, self.plan.count(shard, self.jobs, start, end),
            [*(plugin.wrap(self.argv) if plugin else self.argv), "sweep", *self.options, *shard_opts, *range_opts,
             *(plugin.executor_options() if plugin else [])],
            plugin.pass_fds if plugin else (), into)

    def launch(self, sh: _Shard, start: int) -> None:
        """The shard's next segment: its cases from id start on, into the merged queue."""
        sh.segment = self.segment(sh.index, start, NO_END, self.queue)

    # ---- merging ----

    def progress(self) -> Progress:
        return Progress(sum(sh.cases + (sh.segment.progress if sh.segment else 0) for sh in self.shards), self.total)

    def take(self, seg: _Segment, item: object) -> Iterator[Progress | NewReproducer]:
        """One item of a segment's stream: merged into the sweep's events, or judged."""
        sh = self.shards[seg.shard]
        if seg is not sh.segment:
            return  # from a segment already judged
        if item is _EOF:
            yield from self.ended(sh)
            return
        problem = seg.take(item)
        if problem:
            yield from self.broken(sh, problem, caught_in_the_act=False)
        elif isinstance(item, NewClassCase):
            for cls in self.best.add(item):
                yield NewReproducer(cls, item.case, item.result)
        elif isinstance(item, records.Result) and item.type == records.RESULT_PROGRESS:
            yield self.progress()

    def ended(self, sh: _Shard) -> Iterator[NewReproducer]:
        """The shard's segment closed its stream: book its account, or judge it broken."""
        seg = sh.segment
        assert seg is not None
        try:
            seg.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            yield from self.broken(sh, "closed its output but did not exit")
            return
        if seg.proc.returncode != 0:
            yield from self.broken(sh, None)
            return
        problem = seg.verdict(self.stop_mask)
        if problem:
            # Exited 0 mid-stream is a death in the act; a wrong account is not.
            yield from self.broken(sh, problem, caught_in_the_act=seg.done is None)
            return
        assert seg.done is not None
        _, text, _ = seg.end()
        sh.messages.append(text)
        sh.segment = None
        sh.cases += seg.done
        _add_counts(sh.counts, seg.counts)
        if seg.why in STOP_REASONS and STOP_REASONS[seg.why] not in self.stopped:
            self.stopped.append(STOP_REASONS[seg.why])

    def watch(self) -> Iterator[NewReproducer]:
        """Nothing came for a while: a stopped segment, or all of them silent for
        stall_timeout_s, is broken (killed, judged, the shard goes on)."""
        silent = time.monotonic() - self.last_heard >= self.stall_timeout_s
        for sh in self.shards:
            if sh.segment and _stopped(sh.segment.proc.pid):
                yield from self.broken(sh, "was stopped (SIGSTOP or the like; killed it)")
            elif sh.segment and silent:
                yield from self.broken(sh, f"wrote nothing for {self.stall_timeout_s:.0f} s (killed it)")
        if silent:
            self.last_heard = time.monotonic()

    def finished(self) -> Finished:
        """The shards' accounts merged, classes in their canonical order."""
        counts: dict[str, int] = {}
        for sh in self.shards:
            _add_counts(counts, sh.counts)
        ordered = {c: counts[c] for c in records.CLASS_NAMES if c in counts}
        ordered.update({c: n for c, n in counts.items() if c not in ordered})
        return Finished(
            cases=sum(sh.cases for sh in self.shards),
            counts=ordered,
            reproducers=dict(self.best.best),
            elapsed_s=time.monotonic() - self.started,
            stderr=[t for sh in self.shards for t in sh.messages if t],
            stopped=self.stopped,
            deaths=[text for _, text in sorted(self.deaths)],
        )

    # ---- a segment gone wrong ----

    def alone(self, sh: _Shard, case: records.Case, what: str, details: str) -> tuple[records.Result, str | None]:
        """The case in a fresh serve: its result, and how that executor died, if it did."""
        try:
            with Server(self.argv, timeout_ms=self.timeout_ms, plugin=self.plugins[sh.index] if self.plugins else None,
                        granule=self.plan.granule) as server:
                return server.run(case), server.last_death
        except ExecutorError as e:
            raise ExecutorError(f"{self.who(sh.index)} {what}; running case {self.spec_of(case)} alone failed too: {e}",
                                "\n".join(t for t in (details, e.details) if t)) from e

    def probe(self, shard: int, start: int, end: int) -> tuple[bool, int, list[int]]:
        """Run the shard's cases with ids in [start, end) again: do they go wrong? With
        the cases begun and the class counts of that run."""
        pq: queue.Queue[tuple[_Segment, object]] = queue.Queue()
        seg = self.segment(shard, start, end, pq)
        failed = True
        heard = time.monotonic()
        try:
            while True:
                try:
                    _, item = pq.get(timeout=STOP_POLL_S)
                except queue.Empty:
                    if _stopped(seg.proc.pid) or time.monotonic() - heard >= self.stall_timeout_s:
                        break
                    continue
                heard = time.monotonic()
                if item is _EOF:
                    try:
                        seg.proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        break
                    failed = seg.proc.returncode != 0 or seg.verdict(self.stop_mask) is not None
                    break
                if seg.take(item):
                    break
        finally:
            _, _, (begun, _, counts) = seg.end()
        return failed, begun, counts

    def narrow(self, sh: _Shard, start: int, last: int, what: str, details: str) -> tuple[int, int, list[int]]:
        """The first case of the shard's ids [start, last] after which a run goes wrong
        (runs from start), with the cases begun and counts of that run. Runs of 1, 3, 7 ...
        cases first, then bisection in the last stretch: after a death the next suspect
        is often a few cases on, and a run costs its length (and an executor's start)."""
        jobs = self.jobs
        first = start + (sh.index - start) % jobs
        lo, hi = 0, (last - first) // jobs
        run: tuple[int, list[int]] | None = None
        stretch = 1
        while lo < hi:
            at = min(lo + stretch - 1, hi - 1)
            failed, begun, counts = self.probe(sh.index, start, first + at * jobs + 1)
            if failed:
                hi, run = at, (begun, counts)
                break
            lo, stretch = at + 1, stretch * 2
        while lo < hi:
            mid = (lo + hi) // 2
            failed, begun, counts = self.probe(sh.index, start, first + mid * jobs + 1)
            if failed:
                hi, run = mid, (begun, counts)
            else:
                lo = mid + 1
        if run is None:
            failed, begun, counts = self.probe(sh.index, start, first + lo * jobs + 1)
            if not failed:
                raise ExecutorError(f"{self.who(sh.index)} {what}, but its cases run again do not", details)
            run = (begun, counts)
        return first + lo * jobs, *run

    def broken(self, sh: _Shard, problem: str | None, caught_in_the_act: bool = True) -> Iterator[NewReproducer]:
        """The segment went wrong: find the case that did it, run it alone, and go on
        after it (a crash or hang finding), or give up (ExecutorError). Caught in the act
        (it died, stopped or went silent), the case it was running is the suspect; a bad
        stream or account is seen later than it was made, so the suspect is narrowed."""
        seg = sh.segment
        assert seg is not None
        start = seg.start
        returncode, text, (begun, current, ctl_counts) = seg.end()
        sh.segment = None
        sh.messages.append(text)
        what = problem or (f"{describe_exit(returncode)} without finishing its stream" if returncode == 0
                           else describe_exit(returncode))
        details = "\n".join(t for t in sh.messages if t)
        if begun == 0:
            raise ExecutorError(f"{self.who(sh.index)} {what} before its first case", details)
        case = self.plan.case_at(current) if current % self.jobs == sh.index and current >= start else None
        if case is None:
            raise ExecutorError(f"{self.who(sh.index)} {what}; its control block names case {current}, "
                                "which is not one of its cases", details)
        result, death = self.alone(sh, case, what, details) if caught_in_the_act else (records.Result(), None)
        if death is None:
            culprit, begun, ctl_counts = self.narrow(sh, start, current, what, details)
            case = self.plan.case_at(culprit)
            assert case is not None
            result, death = self.alone(sh, case, what, details)
            if death is None:
                raise ExecutorError(
                    f"{self.who(sh.index)} {what}; it goes wrong at case {self.spec_of(case)} after the cases "
                    "before it, but that case alone is fine, so this is not a finding", details)
        self.deaths.append((case.id, f"{self.spec_of(case)}: {death}"
                            + ("" if what in death else f" (in the sweep: it {what})")))
        sh.cases += begun
        _add_counts(sh.counts, _control_counts(ctl_counts))
        _add_counts(sh.counts, {c: 1 for c in result.class_list})
        for cls in self.best.add(NewClassCase(case, result)):
            yield NewReproducer(cls, case, result)
        sh.deaths += 1
        if sh.deaths >= MAX_DEATHS:
            if "max-crashes" not in self.stopped:
                self.stopped.append("max-crashes")
        elif self.plan.count(sh.index, self.jobs, case.id + 1):
            self.launch(sh, case.id + 1)

    # ---- the whole ----

    def run(self) -> Iterator[Progress | NewReproducer | Finished]:
        """Progress and NewReproducer events as the shards go, then Finished; every
        executor still running is killed at the end, however it comes."""
        self.started = time.monotonic()
        try:
            for sh in self.shards:
                if self.plan.count(sh.index, self.jobs):
                    self.launch(sh, 0)
            self.last_heard = time.monotonic()
            while any(sh.segment for sh in self.shards):
                try:
                    seg, item = self.queue.get(timeout=STOP_POLL_S)
                except queue.Empty:
                    yield from self.watch()
                    continue
                self.last_heard = time.monotonic()
                yield from self.take(seg, item)
            yield self.finished()
        finally:
            self.close()

    def close(self) -> None:
        for sh in self.shards:
            if sh.segment:
                sh.segment.end()


def sweep(argv: list[str], plan: "SweepPlan", **options: Any) -> Iterator[Progress | NewReproducer | Finished]:
    """Sweep(argv, plan, **options).run() (the options are Sweep's); a generator, so nothing
    starts (not even the plan's count) before the first next()."""
    yield from Sweep(argv, plan, **options).run()
