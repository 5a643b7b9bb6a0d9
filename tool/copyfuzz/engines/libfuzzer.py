"""libFuzzer: rounds of the native driver on the corpus until the time is used up.

libFuzzer stops at its first crash, so a campaign is a series of rounds on the same
corpus: after each finding the input is minimised (-minimize_crash), decoded
(fuzzinput) and handed to the shared triage path. libFuzzer writes new inputs into the
run's staging directory (it deletes inputs it reduces, and SIGKILL can cut a write
short) and reads it with the corpus; the tool moves each whole input into the corpus.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .. import corpus, fuzzinput, paths, procs
from ..campaign import Campaign, clear_status, dead_runs, keep_artifact, status_line
from ..errors import CopyfuzzError
from ..spec import Spec
from ..triage import run_specs

PREFIXES = ("crash-", "timeout-", "oom-", "leak-")
MINIMIZE_RUNS = 2000
MINIMIZE_MAX_S = 20
INPUT_MAX_LEN = 16  # bytes of an input: the layout uses 10
STAGING_COPY_S = 2.0  # how often a running round's new inputs are copied into the corpus

_STATUS = re.compile(r"^#(\d+)\s+\w+.*exec/s: (\d+)")
_FT = re.compile(r"\bft: (\d+)")
_CORP = re.compile(r"\bcorp: (\d+)/")
_STAT = re.compile(r"^stat::(\w+):\s*(\d+)")


class Status:
    """libFuzzer's output read line by line: counters, and the live status line."""

    def __init__(self, show: bool, campaign: Campaign, started: float, total_s: int) -> None:
        self.show, self.campaign, self.started, self.total_s = show, campaign, started, total_s
        self.base = campaign.executions
        self.shown_at = 0.0
        self.execs = 0
        self.exec_s = 0
        self.ft = 0
        self.corp = 0
        self.stats: dict[str, int] = {}
        self.tail: list[str] = []

    def line(self, text: str) -> None:
        self.tail = (self.tail + [text])[-40:]
        m = _STATUS.match(text)
        if m:
            self.execs = int(m.group(1))
            ft, corp = _FT.search(text), _CORP.search(text)
            self.ft = int(ft.group(1)) if ft else self.ft
            self.corp = int(corp.group(1)) if corp else self.corp
            self.exec_s = int(m.group(2))
            if self.show and time.monotonic() - self.shown_at >= 0.5:
                self.shown_at = time.monotonic()
                status_line(self.campaign, self.started, self.total_s, self.base + self.execs, self.exec_s,
                            f"ft {self.ft}  corpus {self.corp}")
        s = _STAT.match(text)
        if s:
            self.stats[s.group(1)] = int(s.group(2))

    def done(self) -> None:
        if self.show:
            clear_status()


def fuzz_round(c: Campaign, env: dict[str, str], seconds: int, jobs: int, status: Status) -> tuple[int, list[str]]:
    """One libFuzzer run on the corpus; its exit status and output tail."""
    assert c.run is not None
    run = c.run
    argv = [str(paths.libfuzzer_target(c.root)), f"-max_total_time={seconds}", f"-seed={c.seed + c.rounds}",
            f"-artifact_prefix={run.path.resolve()}/", "-print_final_stats=1", f"-max_len={INPUT_MAX_LEN}"]
    if jobs > 1:
        argv += [f"-jobs={jobs}", f"-workers={jobs}"]
    # Two corpus directories: libFuzzer writes to the first, and reads both.
    argv += [str(run.staging.resolve()), str(c.corpus.resolve())]
    proc = procs.popen(argv, cwd=run.logs, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, errors="replace")
    try:
        assert proc.stderr is not None
        copied_at = time.monotonic()
        for text in proc.stderr:
            status.line(text.rstrip("\n"))
            if time.monotonic() - copied_at >= STAGING_COPY_S:
                corpus.take_whole(c.corpus, run.staging, remove=False)  # the corpus grows as the round goes
                copied_at = time.monotonic()
        proc.wait()
    finally:
        if proc.poll() is None:  # libFuzzer exits cleanly on SIGTERM; the executor dies with the driver
            procs.stop(proc)
    if jobs > 1:  # each job logged to fuzz-J.log: add up their last counts
        total = 0
        for log in run.logs.glob("fuzz-*.log"):
            last = 0
            for text in log.read_text(errors="replace").splitlines():
                m = _STATUS.match(text)
                if m:
                    last = int(m.group(1))
                if text.startswith("==copyfuzz==") or text.startswith("copyfuzz driver:"):
                    status.tail.append(text)
            total += last
            log.unlink()
        status.execs = total
    elif "number_of_executed_units" in status.stats:
        status.execs = status.stats["number_of_executed_units"]
    return proc.returncode, status.tail


