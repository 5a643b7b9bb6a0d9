#!/usr/bin/env python3
"""Executions per second of the fuzz driver, per engine, with and without RISC-V
coverage, on one core and on two, per transport to the executor (docs/perf.md).

Every run starts from the same corpus (grown once by a warm-up run of libFuzzer with
coverage, so both engines see the same mix of lengths), runs --seconds, and reads the
engine's own count: libFuzzer's final stats (summed over -jobs workers), AFL++'s
fuzzer_stats (summed over -M/-S instances). The modes of one run are measured back to
back in an order rotated from run to run; the table gives the median of --runs.

Besides the engine's rate (wall clock: on a busy machine, mostly the share of a CPU the
run got), each mode's executions per CPU second: the executions over the CPU time (user +
system) of every process of the run, the engine, its drivers and their executors (this
process is their subreaper, so an executor that outlives its driver by a moment is
waited for and counted too). With the driver and its executor on one CPU, that is what one
core does when it is not shared, and it moves far less with the machine's load.

    bench/fuzz_throughput.py [--routine riscv/copy_user] [--seconds 20] [--runs 3] [--json]
                             [--engine libfuzzer|afl]... [--coverage on|off]... [--cores 1|2]...
                             [--channel shm|pipe]... [--max-len N]

--engine, --coverage, --cores and --channel pick modes (each repeatable; default: every
mode but the pipe channel), e.g. the smallest run, `--engine libfuzzer --coverage on
--cores 1`; `--channel shm --channel pipe` measures the transports (COPYFUZZ_CHANNEL)
side by side. --max-len caps the inputs' n (COPYFUZZ_MAX_LEN; 0: every case copies nothing,
so what is left is the per-execution cost of the engine, the handoff and the harness).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tool"))
from copyfuzz import envs, paths  # noqa: E402  (the driver's variables: fuzz/envs.def; build paths, O=)

LIBFUZZER = paths.libfuzzer_target(ROOT)
AFL = paths.afl_target(ROOT)
PLUGIN = paths.plugin(ROOT)
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> None:
    """Orphans of a run (an executor whose driver has exited, killed by PR_SET_PDEATHSIG)
    become this process's children, so that waiting for them adds their CPU time."""
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("cannot become the runs' subreaper (prctl)")


