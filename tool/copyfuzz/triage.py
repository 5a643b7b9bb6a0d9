"""From an engine's failing input to a saved regression: the one triage path of every engine.

An engine hands over candidate cases for one failure (its minimised input first, the
original last). Each is re-run alone through `serve`, with the coverage plugin as the
driver runs it; the first that shows an error class under the profile is the finding:
its classes and fault pc. The case is then shrunk (shrink(): n, the offsets, the fault
positions and the variant lowered toward the exhaustive sweep's order while the class
and the fault pc stay the same) and saved as a regression spec (one per build, class and
fault pc). So every engine's finding ends as small as the sweep's first case of it: the
engines' own minimisers (-minimize_crash, afl-tmin) shrink bytes, not the case.
When no candidate reproduces (an empty artifact a crashed or disk-full run left, an
executor killed from outside), the engine's word alone is not a finding: it is reported
as not reproduced, and nothing is saved.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import executor, known, records, regressions
from .elfinfo import Symbolizer, routine_symbolizer, where
from .errors import CopyfuzzError
from .routines import Routine
from .session import Need, Session, routine_argv
from .spec import Spec, format_spec


@dataclass
class CampaignFinding:
    """A reproduced finding of a campaign and where it was saved."""

    cls: str
    classes: list[str]
    spec: str
    fault_pc: str
    artifact: str
    regression: str
    new: bool
    at_s: float = 0.0  # seconds into the campaign when it was triaged
    shrunk_from: str = ""  # the engine's case, before shrink() ("" if shrink kept it)
    shrink_cut: bool = False  # the triage time ran out while it was shrunk: smaller ones may exist
    faults: list[dict[str, object]] = field(default_factory=list)  # known.fault_trail of its reproducer


def serving(root: Path, routine: Routine, granule: int = 0) -> Session:
    """One `serve` of the routine, with the plugin's memory audit as the driver runs it (and
    MTE tag granules as fault boundaries, with granule). Optional: replay runs a native
    routine's regressions too, without the plugin (fuzz refuses a native routine)."""
    return Session(root, routine, Need.MEMCHECK, optional=True, granule=granule)


def run_one(server: Session, profile: str, spec: Spec, case_id: int) -> records.Result:
    return accepted(spec, server.run(spec.to_case(profile, case_id)))


def accepted(spec: Spec, result: records.Result) -> records.Result:
    """The result of a case the executor ran; a case it rejected is a CopyfuzzError."""
    return Session.accepted(result, f"{format_spec(spec)}: ")


def run_specs(root: Path, routine: Routine, profile: str, specs: list[Spec]) -> list[records.Result]:
    """Each case through one `serve`."""
    return run_specs_until(root, routine, profile, specs, math.inf)


def run_specs_until(root: Path, routine: Routine, profile: str, specs: list[Spec],
                    deadline: float) -> list[records.Result]:
    """Each case through one `serve`, stopped at the deadline (time.monotonic()): the
    results of the cases run by then, in order (a campaign's batch of failures to sort
    out must not outlast its triage time: hundreds of long cases take seconds)."""
    out: list[records.Result] = []
    if not specs or time.monotonic() >= deadline:
        return out
    with serving(root, routine, max((s.granule for s in specs), default=0)) as server:
        while len(out) < len(specs) and time.monotonic() < deadline:
            batch = specs[len(out):len(out) + executor.PIPELINE]
            results = server.run_many([s.to_case(profile, len(out) + i + 1) for i, s in enumerate(batch)], deadline)
            out += [accepted(s, r) for s, r in zip(batch, results, strict=False)]
    return out


def fault_pc_of(result: records.Result) -> int:
    """The pc a finding is keyed by (as the driver keys it): the first (or ending) fault's,
    0 when the case did not fault."""
    return result.fault_pc if result.faults else 0


# ---- the case-level shrinker ----

MEMSET_FILLS = (0x00, 0xFF, 0xA5, 0x1234565A, 0xFFFFFF81)  # the sweep's fills, in its order (harness/cases.c)
SHRINK_RUNS = 30000  # cases run per shrink at most (serve runs tens of thousands of short ones a second)
_FAULT_STEPS = 48  # fault positions tried below the current one, per side and step
SHRINK_BATCH = 4  # a shrink step's first batch of candidates (doubling up to executor.PIPELINE)


