"""arm64 end to end: the target layer (make and the tool agree on every architecture's
build), the harness's register checks and user-access stand-in under qemu-aarch64, the
three exception-table layouts, `check --arch`, the arm64 audit, and the one-line errors
for RISC-V-only options. (tests/test_sweep_e2e.py sweeps the arm64 routines and mutants
with all the others; tests/test_plugin_arm64_e2e.py has the plugin.)"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from copyfuzz import checkfile, paths, routines, targets

pytestmark = pytest.mark.e2e

REGS = ROOT / "tests/fixtures/arm64/regs.S"


def test_make_and_the_tool_name_the_same_executors_for_every_architecture(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each architecture's build directory comes from its target.mk (BUILD_NAME) for make
    and from targets.py for the tool: they must agree, or the tool builds what it never runs."""
    monkeypatch.delenv("O", raising=False)
    found = routines.discover(ROOT)
    for arch in targets.ARCHES.values():
        for xlen in arch.widths:
            out = subprocess.run(["make", "-s", "--no-print-directory", *arch.make_vars(xlen), "list-executors"],
                                 cwd=ROOT, check=True, capture_output=True, text=True).stdout.split()
            ours = sorted(str(paths.executor(paths.REL, r.name, xlen)) for r in found if r.arch == arch.name)
            assert ours and sorted(out) == ours, (arch.name, xlen)


def _check(tmp: Path, *extra: str, path: Path = REGS) -> subprocess.CompletedProcess[str]:
    return run_cli("check", str(path), "--arch", "arm64", "--symbol", "fixture_copy:copy_to_user",
                   "--max-len", "12", "--json", "--findings", str(tmp / "findings"), *extra)


@pytest.mark.parametrize("switch,regs", [
    ("CLOBBER_X19", ["x19"]), ("CLOBBER_X18", ["x18"]), ("CLOBBER_SP", ["sp"]), ("CLOBBER_TPIDR", ["tpidr_el0"]),
    ("CLOBBER_D8", ["d8-d15"]),
])
def test_callee_saved_registers_are_checked_by_their_arm64_names(tmp_path: Path, switch: str, regs: list[str]) -> None:
    proc = _check(tmp_path, "-D", switch)
    assert proc.returncode == 1, proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert "register-clobber" in row["findings"], row
    spec = row["reproducers"]["register-clobber"]
    rep = run_cli("repro", spec, "-D", switch, "--arch", "arm64", "--json")
    assert rep.returncode == 1, rep.stderr
    assert json.loads(rep.stdout)["registers_clobbered"] == regs


def test_the_fixture_is_clean_without_a_switch_and_fpsr_qc_is_the_pan_stand_in(tmp_path: Path) -> None:
    clean = _check(tmp_path)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    left = _check(tmp_path, "-D", "LEAVE_QC")
    assert left.returncode == 1
    assert list(json.loads(left.stdout)["routines"][0]["findings"]) == ["uaccess-left-enabled"]


