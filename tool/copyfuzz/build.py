"""Finding the tools and building executors through the Makefile.

The Makefile is the one place that knows how to build; this module only checks that
its tools exist (so a missing one gets one line naming the fix, not a make error) and
runs `make -s <targets>` at the repository root.
"""

from __future__ import annotations

import os
import platform
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import CopyfuzzError

if TYPE_CHECKING:
    from .routines import Routine

DEFAULT_CROSS_COMPILE = "riscv64-linux-gnu-"
DEFAULT_QEMU = "qemu-riscv64"
INSTALL_HINT = "run 'make deps' to install it (qemu-user, gcc-riscv64-linux-gnu, ...)"


def cross_compile() -> str:
    return os.environ.get("CROSS_COMPILE", DEFAULT_CROSS_COMPILE)


def qemu_command(xlen: int = 64) -> list[str]:
    # QEMU may carry options, e.g. "qemu-riscv64 -cpu rv64,v=true"; it names the
    # emulator for the XLEN being run, as in the Makefile (QEMU ?= qemu-riscv$(XLEN)).
    default = f"qemu-riscv{xlen}"
    return shlex.split(os.environ.get("QEMU", default)) or [default]


def native(xlen: int = 64) -> bool:
    """riscv64 hosts run RV64 executors directly; RV32 ones still go through QEMU."""
    return platform.machine() == "riscv64" and xlen == 64


def run_prefix(xlen: int = 64) -> list[str]:
    """What goes before an executor's path on the command line."""
    return [] if native(xlen) else qemu_command(xlen)


def required_tools(xlen: int = 64) -> list[str]:
    tools = ["make", f"{cross_compile()}gcc"]
    if not native(xlen):
        tools.append(qemu_command(xlen)[0])
    return tools


def check_tools(tools: list[str] | None = None, xlen: int = 64) -> None:
    for tool in tools if tools is not None else required_tools(xlen):
        if shutil.which(tool) is None:
            raise CopyfuzzError(f"'{tool}' not found: {INSTALL_HINT}")


def check_runner(xlen: int = 64) -> None:
    """Enough to run an already-built executor."""
    if not native(xlen):
        check_tools([qemu_command(xlen)[0]])


def build(root: Path, targets: list[str], xlen: int = 64) -> None:
    """make -s the targets; on failure, make's own output is the message's details."""
    if not targets:
        return
    check_tools(xlen=xlen)
    try:
        proc = subprocess.run(
            ["make", "-s", *targets],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except OSError as e:
        raise CopyfuzzError(f"cannot run make: {e.strerror}") from e
    if proc.returncode != 0:
        shown = " ".join(targets) if len(targets) <= 4 else f"{len(targets)} executors"
        raise CopyfuzzError(
            f"build failed (make -s {shown}, exit {proc.returncode})",
            details=proc.stdout.rstrip(),
        )


def build_routines(root: Path, routines: "list[Routine]") -> None:
    """Build every routine's executor: bundled ones in one make per XLEN, files from
    outside the tree (copyfuzz check) one make each, as each has its own variables."""
    by_xlen: dict[int, list[str]] = {}
    for r in routines:
        if r.external_elf:
            build(root, r.make_args, r.xlen)
        else:
            by_xlen.setdefault(r.xlen, []).append(r.elf)
    for xlen, elfs in by_xlen.items():
        build(root, [f"XLEN={xlen}", *elfs], xlen)
