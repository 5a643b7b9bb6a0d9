"""One fuzz campaign's state, directories and report, shared by every engine (engines/).

Directories:
- the corpus (corpus.py), only ever added to, shared by any number of campaigns;
- the findings directory: reproduced artifacts, driver `.finding` files, Hypothesis
  failures, AFL++'s output (afl/). Each run works in a private run directory below it,
  `.runs/<pid>-<random>/` (libFuzzer's staging directory and artifacts, the drivers'
  findings and coverage snapshots, logs), held with a lock while the run lives. A run
  killed midway leaves its run directory unlocked: the next run on the same findings
  directory adopts it (its new inputs into the corpus, its artifacts triaged) and
  removes it. So concurrent campaigns never touch each other's files, and a killed one
  loses nothing. The run directory's seen/ is the drivers' COPYFUZZ_SEEN: each (class,
  fault pc) stops an engine once, later inputs showing it are only counted there
  (fuzz/driver.c), so a campaign keeps going at full speed on a routine full of bugs;
- the regressions directory (regressions.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import secrets
import shutil
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import atomic, build, corpus, envs, fuzzinput, known, paths, records, regressions
from .audit import Audit
from .coverage import Coverage, from_snapshots
from .errors import CopyfuzzError
from .routines import Routine
from .spec import Spec, format_spec, from_case, parse_fields, parse_spec_line
from .triage import CampaignFinding, fault_pc_of, run_specs, run_specs_until, sweep_order, triage
from .ui import emit, escape, stdout_console

RUNS = ".runs"
RUN_LOCK = "lock"
UNTRIAGED = "untriaged"  # in the findings directory: what the triage time did not cover


def default_triage_s(time_s: float) -> float:
    """--triage-time's default: 10 % of the campaign's time, at least 5 s."""
    return max(5.0, time_s / 10)


class RunDir:
    """A run's private directory under <findings>/.runs/, locked while the run lives."""

    def __init__(self, findings_dir: Path) -> None:
        name = f"{os.getpid()}-{secrets.token_hex(4)}"
        self.path = findings_dir / RUNS / name
        # Made and locked under a hidden name, then renamed: another run never sees an
        # unlocked run directory that is still being set up (dead_runs skips dot names).
        new = findings_dir / RUNS / f".new-{name}"
        try:
            new.mkdir(parents=True)
            fd = atomic.try_lock(new / RUN_LOCK)
            assert fd is not None  # a fresh name: nobody else can hold it
            self._lock_fd: int | None = fd
            for sub in ("staging", "coverage", "logs", "seen"):
                (new / sub).mkdir()
            os.rename(new, self.path)  # the lock is on the file, not the name: still held
        except OSError as e:
            raise CopyfuzzError(f"cannot create {self.path}: {e.strerror or e}") from e

    @property
    def staging(self) -> Path:
        """Where libFuzzer writes new inputs, until the tool moves them into the corpus."""
        return self.path / "staging"

    @property
    def coverage(self) -> Path:
        """Where the drivers write their coverage snapshots (struct cf_cov_snapshot)."""
        return self.path / "coverage"

    @property
    def logs(self) -> Path:
        return self.path / "logs"

    @property
    def seen(self) -> Path:
        """The drivers' claimed (class, fault pc) pairs and their counts (COPYFUZZ_SEEN)."""
        return self.path / "seen"

    def close(self) -> None:
        """Remove the run directory (what it held has been taken in by then)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


_SEEN_NAME = re.compile(r"^(?P<cls>[a-z-]+)@0x(?P<pc>[0-9a-f]+)$")


@dataclass
class Seen:
    """What the drivers saw of one (class, fault pc): inputs, and when it was claimed."""

    count: int = 0
    claimed_at: float | None = None  # wall-clock time of the claim (the first occurrence)


def read_seen(seen_dir: Path) -> dict[tuple[str, int], Seen]:
    """(class, raw fault pc) -> Seen, from a COPYFUZZ_SEEN directory (fuzz/driver.c):
    `<class>@0x<pc>` is the claim, `<class>@0x<pc>.count` a page whose first 8 bytes count
    the inputs (native byte order: the driver runs on this host)."""
    out: dict[tuple[str, int], Seen] = {}
    if not seen_dir.is_dir():
        return out
    for path in seen_dir.iterdir():
        name, count_file = path.name.removesuffix(".count"), path.name.endswith(".count")
        m = _SEEN_NAME.match(name)
        if not m:
            continue
        entry = out.setdefault((m["cls"], int(m["pc"], 16)), Seen())
        try:
            if count_file:
                with path.open("rb") as f:
                    head = f.read(8)
                entry.count = struct.unpack("=Q", head)[0] if len(head) == 8 else 0
            else:
                entry.claimed_at = path.stat().st_mtime
        except OSError:
            continue
    return out


def dead_runs(findings_dir: Path) -> list[Path]:
    """Run directories whose run is gone (killed before it could clean up)."""
    out = []
    for run in sorted((findings_dir / RUNS).iterdir()) if (findings_dir / RUNS).is_dir() else []:
        if not run.is_dir() or run.name.startswith("."):  # a run still being set up
            continue
        fd = atomic.try_lock(run / RUN_LOCK)
        if fd is not None:  # nobody holds it: its run is dead
            os.close(fd)
            out.append(run)
    return out


@dataclass
class Campaign:
    root: Path
    routine: Routine
    profile: str
    seed: int
    corpus: Path
    findings_dir: Path
    regressions: Path
    engine: str
    max_len: int
    until: frozenset[str] = frozenset()  # stop at the first finding of one of these classes
    granule: int = 0  # --granule 16: inputs may ask for faults at MTE tag granules (COPYFUZZ_GRANULE)
    as_json: bool = False
    executions: int = 0
    elapsed_s: float = 0.0  # from the engines' start to the end of the triage
    engine_s: float = 0.0  # of that, the engines' time (--time, or less): what exec/s is over
    rounds: int = 0
    seeded: int = 0
    found: list[CampaignFinding] = field(default_factory=list)
    not_reproduced: list[str] = field(default_factory=list)  # artifacts the engine alone reported
    unreproduced_specs: set[str] = field(default_factory=set)  # their cases (format_spec)
    untriaged: list[str] = field(default_factory=list)  # finding files kept, not triaged: --until was met
    triage_s: float = math.inf  # --triage-time: triage goes on this long past the engines' end
    triage_deadline: float = math.inf  # then (monotonic): nothing more is run; set by start_clock()
    out_of_time: list[str] = field(default_factory=list)  # untriaged spec files the deadline left
    deferred_specs: set[str] = field(default_factory=set)  # their cases (format_spec)
    triaged_specs: set[str] = field(default_factory=set)  # cases handed to triage in time (format_spec)
    audit: Audit | None = None
    coverage: Coverage | None = None
    run: RunDir | None = None
    baseline: known.Baseline | None = None  # --known: findings that do not fail the campaign
    started: float = field(default_factory=time.monotonic)  # the engine's start (monotonic)
    stopped_at: float | None = None  # when the engines had ended, before the triage after them
    started_wall: float = field(default_factory=time.time)  # the same moment, wall clock
    seen: dict[tuple[str, int], Seen] = field(default_factory=dict)  # the drivers' counts
    adopted: dict[tuple[str, int], int] = field(default_factory=dict)  # counts of runs killed before

    def start_clock(self, time_s: float = math.inf) -> None:
        """The engines start now and run time_s: times to first occurrence count from here,
        and the triage ends triage_s after the engines (the command's promise: --time T
        ends by T plus the triage time, whatever the number of findings)."""
        self.started, self.started_wall = time.monotonic(), time.time()
        self.triage_deadline = self.started + time_s + self.triage_s

    def engines_stopped(self) -> None:
        """The engines (of the last round) have ended: what is left is the triage."""
        self.stopped_at = time.monotonic()

    @property
    def out_of_triage_time(self) -> bool:
        return time.monotonic() >= self.triage_deadline

    def run_in_time(self, specs: list[Spec]) -> list[records.Result]:
        """Each case through one serve, while the triage time lasts: the results of those
        run by then (none once it is over)."""
        return run_specs_until(self.root, self.routine, self.profile, specs, self.triage_deadline)

    def defer(self, failures: list[tuple[Spec, list[str]]]) -> None:
        """Failures the triage time did not cover, each (its case, the classes its source
        saw): their cases saved, not run, under UNTRIAGED/ (replay reads them), and listed
        in the report. One file per set of classes, so one write (and fsync) for a whole
        batch: forty of them, one a case, took 5.7 s past the deadline on a loaded machine."""
        assert self.run is not None
        by_classes: dict[tuple[str, ...], list[Spec]] = {}
        for spec, classes in failures:
            line = format_spec(spec)
            if line in self.deferred_specs or line in self.triaged_specs:
                continue  # the same case from two sources (an AFL++ crash and its driver's file)
            self.deferred_specs.add(line)
            by_classes.setdefault(tuple(classes), []).append(spec)
        for seen, specs in by_classes.items():
            path = regressions.save_untriaged(
                self.findings_dir / UNTRIAGED, self.routine, specs, engine=self.engine, profile=self.profile,
                classes=list(seen), why=f"the triage time (--triage-time {self.triage_s:g} s) was used up",
                tag=f"{self.run.path.name}-{len(self.out_of_time) + 1}")
            self.out_of_time.append(str(path))

    def start(self) -> RunDir:
        for directory in (self.corpus, self.findings_dir, self.regressions):
            atomic.remove_stale_temporaries(directory)  # what killed runs were writing
        self.run = RunDir(self.findings_dir)
        return self.run

    def close(self) -> None:
        if self.run is not None:
            self.read_seen()
            self.run.close()
            self.run = None

    @property
    def corpus_size(self) -> int:
        return corpus.size(self.corpus)

    @property
    def until_met(self) -> bool:
        return any(f.cls in self.until or set(f.classes) & self.until for f in self.found)

    def finding_keys(self, f: CampaignFinding) -> list[known.Finding]:
        """A finding's keys: each of its error classes at its fault pc."""
        pc = known.pc_of_described(f.fault_pc)
        return [known.Finding(self.routine.name, cls, pc) for cls in f.classes or [f.cls]]

    def known_by(self, f: CampaignFinding) -> list[known.Entry] | None:
        """The --known lines accepting each of the finding's classes; None when one of
        them is new (or there is no baseline)."""
        if self.baseline is None:
            return None
        entries = [self.baseline.match(k) for k in self.finding_keys(f)]
        return [e for e in entries if e is not None] if all(entries) else None

    @property
    def new_found(self) -> list[CampaignFinding]:
        """The findings that decide the exit status: those no --known line accepts."""
        return [f for f in self.found if self.known_by(f) is None]

    def write_known(self, path: Path) -> None:
        """--write-known: the campaign's unique findings (class, fault pc)."""
        known.write(path, [k for f in self.found for k in self.finding_keys(f)], [self.routine.name])

    def require_a_run(self, time_s: float) -> None:
        """A campaign that ran no input has no verdict, whatever its engine said: refuse
        it (exit 2) rather than report "findings: none". The engines' counts come from
        the engine (AFL++'s fuzzer_stats, which an instance stopped in its dry run may
        never write); the drivers' own count of cases (the coverage snapshots) stands in
        for a count of 0."""
        if self.executions == 0 and self.coverage is not None:
            self.executions = self.coverage.cases
        if self.executions or self.found or self.out_of_time or self.not_reproduced:
            return
        logs = f"; afl-fuzz's logs are in {self.findings_dir / '.logs'}" if self.engine == "afl" else ""
        raise CopyfuzzError(f"no verdict: {self.engine} ran no input in {time_s:g} s (a machine too busy, or an "
                            f"engine slow to start{logs}); run it again with a longer --time")

    def read_coverage(self) -> Coverage | None:
        if self.audit is not None and self.run is not None:
            self.coverage = from_snapshots(self.audit, self.run.coverage) or self.coverage
        return self.coverage

    def read_seen(self) -> None:
        if self.run is not None:
            self.seen = read_seen(self.run.seen)

    def adopt_seen(self, seen_dir: Path) -> None:
        """The counts of a run killed before this one (its claims are not this run's)."""
        for key, entry in read_seen(seen_dir).items():
            self.adopted[key] = self.adopted.get(key, 0) + entry.count

    def campaign_env(self) -> dict[str, str]:
        """The drivers' environment for the campaign itself: the run directory's findings,
        coverage and seen/ (so a (class, fault pc) is reported once)."""
        assert self.run is not None
        return self.driver_env(self.run.path.resolve(), self.run.coverage.resolve(), self.run.seen.resolve())

    def driver_env(self, findings: Path | str, coverage_dir: Path | None = None,
                   seen: Path | None = None) -> dict[str, str]:
        """The fuzz driver's environment (the variables: fuzz/envs.def). seen: the drivers
        count a (class, fault pc) claimed there and go on; None: every finding aborts (a
        single input re-run)."""
        # The drivers stop once this process has ended (COPYFUZZ_WATCH_PID), whoever their parent.
        # The routine's own QEMU (the driver's default is qemu-riscv64): its program only,
        # COPYFUZZ_QEMU takes no options; -cpu goes through QEMU_CPU below.
        qemu = build.qemu_command(self.routine.xlen, self.routine.arch)[0]
        env = envs.driver_env(executor=self.root / self.routine.elf, kind=self.routine.kind,
                              profile=self.profile, plugin=paths.plugin(self.root), findings=findings,
                              max_len=self.max_len, coverage=coverage_dir, watch_pid=os.getpid(), seen=seen,
                              qemu=qemu, granule=self.granule or None)
        # The routine's ISA (--isa): qemu-user takes -cpu from QEMU_CPU, which the driver's
        # executor inherits.
        if self.routine.qemu_cpu:
            env["QEMU_CPU"] = self.routine.qemu_cpu
        return env

    def triage(self, candidates: list[Spec], artifact: Path | None = None,
               pick: Callable[[list[str]], str] | None = None, move: bool = True,
               seen: list[str] | None = None) -> CampaignFinding | None:
        """One failure through the shared triage path; kept and printed. move: the artifact
        leaves the run directory for the findings directory (AFL++'s stay in its output).
        seen: the classes a run showed already (saved with it if it is deferred)."""
        kept = keep_artifact(self.findings_dir, artifact) if artifact is not None and move else artifact
        if self.out_of_triage_time:
            self.defer([(s, seen or []) for s in candidates])
            return None
        self.triaged_specs |= {format_spec(s) for s in candidates}
        found = triage(self.root, self.routine, self.profile, self.regressions, self.engine, candidates,
                       str(kept or ""), pick, self.triage_deadline)
        if found is None:
            self.unreproduced_specs |= {format_spec(s) for s in candidates}
            if kept is not None:
                self.not_reproduced.append(str(kept))
                if not self.as_json:
                    print(f"copyfuzz: {kept}: the engine reported it, but it does not reproduce alone "
                          f"(not saved as a finding)", file=sys.stderr)
            return None
        found.at_s = round(time.monotonic() - self.started, 2)
        self.found.append(found)
        if not self.as_json:
            what = "new regression" if found.new else "known, as"
            print(f"finding: {','.join(found.classes)} {found.spec} ({what} {found.regression})", file=sys.stderr)
        return found

    def kept_after_until(self, path: Path) -> bool:
        """--until has what it asked for: a finding file after that stays on disk, listed as
        untriaged, and is not triaged (True)."""
        if self.until_met:
            self.untriaged.append(str(path))
        return self.until_met

    def decode(self, data: bytes) -> Spec:
        """The case an input of this campaign is (as its drivers decode it)."""
        return fuzzinput.decode(self.root, data, self.routine.kind, self.max_len, self.routine.name, self.granule)

    def spec_of(self, case: records.Case) -> Spec:
        return from_case(self.routine.name, case)

    def take_driver_findings(self, source: Path, alone: bool = False) -> None:
        """The drivers' .finding files out of source into the findings directory; a finding
        whose (class, fault pc) no triaged artifact holds is triaged from its spec line. A
        driver writes that file before it claims a pair, so a claimed pair is never lost
        for want of an engine artifact (afl-fuzz's dry run skips a crashing seed unsaved;
        a driver killed between its claim and its abort saves nothing). alone: the files
        are the only report (COPYFUZZ_ON_FINDING=go-on), so one that does not reproduce is
        reported as the engine's artifact would be."""
        kept = [keep_artifact(self.findings_dir, p)
                for p in sorted(source.glob(f"driver-*{regressions.FINDING_SUFFIX}"))]
        kept = [p for p in kept if not self.kept_after_until(p)]  # then none is even run
        specs: list[tuple[Path, Spec, list[str]]] = []  # with the classes the driver saw
        for path in kept:
            fields = regressions.read_finding(path)
            try:
                spec = parse_fields(self.routine.name, self.routine.kind, fields.get("spec", ""))
                if spec.granule and not self.granule:  # no driver of this campaign wrote it
                    raise CopyfuzzError("a granule case, and this campaign's faults are at pages")
            except (ValueError, CopyfuzzError) as e:
                print(f"copyfuzz: warning: {path}: not a case of this campaign ({e}): kept, not triaged",
                      file=sys.stderr)
                continue
            specs.append((path, spec, [c for c in fields.get("classes", "").split(",") if c]))
        # A driver claims a pair once, so its file of a pair a triaged artifact holds is
        # only that claim (covered); one that does not reproduce is the engine's word only
        # when the files are the only report (alone).
        self.triage_groups(specs, unreproduced=alone, covered=True)

    def triage_groups(self, failures: list[tuple[Path, Spec, list[str]]], *, unreproduced: bool,
                      covered: bool) -> None:
        """Group, then triage: the one path of a batch of failures (AFL++'s crashes, the
        drivers' .finding files), each (its file, its case, the classes its source saw).
        Each case runs alone while the triage time lasts (those it does not reach are
        deferred); the ones that show an error class are grouped by (first class, fault
        pc) and each group's smallest case (sweep_order) is triaged, filed under that class.
        unreproduced: a case that shows nothing is triaged too (reported as not reproduced,
        once a case). covered: a group whose pair a finding holds (found before or in this
        batch) is not triaged again. With --until met, a file not triaged yet stays (listed
        untriaged)."""
        results = self.run_in_time([s for _, s, _ in failures])
        late = [(spec, seen) for _, spec, seen in failures[len(results):]]  # the triage time ran out first
        xlen = self.routine.xlen
        groups: dict[tuple[str, int], tuple[Path, Spec, records.Result]] = {}
        for (path, spec, _), result in zip(failures, results, strict=False):
            if not result.errors:  # serve alone does not show it: the engine's word only
                if unreproduced and format_spec(spec) not in self.unreproduced_specs \
                        and not self.kept_after_until(path):
                    if self.out_of_triage_time:
                        late.append((spec, []))
                    else:
                        self.triage([spec], path, move=False)
                continue
            key = (result.error_list[0], fault_pc_of(result))
            if key not in groups or sweep_order(spec, xlen) < sweep_order(groups[key][1], xlen):
                groups[key] = (path, spec, result)
        held = {(cls, known.address_of_described(f.fault_pc)) for f in self.found for cls in f.classes}
        for (cls, pc), (path, spec, result) in groups.items():
            if self.kept_after_until(path) or (covered and (cls, pc) in held):
                continue
            if self.out_of_triage_time:
                late.append((spec, result.error_list))
                continue
            found = self.triage([spec], path, move=False, pick=filed_under(cls), seen=result.error_list)
            if found is not None:
                held |= {(c, known.address_of_described(found.fault_pc)) for c in found.classes}
        if late:
            self.defer(late)

    def unique(self) -> list[UniqueFinding]:
        return unique_findings(self)


