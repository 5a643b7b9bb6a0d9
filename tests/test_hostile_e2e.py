"""End to end: routines that attack the process they run in (tests/fixtures/hostile/hostile.S).

A routine runs inside the executor with all its rights; these check that whatever it does
to that process, the verdict is still the tool's: forging a DONE record on stdout and
exiting 0, exiting 42, killing or stopping itself, faulting with SIGSEGV ignored or
blocked, writing a forged record into every descriptor (the private channel included) are
`crash` findings with the smallest case that does it, in check, repro and fuzz; junk on
stdout and stderr changes nothing. Needs the cross toolchain, QEMU, clang: a missing
tool FAILS these tests.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, budget, cli_in_process, run_cli
from copyfuzz import build, checkfile, envs, paths, plan
from copyfuzz.spec import format_spec, from_case

pytestmark = pytest.mark.e2e

HOSTILE = "tests/fixtures/hostile/hostile.S"
ROUTINE = f"{HOSTILE}:hostile_copy"
MAX_LEN = 8
AT_N = 5  # the acts below happen only at n == 5 with both buffers 16-byte aligned

# switch -> how the executor ended, as the tool says it
ACTS = {
    "CONFIG_HOSTILE_FORGE_STDOUT": "the executor exited with status 0 during this case",
    "CONFIG_HOSTILE_EXIT": "the executor exited with status 42 during this case",
    "CONFIG_HOSTILE_KILL": "the executor was killed by SIGKILL during this case",
    "CONFIG_HOSTILE_STOP": "the executor was stopped (SIGSTOP or the like; killed it) during this case",
    "CONFIG_HOSTILE_SEGV_IGNORED": "the executor was killed by SIGSEGV during this case",
    "CONFIG_HOSTILE_SEGV_BLOCKED": "the executor was killed by SIGSEGV during this case",
    "CONFIG_HOSTILE_FORGE_ALL_FDS": "the executor broke its channel: a record failed its seal check during this case",
}


@pytest.fixture(scope="module")
def sweep_plan() -> plan.SweepPlan:
    """The check's cases, from the tool's own enumeration (libcfref.so)."""
    return plan.SweepPlan(plan.load(ROOT), "copy", "linux", 64, MAX_LEN)


@pytest.fixture(scope="module")
def acting_cases(sweep_plan: plan.SweepPlan) -> list[str]:
    """Specs of the cases the routine acts in, in sweep order: n == 5, both offsets
    16-byte aligned (the arenas place each buffer at its page offset)."""
    cases = (sweep_plan.case_at(i) for i in range(sweep_plan.count()))
    return [format_spec(from_case(ROUTINE, c)) for c in cases
            if c is not None and c.n == AT_N and c.src_off % 16 == 0 and c.dst_off % 16 == 0]


def check(tmp_path: Path, *defines: str, jobs: int = 2) -> tuple[int, dict[str, Any], str]:
    args = [f"-D{d}" for d in defines]
    proc = run_cli("check", HOSTILE, "--symbol", "hostile_copy", *args, "--max-len", str(MAX_LEN), "--jobs",
                   str(jobs), "--json", "--findings", str(tmp_path / "findings"))
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def repro(spec: str, *defines: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("repro", spec, *[f"-D{d}" for d in defines], "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}


def repro_in_process(spec: str, *defines: str) -> tuple[int, dict[str, Any]]:
    """repro() in this process (conftest.cli_in_process)."""
    status, out = cli_in_process("repro", spec, *[f"-D{d}" for d in defines], "--json")
    return status, json.loads(out) if out.strip() else {}


@pytest.mark.parametrize("act", list(ACTS))
def test_an_act_in_a_few_cases_is_a_crash_at_the_first_of_them(
        tmp_path: Path, act: str, sweep_plan: plan.SweepPlan, acting_cases: list[str]) -> None:
    """The shard dies (or breaks its stream) at each acting case; each is verified alone,
    reported as crash, and the sweep goes on after it: every case of the plan runs."""
    rc, report, err = check(tmp_path, act, f"CONFIG_HOSTILE_AT_N={AT_N}")
    assert rc == 1, err
    (r,) = report["routines"]
    assert r["findings"] == {"crash": len(acting_cases)}, r
    assert r["reproducers"]["crash"] == acting_cases[0]
    assert r["cases"] == sweep_plan.count(), "the sweep went on after each crash"
    assert r["stopped"] is None
    assert r["deaths"][0].startswith(f"{acting_cases[0]}: {ACTS[act]}"), r["deaths"]
    # repro runs it alone: the same verdict, and how the executor ended.
    rc, shown = repro(acting_cases[0], act, f"CONFIG_HOSTILE_AT_N={AT_N}")
    assert rc == 1 and shown["errors"] == ["crash"] and shown["executor_died"] == ACTS[act], shown
    # A case it does not act in is fine (in this process: the acting case above went
    # through a process of its own, as a user runs it).
    rc, shown = repro_in_process(f"{ROUTINE}:n={AT_N},dst_off=1", act, f"CONFIG_HOSTILE_AT_N={AT_N}")
    assert rc == 0 and shown["errors"] == [] and shown["executor_died"] is None, shown


def test_a_forged_done_on_stdout_is_never_clean(tmp_path: Path, acting_cases: list[str]) -> None:
    """The routine that once got a clean row: a forged DONE record on fd 1, then
    exit_group(0), in every call. It is a crash at the very first case; the shards give
    up after MAX_DEATHS cases each, and say so."""
    rc, report, err = check(tmp_path, "CONFIG_HOSTILE_FORGE_STDOUT")
    assert rc == 1, err
    (r,) = report["routines"]
    assert set(r["findings"]) == {"crash"} and r["stopped"] == ["max-crashes"]
    assert r["reproducers"]["crash"] == f"{ROUTINE}:n=0,src_off=0,dst_off=0"
    text = run_cli("check", HOSTILE, "--symbol", "hostile_copy", "-DCONFIG_HOSTILE_FORGE_STDOUT", "--max-len",
                   "2", "--jobs", "1", "--findings", str(tmp_path / "text"))
    assert text.returncode == 1
    assert "clean" not in text.stdout and "kept killing its executor" in text.stdout, text.stdout


def test_junk_on_stdout_and_stderr_changes_nothing(tmp_path: Path) -> None:
    """Record-like junk and text on both streams in every call: the same verdict and
    count as the same copy without it."""
    rc, junk, err = check(tmp_path, "CONFIG_HOSTILE_GARBAGE")
    assert rc == 0, err
    rc_plain, plain, _ = check(tmp_path)
    assert rc_plain == 0
    for key in ("cases", "findings", "notes", "reproducers"):
        assert junk["routines"][0][key] == plain["routines"][0][key], key
    rc, shown = repro(f"{ROUTINE}:n=7,dst_off=3", "CONFIG_HOSTILE_GARBAGE")
    assert rc == 0 and shown["errors"] == [] and shown["executor_died"] is None


def fuzz(tmp_path: Path, engine: str, *defines: str, seconds: float = 3,
         until: str | None = None) -> tuple[int, dict[str, Any]]:
    """A campaign on the hostile routine; with `until`, one that ends at its first finding
    of that class (--time is then only the limit for a routine that never shows it)."""
    proc = run_cli("fuzz", "--file", HOSTILE, "--symbol", "hostile_copy", *[f"-D{d}" for d in defines],
                   "--engine", engine, "--time", budget(seconds), "--json", "--corpus", str(tmp_path / "corpus"),
                   "--findings", str(tmp_path / "findings"), "--regressions", str(tmp_path / "regressions"),
                   *(["--until", until] if until else []))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


@pytest.mark.parametrize("engine", ["libfuzzer", "hypothesis"])
def test_fuzz_finds_a_routine_that_ends_its_executor(tmp_path: Path, engine: str) -> None:
    # The routine ends its executor in every call: the first input is the finding, and the
    # campaign ends there (0.8 s) instead of running out its 3 s.
    rc, report = fuzz(tmp_path, engine, "CONFIG_HOSTILE_FORGE_STDOUT", until="crash")
    assert rc == 1 and "crash" in report["findings"], report


def test_fuzz_driver_ignores_junk_on_stdout(tmp_path: Path) -> None:
    """The driver reads results on its private channel: junk the routine writes to fd 1
    (where results used to travel) is no finding."""
    # Junk in every call, so each execution is a try: 1 s made 11,000 (unpinned), a hundred
    # times the 100 asked for.
    rc, report = fuzz(tmp_path, "libfuzzer", "CONFIG_HOSTILE_GARBAGE", seconds=1)
    assert rc == 0 and report["findings"] == {} and report["executions"] > 100, report


def test_a_routine_that_kills_its_executor_leaves_no_core_file(tmp_path: Path) -> None:
    """Core dumps on (as many developers have them): the executor turns them off for
    itself, or a routine dying of SIGSEGV in every case would leave a core file each."""
    spec = f"{ROOT / HOSTILE}:hostile_copy:n=3"
    command = (f"ulimit -c unlimited && exec {shlex.quote(sys.executable)} -m copyfuzz repro "
               f"{shlex.quote(spec)} -DCONFIG_HOSTILE_SEGV_IGNORED")
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "tool")}, timeout=600)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "killed by SIGSEGV" in proc.stdout
    assert [p.name for p in tmp_path.iterdir()] == []


def test_fuzz_driver_takes_no_result_forged_in_its_shared_block(tmp_path: Path) -> None:
    """The fuzz driver's block (COPYFUZZ_CHANNEL=shm, the default) is in the routine's
    reach: this one posts a forged clean result for the running case there, turn word
    and wake-up included, and waits for the driver to read it. The driver reads a record
    without its channel's seal: a crash, never the routine's verdict. Re-run alone
    through `serve` (pipes: no block to forge in) the routine only copies, after its load
    of the executor's pointer, which the plugin reports as load-out-of-bounds."""
    # The routine forges in every call (each finding is the same one, a 3 s campaign wrote
    # one driver file): the campaign ends at its first load-out-of-bounds. A forged result
    # taken for the routine's verdict would be no finding: the campaign runs out its --time
    # and the assertions fail.
    rc, report = fuzz(tmp_path, "libfuzzer", "CONFIG_HOSTILE_FORGE_CHANNEL", until="load-out-of-bounds")
    found = [p.read_text() for p in (tmp_path / "findings").glob("driver-*.finding")]
    assert rc == 1 and found and list(report["findings"]) == ["load-out-of-bounds"], report
    for text in found:
        assert "classes=crash\n" in text, text
        assert "why=the executor's channel carried a record it did not seal (crash)\n" in text, text


