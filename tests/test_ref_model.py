"""The C oracle (ref/ref.c, through ctypes) against a small independent model.

The model below is written from the contract (docs/semantics.md), not from the
C code: Hypothesis drives both with the same case and observed behaviour and
they must name the same classes, A, C and first differing byte.
"""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from typing import Any

import pytest
from copyfuzz import envs, paths, records
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
LIB = paths.libcfref(ROOT)
W = 64
NO_FAULT = 2**64 - 1
COPY, CLEAR, MEMCPY, MEMSET, MEMMOVE = 0, 1, 2, 3, 4
CLASSES = ["bad-return", "spurious-fault", "over-report", "wrong-data", "store-beyond-reported",
           "store-out-of-bounds", "no-progress", "imprecise", "unhandled-fault", "hang",
           "register-clobber", "crash", "uaccess-left-enabled", "load-out-of-bounds", "aligned-overread"]
OUTCOMES = ["returned", "unhandled-fault", "crash", "hang"]


# The record structs come from records.py's layouts, which test_records.py holds to records.h.
Case = records.CaseStruct
Result = records.ResultStruct


class Observed(ctypes.Structure):
    _fields_ = [("outcome", ctypes.c_int), ("ret", ctypes.c_uint64), ("regs_bad", ctypes.c_uint16),
                ("reg_got", ctypes.c_uint64), ("uaccess_left_on", ctypes.c_int),
                ("dst", ctypes.c_void_p), ("before", ctypes.c_void_p),
                ("src", ctypes.c_void_p), ("lo", ctypes.c_int64), ("hi", ctypes.c_int64)]


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), str(paths.libcfref(paths.REL))], cwd=ROOT, check=True)
    lib = ctypes.CDLL(str(LIB))
    lib.cf_oracle.argtypes = [ctypes.POINTER(Case), ctypes.POINTER(Observed), ctypes.POINTER(Result)]
    lib.cf_oracle.restype = None
    assert ctypes.sizeof(Case) == records.CASE_SIZE and ctypes.sizeof(Result) == records.RESULT_SIZE
    return lib


def model(kind: int, profile: str, n: int, sf: int | None, df: int | None, outcome: str, ret: int,
          dst_ptr: int, regs_bad: int, sum_on: bool, src: bytes, before: bytes, after: bytes, hi: int,
          fill: int = 0, disp: int = 0) -> tuple[int, int, set[str], set[str], list[tuple[int, str]]]:
    """The contract, byte by byte. before/after/src are indexed from -W (src from 0).
    memset stores the low byte of its int; memmove's source (src[], its bytes before the
    call) lies at dst - disp below the same guard as dst."""
    a = n
    if kind in (COPY, MEMCPY) and sf is not None:
        a = min(a, sf)
    if df is not None:
        a = min(a, df)
        if kind == MEMMOVE:
            a = max(0, min(a, df + disp))  # the guard is df + disp bytes above src
    cls: set[str] = set()
    if regs_bad:
        cls.add("register-clobber")
    if sum_on:
        cls.add("uaccess-left-enabled")
    if outcome != "returned":
        cls.add(outcome)
    claim = None
    if outcome == "returned":
        if kind in (MEMCPY, MEMSET, MEMMOVE):
            if ret != dst_ptr:
                cls.add("bad-return")
            claim = n
        elif ret > n:
            cls.add("bad-return")
        else:
            claim = n - ret
            if a == n and ret != 0:
                cls.add("spurious-fault")
            if claim > a:
                cls.add("over-report")
            if a > 0 and claim == 0:
                cls.add("no-progress")
            if claim < a:
                cls.add("imprecise")
    diffs: list[tuple[int, str]] = []
    for i in range(-W, hi):
        got = after[i + W]
        if i < 0 or i >= n:
            if got != before[i + W]:
                diffs.append((i, "store-out-of-bounds"))
        elif claim is not None:
            if i < min(claim, a):
                want = 0 if kind == CLEAR else fill & 0xFF if kind == MEMSET else src[i]
                if got != want:
                    diffs.append((i, "wrong-data"))
            elif i >= claim and got != before[i + W]:
                diffs.append((i, "store-beyond-reported"))
    cls.update(c for _, c in diffs)
    errors = cls - {"aligned-overread"} if profile == "exact" else cls - {"imprecise", "aligned-overread"}
    return a, (claim or 0), cls, errors, diffs


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from([COPY, CLEAR, MEMCPY, MEMSET, MEMMOVE]))
    n = draw(st.integers(0, 80))
    fault = st.one_of(st.none(), st.integers(0, n + 20))
    sf = draw(fault) if kind in (COPY, MEMCPY) else None
    fill = draw(st.integers(0, 2**32 - 1)) if kind == MEMSET else 0
    disp = draw(st.integers(-(n + 16), n + 16)) if kind == MEMMOVE else 0
    df = draw(fault)
    hi = n + W if df is None else min(n + W, df)
    size = W + n + W
    src = draw(st.binary(min_size=n + W, max_size=n + W))
    before = draw(st.binary(min_size=size, max_size=size))
    after = bytearray(before)
    copied = draw(st.integers(0, max(0, min(n, hi))))  # how far the "routine" wrote
    for i in range(copied):
        after[i + W] = 0 if kind == CLEAR else fill & 0xFF if kind == MEMSET else src[i]
    if kind == MEMSET and copied and draw(st.booleans()):  # a byte of the int other than the low one
        after[draw(st.integers(0, copied - 1)) + W] = fill >> 8 & 0xFF
    for pos in draw(st.lists(st.integers(-W, max(-W, hi - 1)), max_size=3)):
        if pos < hi:
            after[pos + W] = draw(st.integers(0, 255))
    outcome = draw(st.sampled_from(OUTCOMES))
    a = min([n] + [f for f in (sf, df) if f is not None])
    ret = draw(st.one_of(st.just(n - a), st.just(n - copied), st.integers(0, n + 2)))
    return dict(kind=kind, profile=draw(st.sampled_from(["linux", "exact"])), n=n, sf=sf, df=df,
                outcome=outcome, ret=ret, regs_bad=draw(st.sampled_from([0, 0, 0, 1 << 4])),
                src=src, before=bytes(before), after=bytes(after), hi=hi,
                memcpy_returns_dst=draw(st.booleans()), sum_on=draw(st.booleans()), fill=fill, disp=disp)