def _period(xlen: int) -> int:
    """The sweep's misalignment period (2 * SZREG): offsets are enumerated modulo it."""
    return 2 * (xlen // 8)


def _first_position(m: int, period: int) -> int:
    """The smallest fault position > 0 reachable at misalignment m (harness/cases.c)."""
    r = (period - m % period) % period
    return r or period


def _fault_rank(fault: int | None) -> int:
    """The sweep's fault index order at one misalignment: none, 0, then ascending."""
    return 0 if fault is None else 1 if fault == 0 else 2 + fault


def sweep_order(spec: Spec, xlen: int = 64) -> tuple[int, ...]:
    """Where a case sits in the exhaustive sweep's order (harness/cases.c's odometer, most
    significant first: n, src misalignment, dst misalignment, src fault, dst fault, the
    variant), then the raw offsets for cases the sweep would spell with a smaller one. A
    smaller tuple is a smaller reproducer; the sweep's first case of a finding is smallest."""
    p = _period(xlen)
    if spec.kind == "memset":
        variant = MEMSET_FILLS.index(spec.fill) if spec.fill in MEMSET_FILLS else len(MEMSET_FILLS) + spec.fill
    else:
        variant = spec.disp
    has_src = spec.kind in records.HAS_SRC
    src = (spec.src_off % p, _fault_rank(spec.src_fault), spec.src_off) if has_src else (0, 0, 0)
    dst = (spec.dst_off % p, _fault_rank(spec.dst_fault), spec.dst_off)
    return (spec.n, src[0], dst[0], src[1], dst[1], variant, src[2], dst[2])


def _at(f: int, unit: int) -> int:
    """The offset that puts a fault f bytes into the buffer (the guard page's start; of a
    granule case, a tag granule's, the buffer near its page's start as the sweep puts it)."""
    return (-f) % unit


def _side_options(off: int, fault: int | None, period: int, unit: int) -> list[tuple[int, int | None]]:
    """(offset, fault) of one side at or before the current one in the sweep's order."""
    m = off % period
    out: list[tuple[int, int | None]] = [(m, None), (m, 0)]
    first = _first_position(m, period)
    k_now = (fault - first) // period if fault else 0
    for k in sorted(set(range(min(k_now, _FAULT_STEPS))) | {k_now // 2, k_now // 4}):
        f = first + k * period
        out.append((_at(f, unit), f))
    for m2 in range(m):  # a smaller misalignment, the fault kept about as far in
        if not fault:
            out.append((m2, fault))
        else:
            for k in {0, k_now}:
                f = _first_position(m2, period) + k * period
                out.append((_at(f, unit), f))
    return out


def _same_residue(x: int, f: int, period: int) -> int:
    """The largest position <= x at f's misalignment (x = f mod period): a fault moved there
    keeps its side's alignment, and so the routine's path."""
    return x - ((x - f) % period)


def neighbours(spec: Spec, xlen: int) -> list[Spec]:
    """The cases one step from spec: n lowered (a faulting side's fault brought along: to
    any position near either end, or as far from the end as before, or at the same share
    of n, at its misalignment; both sides' faults moved together too), one side's fault
    or misalignment moved earlier, the variant lowered."""
    p = _period(xlen)
    unit = records.fault_unit(spec.granule)
    n = spec.n
    has_src = spec.kind in records.HAS_SRC
    ns = (set(range(2 * p + 1)) | {n * j // 8 for j in range(1, 8)} | {n - k for k in range(1, p + 1)}
          | {n - (1 << k) for k in range(n.bit_length())})
    ns = {n2 for n2 in ns if 0 <= n2 < n}
    out = [dataclasses.replace(spec, n=n2) for n2 in ns]
    src_f = spec.src_fault if has_src and spec.src_fault else None
    dst_f = spec.dst_fault or None
    for n2 in ns:
        near = ({0} | set(range(1, min(n2, 2 * p) + 1)) | {n2 - k for k in range(p) if n2 - k > 0}
                | set(range(n2, n2 + p + 1)))
        moved = {}
        for side, f in (("src", src_f), ("dst", dst_f)):
            if f is None:
                continue
            kept = {g for g in (f, _same_residue(f - (n - n2), f, p), _same_residue(f * n2 // n, f, p)) if g > 0}
            moved[side] = _same_residue(f - (n - n2), f, p)
            for g in near | kept:
                if side == "src":
                    out.append(dataclasses.replace(spec, n=n2, src_off=_at(g, unit), src_fault=g))
                else:
                    out.append(dataclasses.replace(spec, n=n2, dst_off=_at(g, unit), dst_fault=g))
        if src_f is not None and dst_f is not None and min(moved.values()) > 0:
            out.append(dataclasses.replace(spec, n=n2, src_off=_at(moved["src"], unit), src_fault=moved["src"],
                                           dst_off=_at(moved["dst"], unit), dst_fault=moved["dst"]))
    if has_src:
        out += [dataclasses.replace(spec, src_off=o, src_fault=f)
                for o, f in _side_options(spec.src_off, spec.src_fault, p, unit)]
    out += [dataclasses.replace(spec, dst_off=o, dst_fault=f)
            for o, f in _side_options(spec.dst_off, spec.dst_fault, p, unit)]
    if spec.kind == "memset":
        out += [dataclasses.replace(spec, fill=f) for f in MEMSET_FILLS]
    elif spec.kind == "memmove":
        low = -(n + 16)
        out += [dataclasses.replace(spec, disp=d) for d in range(low, min(spec.disp, low + 32))]
    kernel = records.KERNEL_SIDE.get(spec.kind)  # a one-way user copy: that side never faults
    return [s for s in out if getattr(s, f"{kernel}_fault") is None] if kernel else out


def shrink(server: executor.Server, profile: str, spec: Spec, cls: str, pc: int, xlen: int,
           max_runs: int = SHRINK_RUNS) -> Spec:
    """The smallest case (sweep_order) reached greedily from spec that still shows cls with
    its fault at pc (0: still no fault): each step runs the cases one step away, smallest
    first, and moves to the first that shows it; it ends when none does (or after max_runs
    cases). Every candidate runs through the executor; a case it rejects does not show it."""
    return shrink_until(server, profile, spec, cls, pc, xlen, math.inf, max_runs)[0]


def shrink_until(server: executor.Server, profile: str, spec: Spec, cls: str, pc: int, xlen: int,
                 deadline: float, max_runs: int = SHRINK_RUNS) -> tuple[Spec, bool]:
    """shrink(), ended at the deadline (time.monotonic()) if it comes first: the smallest
    case shown so far (every step is a case that showed it), and True when it was cut."""
    runs = 0

    def shows(result: records.Result) -> bool:
        return result.type == records.RESULT_CASE and cls in result.error_list and fault_pc_of(result) == pc

    best, key = spec, sweep_order(spec, xlen)
    failed: set[Spec] = set()  # a case's result does not change: each step's neighbours overlap the last's
    improved = True
    while improved and runs < max_runs:
        improved = False
        ranked = sorted({c for c in neighbours(best, xlen) if c not in failed and sweep_order(c, xlen) < key},
                        key=lambda s: sweep_order(s, xlen))
        # In batches through the executor's pipeline (Server.run_many), first small (the
        # first candidates show it most often), then growing: the step still moves to the
        # first candidate in the order that shows it; the rest of its batch ran for nothing.
        at, size = 0, SHRINK_BATCH
        while at < len(ranked) and not improved and runs < max_runs:
            if time.monotonic() >= deadline:
                return best, True
            batch = ranked[at:at + min(size, max_runs - runs)]
            results = server.run_many([c.to_case(profile, runs + i + 1) for i, c in enumerate(batch)], deadline)
            runs += len(batch)  # those the deadline left unrun are not marked failed: the loop ends next
            for cand, result in zip(batch, results, strict=False):
                if shows(result):
                    best, key, improved = cand, sweep_order(cand, xlen), True
                    break
                failed.add(cand)
            at += len(batch)
            size = min(2 * size, executor.PIPELINE)
    return best, False


def _symbolizer(root: Path, routine: Routine) -> Symbolizer | None:
    try:
        info = executor.info(routine_argv(root, routine))
    except CopyfuzzError:
        info = {}
    return routine_symbolizer(root, routine, info)


def describe_fault_pc(root: Path, routine: Routine, result: records.Result,
                      sym: Symbolizer | None = None) -> str:
    """`0x1234 (symbol+0x10)`, as repro shows it; "" when the case did not fault. sym: the
    routine's symbolizer, when the caller has it."""
    if not result.faults:
        return ""
    named = where(sym or _symbolizer(root, routine), result.fault_pc)
    hexpc = f"{result.fault_pc:#x}"
    return hexpc if named == hexpc else f"{hexpc} ({named})"


def triage(root: Path, routine: Routine, profile: str, regressions_dir: Path, engine: str,
           candidates: list[Spec], artifact: str = "",
           pick: Callable[[list[str]], str] | None = None, deadline: float = math.inf) -> CampaignFinding | None:
    """The first candidate that reproduces, shrunk (its class and fault pc kept; until the
    deadline, time.monotonic()) and saved as a regression; None if none does. pick chooses
    the class the finding is filed under (default: the first in report order)."""
    with serving(root, routine, max((s.granule for s in candidates), default=0)) as server:
        for i, spec in enumerate(candidates):
            result = run_one(server, profile, spec, i + 1)
            if result.errors:
                break
        else:
            return None
        cls = pick(result.error_list) if pick else result.error_list[0]
        small, cut = shrink_until(server, profile, spec, cls, fault_pc_of(result), routine.xlen, deadline)
        if small != spec:
            result = run_one(server, profile, small, 0)
    classes = result.error_list
    sym = _symbolizer(root, routine) if result.faults else None  # read once, for the pc and the trail
    fault_pc = describe_fault_pc(root, routine, result, sym)
    path, new = regressions.save(regressions_dir, routine, small, cls, classes, engine=engine,
                                 fault_pc=fault_pc, profile=profile)
    faults = known.fault_trail(sym, result)
    return CampaignFinding(cls, classes, format_spec(small), fault_pc, artifact, str(path), new,
                           shrunk_from=format_spec(spec) if small != spec else "", shrink_cut=cut, faults=faults)
