"""The architectures copyfuzz builds and runs executors for: the tool's one home of what
is each architecture's own (the Makefile's is harness/arch/<arch>/target.mk, the
harness's the rest of harness/arch/<arch>/).

An architecture is the first component of a bundled routine's name (arch/<arch>/...).
Its register width is RISC-V's choice of RV64 or RV32 (--xlen); an architecture with one
width has only that one.

What target.mk says (its widths, the CROSS_COMPILE and QEMU defaults, the build directory's
name) is read from it, through `make target-env`, never spelled here: make knows those
facts, so make tells them (docs/adding.md). They are kept in $(O)/target-env.json, stamped
with the Makefile's and the target.mk files' stat, since the CLI starts hundreds of times
in a test run and make need not run at each. What make has no use for (register names,
the host machine, memory tagging, how a kernel boots) is here.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from . import atomic, files, paths
from .errors import CopyfuzzError

# The checkout this package lives in: its Makefile and target.mk files describe the
# executors this code builds (COPYFUZZ_ROOT may point a test at a tree without them).
TREE = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class TargetMk:
    """One architecture's target.mk, as make reads it (`make ARCH=<arch> target-env`)."""

    widths: tuple[int, ...]  # WIDTHS: the register widths it builds for, the default first
    cross_compile: str  # CROSS_COMPILE's default (at the default width)
    qemu: dict[int, str]  # QEMU's default (the user-mode emulator, maybe with options), by width
    build_name: dict[int, str]  # BUILD_NAME, by width: $(O)/<this> is that width's build directory


@dataclass(frozen=True)
class KernelBoot:
    """How a Linux kernel of this architecture is built small and booted (copyfuzz kernel,
    tool/copyfuzz/kernel/): kbuild's ARCH, the image target, QEMU's system emulator and
    machine, the console. Its cross compiler is the executors' (Arch.cross: RISC-V's
    builds RV64 too)."""

    make_arch: str
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
    machine: str  # platform.machine() of a host that runs its default width natively
    # The names of the bits of a result's regs_bad (records.h, enum cf_reg_bit): the
    # callee-saved set the trampoline checks, then sp, gp, tp and the return address
    # ("" where the architecture has no such register).
    regs: tuple[str, ...]
    env_suffix: str = ""  # CROSS_COMPILE<suffix> and QEMU<suffix> override the defaults
    mte: bool = False  # memory tagging: faults at 16-byte granules (--granule 16)
    kernel: KernelBoot | None = None  # booted-kernel sweeps (copyfuzz kernel)

    @property
    def target_mk(self) -> TargetMk:
        return target_mks()[self.name]

    @property
    def widths(self) -> tuple[int, ...]:
        """The register widths it builds for, the default first (target.mk's WIDTHS)."""
        return self.target_mk.widths

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
        """$(BUILD) under $(O): target.mk's BUILD_NAME at this width (one it has)."""
        return self.target_mk.build_name[self.width(xlen)]

    def cross(self) -> str:
        """CROSS_COMPILE for this architecture: the environment's (CROSS_COMPILE for RISC-V,
        CROSS_COMPILE_ARM64 for arm64, ...), else target.mk's default."""
        return os.environ.get(f"CROSS_COMPILE{self.env_suffix}") or self.target_mk.cross_compile

    def default_qemu(self, xlen: int) -> str:
        """target.mk's QEMU at this width (one it has), what QEMU<suffix> overrides."""
        return self.target_mk.qemu[self.width(xlen)]

    def qemu_command(self, xlen: int) -> list[str]:
        """QEMU may carry options, e.g. "qemu-riscv64 -cpu rv64,v=true" (QEMU for RISC-V,
        QEMU_ARM64 for arm64, ...)."""
        default = self.default_qemu(xlen)
        var = f"QEMU{self.env_suffix}"
        given = os.environ.get(var, "")
        if given.strip():
            return _qemu_words(var, given)
        return _qemu_words(f"{target_mk_path(self.name)}: QEMU", default)

    def native(self, xlen: int) -> bool:
        """Does this host run the executors of this width directly (no QEMU)? Not when
        the user names an emulator (QEMU, QEMU_ARM64, ...): on matching hardware that is
        how the plugin's coverage and memory audit are had."""
        if os.environ.get(f"QEMU{self.env_suffix}", "").strip():
            return False
        return platform.machine() == self.machine and xlen == self.widths[0]

    def make_vars(self, xlen: int) -> list[str]:
        """What every make for this architecture and width gets: the target, always given,
        so that a CROSS_COMPILE meant for another architecture never reaches it."""
        return [f"ARCH={self.name}", f"XLEN={xlen}", f"CROSS_COMPILE={self.cross()}"]