@settings(max_examples=envs.test_budget(600), deadline=None)
@given(scenarios())
def test_oracle_matches_model(lib: ctypes.CDLL, sc: dict[str, Any]) -> None:
    src = ctypes.create_string_buffer(sc["src"], len(sc["src"]))
    before = ctypes.create_string_buffer(sc["before"], len(sc["before"]))
    after = ctypes.create_string_buffer(sc["after"], len(sc["after"]))
    dst_ptr = ctypes.addressof(after) + W
    # memcpy returns a pointer: mostly the right one, sometimes a number
    returns_dst = sc["kind"] in (MEMCPY, MEMSET, MEMMOVE)
    ret = dst_ptr if returns_dst and sc["memcpy_returns_dst"] else sc["ret"]
    case = Case(magic=0x31434643, kind=sc["kind"], profile=1 if sc["profile"] == "exact" else 0,
                n=sc["n"], src_fault=NO_FAULT if sc["sf"] is None else sc["sf"],
                dst_fault=NO_FAULT if sc["df"] is None else sc["df"], fill=sc["fill"], disp=sc["disp"])
    obs = Observed(outcome=OUTCOMES.index(sc["outcome"]), ret=ret, regs_bad=sc["regs_bad"], reg_got=7,
                   uaccess_left_on=int(sc["sum_on"]),
                   dst=dst_ptr, before=ctypes.addressof(before) + W, src=ctypes.addressof(src),
                   lo=-W, hi=sc["hi"])
    res = Result()
    lib.cf_oracle(ctypes.byref(case), ctypes.byref(obs), ctypes.byref(res))

    a, claim, cls, errors, diffs = model(sc["kind"], sc["profile"], sc["n"], sc["sf"], sc["df"],
                                         sc["outcome"], ret, dst_ptr, sc["regs_bad"], sc["sum_on"], sc["src"],
                                         sc["before"], sc["after"], sc["hi"], sc["fill"], sc["disp"])
    got = {CLASSES[b] for b in range(len(CLASSES)) if res.classes >> b & 1}
    got_errors = {CLASSES[b] for b in range(len(CLASSES)) if res.errors >> b & 1}
    assert got == cls
    assert got_errors == errors
    assert res.accessible == a
    assert res.claimed == claim
    assert res.diff_count == len(diffs)
    if diffs:
        assert res.diff_off == diffs[0][0]
        assert res.diff_got == sc["after"][diffs[0][0] + W]
