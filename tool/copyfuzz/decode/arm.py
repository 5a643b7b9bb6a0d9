"""32-bit ARM (ARM state) for the audit: Capstone's ARM mode, and the dataflow's transfer
function.

Accesses: every instruction with a memory operand (ldr/str and their byte, halfword,
doubleword, unprivileged and exclusive forms, vldr/vstr, vld1-4/vst1-4, ldc/stc), but
the hints pld/pldw/pli, which never fault; a name starting with "ld" or "vld" is a load,
any other a store (swp writes). The load and store multiples ldm/stm (every addressing
mode), push/pop and vldm/vstm/vpush/vpop go through the register before their list, or
sp. A load through pc (`ldr r0, =sym`, `ldr r0, [pc, #8]`) reads the file's own
literal: not an access, its value data. Pre- and post-indexed accesses and `!` move
their base on (Insn.writeback: Capstone 5 does not flag ldrt's post-index); a pair or
multiple load writes several registers (Insn.also).

Capstone's operand access flags say which registers are written and read, with
exceptions handled here (ldrexd's pair, mrc's destination, a register-shifted operand's
shift register). Registers are named r0-r12, sp, lr in the dataflow (Capstone prints
r9-r12 as sb, sl, fp, ip); pc is read as the instruction's address + 8, the file's data.

Flow: b (jump), b<cond> (branch), bl (call), blx (a call into Thumb code or through a
register: not followed), bx lr, mov pc, lr and a load of pc from sp (pop {..., pc}) are
returns; `add pc, pc, rX` jumps into the table of instructions after it (entered at
pc + 8, each entry running on into the next), and `add pc, rX, rY` into the one at rX when
the dataflow knows rX (`adr rX, table`: audit.py follows it); other writes of pc are
indirect jumps;
udf, bkpt stop. An instruction with a
condition other than AL may not run (Insn.conditional): a conditional return falls
through too.
"""

from __future__ import annotations

from capstone import CS_AC_READ, CS_AC_WRITE, CS_ARCH_ARM, CS_MODE_ARM, Cs
from capstone import arm as cs_arm

from . import CONST, DATA, UNKNOWN_VALUE, Blobs, GotRanges, Insn, Isa, Read, Value, disassemble_fixed, got_load, union

_REGS = tuple(f"r{i}" for i in range(13)) + ("sp", "lr")
_NAMES = {"sb": "r9", "sl": "r10", "fp": "r11", "ip": "r12", "r13": "sp", "r14": "lr", "r15": "pc"}
# AAPCS: r0-r3, ip (the linker's scratch) and lr may change across a call; r4-r11, sp survive.
_CALLER_SAVED = ("r0", "r1", "r2", "r3", "r12", "lr")
_HINTS = ("pld", "pldw", "pli")  # prefetches: never fault
_STOPS = {"udf", "bkpt", "hlt"}
_SHIFT_BY_REG = {cs_arm.ARM_SFT_ASR_REG, cs_arm.ARM_SFT_LSL_REG, cs_arm.ARM_SFT_LSR_REG,
                 cs_arm.ARM_SFT_ROR_REG, cs_arm.ARM_SFT_RRX_REG}


def _reg(name: str) -> str | None:
    """Capstone's name of an integer register as the dataflow's (ip -> r12); pc is kept as
    "pc"; None for FP/SIMD, coprocessor and status registers."""
    name = _NAMES.get(name, name)
    if name in ("sp", "lr", "pc") or (name[:1] == "r" and name[1:].isdigit() and int(name[1:]) <= 12):
        return name
    return None


def base_mnemonic(mnemonic: str, conditional: bool) -> str:
    """The operation without its condition and data type (ldrne -> ldr, vaddeq.f64 -> vadd):
    every condition suffix is two letters, last in UAL (addseq)."""
    head = mnemonic.split(".")[0]
    return head[:-2] if conditional else head


def _multiple(m: str) -> str | None:
    if m.startswith(("ldm", "vldm")) or m in ("pop", "vpop"):
        return "load"
    if m.startswith(("stm", "vstm")) or m in ("push", "vpush"):
        return "store"
    return None


