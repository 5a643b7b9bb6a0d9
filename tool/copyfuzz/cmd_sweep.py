"""`copyfuzz sweep`: run the executors' sweeps, merge shards, report and judge.

Exit 0: every bundled routine clean (and, with mutants, every mutant caught);
1: a routine has findings or a mutant escaped; 2: bad input or build problem.
"""

from __future__ import annotations

import argparse
import json
import secrets
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from . import build, executor, files, infer, known, plan, records, signals, targets
from .audit import Audit, audit_routine
from .decode import Insn
from .elfinfo import Symbolizer, routine_symbolizer, source_lines, symbol_values, where
from .errors import CopyfuzzError
from .executor import NewClassCase
from .findings import FindingsLog
from .known import Entry as KnownEntry
from .options import DEFAULT_MAX_LEN as DEFAULT_MAX_LEN
from .options import SweepOptions
from .reach import PROBE_TIMEOUT_MS, Probe, Reach, probe_lengths, probe_shapes, reach
from .routines import Routine
from .selection import bundled_routines, runnable
from .session import Need, Session, plugin_memory, plugin_runs, routine_argv
from .spec import format_spec, from_case
from .ui import emit, escape, new_table, plural, progress_bar, stdout_console

MESSAGE_LINES = 20  # of what an executor wrote on stdout/stderr, the last lines shown

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


@dataclass
class RoutineSweep:
    """What one routine's (merged) sweep found."""

    routine: Routine
    profile: str
    cases: int = 0
    elapsed_s: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    reproducers: dict[str, NewClassCase] = field(default_factory=dict)
    stderr: list[str] = field(default_factory=list)
    stopped: list[str] = field(default_factory=list)
    deaths: list[str] = field(default_factory=list)  # cases that killed the executor, and how
    audit: Audit | None = None
    memcheck: bool = False
    # The addresses the QEMU plugin saw execute over the sweep (None: not measured,
    # natively or without the audit), and what of the audit's listing that leaves out.
    executed: set[int] | None = None
    reach: Reach | None = None
    granule: int = 0  # records.GRANULE_MTE: faults at tag granules (--granule 16)
    max_len: int = 0  # the exhaustive phase's longest n (routine_max_len)
    # Per class whose reproducer a signal ended (crash, unhandled-fault): the signal, its
    # reason, the pc and the code around it (signals.py).
    ended: dict[str, dict[str, object]] = field(default_factory=dict)
    unfollowed: str = ""  # the audit's indirect jumps it did not follow, said in the text report
    # Per observed class: the fault pc of its reproducer, symbolized (None: it did not
    # fault); per finding class a --known line accepts: that line (known.py).
    pcs: dict[str, str | None] = field(default_factory=dict)
    trails: dict[str, list[dict[str, object]]] = field(default_factory=dict)  # known.fault_trail, per class
    known: dict[str, KnownEntry] = field(default_factory=dict)
    # Another name of the same code (one address in one build) whose sweep this is: the
    # cases ran once, for both names (same_code()).
    same_code_as: str | None = None

    @property
    def audit_problems(self) -> int:
        return len(self.audit.problems) if self.audit else 0

    @property
    def observed(self) -> list[str]:
        seen = set(self.counts) | set(self.reproducers)
        return [c for c in records.CLASS_NAMES if c in seen]

    def is_error(self, cls: str) -> bool:
        return cls in records.CLASS_BY_NAME and bool(
            records.ERROR_MASK[self.profile] & (1 << records.CLASS_BY_NAME[cls].bit)
        )

    @property
    def findings(self) -> dict[str, int]:
        return {c: self.counts.get(c, 0) for c in self.observed if self.is_error(c)}

    @property
    def new_findings(self) -> dict[str, int]:
        """The findings no --known line accepts: these decide the exit status."""
        return {c: n for c, n in self.findings.items() if c not in self.known}

    @property
    def notes(self) -> dict[str, int]:
        return {c: self.counts.get(c, 0) for c in self.observed if not self.is_error(c)}

    @property
    def verdict(self) -> str:
        """findings, clean, or "clean where it ran": a user access or a fixup of the
        routine never ran (other code that never ran is listed, and leaves it clean)."""
        if self.findings:
            return "findings"
        return "clean where it ran" if self.reach is not None and not self.reach.accesses_ran else "clean"

    @property
    def cases_per_s(self) -> float:
        return self.cases / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def spec(self, cls: str) -> str | None:
        found = self.reproducers.get(cls)
        return format_spec(from_case(self.routine.name, found.case)) if found else None

    # -- mutants --
    @property
    def caught(self) -> list[str]:
        return [c for c in self.routine.expect if c in self.observed]

    @property
    def is_caught(self) -> bool:
        return bool(self.routine.expect) and len(self.caught) == len(self.routine.expect)

    @property
    def cases_until_caught(self) -> int | None:
        """Cases of the enumeration, in id order, up to the last expected class's first case."""
        if not self.is_caught or not all(c in self.reproducers for c in self.routine.expect):
            return None
        return max(self.reproducers[c].case.id for c in self.routine.expect) + 1

    @property
    def failed(self) -> bool:
        """What makes the exit status 1."""
        if self.routine.is_mutant:
            return not self.is_caught
        return bool(self.new_findings) or self.audit_problems > 0

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "name": self.routine.name,
            "kind": self.routine.kind,
            "profile": self.profile,
            "cases": self.cases,
            "cases_per_s": round(self.cases_per_s, 1),
            "findings": self.findings,
            # Each finding class once, with the fault pc it is judged by (known.py).
            "unique_findings": [
                {"class": c, "pc": self.pcs.get(c), "faults": self.trails.get(c) or None, "cases": n,
                 "reproducer": self.spec(c),
                 "known": c in self.known, "known_by": self.known[c].source if c in self.known else None}
                for c, n in self.findings.items()],
            "reproducers": {c: self.spec(c) for c in self.observed if c in self.reproducers},
            "notes": self.notes,
            "stopped": self.stopped or None,
            "deaths": self.deaths or None,
            "ended_by": {c: {k: v for k, v in e.items() if k != "code"} for c, e in self.ended.items()} or None,
            "arch": self.routine.arch,
            # what the command line did not say and copyfuzz worked out (infer.py), with why
            "inferred": {"kind": self.routine.kind_reason or None, "arch": self.routine.arch_reason or None},
            "verdict": self.verdict,
            # what of the routine ran (None: not measured: natively, or with --no-audit)
            "ran": (self.reach.to_json(self.audit.sym.describe if self.audit and self.audit.sym else hex)
                    if self.reach is not None else None),
            "xlen": self.routine.xlen,
            "isa": self.routine.isa.march if self.routine.isa else None,
            "qemu_cpu": self.routine.qemu_cpu or None,
            "max_len": self.max_len,
            "memcheck": self.memcheck,
            "granule": self.granule,
            "same_code_as": self.same_code_as,
        }
        if self.audit is not None:
            audit = self.audit.to_json()
            out["audit"] = {"summary": audit["summary"], "problems": audit["problems"]}
        if self.routine.is_mutant:
            out.update(
                mutant=True,
                expect=list(self.routine.expect),
                caught=self.is_caught,
                caught_classes=self.caught,
                cases_until_caught=self.cases_until_caught,
            )
        return out


