#!/usr/bin/env python3
"""Sweep throughput with and without the oracle, side by side (docs/perf.md).

Runs the executor's built-in sweep for one routine on one core: checked, then
--bare (same cases, no oracle, no destination restore), alternating the order
from run to run so drift hits both alike. Prints the medians and the ratio.

    bench/sweep_throughput.py [--routine riscv/copy_user] [--max-len 256] [--runs 3]
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


def run_once(cmd: list[str]) -> tuple[int, float]:
    """Cases run and seconds taken by one sweep process."""
    t0 = time.perf_counter()
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE).stdout
    dt = time.perf_counter() - t0
    magic, rtype, _sig, cases = struct.unpack_from("<IHHQ", out, len(out) - 128)
    if magic != 0x31524643 or rtype != DONE:
        sys.exit("sweep output did not end with DONE")
    return cases, dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routine", default="riscv/copy_user")
    ap.add_argument("--max-len", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    elf = ROOT / "build" / "riscv64" / f"{args.routine}.elf"
    subprocess.run(["make", "-s", str(elf.relative_to(ROOT))], cwd=ROOT, check=True)
    qemu = [] if platform.machine() == "riscv64" else [os.environ.get("QEMU", "qemu-riscv64")]
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    base = pin + qemu + [str(elf), "sweep", "--max-len", str(args.max_len), "--profile", "exact"]

    checked: list[float] = []
    bare: list[float] = []
    cases = 0
    for i in range(args.runs):
        order = [("checked", []), ("bare", ["--bare"])]
        if i % 2:
            order.reverse()
        for name, extra in order:
            n, dt = run_once(base + extra)
            cases = n
            (checked if name == "checked" else bare).append(dt)
            print(f"run {i + 1} {name:8s} {n} cases in {dt:7.2f} s = {n / dt:9.0f} cases/s",
                  file=sys.stderr)
    mc, mb = statistics.median(checked), statistics.median(bare)
    report = {
        "routine": args.routine, "max_len": args.max_len, "runs": args.runs, "cases": cases,
        "checked_cases_per_s": round(cases / mc), "bare_cases_per_s": round(cases / mb),
        "checking_overhead": round(mc / mb, 3),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.processor() or 'cpu'}",
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{args.routine} L={args.max_len}: {cases} cases, median of {args.runs}: "
              f"checked {report['checked_cases_per_s']}/s, bare {report['bare_cases_per_s']}/s, "
              f"checked/bare time {report['checking_overhead']}")


if __name__ == "__main__":
    main()
