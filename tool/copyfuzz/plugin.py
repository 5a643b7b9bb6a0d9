"""The QEMU plugin's shared memory, from the tool's side (harness/plugin_abi.h).

One `PluginMemory` per executor process: a memfd the tool creates and hands to
both qemu (`-plugin cfplugin.so,fd=N`) and the executor (`--plugin-fd N`), mapped
here too, so the tool reads the per-case counters and the cumulative ones
directly. The ctypes layout is read from the header's X-macros (cheader.py); a test
compares it with the C compiler's.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

from . import cheader, paths
from .errors import CopyfuzzError
from .execopts import opt

_ABI = "plugin_abi.h"
_DEFINES = cheader.defines(_ABI)
COV_MAP_SIZE = _DEFINES["CF_COV_MAP_SIZE"]
INSN_SLOTS = _DEFINES["CF_INSN_SLOTS"]
EXTABLE_SLOTS = _DEFINES["CF_EXTABLE_SLOTS"]
VIOL_STORE_OOB, VIOL_LOAD_OOB, VIOL_OVERREAD = (_DEFINES[f"CF_VIOL_{v}"] for v in ("STORE_OOB", "LOAD_OOB", "OVERREAD"))
VERSION = _DEFINES["CF_PLUGIN_VERSION"]
FLOW_NEXT, FLOW_JUMP, SLOT_RAN = _DEFINES["CF_FLOW_NEXT"], _DEFINES["CF_FLOW_JUMP"], _DEFINES["CF_SLOT_RAN"]
SNAPSHOT_MAGIC = _DEFINES["CF_SNAPSHOT_MAGIC"]

U64 = ctypes.c_uint64


class Violation(ctypes.Structure):
    _fields_ = cheader.ctypes_fields(_ABI, "CF_PLUGIN_VIOLATION_FIELDS")


# The plugin's own state among the per-case fields: not counters.
_NOT_COUNTERS = ("viol", "last_pc", "last_size")


class CaseCounters(ctypes.Structure):
    _fields_ = cheader.ctypes_fields(_ABI, "CF_PLUGIN_CASE_FIELDS", {"cf_plugin_violation_t": Violation})

    def as_dict(self) -> dict[str, int]:
        """The counters: every plain 64-bit field but the plugin's own state."""
        return {name: getattr(self, name) for name, ctype in self._fields_
                if ctype is U64 and name not in _NOT_COUNTERS}


class Shm(ctypes.Structure):
    _fields_ = cheader.ctypes_fields(_ABI, "CF_PLUGIN_SHM_FIELDS", {"cf_plugin_case_t": CaseCounters})


class Snapshot(ctypes.Structure):
    """struct cf_cov_snapshot: the fuzz driver's coverage so far ($COPYFUZZ_COVERAGE/cov-<pid>)."""
    _fields_ = cheader.ctypes_fields(_ABI, "CF_COV_SNAPSHOT_FIELDS")


def slot_address(s: "Shm | Snapshot", slot: int) -> int:
    """The instruction address of a per-instruction slot: (pc - lo) / 2, code then fixup."""
    code_slots = (s.code_hi - s.code_lo) // 2
    return int(s.code_lo + 2 * slot if slot < code_slots else s.fixup_lo + 2 * (slot - code_slots))


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
    """A memfd shared by qemu's plugin, the executor, and this process (session.py makes them)."""

    def __init__(self, root: Path, memcheck: bool = True) -> None:
        # Under QEMU only: session.plugin_memory, the one caller, refuses a native routine.
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
        return [*opt("plugin-fd", self.fd), *([] if self.memcheck else opt("plugin-coverage-only"))]

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