def check_sweep_args(opts: SweepOptions) -> known.Baseline | None:
    """What can be refused before the build and the sweep; the --known baseline, read."""
    if opts.seed is not None and not opts.random:
        raise CopyfuzzError("--seed only makes sense with --random N")
    if opts.random_max_len is not None and not opts.random:
        raise CopyfuzzError("--random-max-len only makes sense with --random N")
    files.check_dir(opts.findings, "--findings")  # before the build and the sweep
    baseline = known.from_options(opts.known)
    known.check_output(opts.known)
    return baseline


def _chosen(root: Path, opts: SweepOptions) -> list[Routine]:
    target = opts.target
    chosen = bundled_routines(root, opts.routines, target.xlen, isa=target.isa)
    if opts.mutants:
        names = {r.name for r in chosen}
        chosen += [r for r in runnable(root, target.xlen, target.isa) if r.is_mutant and r.name not in names]
    if not chosen:
        raise CopyfuzzError(f"no routines to sweep (nothing under {root / 'arch'})")
    check_granule(opts, chosen)
    return chosen


def check_granule(opts: SweepOptions, chosen: list[Routine]) -> None:
    """--granule 16 needs memory tagging: arm64's MTE."""
    targets.require_mte([(r.name, r.arch) for r in chosen], opts.granule)


def routine_max_len(opts: SweepOptions, routine: Routine) -> int:
    """The sweep's longest n for this routine: --max-len when given, else the default
    lowered to the routine's max-len= line (never below --min-len)."""
    if opts.max_len_given or not routine.max_len:
        return opts.max_len
    return max(opts.min_len, min(opts.max_len, routine.max_len))


def sweep_plan(cfref: plan.CfRef, opts: SweepOptions, routine: Routine, profile: str,
               seed: int) -> plan.SweepPlan:
    return plan.SweepPlan(cfref, routine.kind, profile, routine.xlen, routine_max_len(opts, routine), opts.min_len,
                          opts.random, seed if opts.random else 0, opts.random_max_len, opts.granule)


