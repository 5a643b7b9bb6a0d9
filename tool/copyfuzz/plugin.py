"""The QEMU plugin's shared memory, from the tool's side (harness/plugin_abi.h).

One `PluginMemory` per executor process: a memfd the tool creates and hands to
both qemu (`-plugin cfplugin.so,fd=N`) and the executor (`--plugin-fd N`), mapped
here too, so the tool reads the per-case counters and the cumulative ones
directly. The layout is mirrored with ctypes; a test compares it with the C one.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

from . import build, paths, targets
from .errors import CopyfuzzError

COV_MAP_SIZE = 4096
INSN_SLOTS = 8192
EXTABLE_SLOTS = 1024
VIOL_STORE_OOB, VIOL_LOAD_OOB, VIOL_OVERREAD = 1, 2, 4
VERSION = 3
FLOW_NEXT, FLOW_JUMP, SLOT_RAN = 1, 2, 4
SNAPSHOT_MAGIC = 0x31534643

U64 = ctypes.c_uint64


class Violation(ctypes.Structure):
    _fields_ = [("pc", U64), ("addr", U64), ("size", U64)]


class CaseCounters(ctypes.Structure):
    _fields_ = [("insns", U64), ("loads", U64), ("stores", U64), ("bytes_loaded", U64),
                ("bytes_stored", U64), ("misaligned", U64), ("taken", U64), ("viol", U64),
                ("store_oob", Violation), ("load_oob", Violation), ("overread", Violation),
                ("last_pc", U64), ("last_size", U64), ("edges_hit", U64),
                ("vinsns", U64), ("vmem_insns", U64), ("velems", U64), ("vbytes_loaded", U64),
                ("vbytes_stored", U64)]

    def as_dict(self) -> dict[str, int]:
        return {k: getattr(self, k) for k in ("insns", "loads", "stores", "bytes_loaded",
                                               "bytes_stored", "misaligned", "taken", "edges_hit",
                                               "vinsns", "vmem_insns", "velems", "vbytes_loaded",
                                               "vbytes_stored")}


class Shm(ctypes.Structure):
    _fields_ = [("magic", ctypes.c_uint32), ("version", ctypes.c_uint32), ("plugin_ready", U64),
                ("code_lo", U64), ("code_hi", U64), ("fixup_lo", U64), ("fixup_hi", U64),
                ("seq", U64), ("src_lo", U64), ("src_hi", U64), ("dst_lo", U64), ("dst_hi", U64),
                ("stack_lo", U64), ("stack_hi", U64), ("now", CaseCounters),
                ("edges", ctypes.c_uint8 * COV_MAP_SIZE), ("cases", U64),
                ("insn_count", U64 * INSN_SLOTS), ("extable_hits", U64 * EXTABLE_SLOTS),
                ("insn_flow", ctypes.c_uint8 * INSN_SLOTS), ("data_lo", U64), ("data_hi", U64)]


class Snapshot(ctypes.Structure):
    """struct cf_cov_snapshot: the fuzz driver's coverage so far ($COPYFUZZ_COVERAGE/cov-<pid>)."""
    _fields_ = [("magic", ctypes.c_uint32), ("version", ctypes.c_uint32), ("code_lo", U64), ("code_hi", U64),
                ("fixup_lo", U64), ("fixup_hi", U64), ("cases", U64),
                ("slot", ctypes.c_uint8 * INSN_SLOTS), ("entry", ctypes.c_uint8 * EXTABLE_SLOTS)]


def slot_address(s: "Shm | Snapshot", slot: int) -> int:
    """The instruction address of a per-instruction slot: (pc - lo) / 2, code then fixup."""
    code_slots = (s.code_hi - s.code_lo) // 2
    return s.code_lo + 2 * slot if slot < code_slots else s.fixup_lo + 2 * (slot - code_slots)


def address_slot(s: "Shm | Snapshot", addr: int) -> int | None:
    """slot_address's inverse: the slot of an instruction address, None outside both ranges."""
    code_slots = (s.code_hi - s.code_lo) // 2
    if s.code_lo <= addr < s.code_hi:
        slot = (addr - s.code_lo) // 2
    elif s.fixup_lo <= addr < s.fixup_hi:
        slot = code_slots + (addr - s.fixup_lo) // 2
    else:
        return None
    return slot if slot < INSN_SLOTS else None


class PluginMemory:
    """A memfd shared by qemu's plugin, the executor, and this process."""

    def __init__(self, root: Path, xlen: int, arch: str, memcheck: bool = True) -> None:
        if build.native(xlen, arch):
            a = targets.get(arch)
            raise CopyfuzzError("--memcheck, bench counts and cov need QEMU: the plugin is a QEMU "
                                f"TCG plugin (natively, run the same command with "
                                f"QEMU{a.env_suffix}={a.qemu.format(xlen=xlen)})")
        self.so = paths.plugin(root)
        if not self.so.is_file():
            raise CopyfuzzError(f"{self.so} is missing: run 'make plugin'")
        self.fd = os.memfd_create("copyfuzz-plugin", 0)  # inherited: no MFD_CLOEXEC
        os.ftruncate(self.fd, ctypes.sizeof(Shm))
        self._map = mmap.mmap(self.fd, ctypes.sizeof(Shm))
        self.shm = Shm.from_buffer(self._map)
        self.memcheck = memcheck  # False: the counts only, no memory-audit classes in the results

    @property
    def pass_fds(self) -> tuple[int, ...]:
        return (self.fd,)

    def wrap(self, argv: list[str]) -> list[str]:
        """[qemu..., elf] -> [qemu..., -plugin so,fd=N, elf]."""
        return [*argv[:-1], "-plugin", f"{self.so},fd={self.fd}", argv[-1]]

    def executor_options(self) -> list[str]:
        return ["--plugin-fd", str(self.fd), *([] if self.memcheck else ["--plugin-coverage-only"])]

    def insn_counts(self) -> dict[int, int]:
        """Cumulative executions by address (code, then fixup section)."""
        s = self.shm
        return {slot_address(s, slot): count for slot, count in enumerate(s.insn_count) if count}

    def counts_at(self, addrs: "set[int] | list[int]") -> dict[int, int]:
        """Cumulative executions of these addresses only (insn_counts reads all 8,192 slots:
        4 ms, too slow to ask after each of a hundred cases)."""
        s = self.shm
        out = {}
        for addr in addrs:
            slot = address_slot(s, addr)
            out[addr] = s.insn_count[slot] if slot is not None else 0
        return out

    def insn_flow(self) -> dict[int, int]:
        """FLOW_* bits by address: how execution left each instruction, so far."""
        s = self.shm
        return {slot_address(s, slot): bits for slot, bits in enumerate(s.insn_flow) if bits}

    def close(self) -> None:
        del self.shm
        self._map.close()
        os.close(self.fd)

    def __enter__(self) -> "PluginMemory":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
