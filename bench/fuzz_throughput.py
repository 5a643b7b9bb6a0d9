"""Executions per second of the fuzz driver, per engine, with and without RISC-V
coverage, on one core and on two, per transport to the executor (docs/perf.md).

The workload (--workload):
  fixed   (the default) every run does the same work on every machine: the engine starts
          from a seed corpus this script generates from one fixed seed (WORKLOAD_INPUTS
          inputs in the driver's layout, n's width uniform in 0..WORKLOAD_WIDTH bits, so
          n < 4096 log-uniform; offsets, fault sides and page counts uniform) with a fixed
          engine seed and COPYFUZZ_MAX_LEN=4096 (so its mutants copy at most 4 KiB too),
          and stops after --execs executions (libFuzzer -runs, AFL++ -E).
          libFuzzer then runs the very same inputs in every run of the same build (a
          build whose coverage differs takes other paths from the same seeds).
  warmup  the older bench: a corpus grown by a --warmup s libFuzzer run, then --seconds of
          each engine. What the warm-up happened to grow decides the lengths and so the
          cost of an execution: the figure moves with it (docs/perf.md).

Each mode reads the engine's own count: libFuzzer's final stats (summed over -jobs
workers), AFL++'s fuzzer_stats (summed over -M/-S instances). The modes of one run are
measured back to back in an order rotated from run to run; the table gives the median of
--runs, and the spread (smallest and largest).

Besides the engine's rate (wall clock: on a busy machine, mostly the share of a CPU the
run got), each mode's executions per CPU second: the executions over the CPU time (user +
system) of every process of the run, the engine, its drivers and their executors (this
process is their subreaper, so an executor that outlives its driver by a moment is
waited for and counted too). With the driver and its executor on one CPU, that is what one
core does when it is not shared, and it moves far less with the machine's load. The
machine's steal time over each mode (/proc/stat) is reported beside it, and the CPU time
of a fixed Python loop at the start (the machine's own speed that day: figures of two days
compare only through it).

--tree DIR (repeatable) measures other checkouts' builds too (e.g. an older commit in a
`git worktree`), each mode of each tree adjacent in one run, with the ratio to the first
tree run by run: side-by-side figures for a change, on the same machine in the same hour.

    bench/fuzz_throughput.py [--routine riscv/copy_user] [--runs 3] [--json]
                             [--workload fixed|warmup] [--execs N] [--seconds 20]
                             [--engine libfuzzer|afl]... [--coverage on|off]...
                             [--cores 1|2]... [--channel shm|pipe]... [--max-len N]
                             [--tree DIR]...

--engine, --coverage, --cores and --channel pick modes (each repeatable; default: both
fuzz engines, every mode but the pipe channel), e.g. the smallest run, `--engine libfuzzer
--coverage on --cores 1`; `--channel shm --channel pipe` measures the transports
(COPYFUZZ_CHANNEL) side by side. --max-len caps the inputs' n (COPYFUZZ_MAX_LEN; 0: every
case copies nothing, so what is left is the per-execution cost of the engine, the handoff
and the harness).
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import random
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
from copyfuzz import (  # noqa: E402  (fuzz/envs.def; the input layout; build paths, O=)
    build,
    envs,
    fuzzinput,
    paths,
    routines,
)

PR_SET_CHILD_SUBREAPER = 36

# The fixed workload: the seed corpus's inputs, generated, never stored (the layout's one
# home is the driver and its mirror, fuzzinput.py).
WORKLOAD_SEED = 20261128
WORKLOAD_INPUTS = 64
WORKLOAD_WIDTH = 12  # n's width in bits: n < 4096
WORKLOAD_MAX_LEN = 4096  # COPYFUZZ_MAX_LEN of its runs (--max-len changes it): mutants stay short too
ENGINE_SEED = 1


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


def steal_ticks() -> tuple[int, int]:
    """(steal, all) jiffies of every CPU so far (/proc/stat): the share of time the
    hypervisor gave the machine's CPUs to someone else."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (fields[7] if len(fields) > 7 else 0), sum(fields)


def machine_reference_ms() -> float:
    """CPU milliseconds of a fixed pure-Python loop (the best of three): what this machine
    does with one CPU today, to set beside the figures of another day. It knows nothing
    of copyfuzz, so a change in it is the machine's (its host, its neighbours), not ours."""
    best = float("inf")
    for _ in range(3):
        t = time.process_time()
        x = 0
        for i in range(2_000_000):
            x = (x * 31 + i) & 0xFFFFFFFF
        best = min(best, time.process_time() - t)
    return 1000 * best