def _qemu_words(var: str, value: str) -> list[str]:
    """A QEMU command line as sh would split it; an unbalanced quote is one line naming the
    variable that held it (QEMU, QEMU_ARM64, ... or target.mk's QEMU)."""
    try:
        words = shlex.split(value)
    except ValueError as e:
        why = "unbalanced quote" if "quotation" in str(e) else str(e).lower()
        raise CopyfuzzError(f"{var}={value}: {why}") from None
    if not words:
        raise CopyfuzzError(f"{var}={value!r}: no command")
    return words


# The kernels' CPUs: RISC-V with the vector extension (6.10+ copy user memory with it past
# a threshold), arm64's "max" (PAN, UAO, MTE ...; pauth-impdef keeps TCG fast).
RISCV = Arch("riscv", "riscv64", tuple(f"s{i}" for i in range(12)) + ("sp", "gp", "tp", "ra"),
             kernel=KernelBoot("riscv", "Image", "qemu-system-riscv64",
                               ("-M", "virt", "-cpu", "rv64,v=true,vlen=128,vext_spec=v1.0", "-bios", "default"),
                               "ttyS0"))
ARM64 = Arch("arm64", "aarch64",
             tuple(f"x{i}" for i in range(19, 30)) + ("x18", "sp", "d8-d15", "tpidr_el0", "x30"), "_ARM64",
             mte=True,
             kernel=KernelBoot("arm64", "Image", "qemu-system-aarch64",
                               ("-M", "virt", "-cpu", "max,pauth-impdef=on"), "ttyAMA0"))

