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
  loses nothing;
- the regressions directory (regressions.py).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import atomic, corpus, envs, fuzzinput, known, paths, records, regressions
from .audit import Audit
from .coverage import Coverage, from_snapshots
from .errors import CopyfuzzError
from .routines import Routine
from .spec import Spec, format_spec, from_case, parse_fields
from .triage import CampaignFinding, run_specs, triage
from .ui import emit, stdout_console

RUNS = ".runs"
RUN_LOCK = "lock"


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
            for sub in ("staging", "coverage", "logs"):
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

    def close(self) -> None:
        """Remove the run directory (what it held has been taken in by then)."""
        shutil.rmtree(self.path, ignore_errors=True)
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


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
    as_json: bool = False
    executions: int = 0
    elapsed_s: float = 0.0
    rounds: int = 0
    seeded: int = 0
    found: list[CampaignFinding] = field(default_factory=list)
    not_reproduced: list[str] = field(default_factory=list)  # artifacts the engine alone reported
    audit: Audit | None = None
    coverage: Coverage | None = None
    run: RunDir | None = None
    baseline: known.Baseline | None = None  # --known: findings that do not fail the campaign

    def start(self) -> RunDir:
        for directory in (self.corpus, self.findings_dir, self.regressions):
            atomic.remove_stale_temporaries(directory)  # what killed runs were writing
        self.run = RunDir(self.findings_dir)
        return self.run

    def close(self) -> None:
        if self.run is not None:
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

    def read_coverage(self) -> Coverage | None:
        if self.audit is not None and self.run is not None:
            self.coverage = from_snapshots(self.audit, self.run.coverage) or self.coverage
        return self.coverage

    def driver_env(self, findings: Path | str, coverage_dir: Path | None = None) -> dict[str, str]:
        """The fuzz driver's environment (the variables: fuzz/envs.def)."""
        # The drivers stop once this process has ended (COPYFUZZ_WATCH_PID), whoever their parent.
        env = envs.driver_env(executor=self.root / self.routine.elf, kind=self.routine.kind,
                              profile=self.profile, plugin=paths.plugin(self.root), findings=findings,
                              max_len=self.max_len, coverage=coverage_dir, watch_pid=os.getpid())
        # The routine's ISA (--isa): qemu-user takes -cpu from QEMU_CPU, which the driver's
        # executor inherits.
        if self.routine.qemu_cpu:
            env["QEMU_CPU"] = self.routine.qemu_cpu
        return env

    def triage(self, candidates: list[Spec], artifact: Path | None = None,
               pick: Callable[[list[str]], str] | None = None, move: bool = True) -> CampaignFinding | None:
        """One failure through the shared triage path; kept and printed. move: the artifact
        leaves the run directory for the findings directory (AFL++'s stay in its output)."""
        kept = keep_artifact(self.findings_dir, artifact) if artifact is not None and move else artifact
        found = triage(self.root, self.routine, self.profile, self.regressions, self.engine, candidates,
                       str(kept or ""), pick)
        if found is None:
            if kept is not None:
                self.not_reproduced.append(str(kept))
                if not self.as_json:
                    print(f"copyfuzz: {kept}: the engine reported it, but it does not reproduce alone "
                          f"(not saved as a finding)", file=sys.stderr)
            return None
        self.found.append(found)
        if not self.as_json:
            what = "new regression" if found.new else "known, as"
            print(f"finding: {','.join(found.classes)} {found.spec} ({what} {found.regression})", file=sys.stderr)
        return found

    def spec_of(self, case: records.Case) -> Spec:
        return from_case(self.routine.name, case)


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


def seed_corpus(c: Campaign) -> int:
    """Encodings of this routine's regressions, into an empty corpus. A regression that
    still reproduces is counted as a known finding instead: in the corpus, it would stop
    every libFuzzer round as soon as the corpus is loaded."""
    if c.corpus_size:
        return 0
    r = c.routine
    seeds: list[tuple[regressions.Regression, Spec, bytes]] = []
    for reg in regressions.for_routine(c.regressions, r):
        try:
            spec = parse_fields(r.name, r.kind, reg.fields)
            seeds.append((reg, spec, fuzzinput.encode(spec)))
        except (ValueError, CopyfuzzError):
            continue
    if not seeds:
        return 0
    count = 0
    for (reg, spec, data), result in zip(seeds, run_specs(c.root, r, c.profile, [s for _, s, _ in seeds])):
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
    rate = c.executions / c.elapsed_s if c.elapsed_s > 0 else 0.0
    by_class: dict[str, int] = {}
    for f in c.found:
        by_class[f.cls] = by_class.get(f.cls, 0) + 1
    known_by = {id(f): c.known_by(f) for f in c.found}
    if c.as_json:
        print(json.dumps({
            "routine": c.routine.name, "engine": c.engine, "profile": c.profile, "seed": c.seed,
            "elapsed_s": round(c.elapsed_s, 2), "rounds": c.rounds, "executions": c.executions,
            "exec_per_s": round(rate, 1), "corpus": str(c.corpus), "corpus_size": c.corpus_size,
            "seeded": c.seeded, "findings_dir": str(c.findings_dir), "findings": by_class,
            "coverage": c.coverage.to_json() if c.coverage else None,
            "finds": [{**dataclasses.asdict(f), "known": known_by[id(f)] is not None,
                       "known_by": [e.source for e in known_by[id(f)] or []] or None} for f in c.found],
            "known": c.baseline.to_json() if c.baseline is not None else None,
            "not_reproduced": c.not_reproduced,
            "until": sorted(c.until), "until_met": c.until_met,
        }, indent=2))
        return
    console = stdout_console()
    emit(console, f"[bold]{c.routine.name}[/]: {c.executions:,} executions in {c.elapsed_s:.0f} s "
                  f"({rate:,.0f}/s), {c.rounds} round{'s' * (c.rounds != 1)}, corpus {c.corpus_size} inputs "
                  f"in {c.corpus}")
    if c.coverage is not None:
        emit(console, f"  coverage: {c.coverage.line()}")
    for artifact in c.not_reproduced:
        emit(console, f"  [yellow]not reproduced[/]: {artifact} (the engine's word alone; not a finding)")
    if not c.found:
        emit(console, "  findings: none")
        return
    for cls, count in by_class.items():
        accepted = sum(1 for f in c.found if f.cls == cls and known_by[id(f)] is not None)
        color = "yellow" if accepted == count else "red"
        note = f" ({'all' if accepted == count else accepted} known)" if accepted else ""
        emit(console, f"  [{color}]{cls}[/]: {count} finding{'s' * (count != 1)}{note}")
    by_file: dict[str, list[CampaignFinding]] = {}
    for f in c.found:
        by_file.setdefault(f.regression, []).append(f)
    for path, fs in by_file.items():
        first = next((f for f in fs if f.new), fs[0])
        mark = "new" if any(f.new for f in fs) else "saved before"
        entries = known_by[id(first)]
        why = f"  [yellow]{', '.join(known.reason(e) for e in entries)}[/]" if entries else ""
        emit(console, f"    {path} ({mark}, found {len(fs)}x): {first.spec}  fault pc {first.fault_pc or 'none'}"
                      f"{why}")
    if c.baseline is not None:
        fresh = len(c.new_found)
        emit(console, f"  known findings ({c.baseline.path}): {len(c.found) - fresh} accepted, "
                      f"{'[red]' if fresh else ''}{fresh} new{'[/]' if fresh else ''}")
    emit(console, f"  artifacts in {c.findings_dir}; replay with: copyfuzz replay {c.regressions}")
