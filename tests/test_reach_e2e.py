"""A verdict says what of the routine ran (issue 25, point 5): the sweep counts, under
the QEMU plugin, which instructions of the audit's listing executed; a routine whose
memory accesses or fixups did not all run is "clean where it ran", with what never ran
by address and source line, and --cpu picks a QEMU CPU that reaches more of it. On our
fixture in the shape of arm64's memset (a DC ZVA path sized by DCZID_EL0)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

ZVA = "tests/fixtures/arm64/zva_memset.S"


def _check(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:  # JSON
    proc = run_cli("check", ZVA, "--symbol", "cf_zva_memset", "--max-len", "200", "--jobs", "2",
                   "--findings", str(tmp_path / "f"), *args)
    return proc.returncode, (json.loads(proc.stdout) if "--json" in args else {"text": proc.stdout}), proc.stderr


def test_code_that_never_ran_is_no_clean_verdict(tmp_path: Path) -> None:
    """QEMU's default CPU has a 512-byte DC ZVA block: at 200 bytes the ZVA path never
    runs, and the check says so instead of "clean"."""
    rc, data, err = _check(tmp_path, "--json")
    assert rc == 0, err  # no finding: the exit status stays 0
    (r,) = data["routines"]
    assert r["verdict"] == "clean where it ran" and r["findings"] == {}
    ran = r["ran"]
    never = {row["insn"]: row for row in ran["never_ran"]}
    assert "dc zva, x8" in never and never["dc zva, x8"]["access"] is True
    assert never["dc zva, x8"]["line"] == "zva_memset.S:37" and never["dc zva, x8"]["where"] == "cf_zva_memset+0x4c"
    assert ran["accesses_never_ran"] == 2 and ran["executed"] + len(never) == ran["instructions"]
    rc, text, _ = _check(tmp_path)
    assert rc == 0
    out = str(text["text"])
    assert "clean where it ran" in out and "dc zva, x8  access" in out and "zva_memset.S:37" in out


def test_the_length_that_runs_it_is_found_and_a_sweep_to_it_runs_everything(tmp_path: Path) -> None:
    """The probe past the sweep: the ZVA path needs two 512-byte blocks, so it first runs
    at n = 1024 exactly (doubling from 400, then bisection); the case it names runs it; and
    a sweep to that length runs all of the routine and is clean."""
    rc, data, err = _check(tmp_path, "--json")
    assert rc == 0, err
    (r,) = data["routines"]
    never = {row["insn"]: row for row in r["ran"]["never_ran"]}
    assert {row["runs_from_n"] for row in never.values()} == {1024}, never
    assert r["ran"]["probe"]["lengths"][0] == 400 and r["ran"]["probe"]["stopped"] is None
    spec = never["dc zva, x8"]["runs_in"]
    assert spec.startswith(f"{ZVA}:cf_zva_memset:n=1024,fill=0x0"), spec
    rc, text, _ = _check(tmp_path)
    assert "dc zva, x8  access  (first ran at n=1024)" in str(text["text"])
    assert "ran 11 of 11: sweep with --max-len 1024 to judge them" in str(text["text"])
    # the lengths just below and at it: every case of the short path ran in the sweep above
    proc = run_cli("check", ZVA, "--symbol", "cf_zva_memset", "--min-len", "1000", "--max-len", "1024", "--json",
                   "--findings", str(tmp_path / "f"))
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(proc.stdout)["routines"]
    assert r["verdict"] == "clean" and r["ran"]["never_ran"] == [] and r["ran"]["probe"] is None


def test_another_qemu_cpu_reaches_it(tmp_path: Path) -> None:
    rc, data, err = _check(tmp_path, "--json", "--cpu", "cortex-a72")
    assert rc == 0, err
    (r,) = data["routines"]
    assert r["verdict"] == "clean" and r["qemu_cpu"] == "cortex-a72"
    assert r["ran"]["never_ran"] == [] and r["ran"]["executed"] == r["ran"]["instructions"]
    rc, data, _ = _check(tmp_path, "--json", "--cpu", "no-such-cpu")
    assert rc == 2 and "--cpu no-such-cpu: qemu-aarch64 has no such CPU" in str(data["error"])


def test_other_code_that_never_ran_is_listed_and_leaves_it_clean(tmp_path: Path) -> None:
    """Our vector copy's "the fault did not recur" return cannot run in the harness (a
    guard page always faults again): listed, but every access and fixup ran."""
    proc = run_cli("sweep", "riscv/copy_user_vector", "--max-len", "32", "--json")  # 4.6 s at 64, the same rows
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(proc.stdout)["routines"]
    assert r["verdict"] == "clean" and r["ran"]["accesses_never_ran"] == 0 and r["ran"]["fixups_never_ran"] == 0
    assert [row["insn"] for row in r["ran"]["never_ran"]] == ["c.li a0, 0", "c.jr ra"]
    # no length runs it: the probe says so, up to its cap
    assert [row["runs_from_n"] for row in r["ran"]["never_ran"]] == [None, None]
    assert r["ran"]["probe"]["lengths"][-1] == 65536 and r["ran"]["probe"]["cases"] > 40
    text = run_cli("sweep", "riscv/copy_user_vector", "--max-len", "32").stdout
    assert "ran none of them at any length it tried" in text and "longer --max-len" not in text, text


def test_the_fixups_counted_are_the_routines_own_and_not_measured_is_said(tmp_path: Path) -> None:
    """A table shared by two routines (uaccess.S: the copy and __clear_user): the fixup of
    the copy is not one of __clear_user's that never ran. With --no-audit nothing is
    counted, and the report says so rather than a bare "clean"."""
    src = "tests/fixtures/kernel/boot/riscv_uaccess.S"
    proc = run_cli("check", src, "--symbol", "__clear_user:clear", "--max-len", "32", "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    (r,) = json.loads(proc.stdout)["routines"]
    assert r["verdict"] == "clean" and r["ran"]["fixups_never_ran"] == 0
    assert all(row["line"] for row in r["ran"]["never_ran"])  # every address has its source line
    text = run_cli("check", src, "--symbol", "__clear_user:clear", "--max-len", "8", "--no-audit",
                   "--findings", str(tmp_path)).stdout
    assert "what of it ran was not measured (--no-audit)" in text


def test_one_decode_serves_several_audits_and_none_sees_anothers_origins() -> None:
    """The symbols of one file share their executors' code, decoded once (audit._decoded;
    issue 26, point 11): each audit marks its own copies, so a copy_to_user audit after
    a copy_from_user one of the same code gives what it gives alone."""
    from copyfuzz import audit, paths

    elf = paths.build_dir(ROOT) / "riscv64" / "riscv" / "copy_user.elf"

    def origins(kind: str) -> list[tuple[int, str | None]]:
        a = audit.audit_executor(elf, name="x", symbol="__asm_copy_to_user", kind=kind, xlen=64,
                                 table_format="rel", arch="riscv")
        return [(i.addr, i.origin) for i in a.listing if i.access]

    alone = {}
    for kind in ("copy_to_user", "copy_from_user"):
        audit._DECODED.clear()
        alone[kind] = origins(kind)
    assert alone["copy_to_user"] != alone["copy_from_user"]
    audit._DECODED.clear()
    kept = [audit.audit_executor(elf, name="x", symbol="__asm_copy_to_user", kind=k, xlen=64, table_format="rel",
                                  arch="riscv")
            for k in ("copy_from_user", "copy_to_user")]  # sweep_routines keeps every audit, then reads them
    assert [[(i.addr, i.origin) for i in a.listing if i.access] for a in kept] == \
        [alone["copy_from_user"], alone["copy_to_user"]]
    assert len(audit._DECODED) == 1


def test_a_finding_of_the_probe_is_a_finding(tmp_path: Path) -> None:
    """Our memcpy with a step of its own from 4096 bytes, wrong there only: swept to 64 it
    never runs, the probe runs it and its case is a finding (exit 1, written, replayable)."""
    path = "tests/fixtures/outside/long_path.S"
    proc = run_cli("check", path, "--symbol", "cf_long_memcpy:memcpy", "--max-len", "64", "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    (r,) = json.loads(proc.stdout)["routines"]
    assert set(r["findings"]) == {"wrong-data"} and r["ran"]["probe"]["findings"]["wrong-data"] > 0
    assert {row["runs_from_n"] for row in r["ran"]["never_ran"]} == {4096}
    spec = r["reproducers"]["wrong-data"]
    assert spec.endswith(":n=4096,src_off=0,dst_off=0"), spec
    assert spec in "".join(p.read_text() for p in tmp_path.rglob("*.jsonl"))
    repro = run_cli("repro", spec, "--kind", "memcpy", "--json")
    assert repro.returncode == 1 and "wrong-data" in json.loads(repro.stdout)["classes"], repro.stderr
    # in the table, the class is marked as found past the sweep's lengths, not in them
    text = run_cli("check", path, "--symbol", "cf_long_memcpy:memcpy", "--max-len", "64", "--findings",
                   str(tmp_path)).stdout
    assert "(past --max-len)" in " ".join(text.split()), text