@dataclass
class UniqueFinding:
    """One (class, fault pc) of a campaign: the inputs that showed it (the drivers' count,
    at least the times it was triaged), seconds to its first occurrence, its smallest
    reproducer (sweep_order) and the regression that holds it."""

    cls: str
    fault_pc: str  # as triage describes it: `0x1234 (sym+0x10)`, "" without a fault
    count: int
    first_s: float
    spec: str
    classes: list[str]
    regression: str
    new: bool
    artifact: str

    known_by: list[known.Entry] = field(default_factory=list)  # --known lines accepting it
    shrink_cut: bool = False  # its smallest reproducer's shrinking was cut short by the triage time
    faults: list[dict[str, object]] = field(default_factory=list)  # that reproducer's, in order (known.fault_trail)

    @property
    def key(self) -> str:
        """`CLASS SYMBOL+OFFSET` (`CLASS *` without a fault), as a baseline line names it."""
        return known.key_text(self.cls, known.pc_of_described(self.fault_pc))

    def to_json(self) -> dict[str, object]:
        return {"key": self.key, "class": self.cls, "fault_pc": self.fault_pc or None, "count": self.count,
                "first_s": self.first_s, "spec": self.spec, "classes": self.classes,
                "regression": self.regression, "new": self.new, "artifact": self.artifact,
                "known": bool(self.known_by), "known_by": [e.source for e in self.known_by] or None,
                "shrink_cut": self.shrink_cut, "faults": self.faults or None}


