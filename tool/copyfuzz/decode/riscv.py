"""RISC-V for the audit: Capstone's RV32/RV64 with C, plus our own decoding of what
Capstone 5 lacks (V loads and stores, vsetvli), and the dataflow's transfer function.

"The routine" reaches its code through fall-through, j/jal, branches, calls and tails:
the auipc + jalr pairs `call X` and `tail X` assemble to are resolved into direct
targets. A value from auipc or lui is a symbol's address (data).
"""

from __future__ import annotations

from capstone import CS_ARCH_RISCV, CS_MODE_RISCV32, CS_MODE_RISCV64, CS_MODE_RISCVC, Cs
from capstone import riscv as cs_riscv

from . import CONST, DATA, UNKNOWN_VALUE, Blobs, GotRanges, Insn, Isa, Read, Value, got_load, sext, union

_LOADS = {"lb", "lh", "lw", "ld", "lbu", "lhu", "lwu", "flw", "fld", "flh", "lr.w", "lr.d",
          "c.lw", "c.ld", "c.lwsp", "c.ldsp", "c.flw", "c.fld", "c.flwsp", "c.fldsp"}
_STORES = {"sb", "sh", "sw", "sd", "fsw", "fsd", "fsh", "sc.w", "sc.d",
           "c.sw", "c.sd", "c.swsp", "c.sdsp", "c.fsw", "c.fsd", "c.fswsp", "c.fsdsp"}
_BRANCHES = {"beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz",
             "bgtz", "bgt", "ble", "bgtu", "bleu", "c.beqz", "c.bnez"}
_STOPS = {"ret", "c.jr", "jr", "ebreak", "c.ebreak", "unimp", "c.unimp", "mret", "sret", "wfi"}
_JALR = {"jalr", "c.jalr", "jr", "c.jr"}
# Integer registers by number (ABI names, as Capstone prints them).
_XREGS = ("zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
          "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
          "t5", "t6")
