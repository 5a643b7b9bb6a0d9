#!/usr/bin/env python3
"""Time each engine takes to find each mutant from an empty corpus (docs/perf.md).

libFuzzer: the driver with RISC-V coverage, until its first finding (it aborts).
AFL++: afl-fuzz with AFL_BENCH_UNTIL_CRASH=1 from one seed file, until its first crash.
Median over --seeds seeds, each run capped at --cap seconds; one engine at a time.

    bench/time_to_find.py [--engines libfuzzer,afl] [--seeds 3] [--cap 60] [--json]
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
from copyfuzz import envs, paths  # noqa: E402  (the driver's variables: fuzz/envs.def; build paths, O=)


def driver_env(mutant: str, findings: Path) -> dict[str, str]:
    kind = "clear" if "clear" in mutant else "copy"
    return envs.driver_env(executor=paths.executor(ROOT, f"riscv/mutants/{mutant}", 64),
                           plugin=paths.plugin(ROOT), kind=kind, profile="exact", findings=findings)


def run_libfuzzer(mutant: str, seed: int, cap: int, tmp: Path) -> float | None:
    (tmp / "c").mkdir()
    (tmp / "f").mkdir()
    t0 = time.perf_counter()
    proc = subprocess.run([str(paths.libfuzzer_target(ROOT)), f"-seed={seed}",
                           f"-max_total_time={cap}", f"-artifact_prefix={tmp / 'f'}/", str(tmp / "c")],
                          env=driver_env(mutant, tmp / "f"), capture_output=True, timeout=cap + 60)
    dt = time.perf_counter() - t0
    return dt if proc.returncode != 0 and list((tmp / "f").glob("crash-*")) else None


def run_afl(mutant: str, seed: int, cap: int, tmp: Path) -> float | None:
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
    ap.add_argument("--engines", default="libfuzzer,afl")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cap", type=int, default=60)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), "all", "fuzz-targets"], cwd=ROOT, check=True)
    mutants = sorted(p.stem for p in (ROOT / "arch/riscv/mutants").glob("*.S"))
    runners = {"libfuzzer": run_libfuzzer, "afl": run_afl}
    table: dict[str, dict[str, object]] = {}
    for mutant in mutants:
        table[mutant] = {}
        for engine in args.engines.split(","):
            times = []
            for seed in range(1, args.seeds + 1):
                with tempfile.TemporaryDirectory() as tmp:
                    times.append(runners[engine](mutant, seed, args.cap, Path(tmp)))
            found = [t for t in times if t is not None]
            table[mutant][engine] = {"median_s": round(statistics.median(found), 2) if len(found) == len(times)
                                     else None, "found": f"{len(found)}/{len(times)}",
                                     "runs_s": [round(t, 2) if t is not None else None for t in times]}
            print(f"{mutant:26s} {engine:9s} {table[mutant][engine]}", flush=True)
    if args.json:
        print(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
