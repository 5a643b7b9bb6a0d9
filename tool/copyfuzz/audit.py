"""Static audit of a routine's exception table, on the linked executor (Capstone).

What it checks, for copy and clear routines:
  - every load and store the routine can execute (compressed forms included) that may
    touch the user buffers has a table entry. Which accesses may: a small dataflow
    (below) follows what each register may hold from the entry. An access whose base is
    derived only from sp (the stack) or only from an auipc/lui address (the file's own
    data: a threshold variable, a GOT slot) needs no entry; every other one does,
    whether its base is derived from an argument pointer or of unknown origin;
  - the routine reaches at least one access through its argument pointers (a copy
    routine a load and a store, a clear routine a store): one that shows none copies
    with code the audit cannot see, and "no problems" would mean nothing;
  - every table entry points at a load or store inside the file's code, and its fixup
    inside the file's code or fixup section; no instruction has two entries;
  - no code in a .fixup section is unreachable from every entry (dead fixups);
  - the routine has a table at all.
memcpy routines have no fixups by definition: the listing is still shown.

"The routine" is every instruction reachable from its symbol: fall-through, j/jal,
branches, calls and tails (the auipc + jalr pairs `call X` and `tail X` assemble to,
resolved into direct targets) into any code of the file, plus the fixups its covered
accesses lead to. Kernel files fall through from the exported symbol into a shared
body, or `call` it (fallback_scalar_usercopy_sum_enabled).

The dataflow: each integer register holds a set of origins, joined over every path
(a fixed point over the reachable code): "user" (derived from an argument pointer:
a0 and a1 for copy and memcpy, a0 for clear), "stack" (from sp), "data" (from auipc
or lui: a symbol's address), "const" (a small constant) and "unknown" (anything else:
a loaded value, another argument, a call's result). Arithmetic unions its operands'
origins, so a pointer stays a user pointer through mv/add/addi/andi/shifts; a load
gives "unknown", except a load of a GOT slot (which holds a symbol's address). After
a call the caller-saved registers are unknown. Only "stack" or "data" alone exempts an
access: when unsure, the audit requires an entry. copy_from_user's destination and
copy_to_user's source are the kernel's own buffer ("kernel", exempt when alone): the
routine reaches user memory through the other pointer only.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from capstone import CS_ARCH_RISCV, CS_MODE_RISCV32, CS_MODE_RISCV64, CS_MODE_RISCVC, Cs
from capstone import riscv as cs_riscv
from elftools.common.exceptions import ELFError
from elftools.elf.constants import SH_FLAGS
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .elfinfo import Symbolizer
from .errors import CopyfuzzError
from .records import KERNEL_SIDE, KIND_ARGS, KINDS, RETURNS_DST

if TYPE_CHECKING:
    from .routines import Routine

TEXT = "cf_target_text"  # the routine object's .text, renamed at build time
FIXUP = "cf_target_fixup"  # its .fixup section, if any
TABLE = "__ex_table"
GOT = (".got", ".got.plt")  # slots that hold symbol addresses

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

# Origins of a register's value (see the module text), and how an access is classified.
USER, STACK, DATA, CONST, UNKNOWN, KERNEL = "user", "stack", "data", "const", "unknown", "kernel"
EXEMPT = ("stack", "data", "kernel")  # access classes that need no table entry


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
    target: int | None = None  # direct jump/branch/call target (auipc pairs resolved)
    flow: str = "next"  # next | jump | branch | call | stop
    rd: str | None = None  # integer register written, if any
    srcs: tuple[str, ...] = ()  # integer registers read
    imm: int | None = None  # the last immediate operand
    origin: str | None = None  # of an access's base: user | unknown | stack | data (set by the audit)
    indirect: bool = False  # a jalr the audit cannot resolve


@dataclass
class Problem:
    addr: int
    what: str

    def to_json(self, sym: Symbolizer) -> dict[str, str]:
        return {"address": f"{self.addr:#x}", "where": sym.describe(self.addr), "problem": self.what}


@dataclass
class Audit:
    name: str
    symbol: str
    kind: str
    table_format: str
    listing: list[Insn]
    entries: dict[int, int]  # insn -> fixup
    problems: list[Problem] = field(default_factory=list)
    sym: Symbolizer | None = None
    table: list[tuple[int, int]] = field(default_factory=list)  # (insn, fixup) in table order

    def accesses(self, which: str) -> list[Insn]:
        return [i for i in self.listing if i.access == which]

    def needs_entry(self, insn: Insn) -> bool:
        return insn.access is not None and insn.origin not in EXEMPT

    @property
    def summary(self) -> dict[str, int]:
        acc = [i for i in self.listing if i.access]
        covered = [i for i in acc if i.addr in self.entries]
        return {
            "reachable": len(self.listing),
            "loads": len(self.accesses("load")),
            "stores": len(self.accesses("store")),
            "user": sum(1 for i in acc if i.origin == USER),
            "unknown_base": sum(1 for i in acc if i.origin == UNKNOWN),
            "covered": len(covered),
            "uncovered": sum(1 for i in acc if i.addr not in self.entries and self.needs_entry(i)),
            "stack": sum(1 for i in acc if i.addr not in self.entries and i.origin == STACK),
            "data": sum(1 for i in acc if i.addr not in self.entries and i.origin == DATA),
            "kernel": sum(1 for i in acc if i.addr not in self.entries and i.origin == KERNEL),
            "fixups": len({self.entries[i.addr] for i in covered}),
            "entries": len(self.entries),
            "indirect": sum(1 for i in self.listing if i.indirect),
        }

    def to_json(self) -> dict[str, object]:
        assert self.sym is not None
        return {
            "name": self.name,
            "symbol": self.symbol,
            "kind": self.kind,
            "extable": self.table_format,
            "summary": self.summary,
            "problems": [p.to_json(self.sym) for p in self.problems],
            "listing": [
                {
                    "address": f"{i.addr:#x}",
                    "where": self.sym.describe(i.addr),
                    "bytes": i.raw.hex(),
                    "insn": f"{i.mnemonic} {i.op_str}".strip(),
                    "access": i.access,
                    "base": i.origin,
                    "fixup": (self.sym.describe(self.entries[i.addr]) if i.addr in self.entries else None),
                    "target": (f"{i.target:#x}" if i.target is not None else None),
                }
                for i in self.listing
            ],
        }


def _sext(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


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
                insn.disp = _sext(word >> 20, 12) if opcode == 0x07 else _sext(((word >> 25) << 5) | rd, 12)
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
        nxt.target = addr + (_sext(insn.imm, 20) << 12) + (nxt.imm or 0)
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


def _disassemble(blobs: list[tuple[bytes, int]], xlen: int) -> dict[int, Insn]:
    md = Cs(CS_ARCH_RISCV, (CS_MODE_RISCV64 if xlen == 64 else CS_MODE_RISCV32) | CS_MODE_RISCVC)
    md.detail = True
    code: dict[int, Insn] = {}
    for data, base in blobs:
        code.update(_decode(md, data, base))
    return code


def _is_routine_section(name: str) -> bool:
    return name in (TEXT, FIXUP) or name.startswith(TEXT + ".")


def code_around(elf_path: Path, xlen: int, addr: int, before: int = 3, after: int = 3) -> list[Insn]:
    """The instructions around addr, from whichever executable section holds it (the
    routine's code, its fixups, any other code section of the file), for reports."""
    try:
        with elf_path.open("rb") as f:
            elf = ELFFile(f)
            blobs = [(sec.data(), sec["sh_addr"]) for sec in elf.iter_sections()
                     if sec["sh_flags"] & SH_FLAGS.SHF_EXECINSTR and sec["sh_type"] != "SHT_NOBITS"
                     and sec["sh_addr"] <= addr < sec["sh_addr"] + sec["sh_size"]]
    except (OSError, ELFError) as e:
        raise CopyfuzzError(f"cannot read {elf_path}: {e}") from e
    addrs = sorted(_disassemble(blobs, xlen).items())
    index = next((i for i, (a, _) in enumerate(addrs) if a == addr), None)
    if index is None:
        return []
    return [insn for _, insn in addrs[max(0, index - before):index + after + 1]]


# ---- the dataflow: what each integer register may hold ----

Value = tuple[frozenset[str], "int | None"]  # origins, and the exact value when known
State = tuple[Value, ...]  # indexed like _XREGS
_INDEX = {r: i for i, r in enumerate(_XREGS)}
_UNKNOWN: Value = (frozenset({UNKNOWN}), None)
# Pointer arguments per kind; a kind not listed is treated as taking two.
# The argument registers that hold user pointers (a0, a1, ... in the order of the kind's
# arguments), and the kernel's own buffer of a one-way user copy (its accesses need no entry).
POINTER_ARGS = {kind: tuple(f"a{i}" for i, arg in enumerate(args)
                            if arg in ("dst", "src") and KERNEL_SIDE.get(kind) != arg)
                for kind, args in KIND_ARGS.items()}
KERNEL_ARGS = {kind: (f"a{KIND_ARGS[kind].index(side)}",) for kind, side in KERNEL_SIDE.items()}
TABLE_KINDS = tuple(k for k in KINDS if k not in RETURNS_DST)  # their user accesses need table entries
# Compressed forms whose destination is also a source (c.addi rd, imm: rd += imm).
_C_NOT_READING_RD = {"c.mv", "c.li", "c.lui", "c.addi4spn"}


def _entry_state(kind: str) -> State:
    state = [_UNKNOWN] * 32
    state[_INDEX["zero"]] = (frozenset({CONST}), 0)
    state[_INDEX["sp"]] = (frozenset({STACK}), None)
    for reg in POINTER_ARGS.get(kind, ("a0", "a1")):  # "": a fixup, entered from any kind
        state[_INDEX[reg]] = (frozenset({USER}), None)
    for reg in KERNEL_ARGS.get(kind, ()):
        state[_INDEX[reg]] = (frozenset({KERNEL}), None)
    return tuple(state)


def _union(values: list[Value]) -> Value:
    origins = frozenset().union(*(v[0] for v in values)) if values else frozenset({UNKNOWN})
    if len(origins) > 1:
        origins -= {CONST}  # pointer + constant is still that pointer
    return origins, None


def _join(a: State, b: State) -> State:
    return tuple(x if x == y else (x[0] | y[0], x[1] if x[1] == y[1] else None) for x, y in zip(a, b))


def _written(insn: Insn, state: State, got: list[tuple[int, int]], mask: int) -> Value:
    """The value insn leaves in insn.rd."""
    m = insn.mnemonic
    srcs = list(insn.srcs)
    if m.startswith("c.") and m not in _C_NOT_READING_RD and insn.rd and insn.access is None:
        srcs.insert(0, insn.rd)
    vals = [state[_INDEX[r]] for r in srcs]
    imm = insn.imm or 0
    if insn.access == "load":
        addr = state[_INDEX[insn.base]][1] if insn.base in _INDEX else None
        if addr is not None and any(lo <= (addr + insn.disp) & mask < hi for lo, hi in got):
            return frozenset({DATA}), None  # a GOT slot: a symbol's address
        return _UNKNOWN
    if insn.access or insn.flow != "next" or insn.indirect or m in ("jalr", "c.jalr"):
        return _UNKNOWN  # an amo's old value, a return address
    if m == "auipc":
        return frozenset({DATA}), (insn.addr + (_sext(imm, 20) << 12)) & mask
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
    return _union(vals) if vals else _UNKNOWN


def _set(state: State, reg: str | None, value: Value) -> State:
    if reg is None or reg not in _INDEX or reg == "zero":
        return state
    out = list(state)
    out[_INDEX[reg]] = value
    return tuple(out)


def _after_call(state: State) -> State:
    """What the caller may rely on after a call: the callee-saved registers."""
    out = list(state)
    for reg in _CALLER_SAVED:
        out[_INDEX[reg]] = _UNKNOWN
    return tuple(out)


def _flow(code: dict[int, Insn], entries: dict[int, int], roots: list[tuple[int, State]],
          got: list[tuple[int, int]], xlen: int) -> dict[int, State]:
    """Every instruction reachable from the roots (through fixups too), with the register
    state on entry to it: a fixed point of the transfer functions above."""
    mask = (1 << xlen) - 1
    states: dict[int, State] = {}
    todo = list(roots)
    while todo:
        addr, incoming = todo.pop()
        insn = code.get(addr)
        if insn is None:
            continue  # outside the file's code (a call into other code): not followed
        old = states.get(addr)
        state = incoming if old is None else _join(old, incoming)
        if state == old:
            continue
        states[addr] = state
        out = _set(state, insn.rd, _written(insn, state, got, mask))
        following = addr + insn.size
        if insn.access and addr in entries:
            todo.append((entries[addr], state))  # a fault leaves the registers as they were
        if insn.flow == "call":
            if insn.target is not None:
                todo.append((insn.target, out))
            todo.append((following, _after_call(out)))
        elif insn.flow == "next":
            todo.append((following, _after_call(out) if insn.indirect else out))
        elif insn.flow == "branch":
            todo += [(insn.target, out), (following, out)]  # type: ignore[list-item]
        elif insn.flow == "jump" and insn.target is not None:
            todo.append((insn.target, out))
    return states


def _origin(value: Value) -> str:
    origins = value[0]
    if USER in origins:
        return USER
    if origins <= {STACK}:
        return STACK
    if origins <= {STACK, DATA}:
        return DATA
    if origins <= {KERNEL}:
        return KERNEL
    return UNKNOWN


def read_table(data: bytes, base: int, fmt: str, xlen: int) -> list[tuple[int, int]]:
    """Entries (insn, fixup) of a linked __ex_table in either format."""
    if fmt in ("rel", "rel8"):  # { int insn, fixup; [short type, data;] } (extable.h)
        size = 12 if fmt == "rel" else 8
        entries = []
        for off in range(0, len(data) - len(data) % size, size):
            insn, fixup = struct.unpack_from("<ii", data, off)
            entries.append((base + off + insn, base + off + 4 + fixup))
        return entries
    if fmt == "abs":
        word = "<QQ" if xlen == 64 else "<II"
        size = struct.calcsize(word)
        return [struct.unpack_from(word, data, off) for off in range(0, len(data) - len(data) % size, size)]
    return []


def _read_executor(elf_path: Path, symbol: str, table_format: str, xlen: int) -> tuple[
        list[tuple[bytes, int]], list[tuple[str, int, int]], list[tuple[int, int]], list[tuple[int, int]], int | None]:
    """The routine's code (blobs and ranges), its table, the GOT's ranges, the symbol's address."""
    try:
        with elf_path.open("rb") as f:
            elf = ELFFile(f)
            sections = {s.name: s for s in elf.iter_sections()}
            if TEXT not in sections:
                raise CopyfuzzError(f"{elf_path}: no {TEXT} section (not a copyfuzz executor?)")
            code_ranges = []
            blobs = []
            for sec in elf.iter_sections():
                if _is_routine_section(sec.name) and sec["sh_size"]:
                    blobs.append((sec.data(), sec["sh_addr"]))
                    code_ranges.append((sec.name, sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]))
            got = [(sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]) for sec in elf.iter_sections()
                   if sec.name in GOT]
            table = sections.get(TABLE)
            entries_list = read_table(table.data(), table["sh_addr"], table_format, xlen) if table else []
            entry_addr = None
            for sec in elf.iter_sections():
                if isinstance(sec, SymbolTableSection):
                    for s in sec.get_symbol_by_name(symbol) or []:
                        entry_addr = s["st_value"]
    except (OSError, ELFError) as e:
        raise CopyfuzzError(f"cannot read {elf_path}: {e}") from e
    return blobs, code_ranges, entries_list, got, entry_addr


