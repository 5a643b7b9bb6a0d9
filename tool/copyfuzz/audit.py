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
a call the caller-saved registers are unknown. A conditional instruction (ARM) may not
run: the registers it writes keep their old origins too. Only "stack" or "data" alone
exempts an access: when unsure, the audit requires an entry. copy_from_user's
destination and copy_to_user's source are the kernel's own buffer ("kernel", exempt
when alone): the routine reaches user memory through the other pointer only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import decode
from .decode import CONST, KERNEL, STACK, UNKNOWN, UNKNOWN_VALUE, USER, Insn, Isa, Read, Value
from .elfinfo import Symbolizer
from .elfread import SHT_NOBITS, ElfError, ElfImage
from .errors import CopyfuzzError
from .records import KERNEL_SIDE, KIND_ARGS, KINDS, RETURNS_DST, side_faults

if TYPE_CHECKING:
    from .routines import Routine

TEXT = "cf_target_text"  # the routine object's .text, renamed at build time
FIXUP = "cf_target_fixup"  # its .fixup section, if any
TABLE = "__ex_table"
GOT = (".got", ".got.plt")  # slots that hold symbol addresses

DATA = decode.DATA
EXEMPT = ("stack", "data", "kernel")  # access classes that need no table entry


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


def _is_routine_section(name: str) -> bool:
    return name in (TEXT, FIXUP) or name.startswith(TEXT + ".")


def code_around(elf_path: Path, xlen: int, addr: int, before: int = 3, after: int = 3, *,
                arch: str) -> list[Insn]:
    """The instructions around addr, from whichever executable section holds it (the
    routine's code, its fixups, any other code section of the file), for reports."""
    try:
        elf = ElfImage(elf_path)
        blobs = [(elf.section_data(sec), sec.addr) for sec in elf.sections
                 if sec.executable and sec.type != SHT_NOBITS and sec.addr <= addr < sec.addr + sec.size]
    except (OSError, ElfError) as e:
        raise CopyfuzzError(f"cannot read {elf_path}: {e}") from e
    addrs = sorted(decode.for_arch(arch).disassemble(blobs, xlen).items())
    index = next((i for i, (a, _) in enumerate(addrs) if a == addr), None)
    if index is None:
        return []
    return [insn for _, insn in addrs[max(0, index - before):index + after + 1]]


# ---- the dataflow: what each integer register may hold ----

State = tuple[Value, ...]  # indexed like the architecture's Isa.regs
TABLE_KINDS = tuple(k for k in KINDS if k not in RETURNS_DST)  # their user accesses need table entries


def pointer_args(kind: str, isa: Isa) -> tuple[str, ...]:
    """The argument registers that hold user pointers (in the order of the kind's
    arguments); a kind not listed is treated as taking two."""
    if kind not in KIND_ARGS:
        return isa.args[:2]
    return tuple(isa.args[i] for i, arg in enumerate(KIND_ARGS[kind])
                 if arg in ("dst", "src") and KERNEL_SIDE.get(kind) != arg)


def kernel_args(kind: str, isa: Isa) -> tuple[str, ...]:
    """The kernel's own buffer of a one-way user copy: its accesses need no entry."""
    side = KERNEL_SIDE.get(kind)
    return (isa.args[KIND_ARGS[kind].index(side)],) if side else ()


def _entry_state(kind: str, isa: Isa) -> State:
    index = {r: i for i, r in enumerate(isa.regs)}
    state = [UNKNOWN_VALUE] * len(isa.regs)
    if isa.zero:
        state[index[isa.zero]] = (frozenset({CONST}), 0)
    state[index[isa.sp]] = (frozenset({STACK}), None)
    for reg in pointer_args(kind, isa) if kind else isa.args[:2]:  # "": a fixup, entered from any kind
        state[index[reg]] = (frozenset({USER}), None)
    for reg in kernel_args(kind, isa):
        state[index[reg]] = (frozenset({KERNEL}), None)
    return tuple(state)


def _reader(state: State, index: dict[str, int]) -> Read:
    """The value of a register in state, for Isa.table_jump."""
    return lambda reg: state[index[reg]] if reg in index else UNKNOWN_VALUE


def _join(a: State, b: State) -> State:
    return tuple(x if x == y else (x[0] | y[0], x[1] if x[1] == y[1] else None) for x, y in zip(a, b, strict=True))


