"""The architectures copyfuzz builds and runs executors for: the tool's one home of what
is each architecture's own (the Makefile's is harness/arch/<arch>/target.mk, the
harness's the rest of harness/arch/<arch>/).

An architecture is the first component of a bundled routine's name (arch/<arch>/...).
Its register width is RISC-V's choice of RV64 or RV32 (--xlen); an architecture with one
width has only that one.
"""

from __future__ import annotations

import os
import platform
import shlex
from dataclasses import dataclass

from .errors import CopyfuzzError


@dataclass(frozen=True)
class KernelBoot:
    """How a Linux kernel of this architecture is built small and booted (copyfuzz kernel,
    tool/copyfuzz/kernel/): kbuild's ARCH, its cross compiler (64-bit where there is a
    choice), the image target, QEMU's system emulator and machine, the console."""

    make_arch: str
    cross_compile: str
    image: str  # the make target, under arch/<make_arch>/boot/
    qemu_system: str
    machine: tuple[str, ...]  # -M ... -cpu ... and firmware, before -kernel
    console: str  # the kernel's console= for the machine's first UART
    # The default sweep's --max-len where the prober's own (256) would not end within 5
    # minutes here, with the reason the report prints (docs/perf.md has the measurement).
    sweep_max_len: int | None = None
    sweep_max_len_why: str = ""


@dataclass(frozen=True)
class Arch:
    name: str  # arch/<name>/, harness/arch/<name>/, make's ARCH
    widths: tuple[int, ...]  # register widths it builds for, the default first
    cross_compile: str  # make's CROSS_COMPILE default (target.mk has the same)
    qemu: str  # the user-mode emulator, {xlen} replaced by the width (target.mk's QEMU)
    build_name: str  # $(O)/<this>: the build directory of a width ({xlen} replaced)
    machine: str  # platform.machine() of a host that runs its default width natively
    # The names of the bits of a result's regs_bad (records.h, enum cf_reg_bit): the
    # callee-saved set the trampoline checks, then sp, gp, tp and the return address
    # ("" where the architecture has no such register).
    regs: tuple[str, ...]
    env_suffix: str = ""  # CROSS_COMPILE<suffix> and QEMU<suffix> override the defaults
    mte: bool = False  # memory tagging: faults at 16-byte granules (--granule 16)
    kernel: KernelBoot | None = None  # booted-kernel sweeps (copyfuzz kernel)

    def runs_at(self, xlen: int | None) -> bool:
        """Does a run at --xlen xlen include this architecture's routines? None (no
        --xlen) takes every architecture."""
        return xlen is None or xlen in self.widths

    def width(self, xlen: int | None) -> int:
        """The width a run at --xlen xlen builds this architecture's routines for: the one
        asked for, which it must have; without --xlen (None), 64 if it has it, else its
        only one."""
        if xlen is None:
            return 64 if 64 in self.widths else self.widths[0]
        if self.runs_at(xlen):
            return xlen
        raise CopyfuzzError(f"--xlen {xlen}: {self.name} routines are {'/'.join(map(str, self.widths))}-bit only")

    def build_dir_name(self, xlen: int) -> str:
        return self.build_name.format(xlen=xlen)

    def cross(self) -> str:
        """CROSS_COMPILE for this architecture: the environment's (CROSS_COMPILE for RISC-V,
        CROSS_COMPILE_ARM64 for arm64, ...), else the default."""
        return os.environ.get(f"CROSS_COMPILE{self.env_suffix}") or self.cross_compile

    def qemu_command(self, xlen: int) -> list[str]:
        """QEMU may carry options, e.g. "qemu-riscv64 -cpu rv64,v=true" (QEMU for RISC-V,
        QEMU_ARM64 for arm64, ...)."""
        default = self.qemu.format(xlen=xlen)
        return shlex.split(os.environ.get(f"QEMU{self.env_suffix}", default)) or [default]

    def native(self, xlen: int) -> bool:
        """Does this host run the executors of this width directly (no QEMU)?"""
        return platform.machine() == self.machine and xlen == self.widths[0]

    def make_vars(self, xlen: int) -> list[str]:
        """What every make for this architecture and width gets: the target, always given,
        so that a CROSS_COMPILE meant for another architecture never reaches it."""
        return [f"ARCH={self.name}", f"XLEN={xlen}", f"CROSS_COMPILE={self.cross()}"]


# The kernels' CPUs: RISC-V with the vector extension (6.10+ copy user memory with it past
# a threshold), arm64's "max" (PAN, UAO, MTE ...; pauth-impdef keeps TCG fast).
RISCV = Arch("riscv", (64, 32), "riscv64-linux-gnu-", "qemu-riscv{xlen}", "riscv{xlen}", "riscv64",
             tuple(f"s{i}" for i in range(12)) + ("sp", "gp", "tp", "ra"),
             kernel=KernelBoot("riscv", "riscv64-linux-gnu-", "Image", "qemu-system-riscv64",
                               ("-M", "virt", "-cpu", "rv64,v=true,vlen=128,vext_spec=v1.0", "-bios", "default"),
                               "ttyS0"))
ARM64 = Arch("arm64", (64,), "aarch64-linux-gnu-", "qemu-aarch64", "arm64", "aarch64",
             tuple(f"x{i}" for i in range(19, 30)) + ("x18", "sp", "d8-d15", "tpidr_el0", "x30"), "_ARM64",
             mte=True,
             kernel=KernelBoot("arm64", "aarch64-linux-gnu-", "Image", "qemu-system-aarch64",
                               ("-M", "virt", "-cpu", "max,pauth-impdef=on"), "ttyAMA0"))

# 32-bit ARM: AAPCS's r4-r11 (bits 8-11 unused), sp, d8-d15 (in gp's bit), TPIDRURW; no return
# address check (ARM's copy template pops the return address straight into pc).
ARM = Arch("arm", (32,), "arm-linux-gnueabihf-", "qemu-arm", "arm", "armv7l",
           tuple(f"r{i}" for i in range(4, 12)) + ("", "", "", "", "sp", "d8-d15", "tpidrurw", ""), "_ARM",
           kernel=KernelBoot("arm", "arm-linux-gnueabihf-", "zImage", "qemu-system-arm",
                             ("-M", "virt", "-cpu", "cortex-a15"), "ttyAMA0",
                             sweep_max_len=128,
                             sweep_max_len_why="the 32-bit kernel's software PAN writes DACR around every "
                             "user access, and QEMU's TCG flushes its whole TLB at each write: 2.2 times "
                             "slower per case (docs/perf.md)"))

ARCHES: dict[str, Arch] = {a.name: a for a in (RISCV, ARM64, ARM)}
DEFAULT = RISCV


def require_mte(names_archs: list[tuple[str, str]], granule: int) -> None:
    """Faults at tag granules need memory tagging (arm64's MTE): a routine of another
    architecture is refused in one line."""
    untagged = [name for name, arch in names_archs if not get(arch).mte]
    if granule and untagged:
        more = " ..." if len(untagged) > 3 else ""
        raise CopyfuzzError(f"granule {granule}: faults at tag granules need MTE (arm64); "
                            f"{', '.join(untagged[:3])}{more} cannot have them")


def get(name: str) -> Arch:
    try:
        return ARCHES[name]
    except KeyError:
        raise CopyfuzzError(f"unknown architecture {name!r} (known: {', '.join(ARCHES)})") from None
