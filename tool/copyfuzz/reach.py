"""What of a routine a sweep ran: each instruction the audit reaches from the entry and
from the fixups (its listing) either executed under the QEMU plugin in some case of the
sweep or never did. A routine whose user accesses or fixups did not all run is "clean
where it ran", never "clean"; the report lists what did not run, by address and source
line (issue 25, point 5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

    def to_json(self, where: Callable[[int], str]) -> dict[str, object]:
        return {
            "instructions": len(self.listing),
            "executed": len(self.listing) - len(self.missed),
            "never_ran": [{"address": f"{i.addr:#x}", "where": where(i.addr), "line": self.lines.get(i.addr),
                           "insn": f"{i.mnemonic} {i.op_str}".strip(), "access": i.addr in self.user,
                           "fixup": i.addr in self.fixups} for i in self.missed],
            "accesses_never_ran": len(self.missed_user),
            "fixups_never_ran": len(self.missed_fixups),
        }


def reach(audit: Audit, executed: set[int], lines: dict[int, str]) -> Reach:
    return Reach(listing=audit.listing, executed=executed,
                 user={i.addr for i in audit.listing if audit.needs_entry(i)},
                 # the fixups of this routine's accesses (the table may serve other routines too)
                 fixups={audit.entries[i.addr] for i in audit.listing if i.addr in audit.entries}, lines=lines,
                 noun="access" if audit.kind in records.RETURNS_DST else "user access")