def _set(state: State, index: dict[str, int], isa: Isa, reg: str | None, value: Value) -> State:
    if reg is None or reg not in index or reg == isa.zero:
        return state
    out = list(state)
    out[index[reg]] = value
    return tuple(out)


def _after_call(state: State, index: dict[str, int], isa: Isa) -> State:
    """What the caller may rely on after a call: the callee-saved registers."""
    out = list(state)
    for reg in isa.caller_saved:
        out[index[reg]] = UNKNOWN_VALUE
    return tuple(out)


def _transfer(insn: Insn, state: State, index: dict[str, int], isa: Isa, got: list[tuple[int, int]],
              mask: int) -> State:
    """The state after insn: what it writes (the further registers of a pair or multiple
    load hold loaded values; a pre/post-indexed access moves its base on, which stays what
    it was). A conditional instruction may not run: every register keeps its old value too."""
    def read(reg: str) -> Value:
        return state[index[reg]] if reg in index else UNKNOWN_VALUE

    out = _set(state, index, isa, insn.rd, isa.written(insn, read, got, mask))
    for reg in insn.also:
        out = _set(out, index, isa, reg, UNKNOWN_VALUE)
    if insn.writeback and insn.base:
        out = _set(out, index, isa, insn.base, (read(insn.base)[0], None))
    return _join(state, out) if insn.conditional else out


def _flow(code: dict[int, Insn], entries: dict[int, int], roots: list[tuple[int, State]],
          got: list[tuple[int, int]], xlen: int, isa: Isa, resolved: set[int] | None = None) -> dict[int, State]:
    """Every instruction reachable from the roots (through fixups too), with the register
    state on entry to it: a fixed point of the transfer functions. An indirect jump whose
    target the state gives (isa.table_jump) is followed; its address goes into resolved."""
    mask = (1 << xlen) - 1
    index = {r: i for i, r in enumerate(isa.regs)}
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
        out = _transfer(insn, state, index, isa, got, mask)
        following = addr + insn.size
        if insn.indirect and isa.table_jump is not None:
            target = isa.table_jump(insn, _reader(state, index))
            if target is not None and target in code:
                todo.append((target, out))
                if resolved is not None:
                    resolved.add(addr)
        if insn.access and addr in entries:
            todo.append((entries[addr], state))  # a fault leaves the registers as they were
        if insn.flow == "call":
            if insn.target is not None:
                todo.append((insn.target, out))
            todo.append((following, _after_call(out, index, isa)))
        elif insn.flow == "next":
            todo.append((following, _after_call(out, index, isa) if insn.indirect else out))
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
        elf = ElfImage(elf_path)
        sections = {s.name: s for s in elf.sections}
        if TEXT not in sections:
            raise CopyfuzzError(f"{elf_path}: no {TEXT} section (not a copyfuzz executor?)")
        code_ranges = []
        blobs = []
        for sec in elf.sections:
            if _is_routine_section(sec.name) and sec.size:
                blobs.append((elf.section_data(sec), sec.addr))
                code_ranges.append((sec.name, sec.addr, sec.addr + sec.size))
        got = [(sec.addr, sec.addr + sec.size) for sec in elf.sections if sec.name in GOT]
        table = sections.get(TABLE)
        entries_list = read_table(elf.section_data(table), table.addr, table_format, xlen) if table else []
        entry_addr = None
        for s in elf.symbols():
            if s.name == symbol:
                entry_addr = s.value
    except (OSError, ElfError) as e:
        raise CopyfuzzError(f"cannot read {elf_path}: {e}") from e
    return blobs, code_ranges, entries_list, got, entry_addr


def _no_user_access(kind: str, listing: list[Insn], isa: Isa) -> str | None:
    """A copy (clear) routine shows a load and a store (a store) through its pointers, or
    the audit did not see how it reaches user memory: then a clean audit would mean nothing."""
    if kind not in TABLE_KINDS:
        return None
    # the user sides (the kind's row): a source that faults is loaded from, a destination stored to
    needed = tuple(a for a, side in (("load", "src"), ("store", "dst")) if side_faults(kind, side))
    seen = {i.access for i in listing if i.access and i.origin in (USER, UNKNOWN)}
    missing = [a for a in needed if a not in seen]
    if not missing:
        return None
    args = " and ".join(pointer_args(kind, isa))
    return (f"no reachable {' or '.join(missing)} through the argument pointers ({args}): the audit cannot "
            f"see how the routine reaches user memory (an indirect jump, or code outside the file?), "
            f"so it checked nothing")