def _sweep_one(
    root: Path,
    opts: SweepOptions,
    routine: Routine,
    seed: int,
    log: FindingsLog,
    progress: Progress | None,
    cfref: plan.CfRef,
) -> RoutineSweep:
    profile = opts.profile or routine.profile
    out = RoutineSweep(routine, profile, max_len=routine_max_len(opts, routine))
    argv = routine_argv(root, routine)
    task = progress.add_task(routine.name, total=None) if progress else None
    memcheck = uses_memcheck(opts, routine)
    # One plugin memory per shard: the memory audit (natively refused), or the counts alone.
    plugins = ([plugin_memory(root, routine, Need.MEMCHECK if memcheck else Need.COVERAGE) for _ in range(opts.jobs)]
               if memcheck or measures_reach(opts, routine) else None)
    out.memcheck = memcheck
    out.granule = opts.granule
    try:
        # A mutant is caught once its expected classes show: no need to finish the sweep.
        stop_mask = records.class_mask(routine.expect) if routine.is_mutant else 0
        events = executor.sweep(argv, sweep_plan(cfref, opts, routine, profile, seed), jobs=opts.jobs,
                                timeout_ms=opts.timeout_ms, stop_mask=stop_mask, plugins=plugins,
                                label=routine.name)
        return consume_events(events, out, log, progress, task)
    finally:
        if plugins is not None and measures_reach(opts, routine):
            out.executed = set().union(*(p.insn_counts() for p in plugins))
        for p in plugins or []:
            p.close()


def same_code(root: Path, chosen: list[Routine]) -> dict[int, int]:
    """Routines of one file whose entry is one address (ENTRY(__asm_copy_to_user)
    ENTRY(__asm_copy_from_user): one body, two names), built alike and judged alike: the
    index of each later one, mapped to the first. Their sweeps would run the same
    instructions on the same cases, so one runs, for both. Decided on both executors: each
    name at one place, the same in each."""
    def alike(r: Routine) -> Routine:
        return replace(r, name="", symbol="", external_elf=None, kind_reason="", arch_reason="")

    twins: dict[int, int] = {}
    for i, r in enumerate(chosen):
        for j in range(i):
            first = chosen[j]
            if j in twins or r.external_elf is None or first.external_elf is None or alike(r) != alike(first):
                continue
            names = {r.symbol, first.symbol}
            places = [symbol_values(root / x.elf, names) for x in (first, r)]
            if all(len(p) == 2 and len(set(p.values())) == 1 for p in places):
                twins[i] = j
                break
    return twins


def shared_sweep(first: RoutineSweep, routine: Routine, log: FindingsLog) -> RoutineSweep:
    """`first`'s sweep as another name's of the same code: its counts and reproducers, the
    reproducers logged under this name too (a spec names the routine it replays)."""
    out = replace(first, routine=routine, audit=None, ended={}, pcs={}, trails={}, known={},
                  same_code_as=first.routine.name)
    for cls, found in first.reproducers.items():
        log.write(routine, out.profile, cls, found.case, found.result)
    return out


def measures_reach(opts: SweepOptions, routine: Routine) -> bool:
    """Does the sweep count what of the routine ran (the plugin, against the audit's
    listing)? Under QEMU with the audit (natively there is no plugin); not for a mutant,
    whose sweep stops at its class."""
    return not opts.no_audit and plugin_runs(routine) and not routine.is_mutant


def uses_memcheck(opts: SweepOptions, routine: Routine) -> bool:
    """--memcheck, or a mutant only the plugin can catch."""
    return opts.memcheck or "memcheck" in routine.needs


def consume_events(events: "Iterator[object]", out: RoutineSweep, log: FindingsLog,
                   progress: Progress | None, task: "TaskID | None") -> RoutineSweep:
    """Fold one routine's merged sweep stream into `out`, logging reproducers first."""
    for event in events:
        if isinstance(event, executor.NewReproducer):
            # On disk first: a sweep killed later still leaves what it found.
            log.write(out.routine, out.profile, event.cls, event.case, event.result)
        elif isinstance(event, executor.Progress):
            if progress is not None and task is not None:
                progress.update(task, completed=event.done, total=event.total or None)
        elif isinstance(event, executor.Finished):
            out.cases = event.cases
            out.elapsed_s = event.elapsed_s
            out.counts = event.counts
            out.reproducers = event.reproducers
            out.stderr = event.stderr
            out.stopped = event.stopped
            out.deaths = event.deaths
    if progress is not None and task is not None:
        progress.update(task, completed=out.cases, total=max(out.cases, 1))
    return out


def run_sweep(root: Path, args: argparse.Namespace) -> int:
    opts = SweepOptions.from_args(args)
    baseline = check_sweep_args(opts)
    chosen = _chosen(root, opts)
    build.build_routines(root, chosen)
    return sweep_and_report(root, opts, chosen, baseline)


