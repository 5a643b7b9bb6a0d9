#!/usr/bin/env python3
"""Time each engine takes to find each mutant from an empty corpus (docs/perf.md).

libFuzzer: the driver with the routine's coverage (the QEMU plugin), until its first
finding (it aborts). AFL++: afl-fuzz with AFL_BENCH_UNTIL_CRASH=1 from one seed file,
until its first crash. Median over --seeds seeds, each run capped at --cap seconds; one
engine at a time. Each mutant runs under its architecture's QEMU.

    bench/time_to_find.py [--mutants 'riscv/mutants/*'] [--engines libfuzzer,afl] [--seeds 3]
                          [--cap 60] [--json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tool"))
from copyfuzz import build, envs, paths, routines  # noqa: E402  (fuzz/envs.def's variables; build paths, O=)
from copyfuzz.routines import Routine  # noqa: E402


def driver_env(mutant: Routine, findings: Path) -> dict[str, str]:
    return envs.driver_env(executor=ROOT / mutant.elf, plugin=paths.plugin(ROOT), kind=mutant.kind,
                           profile="exact", findings=findings, qemu=build.qemu_command(mutant.xlen, mutant.arch)[0])


def run_libfuzzer(mutant: Routine, seed: int, cap: int, tmp: Path) -> float | None:
    (tmp / "c").mkdir()
    (tmp / "f").mkdir()
    t0 = time.perf_counter()
    proc = subprocess.run([str(paths.libfuzzer_target(ROOT)), f"-seed={seed}",
                           f"-max_total_time={cap}", f"-artifact_prefix={tmp / 'f'}/", str(tmp / "c")],
                          env=driver_env(mutant, tmp / "f"), capture_output=True, timeout=cap + 60)
    dt = time.perf_counter() - t0
    return dt if proc.returncode != 0 and list((tmp / "f").glob("crash-*")) else None


def run_afl(mutant: Routine, seed: int, cap: int, tmp: Path) -> float | None:
    (tmp / "in").mkdir()
    (tmp / "in" / "seed").write_bytes(b"A" * 10)
    (tmp / "f").mkdir()
    env = {**driver_env(mutant, tmp / "f"), "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_QUIET": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_BENCH_UNTIL_CRASH": "1"}
    t0 = time.perf_counter()
    proc = subprocess.run(["afl-fuzz", "-s", str(seed), "-i", str(tmp / "in"), "-o", str(tmp / "out"), "-V",
                           str(cap), "--", str(paths.afl_target(ROOT))], env=env,
                          capture_output=True, text=True, timeout=cap + 60)
    dt = time.perf_counter() - t0
    # A mutant every input trips (e.g. a clobbered register) crashes on the seed itself:
    # afl-fuzz then stops in its dry run, and the seed is the finding.
    seed_crashed = "crashed with one of the test cases" in proc.stdout + proc.stderr
    return dt if seed_crashed or list((tmp / "out/default/crashes").glob("id:*")) else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mutants", default="riscv/mutants/*", help="a pattern of routine names")
    ap.add_argument("--engines", default="libfuzzer,afl")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cap", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), "all", "fuzz-targets"], cwd=ROOT, check=True)
    mutants = [r for r in routines.select(routines.discover(ROOT), [args.mutants]) if r.is_mutant]
    build.build_routines(ROOT, mutants)
    runners = {"libfuzzer": run_libfuzzer, "afl": run_afl}
    table: dict[str, dict[str, object]] = {}
    for r in mutants:
        mutant = r.name
        table[mutant] = {}
        for engine in args.engines.split(","):
            times = []
            for seed in range(1, args.seeds + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    times.append(runners[engine](r, seed, args.cap, Path(tmp)))
            found = [t for t in times if t is not None]
            table[mutant][engine] = {"median_s": round(statistics.median(found), 2) if len(found) == len(times)
                                     else None, "found": f"{len(found)}/{len(times)}",
                                     "runs_s": [round(t, 2) if t is not None else None for t in times]}
            print(f"{mutant:40s} {engine:9s} {table[mutant][engine]}", flush=True)
    if args.json:
        print(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
