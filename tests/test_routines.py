"""Routine discovery and metadata, on fixture trees."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from copyfuzz.errors import CopyfuzzError
from copyfuzz.routines import discover, find, select

FIXTURE = Path(__file__).parent / "fixtures" / "tree"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "root")
    return tmp_path / "root"


def test_discovers_routines_and_mutants_not_includes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("O", raising=False)  # executors under the default build/
    routines = discover(FIXTURE)
    assert [r.name for r in routines] == [
        "arm64/memcpy", "riscv/clear_user", "riscv/copy_user", "riscv/mutants/fixup-full-size",
    ]
    by = {r.name: r for r in routines}
    cu = by["riscv/copy_user"]
    assert (cu.symbol, cu.kind, cu.profile, cu.is_mutant) == ("__asm_copy_to_user", "copy", "exact", False)
    assert cu.about == "fixture copy routine, with spaces = and more"
    assert cu.elf == "build/riscv64/riscv/copy_user.elf"
    assert by["riscv/clear_user"].profile == "linux"  # the default
    m = by["riscv/mutants/fixup-full-size"]
    assert m.is_mutant and m.expect == ("no-progress", "store-beyond-reported")
    assert m.file_stem == "riscv__mutants__fixup-full-size"
    arm = by["arm64/memcpy"]  # each architecture's own build directory and width (targets.py)
    assert (arm.arch, arm.xlen, arm.elf) == ("arm64", 64, "build/arm64/arm64/memcpy.elf")
    assert m.elf == "build/riscv64/riscv/mutants/fixup-full-size.elf"


def test_no_arch_dir(tmp_path: Path) -> None:
    assert discover(tmp_path) == []


def _write(tree: Path, rel: str, *meta: str) -> None:
    body = "/*\n" + "".join(f" * copyfuzz: {m}\n" for m in meta) + " */\n"
    (tree / "arch" / rel).write_text(body)


@pytest.mark.parametrize("rel, meta, message", [
    ("riscv/bad.S", ["symbol=f"], "missing ' \\* copyfuzz: kind="),
    ("riscv/bad.S", ["kind=copy"], "missing ' \\* copyfuzz: symbol="),
    ("riscv/bad.S", ["symbol=f", "kind=strcpy"], "kind='strcpy'"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "profile=loose"], "profile='loose'"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "colour=blue"], "unknown copyfuzz metadata key 'colour'"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "kind=clear"], "given twice"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "expect=hang"], "for mutants"),
    ("riscv/mutants/bad.S", ["symbol=f", "kind=copy"], "a mutant needs"),
    ("riscv/mutants/bad.S", ["symbol=f", "kind=copy", "expect=wrong-data,oops"], "unknown classes oops"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "isa=rv64gc_zicboz"], "cannot run zicboz"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "isa=rv32gcv"], "give the rv64 ISA"),
    ("riscv/bad.S", ["symbol=f", "kind=copy", "max-len=lots"], "max-len='lots'"),
])
def test_bad_metadata_names_the_file(tree: Path, rel: str, meta: list[str], message: str) -> None:
    _write(tree, rel, *meta)
    with pytest.raises(CopyfuzzError, match=message) as e:
        discover(tree)
    assert rel in str(e.value)


def test_metadata_only_in_the_header(tree: Path) -> None:
    late = "/*\n * copyfuzz: symbol=f\n" + " *\n" * 45 + " * copyfuzz: kind=copy\n */\n"
    (tree / "arch" / "riscv" / "late.S").write_text(late)
    with pytest.raises(CopyfuzzError, match="late.S: missing ' \\* copyfuzz: kind="):
        discover(tree)


def test_select_patterns_and_unknown_names() -> None:
    routines = discover(FIXTURE)
    assert [r.name for r in select(routines, ["riscv/mutants/*"])] == ["riscv/mutants/fixup-full-size"]
    assert [r.name for r in select(routines, ["riscv/*_user", "riscv/copy_user"])] == [
        "riscv/clear_user", "riscv/copy_user"]
    with pytest.raises(CopyfuzzError, match="did you mean riscv/copy_user"):
        select(routines, ["riscv/copy_usr"])
    with pytest.raises(CopyfuzzError, match="did you mean riscv/copy_user"):
        find(routines, "copy_user")
    with pytest.raises(CopyfuzzError, match="unknown routine 'zzz'"):
        find(routines, "zzz")


def test_isa_and_max_len_lines(tree: Path) -> None:
    _write(tree, "riscv/vec.S", "symbol=f", "kind=copy", "isa=rv64gcv", "max-len=80")
    r = find(discover(tree), "riscv/vec")
    assert r.isa is not None and (r.isa.march, r.qemu_cpu, r.max_len) == (
        "rv64gcv", "rv64,v=true,vlen=128,vext_spec=v1.0", 80)
    assert r.repro_options == []  # its own ISA: nothing to repeat
