"""`copyfuzz replay DIR`: re-run saved cases in batch, one `serve` per routine.

DIR may hold regression specs (`*.spec`, the routine in the spec line), any text file of
spec lines, driver `.finding` files, and raw engine inputs (a libFuzzer corpus or its
artifacts), decoded as the driver decodes them for --routine. Each routine runs under
its declared profile (or --profile), through the coverage plugin as the driver runs it.

Exit 0 nothing reproduces, 1 a finding reproduces, 2 bad input or build error.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import build, fuzzinput, known, regressions, targets
from .elfinfo import routine_symbolizer
from .errors import CopyfuzzError
from .options import ReplayOptions, RoutineOptions
from .routines import Routine, discover, find
from .selection import file_routines, is_file_spec, with_isa
from .spec import Spec, format_spec, parse_fields
from .triage import run_specs
from .ui import emit, escape, stdout_console


@dataclass
class Unique:
    """One (class, fault pc) of a replay: its cases, the first, and the --known line
    accepting it (None: a new finding)."""

    cases: int
    spec: str
    entry: known.Entry | None
    faults: list[dict[str, object]] = field(default_factory=list)  # known.fault_trail of its first case


@dataclass
class Replayed:
    routine: Routine
    profile: str
    specs: list[Spec] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)  # class -> first spec showing it
    failed_cases: int = 0
    # (class, fault pc) -> cases, first spec, and the --known line accepting it (known.py)
    unique: dict[tuple[str, str | None], Unique] = field(default_factory=dict)
    new_cases: int = 0  # failing cases with a class no --known line accepts

    def unique_json(self) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        for (cls, pc), u in self.unique.items():
            out.append({"class": cls, "pc": pc, "faults": u.faults or None, "cases": u.cases, "reproducer": u.spec,
                        "known": u.entry is not None,
                        "known_by": u.entry.source if u.entry is not None else None})
        return out


def _resolve(root: Path, name: str, cache: dict[str, Routine], opts: ReplayOptions, options: str = "",
             where: str = "") -> str:
    """The routine a spec names, built (and run, with its ISA) as its file's `# options:`
    say, --isa/--vlen on the command line first; its key in the cache."""
    key = f"{name} {options}".strip()
    if key not in cache:
        try:
            target = RoutineOptions(isa=opts.isa).settled()
            if options:
                target = target.with_saved(options, where)
            if is_file_spec(name):
                path, symbol = name.rsplit(":", 1)
                target = replace(target, file=replace(target.file, symbol=(symbol,)))
                cache[key] = file_routines(root, path, target, "linux")[0]
            else:
                cache[key] = with_isa(find(discover(root), name), target.xlen, target.isa)
        except CopyfuzzError as e:  # the case file that asked for it, among many
            if not where or str(e).startswith(where):
                raise
            raise CopyfuzzError(f"{where}: {e}", exit_code=e.exit_code, details=e.details) from None
    return key


def collect(root: Path, opts: ReplayOptions) -> tuple[dict[str, list[Spec]], dict[str, Routine]]:
    """The cases under DIR by routine (each distinct case once), and the routines by key.
    A file routine saved with build options (-D, --alternative) is a routine of its own per
    set of options."""
    cache: dict[str, Routine] = {}
    by_routine: dict[str, list[Spec]] = {}
    seen: set[tuple[str, Spec]] = set()

    def add(key: str, spec: Spec) -> None:
        if (key, spec) not in seen:
            seen.add((key, spec))
            by_routine.setdefault(key, []).append(spec)

    raw_without_routine: list[Path] = []
    for path in fuzzinput.case_files(opts.dir):
        kind, content = fuzzinput.read_case_file(path)
        if kind == "spec":
            options = regressions.header(path).get("options", "")
            for name, fields in content:
                name = name or opts.routine
                if not name:
                    raise CopyfuzzError(f"{path}: its specs name no routine: say which with --routine NAME")
                key = _resolve(root, name, cache, opts, options, str(path))
                r = cache[key]
                try:
                    add(key, parse_fields(r.name, r.kind, fields))
                except CopyfuzzError as e:
                    raise CopyfuzzError(f"{path}: {e}") from None
        elif opts.routine:
            key = _resolve(root, opts.routine, cache, opts)
            r = cache[key]
            assert isinstance(content, bytes)
            add(key, fuzzinput.decode(root, content, r.kind, opts.raw_max_len, r.name, opts.granule))
        else:
            raw_without_routine.append(path)
    if raw_without_routine:
        raise CopyfuzzError(f"{opts.dir} holds {len(raw_without_routine)} raw fuzzer inputs (e.g. "
                            f"{raw_without_routine[0].name}): say which routine they are for with --routine NAME")
    return by_routine, cache


def run_replay(root: Path, args: argparse.Namespace) -> int:
    opts = ReplayOptions.from_args(args)
    baseline = known.from_options(opts.known)
    known.check_output(opts.known)
    if not opts.dir.is_dir():
        raise CopyfuzzError(f"{opts.dir} is not a directory")
    by_routine, cache = collect(root, opts)
    if not by_routine:
        raise CopyfuzzError(f"no cases under {opts.dir} (spec files or raw fuzzer inputs)")
    routines = [cache[key] for key in by_routine]
    # --granule, or a spec's granule=16: only a routine that can tag memory runs it (one
    # line, as repro and sweep say it), not the executor's refusal mid-replay
    for key, routine in zip(by_routine, routines, strict=True):
        granule = max([opts.granule, *(s.granule for s in by_routine[key])])
        targets.require_mte([(routine.name, routine.arch)], granule)
    build.build_host(root, ["plugin"])
    build.build_routines(root, routines)
    build.check_runners(routines)
    out: list[Replayed] = []
    for key, routine in zip(by_routine, routines, strict=True):
        rep = Replayed(routine, opts.profile or routine.profile, by_routine[key])
        sym = routine_symbolizer(root, routine, {})
        for spec, result in zip(rep.specs, run_specs(root, routine, rep.profile, rep.specs), strict=True):
            rep.failed_cases += bool(result.errors)
            pc = known.fault_pc(sym, result)
            new = False
            for cls in result.error_list:
                rep.counts[cls] = rep.counts.get(cls, 0) + 1
                rep.failing.setdefault(cls, format_spec(spec))
                u = rep.unique.get((cls, pc))
                if u is None:
                    entry = known.judge(baseline, known.Finding(routine.name, cls, pc))
                    u = rep.unique[(cls, pc)] = Unique(0, format_spec(spec), entry, known.fault_trail(sym, result))
                u.cases += 1
                new = new or u.entry is None
            rep.new_cases += new
        out.append(rep)
    failed = any(r.new_cases for r in out)
    if opts.json:
        print(json.dumps([{"routine": r.routine.name, "options": r.routine.repro_options,
                           "profile": r.profile, "cases": len(r.specs),
                           "failing_cases": r.failed_cases, "new_failing_cases": r.new_cases,
                           "findings": r.counts, "reproducers": r.failing,
                           "unique_findings": r.unique_json(),
                           "known": baseline.to_json() if baseline is not None else None} for r in out], indent=2))
    else:
        console = stdout_console()
        for r in out:
            built = f" {' '.join(r.routine.build_flags)}" if r.routine.build_flags else ""
            head = f"[bold]{escape(r.routine.name)}[/]{escape(built)} (profile {r.profile}): {len(r.specs)} case" \
                   f"{'s' * (len(r.specs) != 1)}, "
            if not r.counts:
                emit(console, head + "[green]no findings[/]")
                continue
            if baseline is None:
                emit(console, head + f"[red]{r.failed_cases} with findings[/]")
            else:
                accepted = r.failed_cases - r.new_cases
                emit(console, head + ", ".join(filter(None, [
                    f"[red]{r.new_cases} with new findings[/]" if r.new_cases else "",
                    f"[yellow]{accepted} with known findings only[/]" if accepted else ""])))
            for (cls, pc), u in r.unique.items():
                color = "yellow" if u.entry is not None else "red"
                why = f"  [yellow]{escape(known.reason(u.entry))}[/]" if u.entry is not None else ""
                emit(console, f"  [{color}]{cls}[/] at {escape(pc or 'no fault')}: {u.cases}, e.g. "
                              f"{escape(u.spec)}{why}")
        if baseline is not None:
            fresh = sum(1 for r in out for u in r.unique.values() if u.entry is None)
            emit(console, f"known findings ({escape(str(baseline.path))}): "
                          f"{sum(len(r.unique) for r in out) - fresh} accepted, "
                          f"{'[red]' if fresh else ''}{fresh} new{'[/]' if fresh else ''}")
    if opts.known.write_known is not None:
        known.write(opts.known.write_known,
                    [known.Finding(r.routine.name, cls, pc) for r in out for cls, pc in r.unique],
                    [r.routine.name for r in out])
    return 1 if failed else 0