@pytest.mark.parametrize("define,layout", [("CF_EXTABLE_REL8", "rel8"), ("CF_EXTABLE_ABS", "abs"), (None, "rel")])
def test_each_exception_table_layout_is_told_and_followed(define: str | None, layout: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Our copy_from_user built with each of the three layouts arm64 kernels have used:
    `info` names the layout the build read off the relocations, and the sweep (every
    fault position to 40 bytes, through the fixups) and the audit are clean."""
    monkeypatch.delenv("O", raising=False)  # the executor under the default build/
    src = ROOT / "arch/arm64/copy_from_user.S"
    proc = run_cli("check", str(src), "--symbol", "__arch_copy_from_user:copy_from_user", "--profile", "exact",
                   "--max-len", "40", "--json", *(["-D", define] if define else []))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert row["arch"] == "arm64" and row["cases"] > 0 and row["audit"]["problems"] == []
    assert row["audit"]["summary"]["covered"] == 21  # every ldtr of the template has its entry
    build = checkfile.FileBuild(defines=(define,) if define else ())
    elf = checkfile.external_routine(ROOT, src, "__arch_copy_from_user", "copy_from_user", xlen=64,
                                     build=build, profile="exact").elf  # where that check built it
    info = subprocess.run(["qemu-aarch64", str(ROOT / elf), "info"], check=True, capture_output=True,
                          text=True).stdout
    assert f"extable={layout}\n" in info and "arch=arm64\n" in info


def test_the_architecture_comes_from_the_path_or_arch(tmp_path: Path) -> None:
    """Outside an arch/arm64/ directory the file's instructions say arm64 (and it is said);
    --arch riscv builds it as RISC-V, where it does not assemble, and the error names
    RISC-V's compat tree and headers only."""
    copy = tmp_path / "regs.S"
    shutil.copy(REGS, copy)
    inferred = run_cli("check", str(copy), "--symbol", "fixture_copy:copy_to_user", "--max-len", "4")
    assert inferred.returncode == 0, inferred.stderr
    assert "copyfuzz: fixture_copy: arch arm64 from its instructions" in inferred.stderr
    wrong = run_cli("check", str(copy), "--symbol", "fixture_copy:copy_to_user", "--max-len", "4", "--arch", "riscv")
    assert wrong.returncode == 2 and "does not build for riscv" in wrong.stderr, wrong.stderr
    first = wrong.stderr.splitlines()[0]
    assert "harness/compat/riscv/include" in first and "<asm/asm.h>" in first and "asm-uaccess" not in first
    right = _check(tmp_path, path=copy)
    assert right.returncode == 0, right.stderr


def test_the_arm64_audit_sees_each_side_and_a_missing_entry() -> None:
    proc = run_cli("audit", "arm64/copy_to_user", "--json")
    assert proc.returncode == 0, proc.stderr
    audit = json.loads(proc.stdout)["routines"][0]
    accesses = [x for x in audit["listing"] if x["access"]]
    assert {(x["access"], x["base"], x["fixup"] is not None) for x in accesses} == {
        ("load", "kernel", False), ("store", "user", True)}  # the kernel's source needs no entry
    assert any(x["insn"].startswith("sttr ") for x in accesses)
    bad = run_cli("audit", "arm64/mutants/head-no-extable")
    assert bad.returncode == 1
    assert "load 'ldtrb w16, [x1]' has no table entry" in bad.stdout


@pytest.mark.parametrize("args,message", [
    (["--xlen", "32"], "--xlen 32: arm64 routines are 64-bit only"),
    (["--isa", "rv64gcv"], "--isa/--vlen name RISC-V extensions"),
])
def test_riscv_only_options_on_an_arm64_routine_are_one_line(args: list[str], message: str) -> None:
    proc = run_cli("sweep", "arm64/memcpy", "--max-len", "4", *args)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_register_the_routine_never_set_points_nowhere(tmp_path: Path) -> None:
    """x9 held the trampoline's struct cf_call at the call: a routine loading through it
    read the harness's memory and came out clean. Every scratch register now holds an
    unmapped address that names it, so the load faults as it would oops in the kernel."""
    proc = _check(tmp_path, "-D", "UNSET_X9", "--no-audit")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert list(row["findings"]) == ["unhandled-fault"], row
    rep = run_cli("repro", row["reproducers"]["unhandled-fault"], "-D", "UNSET_X9", "--arch", "arm64", "--json")
    assert rep.returncode == 1 and json.loads(rep.stdout)["fault"]["address"] == 0x7bad00000909, rep.stdout


def test_an_instruction_qemu_does_not_implement_is_said_not_reported_as_crashes(tmp_path: Path) -> None:
    """FEAT_MOPS under QEMU 7.2: every case a SIGILL at `cpyfp`, which Capstone decodes;
    one line naming it, not thousands of crash findings (issue 25, point 7)."""
    proc = run_cli("check", str(ROOT / "tests" / "fixtures" / "arm64" / "mops_memcpy.S"), "--symbol",
                   "cf_mops_memcpy", "--arch", "arm64", "--max-len", "4", "--json", "--findings", str(tmp_path))
    assert proc.returncode == 2, proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert "cf_mops_memcpy+0x4: `cpyfp [x3]!, [x1]!, x2!` raised SIGILL" in error and "FEAT_MOPS" in error