def minimise(c: Campaign, artifact: Path, seconds: int) -> Path:
    """libFuzzer's -minimize_crash on the artifact; the artifact itself if that fails."""
    out = artifact.with_name(f"minimized-{artifact.name}")
    with tempfile.TemporaryDirectory(prefix="copyfuzz-min-") as scratch:
        env = c.driver_env(scratch)  # its findings are thrown away
        try:
            procs.run([str(paths.libfuzzer_target(c.root)), "-minimize_crash=1", f"-runs={MINIMIZE_RUNS}",
                            f"-max_total_time={max(1, seconds)}", f"-exact_artifact_path={out}", str(artifact)],
                           cwd=scratch, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=seconds + 60)
        except subprocess.TimeoutExpired:
            pass
    return out if out.is_file() and out.stat().st_size <= artifact.stat().st_size else artifact


def handle(c: Campaign, artifact: Path, deadline: float) -> bool:
    """Minimise, decode and triage one artifact; the driver's .finding files go with it."""
    source = artifact.parent  # the run directory: the artifact leaves it in triage

    def spec_of(path: Path) -> Spec:
        return dataclasses.replace(fuzzinput.decode(path.read_bytes(), c.routine.kind, c.max_len),
                                   routine=c.routine.name)

    original = spec_of(artifact)
    if not run_specs(c.root, c.routine, c.profile, [original])[0].errors:
        found = c.triage([original], artifact)  # does not reproduce alone: reported, not minimised
    else:
        budget = int(min(MINIMIZE_MAX_S, max(1.0, deadline - time.monotonic())))
        small = minimise(c, artifact, budget)
        found = c.triage([spec_of(small), original] if small != artifact else [original], artifact)
    for finding in sorted(source.glob("driver-*.finding")):
        keep_artifact(c.findings_dir, finding)
    return found is not None


def adopt_dead_runs(c: Campaign, deadline: float) -> None:
    """What campaigns killed midway left: their new inputs into the corpus, their artifacts
    triaged; then their run directories go."""
    for dead in dead_runs(c.findings_dir):
        corpus.take_whole(c.corpus, dead / "staging", remove=True)
        for artifact in sorted(p for p in dead.iterdir() if p.is_file() and p.name.startswith(PREFIXES)):
            handle(c, artifact, deadline)
        shutil.rmtree(dead, ignore_errors=True)


def run(c: Campaign, jobs: int, show: bool, started: float, deadline: float, total_s: int) -> None:
    assert c.run is not None
    env = c.driver_env(c.run.path.resolve(), c.run.coverage.resolve())
    adopt_dead_runs(c, deadline)
    while not c.until_met:
        left = int(deadline - time.monotonic())
        if left < 1:
            break
        status = Status(show, c, started, total_s)
        try:
            rc, tail = fuzz_round(c, env, left, jobs, status)
        finally:
            status.done()
            corpus.take_whole(c.corpus, c.run.staging, remove=True)
        c.rounds += 1
        c.executions += status.execs
        artifacts = sorted((p for p in c.run.path.iterdir() if p.is_file() and p.name.startswith(PREFIXES)),
                           key=lambda p: p.stat().st_mtime_ns)
        if not artifacts:
            if rc != 0:
                raise CopyfuzzError(f"libFuzzer exited with status {rc} without a finding",
                                    details="\n".join(tail[-20:]))
            break  # the time is used up
        stuck = False
        for artifact in artifacts:
            digest = corpus.name_of(artifact.read_bytes())
            # An input of the corpus itself that fails (the routine changed since it was
            # added) would stop every round at once: report it and end the campaign.
            # (One that does not reproduce, say an executor killed from outside while it
            # ran, does not fail again: the campaign goes on.)
            in_corpus = corpus.has(c.corpus, digest)
            stuck |= handle(c, artifact, deadline) and in_corpus
        if stuck:
            print(f"copyfuzz: an input of the corpus {c.corpus} fails: libFuzzer cannot get past it, "
                  f"so the campaign ends here (fix the routine, or fuzz with another --corpus)", file=sys.stderr)
            break
