"""A stand-in executor speaking the real protocol (docs/executor.md), for fast tests.

Run as `python fake_executor.py ELF MODE ...` (ELF as QEMU would get it). The sweep's
cases are ids 0..99 whatever the options (tests/c/fake_cfref.c is the plan to match), and
which cases show which classes is a fixed rule of the case id, so tests know the answers:
  id % 7 == 3   -> wrong-data
  id % 11 == 5  -> wrong-data and imprecise
An ELF path containing "clean" shows nothing; FAKE_SCENARIO selects failures:
  crash   exit 3 with a message after a few cases (serve: before the first)
  nodone  end the stream without DONE
  garbage write bytes with no known magic into the record channel
  hang    write one PROGRESS record, then nothing for a long time
  short   report one case fewer than it runs (DONE and PROGRESS)
QEMU's `-plugin SO,fd=N` before ELF is taken as QEMU would; FAKE_ARGV_FILE=PATH records
the arguments (tests/test_session.py). FAKE_SLOW_AT=ID makes the case with that id take 30 s (serve).
FAKE_DIE_AT=ID[,ID...] makes the cases with those ids end the process (exit 7) while they
run, as a routine under test could; FAKE_FORGE_AT=ID makes it write an unsealed DONE record into
the record channel and go on.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
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


class Channel:
    """The executor's side: key and cases in, sealed records out, the control block."""

    def __init__(self, args: list[str]) -> None:
        self.cases = os.fdopen(int(option(args, "--cases-fd", "0") or 0), "rb", buffering=0)
        self.key = struct.unpack("<QQ", self.cases.read(16)) if "--cases-fd" in args else (0, 0)
        self.out = os.fdopen(int(option(args, "--records-fd", "1") or 1), "wb")
        self.seq = 0
        self.control = None
        if "--control-fd" in args:
            fd = int(option(args, "--control-fd") or 0)
            self._map = mmap.mmap(fd, records.CONTROL_SIZE)
            self.control = records.ControlStruct.from_buffer(self._map)
            self.control.magic = records.CONTROL_MAGIC

    def write(self, data: bytes) -> None:
        """Seal and write one record (its last 8 bytes are the seal)."""
        seal = records.seal(self.key, self.seq, data)
        self.seq += 1
        self.out.write(data[:-8] + seal.to_bytes(8, "little"))

    def begin(self, case_id: int) -> None:
        if self.control is not None:
            self.control.current = case_id
            self.control.started += 1
        if str(case_id) in os.environ.get("FAKE_DIE_AT", "").split(","):
            self.out.flush()
            os._exit(7)
        if case_id == int(os.environ.get("FAKE_FORGE_AT", "-1")):
            self.out.flush()
            os.write(self.out.fileno(), marker(records.RESULT_DONE, TOTAL, TOTAL))


def sweep(args: list[str], clean: bool, scenario: str) -> int:
    ch = Channel(args)
    shard, shards = (int(x) for x in (option(args, "--shard", "0/1") or "0/1").split("/"))
    start = int(option(args, "--start", "0") or 0)
    end = int(option(args, "--end", str(TOTAL)) or TOTAL)
    stop_mask = int(option(args, "--stop-mask", "0") or "0", 0)
    profile = records.PROFILES.index(option(args, "--profile", "linux") or "linux")
    mine = [i for i in range(TOTAL) if i % shards == shard and start <= i < end]
    short = 1 if scenario == "short" else 0
    ch.write(marker(records.RESULT_PROGRESS, 0, len(mine) - short))
    ch.out.flush()
    if scenario == "garbage":
        ch.out.write(b"XXXX" + bytes(124))
        return 0
    if scenario == "hang":
        time.sleep(30)
        return 0
    seen = 0
    count: dict[int, int] = {}
    done = 0
    why = 0
    for i in mine:
        ch.begin(i)
        done += 1
        mask = classes_of(i, clean)
        for bit in range(records.NUM_CLASSES):
            if mask & (1 << bit):
                count[bit] = count.get(bit, 0) + 1
                if ch.control is not None:  # what COUNT would say, should the process die
                    ch.control.counts[bit] = count[bit]
        if mask & ~seen:
            case = records.Case(kind=0, profile=profile, id=i, n=i, src_off=i % 16, dst_off=i % 8)
            ch.write(case.pack())
            ch.write(result_for(case, mask, profile).pack())
            ch.out.flush()
            seen |= mask
        if scenario == "crash" and done == 5:
            sys.stderr.write("fake executor: internal error on purpose\n")
            return 3
        if stop_mask and seen & stop_mask == stop_mask:
            why = 1
            break
        if done % 10 == 0:
            ch.write(marker(records.RESULT_PROGRESS, done, len(mine) - short))
    for bit, n in sorted(count.items()):
        ch.write(marker(records.RESULT_COUNT, n, 0, bit))
    if scenario != "nodone":
        ch.write(marker(records.RESULT_DONE, done - short, len(mine) - short, why))
    ch.out.flush()
    return 0


def serve(args: list[str], clean: bool, scenario: str) -> int:
    ch = Channel(args)
    while True:
        raw = ch.cases.read(records.CASE_SIZE)
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
            ch.begin(case.id)
            if case.id == int(os.environ.get("FAKE_SLOW_AT", "-1")):
                time.sleep(30)  # a case that runs long (64 KiB under the plugin, a loaded machine)
            result = result_for(case, classes_of(case.n, clean), case.profile)
        ch.write(result.pack())
        ch.out.flush()


def note_argv(argv: list[str], plugin: str | None) -> None:
    """FAKE_ARGV_FILE: what it was started with (after QEMU's -plugin, given apart), and
    whether the --plugin-fd it was given is open in it, as JSON."""
    fd = option(argv, "--plugin-fd")
    try:
        fd_open = fd is not None and os.fstat(int(fd)) is not None
    except OSError:
        fd_open = False
    with open(os.environ["FAKE_ARGV_FILE"], "w") as f:
        json.dump({"argv": argv, "plugin": plugin, "plugin_fd_open": fd_open}, f)


def main() -> int:
    argv = sys.argv[1:]
    plugin = None
    if argv[0] == "-plugin":  # QEMU's option before the ELF (plugin.wrap): QEMU takes it
        plugin, argv = argv[1], argv[2:]
    if "FAKE_ARGV_FILE" in os.environ:
        note_argv(argv, plugin)
    elf, mode, *args = argv
    clean = "clean" in elf
    scenario = os.environ.get("FAKE_SCENARIO", "")
    if mode == "info":
        print(f"name={os.path.basename(elf)}\nkind=copy\nsymbol=f\nxlen=64\nextable=rel")
        return 0
    if mode == "serve":
        return serve(args, clean, scenario)
    if mode == "sweep":
        return sweep(args, clean, scenario)
    sys.stderr.write("fake executor: unknown mode\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