# 32-bit ARM: AAPCS's r4-r11 (bits 8-11 unused), sp, d8-d15 (in gp's bit), TPIDRURW; no return
# address check (ARM's copy template pops the return address straight into pc).
ARM = Arch("arm", "armv7l",
           tuple(f"r{i}" for i in range(4, 12)) + ("", "", "", "", "sp", "d8-d15", "tpidrurw", ""), "_ARM",
           kernel=KernelBoot("arm", "zImage", "qemu-system-arm",
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


# ---- target.mk, through make ----

# Bump when what target_mks keeps changes: a cache file of another version is a miss.
_CACHE_VERSION = 1
_loaded: dict[str, TargetMk] | None = None


def target_mk_path(arch: str) -> Path:
    return TREE / "harness" / "arch" / arch / "target.mk"


def target_mks() -> dict[str, TargetMk]:
    """Every architecture's target.mk facts: read once a process, from $(O)/target-env.json
    when that was written for the Makefile and target.mk files as they are (device, inode,
    size, modification time; taken before make runs, so an edit while it runs is a miss
    next time), else from make, and kept there if $(O) exists. The cache is written
    atomically, so runs at once read a whole one or none (and then each asks make: the
    same answer); one that cannot be written is no error."""
    global _loaded
    if _loaded is None:
        cache = paths.target_env_cache(TREE)
        stamp = [_CACHE_VERSION, *(_stat(p) for p in [TREE / "Makefile", *map(target_mk_path, ARCHES)])]
        _loaded = _read_cache(cache, stamp)
        if _loaded is None:
            _loaded = {a: _ask_make(a) for a in ARCHES}
            with suppress(CopyfuzzError):  # $(O) is make's to create: none yet, nothing kept
                arches = {a: _to_json(t) for a, t in _loaded.items()}
                atomic.write(cache, json.dumps({"stamp": stamp, "arches": arches}))
    return _loaded


# A cache of three architectures is a few hundred bytes: anything past this is not ours.
_CACHE_LIMIT = 1 << 16


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


def _read_cache(cache: Path, stamp: list[object]) -> dict[str, TargetMk] | None:
    """The facts kept in the cache, if it was written for this stamp; None (a miss: make is
    asked) for anything else. The file is read as an untrusted input (files.read_input_text:
    a regular file of at most _CACHE_LIMIT bytes, never waited on), and whatever it holds is
    checked value by value (_from_json): a FIFO, /dev/zero, nesting deeper than the parser
    goes or a width of Infinity is a miss, never a hang, a traceback or a wrong fact."""
    try:
        kept = json.loads(files.read_input_text(cache, "cache", _CACHE_LIMIT), parse_constant=_no_constant)
        if not isinstance(kept, dict) or kept.get("stamp") != stamp or not isinstance(kept.get("arches"), dict):
            return None
        return {a: _from_json(kept["arches"][a]) for a in ARCHES}
    except (CopyfuzzError, ValueError, KeyError, TypeError, AttributeError, RecursionError, OverflowError,
            MemoryError):
        return None


def _stat(path: Path) -> list[object]:
    try:
        st = path.stat()
    except OSError as e:
        raise CopyfuzzError(f"cannot read {path}: {e.strerror or e}") from e
    return [str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]


def _target_env(arch: str, xlen: int | None) -> dict[str, str]:
    """`make ARCH=arch [XLEN=xlen] target-env`, parsed. Its environment holds only PATH: a
    QEMU, CROSS_COMPILE, XLEN or O of the caller's (or a parent make's MAKEFLAGS) would
    otherwise take the place of target.mk's own defaults."""
    cmd = ["make", "-s", "--no-print-directory", "-C", str(TREE), f"ARCH={arch}",
           *([f"XLEN={xlen}"] if xlen is not None else []), "target-env"]
    try:
        proc = subprocess.run(cmd, env={"PATH": os.environ.get("PATH", os.defpath)}, capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise CopyfuzzError(f"cannot run make for {arch}'s target.mk: {e} (run 'make deps')") from e
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise CopyfuzzError(f"make ARCH={arch} target-env: {why}")
    return _parse_target_env(arch, proc.stdout)


def _parse_target_env(arch: str, stdout: str) -> dict[str, str]:
    """target-env's CF_TARGET_NAME='value' lines (each one sh word); any other line is the
    target.mk's or a make's own (a $(info ...), a warning) and is not read. A CF_TARGET_
    line that is not one such word is an error naming the target.mk, not a guess."""
    out = {}
    for line in stdout.splitlines():
        if not line.startswith("CF_TARGET_"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            words, why = [], str(e)
        else:
            why = f"{len(words)} words"
        if len(words) != 1 or "=" not in words[0]:
            raise CopyfuzzError(f"{target_mk_path(arch)}: `make ARCH={arch} target-env` said {line!r}: "
                                f"not one NAME='value' ({why.lower()})")
        key, _, value = words[0].partition("=")
        out[key.removeprefix("CF_TARGET_")] = value
    return out


def _ask_make(arch: str) -> TargetMk:
    first = _target_env(arch, None)  # at target.mk's default XLEN
    try:
        widths = tuple(int(w) for w in first["WIDTHS"].split())
        default = int(first["XLEN"])
        by_width = {w: first if w == default else _target_env(arch, w) for w in widths}
        return TargetMk(widths, first["CROSS_COMPILE"], {w: e["QEMU"] for w, e in by_width.items()},
                        {w: e["BUILD_NAME"] for w, e in by_width.items()})
    except (KeyError, ValueError) as e:
        raise CopyfuzzError(f"{target_mk_path(arch)}: `make ARCH={arch} target-env` does not say "
                            f"WIDTHS, XLEN, CROSS_COMPILE, QEMU and BUILD_NAME ({e!r})") from None


def _to_json(t: TargetMk) -> dict[str, object]:
    return {"widths": list(t.widths), "cross_compile": t.cross_compile,
            "qemu": {str(w): q for w, q in t.qemu.items()}, "build_name": {str(w): b for w, b in t.build_name.items()}}


# The register widths a target.mk may list (RISC-V's 32 and 64, ... a 128 some day).
_WIDTHS = range(8, 257)


def _from_json(d: object) -> TargetMk:
    """What _to_json wrote; a TypeError or ValueError if it is not (a cache miss). Every
    value is checked for its type and range, none converted: a cache saying 64.0, "64",
    true or 1e400 is not one _to_json wrote."""
    def width(v: object) -> int:
        if type(v) is not int or v not in _WIDTHS:
            raise ValueError(f"not a width: {v!r}")
        return v

    def text(v: object) -> str:
        if not isinstance(v, str):
            raise TypeError(f"not a string: {v!r}")
        return v

    def by_width(v: object) -> dict[int, str]:
        if not isinstance(v, dict):
            raise TypeError("not an object")
        out = {}
        for w, x in v.items():
            if not (isinstance(w, str) and w.isascii() and w.isdigit() and len(w) <= 3):
                raise ValueError(f"not a width: {w!r}")
            out[width(int(w))] = text(x)
        if sorted(out) != sorted(widths):
            raise ValueError("not one entry per width")
        return out

    if not isinstance(d, dict):
        raise TypeError("not an object")
    listed = d["widths"]
    if not isinstance(listed, list) or not listed:
        raise ValueError("no widths")
    widths = tuple(width(w) for w in listed)
    if len(set(widths)) != len(widths):
        raise ValueError("a width twice")
    return TargetMk(widths, text(d["cross_compile"]), by_width(d["qemu"]), by_width(d["build_name"]))
