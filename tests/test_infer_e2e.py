"""A kind or an architecture the command line did not give is worked out and said, or
refused (issue 25, points 1 and 2): on our fixtures in the shapes of arm64's
copy_from_user.S (a file outside any arch/ path) and RISC-V's uaccess.S (two names, one
routine)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

ARM64 = ROOT / "tests/fixtures/kernel/arch/arm64/uaccess_extable.S"
RISCV = "tests/fixtures/kernel/boot/riscv_uaccess.S"


def _check(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:  # JSON
    proc = run_cli("check", *args, "--max-len", "16", "--jobs", "2", "--json", "--findings", str(tmp_path / "f"))
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_an_arm64_file_outside_arch_is_arm64_and_a_copy_from_user(tmp_path: Path) -> None:
    """Built as RISC-V before, it failed on asm/asm-uaccess.h; run as `copy`, both sides
    faulted where the kernel's source never does."""
    src = tmp_path / "lib" / "copy_from_user.S"
    src.parent.mkdir()
    shutil.copy(ARM64, src)
    rc, data, err = _check(tmp_path, str(src), "--symbol", "__arch_copy_from_user")
    assert rc == 0, err
    (r,) = data["routines"]
    assert (r["arch"], r["kind"], r["findings"]) == ("arm64", "copy_from_user", {})
    assert "arch arm64 from its instructions" in r["inferred"]["arch"]
    assert "kind copy_from_user from the name __arch_copy_from_user" in r["inferred"]["kind"]
    # said to a person too, once each
    assert err.count("copyfuzz: __arch_copy_from_user: arch arm64 from its instructions") == 1
    assert err.count("kind copy_from_user from the name") == 1


def test_two_names_of_one_routine_are_copy_and_given_values_are_not_inferred(tmp_path: Path) -> None:
    rc, data, err = _check(tmp_path, RISCV, "--symbol", "__asm_copy_from_user", "--symbol", "__clear_user:clear",
                           "--arch", "riscv")
    assert rc == 0, err
    copy, clear = data["routines"]
    assert copy["kind"] == "copy"
    assert "__asm_copy_from_user and __asm_copy_to_user are one routine (their code is one body" in \
        copy["inferred"]["kind"]
    assert clear["inferred"] == {"kind": None, "arch": None}
    assert copy["inferred"]["arch"] is None


def test_a_name_without_a_kind_and_a_file_without_an_arch_are_refused(tmp_path: Path) -> None:
    code = tmp_path / "code.S"
    code.write_text("\t.text\n\t.globl f\nf:\n\taddi a0, a1, 0\n\tli a0, 0\n\tret\n")
    rc, data, _ = _check(tmp_path, str(code), "--symbol", "f")
    assert rc == 2 and "f: its name does not say what kind of routine it is: add :KIND" in str(data["error"])
    # a symbol the file does not define, or data, is said first: the kind is no question then
    rc, data, _ = _check(tmp_path, str(code), "--symbol", "g")
    assert rc == 2 and "'g' is not defined" in str(data["error"])
    rc, data, _ = _check(tmp_path, "tests/fixtures/outside/la_threshold.S", "--symbol", "cf_threshold")
    assert rc == 2 and "'cf_threshold' is data" in str(data["error"])
    src = tmp_path / "empty.S"
    src.write_text("\t.text\n\t.globl f\nf:\n\tret\n")
    rc, data, _ = _check(tmp_path, str(src), "--symbol", "f:memcpy")
    assert rc == 2 and str(data["error"]).endswith("add --arch riscv|arm64|arm")