def _no_user_access(kind: str, listing: list[Insn]) -> str | None:
    """A copy (clear) routine shows a load and a store (a store) through its pointers, or
    the audit did not see how it reaches user memory: then a clean audit would mean nothing."""
    if kind not in TABLE_KINDS:
        return None
    # the user side: both for copy, the source's loads for copy_from_user, else stores
    needed = {"copy": ("load", "store"), "copy_from_user": ("load",)}.get(kind, ("store",))
    seen = {i.access for i in listing if i.access and i.origin in (USER, UNKNOWN)}
    missing = [a for a in needed if a not in seen]
    if not missing:
        return None
    args = " and ".join(POINTER_ARGS[kind])
    return (f"no reachable {' or '.join(missing)} through the argument pointers ({args}): the audit cannot "
            f"see how the routine reaches user memory (an indirect jump, or code outside the file?), "
            f"so it checked nothing")


def audit_executor(elf_path: Path, *, name: str, symbol: str, kind: str, xlen: int,
                   table_format: str) -> Audit:
    blobs, code_ranges, entries_list, got, entry_addr = _read_executor(elf_path, symbol, table_format, xlen)
    if entry_addr is None:
        raise CopyfuzzError(f"{name}: symbol {symbol!r} is not in the linked executor")

    code = _disassemble(blobs, xlen)

    def in_section(addr: int, which: str | None = None) -> bool:
        return any(lo <= addr < hi for s, lo, hi in code_ranges if which in (None, s))

    entries: dict[int, int] = {}
    problems: list[Problem] = []
    for insn_addr, fixup in entries_list:
        if insn_addr in entries:
            problems.append(Problem(insn_addr, "duplicate table entry for this instruction"))
            continue
        entries[insn_addr] = fixup
        target = code.get(insn_addr)
        if target is None:
            where = "not on an instruction boundary" if in_section(insn_addr) else "outside the routine's code"
            problems.append(Problem(insn_addr, f"table entry points {where}"))
        elif target.access is None:
            problems.append(Problem(insn_addr, f"table entry points at '{target.mnemonic}', not a load or store"))
        if fixup not in code:
            problems.append(Problem(insn_addr, f"fixup {fixup:#x} is outside the routine's code and fixup section"))

    # The routine: reachable from its symbol, then through the fixups of what it covers.
    states = _flow(code, entries, [(entry_addr, _entry_state(kind))], got, xlen)
    listing = [code[a] for a in sorted(states)]
    for insn in listing:
        if insn.access and insn.base in _INDEX:
            insn.origin = _origin(states[insn.addr][_INDEX[insn.base]])
        elif insn.access:
            insn.origin = UNKNOWN

    if kind in TABLE_KINDS:
        if not entries_list:
            problems.append(Problem(entry_addr, "the routine has no exception table: every fault is unhandled"))
        for insn in listing:
            if insn.access and insn.addr not in entries and insn.origin not in EXEMPT:
                why = "" if insn.origin == USER else \
                    " (its base's origin is unknown to the audit: treated as a user pointer)"
                problems.append(Problem(insn.addr, f"{insn.access} '{insn.mnemonic} {insn.op_str}' "
                                                   f"has no table entry{why}"))
        missing = _no_user_access(kind, listing)
        if missing:
            problems.append(Problem(entry_addr, missing))
    # Fixup code that no entry of the file can reach (dead fixups), in a .fixup section.
    all_fixups = _flow(code, entries, [(f, _entry_state("")) for f in entries.values()], got, xlen)
    for addr in sorted(code):
        padding = code[addr].mnemonic in ("nop", "c.nop") or not any(code[addr].raw)
        if in_section(addr, FIXUP) and addr not in all_fixups and not padding:
            problems.append(Problem(addr, "fixup code no table entry can reach"))
            break  # one report per dead block is enough to point at it
    problems.sort(key=lambda p: p.addr)
    sym = Symbolizer(elf_path, prefer=(symbol,))
    return Audit(name, symbol, kind, table_format, listing, entries, problems, sym, entries_list)


def audit_routine(root: Path, routine: "Routine") -> Audit:
    """Audit a routine's built executor; the table format comes from the executor itself
    (the build read it off the routine object's relocations)."""
    from . import build, executor  # here, to keep this module free of process handling

    argv = executor.executor_argv(root, routine.elf, build.routine_prefix(routine))
    info = executor.info(argv)
    return audit_executor(root / routine.elf, name=routine.name, symbol=routine.symbol,
                          kind=routine.kind, xlen=routine.xlen, table_format=info.get("extable", "none"))