def test_a_temporary_the_routine_never_set_points_nowhere(tmp_path: Path) -> None:
    """The trampoline leaves no harness value in the temporaries (t1 held the call
    record): a routine loading through t1 unset faults at its poisoned address, as a
    kernel would oops, instead of reading the harness's memory and coming out clean."""
    src = ROOT / "tests/fixtures/hostile/unset_temp.S"
    proc = run_cli("check", str(src), "--symbol", "unset_copy:copy", "--max-len", "4", "--no-audit", "--json",
                   "--findings", str(tmp_path / "findings"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = json.loads(proc.stdout)["routines"][0]
    assert list(row["findings"]) == ["unhandled-fault"], row
    rep = run_cli("repro", row["reproducers"]["unhandled-fault"], "--json")
    assert rep.returncode == 1 and json.loads(rep.stdout)["fault"]["address"] == 0x7BAD00000606, rep.stdout


def test_the_driver_judges_what_the_buffers_held_from_the_case_not_the_guest(tmp_path: Path) -> None:
    """A routine that knows the executor flips the byte below dst and the executor's copy
    of it alike: the executor's oracle sees every canary as it was. Without the plugin
    (a run on RISC-V hardware has none, so no memory audit) only the fuzz driver's oracle
    sees the store, since it computes what the window held from the case (place.h): a
    finding of its own, the two oracles disagreeing. Were the driver to take the window's
    old bytes from the executor, the campaign would be clean."""
    routine = checkfile.external_routine(
        ROOT, ROOT / HOSTILE, "hostile_copy", "copy", xlen=64, profile="linux",
        build=checkfile.FileBuild(defines=("CONFIG_HOSTILE_FORGE_IMAGE",), arch="riscv"))
    build.build_routines(ROOT, [routine])
    assert routine.external_elf
    findings, corpus = tmp_path / "findings", tmp_path / "corpus"
    findings.mkdir()
    corpus.mkdir()
    env = envs.driver_env(executor=ROOT / routine.external_elf, qemu=build.qemu_command(64, "riscv")[0],
                          plugin="", kind="copy", profile="linux", findings=findings)
    proc = subprocess.run([str(paths.libfuzzer_target(ROOT)), "-runs=2000", "-seed=1",
                           f"-artifact_prefix={tmp_path}/", str(corpus)],
                          env=env, capture_output=True, text=True, timeout=300)
    found = [p.read_text() for p in findings.glob("driver-*.finding")]
    assert proc.returncode != 0 and len(found) == 1, proc.stderr[-3000:]
    assert "why=the native oracle and the executor's disagree\n" in found[0], found[0]
    assert "classes=store-out-of-bounds\n" in found[0], found[0]