_CALLER_SAVED = ("ra", "t0", "t1", "t2", "a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "t3", "t4", "t5", "t6")
# Writes no integer register (CSR pseudo-instructions name a source, not a destination).
_NO_WRITE = {"csrw", "csrs", "csrc", "csrwi", "csrsi", "csrci", "fence", "fence.i", "fence.tso", "ecall",
             "nop", "c.nop", "sfence.vma", "pause"}
# Compressed forms whose destination is also a source (c.addi rd, imm: rd += imm).
_C_NOT_READING_RD = {"c.mv", "c.li", "c.lui", "c.addi4spn"}


_VEEW = {0: 8, 5: 16, 6: 32, 7: 64}  # width field of a vector load/store -> element width
_VLMUL = {0: "m1", 1: "m2", 2: "m4", 3: "m8", 5: "mf8", 6: "mf4", 7: "mf2"}


def _vtype(z: int) -> str:
    sew = 8 << ((z >> 3) & 7)
    return f"e{sew}, {_VLMUL.get(z & 7, 'm?')}, {'ta' if z >> 6 & 1 else 'tu'}, {'ma' if z >> 7 & 1 else 'mu'}"


def _vector_mem(word: int) -> tuple[str, str, tuple[int, ...]] | None:
    """A V load or store (LOAD-FP/STORE-FP with a vector width): its mnemonic, operands
    and the integer registers it reads (rs1, and rs2 for a strided access); None for the
    scalar FP widths."""
    width = (word >> 12) & 7
    if width not in _VEEW:
        return None
    load = word & 0x7F == 0x07
    vd, rs1, rs2 = (word >> 7) & 31, (word >> 15) & 31, (word >> 20) & 31
    masked, mop, nf = not (word >> 25) & 1, (word >> 26) & 3, (word >> 29) & 7
    eew, ls, seg = _VEEW[width], "l" if load else "s", f"seg{nf + 1}" if nf else ""
    regs: tuple[int, ...] = (rs1,)
    if mop == 0:  # unit-stride: lumop/sumop in the rs2 field
        ops = f"v{vd}, ({_XREGS[rs1]})"
        if rs2 == 8:
            m = f"vl{nf + 1}re{eew}.v" if load else f"vs{nf + 1}r.v"
        elif rs2 == 0xB:
            m = f"v{ls}m.v"
        elif rs2 == 0x10 and load:
            m = f"vl{seg}e{eew}ff.v"
        else:
            m = f"v{ls}{seg}e{eew}.v"
    elif mop == 2:  # strided
        m, ops, regs = f"v{ls}s{seg}e{eew}.v", f"v{vd}, ({_XREGS[rs1]}), {_XREGS[rs2]}", (rs1, rs2)
    else:  # indexed, unordered (1) or ordered (3)
        m, ops = f"v{ls}{'o' if mop == 3 else 'u'}xei{eew}{seg and '_' + seg}.v", f"v{vd}, ({_XREGS[rs1]}), v{rs2}"
    return m, ops + (", v0.t" if masked else ""), regs


def _vsetvl(word: int) -> tuple[str, str] | None:
    """vsetvli / vsetivli / vsetvl (OP-V, funct3 7): mnemonic and operands."""
    if word & 0x7F != 0x57 or (word >> 12) & 7 != 7:
        return None
    rd, rs1, rs2 = _XREGS[(word >> 7) & 31], (word >> 15) & 31, (word >> 20) & 31
    if not word >> 31:
        return "vsetvli", f"{rd}, {_XREGS[rs1]}, {_vtype((word >> 20) & 0x7FF)}"
    if word >> 30 == 3:
        return "vsetivli", f"{rd}, {rs1}, {_vtype((word >> 20) & 0x3FF)}"
    return "vsetvl", f"{rd}, {_XREGS[rs1]}, {_XREGS[rs2]}"


def _undecoded(data: bytes, addr: int) -> Insn:
    """Bytes Capstone does not know (an illegal instruction, or an extension it lacks:
    Capstone 5 decodes none of V, nor Zb*). Its length from the encoding's low bits. A
    vector load or store (the LOAD-FP and STORE-FP opcodes Capstone left) is still an
    access through x[rs1], named by our own decoder (vle8.v, vse32.v, vlse8.v, ...);
    vsetvli and its kin are named too; anything else keeps its bytes as its name and
    may write x[rd] (a value of unknown origin: an access through it needs an entry)."""
    size = 4 if len(data) >= 4 and data[0] & 3 == 3 else 2
    raw = bytes(data[:size])
    insn = Insn(addr, size, raw, "(undecoded)", raw.hex())
    if size == 4:
        word = int.from_bytes(raw, "little")
        opcode, rd, rs1 = word & 0x7F, (word >> 7) & 31, (word >> 15) & 31
        vset = _vsetvl(word)
        if opcode in (0x07, 0x27):
            insn.access = "load" if opcode == 0x07 else "store"
            vmem = _vector_mem(word)
            if vmem:
                insn.mnemonic, insn.op_str = vmem[0], vmem[1]
                insn.srcs = tuple(_XREGS[r] for r in vmem[2])
            else:
                insn.mnemonic, insn.op_str = f"(fp {insn.access})", f"base {_XREGS[rs1]}"
                insn.srcs = (_XREGS[rs1],)
                if insn.access == "load":
                    insn.rd = None  # an FP register
            insn.base = _XREGS[rs1]
            if not vmem:
                insn.disp = sext(word >> 20, 12) if opcode == 0x07 else sext(((word >> 25) << 5) | rd, 12)
        elif vset:
            insn.mnemonic, insn.op_str = vset
            insn.rd = _XREGS[rd] if rd else None  # vl: a count
        elif rd:
            insn.rd = _XREGS[rd]  # whatever it is, it may write x[rd]
    return insn


def _decode_one(ci: object) -> Insn:
    insn = Insn(ci.address, ci.size, bytes(ci.bytes), ci.mnemonic, ci.op_str)  # type: ignore[attr-defined]
    m = insn.mnemonic
    ops = ci.operands  # type: ignore[attr-defined]
    regs = [ci.reg_name(op.reg) for op in ops if op.type == cs_riscv.RISCV_OP_REG]  # type: ignore[attr-defined]
    imms = [op.imm for op in ops if op.type == cs_riscv.RISCV_OP_IMM]
    mems = [op for op in ops if op.type == cs_riscv.RISCV_OP_MEM]
    xregs = [r for r in regs if r in _XREGS]
    insn.imm = imms[-1] if imms else None
    if m in _LOADS or m in _STORES or m.startswith("amo"):
        insn.access = "load" if m in _LOADS else "store"
        if m.endswith("sp") and m.startswith("c."):
            insn.base = "sp"
        elif mems:
            insn.base = ci.reg_name(mems[0].mem.base)  # type: ignore[attr-defined]
            insn.disp = mems[0].mem.disp
        elif regs:
            insn.base = regs[-1]  # compressed forms: REG, IMM, REG(base)
        if not mems and imms:
            insn.disp = imms[-1]
        if m in _LOADS or m.startswith(("amo", "sc.")):
            insn.rd = regs[0] if regs and regs[0] in _XREGS else None  # a loaded value, an sc result
        insn.srcs = tuple(r for r in (insn.base,) if r in _XREGS)
    elif m in ("j", "c.j"):
        insn.flow, insn.target = "jump", ci.address + imms[-1]  # type: ignore[attr-defined]
    elif m in ("jal", "c.jal"):
        linked = not regs or regs[0] != "zero"
        insn.flow, insn.target = ("call" if linked else "jump"), ci.address + imms[-1]  # type: ignore[attr-defined]
        insn.rd = (regs[0] if regs else "ra") if linked else None
    elif m in _BRANCHES:
        insn.flow, insn.target = "branch", ci.address + imms[-1]  # type: ignore[attr-defined]
        insn.srcs = tuple(xregs)
    elif m in _JALR:
        # jalr rd, rs, off / jalr rs (links ra) / jr rs / c.jalr rs (links ra) / c.jr rs
        if m == "c.jalr" or (m == "jalr" and len(xregs) == 1):
            insn.rd = "ra"
        elif m == "jalr" and xregs and xregs[0] != "zero":
            insn.rd = xregs[0]
        linked = insn.rd is not None
        insn.srcs = (xregs[-1],) if xregs else ()
        insn.flow = "next" if linked else "stop"
        insn.indirect = not (m in ("c.jr", "jr") and insn.srcs == ("ra",))  # a return is no indirect jump
        if m == "jalr" and len(xregs) == 2 and xregs == ["zero", "ra"] and not insn.imm:
            insn.indirect = False  # `ret` spelled out
    elif m in _STOPS:
        insn.flow = "stop"
    elif m not in _NO_WRITE and xregs:
        insn.rd = xregs[0] if xregs[0] != "zero" else None
        insn.srcs = tuple(xregs[1:])
    return insn


def _resolve_pairs(code: dict[int, Insn]) -> None:
    """auipc rX + jalr/jr through rX right after it (`call X`, `tail X`): a direct target."""
    for addr, insn in code.items():
        nxt = code.get(addr + insn.size)
        if insn.mnemonic != "auipc" or nxt is None or nxt.mnemonic not in _JALR or nxt.srcs != (insn.rd,):
            continue
        assert insn.imm is not None
        nxt.target = addr + (sext(insn.imm, 20) << 12) + (nxt.imm or 0)
        nxt.flow = "call" if nxt.rd else "jump"
        nxt.indirect = False


def _decode(md: Cs, data: bytes, base: int) -> dict[int, Insn]:
    out: dict[int, Insn] = {}
    off = 0
    while off < len(data):
        for ci in md.disasm(data[off:], base + off):
            out[ci.address] = _decode_one(ci)
            off = ci.address + ci.size - base
        if off < len(data):  # Capstone stopped at bytes it cannot decode: step over them
            insn = _undecoded(data[off:], base + off)
            out[insn.addr] = insn
            off += insn.size
    _resolve_pairs(out)
    return out


def _disassemble(blobs: Blobs, xlen: int) -> dict[int, Insn]:
    md = Cs(CS_ARCH_RISCV, (CS_MODE_RISCV64 if xlen == 64 else CS_MODE_RISCV32) | CS_MODE_RISCVC)
    md.detail = True
    code: dict[int, Insn] = {}
    for data, base in blobs:
        code.update(_decode(md, data, base))
    return code


def _written(insn: Insn, read: Read, got: GotRanges, mask: int) -> Value:
    """The value insn leaves in insn.rd."""
    m = insn.mnemonic
    srcs = list(insn.srcs)
    if m.startswith("c.") and m not in _C_NOT_READING_RD and insn.rd and insn.access is None:
        srcs.insert(0, insn.rd)
    vals = [read(r) for r in srcs]
    imm = insn.imm or 0
    if insn.access == "load":
        return got_load(insn, read, got, mask, _XREGS)
    if insn.access or insn.flow != "next" or insn.indirect or m in ("jalr", "c.jalr"):
        return UNKNOWN_VALUE  # an amo's old value, a return address
    if m == "auipc":
        return frozenset({DATA}), (insn.addr + (sext(imm, 20) << 12)) & mask
    if m in ("lui", "c.lui"):
        return frozenset({DATA}), None
    if m in ("li", "c.li") or (m in ("addi", "addiw") and srcs == ["zero"]):
        return frozenset({CONST}), imm & mask
    if m in ("mv", "c.mv") and vals:
        return vals[0]
    if m in ("addi", "addiw", "c.addi", "c.addiw", "c.addi16sp", "c.addi4spn") and len(vals) == 1:
        origins, value = vals[0]
        return origins, (value + imm) & mask if value is not None else None
    if m.startswith("sc.") or m.startswith("vset"):
        return frozenset({CONST}), None  # an sc result, a vl
    return union(vals) if vals else UNKNOWN_VALUE


ISA = Isa("riscv", _XREGS, "zero", "sp", tuple(f"a{i}" for i in range(8)), _CALLER_SAVED,
          frozenset({"nop", "c.nop"}), _disassemble, _written)
