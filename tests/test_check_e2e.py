"""End to end: `copyfuzz check` on our kernel-style fixtures, `audit`, and RV32.

The fixtures (tests/fixtures/kernel/, our own code in the kernel's style) assemble
unmodified against the compat include tree; their CONFIG_FIXTURE_* switches seed
the bugs. Needs the cross toolchain and QEMU: a missing tool FAILS these tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from conftest import ROOT, run_cli

if TYPE_CHECKING:
    from copyfuzz.routines import Routine

pytestmark = pytest.mark.e2e

KERNEL = ROOT / "tests" / "fixtures" / "kernel"
OLD = str(KERNEL / "uaccess_old.S")
NEW = str(KERNEL / "uaccess_new.S")
MAX_LEN = "80"  # past the word loops' thresholds and an unrolled block on either XLEN
# Where a test asks only that a seeded bug's classes show: each one's smallest case is at
# most n = 16 (the same reproducers as at 80).
BUGGY_MAX_LEN = "24"
# The clean sweeps' bounds, per file and XLEN. uaccess_new.S's last threshold is its block
# loop's back edge, two blocks of 4 * SZREG from an aligned dst: 64 bytes at RV64, 32 at
# RV32. There `copyfuzz cov --sweep` runs every instruction, branch direction and fault
# path of the copy and of __clear_user that 80 and 48 bytes run (at 48 and 24 the back
# edge is missed), in 65 % and 45 % of their cases. uaccess_old.S is byte loops with no
# threshold (all of it runs from n = 4): 24 bytes, where its seeded bugs show, in 13 % and
# 27 % of the cases of 80 and 48.
CLEAN_MAX_LEN = {
    "uaccess_new.S": {"64": "64", "32": "32"},
    "uaccess_old.S": {"64": BUGGY_MAX_LEN, "32": BUGGY_MAX_LEN},
}


def check(tmp_path: Path, path: str, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = run_cli("check", path, "--json", "--max-len", MAX_LEN, "--findings", str(tmp_path), *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def errors_of(report: dict[str, Any]) -> dict[str, set[str]]:
    return {r["name"].rsplit(":", 1)[1]: set(r["findings"]) for r in report["routines"]}


@pytest.mark.parametrize("xlen", ["64", "32"])
@pytest.mark.parametrize("path, symbols", [
    (OLD, ["__asm_copy_to_user", "__asm_copy_from_user", "__clear_user"]),
    (NEW, ["__asm_copy_to_user", "__asm_copy_from_user", "__clear_user"]),
])
def test_clean_fixtures_are_clean_under_exact(tmp_path: Path, path: str, symbols: list[str], xlen: str) -> None:
    args = [a for s in symbols for a in ("--symbol", s)]
    rc, report, err = check(tmp_path, path, *args, "--profile", "exact", "--xlen", xlen,
                            "--max-len", CLEAN_MAX_LEN[Path(path).name][xlen])
    assert rc == 0, (err, report)
    assert [r["xlen"] for r in report["routines"]] == [int(xlen)] * len(symbols)
    for r in report["routines"]:
        assert r["findings"] == {} and r["audit"]["problems"] == [], r
        assert r["cases"] > 0
    # clear_user was guessed to be a clear routine, the others copies
    assert [r["kind"] for r in report["routines"]] == ["copy", "copy", "clear"]
    # the two copy names are one entry: swept once, for both
    assert [r["same_code_as"] for r in report["routines"]] == [None, report["routines"][0]["name"], None]


def test_one_sweep_for_two_names_of_one_entry_and_never_for_two_entries(tmp_path: Path) -> None:
    """__asm_copy_from_user is an alias of __asm_copy_to_user (one address): its row is
    that sweep's, with its own reproducers on disk. The body's name, a copy routine of the
    same build at another address, is swept on its own."""
    body = "__asm_copy_to_user_sum_enabled"
    rc, report, err = check(tmp_path, str(ROOT / "tests/fixtures/outside/shared_body.S"), "--max-len", "16",
                            "--symbol", "__asm_copy_to_user:copy", "--symbol", f"{body}:copy",
                            "--symbol", "__asm_copy_from_user:copy", "-D", "CONFIG_FIXTURE_MISSING_ENTRY")
    assert rc == 1, err
    entry, inner, alias = report["routines"]
    assert (entry["same_code_as"], inner["same_code_as"], alias["same_code_as"]) == (None, None, entry["name"])
    assert alias["cases"] == entry["cases"] and alias["findings"] == entry["findings"] != {}
    assert alias["reproducers"]["unhandled-fault"].startswith(alias["name"] + ":")
    (log,) = [p for p in tmp_path.iterdir() if p.name.endswith("__asm_copy_from_user.jsonl")]
    assert [json.loads(line)["spec"].startswith(alias["name"] + ":") for line in log.read_text().splitlines()] \
        == [True] * len(alias["reproducers"])


@pytest.mark.parametrize("path, define, symbol, expected", [
    (OLD, "CONFIG_FIXTURE_SUM_BUG", "__asm_copy_to_user", {"uaccess-left-enabled"}),
    (OLD, "CONFIG_FIXTURE_FULL_SIZE", "__asm_copy_to_user", {"no-progress", "store-beyond-reported"}),
    (NEW, "CONFIG_FIXTURE_MISSING_ENTRY", "__asm_copy_to_user", {"unhandled-fault"}),
])
def test_buggy_fixtures_are_caught(tmp_path: Path, path: str, define: str, symbol: str,
                                   expected: set[str]) -> None:
    rc, report, err = check(tmp_path, path, "--symbol", symbol, "-D", define, "--max-len", BUGGY_MAX_LEN)
    assert rc == 1, err
    assert expected <= errors_of(report)[symbol], report


@pytest.mark.parametrize("xlen, szreg", [("64", 8), ("32", 4)])
def test_no_retry_fixup_loses_progress_in_the_first_block(tmp_path: Path, xlen: str, szreg: int) -> None:
    """The kernel's fixup shape since 6.5 (docs/kernel-findings.md): a word fault returns
    end - a0 at the last loop boundary. Nothing is reported copied only when dst was
    already aligned (no head bytes moved a0) and the fault comes before the first
    block's stores: the smallest reproducer shows exactly that."""
    rc, report, err = check(tmp_path, NEW, "--symbol", "__asm_copy_to_user", "-D", "CONFIG_FIXTURE_NO_RETRY",
                            "--xlen", xlen, "--max-len", BUGGY_MAX_LEN)
    assert rc == 1, err
    (routine,) = report["routines"]
    assert {"no-progress", "store-beyond-reported"} <= set(routine["findings"]), routine
    case = dict(kv.split("=") for kv in routine["reproducers"]["no-progress"].rsplit(":", 1)[1].split(","))
    assert int(case["dst_off"]) % szreg == 0, case
    assert 0 < int(case.get("src_fault") or case.get("dst_fault") or "0") < 4 * szreg, case
    # the same file without the switch retries bytewise and is exact at both widths:
    # test_clean_fixtures_are_clean_under_exact


