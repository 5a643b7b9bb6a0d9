#!/usr/bin/env python3
"""Executions per second of whole `copyfuzz fuzz` campaigns on a routine where most inputs
are findings, beside a clean routine of the same code (docs/perf.md, issue 15).

Each pair is a mutant and the routine it is built from (the same code with one seeded
defect): riscv/mutants/tail-extra-byte (one byte stored past the end on nearly every case
with n > 0) against riscv/copy_user, riscv/mutants/fixup-full-size (no-progress on every
fault inside the copy) against riscv/copy_user_bytewise. Each run fuzzes every (engine,
routine) for --seconds from an empty corpus, clean and buggy back to back, in an order
rotated from run to run; the rate is the campaign's own (--json: executions over the
engines' time, so the dense routine pays for its rounds and the triage that runs beside
the engine, not for the triage after it). The table gives the median
of --runs, the ratio buggy / clean of those medians, and the median of the per-run ratios
(run k fuzzes both routines with seed k, so each run is a pair).

A campaign's rate also depends on the inputs the engine comes to prefer on each routine
(long copies cost more), so --replay K measures the driver alone on the same K random
inputs for both routines of a pair: libFuzzer's first pass over a corpus directory
(-runs=0 runs each input once), the mutant's (class, fault pc) pairs claimed beforehand in
a COPYFUZZ_SEEN directory, so its findings are the repeats a campaign sees.

    bench/keepgoing_throughput.py [--seconds 20] [--runs 3] [--engine libfuzzer|afl]... [--jobs N] [--json]
        [--pair BUGGY=CLEAN]...   (either side a routine or FILE.S:SYMBOL[:KIND])
    bench/keepgoing_throughput.py --replay 20000 [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import random
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

PAIRS = [("riscv/mutants/tail-extra-byte", "riscv/copy_user"),
         ("riscv/mutants/fixup-full-size", "riscv/copy_user_bytewise")]


def target_args(routine: str) -> list[str]:
    """A bundled routine's name, or FILE.S:SYMBOL[:KIND] (a file from outside the tree, such
    as a kernel's uaccess.S fetched for the trial: `fuzz FILE --symbol SYMBOL[:KIND]`)."""
    if ".S:" in routine:
        path, _, symbol = routine.partition(".S:")
        return [f"{path}.S", "--symbol", symbol]
    return [routine]


def campaign(routine: str, engine: str, seconds: int, jobs: int, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="copyfuzz-kg-bench-") as tmp:
        t = Path(tmp)
        proc = subprocess.run([str(ROOT / "copyfuzz"), "fuzz", *target_args(routine), "--engine", engine,
                               "--time", str(seconds),
                               "--jobs", str(jobs), "--seed", str(seed), "--json", "--corpus", str(t / "corpus"),
                               "--findings", str(t / "findings"), "--regressions", str(t / "regressions")],
                              cwd=ROOT, capture_output=True, text=True, timeout=seconds * 3 + 300)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{routine} {engine}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        rep = json.loads(proc.stdout)
    return {"routine": routine, "engine": engine, "exec_per_s": rep["exec_per_s"], "rounds": rep["rounds"],
            "unique": len(rep.get("unique", [])), "count": sum(u["count"] for u in rep.get("unique", [])),
            "executions": rep["executions"]}


def replay_rate(routine: str, corpus: Path, seen: Path | None, work: Path) -> tuple[int, float]:
    """libFuzzer's pass over the corpus, each input once: (exit status, inputs per second)."""
    env = envs.driver_env(executor=paths.executor(ROOT, routine, 64), plugin=paths.plugin(ROOT), kind="copy",
                          profile="exact", findings=work, seen=seen)
    started = time.monotonic()
    proc = subprocess.run([str(paths.libfuzzer_target(ROOT)), "-runs=0", "-max_len=16", f"-artifact_prefix={work}/",
                           str(corpus)], env=env, capture_output=True, text=True, timeout=3600)
    return proc.returncode, sum(1 for _ in corpus.iterdir()) / (time.monotonic() - started)


