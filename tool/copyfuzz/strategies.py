"""Hypothesis strategies for case records (records.Case) of one routine kind.

A case is n and, per side, a page offset O and a fault position F (the first
inaccessible byte, or none). Faults are page-granular (docs/semantics.md): F == 0
(the buffer's own page is gone) or O + F is a multiple of 4096, i.e. F = k*4096 - O
after k >= 1 whole pages; the executor refuses anything else (cf_case_check).

What a strategy draws, in this order, each choice shrinking towards its first or
smallest value, so that a failing case shrinks towards small n, offset 0 and no fault:

  1. n: a "small" length 0..300, or (second branch) a log-scale one up to 65536:
     a bucket 2^(b-1)..2^b, b = 0..16. Every number shrinks towards 0.
  2. the destination side, then 3. the source side (copy, memcpy; clear has none).
     A side is first a mode:
       none       no fault; the page offset is drawn (0..4095, shrinks to 0)
       own page   the buffer's own page is gone: F = 0, any page offset (copy, clear)
       boundary   F on a later page boundary, the offset following from it,
                  O = -F mod 4096; F is drawn from an anchor:
         start     F = 1..64 (shrinks to 1: the first byte is the last accessible one)
         end       F = n + d, |d| <= 64 (shrinks to d = 0: the boundary right at the end)
         anywhere  F = 1..n + 4096: every boundary inside the buffer, and past its
                   end up to a page beyond (k up to pages spanned + 1; boundaries
                   further out behave as no fault)
     For memcpy a fault inside [0, n) is an unhandled fault by definition (it has no
     fixups), so a memcpy side is none or a boundary at or past n (end with d >= 0,
     or anywhere in n..n + 4096; F = 0 only when n == 0).

memset (dst only) draws a side the way memcpy does, and its fill value first from
the classes every memset must get right (0, 0xff, high bit set, bits above the low
byte set, a negative int), then any 32 bits; shrinks towards 0. memmove draws its
displacement dst - src in -(n+16)..n+16 (shrinks towards 0, the exact overlap), then
its one side: none, or a boundary at or past where the higher buffer ends.

Why fault positions are drawn, not (O, k): the start and end anchors put the weight
where bugs live (with O uniform, a boundary within a word of the buffer's end has
odds of a few in 4096 per side), and an end-anchored fault stays at the same place
relative to the end while n shrinks. Drawn as (O, k), a case such as "fault exactly
at n = 2049" cannot lose length without raising O at the same time, and the shrinker
stops there.

Why dst is drawn before src: Hypothesis's reorder pass swaps the two sides' choices
(same strategy, same label) when that makes the sequence simpler, which moves a
fault from dst to src, where it often needs a shorter copy (the mutant
no-progress-partial-word shows no-progress with a dst fault from n = 64 on, with a
src fault from n = 16). Measured over 20 searches each on the bundled mutants,
src-first order left 5 of them at n = 64 there and one of load-past-end at n = 2049;
dst-first order none.

Data: the case record carries no bytes. The source is the executor's fixed,
position-dependent pseudo-random pattern (harness/place.c, cf_fill_pattern), the
destination's canaries another fixed pattern; which source bytes a case copies is
decided by where its buffer sits, i.e. by the page offset, the fault position and
n. Varying offsets and lengths is how these strategies vary the data.
"""

from __future__ import annotations

from hypothesis import strategies as st

from . import records

PAGE = records.PAGE_SIZE
SMALL_MAX_LEN = 300
DEFAULT_MAX_LEN = 65536
NEAR = 64  # the "end" and "start" anchors reach this far (8 words of RV64)

# Side modes and boundary anchors, in shrink order (the first is the simplest).
NONE, OWN_PAGE, BOUNDARY = 0, 1, 2
START, END, ANYWHERE = 0, 1, 2


def page_offsets() -> st.SearchStrategy[int]:
    return st.integers(0, PAGE - 1)


@st.composite
def lengths(draw: st.DrawFn, max_len: int = DEFAULT_MAX_LEN) -> int:
    """0..300, or log-scale up to max_len; shrinks towards 0."""
    if not 0 <= max_len <= records.MAX_LEN:
        raise ValueError(f"max_len={max_len} is not in 0..{records.MAX_LEN}")
    if not draw(st.booleans()):
        return draw(st.integers(0, min(SMALL_MAX_LEN, max_len)))
    bits = draw(st.integers(0, max(0, max_len.bit_length() - 1)))
    hi = min(1 << bits, max_len)
    return draw(st.integers(min(hi >> 1, hi), hi))


