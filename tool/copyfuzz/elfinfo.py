"""Addresses in an executor ELF as `symbol+0xoff`, for reports.

Function symbols and the routine's plain labels (e.g. a fixup label) both count, so a
fault PC reads as the nearest name at or before it. Assembler-local names (.L*) and
mapping symbols ($x, $d) and the linker's section bounds (__start_X, __stop_X) are not
in the way: they are skipped. A pc no name precedes in its section reads as
`section+0xoff` (cf_target_fixup+0x4: the routine's .fixup).

A sized function (STT_FUNC, st_size > 0) names only the pcs inside it: one past its end
reads as a nearer label's or its section's (cf_target_text+0x..), never as the function
before it. A sized function that holds the pc names it, rather than a
zero-size alias at the same address (kernel files declare SYM_FUNC_ALIAS names and
empty SYM_FUNC_START/END blocks that fall through into the next function): a report
reads `fallback_scalar_usercopy_sum_enabled+0x54`, where the code is. A zero-size name
only shows where no sized function holds the pc.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING

from . import atomic
from .elfread import EM_ARM, STB_GLOBAL, STB_LOCAL, STB_WEAK, STT_FUNC, STT_NOTYPE, ElfError, ElfImage
from .errors import CopyfuzzError

if TYPE_CHECKING:
    from elftools.dwarf.compileunit import CompileUnit
    from elftools.dwarf.dwarfinfo import DWARFInfo
    from elftools.dwarf.lineprogram import LineProgram

    from .routines import Routine

# Among names at one address, the one shown: a sized function over a zero-size one, a
# function over a label, global over local.
_TYPE_RANK = {STT_FUNC: 1, STT_NOTYPE: 2}
_BIND_RANK = {STB_GLOBAL: 0, STB_WEAK: 1, STB_LOCAL: 2}


class Symbolizer:
    def __init__(self, path: Path, bias: int = 0, prefer: tuple[str, ...] = ()) -> None:
        self.bias = bias  # load address minus link address (0 for a static non-PIE ELF)
        # `prefer` wins among aliases at one address: the routine's declared symbol
        # rather than, say, __asm_copy_from_user at the same place.
        entries: list[tuple[int, int, str]] = []
        self._ranges: list[tuple[int, int, str]] = []
        self._sized: list[tuple[int, int, int, str]] = []  # (start, end, rank, name) of sized functions
        try:
            elf = ElfImage(path)
            self.is_pie = elf.is_pie
            code = set()
            for section in elf.sections:
                if section.executable:
                    code.add(section.number)
                    self._ranges.append((section.addr, section.addr + section.size, section.name))
            self.sections = {s.name: s.addr for s in elf.sections}
            for sym in elf.symbols():
                name = sym.name
                if sym.type not in _TYPE_RANK or not name or name[0] in "$." or name.startswith(".L"):
                    continue
                if name.startswith(("__start_", "__stop_")):
                    continue
                if sym.shndx not in code:
                    continue
                sized = sym.type == STT_FUNC and sym.size > 0
                rank = (0 if sized else _TYPE_RANK[sym.type]) * 3 + _BIND_RANK.get(sym.bind, 2)
                if name in prefer:
                    rank = -1
                if sized:
                    self._sized.append((sym.value, sym.value + sym.size, rank, name))
                entries.append((sym.value, rank, name))
        except (OSError, ElfError) as e:
            raise CopyfuzzError(f"cannot read ELF {path}: {e}") from e
        entries.sort()
        self._ends = {name: hi for lo, hi, _, name in self._sized}
        # Keep one name per address: the best-ranked (smallest rank sorts first).
        self._addrs: list[int] = []
        self._names: list[str] = []
        for addr, _, name in entries:
            if self._addrs and self._addrs[-1] == addr:
                continue
            self._addrs.append(addr)
            self._names.append(name)

    def _section(self, addr: int) -> tuple[int, int, str] | None:
        link = addr - self.bias
        return next((r for r in self._ranges if r[0] <= link < r[1]), None)

    def lookup(self, addr: int) -> tuple[str, int] | None:
        link = addr - self.bias
        section = self._section(addr)
        if section is None:
            return None
        # The innermost sized function holding the pc (latest start; among aliases of one
        # size, the best-ranked) ...
        holders = [(-lo, rank, name, lo) for lo, hi, rank, name in self._sized if lo <= link < hi]
        best = min(holders)[2:] if holders else None
        i = bisect.bisect_right(self._addrs, link) - 1
        # A sized function that ends before the pc names nothing there: code after it
        # (ARM's .text.fixup, linked after copyfuzz's own __memzero) is its section's.
        if i >= 0 and self._names[i] in self._ends and self._ends[self._names[i]] <= link:
            i = -1
        if i >= 0 and self._addrs[i] >= section[0]:
            name, at = self._names[i], self._addrs[i]
            # ... unless a plain label inside it is nearer (a fixup label); zero-size
            # function names at its very start are aliases and lose to it.
            if best is None or at > best[1]:
                best = (name, at)
        if best is None:
            return section[2], link - section[0]
        return best[0], link - best[1]

    def describe(self, addr: int) -> str:
        """'symbol+0xoff' (or plain 'symbol' at its start), else the hex address."""
        found = self.lookup(addr)
        if found is None:
            return f"{addr:#x}"
        name, off = found
        return f"{name}+{off:#x}" if off else name


ROUTINE_SECTION = "cf_target_text"  # the Makefile renames the routine's .text to this


def symbol_places(path: Path, names: set[str] | tuple[str, ...]) -> dict[str, list[tuple[int, int, int]]]:
    """Where each of names is defined in the ELF: (section index, value, ELF size), one per
    definition (a local and a global of one spelling are two)."""
    found: dict[str, list[tuple[int, int, int]]] = {}
    try:
        for sym in ElfImage(path).symbols():
            if sym.name in names and sym.shndx is not None:
                found.setdefault(sym.name, []).append((sym.shndx, sym.value, sym.size))
    except (OSError, ElfError) as e:
        raise CopyfuzzError(f"cannot read ELF {path}: {e}") from e
    return found


def symbol_values(path: Path, names: set[str]) -> dict[str, tuple[int, int]]:
    """Each of names the ELF defines at one place: (section index, value). A name defined
    twice at two places names no one place: it is left out."""
    places = {name: {(shndx, value) for shndx, value, _ in found} for name, found in symbol_places(path, names).items()}
    return {name: next(iter(at)) for name, at in places.items() if len(at) == 1}


def routine_symbolizer(root: Path, routine: "Routine", info: dict[str, str]) -> Symbolizer | None:
    """The executor's names for reports; None (hex addresses) if it cannot be read."""
    try:
        sym = Symbolizer(root / routine.elf, prefer=(routine.symbol,))
    except CopyfuzzError:
        return None  # addresses are then shown in hex
    if sym.is_pie and ROUTINE_SECTION in sym.sections:
        # A PIE executor runs elsewhere than linked: `info` says where the routine went.
        # (The Makefile links -static -no-pie, so this only matters for other builds.)
        with contextlib.suppress(KeyError, ValueError):
            sym.bias = int(info["text_start"], 16) - sym.sections[ROUTINE_SECTION]
    return sym