def cpu_seconds_after_reaping() -> float:
    """The CPU time of every child waited for so far, after waiting for the orphans left."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.02)
    else:
        raise SystemExit("a process of the run outlived it by 30 s")
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


MAX_LEN: int | None = None  # --max-len


def driver_env(routine: str, coverage: bool, findings: Path, channel: str = "shm") -> dict[str, str]:
    kind = "clear" if "clear" in routine else "memcpy" if "memcpy" in routine else "copy"
    return envs.driver_env(executor=paths.executor(ROOT, routine, 64), plugin=PLUGIN if coverage else "",
                           kind=kind, profile="exact", findings=findings, channel=channel, max_len=MAX_LEN)


def libfuzzer(routine: str, coverage: bool, jobs: int, seconds: int, corpus: Path, tmp: Path,
              channel: str) -> tuple[float, int]:
    """(exec/s as libFuzzer counts it, executions)"""
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
    units = [int(m.group(1)) for log in logs for m in [re.search(r"stat::number_of_executed_units:\s*(\d+)", log)]
             if m]
    if len(rates) != jobs or len(units) != jobs:
        raise SystemExit(f"libFuzzer gave {len(rates)} rates for {jobs} jobs:\n{proc.stderr[-2000:]}")
    return sum(rates), sum(units)


def afl(routine: str, coverage: bool, jobs: int, seconds: int, corpus: Path, tmp: Path,
        channel: str) -> tuple[float, int]:
    """(exec/s as afl-fuzz counts it, executions)"""
    out = tmp / "afl"
    env = {**driver_env(routine, coverage, tmp, channel), "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1",
           "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1", "AFL_QUIET": "1"}
    # afl-fuzz binds itself to a core no other afl-fuzz holds, and gives up when there is
    # none (other campaigns on a shared machine): one afl-fuzz is bound by taskset instead,
    # the same placement (afl-fuzz, the driver and its executor on one CPU).
    bind: list[str] = []
    if jobs == 1:
        env["AFL_NO_AFFINITY"] = "1"
        bind = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    names = ["default"] if jobs == 1 else ["main", *(f"sec{i}" for i in range(1, jobs))]
    procs = []
    for i, name in enumerate(names):
        argv = ["afl-fuzz", "-i", str(corpus), "-o", str(out), "-V", str(seconds), "-s", str(i + 1)]
        if name != "default":
            argv += ["-M" if name == "main" else "-S", name]
        procs.append(subprocess.Popen([*bind, *argv, "--", str(AFL)], env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
    for p in procs:
        p.wait(timeout=seconds + 120)
    total, execs = 0.0, 0
    for name in names:
        stats = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in
                 (out / name / "fuzzer_stats").read_text().splitlines())}
        total += int(stats["execs_done"]) / max(1, int(stats["run_time"]))
        execs += int(stats["execs_done"])
    return total, execs


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
    ap.add_argument("--max-len", type=int, help="the inputs' largest n (COPYFUZZ_MAX_LEN)")
    args = ap.parse_args()
    global MAX_LEN
    MAX_LEN = args.max_len
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), "all"], cwd=ROOT, check=True)
    modes = [(engine, cov, jobs, channel) for jobs in args.cores or (1, 2)
             for engine in args.engine or ("libfuzzer", "afl")
             for cov in (True, False) if ("on" if cov else "off") in (args.coverage or ("on", "off"))
             for channel in args.channel or ("shm",)]
    runs: dict[tuple[str, bool, int, str], list[float]] = {m: [] for m in modes}
    per_cpu: dict[tuple[str, bool, int, str], list[float]] = {m: [] for m in modes}
    become_subreaper()
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
                cpu = cpu_seconds_after_reaping()
                with tempfile.TemporaryDirectory(prefix="run-", dir=scratch) as tmp:
                    rate, execs = (libfuzzer if engine == "libfuzzer" else afl)(args.routine, cov, jobs, args.seconds,
                                                                               corpus, Path(tmp), channel)
                cpu = cpu_seconds_after_reaping() - cpu
                runs[mode].append(rate)
                per_cpu[mode].append(execs / cpu)
                print(f"run {r + 1}: {engine:9s} coverage={'on ' if cov else 'off'} jobs={jobs} channel={channel}: "
                      f"{rate:,.0f} exec/s, {execs / cpu:,.0f} exec per CPU s", flush=True)
    rows: list[dict[str, Any]] = []
    for engine, cov, jobs, channel in modes:
        rates = runs[(engine, cov, jobs, channel)]
        cpu_rates = per_cpu[(engine, cov, jobs, channel)]
        rows.append({"engine": engine, "coverage": cov, "cores": jobs, "channel": channel,
                     "median_exec_per_cpu_s": round(statistics.median(cpu_rates)),
                     "exec_per_cpu_s": [round(x) for x in cpu_rates],
                     "median_exec_per_s": round(statistics.median(rates)),
                     "per_core": round(statistics.median(rates) / jobs), "runs": [round(x) for x in rates]})
    # The transports of one engine, coverage and core count were measured in the same run:
    # their ratio run by run says more than a ratio of medians on a busy machine.
    ratios: list[dict[str, Any]] = []
    for engine, cov, jobs, channel in modes:
        if channel == "shm" and (engine, cov, jobs, "pipe") in runs:
            shm, pipe = (engine, cov, jobs, "shm"), (engine, cov, jobs, "pipe")
            per_run = [a / b for a, b in zip(runs[shm], runs[pipe])]
            per_run_cpu = [a / b for a, b in zip(per_cpu[shm], per_cpu[pipe])]
            ratios.append({"engine": engine, "coverage": cov, "cores": jobs,
                           "shm_over_pipe": [round(x, 3) for x in per_run],
                           "median_shm_over_pipe": round(statistics.median(per_run), 3),
                           "shm_over_pipe_per_cpu_s": [round(x, 3) for x in per_run_cpu],
                           "median_shm_over_pipe_per_cpu_s": round(statistics.median(per_run_cpu), 3)})
    if args.json:
        print(json.dumps({"modes": rows, "ratios": ratios} if ratios else rows, indent=2))
        return
    print("\n| engine | RISC-V coverage | cores | channel | median exec per CPU s | runs | median exec/s "
          "| per core | runs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['engine']} | {'on' if row['coverage'] else 'off'} | {row['cores']} | {row['channel']} | "
              f"**{row['median_exec_per_cpu_s']:,}** | {', '.join(f'{x:,}' for x in row['exec_per_cpu_s'])} | "
              f"{row['median_exec_per_s']:,} | {row['per_core']:,} | {', '.join(f'{x:,}' for x in row['runs'])} |")

    if ratios:
        print("\n| engine | RISC-V coverage | cores | shm / pipe per CPU s, run by run | median "
              "| shm / pipe exec/s, run by run | median |")
        print("|---|---|---|---|---|---|---|")
        for q in ratios:
            print(f"| {q['engine']} | {'on' if q['coverage'] else 'off'} | {q['cores']} | "
                  f"{', '.join(f'{x:.2f}' for x in q['shm_over_pipe_per_cpu_s'])} | "
                  f"**{q['median_shm_over_pipe_per_cpu_s']:.2f}** | "
                  f"{', '.join(f'{x:.2f}' for x in q['shm_over_pipe'])} | {q['median_shm_over_pipe']:.2f} |")


if __name__ == "__main__":
    main()
