"""Instruction decoding for the audit, one module per architecture (Capstone underneath).

Each architecture's module gives an `Isa`: its integer registers, its argument and
caller-saved registers, how to turn a routine's code into `Insn`s (what each one reads,
writes, accesses and where it goes next), and the transfer function of the audit's
dataflow (what value an instruction leaves in the register it writes). The dataflow, the
table checks and the reports (audit.py) are the same for every architecture.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable

# Origins of a register's value (audit.py's module text), and how an access is classified.
USER, STACK, DATA, CONST, UNKNOWN, KERNEL = "user", "stack", "data", "const", "unknown", "kernel"
Value = tuple[frozenset[str], "int | None"]  # origins, and the exact value when known
UNKNOWN_VALUE: Value = (frozenset({UNKNOWN}), None)


@dataclass
class Insn:
    addr: int
    size: int
    raw: bytes
    mnemonic: str
    op_str: str
    access: str | None = None  # "load" | "store"
    base: str | None = None  # base register of an access
    disp: int = 0  # its displacement
    target: int | None = None  # direct jump/branch/call target (address pairs resolved)
    flow: str = "next"  # next | jump | branch | call | stop
    rd: str | None = None  # integer register written, if any
    srcs: tuple[str, ...] = ()  # integer registers read
    imm: int | None = None  # the last immediate operand
    origin: str | None = None  # of an access's base: user | unknown | stack | data (set by the audit)
    indirect: bool = False  # a jump or call the audit cannot resolve
    also: tuple[str, ...] = ()  # more registers written (a pair or multiple load's): values not followed
    writeback: bool = False  # the access moves its base register on (pre/post-index)
    conditional: bool = False  # may not execute (an ARM condition code): its writes may leave the old values


def sext(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def union(values: list[Value]) -> Value:
    """Arithmetic on several values: every origin of each (a constant added to a pointer
    leaves that pointer's origin)."""
    origins = frozenset().union(*(v[0] for v in values)) if values else frozenset({UNKNOWN})
    if len(origins) > 1:
        origins -= {CONST}
    return origins, None


Blobs = list[tuple[bytes, int]]  # (code, its address)
Read = Callable[[str], Value]  # a register's value in the state an instruction starts in
GotRanges = list[tuple[int, int]]


@dataclass(frozen=True)
class Isa:
    name: str
    regs: tuple[str, ...]  # the integer registers, in the dataflow's state order
    zero: str | None  # a register that always reads 0 (writes to it are dropped)
    sp: str
    args: tuple[str, ...]  # argument registers, in order
    caller_saved: tuple[str, ...]  # what a call may change
    nops: frozenset[str]  # padding mnemonics
    disassemble: Callable[[Blobs, int], dict[int, Insn]]  # (blobs, xlen) -> code by address
    # What insn leaves in insn.rd, given the registers before it, the GOT's ranges and the
    # address mask of the width.
    written: Callable[[Insn, Read, GotRanges, int], Value]
    # Where an indirect jump goes when the registers before it say (a jump table whose base
    # the dataflow knows: ARM's `add pc, r4, ip` after `adr r4, table`); None: not known.
    table_jump: Callable[[Insn, Read], int | None] | None = None


def disassemble_fixed(md: object, blobs: Blobs, decode_one: Callable[[object], Insn],
                      undecoded: Callable[[bytes, int], Insn]) -> dict[int, Insn]:
    """Code of fixed 4-byte instructions (A64, A32), by address: Capstone's (md, with
    detail on) through decode_one, and any word it cannot decode through undecoded,
    stepped over."""
    code: dict[int, Insn] = {}
    for data, base in blobs:
        off = 0
        while off < len(data):
            for ci in md.disasm(data[off:], base + off):  # type: ignore[attr-defined]
                code[ci.address] = decode_one(ci)
                off = ci.address + ci.size - base
            if off < len(data):
                insn = undecoded(data[off:], base + off)
                code[insn.addr] = insn
                off += 4
    return code


def got_load(insn: Insn, read: Read, got: GotRanges, mask: int, regs: tuple[str, ...]) -> Value:
    """A load: a GOT slot's content is a symbol's address (data); anything else unknown."""
    addr = read(insn.base)[1] if insn.base in regs else None
    if addr is not None and any(lo <= (addr + insn.disp) & mask < hi for lo, hi in got):
        return frozenset({DATA}), None
    return UNKNOWN_VALUE


def for_arch(arch: str) -> Isa:
    """An architecture's decoder: the ISA of decode/<arch>.py, one module for each of
    targets.ARCHES (tests/test_targets.py walks them). Imported on first use: each
    loads Capstone for its architecture."""
    from .. import targets

    targets.get(arch)  # an unknown name is refused there, with the known ones
    isa: Isa = importlib.import_module(f"{__name__}.{arch}").ISA
    return isa
