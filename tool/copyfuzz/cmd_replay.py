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

from . import build, fuzzinput
from .cmd_fuzz import run_specs
from .errors import CopyfuzzError
from .routines import Routine, discover, find
from .spec import Spec, format_spec, parse_fields
from .targets import file_routines
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


def _resolve(root: Path, name: str, cache: dict[str, Routine], kind: str | None) -> Routine:
    if name not in cache:
        if ".S:" in name or ".s:" in name:
            path, symbol = name.rsplit(":", 1)
            ns = argparse.Namespace(symbol=[symbol], kind=kind, define=None, alternative=False, xlen=64)
            cache[name] = file_routines(root, path, ns, "linux")[0]
        else:
            cache[name] = find(discover(root), name)
    return cache[name]


def collect(root: Path, args: argparse.Namespace) -> dict[str, list[Spec]]:
    """The cases under DIR by routine name (each distinct case once)."""
    cache: dict[str, Routine] = {}
    by_routine: dict[str, list[Spec]] = {}
    seen: set[Spec] = set()

    def add(spec: Spec) -> None:
        if spec not in seen:
            seen.add(spec)
            by_routine.setdefault(spec.routine, []).append(spec)

    raw_without_routine: list[Path] = []
    for path in _files(args.dir):
        kind, content = fuzzinput.read_case_file(path)
        if kind == "spec":
            for name, fields in content:  # type: ignore[union-attr]
                name = name or args.routine
                if not name:
                    raise CopyfuzzError(f"{path}: its specs name no routine: say which with --routine NAME")
                r = _resolve(root, name, cache, None)
                try:
                    add(parse_fields(r.name, r.kind, fields))
                except CopyfuzzError as e:
                    raise CopyfuzzError(f"{path}: {e}") from None
        elif args.routine:
            r = _resolve(root, args.routine, cache, None)
            assert isinstance(content, bytes)
            add(dataclasses.replace(fuzzinput.decode(content, r.kind, args.max_len), routine=r.name))
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
    routines = [cache[name] for name in by_routine]
    build.build(root, ["plugin"])
    build.build_routines(root, routines)
    build.check_runner()
    out: list[Replayed] = []
    for routine in routines:
        rep = Replayed(routine, args.profile or routine.profile, by_routine[routine.name])
        for spec, result in zip(rep.specs, run_specs(root, routine, rep.profile, rep.specs)):
            rep.failed_cases += bool(result.errors)
            for cls in result.error_list:
                rep.counts[cls] = rep.counts.get(cls, 0) + 1
                rep.failing.setdefault(cls, format_spec(spec))
        out.append(rep)
    failed = any(r.counts for r in out)
    if args.json:
        print(json.dumps([{"routine": r.routine.name, "profile": r.profile, "cases": len(r.specs),
                           "failing_cases": r.failed_cases,
                           "findings": r.counts, "reproducers": r.failing} for r in out], indent=2))
    else:
        console = stdout_console()
        for r in out:
            head = f"[bold]{escape(r.routine.name)}[/] (profile {r.profile}): {len(r.specs)} case" \
                   f"{'s' * (len(r.specs) != 1)}, "
            if not r.counts:
                emit(console, head + "[green]no findings[/]")
                continue
            emit(console, head + f"[red]{r.failed_cases} with findings[/]")
            for cls, count in r.counts.items():
                emit(console, f"  [red]{cls}[/]: {count}, e.g. {escape(r.failing[cls])}")
    return 1 if failed else 0
