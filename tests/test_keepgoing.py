"""Keeping going: a finding's key and address (known.py), the drivers' seen/ directory as
campaign.py reads it (the files fuzz/driver.c writes: a claim, and a mapped u64 counter),
and the sweep's order the shrinker works toward."""

from __future__ import annotations

import os
import struct
import time
from pathlib import Path

from copyfuzz.campaign import read_seen
from copyfuzz.known import address_of_described, key_text, pc_of_described
from copyfuzz.spec import Spec
from copyfuzz.triage import sweep_order


def key(cls: str, described: str) -> str:
    return key_text(cls, pc_of_described(described))


def test_the_key_names_the_symbol_else_the_address_else_any() -> None:
    assert key("no-progress", "0x135cc (__asm_copy_to_user+0xb0)") == "no-progress __asm_copy_to_user+0xb0"
    assert key("wrong-data", "0x135CC") == "wrong-data 0x135cc"
    assert key("store-out-of-bounds", "") == "store-out-of-bounds *"
    assert address_of_described("0x135cc (__asm_copy_to_user+0xb0)") == 0x135CC
    assert address_of_described("") == 0 and address_of_described("0x10") == 0x10


def test_read_seen_takes_claims_and_counts_and_skips_other_files(tmp_path: Path) -> None:
    (tmp_path / "no-progress@0x135cc").write_bytes(b"")
    (tmp_path / "no-progress@0x135cc.count").write_bytes(struct.pack("=Q", 1234) + bytes(4088))
    (tmp_path / "crash@0x0.count").write_bytes(struct.pack("=Q", 7) + bytes(4088))
    (tmp_path / "driver-1-2.finding").write_text("classes=crash\n")
    (tmp_path / "wrong-data@0x10.count").write_bytes(b"\x01")  # cut short: no count
    at = time.time() - 5
    os.utime(tmp_path / "no-progress@0x135cc", (at, at))
    seen = read_seen(tmp_path)
    assert set(seen) == {("no-progress", 0x135CC), ("crash", 0), ("wrong-data", 0x10)}
    assert seen[("no-progress", 0x135CC)].count == 1234 and seen[("no-progress", 0x135CC)].claimed_at == at
    assert seen[("crash", 0)].count == 7 and seen[("crash", 0)].claimed_at is None
    assert seen[("wrong-data", 0x10)].count == 0
    assert read_seen(tmp_path / "absent") == {}


def test_sweep_order_is_the_sweeps_odometer() -> None:
    def s(**kw: int | None) -> Spec:
        return Spec(routine="r", kind="copy", **kw)  # type: ignore[arg-type]

    # n first, then src misalignment, dst misalignment, src fault, dst fault
    assert sweep_order(s(n=1, src_off=15)) < sweep_order(s(n=2))
    assert sweep_order(s(n=8, dst_off=15)) < sweep_order(s(n=8, src_off=1))
    assert sweep_order(s(n=8, src_off=0, dst_off=4095, dst_fault=1)) < sweep_order(s(n=8, src_off=1))
    assert sweep_order(s(n=8)) < sweep_order(s(n=8, src_fault=0)) < sweep_order(s(n=8, src_off=4080, src_fault=16))
    assert sweep_order(s(n=8, src_off=16)) > sweep_order(s(n=8, src_off=0))  # the same case spelled larger
