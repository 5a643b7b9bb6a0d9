"""End to end with the real executors: `make -s all`, then sweep and repro for real.

These never skip: without make, the cross compiler or QEMU they fail, because a
suite that silently skips its only real check proves nothing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, cli_in_process, run_cli
from copyfuzz import build, records

pytestmark = pytest.mark.e2e

MUTANT_MAX_LEN = "128"  # every bundled mutant is caught well below this (stop-mask ends early)
# The two mutants whose classes first show at n = 64 (each class's smallest case, in a
# sweep from 0: store-beyond-reported at n=64,src_off=0,dst_off=4080,dst_fault=16, the
# overrun at n=64,src_off=1,dst_off=1) are swept from there: the 416,000 cases each of
# n < 64 could not catch them, and were 12 of the fixture's 16 s. Caught from n = 0 (their
# smallest reproducers) is the README's main job's claim, in the long tier.
MUTANTS_FROM_64 = ("riscv/mutants/no-progress-partial-word", "riscv/mutants/word-threshold-too-small")
# The claim "clean at the default bound (256)" is the README's main job, `./copyfuzz sweep
# --mutants`, which the long tier runs (`# long tier` in README.md: `make check-long`,
# tests/test_docs_tiers_e2e.py) under each routine's declared profile, exact for every
# bundled routine (checked below). This test checks the report's details on a shorter
# sweep: 32 bytes reach every routine's word loop from every alignment (27 s at 64, a
# quarter of that here).
CLEAN_MAX_LEN = "32"


@pytest.fixture(scope="module")
def built() -> None:
    for tool in build.required_tools(64, "riscv"):  # `make all`: the RV64 routines
        assert shutil.which(tool), f"'{tool}' is missing: run 'make deps'"
    proc = subprocess.run(["make", "-s", "all"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, f"make -s all failed:\n{proc.stdout}{proc.stderr}"


@pytest.fixture(scope="module")
def routines(built: None) -> list[dict[str, Any]]:
    proc = run_cli("list", "--json")
    assert proc.returncode == 0, proc.stderr
    listed: list[dict[str, Any]] = json.loads(proc.stdout)
    return listed


@pytest.fixture(scope="module")
def mutant_report(routines: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    findings = tmp_path_factory.mktemp("mutant-findings")
    mutants = [r["name"] for r in routines if r["mutant"]]
    assert set(MUTANTS_FROM_64) <= set(mutants), MUTANTS_FROM_64
    report: dict[str, Any] = {"routines": []}
    exits = []
    for names, first in (([m for m in mutants if m not in MUTANTS_FROM_64], "0"), (list(MUTANTS_FROM_64), "64")):
        proc = run_cli("sweep", *names, "--json", "--min-len", first, "--max-len", MUTANT_MAX_LEN,
                       "--findings", str(findings))
        assert "Traceback" not in proc.stderr
        report["routines"] += json.loads(proc.stdout)["routines"]
        exits.append(proc.returncode)
    report["routines"].sort(key=lambda r: mutants.index(r["name"]))  # as listed, as one sweep of all
    report["_exit"] = max(exits)
    report["_findings_dir"] = str(findings)
    return report


def test_bundled_routines_declare_exact(routines: list[dict[str, Any]]) -> None:
    """So the README's main job (each routine under its declared profile) sweeps them exact."""
    assert [r["name"] for r in routines if not r["mutant"] and r["profile"] != "exact"] == []


