"""records.case_check() against the C cf_case_check_for() it mirrors, through libcfref.so.

One rule for a valid case, two languages: the executor refuses cases with C, the tool
(spec parsing, the Hypothesis strategies) with Python. Hypothesis draws cases near every
boundary the rules have, and every enum cf_case_error must come out of both.
"""

from __future__ import annotations

import ctypes
import subprocess

import pytest
from conftest import ROOT
from copyfuzz import paths, records
from hypothesis import given, settings
from hypothesis import strategies as st

PAGE = records.PAGE_SIZE


@pytest.fixture(scope="module")
def cfref() -> ctypes.CDLL:
    lib_path = paths.libcfref(ROOT)
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), str(lib_path)], cwd=ROOT, check=True)
    lib = ctypes.CDLL(str(lib_path))
    lib.cf_case_check_for.argtypes = [ctypes.POINTER(records.CaseStruct), ctypes.c_uint16]
    lib.cf_case_check_for.restype = ctypes.c_int
    lib.cf_case_check.argtypes = [ctypes.POINTER(records.CaseStruct)]
    lib.cf_case_check.restype = ctypes.c_int
    return lib


def c_check(lib: ctypes.CDLL, case: records.Case, kind: int | None) -> int:
    c = records.CaseStruct.from_buffer_copy(case.pack())
    return int(lib.cf_case_check(ctypes.byref(c)) if kind is None else lib.cf_case_check_for(ctypes.byref(c), kind))


# Every strategy is built once, here: Hypothesis validates a strategy the first time it
# draws from it, and building them per case cost two thirds of this module's time.
u32 = st.integers(0, 2**32 - 1)
u64 = st.integers(0, 2**64 - 1)
offsets = st.one_of(st.just(0), st.integers(0, PAGE - 1), st.sampled_from([PAGE - 1, PAGE, PAGE + 1]), u32)


LIMIT_PAGES = records.MAX_FAULT // PAGE  # the last reachable page boundary
_pages = st.one_of(st.integers(1, 300), st.integers(LIMIT_PAGES - 1, LIMIT_PAGES + 2))
# (boundary, k): a fault at the k-th boundary past the offset (if that is past it, else at
# k boundaries); (0, v): a fault at v whatever the offset.
_fault_shapes = st.one_of(
    st.just((0, records.NO_FAULT)), st.just((0, 0)),
    _pages.map(lambda k: (PAGE, k)),  # reachable (if not too far)
    _pages.map(lambda k: (PAGE, k)),
    st.sampled_from([records.MAX_FAULT - 1, records.MAX_FAULT, records.MAX_FAULT + 1]).map(lambda v: (0, v)),
    st.integers(1, 300).map(lambda k: (16, k)),  # granule boundaries
    st.integers(1, 3 * PAGE).map(lambda v: (0, v)), u64.map(lambda v: (0, v)))


def fault(draw: st.DrawFn, off: int) -> int:
    unit, v = draw(_fault_shapes)
    if not unit:
        return int(v)
    return int(v * unit - off if v * unit > off else v * unit)


def mostly(value: int, other: st.SearchStrategy[int]) -> st.SearchStrategy[int]:
    """The valid value three times in four: cases must get past the early checks."""
    return st.one_of(st.just(value), st.just(value), st.just(value), other)


_near = st.integers(-2, 2)
_disp_shapes = st.one_of(st.just((0, 0)), _near.map(lambda d: (1, d)), _near.map(lambda d: (-1, d)),
                         st.integers(-(2**31), 2**31 - 1).map(lambda v: (0, v)))


def displacement(draw: st.DrawFn, n: int) -> int:
    """memmove's dst - src: around its limits (n + 16, MAX_LEN - n) and anywhere."""
    edge = min(n + records.MEMMOVE_SLACK, max(0, records.MAX_LEN - n)) if n <= records.MAX_LEN else 0
    sign, v = draw(_disp_shapes)
    return int(sign * (edge + v) if sign else v)


