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
from . import casedef, initramfs
from .build import Kernel
from .vm import VM, Stalled

BOOT_S = 120.0  # hello within this, or the kernel did not boot
MAX_BOOTS = 64  # per shard: a kernel that dies this often is reported, not retried forever
PANIC_SIGNS = ("Kernel panic", "Oops", "Unable to handle kernel", "BUG:", "Internal error")


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
    notes: list[str] = field(default_factory=list)  # what happened that the report should say
    boots: int = 0
    damaged: int = 0  # lines that looked like ours and did not check out
    observed: dict[str, dict[str, str]] = field(default_factory=dict)  # --case runs: case -> its result line
    by_case: dict[str, list[Finding]] = field(default_factory=dict)  # every finding line, by its case
    seconds: float = 0.0

    def add(self, f: Finding) -> None:
        self.by_case.setdefault(f.case, []).append(f)
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
        for case, found in other.by_case.items():
            mine = self.by_case.setdefault(case, [])
            mine += [f for f in found if f not in mine]
        self.observed.update(other.observed)
        for s, n in other.skipped.items():
            self.skipped[s] = self.skipped.get(s, 0) + n
        self.errors += other.errors
        self.notes += other.notes
        self.boots += other.boots
        self.damaged += other.damaged


class _Reader:
    """Reads one stream of prober lines (casedef.parse_line) into a Result."""

    def __init__(self, result: Result, progress: Callable[[int], None] | None) -> None:
        self.result = result
        self.progress = progress
        self.base = result.ran  # cases earlier boots ran
        self.next_index = -1  # where the prober would go on: progress, skip and error lines
        self.tracing: tuple[int, str] | None = None  # the last case announced under --trace
        self.status = ""  # the end line's: complete, unkillable, interrupted, error
        self.last_run = 0  # cases this boot had run at its last progress line
        self.hello = False
        self._last: Finding | None = None
        self._summaries: dict[tuple[str, str], int] = {}

    def feed(self, text: str) -> None:
        line = casedef.parse_line(text)
        if line is None:
            if "CF " in text:
                self.result.damaged += 1
            return
        t, f = line.type, line.fields
        if t == "hello":
            self.hello = True
        elif t == "progress":
            self.next_index = _int(f, "next", self.next_index)
            self.last_run = _int(f, "run", self.last_run)
            if self.progress:
                self.progress(self.base + self.last_run)
        elif t == "run":
            self.tracing = (_int(f, "index"), f.get("case", ""))
        elif t == "result":
            self.result.observed[f.get("case", "")] = dict(f)
        elif t == "finding":
            case = f.get("case", "")
            found = Finding(case.split(":", 1)[0], f.get("class", "?"), case, _int(f, "index"),
                            {k: v for k, v in f.items() if k not in ("class", "case", "index")})
            self.result.add(found)
            self._last = found
        elif t == "stack" and self._last is not None:
            for key in ("line", "wchan", "error"):
                if key in f:
                    self._last.stack.append(f[key] if key == "line" else f"{key}: {f[key]}")
        elif t == "summary":
            self._summaries[(f.get("syscall", ""), f.get("class", ""))] = _int(f, "count")
        elif t == "skip":
            s = f.get("syscall", "?")
            self.result.skipped[s] = self.result.skipped.get(s, 0) + _int(f, "cases")
        elif t == "error":
            self.next_index = _int(f, "next", self.next_index)
            if f.get("kind") != "unkillable":  # that one is the host's to act on: a new boot
                self.result.errors.append(" ".join(f"{k}={v}" for k, v in f.items()))
        elif t == "kmsg" and self.result.errors:  # the kernel's log after a worker died
            self.result.errors[-1] += "\n    kernel: " + f.get("line", "")
        elif t == "end":
            self.status = f.get("status", "?")
            self.result.ran = self.base + _int(f, "run")

    def finish(self) -> None:
        """Counts past the prober's line cap come from its summaries."""
        for (syscall, cls), count in self._summaries.items():
            found = self.result.findings.get((syscall, cls))
            if found is not None and count > found.count:
                found.count = count