def build_plugin_if_needed(root: Path, opts: SweepOptions, chosen: list[Routine]) -> None:
    if any(uses_memcheck(opts, r) or measures_reach(opts, r) for r in chosen):
        build.build_host(root, ["plugin"])


def sweep_routines(root: Path, opts: SweepOptions, chosen: list[Routine], seed: int, log: FindingsLog,
                   progress: Progress | None) -> list[RoutineSweep]:
    """Audit, then sweep, built routines, one after the other (each with --jobs executors);
    what each found, with the audit and the signals that ended reproducers."""
    build_plugin_if_needed(root, opts, chosen)
    cfref = plan.load(root)
    build.check_runners(chosen)
    infer.flush()  # what was worked out about a file's routines, before the work
    audits = {} if opts.no_audit else {r.name: audit_routine(root, r) for r in chosen}
    twins = same_code(root, chosen)
    results: list[RoutineSweep] = []
    for i, routine in enumerate(chosen):
        first = twins.get(i)
        results.append(_sweep_one(root, opts, routine, seed, log, progress, cfref) if first is None
                       else shared_sweep(results[first], routine, log))
    for r in results:
        r.audit = audits.get(r.routine.name)
        if r.audit is not None and r.executed is not None:
            r.reach = reach(r.audit, r.executed, source_lines(root / r.routine.elf))
            if not r.reach.complete and r.same_code_as is None:
                probe_past_the_sweep(root, opts, r, log)
        r.ended = ending_signals(root, r)
        r.unfollowed = unfollowed_jumps(root, r)
        refuse_unrunnable(r)
    return results


def probe_past_the_sweep(root: Path, opts: SweepOptions, r: RoutineSweep, log: FindingsLog) -> None:
    """Where what the sweep never ran does run (reach.probe_shapes at each probe length):
    under the plugin, the first probe case that ran each address, its n narrowed down by
    bisection between the length before (which did not run it) and its own. A probe case
    with a finding is one, as in the sweep: counted, its reproducer on disk first."""
    assert r.reach is not None
    kind, profile = r.routine.kind, r.profile
    lengths = probe_lengths(r.max_len)
    r.reach.probe = probe = Probe(lengths, routine=r.routine.name)
    # Its cases are up to 256 times the sweep's longest: a per-case watchdog of the sweep's
    # 500 ms could call a slow but correct 64 KiB copy on a loaded machine a hang.
    timeout_ms = max(opts.timeout_ms or records.EXEC_TIMEOUT_MS_DEFAULT, PROBE_TIMEOUT_MS)
    # The counts only (--plugin-coverage-only): the probe asks what ran, not what the audit says.
    with Session(root, r.routine, Need.COVERAGE, timeout_ms=timeout_ms) as server:
        plugin = server.plugin
        assert plugin is not None

        targets = {i.addr for i in r.reach.missed}

        def run(case: records.Case) -> set[int] | None:
            """The addresses of what the sweep never ran that the case ran; None when it
            crashed or hung the executor (the probe stops: each such case would cost a
            restart or a timeout)."""
            before = plugin.counts_at(targets)
            case = replace(case, id=probe.cases)
            result = server.run(case)
            probe.cases += 1
            classes = records.class_names(result.classes)
            for cls in filter(r.is_error, classes):
                if cls not in r.reproducers:
                    log.write(r.routine, r.profile, cls, case, result)
                    r.reproducers[cls] = executor.NewClassCase(case, result)
                r.counts[cls] = r.counts.get(cls, 0) + 1
                probe.findings[cls] = probe.findings.get(cls, 0) + 1
            died = {"crash", "hang"} & set(classes)
            if died:
                probe.stopped = f"{'/'.join(sorted(died))} at n={case.n}"
                return None
            return {addr for addr, count in plugin.counts_at(targets).items() if count > before[addr]}

        seen: set[int] = set()
        below = r.max_len  # every shape ran at every n up to here (the sweep), or at `below` (the probe)
        for n in lengths:
            for j, case in enumerate(probe_shapes(kind, profile, n)):
                ran = run(case)
                if ran is None:
                    return
                new = ran - seen
                if not new:
                    continue
                lo, hi, first, first_ran = below, n, case, new
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    shapes = probe_shapes(kind, profile, mid)
                    if j >= len(shapes):
                        break
                    got = run(shapes[j])
                    if got is None:
                        return
                    if got & new:
                        hi, first, first_ran = mid, shapes[j], got & new
                    else:
                        lo = mid
                for addr in new:
                    probe.first[addr] = first if addr in first_ran else case
                seen |= new
            below = n


# A command's addition to the report, from the sweep's results: a JSON key and its value,
# and the lines printed after the table (check --confirm).
Extension = Callable[[list["RoutineSweep"]], tuple[str, object, list[str]]]


