"""End to end: the native fuzz driver (fuzz/driver.c) under libFuzzer and AFL++'s
libAFLDriver, over the persistent executor with the coverage plugin, the native
oracle cross-checked against the executor's. Needs clang, afl-clang-fast and QEMU:
a missing tool FAILS these tests.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.e2e

LIBFUZZER = ROOT / "build/host/fuzz/copyfuzz_fuzzer"
AFL = ROOT / "build/host/fuzz/copyfuzz_afl_fuzzer"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all", "fuzz-targets"], cwd=ROOT, check=True)


def expected_classes(mutant: str) -> set[str]:
    for line in (ROOT / f"arch/riscv/mutants/{mutant}.S").read_text().splitlines()[:40]:
        if "copyfuzz: expect=" in line:
            return set(line.split("expect=", 1)[1].strip().split(","))
    raise AssertionError(f"{mutant} declares no expect= line")


def env_for(routine: str, findings: Path, **extra: str) -> dict[str, str]:
    kind = "clear" if "clear" in routine else "memcpy" if "memcpy" in routine else "copy"
    return {**os.environ, "COPYFUZZ_EXECUTOR": str(ROOT / f"build/riscv64/{routine}.elf"),
            "COPYFUZZ_PLUGIN": str(ROOT / "build/host/cfplugin.so"), "COPYFUZZ_KIND": kind,
            "COPYFUZZ_PROFILE": "exact", "COPYFUZZ_FINDINGS": str(findings), **extra}


def libfuzzer(tmp_path: Path, routine: str, *flags: str, **extra: str) -> tuple[int, str, Path]:
    findings = tmp_path / "findings"
    corpus = tmp_path / "corpus"
    findings.mkdir()
    corpus.mkdir()
    proc = subprocess.run([str(LIBFUZZER), *flags, f"-artifact_prefix={findings}/", str(corpus)],
                          env=env_for(routine, findings, **extra), capture_output=True, text=True,
                          timeout=300)
    return proc.returncode, proc.stderr, findings


@pytest.mark.parametrize("mutant", ["fixup-off-by-one", "no-progress-partial-word", "wrong-shift",
                                    "overread-in-page",  # only the plugin sees this one
                                    "clear-returns-zero"])
def test_libfuzzer_finds_mutants_from_an_empty_corpus(tmp_path: Path, mutant: str) -> None:
    expect = expected_classes(mutant)
    rc, err, findings = libfuzzer(tmp_path, f"riscv/mutants/{mutant}", "-max_total_time=60", "-seed=1")
    assert rc != 0, err[-2000:]
    shown = err.split("==copyfuzz== FINDING: ")[1].split(" ")[0].split(",")
    assert expect & set(shown), (mutant, shown)
    (finding,) = findings.glob("driver-*.finding")  # on disk before the abort...
    cls = sorted(expect & set(shown))[0]
    assert cls in finding.read_text()
    (artifact,) = findings.glob("crash-*")  # ...and the engine saved the input
    # AFL++'s build of the same driver replays libFuzzer's artifact to the same finding
    replay = subprocess.run([str(AFL), str(artifact)], env=env_for(f"riscv/mutants/{mutant}", tmp_path),
                            capture_output=True, text=True, timeout=120)
    assert replay.returncode != 0 and cls in replay.stderr


@pytest.mark.parametrize("routine", ["riscv/copy_user", "riscv/clear_user", "riscv/memcpy"])
def test_libfuzzer_reports_nothing_on_correct_routines(tmp_path: Path, routine: str) -> None:
    rc, err, findings = libfuzzer(tmp_path, routine, "-runs=4000", "-seed=2")
    assert rc == 0, err[-3000:]
    assert not list(findings.iterdir())


def test_a_dying_executor_is_a_crash_finding_on_disk(tmp_path: Path) -> None:
    rc, err, findings = libfuzzer(tmp_path, "riscv/copy_user", "-runs=10",
                                  COPYFUZZ_QEMU="", COPYFUZZ_EXECUTOR="/bin/false", COPYFUZZ_PLUGIN="")
    assert rc != 0
    assert "FINDING: crash (the executor died" in err
    (finding,) = findings.glob("driver-*.finding")
    assert "classes=crash" in finding.read_text()
