"""End to end: how the native fuzz driver (fuzz/driver.c) reports an executor that dies or
hangs (fuzz/executor_channel.c): the finding's class and, for a death, how it died, on both
transports (COPYFUZZ_CHANNEL: shm, the shared block and its futex handshake of
harness/channel_abi.h; pipe). The "executors" here are our own shell scripts, run directly
(COPYFUZZ_QEMU=""): on shm they read and write the block through its descriptor
(/proc/self/fd/N), which the driver sees at its next look at the turn word (a script makes
no FUTEX_WAKE). Needs clang.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from copyfuzz import envs, paths, records

pytestmark = pytest.mark.e2e

LIBFUZZER = paths.libfuzzer_target(ROOT)


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", str(LIBFUZZER.relative_to(ROOT))], cwd=ROOT, check=True)


# The script's arguments as shell variables: $c the case pipe, $r the records pipe, $h the
# channel block (shm only).
ARGS = ('while [ $# -gt 0 ]; do case $1 in --cases-fd) c=$2;; --records-fd) r=$2;; --channel-fd) h=$2;; esac; '
        'shift; done\n')
# shm: wait until the driver has posted its first case (turn == 1, channel_abi.h).
AWAIT_CASE = 'until [ "$(od -An -tu4 -N4 "/proc/self/fd/$h")" -eq 1 ]; do sleep 0.01; done\n'
# Read the seal key, then the case: from the pipe, or (shm) wait for it in the block.
TAKE_CASE = {"pipe": 'head -c 80 "/proc/self/fd/$c" >/dev/null\n',
             "shm": 'head -c 16 "/proc/self/fd/$c" >/dev/null\n' + AWAIT_CASE}
RESULT_OFFSET = 64 + records.CASE_SIZE  # struct cf_channel_shm: a 64-byte header, the case, then the result


def poke(offset: int, data: bytes) -> str:
    """shm: a shell line writing DATA into the block at OFFSET (the pages the driver maps)."""
    octal = "".join(f"\\{b:03o}" for b in data)
    return f'printf "{octal}" | dd of="/proc/self/fd/$h" bs=1 seek={offset} conv=notrunc 2>/dev/null\n'


@pytest.fixture(params=["shm", "pipe"])
def channel(request: pytest.FixtureRequest) -> str:
    return str(request.param)


# An executor that never answers is a hang after 3 x 1 ms + 1 s (5 s by default): long
# enough for the scripts below to have written what they write before it.
SHORT_WAIT = {"COPYFUZZ_TIMEOUT_MS": "1", "COPYFUZZ_ANSWER_SLACK_MS": "1000"}


def run_driver(tmp_path: Path, script: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """libFuzzer on one input with SCRIPT as the executor."""
    exe = tmp_path / "executor.sh"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    findings = tmp_path / "findings"
    findings.mkdir()
    (tmp_path / "input").write_bytes(bytes(10))
    env = {**envs.driver_env(executor=exe, qemu="", plugin="", findings=findings, pin=0), **extra}
    return subprocess.run([str(LIBFUZZER), f"-artifact_prefix={findings}/", str(tmp_path / "input")],
                          env=env, capture_output=True, text=True, timeout=120)


def run_with_executor(tmp_path: Path, script: str, **extra: str) -> tuple[str, str]:
    """libFuzzer on one input with SCRIPT as the executor: (stderr, the finding file's text)."""
    proc = run_driver(tmp_path, script, **extra)
    assert proc.returncode != 0, proc.stderr[-2000:]
    (finding,) = (tmp_path / "findings").glob("driver-*.finding")
    return proc.stderr, finding.read_text()


def test_an_executor_that_exits_is_a_crash_with_its_exit_status(tmp_path: Path, channel: str) -> None:
    err, finding = run_with_executor(tmp_path, "exit 3\n", COPYFUZZ_CHANNEL=channel)
    assert "classes=crash\n" in finding
    assert "why=the executor died: exited with status 3\n" in finding, finding
    assert "FINDING: crash (the executor died: exited with status 3)" in err


def test_an_executor_killed_by_a_signal_is_a_crash_with_the_signal(tmp_path: Path, channel: str) -> None:
    err, finding = run_with_executor(tmp_path, "kill -SEGV $$\n", COPYFUZZ_CHANNEL=channel)
    assert "classes=crash\n" in finding
    assert "why=the executor died: killed by signal 11 (Segmentation fault)\n" in finding, finding


def test_an_executor_that_never_answers_is_a_hang(tmp_path: Path, channel: str) -> None:
    # the driver waits 3 x COPYFUZZ_TIMEOUT_MS + COPYFUZZ_ANSWER_SLACK_MS (5 s unless set)
    err, finding = run_with_executor(tmp_path, "exec sleep 600\n", COPYFUZZ_CHANNEL=channel, **SHORT_WAIT)
    assert "classes=hang\n" in finding
    assert "why=the executor stopped answering (hang)\n" in finding, finding


def test_an_executor_that_answers_garbage_on_its_channel_is_a_crash(tmp_path: Path, channel: str) -> None:
    # takes the case and answers a result's bytes that carry no seal of this channel (a forged or
    # garbled record): on the records pipe, or in the block's result with the turn word
    # saying "result posted" (2)
    answer = {"pipe": f'head -c {records.RESULT_SIZE} /dev/zero >"/proc/self/fd/$r"\n',
              "shm": poke(RESULT_OFFSET, bytes(records.RESULT_SIZE)) + poke(0, (2).to_bytes(4, "little"))}[channel]
    err, finding = run_with_executor(tmp_path, ARGS + TAKE_CASE[channel] + answer + "exec sleep 600\n",
                                     COPYFUZZ_CHANNEL=channel)
    assert "classes=crash\n" in finding
    assert "why=the executor's channel carried a record it did not seal (crash)\n" in finding, finding


def test_junk_on_the_executors_stdout_is_no_answer(tmp_path: Path, channel: str) -> None:
    # a result-sized write to stdout, then silence: stdout is not the channel, so a hang
    err, finding = run_with_executor(tmp_path, f"head -c {records.RESULT_SIZE} /dev/zero; exec sleep 600\n",
                                     COPYFUZZ_CHANNEL=channel, **SHORT_WAIT)
    assert "classes=hang\n" in finding, finding


def test_an_executor_that_dies_with_the_case_in_hand_is_a_crash(tmp_path: Path, channel: str) -> None:
    """Mid-handshake: the executor has the case (read from the pipe, or seen posted in the
    block) and exits before answering. On shm only the watcher (the executor's pidfd) can
    see that: the turn word never moves."""
    err, finding = run_with_executor(tmp_path, ARGS + TAKE_CASE[channel] + "exit 5\n", COPYFUZZ_CHANNEL=channel)
    assert "classes=crash\n" in finding
    assert "why=the executor died: exited with status 5\n" in finding, finding


def test_a_turn_word_neither_side_wrote_is_a_crash(tmp_path: Path) -> None:
    """shm: the turn word moved to a value the driver never posts and the executor never
    answers with (a routine scribbling on the block): out of step, at once."""
    script = ARGS + TAKE_CASE["shm"] + poke(0, (7).to_bytes(4, "little")) + "exec sleep 600\n"
    err, finding = run_with_executor(tmp_path, script, COPYFUZZ_CHANNEL="shm")
    assert "classes=crash\n" in finding
    assert "why=the executor answered out of step\n" in finding, finding


def test_the_dead_bit_alone_is_no_death(tmp_path: Path) -> None:
    """shm: bit 31 of the turn word is how the driver's SIGCHLD handler wakes its wait;
    set by anyone else (a routine) on a live executor it is no death: the driver asks the
    kernel, clears it and waits on, here until the executor counts as hung."""
    script = ARGS + TAKE_CASE["shm"] + poke(0, (0x80000001).to_bytes(4, "little")) + "exec sleep 600\n"
    err, finding = run_with_executor(tmp_path, script, COPYFUZZ_CHANNEL="shm", **SHORT_WAIT)
    assert "classes=hang\n" in finding
    assert "why=the executor stopped answering (hang)\n" in finding, finding


def test_the_channel_is_chosen_by_copyfuzz_channel(tmp_path: Path) -> None:
    """The executor gets the block (--channel-fd, a memfd of its own) by default and on
    shm, none on pipe; anything else is a usage error of the driver."""
    seen = {}
    for channel in (None, "shm", "pipe"):
        run = tmp_path / str(channel)
        run.mkdir()
        extra = {} if channel is None else {"COPYFUZZ_CHANNEL": channel}
        script = ARGS + f'echo "$h" >{run}/h; readlink "/proc/self/fd/${{h:-0}}" >{run}/what; exit 3\n'
        run_with_executor(run, script, **extra)
        seen[channel] = ((run / "h").read_text().strip(), (run / "what").read_text())
    for channel in (None, "shm"):
        fd, what = seen[channel]
        assert fd.isdigit() and what.startswith("/memfd:copyfuzz-channel"), seen
    assert seen["pipe"][0] == "", seen
    (tmp_path / "bad").mkdir()
    proc = run_driver(tmp_path / "bad", "exit 0\n", COPYFUZZ_CHANNEL="futex")
    assert proc.returncode == 2 and "copyfuzz driver: COPYFUZZ_CHANNEL: shm or pipe" in proc.stderr, proc.stderr


@pytest.mark.parametrize("name, value", [
    ("COPYFUZZ_ANSWER_SLACK_MS", "abc"), ("COPYFUZZ_ANSWER_SLACK_MS", "5s"), ("COPYFUZZ_ANSWER_SLACK_MS", "-2999"),
    ("COPYFUZZ_ANSWER_SLACK_MS", "4294964296"), ("COPYFUZZ_TIMEOUT_MS", ""), ("COPYFUZZ_TIMEOUT_MS", "0x10"),
    ("COPYFUZZ_KIND", "copy_from"), ("COPYFUZZ_PROFILE", "exactly"), ("COPYFUZZ_PROFILE", ""),
])
def test_a_bad_setting_stops_the_driver_in_one_line(tmp_path: Path, name: str, value: str) -> None:
    """A wait that is not a plain number of milliseconds (up to a day) would turn into 0 ms
    (or wrap) and every case into a false hang; a kind that is no kind would run as copy,
    a profile that is no profile judge by the linux contract."""
    proc = run_driver(tmp_path, "exit 0\n", **{name: value})
    lines = [line for line in proc.stderr.splitlines() if line.startswith("copyfuzz driver:")]
    assert proc.returncode == 2 and len(lines) == 1 and f"{name}={value}" in lines[0], proc.stderr


def test_an_unknown_variable_is_said_with_the_nearest_name(tmp_path: Path) -> None:
    """A misspelt variable changes nothing, so the driver says so (as AFL++ does for AFL_*),
    and goes on; a name far from every registered one gets no suggestion."""
    profle, zzz = envs.PREFIX + "PROFLE", envs.PREFIX + "ZZZZZZ"  # not spelt out: not registered
    proc = run_driver(tmp_path, "exit 3\n", **{profle: "exact", zzz: "1"})
    warnings = sorted(line for line in proc.stderr.splitlines() if "is not a copyfuzz variable" in line)
    assert warnings == [
        f"copyfuzz driver: warning: {profle} is not a copyfuzz variable: ignored (did you mean COPYFUZZ_PROFILE?)",
        f"copyfuzz driver: warning: {zzz} is not a copyfuzz variable: ignored",
    ], proc.stderr
    assert list((tmp_path / "findings").glob("driver-*.finding")), "it did not go on to the case"