def filed_under(cls: str) -> Callable[[list[str]], str]:
    """A triage's pick: the finding filed under cls while its case still shows it."""
    return lambda classes: cls if cls in classes else classes[0]


def unique_findings(c: Campaign) -> list[UniqueFinding]:
    """Each (class, fault pc) the campaign reproduced, once, in the order found."""
    out: dict[tuple[str, int], UniqueFinding] = {}

    def order(spec: str) -> tuple[int, ...]:
        try:
            return sweep_order(parse_spec_line(spec, c.routine), c.routine.xlen)
        except (ValueError, CopyfuzzError):
            return (1 << 62,)

    for f in c.found:
        key = (f.cls, known.address_of_described(f.fault_pc))
        u = out.get(key)
        if u is None:
            u = out[key] = UniqueFinding(f.cls, f.fault_pc, 0, f.at_s, f.spec, f.classes, f.regression, f.new,
                                         f.artifact, shrink_cut=f.shrink_cut, faults=f.faults)
        u.count += 1
        u.new |= f.new
        if order(f.spec) < order(u.spec):
            u.spec, u.classes, u.regression, u.artifact = f.spec, f.classes, f.regression, f.artifact
            u.shrink_cut, u.faults = f.shrink_cut, f.faults
        u.known_by = u.known_by or c.known_by(f) or []
    for key, u in out.items():
        entry = c.seen.get(key)
        u.count = max(u.count, (entry.count if entry else 0) + c.adopted.get(key, 0))
        if entry is not None and entry.claimed_at is not None:
            u.first_s = max(0.0, min(u.first_s, round(entry.claimed_at - c.started_wall, 2)))
    return list(out.values())


