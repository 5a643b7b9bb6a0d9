"""AFL++: afl-fuzz -V on the AFL++ build of the driver, then every new crash triaged.

Instances run in <findings>/afl/ (-M main and -S secN with --jobs), resumed with -i -
where an instance has a queue. Each instance name is claimed with a lock, so a second
campaign on the same findings directory runs as other (-S) instances instead of
colliding. The drivers crash only on a (class, fault pc) new to the campaign
(COPYFUZZ_SEEN, shared by every instance): a repeat is counted and passes, so afl-fuzz
neither restarts its target nor fills crashes/ with copies of one bug. After the run the
queue is copied into the corpus, and for each (class, fault pc) the smallest crash is
handed to the shared triage, which shrinks the case (afl-tmin shrinks bytes, not the case).
With --until, a session ends as soon as a crash appears, and another is started while
the class has not been found and time is left.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .. import atomic, corpus, envs, fuzzinput, paths
from .. import procs as proclib
from ..campaign import Campaign, clear_status, status_line
from ..errors import CopyfuzzError

NO_FREE_CORE = b"No more free CPU cores"
# afl-fuzz's log lines around its dry run, which runs every queue entry once before it
# fuzzes (on a resume too, where fuzzer_stats' execs_done then goes back to the old
# session's count and leaves the dry run out).
DRY_RUN_ENTRY = b"Attempting dry run with "
DRY_RUN_DONE = b"All test cases processed."
BOUND = b"try binding to #"
# The driver tells a hang itself (its executor's watchdog, then at most 3 x 1 s + 5 s of
# waiting): afl-fuzz's own timeout, calibrated in milliseconds, would kill the driver for a
# case that is merely slow on a loaded machine.
TIMEOUT_MS = 10000
STOP_GRACE_S = 2.0  # after SIGINT at the deadline
HANDLED = fuzzinput.AFL_HANDLED  # digests of crashes already triaged (a resumed campaign skips them)
LOCKS = ".afl-locks"


def afl_env(env: dict[str, str]) -> dict[str, str]:
    """AFL_SKIP_CRASHES lets a crashing seed through the dry run (AFL++ 4.04c, Debian 12's);
    AFL_IGNORE_SEED_PROBLEMS is its newer name, given only to an afl-fuzz that knows it."""
    out = {**env, "AFL_SKIP_CPUFREQ": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_NO_UI": "1",
           "AFL_SKIP_CRASHES": "1"}
    if _knows(shutil.which("afl-fuzz", path=env.get("PATH", os.defpath)), "AFL_IGNORE_SEED_PROBLEMS"):
        out["AFL_IGNORE_SEED_PROBLEMS"] = "1"
    return out


def _knows(afl_fuzz: str | None, variable: str) -> bool:
    """Whether afl-fuzz knows an AFL_ variable. Of one it does not know, AFL++ warns and
    then sleeps 2 s as it starts (4.04c): every campaign lost 2 s. Its binary holds the
    names it knows (afl_environment_variables); a file without that list (a wrapper
    script, a test's fake) gets the variable, as before."""
    if afl_fuzz is None:
        return True
    try:
        data = _contents(os.path.realpath(afl_fuzz), os.stat(afl_fuzz).st_mtime_ns)
    except OSError:
        return True
    return b"AFL_SKIP_CPUFREQ\0" not in data or variable.encode() + b"\0" in data


@functools.lru_cache(maxsize=4)
def _contents(path: str, mtime_ns: int) -> bytes:
    """A file's bytes, read once per path and modification time."""
    return Path(path).read_bytes()


def instances(jobs: int, host: str | None) -> list[str]:
    """`default`, or main and secN with --jobs. With --afl-host H they are main-H and secN-H,
    main-H a -M even alone: hosts syncing their queues into one another's output dir
    (ci/afl-sync.sh) need names unique across hosts, and only -M/-S instances sync."""
    if host:
        return [f"main-{host}", *(f"sec{i}-{host}" for i in range(1, jobs))]
    return ["default"] if jobs == 1 else ["main", *(f"sec{i}" for i in range(1, jobs))]


def claim(findings_dir: Path, names: list[str]) -> list[tuple[str, list[str], int]]:
    """(name, its -M/-S flags, lock fd) per instance: the wanted name if no live campaign
    holds it, else name-2, name-3 ... as a -S instance (one -M per sync dir)."""
    out = []
    for name in names:
        k = 1
        while True:
            chosen = name if k == 1 else f"{name}-{k}"
            fd = atomic.try_lock(findings_dir / LOCKS / chosen)
            if fd is not None:
                break
            k += 1
        if k == 1 and name == "default":
            flags: list[str] = []
        elif k == 1 and name.split("-")[0] == "main":
            flags = ["-M", chosen]
        else:
            flags = ["-S", chosen]
        out.append((chosen, flags, fd))
    return out


def _bound(proc: subprocess.Popen[bytes], log: Path, wait_s: float = 5.0) -> bool:
    """False if afl-fuzz gave up for want of a free core; True once it bound (or went on)."""
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        text = log.read_bytes()
        if NO_FREE_CORE in text:
            proc.wait()
            return False
        if BOUND in text or proc.poll() is not None:
            return True
        time.sleep(0.05)
    return True


def _seeds(c: Campaign) -> Path:
    """The corpus if it has inputs, else one small seed file, twice: on a routine where it
    is a finding, the first copy's dry run claims it (afl-fuzz skips a crashing seed), and
    the second, a repeat, passes, so afl-fuzz has the valid seed it needs to start."""
    if c.corpus_size:
        return c.corpus.resolve()
    assert c.run is not None
    # In the run's own directory, not /tmp: a run killed with SIGKILL leaves it to the
    # next run's reclaim of dead runs (campaign.dead_runs) instead of to nobody.
    seeds = (c.run.path / "seeds").resolve()  # afl-fuzz runs in the run's logs/: no relative path
    seeds.mkdir(exist_ok=True)
    for name in ("seed", "seed-again"):
        (seeds / name).write_bytes(b"\x00" * 10)
    return seeds


def _stats(stats: Path) -> dict[str, str]:
    """An instance's fuzzer_stats (`key : value` lines; AFL++ rewrites it every few seconds)."""
    try:
        text = stats.read_text(errors="replace")
    except OSError:
        return {}
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def _execs(stats: Path) -> int:
    value = _stats(stats).get("execs_done", "")
    return int(value) if value.isdigit() else 0


def dry_run_inputs(log: Path) -> int:
    """How many inputs an instance's dry run ran to the end, by its log (this run's): each
    entry it began but the last, or every one once it says all were processed."""
    try:
        text = log.read_bytes()
    except OSError:
        return 0
    begun = text.count(DRY_RUN_ENTRY)
    return begun if DRY_RUN_DONE in text else max(0, begun - 1)


def _handled(c: Campaign) -> set[str]:
    path = c.findings_dir / HANDLED
    return set(path.read_text().split()) if path.is_file() else set()


def _new_crashes(c: Campaign, out: Path, names: list[str]) -> dict[str, Path]:
    """digest -> crash file, for this run's instances' crashes not triaged before."""
    handled = _handled(c)
    crashes: dict[str, Path] = {}
    for name in names:
        for path in sorted((out / name / "crashes").glob("id:*")):
            if path.is_file():
                digest = corpus.name_of(path.read_bytes())
                if digest not in handled:
                    crashes.setdefault(digest, path)
    return crashes


def session(c: Campaign, env: dict[str, str], out: Path, claimed: list[tuple[str, list[str], int]],
            deadline: float, show: bool, total_s: int, import_first: bool) -> None:
    """One afl-fuzz run of every instance until -V ends (or, with --until, a crash appears)."""
    assert c.run is not None
    names = [name for name, _, _ in claimed]
    fenv = afl_env(env)
    if import_first:  # --afl-host: first take in what other hosts found (ci/afl-sync.sh)
        fenv["AFL_IMPORT_FIRST"] = "1"
    procs: list[tuple[str, subprocess.Popen[bytes], Path]] = []
    stopped: set[str] = set()  # instances the tool ended (time up, --until), not ones that failed
    before = {name: _execs(out / name / "fuzzer_stats") for name in names}  # a resume counts on
    logs = c.findings_dir / ".logs"
    logs.mkdir(exist_ok=True)
    seeds = _seeds(c)
    try:
        resume = {name: (out / name / "queue").is_dir() for name in names}

        def launch(i: int, name: str, flags: list[str], bind: bool) -> tuple[str, subprocess.Popen[bytes], Path]:
            argv = ["afl-fuzz", "-i", "-" if resume[name] else str(seeds), "-o", str(out), "-V",
                    str(max(1, int(deadline - time.monotonic()))), "-s", str((c.seed + c.rounds + i) % 2**31),
                    "-t", str(TIMEOUT_MS), *flags, "--", str(paths.afl_target(c.root))]
            assert c.run is not None
            log = logs / f"afl-{name}.log"  # kept after the run; the instance name is this run's
            # afl-fuzz binds itself (and so the driver and its executor) to a free core:
            # twice the exec/s of floating (docs/perf.md). Without a free core it aborts.
            penv = fenv if bind else {**fenv, "AFL_NO_AFFINITY": "1"}
            with open(log, "wb") as f:
                return name, proclib.popen(argv, cwd=c.run.logs, env=penv, stdin=subprocess.DEVNULL,
                                           stdout=f, stderr=subprocess.STDOUT), log

        # COPYFUZZ_PIN=0 (a machine you share) leaves placement to the scheduler here too.
        pin = envs.value("COPYFUZZ_PIN", env) != "0"
        for i, (name, flags, _) in enumerate(claimed):  # one at a time: each sees the cores the others took
            entry = launch(i, name, flags, bind=pin)
            if pin and not _bound(*entry[1:]):
                print(f"copyfuzz: no free CPU core for afl-fuzz ({name}): it runs unbound (slower)",
                      file=sys.stderr)
                if not resume[name]:  # what the aborted start made is not a session to resume
                    shutil.rmtree(out / name, ignore_errors=True)
                entry = launch(i, name, flags, bind=False)
            procs.append(entry)
        started = time.monotonic()
        last = (started, 0)  # the drivers' snapshots count cases live; fuzzer_stats lags
        # -V counts from the end of afl-fuzz's calibration: the tool stops it at the
        # deadline (SIGINT, below), which is the campaign's promise.
        while any(p.poll() is None for _, p, _ in procs) and time.monotonic() < deadline:
            time.sleep(max(0.05, min(1.0, deadline - time.monotonic())))
            if c.until and _new_crashes(c, out, names):
                break
            if show:
                stats = [_stats(out / name / "fuzzer_stats") for name in names]
                queue = sum(int(st.get("corpus_count", 0)) for st in stats)
                crashes = sum(int(st.get("saved_crashes", 0)) for st in stats)
                cov = c.read_coverage()
                execs, now = (cov.cases if cov else 0), time.monotonic()
                rate = (execs - last[1]) / max(1e-9, now - last[0])
                last = (now, execs)
                status_line(c, started, total_s, execs, rate, f"queue {queue}  crashes {crashes}")
        if show:
            clear_status()
    finally:
        for name, proc, _ in procs:
            if proc.poll() is None:
                stopped.add(name)
                proc.send_signal(signal.SIGINT)  # afl-fuzz saves its state and exits
        # The time is a promise: one that has not ended by STOP_GRACE_S (still in its
        # dry run on a busy machine) is killed; its queue is on disk as it goes.
        until = time.monotonic() + STOP_GRACE_S
        for _, proc, _ in procs:
            try:
                proc.wait(timeout=max(0.0, until - time.monotonic()))
            except subprocess.TimeoutExpired:
                proclib.kill_group(proc)
        c.engines_stopped()
    c.rounds += 1
    for name, proc, log in procs:
        stats_file = out / name / "fuzzer_stats"
        ran = dry_run_inputs(log)
        if stats_file.is_file():
            c.executions += max(ran, _execs(stats_file) - before.get(name, 0))
        elif ran:
            c.executions += ran  # stopped before it wrote its stats
        elif proc.returncode not in (0, None) and name not in stopped:
            tail = log.read_text(errors="replace").splitlines()[-20:]
            raise CopyfuzzError(f"afl-fuzz ({name}) exited with status {proc.returncode} without starting",
                                details="\n".join(tail))
    corpus.take_files(c.corpus, sorted(p for name in names for p in (out / name / "queue").glob("id:*")))


def run(c: Campaign, jobs: int, host: str | None, show: bool, deadline: float, total_s: int) -> None:
    assert c.run is not None
    out = (c.findings_dir / "afl").resolve()
    out.mkdir(exist_ok=True)
    env = c.campaign_env()
    claimed = claim(c.findings_dir, instances(jobs, host))
    try:
        while True:
            session(c, env, out, claimed, deadline, show, total_s, import_first=bool(host))
            handle_crashes(c, out, [name for name, _, _ in claimed])
            if not c.until or c.until_met or deadline - time.monotonic() < 1:
                break
    finally:
        for _, _, fd in claimed:
            os.close(fd)


def handle_crashes(c: Campaign, out: Path, names: list[str]) -> None:
    """Each crash not handled before, through serve (Campaign.triage_groups): for each
    (class, fault pc) the smallest (sweep_order) is triaged, and shrunk there; crashes
    that do not reproduce alone are reported once, not saved."""
    assert c.run is not None
    crashes = _new_crashes(c, out, names)
    if not crashes:
        c.take_driver_findings(c.run.path)
        return
    # A crash is AFL++'s only report of its case: one that does not reproduce is said so
    # (unreproduced). A new crash of a pair found before is triaged again (not covered): it
    # may shrink to a smaller case, and unique() keeps the smallest. A crash not triaged
    # stays in AFL++'s crashes/.
    c.triage_groups([(p, c.decode(p.read_bytes()), []) for p in crashes.values()], unreproduced=True,
                    covered=False)
    c.take_driver_findings(c.run.path)
    with atomic.locked(c.findings_dir / f".{HANDLED}.lock"), open(c.findings_dir / HANDLED, "a") as f:
        f.write("".join(f"{d}\n" for d in crashes))