def test_missing_entry_is_flagged_by_the_audit_at_the_pc_the_sweep_faults_on(tmp_path: Path) -> None:
    args = ["--symbol", "__asm_copy_to_user", "-D", "CONFIG_FIXTURE_MISSING_ENTRY"]
    audit = run_cli("audit", NEW, *args, "--json")
    assert audit.returncode == 1, audit.stderr
    problems = json.loads(audit.stdout)["routines"][0]["problems"]
    assert len(problems) == 1 and "has no table entry" in problems[0]["problem"], problems
    rc, report, _ = check(tmp_path, NEW, *args, "--max-len", BUGGY_MAX_LEN)
    spec = report["routines"][0]["reproducers"]["unhandled-fault"]
    repro = run_cli("repro", spec, "-D", "CONFIG_FIXTURE_MISSING_ENTRY", "--json")
    assert repro.returncode == 1, repro.stderr
    assert int(problems[0]["address"], 16) == json.loads(repro.stdout)["fault"]["pc"]


def test_rv32_only_shift_bug(tmp_path: Path) -> None:
    args = ["--symbol", "__asm_copy_to_user", "-D", "CONFIG_FIXTURE_RV32_SHIFT", "--profile", "exact"]
    # the RV32 bug shows from n = 8 (a misaligned copy's first word): 40 bytes is a block past
    # it, and the same bound shows RV64 clean (16 s at 80 bytes, most of it RV64's)
    rc64, report64, err64 = check(tmp_path / "64", NEW, *args, "--xlen", "64", "--max-len", "40")
    assert rc64 == 0, (err64, report64)
    rc32, report32, err32 = check(tmp_path / "32", NEW, *args, "--xlen", "32", "--max-len", "40")
    assert rc32 == 1, err32
    assert "wrong-data" in errors_of(report32)["__asm_copy_to_user"]


