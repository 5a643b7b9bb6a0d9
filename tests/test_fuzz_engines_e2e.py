"""End to end: `copyfuzz fuzz --engine afl` and `--engine hypothesis`. Needs afl-fuzz,
clang and QEMU (not afl-tmin: the shared triage shrinks the case); a missing tool FAILS
these tests (about 70 s in all).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, budget, run_cli
from copyfuzz.engines import afl

pytestmark = pytest.mark.e2e

MUTANT = "riscv/mutants/wrong-shift"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all", "fuzz-targets"], cwd=ROOT, check=True)


def campaign(tmp: Path, routine: str, engine: str, seconds: int, *more: str,
             until: bool = True) -> subprocess.CompletedProcess[str]:
    """A campaign of `seconds` (scaled by the test budget); on a mutant it ends at its
    class (--until), so the time is only a cap."""
    until_args = ["--until", "wrong-data"] if routine == MUTANT and until else []
    return run_cli("fuzz", routine, "--engine", engine, "--time", budget(seconds), "--seed", "1", *until_args,
                   "--corpus", str(tmp / "corpus"), "--findings", str(tmp / "findings"),
                   "--regressions", str(tmp / "regressions"), *more, timeout=300)


def check_regression(tmp: Path, engine: str) -> None:
    specs = sorted((tmp / "regressions").glob("riscv__mutants__wrong-shift--*.spec"))
    assert specs, "no regression saved"
    text = specs[0].read_text()
    assert f"# found-by: {engine}" in text and "# class: wrong-data" in text, text
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(lines) == 1 and lines[0].startswith(f"{MUTANT}:n="), text
    repro = run_cli("repro", str(specs[0]))
    assert repro.returncode == 1 and "wrong-data" in repro.stdout, repro.stdout + repro.stderr


def test_afl_finds_the_mutant_and_saves_a_regression(tmp_path: Path) -> None:
    assert shutil.which("afl-fuzz"), "afl-fuzz is missing"
    # no --until here: both instances must run long enough to be counted
    # afl-fuzz starts (dry run, calibration) within the time: the first wrong-data came 1.2
    # to 1.8 s after the start with two CPU hogs beside the two afl-fuzz (2.3 to 2.9 s when
    # afl-fuzz slept 2 s as it started, and the time was 6 s), so 4 s leave both time to
    # fuzz. The triage after it shrinks the first crash until the deadline and saves it (5 s
    # by default): 3 s, as afl-fuzz may take 2 s to stop, and a crash the deadline meets
    # before its first re-run is deferred, not saved.
    proc = campaign(tmp_path, MUTANT, "afl", 4, "--jobs", "2", "--triage-time", "3", "--json", until=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert "wrong-data" in rep["findings"]
    check_regression(tmp_path, "afl")
    assert list((tmp_path / "findings/afl").glob("*/crashes/id:*"))
    # --jobs 2: one -M main and one -S sec1 sharing the output directory, both counted
    for name in ("main", "sec1"):
        assert (tmp_path / f"findings/afl/{name}/fuzzer_stats").is_file(), name
    assert rep["executions"] > 1000 and rep["coverage"]["edges_covered"] > 0
    assert any((tmp_path / "corpus").iterdir()), "AFL's queue was not copied into the corpus"
    # The suite's COPYFUZZ_PIN=0 (conftest): afl-fuzz left to the scheduler, both instances.
    for name in ("main", "sec1"):
        assert afl.BOUND not in (tmp_path / f"findings/.logs/afl-{name}.log").read_bytes(), name


def test_afl_binds_itself_to_a_core_by_default(tmp_path: Path) -> None:
    proc = run_cli("fuzz", "riscv/copy_user", "--engine", "afl", "--time", "2", "--json", "--corpus",
                   str(tmp_path / "corpus"), "--findings", str(tmp_path / "findings"), timeout=300,
                   env={"COPYFUZZ_PIN": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    log = (tmp_path / "findings/.logs/afl-default.log").read_bytes()
    assert afl.BOUND in log or afl.NO_FREE_CORE in log, log[-2000:]


def test_afl_starts_from_our_seeds_with_relative_directories(tmp_path: Path) -> None:
    """An empty corpus: afl-fuzz starts from the run's own seeds, named to it by an absolute
    path (it runs in the run's logs/; a relative one once stopped docs/ci.md's command)."""
    # 3 s (it was 5, when afl-fuzz slept 2 s as it started)
    proc = run_cli("fuzz", "riscv/copy_user", "--engine", "afl", "--time", "3", "--json", "--corpus", "corpus",
                   "--findings", "findings", "--regressions", "regressions", cwd=tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert json.loads(proc.stdout)["executions"] > 0
    log = (tmp_path / "findings/.logs/afl-default.log").read_bytes()
    assert b"Mistyped AFL environment variable" not in log, log[-2000:]  # each costs 2 s of sleep


def test_a_campaign_that_ran_no_input_gives_no_verdict(tmp_path: Path) -> None:
    # An afl-fuzz that starts and never runs an input (as a loaded machine once left the
    # real one for a short campaign): the campaign must not say "findings: none".
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "afl-fuzz"
    fake.write_text("#!/bin/sh\ntrap 'exit 0' INT\nwhile :; do sleep 0.1; done\n")
    fake.chmod(0o755)
    path = f"{bin_dir}:{os.environ['PATH']}"
    for json_out in ([], ["--json"]):
        proc = run_cli("fuzz", "riscv/copy_user", "--engine", "afl", "--time", "1", *json_out, "--corpus",
                       str(tmp_path / "corpus"), "--findings", str(tmp_path / "findings"), timeout=300,
                       env={"PATH": path})
        assert proc.returncode == 2, proc.stdout + proc.stderr[-3000:]
        line = "no verdict: afl ran no input in 1 s"
        if json_out:
            assert json.loads(proc.stdout)["error"].startswith(line), proc.stdout
        else:
            said = [x for x in proc.stderr.splitlines() if x.startswith("copyfuzz:")]  # after "fuzzing ..."
            assert len(said) == 1 and said[0].startswith(f"copyfuzz: {line}"), proc.stderr
            assert "findings" not in proc.stdout, proc.stdout


def test_a_dry_run_counts_the_inputs_it_ran(tmp_path: Path) -> None:
    # A resumed afl-fuzz re-runs its queue, then sets execs_done back to the old session's:
    # stopped soon after, its stats say it ran nothing new. Its log says what it ran.
    log = tmp_path / "afl.log"
    entry = "\x1b[1;94m[*] \x1b[0mAttempting dry run with 'id:00000{},time:0,execs:0,orig:seed'...\n"
    log.write_text("".join(entry.format(i) for i in range(3)))
    assert afl.dry_run_inputs(log) == 2  # the third was begun, not seen to end
    log.write_text(log.read_text() + "\x1b[1;92m[+] \x1b[0mAll test cases processed.\n")
    assert afl.dry_run_inputs(log) == 3
    assert afl.dry_run_inputs(tmp_path / "missing.log") == 0


def test_afl_fuzz_gets_only_the_variables_it_knows(tmp_path: Path) -> None:
    # Of a variable it does not know, afl-fuzz warns and sleeps 2 s (AFL++ 4.04c): its
    # binary holds the names it knows; a file without that list is given the variable.
    older, newer, script = tmp_path / "older", tmp_path / "newer", tmp_path / "script"
    older.write_bytes(b"\x7fELF\0AFL_SKIP_CPUFREQ\0AFL_SKIP_CRASHES\0")
    newer.write_bytes(b"\x7fELF\0AFL_SKIP_CPUFREQ\0AFL_IGNORE_SEED_PROBLEMS\0")
    script.write_text("#!/bin/sh\nexec /usr/bin/afl-fuzz \"$@\"\n")
    assert [afl._knows(str(f), "AFL_IGNORE_SEED_PROBLEMS") for f in (older, newer, script)] == [False, True, True]
    assert afl._knows(None, "AFL_IGNORE_SEED_PROBLEMS")
    env = afl.afl_env({"PATH": os.environ["PATH"]})
    assert env["AFL_SKIP_CRASHES"] == "1"
    real = shutil.which("afl-fuzz")
    assert real and ("AFL_IGNORE_SEED_PROBLEMS" in env) == (b"AFL_IGNORE_SEED_PROBLEMS\0" in Path(real).read_bytes())


def test_hypothesis_finds_the_mutant_and_shrinks_it(tmp_path: Path) -> None:
    proc = campaign(tmp_path, MUTANT, "hypothesis", 120)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    check_regression(tmp_path, "hypothesis")
    spec = next((tmp_path / "regressions").glob("*.spec")).read_text().splitlines()[-1]
    n = int(spec.split("n=")[1].split(",")[0])
    assert n <= 32, spec  # shrunk: the sweep's smallest is n=16
    # the failure as Hypothesis showed it is on disk too, and repro takes it as it is...
    failure = tmp_path / "findings/hypothesis-wrong-data.failure"
    text = failure.read_text()
    assert "# Falsifying example: search(case=Case(" in text, text
    repro = run_cli("repro", str(failure))
    assert repro.returncode == 1 and "wrong-data" in repro.stdout, repro.stdout + repro.stderr
    # ...and so it does Hypothesis's own report (as pytest prints it), given the routine
    printed = tmp_path / "pytest-output.txt"
    case_repr = text.split("search(case=", 1)[1].rsplit(")", 1)[0]
    printed.write_text(f"E   AssertionError\nFalsifying example: test_mutant(\n    case={case_repr},\n)\n")
    repro = run_cli("repro", str(printed), "--routine", MUTANT)
    assert repro.returncode == 1 and "wrong-data" in repro.stdout, repro.stdout + repro.stderr
    assert run_cli("repro", str(printed)).returncode == 2


def test_hypothesis_on_a_correct_routine_is_clean(tmp_path: Path) -> None:
    proc = campaign(tmp_path, "riscv/copy_user", "hypothesis", 3)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert "findings: none" in proc.stdout
    assert not (tmp_path / "regressions").exists() or not any((tmp_path / "regressions").iterdir())
