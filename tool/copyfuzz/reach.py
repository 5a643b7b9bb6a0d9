"""What of a routine a sweep ran: each instruction the audit reaches from the entry and
from the fixups (its listing) either executed under the QEMU plugin in some case of the
sweep or never did. A routine whose user accesses or fixups did not all run is "clean
where it ran", never "clean"; the report lists what did not run, by address and source
line, and the length that runs it: a probe past the sweep's lengths (probe_shapes) runs a few
cases at each doubling of n up to PROBE_MAX_N and notes the first n that ran each
instruction (issue 25, point 5).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from . import records
from .audit import Audit
from .decode import Insn


@dataclass
class Reach:
    """The audit's listing against the addresses the plugin saw execute."""

    listing: list[Insn]
    executed: set[int]
    user: set[int]  # addresses of the accesses that need a table entry (user or unknown base)
    fixups: set[int]  # fixup entry points (the table's targets)
    lines: dict[int, str] = field(default_factory=dict)  # address -> file:line
    noun: str = "user access"  # what an access is called: "access" for memcpy-like kinds
    probe: Probe | None = None  # past the sweep's lengths: where what never ran runs

    @property
    def missed(self) -> list[Insn]:
        return [i for i in self.listing if i.addr not in self.executed]

    @property
    def missed_user(self) -> list[Insn]:
        return [i for i in self.missed if i.addr in self.user]

    @property
    def missed_fixups(self) -> list[int]:
        return sorted(a for a in self.fixups if a not in self.executed)

    @property
    def complete(self) -> bool:
        return not self.missed

    @property
    def accesses_ran(self) -> bool:
        """Every user access and every fixup ran (a verdict of clean can stand)."""
        return not self.missed_user and not self.missed_fixups

    def summary(self) -> str:
        """'N of M instructions never ran (K user accesses, F fixups)', '' when all ran."""
        missed = self.missed
        if not missed:
            return ""
        parts = [f"{len(self.missed_user)} {self.noun}{'es' if len(self.missed_user) != 1 else ''}"] \
            if self.missed_user else []
        if self.missed_fixups:
            parts.append(f"{len(self.missed_fixups)} fixup{'s' if len(self.missed_fixups) != 1 else ''}")
        return (f"{len(missed)} of {len(self.listing)} instructions never ran"
                + (f" ({', '.join(parts)})" if parts else ""))

    def runs_from(self, addr: int) -> int | None:
        """The smallest n of the probe past the sweep that ran addr (None: none did, or no probe)."""
        case = self.probe.first.get(addr) if self.probe else None
        return case.n if case else None

    def to_json(self, where: Callable[[int], str]) -> dict[str, object]:
        return {
            "instructions": len(self.listing),
            "executed": len(self.listing) - len(self.missed),
            "never_ran": [{"address": f"{i.addr:#x}", "where": where(i.addr), "line": self.lines.get(i.addr),
                           "insn": f"{i.mnemonic} {i.op_str}".strip(), "access": i.addr in self.user,
                           "fixup": i.addr in self.fixups, "runs_from_n": self.runs_from(i.addr),
                           "runs_in": self.probe.spec_of(i.addr) if self.probe else None}
                          for i in self.missed],
            "accesses_never_ran": len(self.missed_user),
            "fixups_never_ran": len(self.missed_fixups),
            "probe": self.probe.to_json() if self.probe else None,
        }


# The probe past a sweep: every doubling of n from twice the sweep's longest up to this,
# each with a few alignments, with no fault and with a fault halfway on each side that
# faults (a fixup runs only on a fault). About ten cases a length, under a second.
PROBE_MAX_N = 65536
PROBE_TIMEOUT_MS = 10_000  # a probe case's watchdog, at the least (a hang stops the probe)
PROBE_OFFSETS = ((0, 0), (1, 0), (0, 1), (3, 5))


@dataclass
class Probe:
    """What the cases past the sweep ran: the first case that ran each address."""

    lengths: tuple[int, ...]
    cases: int = 0
    first: dict[int, records.Case] = field(default_factory=dict)
    stopped: str = ""  # why the probe stopped early ("crash at n=4096"), "" when it ran every case
    findings: dict[str, int] = field(default_factory=dict)  # its cases with each finding class

    routine: str = ""  # the name its specs give

    def spec_of(self, addr: int) -> str | None:
        """The first probe case that ran addr, as a spec for repro and cov."""
        from .spec import format_spec, from_case

        case = self.first.get(addr)
        return format_spec(from_case(self.routine, case)) if case else None

    def to_json(self) -> dict[str, object]:
        return {"lengths": list(self.lengths), "cases": self.cases, "stopped": self.stopped or None,
                "findings": self.findings}


def probe_lengths(max_len: int) -> tuple[int, ...]:
    out = []
    n = max(2 * max_len, 2)
    while n <= PROBE_MAX_N:
        out.append(n)
        n *= 2
    return tuple(out)


def probe_shapes(kind: str, profile: str, n: int) -> list[records.Case]:
    """The probe's cases of length n, each one the executor takes (records.case_check): the
    alignments of PROBE_OFFSETS with no fault, then a fault halfway on each side that
    faults (past the end for a kind that returns dst); memset with a zero and a non-zero
    fill (a zeroing path such as DC ZVA runs only for 0), memmove both ways. Always in the
    same order: the i-th of each n has one shape, so the length that first runs something
    can be narrowed down by bisection (cmd_sweep.probe_past_the_sweep)."""
    k, prof = records.KINDS.index(kind), records.PROFILES.index(profile)
    has_src = kind in records.HAS_SRC
    sides = [side for side in ("src", "dst") if records.side_faults(kind, side)]
    out: list[records.Case] = []
    plain = [records.Case(kind=k, profile=prof, id=0, n=n, src_off=s if has_src else 0, dst_off=d)
             for s, d in PROBE_OFFSETS]
    # A kind that returns dst has no fixups: as in the sweep, its guard page starts
    # right after the buffer (any access past the end faults), never inside it;
    # memmove's buffers share one mapping, so it gets none.
    at = n if kind in records.RETURNS_DST else n // 2
    faulting = [replace(plain[0], **{f"{side}_off": -at % records.PAGE_SIZE, f"{side}_fault": at})
                for side in sides if kind != "memmove"]
    for case in plain + faulting:
        if kind == "memset":
            variants = [replace(case, fill=fill) for fill in (0, 0xA5)]
        elif kind == "memmove":
            variants = [replace(case, disp=disp) for disp in (8, -8)]
        else:
            variants = [case]
        out += [v for v in variants if records.case_check(v) == records.CASE_OK and v not in out]
    return out


def reach(audit: Audit, executed: set[int], lines: dict[int, str]) -> Reach:
    return Reach(listing=audit.listing, executed=executed,
                 user={i.addr for i in audit.listing if audit.needs_entry(i)},
                 # the fixups of this routine's accesses (the table may serve other routines too)
                 fixups={audit.entries[i.addr] for i in audit.listing if i.addr in audit.entries}, lines=lines,
                 noun="access" if audit.kind in records.RETURNS_DST else "user access")