def sweep_and_report(root: Path, opts: SweepOptions, chosen: list[Routine], baseline: known.Baseline | None,
                     extend: Extension | None = None) -> int:
    """Audit, then sweep, built routines; report (with what `extend` adds, and judged by
    the --known baseline); the exit status."""
    seed = opts.seed if opts.seed is not None else secrets.randbits(32)
    log = FindingsLog(opts.findings)
    show_progress = not opts.json and sys.stderr.isatty()
    try:
        if show_progress:
            with progress_bar() as progress:
                results = sweep_routines(root, opts, chosen, seed, log, progress)
        else:
            results = sweep_routines(root, opts, chosen, seed, log, None)
    finally:
        log.close()
    for r in results:
        judge_known(root, r, baseline)
    added = extend(results) if extend is not None else None

    if opts.json:
        report = _json_report(opts, seed, results, baseline)
        if added is not None:
            report[added[0]] = added[1]
        if log.error is not None:  # exit 2 below: the one object says why (cli.py prints no second one)
            report.update(error=log.error, details="")
        print(json.dumps(report, indent=2))
    else:
        _print_report(opts, seed, results, log, baseline)
        for line in added[2] if added is not None else []:
            print(line)
    log.check()  # a findings file that could not be written: exit 2, after the results
    if opts.known.write_known is not None:
        known.write(opts.known.write_known, [known.Finding(r.routine.name, c, r.pcs.get(c))
                                       for r in results for c in r.findings],
                    [r.routine.name for r in results])
    return 1 if any(r.failed for r in results) else 0


def _symbolizer(root: Path, r: RoutineSweep) -> Symbolizer | None:
    return r.audit.sym if r.audit is not None else routine_symbolizer(root, r.routine, {})


def judge_known(root: Path, r: RoutineSweep, baseline: known.Baseline | None) -> None:
    """Each class's fault pc (its reproducer's: the first case of the enumeration that
    shows it), and the --known line accepting each finding class, if one does."""
    if not r.reproducers and not r.findings:
        return
    sym = _symbolizer(root, r)
    r.pcs = {cls: known.fault_pc(sym, found.result) for cls, found in r.reproducers.items()}
    r.trails = {cls: known.fault_trail(sym, found.result) for cls, found in r.reproducers.items()}
    for cls in r.findings:
        entry = known.judge(baseline, known.Finding(r.routine.name, cls, r.pcs.get(cls)))
        if entry is not None:
            r.known[cls] = entry


def refuse_unrunnable(r: RoutineSweep) -> None:
    """A crash that is QEMU's lack, not the routine's bug, ends the command in one line."""
    for info in r.ended.values():
        insn = signals.unrunnable(info)
        if insn is not None:
            cpu = r.routine.qemu_cpu or "its default CPU"
            raise CopyfuzzError(
                f"{r.routine.name}: {info['where']}: `{insn}` raised SIGILL ({info['reason']}) under "
                f"{build.routine_prefix(r.routine)[0]} with {cpu}: an instruction this QEMU does not run at EL0 "
                "(an extension it lacks, e.g. FEAT_MOPS, or a privileged one), so the routine cannot be judged "
                "here; another --cpu, a newer QEMU, or a build without it")


def ending_signals(root: Path, r: RoutineSweep) -> dict[str, dict[str, object]]:
    """For each reproducer a signal ended: what signal, why, where, and the code there."""
    out: dict[str, dict[str, object]] = {}
    sym = None
    for cls, found in r.reproducers.items():
        info = signals.ended_by(found.result)
        if info is None:
            continue
        if sym is None:
            sym = _symbolizer(root, r)
        info["where"] = where(sym, found.result.fault_pc)
        info["summary"] = signals.summary(info, sym)
        info["code"] = signals.routine_rows(root, r.routine, sym, found.result.fault_pc)
        out[cls] = info
    return out


def _json_report(opts: SweepOptions, seed: int, results: list[RoutineSweep],
                 baseline: known.Baseline | None) -> dict[str, object]:
    report: dict[str, object] = {
        "profile": opts.profile,  # null: each routine's declared profile
        "max_len": opts.max_len,
        "min_len": opts.min_len,
        "jobs": opts.jobs,
        "xlen": opts.target.xlen,
    }
    if opts.random:
        report["random"] = {"cases": opts.random, "seed": seed, "max_len": opts.random_max_len or 65536}
    report["known"] = baseline.to_json() if baseline is not None else None
    report["routines"] = [r.to_json() for r in results]
    return report


def _classes_cell(counts: dict[str, int], past: frozenset[str] = frozenset()) -> str:
    return ", ".join(f"{c} {n}" + (" (past --max-len)" if c in past else "") for c, n in counts.items())