_lengths = st.one_of(st.integers(0, 300), st.sampled_from([records.MAX_LEN, records.MAX_LEN + 1]),
                     st.integers(records.MAX_LEN // 2 - 20, records.MAX_LEN // 2), u64)
_magics, _fills = mostly(records.CASE_MAGIC, u32), mostly(0, u32)
_kinds, _profiles = st.integers(0, len(records.KINDS) + 1), mostly(0, st.integers(0, 3))
_seals = st.one_of(st.just(0), u64)
_granules = mostly(0, st.sampled_from([records.GRANULE_MTE, records.GRANULE_MTE, 8, 255]))
# disp half the time: bad-disp is among the last checks, so a case reaches it only past
# every earlier one; at one in four it came up about once in 100 draws, and once first at
# draw 1546 (test_every_case_error_comes_up_in_both needs it within the 3000)
_use_disp = st.sampled_from([False, True])


@st.composite
def any_case(draw: st.DrawFn) -> records.Case:
    src_off, dst_off = draw(offsets), draw(offsets)
    n = draw(_lengths)
    disp = displacement(draw, n)
    return records.Case(
        magic=draw(_magics), kind=draw(_kinds), profile=draw(_profiles),
        id=draw(u64), n=n, src_off=src_off, dst_off=dst_off, src_fault=fault(draw, src_off),
        dst_fault=fault(draw, dst_off), fill=draw(_fills),
        disp=disp if draw(_use_disp) else 0, seal=draw(_seals), granule=draw(_granules))


seen: set[int] = set()


@settings(max_examples=3000, deadline=None, database=None)
@given(any_case(), st.one_of(st.none(), st.integers(0, len(records.KINDS))))
def test_python_and_c_agree(cfref: ctypes.CDLL, case: records.Case, kind: int | None) -> None:
    want = c_check(cfref, case, kind)
    assert records.case_check(case, kind) == want, (case, kind)
    seen.add(want)


def test_every_case_error_comes_up_in_both() -> None:
    """Run after the property above (file order): its draws reached every code."""
    assert seen == set(range(len(records.CASE_ERRORS))) - records.EXECUTOR_CASE_ERRORS, sorted(seen)


def test_one_case_per_error(cfref: ctypes.CDLL) -> None:
    """Each cf_case_error from a hand-made case, for readers (and independent of the draws)."""
    ok = records.Case(kind=0, profile=0, id=0, n=100, src_off=4064, dst_off=3, src_fault=32)
    cases = {
        records.CASE_OK: (ok, 0),
        records.CASE_BAD_MAGIC: (records.Case(**{**ok.__dict__, "magic": 0}), 0),
        records.CASE_BAD_KIND: (records.Case(**{**ok.__dict__, "kind": len(records.KINDS)}), 0),
        records.CASE_BAD_PROFILE: (records.Case(**{**ok.__dict__, "profile": 2}), 0),
        records.CASE_TOO_LONG: (records.Case(**{**ok.__dict__, "n": records.MAX_LEN + 1}), 0),
        records.CASE_BAD_OFFSET: (records.Case(**{**ok.__dict__, "dst_off": PAGE}), 0),
        records.CASE_SRC_UNREACHABLE: (records.Case(**{**ok.__dict__, "src_off": 4065}), 0),
        records.CASE_DST_UNREACHABLE: (records.Case(**{**ok.__dict__, "dst_fault": 7}), 0),
        records.CASE_KIND_MISMATCH: (ok, 1),
        records.CASE_BAD_FILL: (records.Case(**{**ok.__dict__, "fill": 0xA5}), 0),
        records.CASE_BAD_DISP: (records.Case(**{**ok.__dict__, "disp": -1}), 0),
        # copy_from_user: the destination is the kernel's
        records.CASE_KERNEL_SIDE_FAULT: (records.Case(**{**ok.__dict__, "kind": 5, "dst_off": 0, "dst_fault": 0}), 5),
        records.CASE_BAD_GRANULE: (records.Case(**{**ok.__dict__, "granule": 8}), 0),
    }
    assert set(cases) == set(range(len(records.CASE_ERRORS))) - records.EXECUTOR_CASE_ERRORS
    for code, (case, kind) in cases.items():
        assert records.case_check(case, kind) == code == c_check(cfref, case, kind), records.CASE_ERRORS[code]
    # Granule cases: a boundary every 16 bytes, pages' too (a page boundary is a granule's).
    granule = records.Case(**{**ok.__dict__, "src_off": 4048, "granule": records.GRANULE_MTE})
    assert records.case_check(granule) == records.CASE_OK == c_check(cfref, granule, None)
    assert records.case_check(records.Case(**{**granule.__dict__, "granule": 0})) == records.CASE_SRC_UNREACHABLE
    # The farthest fault position is allowed, one page further is not.
    far = records.Case(**{**ok.__dict__, "src_off": 0, "src_fault": records.MAX_FAULT})
    assert records.case_check(far) == records.CASE_OK == c_check(cfref, far, None)
    farther = records.Case(**{**far.__dict__, "src_fault": records.MAX_FAULT + PAGE})
    assert records.case_check(farther) == records.CASE_SRC_UNREACHABLE == c_check(cfref, farther, None)
    # copy_to_user: the source is the kernel's; each one-way copy faults on its user side.
    to_user = records.Case(**{**ok.__dict__, "kind": 6})
    assert records.case_check(to_user, 6) == records.CASE_KERNEL_SIDE_FAULT == c_check(cfref, to_user, 6)
    for kind, side in ((5, "src_fault"), (6, "dst_fault")):
        user = records.Case(**{**ok.__dict__, "kind": kind, "src_off": 0, "src_fault": records.NO_FAULT,
                               "dst_off": 0, side: 4096})
        assert records.case_check(user, kind) == records.CASE_OK == c_check(cfref, user, kind), kind
    # A clear case's source side is not looked at, in either.
    clear = records.Case(**{**ok.__dict__, "kind": 1, "src_off": 5, "src_fault": 7})
    assert records.case_check(clear, 1) == records.CASE_OK == c_check(cfref, clear, 1)
    # memset: any int; memmove: |disp| up to n + 16, and src within reach of the guard.
    memset = records.Case(kind=3, profile=0, id=0, n=10, src_off=0, dst_off=0, fill=0xFFFFFF81)
    assert records.case_check(memset, 3) == records.CASE_OK == c_check(cfref, memset, 3)
    for disp, want in ((-26, records.CASE_OK), (26, records.CASE_OK), (27, records.CASE_BAD_DISP),
                       (-27, records.CASE_BAD_DISP)):
        move = records.Case(kind=4, profile=0, id=0, n=10, src_off=0, dst_off=0, disp=disp)
        assert records.case_check(move, 4) == want == c_check(cfref, move, 4), disp
    far_src = records.Case(kind=4, profile=0, id=0, n=10, src_off=0, dst_off=0, disp=1,
                           dst_fault=records.MAX_FAULT)
    assert records.case_check(far_src) == records.CASE_BAD_DISP == c_check(cfref, far_src, None)
