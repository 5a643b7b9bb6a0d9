"""`copyfuzz kernel sweep` from options to exit status: the kernel (built or cached), the
probers (make), the VMs (one per --jobs, each a shard of the cases) and the host beside
them, then the report (report.py) and the reproducers.

`sweep_cases` is the part `copyfuzz confirm` shares: given a kernel and prober
arguments, the merged VM result and the host's.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from .. import build as mk
from .. import files, known, paths, targets
from ..errors import CopyfuzzError
from ..options import KernelSweepOptions
from . import build as kbuild
from . import inputs, report
from . import vm as kvm
from .sweep import Result, run_host, run_vm

PROBER_OPTIONS = ("syscalls", "max_len", "sizes", "koffs", "segs", "prots", "timeout", "hang_budget")


def prober_args(opts: KernelSweepOptions) -> list[str]:
    out: list[str] = []
    for name in PROBER_OPTIONS:
        value = getattr(opts, name)  # a field of the options, by the prober's option name
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


def arch_defaults(opts: KernelSweepOptions, arch: targets.Arch) -> tuple[list[str], list[str]]:
    """The prober arguments an architecture's default sweep adds where the user gave none
    (targets.KernelBoot.sweep_max_len), and the notes that say so in the report."""
    boot = arch.kernel
    if boot is None or boot.sweep_max_len is None or opts.max_len is not None:
        return [], []
    return (["--max-len", str(boot.sweep_max_len)],
            [f"--max-len {boot.sweep_max_len}: {arch.name}'s default, not 256: {boot.sweep_max_len_why}; "
             f"--max-len 256 for the full sweep"])


def probers(root: Path, arch: targets.Arch) -> tuple[Path, Path]:
    """The prober cross-built for the kernel's architecture, and the host's (make)."""
    vm = paths.build_dir(root) / "kernel" / f"prober-{arch.name}"
    host = paths.build_dir(root) / "host" / "prober"
    rel_vm = paths.build_dir(paths.REL) / "kernel" / f"prober-{arch.name}"
    rel_host = paths.build_dir(paths.REL) / "host" / "prober"
    mk.build(root, [str(rel_vm), str(rel_host)], arch.widths[0], arch.name)
    return vm, host


KEEP_RUNS = 20  # the newest run directories of ended runs kept (their console logs)


def run_dir(root: Path, arch: targets.Arch) -> Path:
    """This run's own directory (initramfs images, console logs): concurrent runs never share
    one. Ended runs' directories beyond the newest KEEP_RUNS are removed."""
    runs = kbuild.kernel_dir(root) / "runs"
    ended = []
    for old in runs.glob("*-*-*") if runs.is_dir() else []:
        try:
            pid = int(old.name.split("-")[1])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError):
            ended.append(old)
        except PermissionError:
            pass
    for old in sorted(ended, key=lambda d: d.stat().st_mtime, reverse=True)[KEEP_RUNS:]:
        shutil.rmtree(old, ignore_errors=True)
    d = runs / f"{arch.name}-{os.getpid()}-{secrets.token_hex(3)}"
    d.mkdir(parents=True)
    return d


class Progress:
    """One status line on a terminal: cases done across the VMs, and the rate."""

    def __init__(self, arch: str, total: int) -> None:
        self.tty = sys.stderr.isatty()
        self.arch, self.total = arch, total
        self.done: dict[int, int] = {}
        self.started = self.last = time.monotonic()
        self.lock = threading.Lock()

    def shard(self, j: int) -> Callable[[int], None]:
        def update(ran: int) -> None:
            with self.lock:
                self.done[j] = ran
                now = time.monotonic()
                if now - self.last < (0.5 if self.tty else 30):
                    return
                self.last = now
                n = sum(self.done.values())
                rate = n / max(now - self.started, 1e-3)
                text = f"copyfuzz: {self.arch} kernel: {n:,}/{self.total:,} cases, {rate:,.0f}/s"
                print(("\r" + text) if self.tty else text, end="" if self.tty else "\n", file=sys.stderr,
                      flush=True)
        return update

    def close(self) -> None:
        if self.tty and self.done:
            print(file=sys.stderr)


def sweep_cases(root: Path, kernel: kbuild.Kernel, pargs: list[str], jobs: int, cpu: str | None,
                host: bool, timeout: float) -> tuple[Result, Result | None, Path]:
    """The cases on the booted kernel (jobs VMs) and, with host, on this machine's kernel."""
    vm_prober, host_prober = probers(root, kernel.arch)
    workdir = run_dir(root, kernel.arch)
    total = report.count_cases(host_prober, pargs)
    if total == 0:
        raise CopyfuzzError(f"no cases: the options select none ({' '.join(pargs) or 'defaults'})")
    progress = Progress(kernel.arch.name, total)
    prober = vm_prober.read_bytes()
    results: list[Result | BaseException | None] = [None] * jobs
    host_result: list[Result | BaseException | None] = [None]
    idle = max(60.0, timeout * 4 + 30)

    def shard(j: int) -> None:
        try:
            results[j] = run_vm(kernel, prober, pargs, workdir, (j, jobs), progress.shard(j), cpu, idle)
        except BaseException as e:  # re-raised in the main thread
            results[j] = e

    def on_host() -> None:
        try:
            host_result[0] = run_host(host_prober, pargs, workdir)
        except BaseException as e:
            host_result[0] = e

    threads = [threading.Thread(target=shard, args=(j,), daemon=True) for j in range(jobs)]
    if host:
        threads.append(threading.Thread(target=on_host, daemon=True))
    started = time.monotonic()
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.2)
    finally:
        progress.close()
    merged = Result("vm")
    for r in results:
        if isinstance(r, BaseException):
            raise r
        assert r is not None
        merged.merge(r)
    merged.total = total
    merged.seconds = time.monotonic() - started
    for f in (workdir.glob("initrd-*.cpio")):
        f.unlink(missing_ok=True)
    h = host_result[0]
    if isinstance(h, BaseException):
        raise h
    return merged, h, workdir


def run_sweep(root: Path, opts: KernelSweepOptions) -> int:
    baseline = known.from_options(opts.known, report.CLASSES)
    known.check_output(opts.known)
    if not 0 < opts.timeout <= 3600:  # NaN fails too
        raise CopyfuzzError(f"--timeout {opts.timeout}: must be in (0, 3600] seconds")
    files.check_dir(opts.findings, "--findings")
    kbuild.ensure_packages(root)
    arch = targets.get(opts.build.arch)
    extra, notes = arch_defaults(opts, arch)
    pargs = prober_args(opts) + extra
    # The prober's own word on its options (and on how many cases they make), before a build.
    _, host_prober = probers(root, arch)
    if report.count_cases(host_prober, pargs) == 0:
        raise CopyfuzzError(f"no cases: the options select none ({' '.join(pargs)})")
    if opts.cpu:
        kvm.check_cpu(arch, opts.cpu)
    req = inputs.request(root, opts.build)
    kernel = kbuild.build(root, req)
    vm, host, workdir = sweep_cases(root, kernel, pargs, opts.jobs, opts.cpu, not opts.no_host, opts.timeout)
    out = report.Report(kernel, vm, host, workdir, opts.findings, baseline, pargs, notes)
    out.write_reproducers()
    if opts.known.write_known is not None:
        out.write_known(opts.known.write_known)
    if opts.json:
        out.print_json()
    else:
        out.print_table()
    return out.exit_status()