def _findings_cell(r: RoutineSweep) -> str:
    """New findings in red, known ones (--known) marked so, or clean; a class only the
    probe past the sweep showed is marked so (its cases are longer than --max-len)."""
    if not r.findings:
        return "[green]clean[/]" if r.verdict == "clean" else "[yellow]clean where it ran[/]"
    probe = r.reach.probe if r.reach is not None else None
    past = frozenset(c for c, n in r.findings.items() if probe is not None and probe.findings.get(c) == n)
    new = _classes_cell(r.new_findings, past)
    old = _classes_cell({c: n for c, n in r.findings.items() if c in r.known}, past)
    return ", ".join(filter(None, [f"[red]{new}[/]" if new else "", f"[yellow]{old} (known)[/]" if old else ""]))


def _print_report(opts: SweepOptions, seed: int, results: list[RoutineSweep], log: FindingsLog,
                  baseline: known.Baseline | None) -> None:
    console = stdout_console()
    routines = [r for r in results if not r.routine.is_mutant]
    mutants = [r for r in results if r.routine.is_mutant]
    header = f"max-len {opts.max_len}"
    if opts.min_len:
        header = f"n {opts.min_len}..{opts.max_len}"
    if opts.random:
        header += f", {opts.random} random cases (seed {seed})"
    header += f", {opts.jobs} job{'s' if opts.jobs != 1 else ''}"
    if opts.target.xlen == 32:  # RV32 is RISC-V's name for it; ARM is 32-bit with or without --xlen
        header += ", RV32" if all(r.routine.arch == "riscv" for r in results) else ", 32-bit"
    if opts.file:
        header = f"{opts.file}, {header}"
    if opts.profile:
        header += f", profile {opts.profile} for all"
    if opts.memcheck:
        header += ", memcheck (QEMU plugin)"
    if opts.target.file.cpu:
        header += f", QEMU CPU {opts.target.file.cpu}"
    if opts.granule:
        header += f", faults at {opts.granule}-byte MTE tag granules"

    if routines:
        command = "check" if opts.file else "sweep"
        table = new_table(title=f"{command}: {header}", title_justify="left", show_edge=False, pad_edge=False)
        for column in ("routine", "kind", "profile", "cases", "cases/s", "findings", "notes", "audit"):
            table.add_column(column, justify="right" if column.startswith("cases") else "left")
        for r in routines:
            findings = _findings_cell(r)
            audit = ("[dim]skipped[/]" if r.audit is None else "[green]ok[/]" if not r.audit_problems
                     else f"[red]{plural(r.audit_problems, 'problem')}[/]")
            table.add_row(escape(r.routine.name), r.routine.kind, r.profile, f"{r.cases:,}",
                          f"{r.cases_per_s:,.0f}", findings, _classes_cell(r.notes), audit)
        emit(console, table)
        for r in routines:
            if r.same_code_as is not None:
                emit(console, f"  {escape(r.routine.name)}: the same code as {escape(r.same_code_as)} (one "
                              "address): one sweep ran for both names")
            if r.audit is not None and r.audit.problems:
                _print_audit_problems(console, r)
            if r.unfollowed:
                emit(console, f"  {escape(r.unfollowed)}")
            if r.reach is not None and not r.reach.complete:
                _print_never_ran(console, r)
            elif r.executed is None and not r.routine.is_mutant:
                why = "--no-audit" if opts.no_audit else "natively, no QEMU plugin"
                emit(console, f"  {escape(r.routine.name)}: what of it ran was not measured ({why})")
            if r.observed:
                _print_classes(console, r)
                if log.error is None:
                    emit(console, f"  reproducers appended to {log.path_for(r.routine)}")
            if r.deaths:
                more = f" (and {len(r.deaths) - 1} more cases)" if len(r.deaths) > 1 else ""
                emit(console, f"  [red]crash[/]: {escape(r.deaths[0])}{more}")
            if "max-hangs" in r.stopped:
                emit(console, f"  [red]{r.routine.name}: sweep stopped early, the routine kept hanging[/]")
            if "max-crashes" in r.stopped:
                emit(console, f"  [red]{r.routine.name}: sweep stopped early, the routine kept killing "
                              f"its executor[/]")
    if mutants:
        if routines:
            emit(console)
        table = new_table(title=f"mutants: {header}", title_justify="left", show_edge=False, pad_edge=False)
        for column in ("mutant", "expected", "caught", "verdict", "cases until caught", "reproducer"):
            table.add_column(column, justify="right" if column.startswith("cases") else "left",
                             no_wrap=column == "reproducer")
        for r in mutants:
            verdict = "[green]caught[/]" if r.is_caught else "[bold red]ESCAPED[/]"
            until = r.cases_until_caught
            table.add_row(
                r.routine.name,
                ",".join(r.routine.expect),
                ",".join(r.observed) or "-",
                verdict,
                f"{until:,}" if until is not None else "-",
                r.spec(r.routine.expect[0]) or "-",
            )
        emit(console, table)
    if baseline is not None:
        accepted = sum(len(r.known) for r in results)
        new = sum(len(r.new_findings) for r in results)
        emit(console, f"known findings ({escape(str(baseline.path))}): {accepted} accepted, "
                      f"{'[red]' if new else ''}{new} new{'[/]' if new else ''}")
        unused = baseline.unused()
        for entry in unused[:known.SHOWN_UNUSED]:
            emit(console, f"  [dim]unused: {escape(entry.source)}: {escape(entry.text)}[/]")
        if len(unused) > known.SHOWN_UNUSED:  # every one is in --json's known.unused
            emit(console, f"  [dim]... and {len(unused) - known.SHOWN_UNUSED:,} more unused lines (--json lists "
                          "them all)[/]")
    for r in results:
        for text in r.stderr:
            lines = text.splitlines()
            shown = "\n".join(lines[-MESSAGE_LINES:])
            if len(lines) > MESSAGE_LINES:
                shown = f"({len(lines) - MESSAGE_LINES} lines before)\n{shown}"
            emit(console, f"[dim]{r.routine.name} executor said:[/] {escape(shown)}")