def keep_artifact(findings_dir: Path, artifact: Path) -> Path:
    """An engine's artifact, out of a run directory into the findings directory (an atomic
    rename; libFuzzer names artifacts by their hash, so a name taken holds the same bytes)."""
    if artifact.parent == findings_dir:
        return artifact
    dest = findings_dir / artifact.name
    try:
        os.replace(artifact, dest)
    except OSError as e:
        raise CopyfuzzError(f"cannot move {artifact} to {dest}: {e.strerror or e}") from e
    return dest


def regression_specs(c: Campaign) -> list[tuple[regressions.Regression, Spec]]:
    """This build's regressions and their cases. One whose spec does not parse is damaged:
    refused, as replay does (a finding would otherwise be filed as saved before under it)."""
    r = c.routine
    specs: list[tuple[regressions.Regression, Spec]] = []
    for reg in regressions.for_routine(c.regressions, r):
        try:
            specs.append((reg, parse_fields(r.name, r.kind, reg.fields)))
        except CopyfuzzError as e:
            raise CopyfuzzError(f"{reg.path}: {e}") from None
    return specs


def seed_corpus(c: Campaign, specs: list[tuple[regressions.Regression, Spec]]) -> int:
    """Encodings of this routine's regressions (regression_specs), into an empty corpus. A
    regression that still reproduces is counted as a known finding instead: in the
    corpus, it would stop every libFuzzer round as soon as the corpus is loaded."""
    r = c.routine
    if c.corpus_size:
        return 0
    seeds: list[tuple[regressions.Regression, Spec, bytes]] = []
    for reg, spec in specs:
        if spec.granule and not c.granule:  # an input of this campaign cannot ask for it
            continue
        try:
            seeds.append((reg, spec, fuzzinput.encode(spec)))
        except ValueError:  # a case an input cannot ask for (n above 65535): no seed
            continue
    if not seeds:
        return 0
    count = 0
    for (reg, spec, data), result in zip(seeds, run_specs(c.root, r, c.profile, [s for _, s, _ in seeds]), strict=True):
        if result.errors:
            classes = result.error_list
            c.found.append(CampaignFinding(reg.cls or classes[0], classes, format_spec(spec),
                                           reg.header.get("fault-pc", ""), "", str(reg.path), False))
            continue
        count += corpus.add(c.corpus, data, prefix=corpus.SEED_PREFIX)
    return count