def _undecoded(data: bytes, addr: int) -> Insn:
    """Four bytes Capstone does not know: they may write the register in bits 15:12 (Rd in
    most encodings), a value of unknown origin, so an access through it needs an entry."""
    raw = bytes(data[:4])
    insn = Insn(addr, len(raw), raw, "(undecoded)", raw.hex())
    if len(raw) == 4:
        rd = (int.from_bytes(raw, "little") >> 12) & 15
        insn.rd = _REGS[rd] if rd < 15 else None
    return insn


def _set_written(insn: Insn, written: list[str]) -> None:
    """Record the registers written: pc means control leaves (a return from lr or the
    stack, else an indirect jump), and a conditional one may also fall through."""
    regs = [r for r in written if r != "pc"]
    insn.rd, insn.also = (regs[0], tuple(regs[1:])) if regs else (None, ())
    if "pc" in written:
        returns = insn.base == "sp" or (insn.access is None and insn.srcs == ("lr",))
        insn.indirect = not returns
        insn.flow = "next" if insn.conditional else "stop"


def _decode_one(ci: object) -> Insn:
    insn = Insn(ci.address, ci.size, bytes(ci.bytes), ci.mnemonic, ci.op_str)  # type: ignore[attr-defined]
    insn.conditional = ci.cc not in (cs_arm.ARM_CC_AL, cs_arm.ARM_CC_INVALID)  # type: ignore[attr-defined]
    m = base_mnemonic(insn.mnemonic, insn.conditional)
    ops = ci.operands  # type: ignore[attr-defined]

    def name(reg: int) -> str | None:
        return _reg(ci.reg_name(reg))  # type: ignore[attr-defined]

    regs = [(name(op.reg), op.access) for op in ops if op.type == cs_arm.ARM_OP_REG]
    shifts = [name(op.shift.value) for op in ops if op.shift.type in _SHIFT_BY_REG]
    imms = [op.imm for op in ops if op.type == cs_arm.ARM_OP_IMM]
    mem_at = next((k for k, op in enumerate(ops) if op.type == cs_arm.ARM_OP_MEM), None)
    insn.imm = imms[-1] if imms else None
    multiple = _multiple(m)
    if multiple:
        stack = m in ("push", "pop", "vpush", "vpop")
        insn.access, insn.base = multiple, "sp" if stack else regs[0][0]
        insn.writeback = stack or bool(ci.writeback) or "!" in insn.op_str  # type: ignore[attr-defined]
        insn.srcs = (insn.base,) if insn.base else ()
        if multiple == "load":
            _set_written(insn, [r for r, _ in regs[0 if stack else 1:] if r])
    elif mem_at is not None and m not in _HINTS:
        mem = ops[mem_at].mem
        base, index = name(mem.base), name(mem.index) if mem.index else None
        before = [r for r, _ in regs[:mem_at] if r]  # the registers written or stored
        after = [name(op.reg) for op in ops[mem_at + 1:] if op.type == cs_arm.ARM_OP_REG]  # a post-index register
        insn.srcs = tuple(r for r in (base, index, *after, *shifts) if r)
        if base == "pc" and m.startswith(("ld", "vld")):  # a literal: the file's own constant, or a jump table
            insn.base = "pc"
            _set_written(insn, before)
            return insn
        insn.base, insn.disp = base, mem.disp
        insn.access = "load" if m.startswith(("ld", "vld")) else "store"
        insn.writeback = bool(ci.writeback) or "]!" in insn.op_str or "], " in insn.op_str  # type: ignore[attr-defined]
        if insn.access == "load":
            _set_written(insn, before)
        elif m.startswith(("strex", "stlex", "swp")) and before:  # the status, or the old value
            insn.rd = before[0]
    elif mem_at is not None:  # a prefetch hint
        insn.srcs = tuple(r for r in (name(ops[mem_at].mem.base),) if r)
    elif m == "b":
        insn.flow, insn.target = ("branch" if insn.conditional else "jump"), imms[-1]
    elif m == "bl":
        insn.flow, insn.target, insn.rd = "call", imms[-1], "lr"
    elif m == "blx":  # into Thumb code, or through a register: a call not followed
        insn.rd, insn.indirect = "lr", True
        insn.srcs = tuple(r for r, _ in regs if r)
    elif m == "bx":
        target = regs[0][0] if regs else None
        insn.srcs = (target,) if target else ()
        _set_written(insn, ["pc"])
    elif m in _STOPS:
        insn.flow = "stop"
    elif m == "svc":
        insn.rd = "r0"  # the system call's result
    else:
        writes = m in ("mrc", "mrrc")  # Capstone marks their destinations read
        written = [r for r, acc in regs if r and (writes or acc & CS_AC_WRITE)]
        insn.srcs = tuple(r for r, acc in regs if r and not writes and (acc & CS_AC_READ or not acc))
        insn.srcs += tuple(r for r in shifts if r)
        _set_written(insn, written)
        if m == "add" and written == ["pc"] and [r for r, _ in regs][1:2] == ["pc"]:
            # add pc, pc, rX[, lsl #n]: a jump into the instructions that follow, a table
            # of one instruction per entry (copy_template's word tail), entered at pc + 8
            # and run on from there: every entry is reached.
            insn.indirect = False
            insn.flow, insn.target = ("branch" if insn.conditional else "jump"), insn.addr + 8
    return insn


