"""libFuzzer: rounds of the native driver on the corpus until the time is used up.

The drivers never stop libFuzzer for a finding (COPYFUZZ_ON_FINDING=go-on): one whose
(class, fault pc) is new to the campaign is written to the run directory (a .finding
file with its case and input) and claimed in seen/; every input showing a claimed pair is
counted, and all of them pass. While the round runs, a thread takes those files and
hands each to the shared triage path (Campaign.take_driver_findings), which shrinks the
case on the other CPU: a routine full of bugs is fuzzed at the speed of a clean one, with
no restart and no re-run of the corpus per finding. A round still ends at anything else
libFuzzer stops for (a crash of the driver itself, an out-of-memory): its artifact is
decoded (fuzzinput) and triaged, and the next round goes on with the same corpus. With
--jobs N, N workers run up to N + EXTRA_JOBS jobs, and the round is stopped at its
deadline. libFuzzer writes new inputs into the run's staging directory (it deletes
inputs it reduces, and SIGKILL can cut a write short) and reads it with the corpus; the
tool moves each whole input into the corpus.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from .. import corpus, envs, paths, procs
from ..campaign import Campaign, clear_status, dead_runs, status_line
from ..errors import CopyfuzzError

EXTRA_JOBS = 64  # jobs of a --jobs round past one per worker: one per job that ends early (a crash of the driver)
STOP_GRACE_S = 1  # a round past its time (an input still running, a --jobs job started late) is stopped
INPUT_MAX_LEN = 16  # bytes of an input: the layout uses 10
STAGING_COPY_S = 2.0  # how often a running round's new inputs are copied into the corpus
TAKE_EVERY_S = 0.25  # how often a running round's findings are taken and triaged

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
        m = _STATUS.match(text)
        if not m:  # the status lines would push out what says why it ended
            self.tail = (self.tail + [text])[-40:]
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


class FindingTaker:
    """The drivers' .finding files of a running round, taken and triaged as they come (a
    thread); at --until's class, the round is stopped."""

    def __init__(self, c: Campaign, source: Path, stop_round: Callable[[], None]) -> None:
        self.c, self.source, self.stop_round = c, source, stop_round
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.loop, name="finding-taker", daemon=True)
        self.thread.start()

    def loop(self) -> None:
        while not self.done.wait(TAKE_EVERY_S):
            if not self.take():
                return

    def take(self) -> bool:
        """False: stop taking (an error, kept for the caller, or --until met)."""
        try:
            self.c.take_driver_findings(self.source, alone=True)
        except BaseException as e:  # noqa: BLE001 - raised again in the campaign's thread
            self.error = e
            self.stop_round()
            return False
        if self.c.until_met:
            self.stop_round()
            return False
        return True

    def stop(self) -> None:
        """Ends the thread once its current triage is done (what it did not take is taken
        after the round)."""
        self.done.set()
        self.thread.join()

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def fuzz_round(c: Campaign, env: dict[str, str], seconds: int, jobs: int,
               status: Status) -> tuple[int | None, list[str]]:
    """One libFuzzer run on the corpus; its exit status (None: stopped at its deadline, or
    at --until's class) and output tail."""
    assert c.run is not None
    run = c.run
    argv = [str(paths.libfuzzer_target(c.root)), f"-max_total_time={seconds}", f"-seed={c.seed + c.rounds}",
            f"-artifact_prefix={run.path.resolve()}/", "-print_final_stats=1", f"-max_len={INPUT_MAX_LEN}"]
    if jobs > 1:
        argv += [f"-jobs={jobs + EXTRA_JOBS}", f"-workers={jobs}"]
    # Two corpus directories: libFuzzer writes to the first, and reads both.
    argv += [str(run.staging.resolve()), str(c.corpus.resolve())]
    # With --jobs, a session of its own: at the deadline the parent and every worker go.
    proc = procs.popen(argv, cwd=run.logs, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace", new_session=jobs > 1)
    stopped = threading.Event()

    def stop_round() -> None:
        stopped.set()
        procs.stop(proc, grace_s=2)

    # libFuzzer looks at -max_total_time only between inputs, and one input can run long
    # (n up to 64 KiB under the plugin: seconds on a busy machine); a --jobs job started
    # after another ended has the whole round's time. The round is stopped at its end.
    timer = threading.Timer(seconds + STOP_GRACE_S, stop_round)
    timer.daemon = True
    timer.start()
    taker = FindingTaker(c, run.path, stop_round)
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
        ended = proc.poll() is not None  # at its time, or stopped: what follows is triage
        if ended:
            c.engines_stopped()
        taker.stop()  # before the round's processes go: an interrupt waits for its triage
        timer.cancel()
        if proc.poll() is None:  # libFuzzer exits cleanly on SIGTERM; the executor dies with the driver
            procs.stop(proc)
        if jobs > 1:
            procs.kill_group(proc)  # workers of a parent that ended
        if not ended:
            c.engines_stopped()
    taker.raise_error()
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
    return None if stopped.is_set() else proc.returncode, status.tail


def handle(c: Campaign, artifact: Path) -> bool:
    """Decode and triage one artifact (triage shrinks it). True if it reproduced."""
    return c.triage([c.decode(artifact.read_bytes())], artifact) is not None


def adopt_dead_runs(c: Campaign) -> None:
    """What campaigns killed midway left: their new inputs into the corpus, their artifacts
    triaged, their drivers' counts added; then their run directories go."""
    for dead in dead_runs(c.findings_dir):
        corpus.take_whole(c.corpus, dead / "staging", remove=True)
        for artifact in sorted(p for p in dead.iterdir()
                               if p.is_file() and p.name.startswith(corpus.ARTIFACT_PREFIXES)):
            handle(c, artifact)
        c.take_driver_findings(dead, alone=True)
        c.adopt_seen(dead / "seen")
        shutil.rmtree(dead, ignore_errors=True)


def run(c: Campaign, jobs: int, show: bool, started: float, deadline: float, total_s: int) -> None:
    assert c.run is not None
    env = envs.driver_env(c.campaign_env(), on_finding="go-on")
    adopt_dead_runs(c)
    stopped_by: set[str] = set()  # digests of artifacts that ended a round
    while not c.until_met:
        remaining = deadline - time.monotonic()
        if remaining < 0.5:  # -max_total_time takes whole seconds: --time 1 still runs one
            break
        left = max(1, round(remaining))
        status = Status(show, c, started, total_s)
        try:
            rc, tail = fuzz_round(c, env, left, jobs, status)
        finally:
            status.done()
            corpus.take_whole(c.corpus, c.run.staging, remove=True)
        c.rounds += 1
        c.executions += status.execs
        c.take_driver_findings(c.run.path, alone=True)  # what the round's taker had not taken yet
        artifacts = sorted((p for p in c.run.path.iterdir()
                            if p.is_file() and p.name.startswith(corpus.ARTIFACT_PREFIXES)),
                           key=lambda p: p.stat().st_mtime_ns)
        if not artifacts:
            if rc not in (0, None):
                raise CopyfuzzError(f"libFuzzer exited with status {rc} without a finding",
                                    details="\n".join(tail[-20:]))
            break  # the time is used up
        stuck = False
        for artifact in artifacts:
            digest = corpus.name_of(artifact.read_bytes())
            # An input of the corpus that fails stops one round; the drivers have claimed
            # its (class, fault pc) then, and the next round goes past it. The same input
            # stopping a second round means they cannot claim (an unwritable run
            # directory): end the campaign rather than loop.
            stuck |= handle(c, artifact) and digest in stopped_by
            stopped_by.add(digest)
        if stuck:
            print(f"copyfuzz: an input fails again although its finding was claimed in {c.run.seen}: "
                  f"libFuzzer cannot get past it, so the campaign ends here", file=sys.stderr)
            break
