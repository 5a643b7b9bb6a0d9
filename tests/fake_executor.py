"""A stand-in executor speaking the real protocol (docs/executor.md), for fast tests.

Run as `python fake_executor.py ELF MODE ...` (ELF as QEMU would get it). Which cases
show which classes is a fixed rule of the case id, so tests know the answers:
  id % 7 == 3   -> wrong-data
  id % 11 == 5  -> wrong-data and imprecise
An ELF path containing "clean" shows nothing; FAKE_SCENARIO selects failures:
  crash   exit 3 with a message after a few records
  nodone  end the stream without DONE
  garbage write bytes with no known magic
  hang    write one PROGRESS record, then nothing for a long time
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tool"))

from copyfuzz import records  # noqa: E402

TOTAL = 100
WRONG = records.class_mask(["wrong-data"])
IMPRECISE = records.class_mask(["imprecise"])


def classes_of(case_id: int, clean: bool) -> int:
    if clean:
        return 0
    mask = 0
    if case_id % 7 == 3:
        mask |= WRONG
    if case_id % 11 == 5:
        mask |= WRONG | IMPRECISE
    return mask


def result_for(case: records.Case, classes: int, profile: int) -> records.Result:
    errors = classes & records.ERROR_MASK[records.PROFILES[profile]]
    return records.Result(type=records.RESULT_CASE, id=case.id, classes=classes, errors=errors,
                          ret=case.n, accessible=case.n, claimed=0, faults=0,
                          dst=0x10000 + case.dst_off, src=0x40000 + case.src_off)


def marker(kind: int, id_: int, ret: int = 0, aux: int = 0) -> bytes:
    return records.Result(type=kind, id=id_, ret=ret, aux=aux).pack()


def option(args: list[str], name: str, default: str | None = None) -> str | None:
    return args[args.index(name) + 1] if name in args else default


def sweep(args: list[str], clean: bool, scenario: str) -> int:
    out = sys.stdout.buffer
    shard, shards = (int(x) for x in (option(args, "--shard", "0/1") or "0/1").split("/"))
    stop_mask = int(option(args, "--stop-mask", "0") or "0", 0)
    profile = records.PROFILES.index(option(args, "--profile", "linux") or "linux")
    mine = [i for i in range(TOTAL) if i % shards == shard]
    out.write(marker(records.RESULT_PROGRESS, 0, len(mine)))
    out.flush()
    if scenario == "garbage":
        out.write(b"XXXX" + bytes(124))
        return 0
    if scenario == "hang":
        time.sleep(30)
        return 0
    seen = 0
    count: dict[int, int] = {}
    done = 0
    why = 0
    for i in mine:
        done += 1
        mask = classes_of(i, clean)
        for bit in range(records.NUM_CLASSES):
            if mask & (1 << bit):
                count[bit] = count.get(bit, 0) + 1
        if mask & ~seen:
            case = records.Case(kind=0, profile=profile, id=i, n=i, src_off=i % 16, dst_off=i % 8)
            out.write(case.pack() + result_for(case, mask, profile).pack())
            out.flush()
            seen |= mask
        if scenario == "crash" and done == 5:
            sys.stderr.write("fake executor: internal error on purpose\n")
            return 3
        if stop_mask and seen & stop_mask == stop_mask:
            why = 1
            break
        if done % 10 == 0:
            out.write(marker(records.RESULT_PROGRESS, done, len(mine)))
    for bit, n in sorted(count.items()):
        out.write(marker(records.RESULT_COUNT, n, 0, bit))
    if scenario != "nodone":
        out.write(marker(records.RESULT_DONE, done, len(mine), why))
    out.flush()
    return 0


def serve(clean: bool, scenario: str) -> int:
    data = sys.stdin.buffer
    while True:
        raw = data.read(records.CASE_SIZE)
        if not raw:
            return 0
        if scenario == "crash":
            sys.stderr.write("fake executor: died serving\n")
            return 3
        if scenario == "hang":
            time.sleep(30)
        case = records.Case.unpack(raw)
        if case.magic != records.CASE_MAGIC:
            result = records.Result(type=records.RESULT_ERROR, id=case.id, aux=1)
        else:
            result = result_for(case, classes_of(case.n, clean), case.profile)
        sys.stdout.buffer.write(result.pack())
        sys.stdout.buffer.flush()


def main() -> int:
    elf, mode, *args = sys.argv[1:]
    clean = "clean" in elf
    scenario = os.environ.get("FAKE_SCENARIO", "")
    if mode == "info":
        print(f"name={os.path.basename(elf)}\nkind=copy\nsymbol=f\nxlen=64\nextable=rel")
        return 0
    if mode == "serve":
        return serve(clean, scenario)
    if mode == "sweep":
        return sweep(args, clean, scenario)
    sys.stderr.write("fake executor: unknown mode\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
