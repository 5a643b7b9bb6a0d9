#!/usr/bin/env python3
"""How long a `copyfuzz fuzz --time T` command takes on a routine full of bugs, for this
checkout's tool and, side by side, another version of it (docs/perf.md, issue 27).

Both run on this checkout's build (COPYFUZZ_ROOT): only the Python differs. The other
version is a tree of the sources at some commit, e.g.

    git archive f223e8a^ | tar -x -C /tmp/before
    bench/triage_time.py --before /tmp/before [--routine R] [--time 5] [--runs 3] [--json]

Each run gives both tools a fresh corpus, findings and regressions directory and the
same seed; the two take turns, so a change in the machine's load falls on both. Per
tool: the command's wall time (median and each run), the unique findings it triaged,
and the failures it saved untriaged (a tool without a triage deadline saves none).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def one(tool_root: Path, routine: str, seconds: int, seed: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="copyfuzz-triage-bench-") as tmp:
        argv = [sys.executable, "-m", "copyfuzz", "fuzz", routine, "--time", str(seconds), "--seed", str(seed),
                "--corpus", f"{tmp}/c", "--findings", f"{tmp}/f", "--regressions", f"{tmp}/r", "--json"]
        env = {**os.environ, "COPYFUZZ_ROOT": str(ROOT), "PYTHONPATH": str(tool_root / "tool")}
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        wall = time.monotonic() - started
    if proc.returncode not in (0, 1):
        sys.exit(f"{tool_root}: exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    rep = json.loads(proc.stdout)
    return {"wall_s": round(wall, 1), "unique": len(rep["unique"]),
            "untriaged": len(rep.get("not_triaged_in_time", []))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, metavar="DIR", help="the other version's source tree")
    ap.add_argument("--routine", default="riscv/mutants/fixup-off-by-one")
    ap.add_argument("--time", type=int, default=5, metavar="T")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not (args.before / "tool" / "copyfuzz").is_dir():
        ap.error(f"--before {args.before}: no tool/copyfuzz there")
    tools = {"before": args.before.resolve(), "after": ROOT}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in tools}
    for k in range(args.runs):
        for name, tool_root in tools.items():
            r = one(tool_root, args.routine, args.time, args.seed)
            runs[name].append(r)
            print(f"run {k + 1}: {name}: {r['wall_s']} s, {r['unique']} unique triaged, "
                  f"{r['untriaged']} untriaged", file=sys.stderr)
    rows: list[dict[str, Any]] = [{"tool": name, "median_wall_s": statistics.median(r["wall_s"] for r in rs),
             "wall_s": [r["wall_s"] for r in rs], "unique": [r["unique"] for r in rs],
             "untriaged": [r["untriaged"] for r in rs]} for name, rs in runs.items()]
    if args.json:
        print(json.dumps({"routine": args.routine, "time_s": args.time, "seed": args.seed, "rows": rows}, indent=2))
        return 0
    print(f"`copyfuzz fuzz {args.routine} --time {args.time} --seed {args.seed}`, {args.runs} runs each\n")
    print("| tool | wall time, median (runs) | unique findings triaged | saved untriaged |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['tool']} | {row['median_wall_s']} s ({', '.join(map(str, row['wall_s']))}) | "
              f"{', '.join(map(str, row['unique']))} | {', '.join(map(str, row['untriaged']))} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
