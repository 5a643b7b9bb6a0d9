"""elfread against pyelftools, the independent reader, on files the build made (executors of
each architecture and width, objects, a host shared library), and on damaged files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import ROOT
from copyfuzz.elfread import ElfError, ElfImage
from elftools.elf.elffile import ELFFile
from elftools.elf.sections import SymbolTableSection

pytestmark = pytest.mark.e2e  # reads what `make all` built

_TYPES = {"STT_NOTYPE": 0, "STT_OBJECT": 1, "STT_FUNC": 2, "STT_SECTION": 3, "STT_FILE": 4, "STT_TLS": 6}
_BINDS = {"STB_LOCAL": 0, "STB_GLOBAL": 1, "STB_WEAK": 2}


def samples() -> list[Path]:
    """One executor of each target directory, one object of each, and the host library."""
    out: list[Path] = []
    for target in sorted((ROOT / "build").glob("*")):
        for pattern in ("*/*.elf", "obj/harness/*.o"):
            out += sorted(target.glob(pattern))[:1]
    out += sorted((ROOT / "build" / "host").glob("*.so"))[:1]
    return out


def test_the_samples_span_the_architectures() -> None:
    names = {p.relative_to(ROOT / "build").parts[0] for p in samples()}
    assert {"riscv64", "riscv32", "arm64", "arm", "host"} <= names, names


@pytest.mark.parametrize("path", samples(), ids=lambda p: str(p.relative_to(ROOT / "build")))
def test_sections_and_symbols_are_pyelftools(path: Path) -> None:
    ours = ElfImage(path)
    with path.open("rb") as f:
        theirs = ELFFile(f)
        assert ours.is_pie == (theirs.header["e_type"] == "ET_DYN")
        assert [(s.name, s.addr, s.size, s.flags, s.executable) for s in ours.sections] == [
            (s.name, s["sh_addr"], s["sh_size"], s["sh_flags"], bool(s["sh_flags"] & 4))
            for s in theirs.iter_sections()]
        for mine, sec in zip(ours.sections, theirs.iter_sections(), strict=True):
            assert ours.section_data(mine) == (b"" if sec["sh_type"] == "SHT_NOBITS" else sec.data()), mine.name
        expected = []
        for sec in theirs.iter_sections():
            if isinstance(sec, SymbolTableSection):
                for sym in list(sec.iter_symbols())[1:]:
                    shndx = sym["st_shndx"]
                    expected.append((sym.name, sym["st_value"], sym["st_size"], _TYPES.get(sym["st_info"]["type"]),
                                     _BINDS.get(sym["st_info"]["bind"]), shndx if isinstance(shndx, int) else None))
    got = [(s.name, s.value, s.size, s.type if s.type in _TYPES.values() else None,
            s.bind if s.bind in _BINDS.values() else None, s.shndx) for s in ours.symbols()]
    assert got == expected
    assert got, "no symbols read"


def test_damaged_files_are_an_elf_error_never_another_exception(tmp_path: Path) -> None:
    original = samples()[0].read_bytes()
    rng = random.Random(1)
    bad = tmp_path / "bad.elf"
    for cut in (0, 3, 16, 40, 63, len(original) // 2, len(original) - 1):
        bad.write_bytes(original[:cut])
        with pytest.raises(ElfError):
            list(ElfImage(bad).symbols())
    for _ in range(300):
        data = bytearray(original)
        for _ in range(rng.randint(1, 8)):
            at = rng.choice([rng.randrange(64), rng.randrange(len(data))])
            data[at] = rng.randrange(256)
        bad.write_bytes(bytes(data))
        try:
            image = ElfImage(bad)
            list(image.symbols())
            for s in image.sections:
                image.section_data(s)
        except ElfError:
            pass


@pytest.mark.parametrize("path", [p for p in samples() if p.suffix == ".elf"],
                         ids=lambda p: str(p.relative_to(ROOT / "build")))
def test_source_lines_by_aranges_are_those_by_each_units_dies(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """source_lines picks the routine's units by .debug_aranges; reading every unit's DIEs
    (its fallback) must give the same rows."""
    from copyfuzz import elfinfo

    monkeypatch.setattr(elfinfo, "_LINES", {})
    fast = elfinfo.source_lines_of(path)
    monkeypatch.setattr(elfinfo, "_LINES", {})
    monkeypatch.setattr(elfinfo, "_aranges", lambda dwarf: {})
    assert elfinfo.source_lines_of(path) == fast
    assert fast, "no rows: the executor has no line table for its routine"


def test_source_lines_are_kept_beside_the_elf_for_that_file_only(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from copyfuzz import elfinfo

    elf = tmp_path / "copy_user.elf"
    elf.write_bytes((ROOT / "build/riscv64/riscv/copy_user.elf").read_bytes())
    cache = tmp_path / "copy_user.elf.lines.json"
    read: list[Path] = []
    real = elfinfo.source_lines_of

    def counted(p: Path) -> dict[int, str]:
        read.append(p)
        return real(p)

    monkeypatch.setattr(elfinfo, "source_lines_of", counted)
    first = elfinfo.source_lines(elf)
    assert first and cache.is_file() and read == [elf]
    assert elfinfo.source_lines(elf) == first and read == [elf]  # from the cache
    elf.write_bytes(elf.read_bytes())  # rebuilt: another modification time
    assert elfinfo.source_lines(elf) == first and read == [elf, elf]
    cache.write_text("{not json")
    assert elfinfo.source_lines(elf) == first and len(read) == 3
    cache.unlink()
    cache.mkdir()  # a cache that can be neither read nor written is no error
    assert elfinfo.source_lines(elf) == first and len(read) == 4 and cache.is_dir()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    cache.rmdir()
    monkeypatch.setattr(elfinfo, "source_lines_of", lambda p: {})  # a read that failed
    assert elfinfo.source_lines(elf) == {} and not cache.exists()