def _print_audit_problems(console: Console, r: RoutineSweep) -> None:
    assert r.audit is not None and r.audit.sym is not None
    emit(console)
    emit(console, f"[bold]{escape(r.routine.name)}[/]: static audit (copyfuzz audit for the listing)")
    for p in r.audit.problems:
        emit(console, f"  [red]audit[/] {p.addr:#x} {escape(r.audit.sym.describe(p.addr))}: {escape(p.what)}")


def unfollowed_jumps(root: Path, r: RoutineSweep) -> str:
    """Never silent about code the audit could not reach: the indirect jumps it did not
    follow (through a register whose value the dataflow does not know), where they are,
    and whether they are in copyfuzz's model of the kernel's C glue rather than the file;
    "" when there are none."""
    if r.audit is None:
        return ""
    jumps = [i.addr for i in r.audit.listing if i.indirect]
    if not jumps:
        return ""
    describe = r.audit.sym.describe if r.audit.sym else hex
    at = ", ".join(describe(a) for a in jumps[:4]) + (", ..." if len(jumps) > 4 else "")
    models = {m.name for m in (build.in_glue(root, r.routine, describe(a).split("+")[0]) for a in jumps) if m}
    ours = f"; in copyfuzz's model of the kernel's glue ({', '.join(sorted(models))}), not the file" if models else ""
    return (f"{r.routine.name}: the audit did not follow {plural(len(jumps), 'indirect jump')} (at {at}): code "
            f"reached only through {'it' if len(jumps) == 1 else 'them'} is not audited{ours}")


NEVER_RAN_SHOWN = 12  # instructions listed in the text report (--json has them all)
# What else than the length may reach code a sweep never ran, per architecture.
REACH_OTHER = {
    "arm64": "another QEMU CPU, e.g. --cpu cortex-a72 (a 64-byte DC ZVA block; QEMU's default has 512),",
    "riscv": "--isa or --vlen, for vector code,",
}
# ... and what may reach it at shorter lengths than the probe's (a block size the CPU sets).
REACH_SOONER = {"arm64": REACH_OTHER["arm64"]}


def _reach_hint(hints: dict[str, str], arch: str, insns: list[Insn]) -> str | None:
    """The architecture's hint, only where these instructions are of the kind it reaches:
    arm64's DC ZVA (its block size is the CPU's), RISC-V's vector code; never the DC ZVA
    hint for a copy that has none (a new user's review, issue 25)."""
    kinds: dict[str, Callable[[Insn], bool]] = {"arm64": lambda i: i.mnemonic == "dc" and "zva" in i.op_str,
                                                "riscv": lambda i: i.mnemonic.startswith("v")}
    applies = kinds.get(arch)
    return hints.get(arch) if applies is not None and any(applies(i) for i in insns) else None


