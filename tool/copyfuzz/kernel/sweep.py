"""Sweeping the syscalls on a booted kernel (`copyfuzz kernel sweep`) and on the host.

A run is one or more *shards* (--jobs N: VM j runs the cases whose index is j mod N),
each a series of boots: a boot runs the prober from a start index until it powers the
machine off. When a boot ends early (the kernel panicked, qemu died, the console went
quiet, the prober could not reap a hung task), the next boot starts after what was
done, and a second early end in the same place pins the case (the prober then
announces every case: `--trace`), which becomes a `panic` finding: what the kernel did
is what we report, and only that.

Findings are the prober's `finding` lines (with the hung task's `stack` lines), summed
per (syscall, class) with the first case of the enumeration that shows them (the
smallest n). Nothing is inferred: a class that no line named is not reported.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .. import procs
from ..errors import CopyfuzzError
from . import initramfs, protocol
from .build import Kernel
from .vm import VM, Stalled

BOOT_S = 120.0  # hello within this, or the kernel did not boot
MAX_BOOTS = 64  # per shard: a kernel that dies this often is reported, not retried forever


@dataclass
class Finding:
    syscall: str
    cls: str
    case: str
    index: int
    observed: dict[str, str]
    stack: list[str] = field(default_factory=list)
    count: int = 1


@dataclass
class Result:
    where: str  # "vm" or "host"
    total: int = 0  # cases in the enumeration (this shard set)
    ran: int = 0
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # syscall -> cases not run
    errors: list[str] = field(default_factory=list)
    boots: int = 0
    damaged: int = 0  # lines that looked like ours and did not check out
    observed: dict[str, dict[str, str]] = field(default_factory=dict)  # --case runs: case -> its result line
    seconds: float = 0.0

    def add(self, f: Finding) -> None:
        k = (f.syscall, f.cls)
        old = self.findings.get(k)
        if old is None:
            self.findings[k] = f
        else:
            old.count += f.count
            if f.index < old.index:
                f.count = old.count
                self.findings[k] = f

    def merge(self, other: "Result") -> None:
        self.total += other.total
        self.ran += other.ran
        for f in other.findings.values():
            self.add(f)
        for s, n in other.skipped.items():
            self.skipped[s] = self.skipped.get(s, 0) + n
        self.errors += other.errors
        self.boots += other.boots
        self.damaged += other.damaged


class _Reader:
    """Reads one stream of prober lines into a Result."""

    def __init__(self, result: Result, progress: Callable[[int], None] | None) -> None:
        self.result = result
        self.progress = progress
        self.next_index = -1  # the prober's "next" from its last progress line
        self.tracing = -1  # the last announced case under --trace
        self.ended = False
        self.hello = False
        self._last: Finding | None = None
        self._summaries: dict[tuple[str, str], int] = {}

    def feed(self, text: str) -> None:
        line = protocol.parse(text)
        if line is None:
            if protocol.damaged(text):
                self.result.damaged += 1
            return
        t = line.type
        if t == "hello":
            self.hello = True
            self.result.total = max(self.result.total, line.int("total", line.int("cases")))
        elif t == "progress":
            self.next_index = line.int("next", self.next_index)
            if self.progress:
                self.progress(line.int("ran"))
        elif t == "result":
            self.result.observed[line.get("case")] = dict(line.fields)
        elif t == "run":
            self.tracing = line.int("index", -1)
        elif t == "finding":
            case = line.get("case")
            f = Finding(case.split(":", 1)[0], line.get("class"), case, line.int("index"),
                        {k: v for k, v in line.fields.items() if k not in ("class", "case", "index")})
            self.result.add(f)
            self._last = f
        elif t == "stack" and self._last is not None:
            self._last.stack.append(" ".join(line.words) or line.get("line"))
        elif t == "summary":
            self._summaries[(line.get("syscall"), line.get("class"))] = line.int("count")
        elif t == "skip":
            self.result.skipped[line.get("syscall")] = self.result.skipped.get(line.get("syscall"), 0) + \
                line.int("cases")
        elif t == "error":
            self.result.errors.append(" ".join(f"{k}={v}" for k, v in line.fields.items()) or " ".join(line.words))
        elif t == "end":
            self.ended = True
            self.result.ran += line.int("ran")

    def finish(self) -> None:
        """Counts past the prober's line cap come from its summaries."""
        for (syscall, cls), count in self._summaries.items():
            f = self.result.findings.get((syscall, cls))
            if f is not None and count > f.count:
                f.count = count


def run_host(prober: Path, args: list[str], workdir: Path, timeout_s: float = 1800) -> Result:
    """The same cases on the host's own kernel, natively."""
    result = Result("host")
    reader = _Reader(result, None)
    workdir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="copyfuzz-host-", dir=_host_tmpfs()) as d:
        proc = procs.popen([str(prober), *args, "--dir", d], new_session=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        timer = threading.Timer(timeout_s, procs.kill_group, (proc,))
        timer.start()
        try:
            assert proc.stdout is not None
            for raw in proc.stdout:
                reader.feed(raw.decode(errors="replace"))
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            code = proc.wait()
        finally:
            timer.cancel()
            procs.kill_group(proc)
    reader.finish()
    if code != 0 or not reader.ended:
        raise CopyfuzzError(f"the host prober failed (exit {code})", details=err[-2000:])
    return result


def _host_tmpfs() -> str | None:
    """Files on tmpfs, as in the VM: /dev/shm where there is one."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def run_vm(kernel: Kernel, prober: bytes, args: list[str], workdir: Path, shard: tuple[int, int],
           progress: Callable[[int], None] | None, cpu: str | None = None, idle_s: float = 60.0) -> Result:
    """One shard on the booted kernel, boot after boot until its cases are done."""
    result = Result("vm")
    start = 0
    failures_at: dict[int, int] = {}
    j, n = shard
    tag = f"{kernel.arch.name}-{j}of{n}"
    while True:
        if result.boots >= MAX_BOOTS:
            result.errors.append(f"gave up after {MAX_BOOTS} boots")
            return result
        trace = failures_at.get(start, 0) >= 1
        boot_args = [*args, "--shard", f"{j}/{n}", "--start", str(start)] + (["--trace"] if trace else [])
        initrd = workdir / f"initrd-{tag}.cpio"
        initramfs.write(initrd, {"init": (prober, True), "cf-args": ("\n".join(boot_args) + "\n").encode()})
        reader = _Reader(result, progress)
        result.boots += 1
        why = ""
        with VM(kernel, initrd, workdir / f"console-{tag}.log", cpu) as machine:
            try:
                for text in machine.lines(idle_s if reader.hello else BOOT_S):
                    reader.feed(text)
                    if reader.ended:
                        break
            except Stalled as e:
                why = str(e)
            tail = machine.last_lines()
        reader.finish()
        if reader.ended:
            return result
        if not reader.hello:
            raise CopyfuzzError(f"the {kernel.arch.name} kernel did not boot to the prober "
                                f"({why or 'qemu ended'}); console: {workdir / f'console-{tag}.log'}",
                                details=tail)
        if trace and reader.tracing >= 0:
            result.add(Finding(_syscall_of(reader, result), "panic", f"index={reader.tracing}", reader.tracing,
                               {"why": why or "the kernel died", "console": tail[-400:]}))
            start = reader.tracing + 1
            continue
        resume = max(reader.next_index, start)
        failures_at[resume] = failures_at.get(resume, 0) + 1
        start = resume


def _syscall_of(reader: _Reader, result: Result) -> str:
    return "?"