def status_line(c: Campaign, started: float, total_s: int, execs: int, rate: float, extra: str) -> None:
    """One live status line on stderr: executions, rate, the routine's coverage, findings."""
    cov = c.read_coverage()
    where = f"  insns {cov.executed}/{cov.instructions}  edges {cov.edges_covered}/{cov.edges}" if cov else ""
    sys.stderr.write(f"\r\x1b[K{c.routine.name}: {execs:,} execs  {rate:,.0f}/s{where}  {extra}"
                     f"  findings {len(c.found)}  {time.monotonic() - started:.0f}/{total_s} s")
    sys.stderr.flush()


def clear_status() -> None:
    sys.stderr.write("\r\x1b[K")
    sys.stderr.flush()


def report(c: Campaign) -> None:
    spent = c.engine_s or c.elapsed_s
    rate = c.executions / spent if spent > 0 else 0.0
    by_class: dict[str, int] = {}
    for f in c.found:
        by_class[f.cls] = by_class.get(f.cls, 0) + 1
    known_by = {id(f): c.known_by(f) for f in c.found}
    unique = c.unique()
    if c.as_json:
        print(json.dumps({
            "routine": c.routine.name, "engine": c.engine, "profile": c.profile, "seed": c.seed,
            "elapsed_s": round(c.elapsed_s, 2), "engine_s": round(spent, 2), "rounds": c.rounds,
            "executions": c.executions,
            "exec_per_s": round(rate, 1), "corpus": str(c.corpus), "corpus_size": c.corpus_size,
            "seeded": c.seeded, "findings_dir": str(c.findings_dir), "findings": by_class,
            "coverage": c.coverage.to_json() if c.coverage else None,
            "finds": [{**dataclasses.asdict(f), "known": known_by[id(f)] is not None,
                       "known_by": [e.source for e in known_by[id(f)] or []] or None} for f in c.found],
            "unique": [u.to_json() for u in unique],
            "known": c.baseline.to_json() if c.baseline is not None else None,
            "not_reproduced": c.not_reproduced,
            "until": sorted(c.until), "until_met": c.until_met, "untriaged": c.untriaged,
            "triage_time_s": c.triage_s, "not_triaged_in_time": c.out_of_time,
            "not_triaged_cases": len(c.deferred_specs),
            "engines_stopped_s": round(c.stopped_at - c.started, 2) if c.stopped_at is not None else None,
        }, indent=2))
        return
    console = stdout_console()
    after = c.elapsed_s - spent
    then = f", then {after:.0f} s of triage" if after >= 0.5 else ""
    emit(console, f"[bold]{c.routine.name}[/]: {c.executions:,} executions in {spent:.0f} s "
                  f"({rate:,.0f}/s){then}, {c.rounds} round{'s' * (c.rounds != 1)}, corpus {c.corpus_size} inputs "
                  f"in {c.corpus}")
    if c.coverage is not None:
        emit(console, f"  coverage: {c.coverage.line()}")
    for artifact in c.not_reproduced:
        emit(console, f"  [yellow]not reproduced[/]: {artifact} (the engine's word alone; not a finding)")
    if c.untriaged:
        emit(console, f"  {len(c.untriaged)} more finding file{'s' * (len(c.untriaged) != 1)} kept under "
                      f"{c.findings_dir}, not triaged (--until was met)")
    if c.out_of_time:
        where = Path(c.out_of_time[0]).parent
        cases, files = len(c.deferred_specs), len(c.out_of_time)
        emit(console, f"  [red]{cases} failure{'s' * (cases != 1)} not triaged[/] ({files} file{'s' * (files != 1)}): "
                      f"the triage time (--triage-time {c.triage_s:g} s) was used up; saved unshrunk and not "
                      f"re-run in {where}; replay them with: copyfuzz replay {where}")
    if not c.found:
        emit(console, "  findings: none triaged" if c.out_of_time else "  findings: none")
        return
    for cls, count in by_class.items():
        accepted = sum(1 for f in c.found if f.cls == cls and known_by[id(f)] is not None)
        color = "yellow" if accepted == count else "red"
        note = f" ({'all' if accepted == count else accepted} known)" if accepted else ""
        emit(console, f"  [{color}]{cls}[/]: {count} finding{'s' * (count != 1)}{note}")
    emit(console, f"  unique findings (class, fault pc): {len(unique)}")
    for u in unique:
        saved = "new regression" if u.new else "saved before"
        why = f"  [yellow]{', '.join(known.reason(e) for e in u.known_by)}[/]" if u.known_by else ""
        cut = " (shrinking cut short: the triage time was used up)" if u.shrink_cut else ""
        emit(console, f"    [{'yellow' if u.known_by else 'red'}]{u.key}[/]: {u.count:,} input{'s' * (u.count != 1)}, "
                      f"first after {u.first_s:.1f} s; smallest {u.spec}{cut}{why}")
        emit(console, f"      {u.regression} ({saved})")
        if u.faults:  # its key is the first fault; a later one's fixup may have made the return
            emit(console, f"      faults in order: {escape(known.trail_text(u.faults))}")
    if c.baseline is not None:
        fresh = len(c.new_found)
        emit(console, f"  known findings ({c.baseline.path}): {len(c.found) - fresh} accepted, "
                      f"{'[red]' if fresh else ''}{fresh} new{'[/]' if fresh else ''}")
    emit(console, f"  artifacts in {c.findings_dir}; replay with: copyfuzz replay {c.regressions}")
