#!/usr/bin/env python3
"""Executions per second of the fuzz driver, per engine, with and without RISC-V
coverage, on one core and on two, per transport to the executor (docs/perf.md).

Every run starts from the same corpus (grown once by a warm-up run of libFuzzer with
coverage, so both engines see the same mix of lengths), runs --seconds, and reads the
engine's own count: libFuzzer's final stats (summed over -jobs workers), AFL++'s
fuzzer_stats (summed over -M/-S instances). The modes of one run are measured back to
back in an order rotated from run to run; the table gives the median of --runs.

    bench/fuzz_throughput.py [--routine riscv/copy_user] [--seconds 20] [--runs 3] [--json]
                             [--engine libfuzzer|afl]... [--coverage on|off]... [--cores 1|2]...
                             [--channel shm|pipe]...

--engine, --coverage, --cores and --channel pick modes (each repeatable; default: every
mode but the pipe channel), e.g. the smallest run, `--engine libfuzzer --coverage on
--cores 1`; `--channel shm --channel pipe` measures the transports (COPYFUZZ_CHANNEL)
side by side.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tool"))
from copyfuzz import envs, paths  # noqa: E402  (the driver's variables: fuzz/envs.def; build paths, O=)

LIBFUZZER = paths.libfuzzer_target(ROOT)
AFL = paths.afl_target(ROOT)
PLUGIN = paths.plugin(ROOT)


def driver_env(routine: str, coverage: bool, findings: Path, channel: str = "shm") -> dict[str, str]:
    kind = "clear" if "clear" in routine else "memcpy" if "memcpy" in routine else "copy"
    return envs.driver_env(executor=paths.executor(ROOT, routine, 64), plugin=PLUGIN if coverage else "",
                           kind=kind, profile="exact", findings=findings, channel=channel)


def libfuzzer(routine: str, coverage: bool, jobs: int, seconds: int, corpus: Path, tmp: Path,
              channel: str) -> float:
    work = tmp / "lf"
    work.mkdir()
    shutil.copytree(corpus, work / "corpus")
    argv = [str(LIBFUZZER), f"-max_total_time={seconds}", "-print_final_stats=1", "-seed=1",
            f"-artifact_prefix={work}/", str(work / "corpus")]
    if jobs > 1:
        argv[1:1] = [f"-jobs={jobs}", f"-workers={jobs}"]
    proc = subprocess.run(argv, cwd=work, env=driver_env(routine, coverage, work, channel), capture_output=True,
                          text=True, timeout=seconds + 120)
    logs = [proc.stderr] if jobs == 1 else [p.read_text() for p in work.glob("fuzz-*.log")]
    rates = [float(m.group(1)) for log in logs for m in [re.search(r"stat::average_exec_per_sec:\s*(\d+)", log)]
             if m]
    if len(rates) != jobs:
        raise SystemExit(f"libFuzzer gave {len(rates)} rates for {jobs} jobs:\n{proc.stderr[-2000:]}")
    return sum(rates)


def afl(routine: str, coverage: bool, jobs: int, seconds: int, corpus: Path, tmp: Path, channel: str) -> float:
    out = tmp / "afl"
    env = {**driver_env(routine, coverage, tmp, channel), "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_QUIET": "1"}
    names = ["default"] if jobs == 1 else ["main", *(f"sec{i}" for i in range(1, jobs))]
    procs = []
    for i, name in enumerate(names):
        argv = ["afl-fuzz", "-i", str(corpus), "-o", str(out), "-V", str(seconds), "-s", str(i + 1)]
        if name != "default":
            argv += ["-M" if name == "main" else "-S", name]
        procs.append(subprocess.Popen([*argv, "--", str(AFL)], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    for p in procs:
        p.wait(timeout=seconds + 120)
    total = 0.0
    for name in names:
        stats = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in
                 (out / name / "fuzzer_stats").read_text().splitlines())}
        total += int(stats["execs_done"]) / max(1, int(stats["run_time"]))
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routine", default="riscv/copy_user")
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=30, help="seconds of libFuzzer growing the shared corpus")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--engine", action="append", choices=["libfuzzer", "afl"], help="only this engine")
    ap.add_argument("--coverage", action="append", choices=["on", "off"], help="only with or without it")
    ap.add_argument("--cores", action="append", type=int, choices=[1, 2], help="only on this many cores")
    ap.add_argument("--channel", action="append", choices=["shm", "pipe"],
                    help="the transport to the executor (COPYFUZZ_CHANNEL; default: shm)")
    args = ap.parse_args()
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), "all"], cwd=ROOT, check=True)
    modes = [(engine, cov, jobs, channel) for jobs in args.cores or (1, 2)
             for engine in args.engine or ("libfuzzer", "afl")
             for cov in (True, False) if ("on" if cov else "off") in (args.coverage or ("on", "off"))
             for channel in args.channel or ("shm",)]
    runs: dict[tuple[str, bool, int, str], list[float]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="copyfuzz-bench-") as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        subprocess.run([str(LIBFUZZER), f"-max_total_time={args.warmup}", "-seed=7", str(corpus)],
                       env=driver_env(args.routine, True, Path(scratch)), capture_output=True, check=True,
                       timeout=args.warmup + 120)
        print(f"corpus: {sum(1 for _ in corpus.iterdir())} inputs after a {args.warmup} s warm-up", flush=True)
        for r in range(args.runs):
            for k in range(len(modes)):
                engine, cov, jobs, channel = mode = modes[(k + r) % len(modes)]
                with tempfile.TemporaryDirectory(prefix="run-", dir=scratch) as tmp:
                    rate = (libfuzzer if engine == "libfuzzer" else afl)(args.routine, cov, jobs, args.seconds,
                                                                        corpus, Path(tmp), channel)
                runs[mode].append(rate)
                print(f"run {r + 1}: {engine:9s} coverage={'on ' if cov else 'off'} jobs={jobs} channel={channel}: "
                      f"{rate:,.0f} exec/s", flush=True)
    rows: list[dict[str, Any]] = []
    for engine, cov, jobs, channel in modes:
        rates = runs[(engine, cov, jobs, channel)]
        rows.append({"engine": engine, "coverage": cov, "cores": jobs, "channel": channel,
                     "median_exec_per_s": round(statistics.median(rates)),
                     "per_core": round(statistics.median(rates) / jobs), "runs": [round(x) for x in rates]})
    # The transports of one engine, coverage and core count were measured in the same run:
    # their ratio run by run says more than a ratio of medians on a busy machine.
    ratios: list[dict[str, Any]] = []
    for engine, cov, jobs, channel in modes:
        if channel == "shm" and (engine, cov, jobs, "pipe") in runs:
            per_run = [a / b for a, b in zip(runs[(engine, cov, jobs, "shm")], runs[(engine, cov, jobs, "pipe")])]
            ratios.append({"engine": engine, "coverage": cov, "cores": jobs, "shm_over_pipe": [round(x, 3) for x in
                           per_run], "median_shm_over_pipe": round(statistics.median(per_run), 3)})
    if args.json:
        print(json.dumps({"modes": rows, "ratios": ratios} if ratios else rows, indent=2))
        return
    print("\n| engine | RISC-V coverage | cores | channel | median exec/s | per core | runs |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['engine']} | {'on' if row['coverage'] else 'off'} | {row['cores']} | {row['channel']} | "
              f"{row['median_exec_per_s']:,} | {row['per_core']:,} | {', '.join(f'{x:,}' for x in row['runs'])} |")

    if ratios:
        print("\n| engine | RISC-V coverage | cores | shm / pipe, run by run | median |")
        print("|---|---|---|---|---|")
        for q in ratios:
            print(f"| {q['engine']} | {'on' if q['coverage'] else 'off'} | {q['cores']} | "
                  f"{', '.join(f'{x:.2f}' for x in q['shm_over_pipe'])} | **{q['median_shm_over_pipe']:.2f}** |")


if __name__ == "__main__":
    main()