def _print_never_ran(console: Console, r: RoutineSweep) -> None:
    """What of the routine no case of the sweep ran: the user accesses and fixups first."""
    assert r.reach is not None
    sym = r.audit.sym if r.audit else None
    emit(console)
    lead = "clean where it ran: " if r.verdict == "clean where it ran" else ""
    emit(console, f"[bold]{escape(r.routine.name)}[/]: {lead}{r.reach.summary()}, at lengths {args_lengths(r)}:")
    missed = r.reach.missed
    first = [i for i in missed if i.addr in r.reach.user or i.addr in r.reach.fixups]
    shown = (first + [i for i in missed if i not in first])[:NEVER_RAN_SHOWN]
    for i in sorted(shown, key=lambda i: i.addr):
        what = r.reach.noun if i.addr in r.reach.user else "fixup" if i.addr in r.reach.fixups else ""
        n = r.reach.runs_from(i.addr)
        emit(console, f"  {i.addr:#x} {escape(where(sym, i.addr))} {escape(r.reach.lines.get(i.addr, ''))}  "
                      f"{escape(f'{i.mnemonic} {i.op_str}'.strip())}  {what}".rstrip()
                      + (f"  (first ran at n={n})" if n is not None else ""))
    if len(missed) > len(shown):
        emit(console, f"  ... and {len(missed) - len(shown)} more (--json lists them all)")
    emit(console, f"  {probe_line(r.reach, r.routine.arch)}")


def probe_line(reach: Reach, arch: str) -> str:
    """What the probe past the sweep ran of what the sweep did not, the --max-len that
    would judge it, and what else may reach the rest (never "a longer --max-len" once the
    probe ran to its cap without reaching it)."""
    probe = reach.probe
    other = _reach_hint(REACH_OTHER, arch, [i for i in reach.missed if reach.runs_from(i.addr) is None])
    sooner = _reach_hint(REACH_SOONER, arch, reach.missed)
    if probe is None:
        return "no probe past the sweep ran (another name's sweep: see it)"
    span = f"n = {probe.lengths[0]}..{probe.lengths[-1]}" if probe.lengths else "no longer n"
    stopped = f", stopped by a {probe.stopped}" if probe.stopped else ""
    found = "".join(f"; {cls} in {count} of them" for cls, count in probe.findings.items())
    what = f"a probe past the sweep ({span}, {plural(probe.cases, 'case')}{stopped}{found})"
    firsts = [n for n in (reach.runs_from(i.addr) for i in reach.missed) if n is not None]
    if firsts:
        line = (f"{what} ran {len(firsts)} of {len(reach.missed)}: sweep with --max-len {max(firsts)} "
                "to judge them" + (f"; {sooner} may reach them at shorter lengths" if sooner else ""))
        if len(firsts) == len(reach.missed):
            return line
        rest = len(reach.missed) - len(firsts)
        return line + f"; {rest} ran at no length it tried" + (f" ({other} may reach them)" if other else "")
    if probe.stopped:
        return f"{what} ran none of them before it stopped"
    return (f"{what} ran none of them at any length it tried: " + (f"{other} may reach them, or " if other else "")
            + "they cannot run here (code a computed jump always passes, a return the harness never takes)")


def args_lengths(r: RoutineSweep) -> str:
    return f"0..{r.max_len}" if r.max_len else "as swept"


def _print_classes(console: Console, r: RoutineSweep) -> None:
    emit(console)
    emit(console, f"[bold]{r.routine.name}[/] ({r.profile}): {r.cases:,} cases, {r.cases_per_s:,.0f} cases/s")
    table = new_table(show_edge=False, pad_edge=False, box=None)
    table.add_column("  class")
    table.add_column("", justify="left")
    table.add_column("cases", justify="right")
    table.add_column("fault pc", no_wrap=True)
    table.add_column("smallest reproducer", no_wrap=True)
    for cls in r.observed:
        kind = ("[yellow]known[/]" if cls in r.known else "[red]error[/]") if r.is_error(cls) else "note"
        pc = r.pcs.get(cls) if cls in r.reproducers else "-"
        table.add_row(f"  {cls}", kind, f"{r.counts.get(cls, 0):,}", escape(pc or "none"), r.spec(cls) or "-")
    emit(console, table)
    for cls, entry in r.known.items():
        emit(console, f"  [yellow]{cls}[/]: {escape(known.reason(entry))}")
    for cls, trail in r.trails.items():  # the fault pc above is the first; a later fixup may make the return
        if trail and cls in r.observed:
            emit(console, f"  {cls}: the reproducer's faults in order: {escape(known.trail_text(trail))}")
    for cls, info in r.ended.items():
        emit(console, f"  [red]{cls}[/]: {escape(str(info['summary']))}")
        rows = info["code"]
        assert isinstance(rows, list)
        for row in rows:
            mark = "[red]→[/]" if row["at"] else " "
            emit(console, f"    {mark} {row['address']:#x}  {escape(str(row['where'])):<28} {escape(str(row['insn']))}")
    extra = shlex.join(r.routine.repro_options)  # pastes as it is: -D 'CONFIG_IS_ENABLED(x)=0'
    if extra:
        emit(console, f"  repro: ./copyfuzz repro SPEC {escape(extra)}")
