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
import os
from pathlib import Path
from typing import Any

from .kernel import build as kbuild
from .kernel import inputs, runner


def run_kernel(root: Path, args: argparse.Namespace) -> int:
    inputs.check(root, args)
    if args.kernel_command == "build":
        return _run_build(root, args)
    return runner.run_sweep(root, args)


def _run_build(root: Path, args: argparse.Namespace) -> int:
    kbuild.ensure_packages(root)
    req = inputs.request(root, args, jobs=args.jobs)
    kernel = kbuild.build(root, req)
    info = {"arch": kernel.arch.name, "kernel": kernel.label, "image": str(kernel.image),
            "config": str(kernel.config), "log": str(kernel.log), "key": kernel.key, "cached": kernel.cached}
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        print(f"{kernel.arch.name} kernel: {kernel.label}")
        print(f"  {'cached' if kernel.cached else 'built'}: {kernel.image}")
        print(f"  config: {kernel.config}")
    return 0


def add_parsers(sub: "argparse._SubParsersAction[Any]",
                int_in: "runner.IntParser") -> None:
    kp = sub.add_parser("kernel", help="build a small kernel, boot it under qemu-system, sweep the syscalls that copy",
                        description="The booted kernel's truth (docs/kernel-sweep.md).")
    ks = kp.add_subparsers(dest="kernel_command", metavar="SUBCOMMAND")
    ks.required = True
    kb = ks.add_parser("build", help="build (or find in the cache) a small bootable kernel",
                       epilog="exit status: 0 built or cached, 2 bad input or a build error")
    inputs.add_build_options(kb)
    kb.add_argument("--jobs", type=int_in(1, 1024), default=os.cpu_count() or 1, metavar="N",
                    help="make -jN (default: number of CPUs)")
    kb.add_argument("--json", action="store_true", help="machine-readable output")
    sw = ks.add_parser("sweep", help="boot the kernel and sweep the syscalls that copy, the host's kernel beside it",
                       epilog="exit status: 0 clean, 1 findings, 2 bad input, a build error or a kernel "
                              "that does not boot")
    inputs.add_build_options(sw)
    runner.add_sweep_options(sw, int_in)
    from . import cmd_confirm
    cmd_confirm.add_parser(sub, int_in)