def test_bundled_routines_are_clean_under_exact(built: None, routines: list[dict[str, Any]],
                                                tmp_path: Path) -> None:
    proc = run_cli("sweep", "--profile", "exact", "--max-len", CLEAN_MAX_LEN, "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    names = [r["name"] for r in report["routines"]]
    assert names == [r["name"] for r in routines if not r["mutant"]]
    assert names, "no bundled routines found under arch/"
    for r in report["routines"]:
        assert r["profile"] == "exact"
        assert r["cases"] > 0
        assert r["findings"] == {} and r["notes"] == {} and r["reproducers"] == {}, r
    assert not any(tmp_path.iterdir())  # nothing found, nothing written


def test_every_mutant_is_caught_with_its_classes(mutant_report: dict[str, Any],
                                                 routines: list[dict[str, Any]]) -> None:
    mutants = {r["name"]: r for r in routines if r["mutant"]}
    assert mutants, "no mutants found under arch/*/mutants/"
    swept = {r["name"]: r for r in mutant_report["routines"]}
    assert set(swept) == set(mutants)
    for name, r in swept.items():
        assert r["mutant"] is True
        assert r["expect"] == mutants[name]["expect"]
        assert r["caught"] is True, f"{name} escaped: saw {sorted(r['findings'])} {sorted(r['notes'])}"
        for cls in r["expect"]:
            assert cls in r["reproducers"], (name, cls)
            assert cls in r["findings"] or cls in r["notes"]
        assert r["cases_until_caught"] >= 1
    assert mutant_report["_exit"] == 0


def test_findings_files_hold_the_reproducers(mutant_report: dict[str, Any]) -> None:
    directory = Path(str(mutant_report["_findings_dir"]))
    for r in mutant_report["routines"]:
        path = directory / (r["name"].replace("/", "__") + ".jsonl")
        lines = [json.loads(x) for x in path.read_text().splitlines()]
        last = {x["class"]: x["spec"] for x in lines}
        for cls, spec in r["reproducers"].items():
            assert last[cls] == spec


def test_repro_of_each_mutant_reproducer_shows_its_class(mutant_report: dict[str, Any]) -> None:
    kinds_shown: set[str] = set()
    for i, r in enumerate(mutant_report["routines"]):
        defining = r["expect"][0]
        spec = r["reproducers"][defining]
        if i == 0:  # one through a process of its own, as a user runs it; the rest in this one
            proc = run_cli("repro", spec, "--json")
            assert "Traceback" not in proc.stderr
            status, stdout = proc.returncode, proc.stdout
        else:
            status, stdout = cli_in_process("repro", spec, "--json")
        shown = json.loads(stdout)
        assert defining in shown["classes"], (spec, shown)
        is_error = bool(records.ERROR_MASK[r["profile"]] & records.class_mask([defining]))
        assert status == (1 if is_error else 0), (spec, shown)
        # The human form names the class too (once per kind: one renderer for all classes).
        if r["kind"] not in kinds_shown:
            kinds_shown.add(r["kind"])
            assert defining in cli_in_process("repro", spec)[1]


def test_shards_find_the_same_smallest_reproducers(built: None, tmp_path: Path) -> None:
    reports = []
    for jobs in ("1", "2"):
        proc = run_cli("sweep", "riscv/mutants/fixup-full-size", "riscv/mutants/wrong-shift", "--json",
                       "--jobs", jobs, "--max-len", "64", "--findings", str(tmp_path / jobs))
        assert proc.returncode == 0, proc.stderr
        reports.append({r["name"]: r for r in json.loads(proc.stdout)["routines"]})
    for name, one in reports[0].items():
        two = reports[1][name]
        for cls in one["expect"]:
            assert one["reproducers"][cls] == two["reproducers"][cls]
        assert one["cases_until_caught"] == two["cases_until_caught"]


def test_sweep_json_schema(built: None, tmp_path: Path) -> None:
    proc = run_cli("sweep", "riscv/copy_user", "riscv/mutants/tail-extra-byte", "--max-len", "16",
                   "--json", "--jobs", "2", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["profile"] is None and report["max_len"] == 16
    base_keys = {"name", "kind", "profile", "cases", "cases_per_s", "findings", "reproducers", "notes"}
    for r in report["routines"]:
        assert base_keys <= set(r)
        assert isinstance(r["cases"], int) and isinstance(r["cases_per_s"], (int, float))
        assert r["kind"] in records.KINDS and r["profile"] in records.PROFILES
        for group in ("findings", "notes"):
            assert all(c in records.CLASS_NAMES and isinstance(n, int) for c, n in r[group].items())
        for cls, spec in r["reproducers"].items():
            assert cls in records.CLASS_NAMES and spec.startswith(r["name"] + ":n=")
    copy_user, mutant = report["routines"]
    assert "mutant" not in copy_user
    assert mutant["mutant"] is True and mutant["caught"] is True
    assert mutant["expect"] == ["store-out-of-bounds"]


def test_sweep_text_report(built: None, tmp_path: Path) -> None:
    # The report's form, not the mutants' catching (the mutant_report tests): 4 bytes give
    # a table of both verdicts (about half caught), at two thirds of 16 bytes' time.
    proc = run_cli("sweep", "riscv/copy_user", "--mutants", "--max-len", "4", "--findings", str(tmp_path))
    assert "riscv/copy_user" in proc.stdout and "clean" in proc.stdout
    assert "mutants" in proc.stdout and "cases until caught" in proc.stdout
    # Either every mutant is caught already at 4 bytes (exit 0) or some escape (exit 1);
    # the verdicts in the table must agree with the exit status.
    assert proc.returncode == (1 if "ESCAPED" in proc.stdout else 0), proc.stdout + proc.stderr


def test_repro_clean_case_explains_the_numbers(built: None) -> None:
    proc = run_cli("repro", "riscv/copy_user:n=1000,src_fault=500,dst_off=7", "--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["spec"] == "riscv/copy_user:n=1000,src_off=3596,src_fault=500,dst_off=7"
    assert (shown["ret"], shown["expected_ret"], shown["accessible"], shown["claimed"]) == (500, 500, 500, 500)
    assert shown["fault"]["count"] >= 1
    assert shown["fault"]["address_relative"] == "src+500"
    assert shown["fault"]["pc_symbol"].startswith("__asm_copy_to_user")
    assert shown["errors"] == [] and shown["registers_clobbered"] == []


def test_repro_rejects_bad_case_before_running(built: None) -> None:
    proc = run_cli("repro", "riscv/clear_user:n=10,src_off=3")
    assert proc.returncode == 2 and "no source" in proc.stderr


def test_repro_disassembles_the_fault_and_its_fixup() -> None:
    proc = run_cli("repro", "riscv/mutants/fixup-off-by-one:n=1,src_off=0,src_fault=0,dst_off=0", "--json")
    assert proc.returncode == 1
    code = json.loads(proc.stdout)["code"]
    (fault,) = [r for r in code["fault"] if r["at"]]
    assert fault["insn"].startswith("lbu")  # the byte load that met the unmapped source page
    assert code["fixup"][0]["at"] and code["fixup"][0]["insn"].startswith("sub a0")
    assert any("addi a0, -1" in r["insn"] for r in code["fixup"])  # the off-by-one, in plain sight
    text = run_cli("repro", "riscv/mutants/fixup-off-by-one:n=1,src_off=0,src_fault=0,dst_off=0").stdout
    assert "the first fault (Capstone)" in text and "the fixup it resumed at" in text