def _offset_for(fault: int) -> int:
    """The page offset that puts a fault at F > 0 on a page boundary."""
    return (-fault) % PAGE


@st.composite
def _boundary(draw: st.DrawFn, n: int, at_least: int) -> tuple[int, int]:
    """(offset, fault) with the fault on a page boundary, at_least <= fault <= n + PAGE."""
    first = START if at_least <= 1 else END
    anchor = draw(st.integers(first, ANYWHERE))
    if anchor == START:
        fault = draw(st.integers(max(at_least, 1), NEAR))
    elif anchor == END:
        fault = n + draw(st.integers(max(at_least - n, -NEAR), NEAR))
    else:
        fault = draw(st.integers(at_least, n + PAGE))
    return _offset_for(fault), fault


# memset's fill classes (harness/cases.c sweeps the same ones).
FILLS = (0x00, 0xFF, 0xA5, 0x1234565A, 0xFFFFFF81)


def fills() -> st.SearchStrategy[int]:
    return st.one_of(st.sampled_from(FILLS), st.integers(0, 2**32 - 1))


def displacements(n: int) -> st.SearchStrategy[int]:
    most = records.memmove_max_disp(n)
    return st.integers(-most, most)


@st.composite
def sides(draw: st.DrawFn, kind: str, n: int, side: str = "dst") -> tuple[int, int]:
    """(page offset, fault position or records.NO_FAULT) for one side of a case
    (memmove: n is how far above dst both buffers end, records.memmove_top)."""
    if not records.side_faults(kind, side):  # the kernel's side of a one-way user copy
        return draw(page_offsets()), records.NO_FAULT
    if kind in records.RETURNS_DST:
        # none, or a boundary at or past n: no access of a correct memcpy can fault
        if not draw(st.booleans()):
            return draw(page_offsets()), records.NO_FAULT
        return draw(_boundary(n, at_least=n))
    mode = draw(st.integers(NONE, BOUNDARY))
    if mode == NONE:
        return draw(page_offsets()), records.NO_FAULT
    if mode == OWN_PAGE:
        return draw(page_offsets()), 0
    return draw(_boundary(n, at_least=1))


def cases(kind: str, profile: str, *, max_len: int = DEFAULT_MAX_LEN,
          case_id: int = 0) -> st.SearchStrategy[records.Case]:
    """Valid case records for a routine of this kind, judged under this profile."""
    if kind not in records.KINDS:
        raise ValueError(f"kind={kind!r} is not one of {', '.join(records.KINDS)}")
    if profile not in records.PROFILES:
        raise ValueError(f"profile={profile!r} is not one of {', '.join(records.PROFILES)}")

    @st.composite
    def build(draw: st.DrawFn) -> records.Case:
        n = draw(lengths(max_len))
        fill = draw(fills()) if kind == "memset" else 0
        disp = draw(displacements(n)) if kind == "memmove" else 0
        # dst before src: see the module docstring (faults move to the later side).
        dst_off, dst_fault = draw(sides(kind, records.memmove_top(n, disp)))
        src_off, src_fault = draw(sides(kind, n, "src")) if kind in records.HAS_SRC else (0, records.NO_FAULT)
        return records.Case(
            kind=records.KINDS.index(kind), profile=records.PROFILES.index(profile), id=case_id,
            n=n, src_off=src_off, dst_off=dst_off, src_fault=src_fault, dst_fault=dst_fault,
            fill=fill, disp=disp,
        )

    return build()


def case_problem(case: records.Case) -> str | None:
    """Why a case is not one these strategies may produce, or None: the executor's own
    checks (records.case_check, the mirror of cf_case_check) plus the kind's rules
    (clear, memset, memmove: no source side; memcpy, memset, memmove: no fault before
    the end, memmove's being where the higher of its buffers ends)."""
    error = records.case_check(case)
    if error != records.CASE_OK:
        return records.case_error_message(error)
    if case.seal:
        return "seal word not zero"
    kind = records.KINDS[case.kind]
    if kind not in records.HAS_SRC and (case.src_off, case.src_fault) != (0, records.NO_FAULT):
        return f"a {kind} case has a source side"
    if kind in records.RETURNS_DST:
        top = records.memmove_top(case.n, case.disp)
        for name, fault, end in (("src", case.src_fault, case.n), ("dst", case.dst_fault, top)):
            if fault != records.NO_FAULT and fault < end:
                return f"{name}_fault={fault} is inside a {kind} of n={case.n}"
    return None
