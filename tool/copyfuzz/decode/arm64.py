"""arm64 for the audit: Capstone's AArch64, and the dataflow's transfer function.

Capstone 5 puts no AArch64 instruction in a load or store group, so accesses are told by
their operands and names: an instruction with a memory operand (but a prefetch, which
never faults) whose name starts with "ld" is a load, any other one a store (str, sttr,
stp, stxr; the atomics ldadd, swp, cas, which write); `dc zva, Xn` stores a block
through Xn. A literal load (`ldr x0, =sym`, `ldr x0, label`) reads the file's own
constants: not an access, its value data. Pre- and post-indexed accesses move their
base on (Insn.writeback), pair loads write two registers (the second in Insn.also).

Flow: b (jump), b.cond/cbz/cbnz/tbz/tbnz (branch), bl (call), blr (a call the audit
cannot follow), br (an indirect jump: the end of what it can follow), ret, brk, udf,
hlt (stop). A value from adrp or adr is a symbol's address (data), and add/sub of a
constant keeps the origin and, when known, the value (adrp + add :lo12: is the address).
"""

from __future__ import annotations

import re

from capstone import CS_ARCH_ARM64, CS_MODE_ARM, Cs
from capstone import arm64 as cs_arm64

from . import (
    CONST,
    DATA,
    STACK,
    UNKNOWN_VALUE,
    Blobs,
    GotRanges,
    Insn,
    Isa,
    Read,
    Value,
    disassemble_fixed,
    got_load,
    union,
)

_XREGS = tuple(f"x{i}" for i in range(31)) + ("sp", "xzr")
# AAPCS64: x0-x18 (x16/x17 the linker's scratch, x18 the platform register, taken as
# clobbered) and the link register; x19-x29 and sp survive a call.
_CALLER_SAVED = tuple(f"x{i}" for i in range(19)) + ("x30",)
_BRANCHES = {"cbz", "cbnz", "tbz", "tbnz"}
_STOPS = {"ret", "retaa", "retab", "brk", "udf", "hlt", "eret"}
_NO_DEST = {"cmp", "cmn", "tst", "ccmp", "ccmn", "fcmp", "fcmpe", "msr", "dc", "ic", "tlbi", "at", "sys",
            "hint", "nop", "isb", "dsb", "dmb", "svc", "prfm", "prfum", "yield", "wfe", "wfi", "sev", "sevl",
            "clrex", "bti", "paciasp", "autiasp", "csdb", "esb", "sb"}
_ATOMIC_RD_SECOND = ("ldadd", "ldclr", "ldeor", "ldset", "ldsmax", "ldsmin", "ldumax", "ldumin", "swp")
_PREFETCH = ("prfm", "prfum")
# FEAT_MOPS: CPY[F]{P,M,E} and SET[G]{P,M,E} with their options. Capstone 5 gives a copy's
# destination as a plain register and its source as the one memory operand, a set's
# destination as a plain register: neither says which side is stored.
_MOPS_CPY = re.compile(r"cpyf?[pme]((wt|rt|t|wn|rn|n)*)$")
_MOPS_SET = re.compile(r"setg?[pme](t|n)*$")


def _xreg(name: str) -> str | None:
    """Capstone's name of an integer register as the dataflow's (w5 -> x5); None for
    FP/SIMD and system registers."""
    if name in ("sp", "wsp"):
        return "sp"
    if name in ("xzr", "wzr"):
        return "xzr"
    if name[:1] in ("x", "w") and name[1:].isdigit() and int(name[1:]) <= 30:
        return "x" + name[1:]
    return None


def _undecoded(data: bytes, addr: int) -> Insn:
    """Four bytes Capstone does not know: it may write x[Rd] (bits 4:0 in most
    encodings), a value of unknown origin, so an access through it needs an entry."""
    raw = bytes(data[:4])
    insn = Insn(addr, len(raw), raw, "(undecoded)", raw.hex())
    if len(raw) == 4 and int.from_bytes(raw, "little") & 31 != 31:
        insn.rd = f"x{int.from_bytes(raw, 'little') & 31}"
    return insn