def fixed_corpus(directory: Path, count: int = WORKLOAD_INPUTS) -> list[int]:
    """Writes the fixed workload's seed inputs (count of them: a larger count, the same first
    ones and more of their kind); their n, in order."""
    rng = random.Random(WORKLOAD_SEED)
    lengths = []
    for i in range(count):
        data = bytearray(rng.randbytes(14))
        data[1] = rng.randrange(WORKLOAD_WIDTH + 1)
        (directory / f"input-{i:03d}").write_bytes(bytes(data))
        lengths.append(fuzzinput.decode(ROOT, bytes(data), "copy").n)
    return lengths


class Budget:
    """How long an engine runs: --seconds of wall clock, or --execs executions."""

    def __init__(self, seconds: int | None = None, execs: int | None = None):
        self.seconds, self.execs = seconds, execs

    def libfuzzer(self) -> list[str]:
        return [f"-runs={self.execs}"] if self.execs else [f"-max_total_time={self.seconds}"]

    def afl(self) -> list[str]:
        return ["-E", str(self.execs)] if self.execs else ["-V", str(self.seconds)]

    def timeout(self) -> float:
        return (self.seconds or 600) + 120


def driver_env(root: Path, routine: str, coverage: bool, findings: Path, channel: str = "shm",
               max_len: int | None = None) -> dict[str, str]:
    """The driver's environment for a bundled routine of root's (its kind, profile and
    executor as the tool has them)."""
    r = routines.find(routines.discover(root), routine)
    return envs.driver_env(executor=paths.executor(root, r.name, r.xlen),
                           plugin=paths.plugin(root) if coverage else "", kind=r.kind, profile=r.profile,
                           findings=findings, channel=channel, max_len=max_len,
                           qemu=build.qemu_command(r.xlen, r.arch)[0])


def libfuzzer_stats(logs: list[str], jobs: int, stderr: str) -> tuple[float, int]:
    rates = [float(m.group(1)) for log in logs for m in [re.search(r"stat::average_exec_per_sec:\s*(\d+)", log)]
             if m]
    units = [int(m.group(1)) for log in logs for m in [re.search(r"stat::number_of_executed_units:\s*(\d+)", log)]
             if m]
    if len(rates) != jobs or len(units) != jobs:
        raise SystemExit(f"libFuzzer gave {len(rates)} rates for {jobs} jobs:\n{stderr[-2000:]}")
    return sum(rates), sum(units)


def libfuzzer(root: Path, env: dict[str, str], jobs: int, budget: Budget, corpus: Path,
              tmp: Path) -> tuple[float, int]:
    """(exec/s as libFuzzer counts it, executions)"""
    work = tmp / "lf"
    work.mkdir()
    shutil.copytree(corpus, work / "corpus")
    argv = [str(paths.libfuzzer_target(root)), *budget.libfuzzer(), "-print_final_stats=1",
            f"-seed={ENGINE_SEED}", f"-artifact_prefix={work}/", str(work / "corpus")]
    if jobs > 1:
        argv[1:1] = [f"-jobs={jobs}", f"-workers={jobs}"]
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=budget.timeout())
    logs = [proc.stderr] if jobs == 1 else [p.read_text() for p in work.glob("fuzz-*.log")]
    return libfuzzer_stats(logs, jobs, proc.stderr)


