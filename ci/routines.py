"""What the CI scripts run on, as the copyfuzz tool names it (one place for names and stems).

    routines.py routines [--all] [PATTERN...]      bundled routines (default: the non-mutants)
    routines.py file F.S --symbol SYM[:KIND]... [-D NAME[=VALUE]]... [--alternative] [--arch ARCH]
    --build                                       also build their executors and the fuzz targets
    routines.py paths                              the host build: plugin, libFuzzer and AFL++ targets
    routines.py known FILE                         check a baseline of known findings (--known)
    routines.py write-known --command C OUT RESULT.json...
                                                  one baseline of the runs' unique findings

`known` and `write-known` are the scripts' --known and --write-known (tool/copyfuzz/known.py):
the first reads the file before any run (a bad line: exit 2, one line naming it), the
second writes the findings of the `fuzz --json` and `replay --json` results given (a run
that left no result is left out: the script reports its error).

One line per routine, tab-separated: name, file stem (the directory name the tool gives
the routine's corpus, findings and regressions), mutant (1 or 0), kind, profile, and the
executor (an absolute path, under $O as the tool takes it: copyfuzz/paths.py). `paths`:
one line, tab-separated absolute paths. Bad input: one line on stderr, exit 2.

Run with tool/ on PYTHONPATH (ci/lib.sh does), from the directory the paths are relative to.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from copyfuzz import build, infer, known, paths, targets
from copyfuzz.cli import repo_root
from copyfuzz.errors import CopyfuzzError
from copyfuzz.options import FileOptions, RoutineOptions
from copyfuzz.routines import Routine, discover, select
from copyfuzz.selection import file_routines

ROOT = repo_root()  # as the tool finds it (COPYFUZZ_ROOT too)


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="ci/routines.py")
    sub = p.add_subparsers(dest="what", required=True)
    rs = sub.add_parser("routines")
    rs.add_argument("patterns", nargs="*")
    rs.add_argument("--all", action="store_true", help="mutants too")
    rs.add_argument("--build", action="store_true")
    fs = sub.add_parser("file")
    fs.add_argument("file")
    fs.add_argument("--symbol", action="append", required=True)
    fs.add_argument("-D", dest="define", action="append")
    fs.add_argument("--alternative", action="store_true")
    fs.add_argument("--arch", choices=tuple(targets.ARCHES))
    fs.add_argument("--build", action="store_true")
    sub.add_parser("paths")
    kn = sub.add_parser("known")
    kn.add_argument("file", type=Path)
    wk = sub.add_parser("write-known")
    wk.add_argument("out", type=Path)
    wk.add_argument("--command", required=True)
    wk.add_argument("results", nargs="*", type=Path)
    return p.parse_args(argv)


def write_known(args: argparse.Namespace) -> None:
    routines: list[str] = []
    findings: list[known.Finding] = []
    for path in args.results:
        try:
            data = json.loads(path.read_text(errors="replace") or "null")
            names, keys = known.from_result(data)
        except (OSError, json.JSONDecodeError, CopyfuzzError):
            continue  # a run that failed: its error is in the report
        routines += names
        findings += keys
    known.write(args.out, findings, routines, args.command.strip())


def resolve(args: argparse.Namespace) -> list[Routine]:
    if args.what == "file":
        # The same construction as `copyfuzz fuzz --file`, so names and stems agree with it.
        target = RoutineOptions(FileOptions(symbol=tuple(args.symbol or ()), define=tuple(args.define or ()),
                                            alternative=args.alternative, arch=args.arch), xlen=64)
        return file_routines(ROOT, args.file, target, "linux")
    routines = discover(ROOT)
    if args.patterns:  # in the order given, each once
        chosen: dict[str, Routine] = {}
        for pattern in args.patterns:
            for r in select(routines, [pattern]):
                chosen.setdefault(r.name, r)
        return list(chosen.values())
    return routines if args.all else [r for r in routines if not r.is_mutant]


def main(argv: list[str]) -> int:
    args = parse(argv)
    if args.what == "paths":
        print("\t".join(str(p) for p in (paths.plugin(ROOT), paths.libfuzzer_target(ROOT),
                                          paths.afl_target(ROOT))))
        return 0
    try:
        if args.what == "known":
            known.load(args.file)
            return 0
        if args.what == "write-known":
            write_known(args)
            return 0
        routines = resolve(args)
        if args.build:
            build.build_host(ROOT, ["plugin", "fuzz-targets"])
            build.build_routines(ROOT, routines)
        infer.flush()  # what was worked out about a file's routines (kind, architecture)
    except CopyfuzzError as e:
        print(f"copyfuzz: {e}", file=sys.stderr)
        if e.details:
            print(e.details, file=sys.stderr)
        return e.exit_code
    for r in routines:
        print("\t".join([r.name, r.file_stem, "1" if r.is_mutant else "0", r.kind, r.profile, str(ROOT / r.elf)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