def _decode_one(ci: object) -> Insn:
    insn = Insn(ci.address, ci.size, bytes(ci.bytes), ci.mnemonic, ci.op_str)  # type: ignore[attr-defined]
    m = insn.mnemonic
    ops = ci.operands  # type: ignore[attr-defined]
    regs = [_xreg(ci.reg_name(op.reg)) for op in ops if op.type == cs_arm64.ARM64_OP_REG]  # type: ignore[attr-defined]
    imms = [op.imm for op in ops if op.type == cs_arm64.ARM64_OP_IMM]
    mems = [op for op in ops if op.type == cs_arm64.ARM64_OP_MEM]
    xregs = [r for r in regs if r]
    insn.imm = imms[-1] if imms else None
    cpy, setm = _MOPS_CPY.match(m), _MOPS_SET.match(m)
    if (cpy or setm) and len(regs) >= 2 and regs[0]:
        # one access of an instruction that moves up to a whole buffer: the side the
        # options make unprivileged (RT: reads, the user's source in copy_from_user), else
        # the store to the destination (WT, T, or none). The pointers move on within their
        # buffers (their origins hold); the count's value is not followed.
        src = _xreg(ci.reg_name(mems[0].mem.base)) if cpy and mems else None  # type: ignore[attr-defined]
        opts = cpy.group(1) if cpy else ""
        reads_user = "rt" in opts and "wt" not in opts
        insn.access = "load" if reads_user and src else "store"
        insn.base = src if insn.access == "load" else regs[0]
        insn.writeback = True
        insn.also = tuple(r for r in regs[1:2] if r)
        insn.srcs = tuple(r for r in (regs[0], src, *regs[1:]) if r)
        return insn
    if mems and not m.startswith(_PREFETCH):
        mem = mems[0].mem
        insn.base = _xreg(ci.reg_name(mem.base))  # type: ignore[attr-defined]
        insn.disp = mem.disp
        insn.writeback = bool(ci.writeback)  # type: ignore[attr-defined]
        index = _xreg(ci.reg_name(mem.index)) if mem.index else None  # type: ignore[attr-defined]
        atomic = m.startswith(("cas", *_ATOMIC_RD_SECOND))
        insn.access = "load" if m.startswith("ld") and not atomic else "store"
        if insn.access == "load":
            insn.rd = regs[0] if regs else None  # None: an FP/SIMD register
            pair = len(regs) > 1 and m.startswith("ld") and "p" in m[2:]
            insn.also = (regs[1],) if pair and regs[1] else ()
        elif atomic:
            insn.rd = regs[1] if m.startswith(_ATOMIC_RD_SECOND) and len(regs) > 1 else (regs[0] if regs else None)
        elif "x" in m[2:] and m.startswith("st") and regs:  # stxr/stlxr/stxp: a status register
            insn.rd = regs[0]
        insn.srcs = tuple(r for r in (insn.base, index) if r)
    elif m.startswith("ldr") and imms and not mems:  # a literal load: the file's own constant
        insn.rd = xregs[0] if xregs else None
    elif m == "dc" and ci.op_str.startswith("zva"):  # type: ignore[attr-defined]
        insn.access, insn.base = "store", (xregs[0] if xregs else None)
        insn.srcs = tuple(xregs)
    elif m == "b":
        insn.flow, insn.target = "jump", imms[-1]
    elif m.startswith("b.") or m in _BRANCHES:
        insn.flow, insn.target = "branch", imms[-1]
        insn.srcs = tuple(xregs)
    elif m == "bl":
        insn.flow, insn.target, insn.rd = "call", imms[-1], "x30"
    elif m in ("blr", "blraa", "blrab", "blraaz", "blrabz"):
        insn.rd, insn.srcs, insn.indirect = "x30", tuple(xregs[:1]), True
    elif m in ("br", "braa", "brab", "braaz", "brabz"):
        insn.flow, insn.srcs, insn.indirect = "stop", tuple(xregs[:1]), True
    elif m in _STOPS:
        insn.flow = "stop"
        insn.indirect = m.startswith("ret") and bool(xregs) and xregs[0] != "x30"
    elif m in _NO_DEST or not regs or regs[0] is None:
        insn.srcs = tuple(xregs)
    else:
        insn.rd = regs[0]
        insn.srcs = tuple(r for r in regs[1:] if r)
        if m in ("movk", "bfi", "bfxil", "bfm"):  # the destination is also a source
            insn.srcs = (regs[0], *insn.srcs)
    return insn


def _disassemble(blobs: Blobs, xlen: int) -> dict[int, Insn]:
    md = Cs(CS_ARCH_ARM64, CS_MODE_ARM)
    md.detail = True
    return disassemble_fixed(md, blobs, _decode_one, _undecoded)


def _written(insn: Insn, read: Read, got: GotRanges, mask: int) -> Value:
    """The value insn leaves in insn.rd."""
    m = insn.mnemonic
    vals = [read(r) for r in insn.srcs]
    imm = insn.imm or 0
    if insn.access == "load":
        return got_load(insn, read, got, mask, _XREGS)
    if insn.access or insn.flow != "next" or insn.indirect:
        return UNKNOWN_VALUE  # an atomic's old value, an exclusive's status, a return address
    if m in ("adrp", "adr"):
        return frozenset({DATA}), imm & mask
    if m.startswith("ldr"):  # a literal: a constant or an address (=sym); like lui on RISC-V
        return frozenset({DATA}), None
    if m in ("mov", "movz", "movn") and not insn.srcs:
        return frozenset({CONST}), imm & mask
    if m == "mov" and len(vals) == 1:
        return vals[0] if insn.srcs[0] != "sp" else (frozenset({STACK}), None)
    if m in ("add", "sub") and len(vals) == 1 and insn.imm is not None and "," not in insn.op_str.split("#")[-1]:
        origins, value = vals[0]
        step = imm if m == "add" else -imm
        return origins, (value + step) & mask if value is not None else None
    if m == "movk":
        return frozenset({CONST}), None
    return union(vals) if vals else UNKNOWN_VALUE


ISA = Isa("arm64", _XREGS, "xzr", "sp", tuple(f"x{i}" for i in range(8)), _CALLER_SAVED,
          frozenset({"nop"}), _disassemble, _written)