def replay(count: int, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="copyfuzz-kg-replay-") as tmp:
        t = Path(tmp)
        corpus = t / "corpus"
        corpus.mkdir()
        rng = random.Random(1)
        for i in range(count):
            (corpus / f"{i:06d}").write_bytes(bytes(rng.randrange(256) for _ in range(14)))
        rates: dict[str, list[float]] = {}
        for run in range(runs):
            for buggy, clean in PAIRS:
                seen = t / f"seen-{buggy.rsplit('/', 1)[-1]}"
                seen.mkdir(exist_ok=True)
                for _ in range(20):  # each pass claims one more pair, until none is new
                    if replay_rate(buggy, corpus, seen, t)[0] == 0:
                        break
                for routine in (buggy, clean) if run % 2 else (clean, buggy):
                    rc, rate = replay_rate(routine, corpus, seen if routine == buggy else None, t)
                    if rc != 0:
                        raise SystemExit(f"{routine}: libFuzzer exited {rc} on the replay")
                    rates.setdefault(routine, []).append(rate)
                    print(f"run {run + 1}: {routine}: {rate:,.0f} inputs/s", file=sys.stderr)
        print("| buggy routine | inputs/s | clean routine | inputs/s | ratio |")
        print("|---|---|---|---|---|")
        for buggy, clean in PAIRS:
            b, c = statistics.median(rates[buggy]), statistics.median(rates[clean])
            print(f"| {buggy} | {b:,.0f} | {clean} | {c:,.0f} | {b / c:.0%} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--engine", action="append", choices=["libfuzzer", "afl"])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--replay", type=int, metavar="K", help="the driver alone on K random inputs (see above)")
    ap.add_argument("--pair", action="append", metavar="BUGGY=CLEAN",
                    help="a pair to measure instead of the bundled ones; either side a routine or "
                         "FILE.S:SYMBOL[:KIND] (repeatable)")
    args = ap.parse_args()
    pairs = [tuple(p.split("=", 1)) for p in args.pair] if args.pair else PAIRS
    if any(len(p) != 2 for p in pairs):
        raise SystemExit("--pair takes BUGGY=CLEAN")
    subprocess.run(["make", "-s", "all", "fuzz-targets"], cwd=ROOT, check=True)
    if args.replay:
        replay(args.replay, args.runs)
        return
    modes = [(e, pair) for e in (args.engine or ["libfuzzer", "afl"]) for pair in pairs]
    # by (engine, pair, routine): a clean routine two pairs share is run for each of them
    results: dict[tuple[str, tuple[str, str], str], list[dict[str, Any]]] = {}
    for run in range(args.runs):
        for engine, pair in modes[run % len(modes):] + modes[:run % len(modes)]:
            order = pair if run % 2 else pair[::-1]
            for routine in order:
                r = campaign(routine, engine, args.seconds, args.jobs, seed=run + 1)
                results.setdefault((engine, pair, routine), []).append(r)
                print(f"run {run + 1}: {engine} {routine}: {r['exec_per_s']:,.0f}/s, {r['rounds']} rounds, "
                      f"{r['unique']} unique, {r['count']:,} finding inputs of {r['executions']:,}", file=sys.stderr)
    rows = []
    for engine, pair in modes:
        buggy, clean = pair
        b = statistics.median(r["exec_per_s"] for r in results[(engine, pair, buggy)])
        c = statistics.median(r["exec_per_s"] for r in results[(engine, pair, clean)])
        share = statistics.median(r["count"] / max(1, r["executions"]) for r in results[(engine, pair, buggy)])
        # run k of both routines had seed k: the ratio of each such pair, then their median
        ratios = [rb["exec_per_s"] / rc["exec_per_s"] if rc["exec_per_s"] else 0.0
                  for rb, rc in zip(results[(engine, pair, buggy)], results[(engine, pair, clean)], strict=True)]
        paired = statistics.median(ratios)
        rows.append({"engine": engine, "buggy": buggy, "clean": clean, "buggy_exec_per_s": b, "clean_exec_per_s": c,
                     "ratio": b / c if c else 0.0, "paired_ratio": paired, "worst_paired_ratio": min(ratios),
                     "finding_share": share,
                     "runs": {k: [r["exec_per_s"] for r in results[(engine, pair, k)]] for k in (buggy, clean)}})
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print("| engine | buggy routine | exec/s | clean routine | exec/s | ratio | ratio per seed, median "
          "| worst | inputs that are findings |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['engine']} | {r['buggy']} | {r['buggy_exec_per_s']:,.0f} | {r['clean']} | "
              f"{r['clean_exec_per_s']:,.0f} | {r['ratio']:.0%} | {r['paired_ratio']:.0%} | "
              f"{r['worst_paired_ratio']:.0%} | {r['finding_share']:.0%} |")


if __name__ == "__main__":
    main()
