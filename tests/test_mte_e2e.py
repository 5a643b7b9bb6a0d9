"""Faults finer than a page (arm64 --granule 16): the fault boundary at a 16-byte MTE tag
granule anywhere in a page, made by qemu-aarch64's MTE (tagged arenas, synchronous
tag-check faults), as the kernel's user copies meet tagged user memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from copyfuzz import build, records, routines
from copyfuzz.session import Session
from copyfuzz.spec import parse

pytestmark = pytest.mark.e2e


def test_our_arm64_routines_are_clean_with_faults_at_granules(tmp_path: Path) -> None:
    proc = run_cli("sweep", "arm64/copy_from_user", "arm64/copy_to_user", "arm64/clear_user", "arm64/memcpy",
                   "--granule", "16", "--max-len", "24", "--json", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    rows = json.loads(proc.stdout)["routines"]
    assert [r["granule"] for r in rows] == [16] * 4 and all(r["cases"] > 0 for r in rows)


def test_premature_failure_at_a_granule_inside_a_page(tmp_path: Path) -> None:
    """The bug as it was reported: a wide first access straddling a tag granule (not a
    page boundary) makes copy_from_user give up with nothing copied."""
    proc = run_cli("sweep", "arm64/mutants/premature-failure", "--granule", "16", "--max-len", "24", "--json",
                   "--no-audit", "--findings", str(tmp_path))
    row = json.loads(proc.stdout)["routines"][0]
    assert proc.returncode == 0 and row["caught"], row
    spec = parse(row["reproducers"]["no-progress"], "copy_from_user")
    assert spec.granule == 16 and spec.src_fault is not None and spec.src_off + spec.src_fault < records.PAGE_SIZE
    rep = run_cli("repro", row["reproducers"]["no-progress"], "--json")
    assert rep.returncode == 1
    report = json.loads(rep.stdout)
    assert "no-progress" in report["errors"] and report["fault"]["address_relative"] == f"src+{spec.src_fault}"
    text = run_cli("repro", row["reproducers"]["no-progress"]).stdout
    assert "MTE tag check fault" in text


def test_an_in_page_overread_guard_pages_cannot_see_faults_at_a_granule(tmp_path: Path) -> None:
    """Loading a whole word while it stays in the page never faults at a page boundary;
    at a tag granule it does, and the routine then reports bytes it could have copied."""
    args = ("check", "arch/arm64/mutants/overread-in-page.S", "--symbol", "__arch_copy_from_user:copy_from_user",
            "--profile", "exact", "--max-len", "16", "--json", "--findings", str(tmp_path / "findings"))
    pages = run_cli(*args)
    assert pages.returncode == 0, pages.stdout[-1000:] + pages.stderr
    granules = run_cli(*args, "--granule", "16")
    assert granules.returncode == 1
    assert {"spurious-fault", "no-progress"} <= set(json.loads(granules.stdout)["routines"][0]["findings"])


def test_a_granule_case_needs_an_executor_run_for_it() -> None:
    """An executor started without --granule 16 refuses a granule case (its arenas are not
    tagged); the tool starts it so for every granule spec."""
    r = routines.find(routines.discover(ROOT), "arm64/copy_from_user")
    build.build_routines(ROOT, [r])
    case = parse("arm64/copy_from_user:n=16,src_fault=7,granule=16", r.kind).to_case("exact")
    with Session(ROOT, r) as plain:
        refused = plain.run(case)
    assert (refused.type, refused.aux) == (records.RESULT_ERROR, records.CASE_NO_MTE)
    with Session(ROOT, r, granule=16) as tagged:
        ran = tagged.run(case)
    assert ran.type == records.RESULT_CASE and ran.faults >= 1 and ran.accessible == ran.claimed == 7 and not ran.errors


@pytest.mark.parametrize("args", [
    ("sweep", "riscv/copy_user", "--granule", "16", "--max-len", "4"),
    ("repro", "riscv/copy_user:n=1,src_off=9,src_fault=7,granule=16"),
])
def test_granules_are_arm64s(args: tuple[str, ...]) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("copyfuzz: granule 16: faults at tag granules need MTE (arm64); "
                                   "riscv/copy_user cannot have them")


def test_a_case_never_runs_on_tags_an_earlier_case_left(tmp_path: Path) -> None:
    """The fixture retags its destination's guard granules when n = 5, then copies
    everything (over-report). The next case, n = 6 with the same tagged range, is clean
    alone; run after it in the same executor it found the granules untagged and was
    reported too."""
    fixture = ROOT / "tests/fixtures/arm64/retag.S"
    for name, n in (("a", 5), ("b", 6)):
        (tmp_path / f"{name}.spec").write_text(f"# options: --arch arm64 --kind copy_to_user\n"
                                               f"{fixture}:retag_copy:n={n},dst_off=0,dst_fault=0,granule=16\n")
    proc = run_cli("replay", str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "2 cases, 1 with findings" in proc.stdout and ":n=5," in proc.stdout, proc.stdout
