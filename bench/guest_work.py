#!/usr/bin/env python3
"""What the guest executes per fuzz execution, counted, not timed (docs/perf.md).

Runs the libFuzzer target, in its file mode (each input once, no mutation), on inputs
made as bench/fuzz_throughput.py makes its fixed workload's seeds (the same first 64, and
more of their kind: n below 4,096, median about 44), with QEMU's execution log on
(QEMU_LOG=exec,nochain: a line for every translation block the guest enters, naming its
function), read through a FIFO, never stored. It prints the blocks by function: per
executor start (what runs before its first case) and per case (a case: an entry of
run_case). The same build gives the same counts on any machine and any day (but for a
few blocks of VARIES), so a change to the executor's work is judged by two runs, not by
medians of times that drift by a tenth within an hour. It counts blocks, not
instructions or time: a block of the routine and one of memcpy differ, and what the
driver, QEMU and the kernel do is not in it (fuzz_throughput.py times those).

    bench/guest_work.py [--routine riscv/copy_user] [--inputs 512] [--tree DIR]... [--json]

--tree DIR counts another checkout's build too (`make all` there), on the same cases, in a
column beside this one's. (A fuzzing run would not do: a build whose code moved hashes
the routine's edges elsewhere, so libFuzzer's mutations take other paths.)
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tool"))
sys.path.insert(0, str(ROOT / "bench"))
import fuzz_throughput  # noqa: E402  (the fixed workload and the driver's environment: one home)
from copyfuzz import paths, routines  # noqa: E402
from copyfuzz.errors import CopyfuzzError  # noqa: E402

CASE_FUNCTION = b"run_case"  # the executor's per-case function (harness/executor.c)
# The only counts that depend on more than the build and the cases: the executor's serve
# loop in main looks at the channel again each time it wakes while the driver is busy, and
# the start parses fd numbers whose digits depend on what was open. A few blocks each.
VARIES = ("main", "cf_parse_u64")
# A logged case runs thousands of times slower than a plain one: the executor's watchdog
# and the driver's wait get room (COPYFUZZ_TIMEOUT_MS, fuzz/envs.def).
TIMEOUT_MS = 60000


class Tally:
    """Blocks counted from QEMU's log lines, split at each executor's first case."""

    def __init__(self) -> None:
        self.start: collections.Counter[bytes] = collections.Counter()
        self.cases: collections.Counter[bytes] = collections.Counter()
        self.starts = 0

    def read(self, fifo: Path, done: threading.Event) -> None:
        """Every writer's lines, one executor after another, until done and a last open."""
        while not done.is_set():
            with open(fifo, "rb") as f:  # waits for the next qemu (or the last wake-up)
                first = True
                for line in f:
                    if first:
                        self.starts += 1
                        first = False
                    if line.rstrip().endswith(b" " + CASE_FUNCTION):
                        self.cases[line] += 1
                        break
                    self.start[line] += 1
                self.cases.update(f)  # the rest, at C speed


def by_function(lines: collections.Counter[bytes]) -> tuple[dict[str, int], dict[str, int]]:
    """(blocks by function, entries by function: blocks at its lowest address)"""
    blocks: collections.Counter[str] = collections.Counter()
    at: dict[tuple[str, int], int] = collections.defaultdict(int)
    for line, k in lines.items():
        parts = line.split()  # Trace 0: <host code> [<flags>/<pc>/<flags>/<cflags>] <function>
        if len(parts) < 4 or parts[0] != b"Trace":
            continue
        name = parts[4].decode(errors="replace") if len(parts) > 4 else "(no symbol)"
        fields = parts[3].strip(b"[]").split(b"/")
        pc = int(fields[1], 16) if len(fields) > 1 else 0
        blocks[name] += k
        at[name, pc] += k
    lowest: dict[str, int] = {}
    for (name, pc) in at:
        lowest[name] = min(pc, lowest.get(name, pc))
    return dict(blocks), {name: at[name, pc] for name, pc in lowest.items()}


