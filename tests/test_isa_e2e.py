"""--isa and --vlen (issue 12, point 12): the routine's -march and QEMU's -cpu, recorded
for repro and replay; vector accesses in the audit and at a fault; the bundled vector
copy and its mutants.

Fixtures of our own: tests/fixtures/isa/ (vec_memcpy.S, vec_copy_noextable.S,
vstart_probe.S).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, fuzz_args, run_cli
from copyfuzz import isa as isas
from copyfuzz import regressions, triage
from copyfuzz.errors import CopyfuzzError
from copyfuzz.options import FileOptions, IsaOptions, RoutineOptions
from copyfuzz.selection import file_routines
from copyfuzz.spec import Spec, parse_spec_line

FIX = "tests/fixtures/isa"
PROBE = f"{FIX}/vstart_probe.S"


# ---- parsing (no processes) ----

@pytest.mark.parametrize(("text", "vlen", "march", "cpu"), [
    ("rv64gcv", None, "rv64gcv", "rv64,v=true,vlen=128,vext_spec=v1.0"),
    ("RV64IMAFDCV", 256, "rv64gcv", "rv64,v=true,vlen=256,vext_spec=v1.0"),
    ("rv64gc_zba_zbb", None, "rv64gc_zba_zbb", "rv64,zba=true,zbb=true"),
    ("rv32gcv", 1024, "rv32gcv", "rv32,v=true,vlen=1024,vext_spec=v1.0"),
    ("rv64gc_zfh_zicsr", None, "rv64gc_zfh_zicsr", "rv64,Zfh=true"),
    ("rv64gc", None, "rv64gc", ""),
])
def test_isa_parses_to_march_and_cpu(text: str, vlen: int | None, march: str, cpu: str) -> None:
    isa = isas.parse(text, vlen)
    assert (isa.march, isa.cpu) == (march, cpu)


@pytest.mark.parametrize(("text", "vlen", "says"), [
    ("rv64gcq", None, "'q'"), ("rv64cg", None, "base must be i or g"), ("rv64ic", None, "at least"),
    ("rv64gc_zicboz", None, "QEMU 7.2"), ("rv64gc_zfoo", None, "unknown extension"),
    ("rv64gcv", 64, "VLEN"), ("rv64gc", 256, "vector ISA only"), ("x86", None, "expected rv64"),
    ("rv64gc_zba_zba", None, "twice"), ("rv64gvc", None, "order"),
])
def test_bad_isa_is_one_error(text: str, vlen: int | None, says: str) -> None:
    with pytest.raises(CopyfuzzError, match=says):
        isas.parse(text, vlen)


# ---- every command: a bad value exits 2 with one line (and JSON under --json) ----

@pytest.mark.e2e
@pytest.mark.parametrize("argv", [
    ["sweep", "riscv/copy_user", "--json"], ["check", PROBE, "--symbol", "probe_load", "--json"],
    ["audit", "riscv/copy_user", "--json"], ["repro", "riscv/copy_user:n=1", "--json"],
    ["cov", "riscv/copy_user", "--json"], ["bench", "riscv/copy_user", "--json"],
    ["fuzz", "riscv/copy_user", "--json"], ["replay", FIX, "--json"],
])
def test_every_command_refuses_a_bad_isa(argv: list[str]) -> None:
    proc = run_cli(*argv, "--isa", "rv64gc_zicboz")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "zicboz" in proc.stderr
    assert "zicboz" in json.loads(proc.stdout)["error"]


@pytest.mark.e2e
def test_isa_and_xlen_must_agree() -> None:
    proc = run_cli("sweep", "riscv/copy_user", "--isa", "rv32gc", "--xlen", "64")
    assert proc.returncode == 2 and "RV32" in proc.stderr


# ---- a bundled routine for another ISA is a build product of its own ----

@pytest.mark.e2e
def test_bundled_routine_under_another_isa(tmp_path: Path) -> None:
    proc = run_cli("sweep", "riscv/copy_user_bytewise", "--isa", "rv64gc_zba_zbb", "--max-len", "12",
                   "--jobs", "2", "--json", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    r = json.loads(proc.stdout)["routines"][0]
    assert (r["isa"], r["qemu_cpu"], r["findings"]) == ("rv64gc_zba_zbb", "rv64,zba=true,zbb=true", {})
    assert (ROOT / "build/riscv64/isa-rv64gc_zba_zbb/riscv/copy_user_bytewise.elf").is_file()


# ---- files from outside: -march for the routine, -cpu for QEMU ----

@pytest.mark.e2e
def test_vector_memcpy_needs_isa_and_is_clean_with_it(tmp_path: Path) -> None:
    base = ["check", f"{FIX}/vec_memcpy.S", "--symbol", "cf_vec_memcpy", "--max-len", "32", "--jobs", "2",
            "--json", "--findings", str(tmp_path)]
    without = run_cli(*base)
    assert without.returncode == 2 and "--isa rv64gcv" in json.loads(without.stdout)["error"]
    for vlen in ("128", "256"):
        proc = run_cli(*base, "--isa", "rv64gcv", "--vlen", vlen)
        assert proc.returncode == 0, proc.stderr
        r = json.loads(proc.stdout)["routines"][0]
        assert r["findings"] == {} and r["cases"] > 0 and f"vlen={vlen}" in r["qemu_cpu"]


def _repro(spec: str, *extra: str) -> dict[str, object]:
    proc = run_cli("repro", spec, "--json", *extra)
    assert proc.returncode in (0, 1), proc.stderr
    out = json.loads(proc.stdout)
    assert isinstance(out, dict)
    return out


@pytest.mark.e2e
@pytest.mark.parametrize("vlen", [128, 256])
def test_vlen_reaches_qemu(vlen: int) -> None:
    out = _repro(f"{PROBE}:probe_vlenb:n=100", "--kind", "copy", "--isa", "rv64gcv", "--vlen", str(vlen))
    assert out["ret"] == vlen // 8


# ---- the audit: vector accesses Capstone cannot decode still need table entries ----

@pytest.mark.e2e
def test_audit_lists_an_undecodable_vector_store_without_entry() -> None:
    proc = run_cli("audit", f"{FIX}/vec_copy_noextable.S", "--symbol", "cf_vec_copy_to_user:copy", "--isa", "rv64gcv",
                   "--json")
    assert proc.returncode == 1, proc.stderr
    a = json.loads(proc.stdout)["routines"][0]
    rows = {row["insn"]: row for row in a["listing"]}
    assert rows["vle8.v v8, (a1)"]["access"] == "load" and rows["vle8.v v8, (a1)"]["fixup"]
    store = rows["vse8.v v8, (a0)"]
    assert (store["access"], store["base"], store["fixup"]) == ("store", "user", None)
    assert "vsetvli t0, a2, e8, m1, ta, ma" in rows
    assert a["summary"]["uncovered"] == 1 and len(a["problems"]) == 1


# ---- a fault in a vector access: the fixup runs, and what vstart holds there ----

@pytest.mark.e2e
@pytest.mark.parametrize(("symbol", "side", "at"), [("probe_load", "src", 5), ("probe_store", "dst", 5),
                                                    ("probe_store", "dst", 1)])
def test_vstart_in_the_fixup_is_the_faulting_element(symbol: str, side: str, at: int) -> None:
    """QEMU 7.2 (docs/semantics.md, "Vector accesses"): a faulting unit-stride vle8.v or
    vse8.v resumes at its fixup with vstart = the index of the faulting element."""
    out = _repro(f"{PROBE}:{symbol}:n=16,{side}_off={4096 - at},{side}_fault={at}", "--kind", "copy",
                 "--isa", "rv64gcv")
    fault = out["fault"]
    assert isinstance(fault, dict) and fault["count"] == 1 and fault["fixup"], fault
    assert out["ret"] == at


@pytest.mark.e2e
def test_vse8_stores_the_elements_before_the_fault() -> None:
    """The elements before vstart are stored: the mutant that reports the whole chunk as
    not copied is store-beyond-reported at n=2 with the second byte on the guard page."""
    out = _repro("riscv/mutants/vector-fixup-chunk:n=2,dst_off=4095,dst_fault=1")
    assert "store-beyond-reported" in out["errors"]  # type: ignore[operator]


# ---- the bundled vector copy and its mutants ----

@pytest.mark.e2e
def test_vector_copy_clean_and_its_mutants_caught(tmp_path: Path) -> None:
    proc = run_cli("sweep", "riscv/copy_user_vector", "riscv/mutants/vector-*", "--max-len", "32", "--jobs", "2",
                   "--json", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    by_name = {r["name"]: r for r in json.loads(proc.stdout)["routines"]}
    assert by_name["riscv/copy_user_vector"]["findings"] == {}
    assert by_name["riscv/copy_user_vector"]["qemu_cpu"] == "rv64,v=true,vlen=128,vext_spec=v1.0"
    for name in ("riscv/mutants/vector-fixup-chunk", "riscv/mutants/vector-no-src-advance"):
        assert by_name[name]["caught"], by_name[name]


# ---- recorded: a regression's `# options:` rebuilds and reruns with the ISA ----

@pytest.mark.e2e
def test_regression_records_isa_and_repro_replay_use_it(tmp_path: Path) -> None:
    target = RoutineOptions(FileOptions(symbol=("cf_vec_memcpy",)), IsaOptions("rv64gcv", 256), xlen=64)
    routine = file_routines(ROOT, f"{FIX}/vec_memcpy.S", target, "linux")[0]
    assert routine.repro_options == ["--isa", "rv64gcv", "--vlen", "256", "--kind", "memcpy"]
    spec = Spec(routine=routine.name, kind="memcpy", n=40)
    path, new = regressions.save(tmp_path, routine, spec, "wrong-data", ["wrong-data"], engine="test",
                                 fault_pc="", profile="linux")
    assert new and "# options: --isa rv64gcv --vlen 256 --kind memcpy" in path.read_text()
    out = _repro(str(path))
    assert out["errors"] == [] and out["ret"] is not None  # built with V, run on a V CPU
    proc = run_cli("replay", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["options"] == routine.repro_options


@pytest.mark.e2e
def test_max_len_line_is_the_default_sweep_and_max_len_wins(tmp_path: Path) -> None:
    """copy_user_vector's max-len=80 line: its sweep without --max-len stops at n = 80
    (what keeps `sweep --mutants` quick); --max-len given is taken as it is."""
    for extra, want in (([], 80), (["--max-len", "16"], 16)):
        proc = run_cli("sweep", "riscv/mutants/vector-no-src-advance", *extra, "--jobs", "2", "--json",
                       "--findings", str(tmp_path))
        assert proc.returncode == (0 if want > 16 else 1), proc.stderr  # an escaped mutant is exit 1
        r = json.loads(proc.stdout)["routines"][0]
        assert r["max_len"] == want
        assert r["caught"] == (want > 16)  # one chunk is 16 bytes at VLEN 128: caught from n = 17


# ---- the plugin counts vector instructions and the bytes they move (bench) ----

@pytest.mark.e2e
@pytest.mark.parametrize(("vlen", "chunks"), [(128, 256), (256, 128)])
def test_bench_counts_vector_instructions_and_bytes(vlen: int, chunks: int) -> None:
    proc = run_cli("bench", "riscv/copy_user_vector", "--vlen", str(vlen), "--sizes", "4096", "--reps", "1",
                   "--no-small", "--no-mix", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["routines"]["riscv/copy_user_vector"]["rows"][0]
    # per chunk of VLEN/8 bytes: vsetvli, vle8.v, vse8.v
    assert (row["vinsns"], row["vmem_insns"]) == (3 * chunks, 2 * chunks)
    assert (row["velems"], row["vbytes_loaded"], row["vbytes_stored"]) == (2 * 4096, 4096, 4096)


@pytest.mark.e2e
def test_bench_counts_no_vector_work_in_a_scalar_routine() -> None:
    proc = run_cli("bench", "riscv/copy_user", "--sizes", "4096", "--reps", "1", "--no-small", "--no-mix", "--json")
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["routines"]["riscv/copy_user"]["rows"][0]
    assert row["vinsns"] == row["vmem_insns"] == row["vbytes_loaded"] == 0 and row["bytes_loaded"] == 4096


# ---- fuzz: the driver's executor runs on the routine's CPU (QEMU_CPU) ----

@pytest.mark.e2e
def test_fuzz_finds_the_vector_mutants_bug(tmp_path: Path) -> None:
    """Without V on the fuzz driver's QEMU CPU the first vsetvli would be a SIGILL
    (crash), never the mutant's wrong-data."""
    proc = run_cli(*fuzz_args(tmp_path, "riscv/mutants/vector-no-src-advance", "libfuzzer", 60,
                              "--until", "wrong-data", "--max-len", "64", "--seed", "1", "--json"))
    assert proc.returncode == 1, proc.stderr
    out = json.loads(proc.stdout)
    # the mutant's classes (what else came before --until stopped the campaign), no crash
    assert out["until_met"] and "wrong-data" in out["findings"], out["findings"]
    assert set(out["findings"]) <= {"wrong-data", "over-report"}, out["findings"]


