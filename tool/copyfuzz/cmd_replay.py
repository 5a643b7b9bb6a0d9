"""`copyfuzz replay DIR`: re-run saved cases in batch, one `serve` per routine.

DIR may hold regression specs (`*.spec`, the routine in the spec line), any text file of
spec lines, driver `.finding` files, and raw engine inputs (a libFuzzer corpus or its
artifacts), decoded as the driver decodes them for --routine. Each routine runs under
its declared profile (or --profile), through the coverage plugin as the driver runs it.

Exit 0 nothing reproduces, 1 a finding reproduces, 2 bad input or build error.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from . import build, fuzzinput, regressions
from .errors import CopyfuzzError
from .routines import Routine, discover, find
from .selection import apply_saved_options, file_routines, is_file_spec, settle_isa, with_isa
from .spec import Spec, format_spec, parse_fields
from .triage import run_specs
from .ui import emit, stdout_console


@dataclass
class Replayed:
    routine: Routine
    profile: str
    specs: list[Spec] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    failing: dict[str, str] = field(default_factory=dict)  # class -> first spec showing it
    failed_cases: int = 0


def _files(directory: Path) -> list[Path]:
    """Every file under the directory, leaving out hidden ones (.logs/, .tmp) and logs."""
    return sorted(p for p in directory.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(directory).parts)
                  and p.suffix not in (".log", ".tmp"))


def _resolve(root: Path, name: str, cache: dict[str, Routine], args: argparse.Namespace, options: str = "",
             where: str = "") -> str:
    """The routine a spec names, built (and run, with its ISA) as its file's `# options:`
    say, --isa/--vlen on the command line first; its key in the cache."""
    key = f"{name} {options}".strip()
    if key not in cache:
        ns = argparse.Namespace(symbol=None, kind=None, define=None, alternative=False, xlen=64,
                                isa=getattr(args, "isa", None), vlen=getattr(args, "vlen", None))
        settle_isa(ns, [])
        if options:
            apply_saved_options(ns, options, where)
        if is_file_spec(name):
            path, symbol = name.rsplit(":", 1)
            ns.symbol = [symbol]
            cache[key] = file_routines(root, path, ns, "linux")[0]
        else:
            cache[key] = with_isa(find(discover(root), name), ns.xlen, ns)
    return key


def collect(root: Path, args: argparse.Namespace) -> dict[str, list[Spec]]:
    """The cases under DIR by routine (each distinct case once). A file routine saved with
    build options (-D, --alternative) is a routine of its own per set of options."""
    cache: dict[str, Routine] = {}
    by_routine: dict[str, list[Spec]] = {}
    seen: set[tuple[str, Spec]] = set()

    def add(key: str, spec: Spec) -> None:
        if (key, spec) not in seen:
            seen.add((key, spec))
            by_routine.setdefault(key, []).append(spec)

    raw_without_routine: list[Path] = []
    for path in _files(args.dir):
        kind, content = fuzzinput.read_case_file(path)
        if kind == "spec":
            options = regressions.header(path).get("options", "")
            for name, fields in content:
                name = name or args.routine
                if not name:
                    raise CopyfuzzError(f"{path}: its specs name no routine: say which with --routine NAME")
                key = _resolve(root, name, cache, args, options, str(path))
                r = cache[key]
                try:
                    add(key, parse_fields(r.name, r.kind, fields))
                except CopyfuzzError as e:
                    raise CopyfuzzError(f"{path}: {e}") from None
        elif args.routine:
            key = _resolve(root, args.routine, cache, args)
            r = cache[key]
            assert isinstance(content, bytes)
            add(key, dataclasses.replace(fuzzinput.decode(content, r.kind, args.max_len), routine=r.name))
        else:
            raw_without_routine.append(path)
    if raw_without_routine:
        raise CopyfuzzError(f"{args.dir} holds {len(raw_without_routine)} raw fuzzer inputs (e.g. "
                            f"{raw_without_routine[0].name}): say which routine they are for with --routine NAME")
    args._routines = cache
    return by_routine


def run_replay(root: Path, args: argparse.Namespace) -> int:
    if not args.dir.is_dir():
        raise CopyfuzzError(f"{args.dir} is not a directory")
    by_routine = collect(root, args)
    if not by_routine:
        raise CopyfuzzError(f"no cases under {args.dir} (spec files or raw fuzzer inputs)")
    cache: dict[str, Routine] = args._routines
    routines = [cache[key] for key in by_routine]
    build.build(root, ["plugin"])
    build.build_routines(root, routines)
    build.check_runner()
    out: list[Replayed] = []
    for key, routine in zip(by_routine, routines):
        rep = Replayed(routine, args.profile or routine.profile, by_routine[key])
        for spec, result in zip(rep.specs, run_specs(root, routine, rep.profile, rep.specs)):
            rep.failed_cases += bool(result.errors)
            for cls in result.error_list:
                rep.counts[cls] = rep.counts.get(cls, 0) + 1
                rep.failing.setdefault(cls, format_spec(spec))
        out.append(rep)
    failed = any(r.counts for r in out)
    if args.json:
        print(json.dumps([{"routine": r.routine.name, "options": r.routine.repro_options,
                           "profile": r.profile, "cases": len(r.specs),
                           "failing_cases": r.failed_cases,
                           "findings": r.counts, "reproducers": r.failing} for r in out], indent=2))
    else:
        console = stdout_console()
        for r in out:
            built = f" {' '.join(r.routine.build_flags)}" if r.routine.build_flags else ""
            head = f"[bold]{escape(r.routine.name)}[/]{escape(built)} (profile {r.profile}): {len(r.specs)} case" \
                   f"{'s' * (len(r.specs) != 1)}, "
            if not r.counts:
                emit(console, head + "[green]no findings[/]")
                continue
            emit(console, head + f"[red]{r.failed_cases} with findings[/]")
            for cls, count in r.counts.items():
                emit(console, f"  [red]{cls}[/]: {count}, e.g. {escape(r.failing[cls])}")
    return 1 if failed else 0
