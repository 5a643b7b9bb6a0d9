#!/usr/bin/env python3
"""Sweep throughput with and without the oracle, side by side (docs/perf.md).

Runs the executor's built-in sweep of each routine on one core in several modes
over the same cases: checked (the oracle on), bare (--bare: no oracle, no
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
import struct
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DONE = 2


sys.path.insert(0, str(ROOT / "tool"))
from copyfuzz import build, routines  # noqa: E402  (build paths, O= honoured)
from copyfuzz.session import Need, plugin_memory  # noqa: E402  (the one ABI mirror, by the one rule)


def run_once(cmd: list[str], r: routines.Routine, mode: str) -> tuple[int, float]:
    """Cases run and seconds taken by one sweep process."""
    plugin = plugin_memory(ROOT, r, Need.MEMCHECK if mode == "memcheck" else Need.COVERAGE) \
        if mode in ("memcheck", "reach") else None
    if plugin:
        cmd = plugin.wrap(cmd[:cmd.index("sweep")]) + cmd[cmd.index("sweep"):] + plugin.executor_options()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, pass_fds=plugin.pass_fds if plugin else ()).stdout
    dt = time.perf_counter() - t0
    if plugin:
        plugin.close()
    magic, rtype, _sig, cases = struct.unpack_from("<IHHQ", out, len(out) - 128)
    if magic != 0x31524643 or rtype != DONE:
        sys.exit("sweep output did not end with DONE")
    return cases, dt


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
    bases = {r.name: [*pin, *build.routine_prefix(r), str(ROOT / r.elf), "sweep", "--max-len", str(args.max_len),
                      "--profile", "exact"] for r in chosen}
    pairs = [(r, m) for r in chosen for m in modes]
    times: dict[tuple[str, str], list[float]] = {(r.name, m): [] for r, m in pairs}
    cases: dict[str, int] = {}
    for i in range(args.runs):
        for r, mode in pairs[i % len(pairs):] + pairs[:i % len(pairs)]:
            extra = {"bare": ["--bare"], "granule": ["--granule", "16"]}.get(mode, [])
            n, dt = run_once(bases[r.name] + extra, r, mode)
            cases[r.name] = n
            times[(r.name, mode)].append(dt)
            print(f"run {i + 1} {r.name} {mode:9s} {n} cases in {dt:7.2f} s = {n / dt:9.0f} cases/s",
                  file=sys.stderr)
    reports = []
    for r in chosen:
        med = {m: statistics.median(times[(r.name, m)]) for m in modes}
        report: dict[str, object] = {
            "routine": r.name, "arch": r.arch, "max_len": args.max_len, "runs": args.runs, "cases": cases[r.name],
            **{f"{m}_cases_per_s": round(cases[r.name] / med[m]) for m in modes},
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
