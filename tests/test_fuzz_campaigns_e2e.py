"""End to end: campaigns that share directories, what a crashed run left, and --until.
Needs clang, AFL++ and QEMU: a missing tool FAILS.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, TOOL, fuzz_args, run_cli
from copyfuzz import corpus

pytestmark = pytest.mark.e2e

MUTANT = "riscv/mutants/wrong-shift"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all"], cwd=ROOT, check=True)


def args(tmp: Path, routine: str, engine: str, seconds: int, *extra: str) -> list[str]:
    return fuzz_args(tmp, routine, engine, seconds, "--json", *extra)


def popen(argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "copyfuzz", *argv], cwd=ROOT, text=True,
                            env={**os.environ, "PYTHONPATH": str(TOOL)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_an_empty_artifact_a_crashed_run_left_is_not_a_finding(tmp_path: Path) -> None:
    """A run that died (disk full, SIGKILL) left a 0-byte artifact in its run directory:
    the next run adopts it, re-runs it, and saves nothing, since it does not reproduce."""
    dead = tmp_path / "findings/.runs/1-deadbeef"
    dead.mkdir(parents=True)
    empty = dead / f"crash-{corpus.name_of(b'')}"
    empty.write_bytes(b"")
    (dead / "driver-1-1.finding").write_text("")  # cut short before its first line
    # 1 s: the run adopts and re-runs what it found before it fuzzes (it was 3 s)
    proc = run_cli(*args(tmp_path, "riscv/copy_user", "libfuzzer", 1, "--seed", "1"), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert rep["finds"] == [] and rep["not_reproduced"] == [str(tmp_path / "findings" / empty.name)], rep
    assert not (tmp_path / "regressions").exists() or not list((tmp_path / "regressions").iterdir())
    assert not dead.exists()


@pytest.mark.parametrize("engine", ["libfuzzer", "afl"])
def test_two_campaigns_on_one_corpus_and_findings_directory(tmp_path: Path, engine: str) -> None:
    # afl-fuzz's start (dry run, calibration) is in its time: 4 s (6 when afl-fuzz slept 2 s as it started)
    seconds = 4 if engine == "afl" else 3
    procs = [popen(args(tmp_path, "riscv/copy_user", engine, seconds, "--seed", str(k))) for k in (1, 2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-3000:]
        assert "Traceback" not in err
        assert json.loads(out)["executions"] > 0
    names = [p.name for p in (tmp_path / "corpus").iterdir()]
    assert names and all(corpus.name_of((tmp_path / "corpus" / n).read_bytes()) == n for n in names)
    assert not any((tmp_path / "findings/.runs").iterdir())
    if engine == "afl":  # the second campaign ran as an instance of its own, beside the first
        assert {p.name for p in (tmp_path / "findings/afl").iterdir() if p.is_dir()} == {"default", "default-2"}


@pytest.mark.parametrize("engine", ["libfuzzer", "afl", "hypothesis"])
def test_until_ends_the_campaign_at_the_first_finding_of_the_class(tmp_path: Path, engine: str) -> None:
    started = time.monotonic()
    proc = run_cli(*args(tmp_path, MUTANT, engine, 600, "--seed", "5", "--until", "wrong-data"), timeout=900)
    took = time.monotonic() - started
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert rep["until_met"] and "wrong-data" in rep["findings"], rep
    assert took < 300, f"--until did not end the campaign early ({took:.0f} s)"
    if engine == "libfuzzer":  # the driver's other findings of the moment: kept, not triaged
        assert len(rep["finds"]) == 1 and all(Path(p).is_file() for p in rep["untriaged"]), rep


def test_until_takes_only_known_classes(tmp_path: Path) -> None:
    proc = run_cli(*args(tmp_path, MUTANT, "libfuzzer", 5, "--until", "wrong-dta"))
    assert proc.returncode == 2 and "unknown class wrong-dta" in proc.stderr, proc.stderr
