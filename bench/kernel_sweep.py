#!/usr/bin/env python3
"""Booted-kernel sweep throughput: cases per second on each architecture's kernel, and
the default sweep's wall time (docs/perf.md, "Booted-kernel sweeps").

Runs `copyfuzz kernel sweep --json` on the same cases for each architecture, rotating
the order of the architectures from run to run so that drift hits all alike, and prints
each one's median cases per second (the sweep's own count over its own seconds: boots
included, the kernel build not: build the kernels first) and the spread. The kernels
are Debian's (--source), or built with our clean fixture in place of each
architecture's copy_from_user file (--fixture): a kernel that hangs spends its timeouts,
which is no measure of speed.

    bench/kernel_sweep.py [--arch riscv --arch arm64 --arch arm] [--runs 3] [--jobs 2]
                          [--fixture] [--source 6.12] [-- SWEEP OPTIONS...]

Without sweep options the default sweep runs (`--no-host` always: the host column runs
beside the VMs and would share their cores).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from kernel_fixtures import boot_fixtures  # noqa: E402  (the fixtures' own header lines)

FIXTURES = boot_fixtures()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", action="append", choices=list(FIXTURES))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--source", default="6.12")
    ap.add_argument("--fixture", action="store_true", help="our clean fixture in place of copy_from_user")
    ap.add_argument("sweep", nargs=argparse.REMAINDER, help="-- then options for kernel sweep")
    a = ap.parse_args()
    arches = a.arch or list(FIXTURES)
    extra = [w for w in a.sweep if w != "--"]
    rates: dict[str, list[float]] = {arch: [] for arch in arches}
    walls: dict[str, list[float]] = {arch: [] for arch in arches}
    cases: dict[str, int] = {}
    for run in range(a.runs):
        order = arches[run % len(arches):] + arches[:run % len(arches)]
        for arch in order:
            cmd = [str(ROOT / "copyfuzz"), "kernel", "sweep", "--arch", arch, "--source", a.source, "--no-host",
                   "--jobs", str(a.jobs), "--json", "--findings", "/tmp/copyfuzz-bench-findings", *extra]
            if a.fixture:
                f = FIXTURES[arch]
                cmd += ["--replace", f"{f.replaces}={f.path}"]
            started = time.monotonic()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            wall = time.monotonic() - started
            if proc.returncode not in (0, 1):
                print(f"{arch}: exit {proc.returncode}\n{proc.stderr[-2000:]}", file=sys.stderr)
                return 2
            report = json.loads(proc.stdout)
            c = report["cases"]
            rates[arch].append(c["ran"] / c["seconds"])
            walls[arch].append(wall)
            cases[arch] = c["ran"]
            print(f"run {run + 1} {arch}: {c['ran']:,} cases in {c['seconds']} s ({c['ran'] / c['seconds']:,.0f}/s, "
                  f"{c['boots']} boots, {len(report['findings'])} finding classes), wall {wall:.0f} s", flush=True)
    print()
    print(f"{'arch':<7} {'cases':>10} {'median cases/s':>15} {'min':>8} {'max':>8} {'median wall s':>14}")
    for arch in arches:
        r = rates[arch]
        print(f"{arch:<7} {cases[arch]:>10,} {statistics.median(r):>15,.0f} {min(r):>8,.0f} {max(r):>8,.0f} "
              f"{statistics.median(walls[arch]):>14.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
