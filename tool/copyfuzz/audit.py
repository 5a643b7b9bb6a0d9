"""Static audit of a routine's exception table, on the linked executor (Capstone).

What it checks, for copy and clear routines:
  - every load and store the routine can execute (compressed forms included) that
    may touch the user buffer has a table entry; accesses based on sp (the stack)
    are exempt;
  - every table entry points at a load or store inside the file's code, and its fixup
    inside the file's code or fixup section; no instruction has two entries;
  - no code in a .fixup section is unreachable from every entry (dead fixups);
  - the routine has a table at all.
memcpy routines have no fixups by definition: the listing is still shown.

"The routine" is every instruction reachable from its symbol by direct jumps,
branches and calls, plus the fixups its covered accesses lead to: kernel files
often jump from the exported symbol into a shared body (fallback_scalar_usercopy).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from capstone import CS_ARCH_RISCV, CS_MODE_RISCV32, CS_MODE_RISCV64, CS_MODE_RISCVC, Cs
from capstone import riscv as cs_riscv
from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

from .elfinfo import Symbolizer
from .errors import CopyfuzzError
from .records import RETURNS_DST

if TYPE_CHECKING:
    from .routines import Routine

TEXT = "cf_target_text"  # the routine object's .text, renamed at build time
FIXUP = "cf_target_fixup"  # its .fixup section, if any
TABLE = "__ex_table"

_LOADS = {"lb", "lh", "lw", "ld", "lbu", "lhu", "lwu", "flw", "fld", "flh", "lr.w", "lr.d",
          "c.lw", "c.ld", "c.lwsp", "c.ldsp", "c.flw", "c.fld", "c.flwsp", "c.fldsp"}
_STORES = {"sb", "sh", "sw", "sd", "fsw", "fsd", "fsh", "sc.w", "sc.d",
           "c.sw", "c.sd", "c.swsp", "c.sdsp", "c.fsw", "c.fsd", "c.fswsp", "c.fsdsp"}
_BRANCHES = {"beq", "bne", "blt", "bge", "bltu", "bgeu", "beqz", "bnez", "blez", "bgez", "bltz",
             "bgtz", "bgt", "ble", "bgtu", "bleu", "c.beqz", "c.bnez"}
_STOPS = {"ret", "c.jr", "jr", "ebreak", "c.ebreak", "unimp", "c.unimp", "mret", "sret", "wfi"}


@dataclass
class Insn:
    addr: int
    size: int
    raw: bytes
    mnemonic: str
    op_str: str
    access: str | None = None  # "load" | "store"
    base: str | None = None  # base register of an access
    target: int | None = None  # direct jump/branch/call target
    flow: str = "next"  # next | jump | branch | call | stop


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

    @property
    def summary(self) -> dict[str, int]:
        acc = [i for i in self.listing if i.access]
        covered = [i for i in acc if i.addr in self.entries]
        exempt = [i for i in acc if i.addr not in self.entries and i.base == "sp"]
        return {
            "loads": len(self.accesses("load")),
            "stores": len(self.accesses("store")),
            "covered": len(covered),
            "uncovered": len(acc) - len(covered) - len(exempt),
            "stack": len(exempt),
            "fixups": len({self.entries[i.addr] for i in covered}),
            "entries": len(self.entries),
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
                    "fixup": (self.sym.describe(self.entries[i.addr]) if i.addr in self.entries else None),
                }
                for i in self.listing
            ],
        }


def _decode(md: Cs, data: bytes, base: int) -> dict[int, Insn]:
    out: dict[int, Insn] = {}
    for ci in md.disasm(data, base):
        insn = Insn(ci.address, ci.size, bytes(ci.bytes), ci.mnemonic, ci.op_str)
        m = ci.mnemonic
        regs = [ci.reg_name(op.reg) for op in ci.operands if op.type == cs_riscv.RISCV_OP_REG]
        imms = [op.imm for op in ci.operands if op.type == cs_riscv.RISCV_OP_IMM]
        mems = [op for op in ci.operands if op.type == cs_riscv.RISCV_OP_MEM]
        if m in _LOADS or m in _STORES or m.startswith("amo"):
            insn.access = "load" if m in _LOADS else "store"
            if m.endswith("sp") and m.startswith("c."):
                insn.base = "sp"
            elif mems:
                insn.base = ci.reg_name(mems[0].mem.base)
            elif regs:
                insn.base = regs[-1]  # compressed forms: REG, IMM, REG(base)
        elif m in ("j", "c.j"):
            insn.flow, insn.target = "jump", ci.address + imms[-1]
        elif m in ("jal", "c.jal"):
            linked = not regs or regs[0] != "zero"
            insn.flow, insn.target = ("call" if linked else "jump"), ci.address + imms[-1]
        elif m in _BRANCHES:
            insn.flow, insn.target = "branch", ci.address + imms[-1]
        elif m in ("jalr", "c.jalr"):
            insn.flow = "next" if (m == "c.jalr" or (regs and regs[0] != "zero")) else "stop"
        elif m in _STOPS:
            insn.flow = "stop"
        out[ci.address] = insn
    return out


def _disassemble(blobs: list[tuple[bytes, int]], xlen: int) -> dict[int, Insn]:
    md = Cs(CS_ARCH_RISCV, (CS_MODE_RISCV64 if xlen == 64 else CS_MODE_RISCV32) | CS_MODE_RISCVC)
    md.detail = True
    code: dict[int, Insn] = {}
    for data, base in blobs:
        code.update(_decode(md, data, base))
    return code


def code_around(elf_path: Path, xlen: int, addr: int, before: int = 3, after: int = 3) -> list[Insn]:
    """The routine's instructions around addr (from its code or fixup section), for reports."""
    try:
        with elf_path.open("rb") as f:
            elf = ELFFile(f)
            blobs = [(sec.data(), sec["sh_addr"]) for sec in elf.iter_sections()
                     if sec.name in (TEXT, FIXUP) and sec["sh_size"]]
    except (OSError, ELFError) as e:
        raise CopyfuzzError(f"cannot read {elf_path}: {e}") from e
    addrs = sorted(_disassemble(blobs, xlen).items())
    index = next((i for i, (a, _) in enumerate(addrs) if a == addr), None)
    if index is None:
        return []
    return [insn for _, insn in addrs[max(0, index - before):index + after + 1]]


