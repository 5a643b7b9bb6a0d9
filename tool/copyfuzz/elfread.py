"""The few ELF facts the tool reads on every run: the header, section headers and data, and
symbols. Read with struct in well under a millisecond, where pyelftools took 50 ms to import
and as long again to walk a static executor's symbol table, in each of the hundreds of
commands a campaign or the test suite starts (docs/perf.md). DWARF (elfinfo.source_lines)
is still pyelftools', imported where it is used.

The layouts are the ELF specification's (System V gABI): 32- and 64-bit, either byte order.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Iterator, NamedTuple

SHT_SYMTAB, SHT_NOBITS, SHT_DYNSYM = 2, 8, 11
SHF_EXECINSTR = 0x4
ET_DYN = 3
EM_ARM = 40
STT_NOTYPE, STT_FUNC = 0, 2
STB_LOCAL, STB_GLOBAL, STB_WEAK = 0, 1, 2
_SHN_LORESERVE = 0xFF00  # from here up (and 0, SHN_UNDEF) an index names no section

# (header after e_ident, section header, symbol): field order as each class lays them out
_LAYOUT = {
    1: ("HHIIIIIHHHHHH", "IIIIIIIIII", "IIIBBH"),
    2: ("HHIQQQIHHHHHH", "IIQQQQIIQQ", "IBBHQQ"),
}


class ElfError(Exception):
    """Not an ELF file, or one whose headers point outside it."""


class Section(NamedTuple):
    number: int  # its index in the section header table (what a symbol's shndx names)
    name: str
    type: int
    flags: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int

    @property
    def executable(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR)


class Symbol(NamedTuple):  # a tuple: a static executor has thousands
    name: str
    value: int
    size: int
    type: int
    bind: int
    shndx: int | None  # None: undefined, absolute, common (no section of the file)


class ElfImage:
    """An ELF file read whole into memory (executors and objects are small)."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()
        d = self.data
        if len(d) < 16 or d[:4] != b"\x7fELF" or d[4] not in _LAYOUT or d[5] not in (1, 2):
            raise ElfError("not an ELF file")
        self.elf_class = d[4]
        self.order = "<" if d[5] == 1 else ">"
        header, self._shdr, self._sym = (self.order + f for f in _LAYOUT[self.elf_class])
        (self.type, self.machine, _, _, _, shoff, _, _, _, _, shentsize, shnum, shstrndx) = \
            self._unpack(header, 16)
        self.sections: list[Section] = []
        if shoff == 0:
            return
        if shentsize != struct.calcsize(self._shdr):
            raise ElfError(f"section header size {shentsize}")
        raw = [self._unpack(self._shdr, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx] if shstrndx < shnum else None
        for i, (name, typ, flags, addr, offset, size, link, _, _, entsize) in enumerate(raw):
            text = self._string(names[4], names[5], name) if names else ""
            self.sections.append(Section(i, text, typ, flags, addr, offset, size, link, entsize))

    @property
    def is_pie(self) -> bool:
        return self.type == ET_DYN

    def _unpack(self, fmt: str, offset: int) -> tuple[int, ...]:
        try:
            return struct.unpack_from(fmt, self.data, offset)
        except struct.error:
            raise ElfError(f"truncated at {offset:#x}") from None

    def _string(self, table_offset: int, table_size: int, index: int) -> str:
        if index >= table_size:
            raise ElfError(f"string index {index} past its table")
        start = table_offset + index
        end = self.data.find(b"\0", start, table_offset + table_size)
        return self.data[start:end if end >= 0 else table_offset + table_size].decode("utf-8", "replace")

    def section_data(self, section: Section) -> bytes:
        if section.type == SHT_NOBITS:
            return b""
        if section.offset + section.size > len(self.data):
            raise ElfError(f"section {section.name} runs past the file's end")
        return self.data[section.offset:section.offset + section.size]

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    def symbols(self) -> Iterator[Symbol]:
        """Every symbol of every symbol table (.symtab, .dynsym), each table's null entry skipped."""
        size = struct.calcsize(self._sym)
        for table in self.sections:
            if table.type not in (SHT_SYMTAB, SHT_DYNSYM) or table.link >= len(self.sections):
                continue
            strings = self.sections[table.link]
            data = self.section_data(table)
            for fields in struct.iter_unpack(self._sym, data[size:len(data) - len(data) % size]):
                if self.elf_class == 1:
                    name, value, sym_size, info, _, shndx = fields
                else:
                    name, info, _, shndx, value, sym_size = fields
                yield Symbol(self._string(strings.offset, strings.size, name), value, sym_size, info & 0xF,
                             info >> 4, shndx if 0 < shndx < _SHN_LORESERVE else None)