def afl(root: Path, env: dict[str, str], jobs: int, budget: Budget, corpus: Path,
        tmp: Path) -> tuple[float, int]:
    """(exec/s as afl-fuzz counts it, executions)"""
    out = tmp / "afl"
    env = {**env, "AFL_SKIP_CPUFREQ": "1", "AFL_NO_UI": "1", "AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES": "1",
           "AFL_QUIET": "1"}
    # afl-fuzz binds itself to a core no other afl-fuzz holds, and gives up when there is
    # none (other campaigns on a shared machine): one afl-fuzz is bound by taskset instead,
    # the same placement (afl-fuzz, the driver and its executor on one CPU).
    bind: list[str] = []
    if jobs == 1:
        env["AFL_NO_AFFINITY"] = "1"
        bind = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    names = ["default"] if jobs == 1 else ["main", *(f"sec{i}" for i in range(1, jobs))]
    procs = []
    per_instance = Budget(budget.seconds, budget.execs // jobs if budget.execs else None)
    for i, name in enumerate(names):
        argv = ["afl-fuzz", "-i", str(corpus), "-o", str(out), *per_instance.afl(), "-s", str(ENGINE_SEED + i)]
        if name != "default":
            argv += ["-M" if name == "main" else "-S", name]
        procs.append(subprocess.Popen([*bind, *argv, "--", str(paths.afl_target(root))], env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    for p in procs:
        p.wait(timeout=budget.timeout())
    total, execs = 0.0, 0
    for name in names:
        stats = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in
                 (out / name / "fuzzer_stats").read_text().splitlines())}
        total += int(stats["execs_done"]) / max(1, int(stats["run_time"]))
        execs += int(stats["execs_done"])
    return total, execs


ENGINES = {"libfuzzer": libfuzzer, "afl": afl}
Mode = tuple[str, bool, int, str, Path]  # engine, coverage, cores, channel, tree


def label(root: Path) -> str:
    """A tree by its commit (and its path, when it is not this checkout)."""
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
    name = rev.stdout.strip() or "?"
    return name if root == ROOT else f"{name} ({root})"


def spread(xs: list[float]) -> str:
    return f"{min(xs):,.0f}-{max(xs):,.0f}" if xs else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--routine", default="riscv/copy_user")
    ap.add_argument("--workload", choices=["fixed", "warmup"], default="fixed")
    ap.add_argument("--execs", type=int, help="executions per mode (fixed workload; default 200000)")
    ap.add_argument("--seconds", type=int, help="seconds per mode (warmup workload; default 20)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, help="seconds of libFuzzer growing the shared corpus (warmup workload; "
                    "default 30)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--engine", action="append", choices=sorted(ENGINES), help="only this engine")
    ap.add_argument("--coverage", action="append", choices=["on", "off"], help="only with or without it")
    ap.add_argument("--cores", action="append", type=int, choices=[1, 2], help="only on this many cores")
    ap.add_argument("--channel", action="append", choices=["shm", "pipe"],
                    help="the transport to the executor (COPYFUZZ_CHANNEL; default: shm)")
    ap.add_argument("--max-len", type=int, help="the inputs' largest n (COPYFUZZ_MAX_LEN)")
    ap.add_argument("--tree", action="append", type=Path, default=[],
                    help="another checkout whose build to measure beside this one")
    args = ap.parse_args()
    fixed = args.workload == "fixed"
    if fixed and (args.seconds is not None or args.warmup is not None):
        ap.error("--seconds and --warmup are for --workload warmup; the fixed workload counts --execs")
    if not fixed and args.execs is not None:
        ap.error("--execs is for the fixed workload; --workload warmup runs --seconds")
    args.execs = args.execs or 200_000
    args.seconds = args.seconds or 20
    args.warmup = args.warmup or 30
    if fixed and args.max_len is None:
        args.max_len = WORKLOAD_MAX_LEN
    budget = Budget(execs=args.execs) if fixed else Budget(seconds=args.seconds)
    trees = list(dict.fromkeys([ROOT, *(t.resolve() for t in args.tree)]))  # each once
    for tree in trees:
        subprocess.run(["make", "-s", *paths.make_vars(tree), "all"], cwd=tree, check=True)
    modes: list[Mode] = [(engine, cov, jobs, channel, tree) for jobs in args.cores or (1, 2)
                         for engine in args.engine or ("libfuzzer", "afl")
                         for cov in (True, False) if ("on" if cov else "off") in (args.coverage or ("on", "off"))
                         for channel in args.channel or ("shm",) for tree in trees]
    modes = list(dict.fromkeys(modes))  # a value given twice is one mode (whole groups of trees go)
    runs: dict[Mode, list[float]] = {m: [] for m in modes}
    per_cpu: dict[Mode, list[float]] = {m: [] for m in modes}
    steal: dict[Mode, list[float]] = {m: [] for m in modes}
    become_subreaper()
    reference = machine_reference_ms()
    print(f"machine reference: {reference:.0f} ms CPU (a fixed Python loop, best of 3; lower is faster)", flush=True)
    with tempfile.TemporaryDirectory(prefix="copyfuzz-bench-") as scratch:
        corpus = Path(scratch) / "corpus"
        corpus.mkdir()
        if fixed:
            lengths = sorted(fixed_corpus(corpus))
            print(f"workload: {len(lengths)} seed inputs, n median {statistics.median(lengths):.0f}, "
                  f"largest {lengths[-1]}; COPYFUZZ_MAX_LEN={args.max_len}; {args.execs:,} executions per mode, "
                  f"engine seed {ENGINE_SEED}",
                  flush=True)
        else:
            subprocess.run([str(paths.libfuzzer_target(ROOT)), f"-max_total_time={args.warmup}", "-seed=7",
                            str(corpus)], env=driver_env(ROOT, args.routine, True, Path(scratch)),
                           capture_output=True, check=True, timeout=args.warmup + 120)
            print(f"corpus: {sum(1 for _ in corpus.iterdir())} inputs after a {args.warmup} s warm-up", flush=True)
        # Rotate whole groups (a mode in every tree), so the trees of a mode stay adjacent.
        groups = [modes[i:i + len(trees)] for i in range(0, len(modes), len(trees))]
        for r in range(args.runs):
            for k in range(len(groups)):
                for mode in groups[(k + r) % len(groups)]:
                    engine, cov, jobs, channel, tree = mode
                    cpu = cpu_seconds_after_reaping()
                    s0 = steal_ticks()
                    with tempfile.TemporaryDirectory(prefix="run-", dir=scratch) as tmp:
                        env = driver_env(tree, args.routine, cov, Path(tmp), channel, args.max_len)
                        rate, execs = ENGINES[engine](tree, env, jobs, budget, corpus, Path(tmp))
                    cpu = cpu_seconds_after_reaping() - cpu
                    s1 = steal_ticks()
                    runs[mode].append(rate)
                    per_cpu[mode].append(execs / cpu)
                    steal[mode].append(100 * (s1[0] - s0[0]) / max(1, s1[1] - s0[1]))
                    print(f"run {r + 1}: {engine:9s} coverage={'on ' if cov else 'off'} jobs={jobs} "
                          f"channel={channel} {label(tree)}: {rate:,.0f} exec/s, {execs / cpu:,.0f} exec per CPU s "
                          f"({execs:,} executions, steal {steal[mode][-1]:.1f} %)", flush=True)
    report(args, modes, trees, runs, per_cpu, steal, reference)


def report(args: argparse.Namespace, modes: list[Mode], trees: list[Path], runs: dict[Mode, list[float]],
           per_cpu: dict[Mode, list[float]], steal: dict[Mode, list[float]], reference: float) -> None:
    rows: list[dict[str, Any]] = []
    for mode in modes:
        engine, cov, jobs, channel, tree = mode
        rates, cpu_rates = runs[mode], per_cpu[mode]
        rows.append({"engine": engine, "coverage": cov, "cores": jobs, "channel": channel, "tree": label(tree),
                     "workload": args.workload,
                     "median_exec_per_cpu_s": round(statistics.median(cpu_rates)),
                     "exec_per_cpu_s": [round(x) for x in cpu_rates],
                     "median_exec_per_s": round(statistics.median(rates)),
                     "per_core": round(statistics.median(rates) / jobs), "runs": [round(x) for x in rates],
                     "steal_percent": [round(x, 1) for x in steal[mode]]})
    # Ratios from one run say more than ratios of medians on a busy machine: the transports
    # of one mode, and the trees of one mode, were measured side by side.
    ratios: list[dict[str, Any]] = []
    for mode in modes:
        engine, cov, jobs, channel, tree = mode
        pairs: list[tuple[str, Mode]] = []
        if channel == "shm" and (engine, cov, jobs, "pipe", tree) in runs:
            pairs.append(("shm / pipe", (engine, cov, jobs, "pipe", tree)))
        if tree != trees[0]:
            pairs.append((f"{label(tree)} / {label(trees[0])}", (engine, cov, jobs, channel, trees[0])))
        for what, other in pairs:
            per_run_cpu = [a / b for a, b in zip(per_cpu[mode], per_cpu[other], strict=True)]
            ratios.append({"engine": engine, "coverage": cov, "cores": jobs, "channel": channel,
                           "ratio": what, "per_cpu_s": [round(x, 3) for x in per_run_cpu],
                           "median_per_cpu_s": round(statistics.median(per_run_cpu), 3)})
    if args.json:
        print(json.dumps({"modes": rows, "ratios": ratios, "machine_reference_ms": round(reference)}, indent=2))
        return
    print("\n| engine | RISC-V coverage | cores | channel | tree | median exec per CPU s | spread | runs "
          "| median exec/s | steal % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['engine']} | {'on' if row['coverage'] else 'off'} | {row['cores']} | {row['channel']} | "
              f"{row['tree']} | **{row['median_exec_per_cpu_s']:,}** | {spread(row['exec_per_cpu_s'])} | "
              f"{', '.join(f'{x:,}' for x in row['exec_per_cpu_s'])} | {row['median_exec_per_s']:,} | "
              f"{', '.join(f'{x:.1f}' for x in row['steal_percent'])} |")
    if ratios:
        print("\n| engine | RISC-V coverage | cores | channel | ratio | per CPU s, run by run | median |")
        print("|---|---|---|---|---|---|---|")
        for q in ratios:
            print(f"| {q['engine']} | {'on' if q['coverage'] else 'off'} | {q['cores']} | {q['channel']} | "
                  f"{q['ratio']} | {', '.join(f'{x:.2f}' for x in q['per_cpu_s'])} | "
                  f"**{q['median_per_cpu_s']:.2f}** |")


if __name__ == "__main__":
    main()
