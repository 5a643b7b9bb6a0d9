"""32-bit ARM end to end, the tool's side: the static audit of every ARM routine (the user
accesses covered, the kernel's buffer and the stack exempt) and of a mutant missing an
entry, and the QEMU plugin's A32 decoding (a memcheck sweep without the "not decoded"
note, bench's exact load and store counts). (tests/test_arm_harness_e2e.py has the
harness; tests/test_sweep_e2e.py sweeps the ARM routines and mutants with all the others.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

# routine -> ({(access, base, has an entry)}, user accesses); the template's loads or
# stores on the user's side are ldrt/ldrbt/strt/strbt, each with its entry (byte head, 8
# block words, a word, the carried word, 4 shifted block words, a shifted word, byte tail)
AUDITS = {
    "arm/copy_from_user": ({("load", "user", True), ("store", "kernel", False), ("store", "stack", False),
                            ("load", "stack", False)}, 17),
    "arm/copy_to_user": ({("store", "user", True), ("load", "kernel", False), ("store", "stack", False),
                          ("load", "stack", False)}, 16),
    "arm/clear_user": ({("store", "user", True)}, 7),
}


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_the_arm_audit_covers_the_user_side_and_exempts_the_kernel_side_and_stack(name: str) -> None:
    proc = run_cli("audit", name, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    audit = json.loads(proc.stdout)["routines"][0]
    assert audit["problems"] == []
    kinds, user = AUDITS[name]
    accesses = [x for x in audit["listing"] if x["access"]]
    assert {(x["access"], x["base"], x["fixup"] is not None) for x in accesses} == kinds
    summary = audit["summary"]
    assert summary["user"] == summary["covered"] == summary["entries"] == user
    assert (summary["uncovered"], summary["unknown_base"], summary["indirect"]) == (0, 0, 0)
    # the template pushes once and pops on each of its two ways out (a pop into pc: a return)
    assert summary["stack"] == (0 if name == "arm/clear_user" else 3)


def test_the_arm_audit_reports_the_missing_entry() -> None:
    bad = run_cli("audit", "arm/mutants/head-no-extable")
    assert bad.returncode == 1
    assert "load 'ldrbt r4, [r1], #1' has no table entry" in bad.stdout


def test_memcheck_decodes_a32_and_is_clean(tmp_path: Path) -> None:
    proc = run_cli("sweep", "arm/copy_from_user", "arm/clear_user", "--memcheck", "--max-len", "24", "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "not decoded" not in proc.stderr  # the plugin knows A32: no callback on every instruction
    for row in json.loads(proc.stdout)["routines"]:
        assert row["memcheck"] and row["cases"] > 0 and row["findings"] == {}, row
        assert row["audit"]["problems"] == []


def test_bench_counts_each_access_of_the_template() -> None:
    """memcpy on 8 KiB: aligned, 256 blocks of ldm/stm {r4-r11} (2048 word loads and
    stores); src+1, the carried word and 512 blocks of four shifted words (2049 loads);
    dst+1, three head bytes, the carried word, 511 blocks, three words and a tail byte
    (2062 loads, 2061 stores). Each adds the push {r0, r4-r11, lr} and its pop."""
    proc = run_cli("bench", "arm/memcpy", "--sizes", "8192", "--no-small", "--no-mix", "--reps", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "not decoded" not in proc.stderr
    rows = json.loads(proc.stdout)["routines"]["arm/memcpy"]["rows"]
    counts = {(r["src_off"], r["dst_off"]): (r["loads"], r["stores"], r["misaligned"]) for r in rows}
    assert counts[(0, 0)] == (2048 + 10, 2048 + 10, 0)
    assert counts[(1, 0)] == (2049 + 10, 2048 + 10, 0)
    assert counts[(0, 1)] == (2052 + 10, 2051 + 10, 0)


def test_thumb_code_is_refused_not_audited_as_arm(tmp_path: Path) -> None:
    """Thumb-2 decoded as A32 gave "0 reachable instructions ... audit: no problems" and a
    clean check (issue 25, point 10): a Thumb symbol is refused in one line."""
    src = str(ROOT / "tests" / "fixtures" / "arm" / "thumb_memcpy.S")
    for extra in (["check", "--max-len", "8"], ["audit"]):
        proc = run_cli(extra[0], src, "--symbol", "cf_thumb_memcpy", "--arch", "arm", *extra[1:])
        assert proc.returncode == 2, proc.stdout
        assert proc.stderr.count("\n") == 1 and "cf_thumb_memcpy is Thumb code" in proc.stderr, proc.stderr


def test_a_cpu_too_old_for_the_harness_is_said(tmp_path: Path) -> None:
    """--cpu arm926 (ARMv5) cannot run the harness's own code: one clear line, not "info
    exited with status -4"."""
    proc = run_cli("check", str(ROOT / "tests" / "fixtures" / "arm" / "regs.S"), "--symbol",
                   "fixture_copy:copy_to_user", "--arch", "arm", "--cpu", "arm926", "--max-len", "4", "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 2, proc.stdout
    assert "cannot start on QEMU CPU arm926" in json.loads(proc.stdout)["error"]
