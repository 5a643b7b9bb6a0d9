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

With --against TREE it compares this tree's executor with TREE's (another checkout, built
with `make all`), in checked mode, through this tree's tool: --pairs short sweeps of each,
back to back, the order swapped every pair, each pair's ratio taken from the executors'
own CPU time (user + system, qemu included). A pair's two runs are seconds apart, so the
load that drifts over minutes on a shared machine hits both alike; the median of the
pairs' ratios is the figure (docs/perf.md).

    bench/sweep_throughput.py --against ../before [--max-len 32] [--pairs 30]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
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


def child_cpu_s() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def against(tree: Path, r: routines.Routine, sweep_plan: plan.SweepPlan, pin: list[str], pairs: int,
            as_json: bool) -> None:
    """This tree's executor (A) against TREE's (B): paired runs, ratios of CPU time."""
    other = tree.resolve() / r.elf
    if not other.is_file():
        sys.exit(f"{other}: not built (run `make all` in {tree})")
    argv = {"A": [*pin, *routine_argv(ROOT, r)]}
    argv["B"] = [*argv["A"][:-1], str(other)]  # the same QEMU and -cpu, the other ELF
    cpu: dict[str, list[float]] = {"A": [], "B": []}
    ratios = []
    n = 0
    for i in range(pairs):
        pair: dict[str, float] = {}
        for side in ("A", "B") if i % 2 == 0 else ("B", "A"):
            before = child_cpu_s()
            n, _ = run_once(argv[side], sweep_plan, r, "checked")
            pair[side] = child_cpu_s() - before
            cpu[side].append(pair[side])
        ratios.append(pair["B"] / pair["A"])  # > 1: B takes longer
        print(f"pair {i + 1}: A {n / pair['A']:9.0f}  B {n / pair['B']:9.0f} cases per CPU s  "
              f"B/A time {ratios[-1]:.3f}", file=sys.stderr)
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    report = {"routine": r.name, "max_len": sweep_plan.max_len, "cases": n, "pairs": pairs, "against": str(tree),
              "a_cases_per_cpu_s": round(n / statistics.median(cpu["A"])),
              "b_cases_per_cpu_s": round(n / statistics.median(cpu["B"])),
              "b_over_a_time_median": round(statistics.median(ratios), 3),
              "b_over_a_time_quartiles": [round(q[0], 3), round(q[2], 3)],
              "machine": f"{platform.machine()}, {os.cpu_count()} cores"}
    print(json.dumps(report, indent=2) if as_json else " ".join(f"{k}={v}" for k, v in report.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routine", action="append", help="repeatable (default: riscv/copy_user)")
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="checked,bare", help="checked, bare, memcheck, reach, granule (comma-separated)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--against", type=Path, help="another built tree: its executor against this one's, paired")
    ap.add_argument("--pairs", type=int, default=30, help="with --against (default 30)")
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
    if args.against:
        r = chosen[0]
        against(args.against, r, plan.SweepPlan(cfref, r.kind, "exact", r.xlen, args.max_len), pin, args.pairs,
                args.json)
        return
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
