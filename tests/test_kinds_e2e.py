"""End to end: the memset and memmove kinds on our routines and mutants (sweep, repro,
cov, bench, check), kept short (--max-len 32 or less).

Needs the cross toolchain and QEMU: a missing tool FAILS these tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from copyfuzz import plan, records

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all"], cwd=ROOT, check=True)


def sweep(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("sweep", *args, "--json", "--findings", str(tmp_path))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_routines_clean_and_mutants_caught(tmp_path: Path) -> None:
    rc, report = sweep(tmp_path, "riscv/memset", "riscv/memmove", "riscv/mutants/memset-*",
                       "riscv/mutants/memmove-*", "--max-len", "32")
    assert rc == 0, report
    rows = {r["name"]: r for r in report["routines"]}
    for name in ("riscv/memset", "riscv/memmove"):
        assert rows[name]["findings"] == {} and rows[name]["audit"]["problems"] == [], rows[name]
    # every displacement -(n+16)..n+16 for each n, 16 dst misalignments, two fault choices
    assert rows["riscv/memmove"]["cases"] == sum(16 * 2 * (2 * (n + 16) + 1) for n in range(33))
    assert rows["riscv/memset"]["cases"] == 33 * 16 * 2 * 5  # five fill classes
    caught = {r["name"]: r for r in report["routines"] if r.get("mutant")}
    assert set(caught) == {"riscv/mutants/memset-past-end", "riscv/mutants/memset-no-mask",
                           "riscv/mutants/memmove-always-forward"}
    assert all(r["caught"] for r in caught.values()), caught


def test_mutants_show_the_class_they_declare(tmp_path: Path) -> None:
    """The reproducers name the cause: a byte past the end, an upper-bits fill, dst above src."""
    proc = run_cli("sweep", "riscv/mutants/memset-no-mask", "riscv/mutants/memmove-always-forward",
                   "--max-len", "32", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "memset-no-mask:n=16,fill=0x1234565a" in proc.stdout
    assert "memmove-always-forward:n=2,disp=1," in proc.stdout


@pytest.mark.parametrize("spec, rc, text", [
    ("riscv/mutants/memmove-always-forward:n=2,disp=1", 1, "src = dst-1"),
    ("riscv/memmove:n=20,disp=1", 0, "destination and canaries as expected"),
    ("riscv/memmove:n=20,disp=-36", 0, "destination and canaries as expected"),
    ("riscv/mutants/memset-no-mask:n=16,fill=-127", 1, "should be the fill byte 0x81, it is 0xff"),
    ("riscv/mutants/memset-past-end:n=3,fill=0xa5", 1, "store-out-of-bounds"),
    ("riscv/memset:n=3,fill=0xa5,dst_fault=3", 0, "destination and canaries as expected"),
])
def test_repro(spec: str, rc: int, text: str) -> None:
    proc = run_cli("repro", spec)
    assert proc.returncode == rc, proc.stdout + proc.stderr
    assert text in proc.stdout, proc.stdout


def test_repro_refuses_bad_specs() -> None:
    for spec, message in (("riscv/memmove:n=20,disp=37", "disp=37 is out of range for n=20"),
                          ("riscv/memset:n=3,src_off=1", "no source"),
                          ("riscv/memcpy:n=3,fill=1", "fill= is for memset routines")):
        proc = run_cli("repro", spec)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr


def _word_loads(routine: str) -> list[int]:
    """Execution counts of the word loads (ld on RV64): memmove.S has one per direction."""
    proc = run_cli("cov", routine, "--max-len", "24", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)["listing"]
    return [row["count"] for row in listing if row["insn"].startswith("ld ")]


def test_cov_shows_both_directions() -> None:
    """The sweep's displacements reach the forward and the backward word loops. (The
    always-forward mutant's backward half is unreachable: its listing has one loop.)"""
    both = _word_loads("riscv/memmove")
    assert len(both) == 2 and all(count > 0 for count in both), both
    forward_only = _word_loads("riscv/mutants/memmove-always-forward")
    assert len(forward_only) == 1 and forward_only[0] > 0, forward_only


def test_bench_memset_and_memmove() -> None:
    for routine in ("riscv/memset", "riscv/memmove"):
        proc = run_cli("bench", routine, "--reps", "2", "--sizes", "8192", "--no-small", "--no-mix", "--json")
        assert proc.returncode == 0, proc.stderr
        rows = json.loads(proc.stdout)["routines"][routine]["rows"]
        assert rows and all(r["stores"] > 0 for r in rows), rows
        if routine == "riscv/memmove":
            assert {r["group"] for r in rows} == {"from", "to"}
            assert all((r["disp"] < 0) == (r["group"] == "from") for r in rows)


def test_sweep_plan_names_the_variants() -> None:
    """The tool's own plan (libcfref.so) enumerates fills and displacements as the executor does."""
    ref = plan.load(ROOT)
    moves = plan.SweepPlan(ref, "memmove", "exact", 64, max_len=3)
    cases = [moves.case_at(i) for i in range(moves.count())]
    assert all(c is not None and records.case_check(c, 4) == records.CASE_OK for c in cases)
    assert {c.disp for c in cases if c and c.n == 3} == set(range(-19, 20))
    sets = plan.SweepPlan(ref, "memset", "exact", 64, max_len=0)
    assert {c.fill for c in (sets.case_at(i) for i in range(sets.count())) if c} == {
        0, 0xFF, 0xA5, 0x1234565A, 0xFFFFFF81}


def test_check_guesses_the_kinds_and_hints_at_them(tmp_path: Path) -> None:
    """A memset-named symbol is checked as memset; forced to copy, the hint names memset, not memcpy."""
    src = tmp_path / "mine.S"
    src.write_text((ROOT / "arch" / "riscv" / "memset.S").read_text()
                   .replace('#include "include/cf_asm.h"', f'#include "{ROOT}/arch/riscv/include/cf_asm.h"'))
    proc = run_cli("check", str(src), "--symbol", "memset", "--max-len", "16", "--json",
                   "--findings", str(tmp_path / "f"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [r["kind"] for r in json.loads(proc.stdout)["routines"]] == ["memset"]
    proc = run_cli("check", str(src), "--symbol", "memset:copy", "--max-len", "16")
    assert proc.returncode == 2 and "--symbol memset:memset" in proc.stderr, proc.stderr
    assert ":memcpy" not in proc.stderr
