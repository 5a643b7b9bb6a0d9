#!/usr/bin/env python3
"""Sweep throughput with and without the oracle, side by side (docs/perf.md).

Runs the executor's built-in sweep of each routine on one core, through the tool's
own executor.sweep (its record channel, seal checks and merge: what check and sweep
pay), in several modes over the same cases: checked (the oracle on), bare (--bare: no oracle, no
destination restore), memcheck (checked, under the QEMU plugin), reach (checked,
under the plugin counting instructions only: what check and sweep run by default) and granule
(checked, faults at MTE tag granules: --granule 16, arm64 only), rotating the
order of every (routine, mode) from run to run so drift hits all alike. Routines of
several architectures (each under its own QEMU) are measured side by side in one run.
Prints medians and ratios.

    bench/sweep_throughput.py [--routine riscv/copy_user [--routine arm64/copy_from_user]]
                              [--max-len 256] [--runs 3] [--modes checked,bare,memcheck,reach,granule]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


sys.path.insert(0, str(ROOT / "tool"))
from copyfuzz import build, executor, plan, records, routines  # noqa: E402  (build paths, O= honoured)
from copyfuzz.session import Need, plugin_memory, routine_argv  # noqa: E402  (the one ABI mirror, by the one rule)


def run_once(argv: list[str], sweep_plan: plan.SweepPlan, r: routines.Routine, mode: str) -> tuple[int, float]:
    """Cases run and seconds taken by one sweep, started, read and checked by the tool's
    own executor.sweep (what check and sweep pay, the record channel included)."""
    plugin = plugin_memory(ROOT, r, Need.MEMCHECK if mode == "memcheck" else Need.COVERAGE) \
        if mode in ("memcheck", "reach") else None
    try:
        t0 = time.perf_counter()
        *_, finished = executor.sweep(argv, sweep_plan, plugins=[plugin] if plugin else None, bare=mode == "bare")
        dt = time.perf_counter() - t0
    finally:
        if plugin:
            plugin.close()
    assert isinstance(finished, executor.Finished)
    if finished.stopped or finished.deaths:
        sys.exit(f"{r.name} {mode}: the sweep did not run the whole plan ({finished.stopped or finished.deaths})")
    return finished.cases, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routine", action="append", help="repeatable (default: riscv/copy_user)")
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="checked,bare", help="checked, bare, memcheck, reach, granule (comma-separated)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    found = routines.discover(ROOT)
    chosen = [routines.find(found, name) for name in args.routine or ["riscv/copy_user"]]
    build.build_routines(ROOT, chosen)
    build.build_host(ROOT, ["plugin"])
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    # The plugin wraps [qemu, elf]; taskset stays in front.
    argvs = {r.name: [*pin, *routine_argv(ROOT, r)] for r in chosen}
    cfref = plan.load(ROOT)
    plans = {(r.name, m): plan.SweepPlan(cfref, r.kind, "exact", r.xlen, args.max_len,
                                         granule=records.GRANULE_MTE if m == "granule" else 0)
             for r in chosen for m in modes}
    pairs = [(r, m) for r in chosen for m in modes]
    times: dict[tuple[str, str], list[float]] = {(r.name, m): [] for r, m in pairs}
    cases: dict[tuple[str, str], int] = {}  # granule's plan differs
    for i in range(args.runs):
        for r, mode in pairs[i % len(pairs):] + pairs[:i % len(pairs)]:
            n, dt = run_once(argvs[r.name], plans[(r.name, mode)], r, mode)
            cases[(r.name, mode)] = n
            times[(r.name, mode)].append(dt)
            print(f"run {i + 1} {r.name} {mode:9s} {n} cases in {dt:7.2f} s = {n / dt:9.0f} cases/s",
                  file=sys.stderr)
    reports = []
    for r in chosen:
        med = {m: statistics.median(times[(r.name, m)]) for m in modes}
        report: dict[str, object] = {
            "routine": r.name, "arch": r.arch, "max_len": args.max_len, "runs": args.runs,
            "cases": cases[(r.name, modes[0])],
            **{f"{m}_cases_per_s": round(cases[(r.name, m)] / med[m]) for m in modes},
            "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        }
        if "checked" in med and "bare" in med:
            report["checked_over_bare_time"] = round(med["checked"] / med["bare"], 3)
        if "checked" in med and "memcheck" in med:
            report["memcheck_over_checked_time"] = round(med["memcheck"] / med["checked"], 3)
        if "checked" in med and "reach" in med:
            report["reach_over_checked_time"] = round(med["reach"] / med["checked"], 3)
        if "checked" in med and "granule" in med:
            report["granule_over_checked_time"] = round(med["granule"] / med["checked"], 3)
        reports.append(report)
    if args.json:
        print(json.dumps(reports[0] if len(reports) == 1 else reports, indent=2))
    else:
        for report in reports:
            print(" ".join(f"{k}={v}" for k, v in report.items()))


if __name__ == "__main__":
    main()
