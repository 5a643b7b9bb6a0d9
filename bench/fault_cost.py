#!/usr/bin/env python3
"""What one fault costs the harness, against what it costs the host (docs/perf.md).

Through `executor serve`, the same 8-byte copy case repeated: with no fault, with
the source's own page unmapped (one fault: the byte path fails at once), and with a
fault in the middle of a 64-byte copy (two faults: the word access, then the
bytewise retry). Also a native x86 SIGSEGV round trip. Median of --runs.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tool"))
from copyfuzz import paths  # noqa: E402  (build paths, O= honoured)
from copyfuzz.records import Case  # noqa: E402  (the one record definition)

NO_FAULT = 2**64 - 1


def us_per_case(elf: Path, n: int, src_fault: int, count: int) -> float:
    src_off = 0 if src_fault in (NO_FAULT, 0) else (-src_fault) % 4096
    blob = b"".join(Case(kind=0, profile=1, id=i, n=n, src_off=src_off, dst_off=0,
                         src_fault=src_fault, dst_fault=NO_FAULT).pack() for i in range(count))
    qemu = [] if platform.machine() == "riscv64" else [os.environ.get("QEMU", "qemu-riscv64")]
    t0 = time.perf_counter()
    out = subprocess.run(qemu + [str(elf), "serve"], input=blob, check=True,
                         stdout=subprocess.PIPE).stdout
    dt = time.perf_counter() - t0
    assert len(out) == 128 * count
    return dt / count * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--count", type=int, default=50000)
    args = ap.parse_args()
    elf = paths.executor(ROOT, "riscv/copy_user", 64)
    native = paths.host_dir(ROOT) / "native_fault"
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), str(paths.executor(paths.REL, "riscv/copy_user", 64))],
                   cwd=ROOT, check=True)
    native.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-O2", "-o", str(native), str(ROOT / "bench/native_fault.c")], check=True)

    rows: dict[str, list[float]] = {"no fault (n=8)": [], "1 fault (n=8, src page gone)": [],
            "2 faults (n=64, src fault at 40)": [], "native x86 SIGSEGV round trip": []}
    for _ in range(args.runs):
        rows["no fault (n=8)"].append(us_per_case(elf, 8, NO_FAULT, args.count))
        rows["1 fault (n=8, src page gone)"].append(us_per_case(elf, 8, 0, args.count))
        rows["2 faults (n=64, src fault at 40)"].append(us_per_case(elf, 64, 40, args.count))
        rows["native x86 SIGSEGV round trip"].append(
            float(subprocess.run([str(native)], check=True, capture_output=True, text=True).stdout))
    med = {k: statistics.median(v) for k, v in rows.items()}
    for k, v in med.items():
        print(f"{k:34s} {v:6.2f} us (median of {args.runs})")
    print(f"{'=> one fault under qemu-riscv64':34s} "
          f"{med['1 fault (n=8, src page gone)'] - med['no fault (n=8)']:6.2f} us")


if __name__ == "__main__":
    main()
