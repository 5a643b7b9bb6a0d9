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


def test_memset_has_a_fill_and_no_source() -> None:
    s = parse("riscv/memset:n=9,fill=0xa5,dst_fault=9", "memset")
    assert s == Spec("riscv/memset", "memset", 9, 0, None, 4087, 9, fill=0xA5)
    assert format_spec(s) == "riscv/memset:n=9,fill=0xa5,dst_off=4087,dst_fault=9"
    # an int: negative values are its 32 bits (what the register's low word holds)
    assert parse("m:n=1,fill=-127", "memset").fill == 0xFFFFFF81
    assert parse("m:n=1", "memset").fill == 0
    assert format_spec(parse("m:n=1", "memset")) == "m:n=1,fill=0x0,dst_off=0"
    with pytest.raises(SpecError, match="memset routine: it has no source, drop src_off"):
        parse("m:n=9,src_off=1", "memset")
    with pytest.raises(SpecError, match="not an int"):
        parse("m:n=9,fill=0x100000000", "memset")
    with pytest.raises(SpecError, match="fill= is for memset routines"):
        parse("r:n=9,fill=1", "copy")


def test_memmove_has_a_displacement_and_no_source_side() -> None:
    s = parse("riscv/memmove:n=20,disp=-36", "memmove")
    assert s == Spec("riscv/memmove", "memmove", 20, disp=-36)
    assert format_spec(s) == "riscv/memmove:n=20,disp=-36,dst_off=0"
    assert parse("x:n=20,disp=0x24", "memmove").disp == 36
    with pytest.raises(SpecError, match=r"disp=37 is out of range for n=20: \|disp\| <= 36"):
        parse("x:n=20,disp=37", "memmove")
    with pytest.raises(SpecError, match="disp=-37 is out of range"):
        parse("x:n=20,disp=-37", "memmove")
    with pytest.raises(SpecError, match="source is dst - disp.*drop src_fault"):
        parse("x:n=20,src_fault=5", "memmove")
    with pytest.raises(SpecError, match="disp= is for memmove routines"):
        parse("x:n=20,disp=1", "memcpy")
    with pytest.raises(SpecError, match="may be negative"):
        parse("x:n=20,disp=--1", "memmove")
    with pytest.raises(SpecError, match="further than"):
        parse(f"x:n=20,disp=5,dst_fault={MAX_FAULT}", "memmove")


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
    granule = draw(st.sampled_from(records.GRANULES))

    def side() -> tuple[int, int | None]:
        choice = draw(st.sampled_from(["none", "zero", "page"]))
        if choice == "page":
            fault = draw(st.integers(1, MAX_FAULT))
            if granule:  # any page offset that puts the boundary on a granule
                return (-fault) % granule + granule * draw(st.integers(0, 255)), fault
            return (-fault) % records.PAGE_SIZE, fault
        return draw(st.integers(0, records.PAGE_SIZE - 1)), (0 if choice == "zero" else None)

    src_off, src_fault = side() if kind in records.HAS_SRC else (0, None)
    dst_off, dst_fault = side()
    if not records.side_faults(kind, "src"):  # the kernel's side of a one-way user copy
        src_fault = None
    if not records.side_faults(kind, "dst"):
        dst_fault = None
    routine = draw(st.sampled_from(["riscv/copy_user", "riscv/mutants/fixup-full-size", "x"]))
    n = draw(st.integers(0, records.MAX_LEN))
    fill = draw(st.integers(0, 2**32 - 1)) if kind == "memset" else 0
    disp = 0
    if kind == "memmove":
        most = records.memmove_max_disp(n)
        if dst_fault is not None:  # src no further below the fault than MAX_FAULT
            most = min(most, MAX_FAULT - dst_fault)
        disp = draw(st.integers(-records.memmove_max_disp(n), most))
    return Spec(routine, kind, n, src_off, src_fault, dst_off, dst_fault, fill, disp, granule)


def test_granule_cases() -> None:
    """granule=16: the fault is at a 16-byte tag granule, so the offset it implies is the
    granule's, not the page's; without it that position is unreachable."""
    spec = parse("arm64/copy_from_user:n=16,src_fault=7,granule=16", "copy_from_user")
    assert (spec.src_off, spec.src_fault, spec.granule) == (9, 7, 16)
    assert format_spec(spec) == "arm64/copy_from_user:n=16,src_off=9,src_fault=7,dst_off=0,granule=16"
    with pytest.raises(SpecError, match="at a page boundary; src_off=4089 makes it reachable"):
        parse("arm64/copy_from_user:n=16,src_off=9,src_fault=7", "copy_from_user")
    with pytest.raises(SpecError, match="a 16-byte tag granule's start .* src_off=9"):
        parse("arm64/copy_from_user:n=16,src_off=10,src_fault=7,granule=16", "copy_from_user")
    with pytest.raises(SpecError, match="granule=4096: give granule=16"):
        parse("arm64/copy_from_user:n=16,granule=4096", "copy_from_user")


@given(specs())
def test_round_trip(spec: Spec) -> None:
    assert parse(format_spec(spec), spec.kind) == spec


@given(specs(), st.sampled_from(records.PROFILES), st.integers(0, 2**64 - 1))
def test_case_record_round_trip(spec: Spec, profile: str, case_id: int) -> None:
    case = spec.to_case(profile, case_id)
    assert records.Case.unpack(case.pack()) == case
    assert from_case(spec.routine, case) == spec
    assert case.profile == records.PROFILES.index(profile)


def test_a_one_way_user_copy_faults_only_on_its_user_side() -> None:
    assert parse("r:n=8,src_off=4095,src_fault=1,dst_off=3", "copy_from_user").src_fault == 1
    assert parse("r:n=8,src_off=3,dst_off=4095,dst_fault=1", "copy_to_user").dst_fault == 1
    with pytest.raises(SpecError, match="dst_fault=1: r is a copy_from_user routine, whose dst is kernel memory"):
        parse("r:n=8,src_off=3,dst_off=4095,dst_fault=1", "copy_from_user")
    with pytest.raises(SpecError, match="src_fault=0: r is a copy_to_user routine, whose src is kernel memory"):
        parse("r:n=8,src_off=3,src_fault=0,dst_off=3", "copy_to_user")