def _walk(code: dict[int, Insn], roots: list[int]) -> set[int]:
    seen: set[int] = set()
    todo = [r for r in roots if r in code]
    while todo:
        addr = todo.pop()
        if addr in seen or addr not in code:
            continue
        seen.add(addr)
        insn = code[addr]
        if insn.target is not None:
            todo.append(insn.target)
        if insn.flow in ("next", "branch", "call"):
            todo.append(addr + insn.size)
    return seen


def read_table(data: bytes, base: int, fmt: str, xlen: int) -> list[tuple[int, int]]:
    """Entries (insn, fixup) of a linked __ex_table in either format."""
    if fmt == "rel":
        size = 12
        entries = []
        for off in range(0, len(data) - len(data) % size, size):
            insn, fixup, _type, _data = struct.unpack_from("<iihh", data, off)
            entries.append((base + off + insn, base + off + 4 + fixup))
        return entries
    if fmt == "abs":
        word = "<QQ" if xlen == 64 else "<II"
        size = struct.calcsize(word)
        return [struct.unpack_from(word, data, off) for off in range(0, len(data) - len(data) % size, size)]
    return []


def audit_executor(elf_path: Path, *, name: str, symbol: str, kind: str, xlen: int,
                   table_format: str) -> Audit:
    try:
        with elf_path.open("rb") as f:
            elf = ELFFile(f)
            sections = {s.name: s for s in elf.iter_sections()}
            if TEXT not in sections:
                raise CopyfuzzError(f"{elf_path}: no {TEXT} section (not a copyfuzz executor?)")
            code_ranges = []
            blobs = []
            for sname in (TEXT, FIXUP):
                sec = sections.get(sname)
                if sec is not None and sec["sh_size"]:
                    blobs.append((sec.data(), sec["sh_addr"]))
                    code_ranges.append((sname, sec["sh_addr"], sec["sh_addr"] + sec["sh_size"]))
            table = sections.get(TABLE)
            entries_list = read_table(table.data(), table["sh_addr"], table_format, xlen) if table else []
            entry_addr = None
            for sec in elf.iter_sections():
                if isinstance(sec, SymbolTableSection):
                    for s in sec.get_symbol_by_name(symbol) or []:
                        entry_addr = s["st_value"]
    except (OSError, ELFError) as e:
        raise CopyfuzzError(f"cannot read {elf_path}: {e}") from e
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
    reach = _walk(code, [entry_addr])
    while True:
        more = [entries[a] for a in reach if a in entries and entries[a] not in reach]
        if not more:
            break
        reach |= _walk(code, more)
    listing = [code[a] for a in sorted(reach)]

    if kind not in RETURNS_DST:  # memcpy, memset, memmove have no fixups by contract
        if not entries_list:
            problems.append(Problem(entry_addr, "the routine has no exception table: every fault is unhandled"))
        for insn in listing:
            if insn.access and insn.addr not in entries and insn.base != "sp":
                problems.append(Problem(insn.addr, f"{insn.access} '{insn.mnemonic} {insn.op_str}' has no table entry"))
    # Fixup code that no entry of the file can reach (dead fixups), in a .fixup section.
    all_fixups = _walk(code, list(entries.values()))
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

    argv = executor.executor_argv(root, routine.elf, build.run_prefix(routine.xlen))
    info = executor.info(argv)
    return audit_executor(root / routine.elf, name=routine.name, symbol=routine.symbol,
                          kind=routine.kind, xlen=routine.xlen, table_format=info.get("extable", "none"))
