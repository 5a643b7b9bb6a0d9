"""End to end: how the native fuzz driver (fuzz/driver.c) reports an executor that dies or
hangs (fuzz/executor_channel.c): the finding's class and, for a death, how it died. The
"executors" here are our own shell scripts, run directly (COPYFUZZ_QEMU=""). Needs clang.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from copyfuzz import envs, paths

pytestmark = pytest.mark.e2e

LIBFUZZER = paths.libfuzzer_target(ROOT)


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", str(LIBFUZZER.relative_to(ROOT))], cwd=ROOT, check=True)


def run_with_executor(tmp_path: Path, script: str, **extra: str) -> tuple[str, str]:
    """libFuzzer on one input with SCRIPT as the executor: (stderr, the finding file's text)."""
    exe = tmp_path / "executor.sh"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    findings = tmp_path / "findings"
    findings.mkdir()
    (tmp_path / "input").write_bytes(bytes(10))
    env = {**envs.driver_env(executor=exe, qemu="", plugin="", findings=findings, pin=0), **extra}
    proc = subprocess.run([str(LIBFUZZER), f"-artifact_prefix={findings}/", str(tmp_path / "input")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0, proc.stderr[-2000:]
    (finding,) = findings.glob("driver-*.finding")
    return proc.stderr, finding.read_text()


def test_an_executor_that_exits_is_a_crash_with_its_exit_status(tmp_path: Path) -> None:
    err, finding = run_with_executor(tmp_path, "exit 3\n")
    assert "classes=crash\n" in finding
    assert "why=the executor died: exited with status 3\n" in finding, finding
    assert "FINDING: crash (the executor died: exited with status 3)" in err


def test_an_executor_killed_by_a_signal_is_a_crash_with_the_signal(tmp_path: Path) -> None:
    err, finding = run_with_executor(tmp_path, "kill -SEGV $$\n")
    assert "classes=crash\n" in finding
    assert "why=the executor died: killed by signal 11 (Segmentation fault)\n" in finding, finding


def test_an_executor_that_never_answers_is_a_hang(tmp_path: Path) -> None:
    # the driver waits 3 x COPYFUZZ_TIMEOUT_MS + 5 s past the executor's own watchdog
    err, finding = run_with_executor(tmp_path, "exec sleep 600\n", COPYFUZZ_TIMEOUT_MS="1")
    assert "classes=hang\n" in finding
    assert "why=the executor stopped answering (hang)\n" in finding, finding


def test_an_executor_that_answers_garbage_on_its_channel_is_a_crash(tmp_path: Path) -> None:
    # reads the seal key and the case from --cases-fd, answers 128 bytes on --records-fd
    # that carry no seal of this channel (a forged or garbled record)
    script = ('while [ $# -gt 0 ]; do case $1 in --cases-fd) c=$2;; --records-fd) r=$2;; esac; shift; done\n'
              'head -c 80 "/proc/self/fd/$c" >/dev/null; head -c 128 /dev/zero >"/proc/self/fd/$r"; exec sleep 600\n')
    err, finding = run_with_executor(tmp_path, script)
    assert "classes=crash\n" in finding
    assert "why=the executor's channel carried a record it did not seal (crash)\n" in finding, finding


def test_junk_on_the_executors_stdout_is_no_answer(tmp_path: Path) -> None:
    # a result-sized write to stdout, then silence: stdout is not the channel, so a hang
    err, finding = run_with_executor(tmp_path, "head -c 128 /dev/zero; exec sleep 600\n", COPYFUZZ_TIMEOUT_MS="1")
    assert "classes=hang\n" in finding, finding
