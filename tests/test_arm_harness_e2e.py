"""32-bit ARM end to end, the harness side: the AAPCS registers checked and named,
FPSCR.QC as the user-access stand-in, and a return that pops the return address into pc
(ARM's copy template does) taken as a return. (tests/test_sweep_e2e.py sweeps the ARM
routines and mutants with all the others.)"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

REGS = ROOT / "tests/fixtures/arm/regs.S"


def _check(tmp: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("check", str(REGS), "--arch", "arm", "--symbol", "fixture_copy:copy_to_user", "--max-len", "8",
                   "--no-audit", "--json", "--findings", str(tmp / "findings"), *extra)


@pytest.mark.parametrize("switch,regs", [
    ("CLOBBER_R4", ["r4"]), ("CLOBBER_R11", ["r11"]), ("CLOBBER_SP", ["sp"]), ("CLOBBER_TPIDR", ["tpidrurw"]),
    ("CLOBBER_D8", ["d8-d15"]),
])
def test_callee_saved_registers_are_checked_by_their_arm_names(tmp_path: Path, switch: str, regs: list[str]) -> None:
    proc = _check(tmp_path, "-D", switch)
    assert proc.returncode == 1, proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert list(row["findings"]) == ["register-clobber"], row
    rep = run_cli("repro", row["reproducers"]["register-clobber"], "-D", switch, "--arch", "arm", "--json")
    assert rep.returncode == 1, rep.stderr
    assert json.loads(rep.stdout)["registers_clobbered"] == regs


@pytest.mark.parametrize("switch,findings", [
    (None, []), ("RETURN_VIA_POP", []), ("LEAVE_QC", ["uaccess-left-enabled"]),
])
def test_returns_and_the_user_access_stand_in(tmp_path: Path, switch: str | None, findings: list[str]) -> None:
    proc = _check(tmp_path, *(["-D", switch] if switch else []))
    assert proc.returncode == (1 if findings else 0), proc.stdout[-1000:] + proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert sorted(row["findings"]) == findings and row["arch"] == "arm" and row["xlen"] == 32


def test_a_register_the_routine_never_set_points_nowhere(tmp_path: Path) -> None:
    """r3 holds no harness value at the call: a routine using it unset faults (an
    unmapped address), as a kernel would oops, instead of reaching the harness's memory."""
    proc = _check(tmp_path, "-D", "UNSET_R3")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert list(row["findings"]) == ["unhandled-fault"], row
    rep = run_cli("repro", row["reproducers"]["unhandled-fault"], "-D", "UNSET_R3", "--arch", "arm", "--json")
    assert rep.returncode == 1 and json.loads(rep.stdout)["fault"]["address"] == 0xBAD00303, rep.stdout