def where(sym: Symbolizer | None, addr: int) -> str:
    return sym.describe(addr) if sym else f"{addr:#x}"


_LINES: dict[bytes, dict[int, str]] = {}  # one compilation unit's rows, by its line program's bytes


# Bump when what source_lines returns changes: a cache file of another version is a miss.
_LINES_CACHE_VERSION = 1


def source_lines(path: Path) -> dict[int, str]:
    """source_lines_of(path), kept beside the ELF in <elf>.lines.json for the file it
    was read from (device, inode, size, modification time): a check or sweep of an
    executor built before reads it back instead of the DWARF (pyelftools' import and
    parse were a third of a small check's own CPU time). A cache that cannot be read or
    written is no error: the DWARF is read. An empty result is not kept."""
    cache = path.with_name(path.name + ".lines.json")
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = [_LINES_CACHE_VERSION, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    try:
        kept = json.loads(cache.read_text())
        if kept["stamp"] == stamp:
            return {int(a): str(w) for a, w in kept["lines"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    lines = source_lines_of(path)
    if lines:  # none may be a read that failed for a while (EMFILE, EIO): not kept
        with contextlib.suppress(CopyfuzzError):
            atomic.write(cache, json.dumps({"stamp": stamp, "lines": {str(a): w for a, w in lines.items()}}))
    return lines


def source_lines_of(path: Path) -> dict[int, str]:
    """`file:line` of each (2-byte aligned) address the ELF's DWARF line table covers, a
    row holding up to the next (a macro's several instructions are one line), {} when it
    has none or cannot be read; in an executor, of the routine's code only (its
    cf_target_* sections): a unit whose code lies elsewhere (the harness, the oracle: 90 %
    of the rows, a third of a small check's time) is not read. Each unit's rows are read
    once per distinct line program: the executors of one file's symbols share its unit,
    and reading a large one took a second a symbol."""
    from elftools.common.exceptions import ELFError  # DWARF is pyelftools' (elfread.py)
    from elftools.elf.elffile import ELFFile

    out: dict[int, str] = {}
    try:
        with path.open("rb") as f:
            elf = ELFFile(f)
            if not elf.has_dwarf_info():
                return out
            wanted = [(s["sh_addr"], s["sh_addr"] + s["sh_size"]) for s in elf.iter_sections()
                      if s.name.startswith("cf_target")]
            dwarf = elf.get_dwarf_info()
            section = elf.get_section_by_name(".debug_line")
            strings = elf.get_section_by_name(".debug_line_str")
            line_data = section.data() if section is not None else b""
            line_str = strings.data() if strings is not None else b""
            aranged = _aranges(dwarf) if wanted else {}
            for cu in dwarf.iter_CUs():
                spans = (aranged.get(cu.cu_offset) or _unit_spans(dwarf, cu)) if wanted else None
                if spans is not None and not any(a < hi and lo < b for a, b in spans for lo, hi in wanted):
                    continue
                program = dwarf.line_program_for_CU(cu)
                if program is None:
                    continue
                stmt = cu.get_top_DIE().attributes.get("DW_AT_stmt_list")
                start = stmt.value if stmt is not None else program.program_start_offset
                key = hashlib.sha256(line_data[start:program.program_end_offset] + b"\0" + (
                    line_str if program.header["version"] >= 5 else b"")).digest()
                rows = _LINES.get(key)
                if rows is None:
                    rows = _unit_lines(program)
                    while len(_LINES) >= 64:
                        _LINES.pop(next(iter(_LINES)))
                    _LINES[key] = rows
                for addr, where in rows.items():
                    out.setdefault(addr, where)
    except (OSError, ELFError, ValueError, KeyError, IndexError):
        return {}
    return out


def _aranges(dwarf: DWARFInfo) -> dict[int, list[tuple[int, int]]]:
    """Where each unit's code is, by .debug_aranges, by the unit's offset: read without
    parsing any unit's DIEs, which took 10 ms a unit (the harness and the oracle have ten)."""
    from elftools.common.exceptions import ELFError

    out: dict[int, list[tuple[int, int]]] = {}
    try:
        table = dwarf.get_aranges()
        for e in table.entries if table is not None else []:
            out.setdefault(e.info_offset, []).append((e.begin_addr, e.begin_addr + e.length))
    except (ELFError, KeyError, ValueError, TypeError, AttributeError):
        return {}
    return out


def _unit_spans(dwarf: DWARFInfo, cu: CompileUnit) -> list[tuple[int, int]] | None:
    """Where a unit's code is, by its DW_AT_low_pc/high_pc or DW_AT_ranges; None when it
    does not say or it cannot be read (the unit is read then)."""
    from elftools.common.exceptions import ELFError
    from elftools.dwarf.ranges import BaseAddressEntry, RangeEntry

    attrs = cu.get_top_DIE().attributes
    try:
        if "DW_AT_ranges" in attrs:
            lists = dwarf.range_lists()
            if lists is None:
                return None
            base = attrs["DW_AT_low_pc"].value if "DW_AT_low_pc" in attrs else 0
            spans: list[tuple[int, int]] = []
            for e in lists.get_range_list_at_offset(attrs["DW_AT_ranges"].value, cu=cu):
                if isinstance(e, BaseAddressEntry):
                    base = e.base_address
                elif isinstance(e, RangeEntry):
                    at = 0 if e.is_absolute else base
                    spans.append((at + e.begin_offset, at + e.end_offset))
                else:
                    return None
            return spans
        if "DW_AT_low_pc" in attrs and "DW_AT_high_pc" in attrs:
            lo, hi = attrs["DW_AT_low_pc"].value, attrs["DW_AT_high_pc"]
            return [(lo, hi.value if hi.form == "DW_FORM_addr" else lo + hi.value)]
    except (ELFError, KeyError, ValueError, TypeError, AttributeError):
        return None
    return None


def _unit_lines(program: LineProgram) -> dict[int, str]:
    out: dict[int, str] = {}
    names = program["file_entry"]
    base = 1 if program.header["version"] < 5 else 0
    rows = [e.state for e in program.get_entries() if e.state is not None]
    for st, after in itertools.pairwise(rows):  # a row holds up to the next row's address
        if st.end_sequence or not 0 <= st.file - base < len(names):
            continue
        where = f"{Path(names[st.file - base].name.decode(errors='replace')).name}:{st.line}"
        for addr in range(st.address, min(after.address, st.address + 256), 2):
            out.setdefault(addr, where)
    return out


def is_thumb(path: Path, symbol: str) -> bool:
    """Is symbol a Thumb function of a 32-bit ARM ELF (bit 0 of its address set)?"""
    try:
        elf = ElfImage(path)
        if elf.machine != EM_ARM:
            return False
        return any(sym.name == symbol and sym.type == STT_FUNC and sym.value & 1 for sym in elf.symbols())
    except (OSError, ElfError) as e:
        raise CopyfuzzError(f"cannot read ELF {path}: {e}") from e
    return False
