"""`copyfuzz kernel build` and `copyfuzz kernel sweep`: the booted kernel's truth.

build: a small kernel for --arch from Debian's source or --tree, with --replace and
--config, cached by its inputs (kernel/build.py). sweep: that kernel booted under
qemu-system with our prober as /init, the syscalls that copy swept at every fault
position, the same cases on the host's kernel beside it (kernel/sweep.py), a standalone
C reproducer per finding (kernel/reproducer.py). Exit 0 clean, 1 findings, 2 bad input,
a build error or a kernel that does not boot.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .kernel import build as kbuild
from .kernel import inputs, runner
from .options import KernelBuildOptions, KernelSweepOptions


def run_kernel(root: Path, args: argparse.Namespace) -> int:
    kernel = KernelBuildOptions.from_args(args)
    sweep = KernelSweepOptions.from_args(args) if args.kernel_command == "sweep" else None
    inputs.check(root, kernel)
    if sweep is None:
        return _run_build(root, kernel, args.jobs, args.json)
    return runner.run_sweep(root, sweep)


def _run_build(root: Path, opts: KernelBuildOptions, jobs: int, as_json: bool) -> int:
    kbuild.ensure_packages(root)
    req = inputs.request(root, opts, jobs=jobs)
    kernel = kbuild.build(root, req)
    info = {"arch": kernel.arch.name, "kernel": kernel.label, "image": str(kernel.image),
            "config": str(kernel.config), "log": str(kernel.log), "key": kernel.key, "cached": kernel.cached}
    if as_json:
        print(json.dumps(info, indent=1))
    else:
        print(f"{kernel.arch.name} kernel: {kernel.label}")
        print(f"  {'cached' if kernel.cached else 'built'}: {kernel.image}")
        print(f"  config: {kernel.config}")
    return 0
