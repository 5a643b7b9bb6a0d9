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
from typing import TYPE_CHECKING, Callable

from . import checkfile, paths
from .errors import CopyfuzzError

if TYPE_CHECKING:
    from .routines import Routine

DEFAULT_CROSS_COMPILE = "riscv64-linux-gnu-"
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


def routine_prefix(r: "Routine") -> list[str]:
    """What goes before a routine's executor: QEMU with the -cpu of its ISA (isa.py)."""
    if native(r.xlen):
        return []
    cpu = r.qemu_cpu
    return qemu_command(r.xlen) + (["-cpu", cpu] if cpu else [])


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


def _run(root: Path, argv: list[str], what: str, env: dict[str, str] | None = None,
         on_status: "dict[int, Callable[[str], CopyfuzzError]] | None" = None) -> str:
    """Run a build step at the repository root; on failure, its output is the details
    (or, for an exit status in on_status, the error that function makes of the output)."""
    try:
        proc = subprocess.run(argv, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as e:
        raise CopyfuzzError(f"cannot run {argv[0]}: {e.strerror}") from e
    if on_status and proc.returncode in on_status:
        raise on_status[proc.returncode](proc.stdout)
    if proc.returncode != 0:
        raise CopyfuzzError(f"build failed ({what}, exit {proc.returncode})", details=proc.stdout.rstrip())
    return proc.stdout


def build(root: Path, targets: list[str], xlen: int = 64) -> None:
    """make -s the targets; on failure, make's own output is the message's details."""
    if not targets:
        return
    check_tools(xlen=xlen)
    shown = " ".join(targets) if len(targets) <= 4 else f"{len(targets)} executors"
    _run(root, ["make", "-s", *paths.make_vars(root), *targets], f"make -s {shown}")


def link_env(root: Path, xlen: int) -> dict[str, str]:
    """The environment harness/link-executor.sh runs in (the toolchain, from the Makefile:
    `make link-env`, which also builds the harness object)."""
    check_tools(xlen=xlen)
    out = _run(root, ["make", "-s", *paths.make_vars(root), f"XLEN={xlen}", "link-env"],
               f"make -s XLEN={xlen} link-env")
    env = dict(os.environ)
    for line in out.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.startswith("CF_LINK_"):
            env[name] = value
    return env


def link_external(root: Path, r: "Routine", env: dict[str, str]) -> None:
    """Link a file from outside the tree with the one link recipe, every name an argument:
    nothing in a path reaches make's parser or a shell. A file that does not build is
    explained (where its includes come from); one that builds but is not this routine
    (exit 3: a missing or data symbol, undefined references) gets the recipe's one line."""
    assert r.external_elf is not None
    harness = paths.harness_object(paths.REL, r.xlen)  # check builds are riscv (checkfile.py)
    try:
        _run(root, ["bash", "harness/link-executor.sh", *r.link_args, "--", str(harness), str(r.path),
                    r.external_elf, r.name, r.symbol, r.kind, *r.asflags],
             f"harness/link-executor.sh {r.path.name}", env,
             on_status={3: lambda out: checkfile.explain_link_failure(out, r)})
    except CopyfuzzError as e:
        if e.details:  # the recipe's own output: the file did not build
            raise checkfile.explain_build_failure(e, Path(r.name.rpartition(":")[0])) from e
        raise


def build_routines(root: Path, routines: "list[Routine]") -> None:
    """Build every routine's executor: bundled ones in one make per XLEN, files from
    outside the tree (copyfuzz check) by harness/link-executor.sh, after one make per XLEN
    for the harness and the toolchain."""
    by_xlen: dict[int, list[str]] = {}
    envs: dict[int, dict[str, str]] = {}
    for r in routines:
        if r.external_elf:
            if r.xlen not in envs:
                envs[r.xlen] = link_env(root, r.xlen)
            link_external(root, r, envs[r.xlen])
        else:
            by_xlen.setdefault(r.xlen, []).append(r.elf)
    for xlen, elfs in by_xlen.items():
        build(root, [f"XLEN={xlen}", *elfs], xlen)