def test_bundled_routines_audit_clean_and_mutant_flagged() -> None:
    for name in ("riscv/copy_user", "riscv/copy_user_bytewise", "riscv/clear_user", "riscv/memcpy"):
        proc = run_cli("audit", name)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "audit: no problems" in proc.stdout
    proc = run_cli("audit", "riscv/mutants/store-no-extable", "--json")
    assert proc.returncode == 1
    a = json.loads(proc.stdout)["routines"][0]
    assert a["summary"]["uncovered"] == 1 and a["extable"] == "rel"
    listing = {row["address"]: row for row in a["listing"]}
    assert listing[a["problems"][0]["address"]]["insn"].startswith("sb ")


@pytest.mark.long  # 17 s: every RV32 executor swept; test_rv32_only_shift_bug and the fixtures' RV32 runs stay
def test_bundled_routines_on_rv32(tmp_path: Path) -> None:
    # 64 bytes: two 8 x 4-byte blocks of the word loop when dst is aligned, every head
    # and tail; each mutant is caught there (a quarter of the cases of 128 bytes)
    proc = run_cli("sweep", "--xlen", "32", "--mutants", "--max-len", "64", "--json",
                   "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    report = json.loads(proc.stdout)
    for r in report["routines"]:
        assert r["xlen"] == 32
        if r.get("mutant"):
            assert r["caught"], r
        else:
            assert r["findings"] == {} and r["audit"]["problems"] == [], r


# ---- bad input: clear messages, exit 2 ----

def test_assembler_error_shows_the_assembler_and_the_compat_tree(tmp_path: Path) -> None:
    bad = tmp_path / "broken.S"
    bad.write_text("#include <asm/asm.h>\n\t.text\n\t.globl f\nf:\n\tnot_an_insn a0, a1\n\tret\n")
    proc = run_cli("check", str(bad), "--symbol", "f", "--arch", "riscv")  # too few instructions to say
    assert proc.returncode == 2
    assert "broken.S:5: Error" in proc.stderr and "not_an_insn" in proc.stderr
    assert "harness/compat/riscv/include" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_config_value_nothing_defines_is_named_in_the_error(tmp_path: Path) -> None:
    """An ARM file using a CONFIG_* as an immediate (a kernel's cache or prefetch size):
    gas says so last, after its warnings; the one line names it and the -D that gives it."""
    lib = tmp_path / "arch" / "arm" / "lib"
    lib.mkdir(parents=True)
    src = lib / "sized_copy.S"
    src.write_text("#include <linux/linkage.h>\n\t.text\nENTRY(cf_sized_copy)\n\tmov r3, #CONFIG_CF_CHUNK_SIZE\n"
                   "\tmov r0, #0\n\tbx lr\nENDPROC(cf_sized_copy)\n")
    proc = run_cli("check", str(src), "--symbol", "cf_sized_copy:copy", "--max-len", "4")
    assert proc.returncode == 2, proc.stderr
    first = proc.stderr.splitlines()[0]
    assert "CONFIG_CF_CHUNK_SIZE is used as a number but not defined: give -D CONFIG_CF_CHUNK_SIZE=VALUE" in first
    proc = run_cli("check", str(src), "--symbol", "cf_sized_copy:copy", "--max-len", "4",
                   "-D", "CONFIG_CF_CHUNK_SIZE=32")
    assert "CONFIG_CF_CHUNK_SIZE" not in proc.stderr and "does not build" not in proc.stderr, proc.stderr


def test_missing_symbol_and_missing_table(tmp_path: Path) -> None:
    src = tmp_path / "notable.S"
    src.write_text("\t.text\n\t.globl f\nf:\n\tli a0, 0\n\tret\n")
    proc = run_cli("check", str(src), "--symbol", "nope", "--arch", "riscv")  # before "no kind in the name"
    assert proc.returncode == 2 and "'nope' is not defined" in proc.stderr, proc.stderr
    proc = run_cli("check", str(src), "--symbol", "f:copy", "--arch", "riscv")
    assert proc.returncode == 2 and "no exception table" in proc.stderr, proc.stderr
    proc = run_cli("check", str(tmp_path / "absent.S"), "--symbol", "f")
    assert proc.returncode == 2 and "no such file" in proc.stderr
    proc = run_cli("check", str(src), "--symbol", "f", "-D", "9bad", "--arch", "riscv")
    assert proc.returncode == 2 and "NAME, NAME=VALUE or NAME(ARGS)=VALUE" in proc.stderr


def test_compat_tree_builds_every_fixture_switch_on_both_xlens() -> None:
    """Every CONFIG switch of every fixture assembles for RV64 and RV32."""
    for path in (OLD, NEW):
        switches = sorted({line.split()[1] for line in Path(path).read_text().splitlines()
                           if line.startswith(("#ifdef CONFIG_FIXTURE", "#ifndef CONFIG_FIXTURE"))})
        assert switches, f"{path} seeds no bugs"
        for define in [None, *switches]:
            for march, mabi in (("rv64gc", "lp64d"), ("rv32gc", "ilp32d")):
                cmd = ["riscv64-linux-gnu-gcc", f"-march={march}", f"-mabi={mabi}",
                       f"-I{ROOT / 'harness/compat/riscv/include'}", "-c", path, "-o", "/dev/null"]
                if define:
                    cmd.insert(1, f"-D{define}")
                proc = subprocess.run(cmd, capture_output=True, text=True)
                assert proc.returncode == 0, (cmd, proc.stderr)


def test_watchdog_turns_an_endless_loop_into_a_hang_and_the_run_goes_on(tmp_path: Path) -> None:
    """No fault involved: only the timer watchdog can stop n == 5. The sweep reports
    `hang` with the smallest such case, and after --max-hangs it stops the routine
    rather than spending the whole run on it; cases before it were all checked."""
    rc, report, err = check(tmp_path, str(ROOT / "tests/fixtures/watchdog/spin_copy.S"), "--symbol", "spin_copy",
                            "--max-len", "8", "--timeout-ms", "50", "--jobs", "1", "--profile", "exact")
    assert rc == 1, err
    (r,) = report["routines"]
    assert set(r["findings"]) == {"hang"}, r
    assert r["reproducers"]["hang"].endswith(":n=5,src_off=0,dst_off=0"), r
    assert r["stopped"] == ["max-hangs"] and r["findings"]["hang"] == 16
    assert r["cases"] > 16, "the cases before n=5 ran and were clean"


def test_alternative_path_builds_and_is_clean(tmp_path: Path) -> None:
    rc, report, err = check(tmp_path, NEW, "--symbol", "__asm_copy_to_user", "--alternative", "--max-len", "40")
    assert rc == 0, (err, report)


def _file_routine(*defines: str) -> "Routine":
    from copyfuzz.options import FileOptions, RoutineOptions
    from copyfuzz.selection import file_routines
    target = RoutineOptions(FileOptions(symbol=("__asm_copy_to_user",), define=defines), xlen=64)
    return file_routines(ROOT, OLD, target, "linux")[0]


def test_regressions_keep_their_build_options_for_repro_and_replay(tmp_path: Path) -> None:
    """A campaign on `--file F.S -D X` saves `# options: -DX ...`; repro and replay rebuild
    the file with them, so the saved case reproduces without retyping the flags."""
    from copyfuzz import regressions as regs
    from copyfuzz.spec import parse_fields

    regressions = tmp_path / "regressions"
    fields = "n=2,src_off=0,dst_off=4095,dst_fault=1"
    saved = {}
    for label, routine in (("bug", _file_routine("CONFIG_FIXTURE_FULL_SIZE")), ("plain", _file_routine())):
        spec = parse_fields(routine.name, routine.kind, fields)
        path, new = regs.save(regressions, routine, spec, "no-progress", ["no-progress"], engine="libfuzzer",
                              fault_pc="0x12baa (x+0x12)", profile="linux")
        assert new, f"{label}: the other build's regression was taken for this one's"
        again, new = regs.save(regressions, routine, spec, "no-progress", ["no-progress"], engine="libfuzzer",
                               fault_pc="0x12baa (x+0x12)", profile="linux")
        assert (again, new) == (path, False)
        saved[label] = path
    assert "# options: -DCONFIG_FIXTURE_FULL_SIZE --kind copy\n" in saved["bug"].read_text()
    assert "# options: --kind copy\n" in saved["plain"].read_text()

    proc = run_cli("repro", str(saved["bug"]), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no-progress" in json.loads(proc.stdout)["errors"]
    proc = run_cli("repro", str(saved["plain"]), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # Flags on the command line replace the saved ones.
    proc = run_cli("repro", str(saved["bug"]), "--json", "-D", "CONFIG_FIXTURE_SUM_BUG")
    assert "no-progress" not in json.loads(proc.stdout)["errors"], proc.stdout

    proc = run_cli("replay", str(regressions), "--json")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    by_options = {" ".join(r["options"]): r for r in json.loads(proc.stdout)}
    assert set(by_options) == {"-DCONFIG_FIXTURE_FULL_SIZE --kind copy", "--kind copy"}
    assert by_options["-DCONFIG_FIXTURE_FULL_SIZE --kind copy"]["failing_cases"] == 1
    assert by_options["--kind copy"]["failing_cases"] == 0

    saved["bug"].write_text(saved["bug"].read_text().replace("--kind copy", "--kind copy --frobnicate"))
    proc = run_cli("replay", str(regressions))
    assert proc.returncode == 2 and "--frobnicate" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
