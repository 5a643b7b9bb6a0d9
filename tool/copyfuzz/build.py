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

from .errors import CopyfuzzError

DEFAULT_CROSS_COMPILE = "riscv64-linux-gnu-"
DEFAULT_QEMU = "qemu-riscv64"
INSTALL_HINT = "run 'make deps' to install it (qemu-user, gcc-riscv64-linux-gnu, ...)"


def native() -> bool:
    """Executors run directly on a riscv64 host, under QEMU elsewhere."""
    return platform.machine() == "riscv64"


def cross_compile() -> str:
    return os.environ.get("CROSS_COMPILE", DEFAULT_CROSS_COMPILE)


def qemu_command() -> list[str]:
    # QEMU may carry options, e.g. "qemu-riscv64 -cpu rv64,v=true".
    return shlex.split(os.environ.get("QEMU", DEFAULT_QEMU)) or [DEFAULT_QEMU]


def run_prefix() -> list[str]:
    """What goes before an executor's path on the command line."""
    return [] if native() else qemu_command()


def required_tools() -> list[str]:
    tools = ["make", f"{cross_compile()}gcc"]
    if not native():
        tools.append(qemu_command()[0])
    return tools


def check_tools(tools: list[str] | None = None) -> None:
    for tool in tools if tools is not None else required_tools():
        if shutil.which(tool) is None:
            raise CopyfuzzError(f"'{tool}' not found: {INSTALL_HINT}")


def check_runner() -> None:
    """Enough to run an already-built executor."""
    if not native():
        check_tools([qemu_command()[0]])


def build(root: Path, targets: list[str]) -> None:
    """make -s the targets; on failure, make's own output is the message's details."""
    if not targets:
        return
    check_tools()
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
        shown = " ".join(targets) if len(targets) <= 3 else f"{len(targets)} executors"
        raise CopyfuzzError(
            f"build failed (make -s {shown}, exit {proc.returncode})",
            details=proc.stdout.rstrip(),
        )