_DECODED: dict[tuple[object, ...], dict[int, Insn]] = {}


def _decoded(arch: str, isa: Isa, blobs: decode.Blobs, xlen: int) -> dict[int, Insn]:
    """The executor's code decoded, once per distinct code: the symbols of one file are
    linked into executors with the same code, and decoding is most of an audit's time
    (a 10,000-function file: about 4 s a symbol). Read only: the audit copies what it
    marks. The last few kept."""
    key = (arch, xlen, tuple((hashlib.sha256(bytes(b)).digest(), a) for b, a in blobs))
    code = _DECODED.get(key)
    if code is None:
        code = isa.disassemble(blobs, xlen)
        while len(_DECODED) >= 2:
            _DECODED.pop(next(iter(_DECODED)))
        _DECODED[key] = code
    return code


# The audit decodes all of the executor's code and follows the routine's registers through
# it: about 4 KB of memory and 0.08 ms per instruction (docs/perf.md). Past this much code
# (512k compressed RISC-V instructions: about 2 GB and 40 s) it refuses rather than take
# the machine's memory.
AUDIT_MAX_CODE_BYTES = 1 << 20


def audit_executor(elf_path: Path, *, name: str, symbol: str, kind: str, xlen: int,
                   table_format: str, arch: str) -> Audit:
    isa = decode.for_arch(arch)
    blobs, code_ranges, entries_list, got, entry_addr = _read_executor(elf_path, symbol, table_format, xlen)
    if entry_addr is None:
        raise CopyfuzzError(f"{name}: symbol {symbol!r} is not in the linked executor")
    size = sum(len(b) for b, _ in blobs)
    if size > AUDIT_MAX_CODE_BYTES:
        raise CopyfuzzError(f"{name}: {size:,} bytes of code, and the audit reads at most "
                            f"{AUDIT_MAX_CODE_BYTES:,} (about 2 GB of memory): check, sweep and history "
                            "run without the audit with --no-audit; or give a file with less code")

    code = _decoded(arch, isa, blobs, xlen)

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
    resolved: set[int] = set()
    states = _flow(code, entries, [(entry_addr, _entry_state(kind, isa))], got, xlen, isa, resolved)
    listing = [dataclasses.replace(code[a]) for a in sorted(states)]  # their own: origins are this routine's
    for insn in listing:
        if insn.addr in resolved:  # a table jump the dataflow resolved (and the flow followed)
            insn.indirect = False
    index = {r: i for i, r in enumerate(isa.regs)}
    for insn in listing:
        if insn.access and insn.base in index:
            insn.origin = _origin(states[insn.addr][index[insn.base]])
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
        missing = _no_user_access(kind, listing, isa)
        if missing:
            problems.append(Problem(entry_addr, missing))
    # Fixup code that no entry of the file can reach (dead fixups), in a .fixup section.
    all_fixups = _flow(code, entries, [(f, _entry_state("", isa)) for f in entries.values()], got, xlen, isa)
    for addr in sorted(code):
        padding = code[addr].mnemonic in isa.nops or not any(code[addr].raw)
        if in_section(addr, FIXUP) and addr not in all_fixups and not padding:
            problems.append(Problem(addr, "fixup code no table entry can reach"))
            break  # one report per dead block is enough to point at it
    problems.sort(key=lambda p: p.addr)
    sym = Symbolizer(elf_path, prefer=(symbol,))
    return Audit(name, symbol, kind, table_format, listing, entries, problems, sym, entries_list)


def audit_routine(root: Path, routine: "Routine") -> Audit:
    """Audit a routine's built executor; the table format comes from the executor itself
    (the build read it off the routine object's relocations)."""
    from . import executor  # here, to keep this module free of process handling
    from .session import routine_argv

    info = executor.info(routine_argv(root, routine))
    return audit_executor(root / routine.elf, name=routine.name, symbol=routine.symbol,
                          kind=routine.kind, xlen=routine.xlen, table_format=info.get("extable", "none"),
                          arch=routine.arch)