# ---- the kernel's vector user copy: uaccess.S + uaccess_vector.S + the modelled C glue ----

KVEC = [f"{FIX}/kvec_uaccess.S", "--symbol", "__asm_copy_to_user", "--with", f"{FIX}/kvec_uaccess_vector.S",
        "--isa", "rv64gcv", "-D", "CONFIG_RISCV_ISA_V"]


def _vector_counts(*extra: str) -> tuple[int, int]:
    """(executions of the vector copy's vle8.v, of the scalar copy's byte load) in a cov
    sweep of the fixture pair."""
    proc = run_cli("cov", *KVEC, *extra, "--max-len", "24", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["listing"]
    vle = [r["count"] for r in rows if r["insn"].startswith("vle8.v")]
    lb = [r["count"] for r in rows if r["insn"].startswith("lb ") and "fallback_scalar" in r["where"]]
    return sum(vle), sum(lb)


@pytest.mark.e2e
def test_kernel_vector_usercopy_sweeps_the_vector_path(tmp_path: Path) -> None:
    """Above the threshold __asm_copy_to_user tail-calls enter_vector_usercopy (the
    compat model), which runs the vector copy and then the scalar one for the rest."""
    threshold = ["--alternative", "-D", "CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=16"]
    vle, lb = _vector_counts(*threshold)
    assert vle > 0 and lb > 0
    rc, data, err = _check_kvec(tmp_path, *threshold)
    assert rc == 0, err
    r = data["routines"][0]
    assert r["findings"] == {} and r["audit"]["problems"] == []


@pytest.mark.e2e
def test_kernel_vector_usercopy_not_run_without_the_alternative_or_below_the_threshold() -> None:
    assert _vector_counts("-D", "CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=16")[0] == 0  # `j fallback_scalar_usercopy`
    assert _vector_counts("--alternative")[0] == 0  # the Kconfig default threshold, 768 > 24


@pytest.mark.e2e
def test_kernel_vector_usercopy_store_fixup_defect_is_found(tmp_path: Path) -> None:
    """The fixture's switch: the store fixup does not add the chunk back, so the glue
    skips bytes: the test above can fail."""
    rc, data, err = _check_kvec(tmp_path, "--alternative", "-D", "CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=16",
                                "-D", "CF_FIXTURE_NO_UNDO")
    assert rc == 1, err
    assert "over-report" in data["routines"][0]["findings"]


SCALAR_SHORT = ["--alternative", "-D", "CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=16", "-D", "CF_FIXTURE_SCALAR_SHORT"]


@pytest.mark.e2e
def test_every_fault_of_a_case_is_shown_in_order(tmp_path: Path) -> None:
    """Issue 25, point 6: above the threshold the vector copy faults (its fixup is right),
    then the scalar copy for the rest faults and its fixup makes the wrong return. The
    finding's pc is the first fault's; its faults are listed in order with the one the
    call returned through, in check's report and in repro's."""
    proc = run_cli("check", *KVEC, *SCALAR_SHORT, "--min-len", "20", "--max-len", "24", "--no-audit", "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    (finding,) = json.loads(proc.stdout)["routines"][0]["unique_findings"]
    assert finding["class"] == "over-report" and finding["pc"].startswith("__asm_vector_usercopy+")
    assert [(f["number"], f["pc"].split("+")[0], f["returned_through"]) for f in finding["faults"]] == [
        (1, "__asm_vector_usercopy", False), (2, "fallback_scalar_usercopy_sum_enabled", True)]
    text = run_cli("check", *KVEC, *SCALAR_SHORT, "--min-len", "20", "--max-len", "24", "--no-audit",
                   "--findings", str(tmp_path)).stdout
    assert "the reproducer's faults in order: 1. __asm_vector_usercopy+" in text
    assert "(the return came through it)" in text

    spec = f"{FIX}/kvec_uaccess.S:__asm_copy_to_user:n=24,src_off=0,dst_off=4080,dst_fault=16"
    options = [*KVEC[3:], *SCALAR_SHORT, "--kind", "copy"]  # as check prints them: no file, no symbol
    report = json.loads(run_cli("repro", spec, *options, "--json").stdout)
    fault = report["fault"]
    assert fault["count"] == 2 and fault["returned_through"] == 2
    assert [t["pc_symbol"].split("+")[0] for t in fault["trail"]] == [
        "__asm_vector_usercopy", "fallback_scalar_usercopy_sum_enabled"]
    assert all(t["address_relative"] == "dst+16" and t["fixup"] for t in fault["trail"])
    text = run_cli("repro", spec, *options).stdout
    assert "2. pc fallback_scalar_usercopy_sum_enabled+0xa, address dst+16" in text
    assert "← the return came through this fixup" in text
    assert "the fault whose fixup made the return (Capstone):" in text


@pytest.mark.e2e
def test_a_campaign_finding_and_its_replay_list_every_fault(tmp_path: Path) -> None:
    """The same two-fault case through a campaign's triage (shrunk, keeping its class and
    first fault) and through `replay` of the regression it saved."""
    target = RoutineOptions(FileOptions(symbol=("__asm_copy_to_user",), kind="copy", alternative=True,
                                        with_files=(f"{FIX}/kvec_uaccess_vector.S",),
                                        define=("CONFIG_RISCV_ISA_V", "CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD=16",
                                                "CF_FIXTURE_SCALAR_SHORT")),
                            IsaOptions("rv64gcv"), xlen=64)
    routine = file_routines(ROOT, f"{FIX}/kvec_uaccess.S", target, "linux")[0]
    spec = parse_spec_line(f"{routine.name}:n=24,src_off=0,dst_off=4080,dst_fault=16", routine)
    found = triage.triage(ROOT, routine, "linux", tmp_path, "test", [spec])
    assert found is not None and found.cls == "over-report" and "__asm_vector_usercopy+" in found.fault_pc
    expected = [(1, "__asm_vector_usercopy", False), (2, "fallback_scalar_usercopy_sum_enabled", True)]
    assert [(f["number"], str(f["pc"]).split("+")[0], f["returned_through"]) for f in found.faults] == expected
    (replayed,) = json.loads(run_cli("replay", str(tmp_path), "--json").stdout)
    (unique,) = replayed["unique_findings"]
    assert [(f["number"], f["pc"].split("+")[0], f["returned_through"]) for f in unique["faults"]] == expected


@pytest.mark.e2e
def test_an_indirect_jump_the_audit_does_not_follow_is_said(tmp_path: Path) -> None:
    """The modelled glue ends in a jump through a register the dataflow cannot resolve:
    the report says the audit did not follow it (a count in --json alone was silent in
    the text: a new user's review, issue 25), and that it is copyfuzz's model's, not the
    file's."""
    args = [*KVEC, "--alternative", "--max-len", "8", "--findings", str(tmp_path)]
    proc = run_cli("check", *args)
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())  # as a person reads it, whatever the terminal's width
    assert "the audit did not follow 1 indirect jump (at enter_vector_usercopy+" in text
    assert "code reached only through it is not audited; in copyfuzz's model of the kernel's glue " \
        "(riscv_v_helpers.c), not the file" in text
    report = json.loads(run_cli("check", *args, "--json").stdout)["routines"][0]
    assert report["audit"]["summary"]["indirect"] == 1


@pytest.mark.e2e
def test_a_fault_loop_keeps_its_first_faults_and_its_last() -> None:
    """A fixup that faults again until the limit: the trail holds the first
    FAULT_TRAIL - 1 faults and the last, numbered as the call took them; no return."""
    report = json.loads(run_cli("repro", "riscv/mutants/fixup-loops:n=16,src_off=0,dst_off=4088,dst_fault=8",
                                "--json").stdout)
    fault = report["fault"]
    assert report["classes"] == ["hang"] and fault["returned_through"] is None
    assert [t["number"] for t in fault["trail"]] == [1, 2, 3, 4, fault["count"]] and fault["count"] > 5


def _check_kvec(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any], str]:  # JSON
    proc = run_cli("check", *KVEC, *extra, "--max-len", "32", "--jobs", "2", "--json",
                   "--findings", str(tmp_path))
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def test_a_symbol_only_the_modelled_glue_defines_is_refused(tmp_path: Path) -> None:
    """enter_vector_usercopy is the kernel's C, which copyfuzz models (weak) when the file
    is built with CONFIG_RISCV_ISA_V: asking for it checked copyfuzz's stand-in as the
    file's code (a new user's review, issue 25). Refused in one line (the KVEC tests
    check the file's own routine with the same glue)."""
    base = [f"{FIX}/kvec_uaccess.S", "-D", "CONFIG_RISCV_ISA_V", "--isa", "rv64gcv", "--max-len", "8", "--json",
            "--findings", str(tmp_path)]
    proc = run_cli("check", base[0], "--symbol", "enter_vector_usercopy", *base[1:])
    assert proc.returncode == 2
    assert "enter_vector_usercopy is not defined by the file: only copyfuzz's model" in json.loads(proc.stdout)["error"]