def _int(fields: dict[str, str], key: str, default: int = 0) -> int:
    try:
        return int(fields[key])
    except (KeyError, ValueError):
        return default


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
    if code not in (0, 1) or reader.status != "complete":
        raise CopyfuzzError(f"the host prober failed (exit {code}, {reader.status or 'no end line'})",
                            details=err[-2000:])
    return result


def _host_tmpfs() -> str | None:
    """Files on tmpfs, as in the VM: /dev/shm where there is one."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def run_vm(kernel: Kernel, prober: bytes, args: list[str], workdir: Path, shard: tuple[int, int],
           progress: Callable[[int], None] | None, cpu: str | None = None, idle_s: float = 60.0) -> Result:
    """One shard on the booted kernel, boot after boot until its cases are done."""
    result = Result("vm")
    start = 0
    early_ends: dict[int, int] = {}  # start index -> boots that ended early from there
    j, n = shard
    tag = f"{kernel.arch.name}-{j}of{n}"
    console = workdir / f"console-{tag}.log"
    while True:
        if result.boots >= MAX_BOOTS:
            result.errors.append(f"gave up after {MAX_BOOTS} boots (console: {console})")
            return result
        trace = early_ends.get(start, 0) >= 1
        boot_args = [*args, "--shard", f"{j}/{n}", "--start", str(start)] + (["--trace"] if trace else [])
        initrd = workdir / f"initrd-{tag}.cpio"
        initramfs.write(initrd, {"init": (prober, True), "cf-args": (("\n".join(boot_args) + "\n").encode(), False)})
        reader = _Reader(result, progress)
        result.boots += 1
        why = ""
        with VM(kernel, initrd, console, cpu) as machine:
            try:
                for text in machine.lines(idle_s, BOOT_S):
                    reader.feed(text)
                    if reader.status:
                        break
            except Stalled as e:
                why = str(e)
            tail = machine.last_lines()
        exit_code = machine.exit_code
        reader.finish()
        if reader.status == "complete":
            return result
        result.ran = reader.base + reader.last_run  # what the boot had done when it ended early
        if not reader.hello and result.errors:
            raise CopyfuzzError(f"the prober in the {kernel.arch.name} kernel stopped: {result.errors[-1]}; "
                                f"console: {console}", details=tail)
        if not reader.hello and result.boots == 1:
            # Once, under qemu-system-riscv64 with a second VM beside it, a kernel that the
            # other shard booted printed nothing after the firmware for 120 s: boot once more
            # before calling it a kernel that does not boot, and say so.
            result.notes.append(f"shard {j + 1} of {n}: the {kernel.arch.name} kernel did not reach the prober "
                                f"({why or 'qemu ended'}); booted it again")
            continue
        if not reader.hello:
            raise CopyfuzzError(f"the {kernel.arch.name} kernel did not boot to the prober "
                                f"({why or 'qemu ended'}); console: {console}", details=tail)
        if reader.status == "unkillable":  # a hung task that SIGKILL does not end: a new boot
            start = max(reader.next_index, start + 1)
            continue
        if reader.status:  # interrupted, error: the prober said why
            result.errors.append(f"the prober ended: {reader.status} (console: {console})")
            return result
        if exit_code is not None and exit_code < 0 and not why:
            raise CopyfuzzError(f"{machine.argv[0]} was killed (signal {-exit_code}) from outside: the sweep "
                                f"of the {kernel.arch.name} kernel stopped; console: {console}")
        # The kernel died or went quiet mid-sweep. The first time, boot again from where it
        # was; the second time from the same place, --trace names the case it dies in. Only a
        # console that shows the kernel's own death makes that a finding.
        if trace and reader.tracing is not None:
            index, case = reader.tracing
            if any(sign in tail for sign in PANIC_SIGNS):
                result.add(Finding(case.split(":", 1)[0], "panic", case, index,
                                   {"why": why or "the kernel died", "console": tail[-600:]}))
            else:
                result.errors.append(f"the VM ended twice in {case} without a kernel panic on its console "
                                     f"({why or f'qemu exit {exit_code}'}; console: {console})")
            start = index + 1
            continue
        resume = max(reader.next_index, start)
        early_ends[resume] = early_ends.get(resume, 0) + 1
        if early_ends[resume] > 2:
            result.errors.append(f"the kernel keeps dying from case {resume} on (console: {console})")
            return result
        start = resume
