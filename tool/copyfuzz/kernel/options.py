"""The kernel and confirm commands' options, apart from the code that runs them: the
command line is parsed on every start, and these need none of the kernel modules (the
build, the VMs, the report) that `copyfuzz kernel` and `copyfuzz confirm` import on use."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any, Callable

from .. import records, targets

IntParser = Callable[[int, int], Callable[[str], int]]
KERNEL_ARCHES = tuple(a.name for a in targets.ARCHES.values() if a.kernel)

CONFIRM_ABOUT = """\
SPEC is a case of a kernel file's copy routine (`FILE.S:SYMBOL:n=...`, or a .spec file
from sweep, check, fuzz or history). The kernel is built with FILE in its place (its path
in the tree from its own `arch/<arch>/...` path, or --as), the syscalls that drive the
routine with the same n, alignments and fault position run on it (kernel/confirm.py), and
each says what it did. Exit 1 when one shows a finding ("confirmed"), 0 when none does,
2 on bad input, a build error or a kernel that does not boot.
"""


def add_build_options(p: argparse.ArgumentParser, arch_default: str | None = "riscv",
                      arch_help: str = "default riscv") -> None:
    from . import source  # here: the command line is parsed on every start (cli.build_parser)

    p.add_argument("--arch", choices=KERNEL_ARCHES, default=arch_default,
                   help=f"the kernel's architecture: riscv (RV64), arm64 or arm (32-bit ARMv7); {arch_help}")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--source", choices=source.DEBIAN_VERSIONS, default=source.DEBIAN_VERSIONS[0],
                     help="Debian's linux-source-VERSION (installed on first use; default "
                          f"{source.DEBIAN_VERSIONS[0]})")
    src.add_argument("--tree", type=Path, metavar="DIR",
                     help="your own kernel tree (read only: the build goes to copyfuzz's build directory)")
    p.add_argument("--replace", action="append", default=[], metavar="PATH=FILE",
                   help="build with FILE in place of the tree's PATH, e.g. arch/riscv/lib/uaccess.S=fix.S "
                        "(repeatable; the tree is not touched)")
    p.add_argument("--config", type=Path, metavar="FRAGMENT",
                   help="extra kconfig lines (CONFIG_X=y ...) applied after copyfuzz's own")


def add_sweep_options(p: argparse.ArgumentParser, int_in: IntParser) -> None:
    from . import casedef

    p.add_argument("--syscalls", metavar="LIST",
                   help="which syscalls, comma-separated (default all: docs/kernel-sweep.md lists them)")
    p.add_argument("--max-len", type=int_in(0, 65536), metavar="L",
                   help="every n up to L with every accessible count 0..n (default 256" + "".join(
                       f"; {a.kernel.sweep_max_len} on {a.name}" for a in targets.ARCHES.values()
                       if a.kernel and a.kernel.sweep_max_len) + ": docs/kernel-sweep.md)")
    for axis in casedef.definition().axes:
        if axis.name in ("sizes", "koffs", "segs", "prots"):
            p.add_argument(f"--{axis.name}", metavar="LIST", help=f"{axis.meaning} (default {axis.default})")
    p.add_argument("--timeout", type=float, default=2.0, metavar="S",
                   help="a call that has not returned after S seconds is a hang (default 2)")
    p.add_argument("--hang-budget", type=int_in(1, 100000), metavar="H",
                   help="after H hangs of one syscall its other cases are skipped, and said so (default 3)")
    p.add_argument("--jobs", type=int_in(1, 64), default=os.cpu_count() or 1, metavar="N",
                   help="VMs at once, each sweeping a share of the cases (default: number of CPUs)")
    p.add_argument("--cpu", metavar="MODEL", help="qemu-system's -cpu (default: the architecture's)")
    p.add_argument("--no-host", action="store_true", help="skip the host kernel's reference column")
    p.add_argument("--findings", type=Path, default=Path("findings"), metavar="DIR",
                   help="where reproducers are written: DIR/kernel/<arch>-<kernel>/ (default findings/)")
    p.add_argument("--known", type=Path, metavar="FILE",
                   help="accepted findings, 'CLASS * kernel:SYSCALL' a line: shown as known, not exit 1")
    p.add_argument("--write-known", type=Path, metavar="FILE", help="write the run's findings in the --known format")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_parsers(sub: "argparse._SubParsersAction[Any]", int_in: IntParser, command: str | None = None) -> None:
    """The kernel and confirm commands; with `command`, the options of that one only (the
    other is listed with its help: cli.build_parser)."""
    kp = sub.add_parser("kernel", help="build a small kernel, boot it under qemu-system, sweep the syscalls that copy",
                        description="The booted kernel's truth (docs/kernel-sweep.md).")
    if command in (None, "kernel"):
        _add_kernel_commands(kp, int_in)
    add_confirm_parser(sub, int_in, command in (None, "confirm"))


def _add_kernel_commands(kp: argparse.ArgumentParser, int_in: IntParser) -> None:
    ks = kp.add_subparsers(dest="kernel_command", metavar="SUBCOMMAND")
    ks.required = True
    kb = ks.add_parser("build", help="build (or find in the cache) a small bootable kernel",
                       epilog="exit status: 0 built or cached, 2 bad input or a build error")
    add_build_options(kb)
    kb.add_argument("--jobs", type=int_in(1, 1024), default=os.cpu_count() or 1, metavar="N",
                    help="make -jN (default: number of CPUs)")
    kb.add_argument("--json", action="store_true", help="machine-readable output")
    sw = ks.add_parser("sweep", help="boot the kernel and sweep the syscalls that copy, the host's kernel beside it",
                       epilog="exit status: 0 clean, 1 findings, 2 bad input, a build error or a kernel "
                              "that does not boot")
    add_build_options(sw)
    add_sweep_options(sw, int_in)


def add_confirm_parser(sub: "argparse._SubParsersAction[Any]", int_in: IntParser, options: bool = True) -> None:
    cf = sub.add_parser("confirm", help="run a routine-level finding as syscalls on a booted kernel",
                        description=CONFIRM_ABOUT,
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="exit status: 0 not reproduced at the syscall level, 1 confirmed, 2 bad input, "
                               "a build error or a kernel that does not boot")
    if not options:
        return
    cf.add_argument("spec", metavar="SPEC|FILE",
                    help="FILE.S:SYMBOL:n=N,src_off=..,src_fault=..,dst_off=..,dst_fault=.., or a .spec file")
    cf.add_argument("--kind", choices=records.USER_COPIES,
                    help="the routine's kind (default: from its name; the faulting side decides the direction)")
    cf.add_argument("--as", dest="tree_path", metavar="PATH",
                    help="where FILE.S goes in the kernel tree (default: from its path, .../arch/<arch>/...)")
    add_build_options(cf, None, "default: from the file's path")
    cf.add_argument("--timeout", type=float, default=2.0, metavar="S",
                    help="a call that has not returned after S seconds is a hang (default 2)")
    cf.add_argument("--cpu", metavar="MODEL", help="qemu-system's -cpu (default: the architecture's)")
    cf.add_argument("--no-host", action="store_true", help="skip the host kernel's reference column")
    cf.add_argument("--findings", type=Path, default=Path("findings"), metavar="DIR",
                    help="where reproducers are written (default findings/)")
    cf.add_argument("--json", action="store_true", help="machine-readable output")