def count(tree: Path, routine: str, inputs: int, work: Path) -> dict[str, Any]:
    corpus = work / "corpus"
    corpus.mkdir()
    fuzz_throughput.fixed_corpus(corpus, inputs)
    fifo = work / "qemu.log"
    os.mkfifo(fifo)
    env = fuzz_throughput.driver_env(tree, routine, True, work / "findings")
    env.update(QEMU_LOG="exec,nochain", QEMU_LOG_FILENAME=str(fifo), COPYFUZZ_TIMEOUT_MS=str(TIMEOUT_MS))
    tally = Tally()
    done = threading.Event()
    reader = threading.Thread(target=tally.read, args=(fifo, done), daemon=True)
    reader.start()
    # One CPU for the driver and the executor: the executor then never spins waiting for
    # the next case (executor_channel.c), which would count blocks by the clock.
    one_cpu = ["taskset", "-c", str(min(os.sched_getaffinity(0)))]
    argv = [*one_cpu, str(paths.libfuzzer_target(tree)), "-runs=1", f"-artifact_prefix={work}/",
            *map(str, sorted(corpus.iterdir()))]
    proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
    done.set()
    with open(fifo, "wb"):  # wakes the reader if it waits for a writer that will not come
        pass
    reader.join()
    if proc.returncode != 0:
        raise SystemExit(f"libFuzzer exited {proc.returncode} on {tree}:\n{proc.stderr[-2000:]}")
    start, _ = by_function(tally.start)
    blocks, entries = by_function(tally.cases)
    cases = entries.get(CASE_FUNCTION.decode(), 0)
    if cases == 0 or tally.starts == 0:
        raise SystemExit(f"no case was logged on {tree}: is {paths.libfuzzer_target(tree)} built with the plugin?")
    if cases != inputs:
        raise SystemExit(f"{inputs} inputs gave {cases} logged cases on {tree}:\n{proc.stderr[-2000:]}")
    return {"tree": str(tree), "label": fuzz_throughput.label(tree), "inputs": inputs, "starts": tally.starts,
            "cases": cases, "start_blocks": start, "case_blocks": blocks, "varies": list(VARIES)}


def report(rows: list[dict[str, Any]]) -> None:
    first = rows[0]
    names = sorted(first["case_blocks"], key=lambda n: -first["case_blocks"][n])
    for row in rows[1:]:
        names += [n for n in sorted(row["case_blocks"], key=lambda n: -row["case_blocks"][n]) if n not in names]
    print(f"cases: {first['inputs']:,} inputs made as fuzz_throughput.py's fixed workload's, each run once")
    for row in rows:
        print(f"{row['label']}: {row['cases']:,} cases, {row['starts']} executor start(s)")
    print("\nblocks per case, by function (those under 0.5 in every column left out)\n")
    print("| function | " + " | ".join(r["label"] for r in rows) + " |")
    print("|---|" + "---|" * len(rows))
    for name in names:
        per = [r["case_blocks"].get(name, 0) / r["cases"] for r in rows]
        if max(per) >= 0.5:
            note = " (varies with timing)" if name in VARIES else ""
            print(f"| `{name}`{note} | " + " | ".join(f"{p:,.1f}" for p in per) + " |")
    print("| **all** | " + " | ".join(f"**{sum(r['case_blocks'].values()) / r['cases']:,.1f}**" for r in rows)
          + " |")
    print("| per executor start | " + " | ".join(f"{sum(r['start_blocks'].values()) / r['starts']:,.0f}"
                                                for r in rows) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--routine", default="riscv/copy_user")
    ap.add_argument("--inputs", type=int, default=512, help="how many (default 512)")
    ap.add_argument("--tree", type=Path, action="append", default=[], help="another built checkout (repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not 1 <= args.inputs <= 100_000:
        ap.error("--inputs must be 1..100000")
    try:
        routines.find(routines.discover(ROOT), args.routine)
    except CopyfuzzError as e:
        ap.error(str(e))
    rows = []
    for tree in [ROOT, *args.tree]:
        tree = tree.resolve()
        if not paths.libfuzzer_target(tree).is_file():
            ap.error(f"{paths.libfuzzer_target(tree)} is missing: run 'make all' in {tree}")
        with tempfile.TemporaryDirectory(prefix="guest-work-") as tmp:
            rows.append(count(tree, args.routine, args.inputs, Path(tmp)))
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
    else:
        report(rows)


if __name__ == "__main__":
    main()
