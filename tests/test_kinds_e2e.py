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


# ---- copy_from_user and copy_to_user: copy with one side the kernel's ----

NO_STORE_ENTRY = "arch/riscv/mutants/store-no-extable.S"  # its byte loop's store has no entry


def check_as(tmp_path: Path, kind: str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("check", NO_STORE_ENTRY, "--symbol", f"__asm_copy_to_user:{kind}", "--max-len", "32",
                   "--json", "--findings", str(tmp_path / kind), *extra)
    assert "Traceback" not in proc.stderr, proc.stderr
    (r,) = json.loads(proc.stdout)["routines"]
    return proc.returncode, r


def test_a_store_without_an_entry_matters_only_where_the_destination_is_user_memory(tmp_path: Path) -> None:
    """The same body as three kinds: copy and copy_to_user fault on the store (and the audit
    wants its entry); as copy_from_user the destination is the kernel's, never faults, and
    its stores need no entry: clean, and the audit counts them as the kernel's."""
    counts = {}
    for kind, rc_want, findings in (("copy", 1, {"unhandled-fault"}), ("copy_to_user", 1, {"unhandled-fault"}),
                                    ("copy_from_user", 0, set())):
        rc, r = check_as(tmp_path, kind)
        assert rc == rc_want and r["kind"] == kind and set(r["findings"]) == findings, (kind, r)
        assert (r["audit"]["problems"] == []) == (kind == "copy_from_user"), (kind, r["audit"])
        counts[kind] = r["cases"]
    # one side's faults only: each one-way kind runs fewer cases than copy, the same number
    assert counts["copy_from_user"] == counts["copy_to_user"] < counts["copy"], counts
    audit = run_cli("audit", NO_STORE_ENTRY, "--symbol", "__asm_copy_to_user:copy_from_user", "--json")
    assert audit.returncode == 0, audit.stdout + audit.stderr
    summary = json.loads(audit.stdout)["routines"][0]["summary"]
    assert summary["kernel"] > 0 and summary["uncovered"] == 0, summary


def test_a_one_way_copy_never_faults_on_the_kernels_side(tmp_path: Path) -> None:
    """The sweep's cases (the tool's own enumeration) and repro both keep the kernel's side
    whole; a spec that faults there is refused in one line."""
    for kind, kernel in (("copy_from_user", "dst"), ("copy_to_user", "src")):
        sweep_plan = plan.SweepPlan(plan.load(ROOT), kind, "linux", 64, 24)
        cases = [sweep_plan.case_at(i) for i in range(sweep_plan.count())]
        assert all(c is not None and getattr(c, f"{kernel}_fault") == records.NO_FAULT for c in cases), kind
        user = "src" if kernel == "dst" else "dst"
        assert any(getattr(c, f"{user}_fault") != records.NO_FAULT for c in cases if c is not None), kind
    bad = run_cli("repro", f"{NO_STORE_ENTRY}:__asm_copy_to_user:n=1,src_off=0,dst_off=0,dst_fault=0",
                  "--kind", "copy_from_user")
    assert bad.returncode == 2 and "whose dst is kernel memory and never faults" in bad.stderr, bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr


def test_fuzzing_a_one_way_copy_keeps_its_kind_in_the_regression(tmp_path: Path) -> None:
    proc = run_cli("fuzz", NO_STORE_ENTRY, "--symbol", "__asm_copy_to_user:copy_to_user", "--time", "60",
                   "--until", "unhandled-fault", "--seed", "1", "--json", "--corpus", str(tmp_path / "c"),
                   "--findings", str(tmp_path / "f"), "--regressions", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    (spec,) = (tmp_path / "r").glob("*--unhandled-fault.spec")
    assert "# options: --kind copy_to_user" in spec.read_text()
    replay = run_cli("replay", str(tmp_path / "r"), "--json")
    assert replay.returncode == 1, replay.stdout + replay.stderr


def test_a_hypothesis_failure_keeps_the_kind_for_repro(tmp_path: Path) -> None:
    proc = run_cli("fuzz", NO_STORE_ENTRY, "--symbol", "__asm_copy_to_user:copy_to_user", "--engine", "hypothesis",
                   "--time", "60", "--until", "unhandled-fault", "--seed", "1", "--json", "--corpus",
                   str(tmp_path / "c"), "--findings", str(tmp_path / "f"), "--regressions", str(tmp_path / "r"))
    assert proc.returncode == 1, proc.stderr[-2000:]
    failure = tmp_path / "f" / "hypothesis-unhandled-fault.failure"
    text = failure.read_text()
    assert "# options: --kind copy_to_user\n" in text, text
    assert f"copyfuzz fuzz {NO_STORE_ENTRY} --symbol __asm_copy_to_user --kind copy_to_user" in text, text
    repro = run_cli("repro", str(failure), "--json")
    assert repro.returncode == 1 and json.loads(repro.stdout)["kind"] == "copy_to_user", repro.stdout + repro.stderr


def test_coverage_of_a_one_way_copy_leaves_out_the_kernels_fault_paths() -> None:
    """The bytewise body has two table entries (its load and its store); as a one-way copy
    only the user side's can fault, so a full sweep covers every fault path it has."""
    fault_paths = {}
    for kind in ("copy", "copy_from_user", "copy_to_user"):
        proc = run_cli("cov", "arch/riscv/copy_user_bytewise.S", "--symbol", f"__asm_copy_to_user:{kind}",
                       "--max-len", "8", "--json")
        assert proc.returncode == 0, proc.stderr
        cov = json.loads(proc.stdout)["coverage"]
        fault_paths[kind] = (cov["fault_covered"], cov["fault_edges"])
    assert fault_paths == {"copy": (2, 2), "copy_from_user": (1, 1), "copy_to_user": (1, 1)}, fault_paths
