"""The probe past a sweep's lengths (reach.probe_shapes): cases the executor takes, the
sides that fault, the values that pick other paths. No executor here (test_reach_e2e.py
runs it)."""

from __future__ import annotations

import pytest
from copyfuzz import reach, records


def test_lengths_double_from_past_the_sweep_to_the_cap() -> None:
    assert reach.probe_lengths(200) == (400, 800, 1600, 3200, 6400, 12800, 25600, 51200)
    assert reach.probe_lengths(256)[0] == 512 and reach.probe_lengths(256)[-1] == reach.PROBE_MAX_N
    assert reach.probe_lengths(reach.PROBE_MAX_N) == ()


@pytest.mark.parametrize("kind", records.KINDS)
def test_every_probe_case_is_one_the_executor_takes(kind: str) -> None:
    lengths = reach.probe_lengths(64)
    per_n = [reach.probe_shapes(kind, "exact", n) for n in range(2, 200)] + [
        reach.probe_shapes(kind, "exact", n) for n in lengths]
    # one shape count at every n: the bisection takes the i-th shape of another length
    assert per_n[0] and {len(shapes) for shapes in per_n} == {len(per_n[0])}
    for shapes in per_n:
        assert len(set(shapes)) == len(shapes)  # no case twice
        for c in shapes:
            assert records.case_check(c, records.KINDS.index(kind)) == records.CASE_OK, c
    assert [{c.n for c in shapes} for shapes in per_n[-len(lengths):]] == [{n} for n in lengths]


@pytest.mark.parametrize("kind", records.KINDS)
def test_a_fault_halfway_on_each_side_that_faults_and_none_on_the_kernel_side(kind: str) -> None:
    cases = reach.probe_shapes(kind, "linux", 1024)
    faulting = {side for c in cases for side in ("src", "dst") if getattr(c, f"{side}_fault") != records.NO_FAULT}
    sides = {"src", "dst"} if kind in records.HAS_SRC else {"dst"}
    assert faulting == (set() if kind == "memmove" else sides - {records.KERNEL_SIDE.get(kind)})
    if kind == "memmove":  # one mapping for both buffers: no guard of its own
        assert faulting == set()
        return
    assert {getattr(c, f"{s}_fault") for c in cases for s in faulting} - {records.NO_FAULT} == {
        1024 if kind in records.RETURNS_DST else 512}  # a kind with no fixups: the guard past the end
    assert any(c.src_off == 0 and c.dst_off == 0 and c.dst_fault == records.NO_FAULT for c in cases)
    assert any((c.src_off or c.dst_off) and c.dst_fault == c.src_fault == records.NO_FAULT for c in cases)


def test_memset_probes_a_zero_and_another_fill_and_memmove_both_ways() -> None:
    assert {c.fill for c in reach.probe_shapes("memset", "linux", 4096)} == {0, 0xA5}
    assert {c.disp > 0 for c in reach.probe_shapes("memmove", "linux", 4096)} == {True, False}


def test_an_address_slot_is_the_inverse_of_a_slot_address() -> None:
    """The probe reads the counts of a few addresses (PluginMemory.counts_at) by their slots."""
    from copyfuzz import plugin

    s = plugin.Shm(code_lo=0x10000, code_hi=0x10000 + 2 * 5000, fixup_lo=0x40000, fixup_hi=0x40000 + 2 * 5000)
    for slot in range(plugin.INSN_SLOTS):
        assert plugin.address_slot(s, plugin.slot_address(s, slot)) == slot
    assert plugin.address_slot(s, 0x40000 + 2 * 4000) is None  # past the slots
    assert plugin.address_slot(s, 0x20000) is None and plugin.address_slot(s, 0xFFFF) is None


def test_a_snapshots_set_slots_are_every_non_zero_slot() -> None:
    """coverage.set_slots finds the set slots in C; a plain walk of the array is the check."""
    import random

    from copyfuzz import coverage, plugin

    snap = plugin.Snapshot(code_lo=0x1000, code_hi=0x1000 + 2 * 6000, fixup_lo=0x90000, fixup_hi=0x90000 + 400)
    rng = random.Random(3)
    for slot in rng.sample(range(plugin.INSN_SLOTS), 700) + [0, plugin.INSN_SLOTS - 1]:
        snap.slot[slot] = rng.randrange(1, 256)
    walked = [(plugin.slot_address(snap, i), b) for i, b in enumerate(snap.slot) if b]
    assert coverage.set_slots(snap) == walked and len(walked) > 600


def test_the_architectures_hint_only_where_its_instructions_are() -> None:
    """The DC ZVA CPU hint only for code with a `dc zva`, the vector hint only for vector
    code: never --cpu for an arm64 copy that has no DC ZVA (a new user's review, issue 25)."""
    from copyfuzz.cmd_sweep import REACH_OTHER, _reach_hint
    from copyfuzz.decode import Insn

    def insn(mnemonic: str, op_str: str) -> Insn:
        return Insn(0x100, 4, b"\0" * 4, mnemonic, op_str)

    assert _reach_hint(REACH_OTHER, "arm64", [insn("stp", "x6, x7, [x0]"), insn("dc", "zva, x8")]) == \
        REACH_OTHER["arm64"]
    assert _reach_hint(REACH_OTHER, "arm64", [insn("sttr", "x8, [x6, #8]")]) is None
    assert _reach_hint(REACH_OTHER, "riscv", [insn("vle8.v", "v0, (a1)")]) == REACH_OTHER["riscv"]
    assert _reach_hint(REACH_OTHER, "riscv", [insn("sd", "a6, 0x10(a0)")]) is None
    assert _reach_hint(REACH_OTHER, "arm", [insn("pld", "[r1, #0x3c]")]) is None