def _disassemble(blobs: Blobs, xlen: int) -> dict[int, Insn]:
    md = Cs(CS_ARCH_ARM, CS_MODE_ARM)
    md.detail = True
    return disassemble_fixed(md, blobs, _decode_one, _undecoded)


def _written(insn: Insn, read: Read, got: GotRanges, mask: int) -> Value:
    """The value insn leaves in insn.rd."""
    m = base_mnemonic(insn.mnemonic, insn.conditional)

    def value(reg: str) -> Value:  # pc reads as the address two instructions on
        return (frozenset({DATA}), (insn.addr + 8) & mask) if reg == "pc" else read(reg)

    vals = [value(r) for r in insn.srcs]
    if insn.access == "load":
        return got_load(insn, read, got, mask, _REGS)
    if insn.access or insn.flow != "next" or insn.indirect:
        return UNKNOWN_VALUE  # an exclusive's status, a swapped value, a return address
    if insn.base == "pc":  # a literal: a constant or an address (=sym), like lui on RISC-V
        return frozenset({DATA}), None
    if m in ("mov", "movs", "movw", "mvn", "mvns") and not insn.srcs and insn.imm is not None:
        return frozenset({CONST}), (~insn.imm if m.startswith("mvn") else insn.imm) & mask
    if m in ("mov", "movs") and len(vals) == 1:
        return vals[0]
    if m == "movt":  # the top half of movw/movt: an absolute address, like lui
        return frozenset({DATA}), None
    if m in ("add", "adds", "sub", "subs") and len(vals) == 1 and insn.imm is not None:
        origins, known = vals[0]
        step = insn.imm if m.startswith("add") else -insn.imm
        return origins, (known + step) & mask if known is not None else None
    return union(vals) if vals else UNKNOWN_VALUE


def _table_jump(insn: Insn, read: Read) -> int | None:
    """`add pc, rX, rY[, lsl #n]` with rX a known address of the file (`adr rX, table`:
    copy_template's CALGN path under CONFIG_CPU_FEROCEON): a jump into the table of
    instructions at rX, entered at rX + rY and run on from there, as `add pc, pc, rY` is
    entered at pc + 8: following rX reaches every entry."""
    if not insn.indirect or base_mnemonic(insn.mnemonic, insn.conditional) != "add" or len(insn.srcs) < 2:
        return None
    origins, known = read(insn.srcs[0])
    return known if known is not None and origins <= {DATA} else None


ISA = Isa("arm", _REGS, None, "sp", ("r0", "r1", "r2", "r3"), _CALLER_SAVED, frozenset({"nop"}),
          _disassemble, _written, _table_jump)
