"""The one-line case spec: parsing, validation, formatting, round trips."""

from __future__ import annotations

import pytest
from copyfuzz import records
from copyfuzz.spec import MAX_FAULT, Spec, SpecError, format_spec, from_case, parse, split_routine
from hypothesis import given
from hypothesis import strategies as st


def test_example_from_the_docs() -> None:
    s = parse("riscv/copy_user:n=37,src_off=4064,src_fault=32,dst_off=3", "copy")
    assert s == Spec("riscv/copy_user", "copy", 37, 4064, 32, 3, None)
    assert format_spec(s) == "riscv/copy_user:n=37,src_off=4064,src_fault=32,dst_off=3"


def test_defaults_and_hex() -> None:
    s = parse("r:n=0x10", "copy")
    assert (s.n, s.src_off, s.src_fault, s.dst_off, s.dst_fault) == (16, 0, None, 0, None)
    assert parse("r:n=5,dst_fault=none,src_fault=NONE", "copy") == Spec("r", "copy", 5)
    assert parse(" r : n = 5 , dst_off = 0x7 ", "copy").dst_off == 7


def test_offset_derived_from_fault() -> None:
    s = parse("r:n=100,src_fault=32,dst_fault=4097", "copy")
    assert s.src_off == 4064 and s.dst_off == 4095
    # A fault at 0 needs no particular offset: the buffer's own page is inaccessible.
    s = parse("r:n=100,src_fault=0,src_off=17", "copy")
    assert (s.src_off, s.src_fault) == (17, 0)
    assert parse("r:n=100,src_fault=0", "copy").src_off == 0
    # A multiple of the page size puts the buffer at the start of a page.
    assert parse("r:n=9000,dst_fault=8192", "copy").dst_off == 0


def test_clear_has_no_source() -> None:
    s = parse("riscv/clear_user:n=9,dst_fault=7", "clear")
    assert s == Spec("riscv/clear_user", "clear", 9, 0, None, 4089, 7)
    assert format_spec(s) == "riscv/clear_user:n=9,dst_off=4089,dst_fault=7"
    with pytest.raises(SpecError, match="no source.*src_off"):
        parse("riscv/clear_user:n=9,src_off=1", "clear")


@pytest.mark.parametrize("text, message", [
    ("no-colon", "malformed case spec"),
    (":n=1", "malformed case spec"),
    ("r:", "needs n="),
    ("r:src_off=3", "needs n="),
    ("r:n=1,n=2", "given twice"),
    ("r:n=1,size=2", "unknown case spec key 'size'"),
    ("r:n=abc", "not a number"),
    ("r:n=-1", "not a number"),
    ("r:n=0x", "not a number"),
    ("r:n=1,dst_off", "expected key=value"),
    ("r:n=1048577", "too long"),
    ("r:n=1,src_off=4096", "not a page offset"),
    ("r:n=1,dst_off=0x1000", "not a page offset"),
    ("r:n=1,src_fault=1052673", "too far"),
])
def test_malformed(text: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse(text, "copy")


def test_unreachable_fault_says_which_offset_works() -> None:
    with pytest.raises(SpecError) as e:
        parse("r:n=64,src_off=3,src_fault=37", "copy")
    msg = str(e.value)
    assert "page boundary" in msg and "src_off=4059" in msg
    with pytest.raises(SpecError, match="dst_off=4095"):
        parse("r:n=64,dst_off=0,dst_fault=1", "copy")


def test_limits_are_inclusive() -> None:
    assert parse(f"r:n={records.MAX_LEN}", "copy").n == records.MAX_LEN
    assert parse(f"r:n=1,src_fault={MAX_FAULT}", "copy").src_fault == MAX_FAULT


def test_split_routine() -> None:
    assert split_routine("riscv/mutants/x:n=1") == ("riscv/mutants/x", "n=1")


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    kind = draw(st.sampled_from(records.KINDS))

    def side() -> tuple[int, int | None]:
        choice = draw(st.sampled_from(["none", "zero", "page"]))
        if choice == "page":
            fault = draw(st.integers(1, MAX_FAULT))
            return (-fault) % records.PAGE_SIZE, fault
        return draw(st.integers(0, records.PAGE_SIZE - 1)), (0 if choice == "zero" else None)

    src_off, src_fault = (0, None) if kind == "clear" else side()
    dst_off, dst_fault = side()
    routine = draw(st.sampled_from(["riscv/copy_user", "riscv/mutants/fixup-full-size", "x"]))
    return Spec(routine, kind, draw(st.integers(0, records.MAX_LEN)), src_off, src_fault, dst_off, dst_fault)


@given(specs())
def test_round_trip(spec: Spec) -> None:
    assert parse(format_spec(spec), spec.kind) == spec


@given(specs(), st.sampled_from(records.PROFILES), st.integers(0, 2**64 - 1))
def test_case_record_round_trip(spec: Spec, profile: str, case_id: int) -> None:
    case = spec.to_case(profile, case_id)
    assert records.Case.unpack(case.pack()) == case
    assert from_case(spec.routine, case) == spec
    assert case.profile == records.PROFILES.index(profile)
