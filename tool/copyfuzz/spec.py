"""The one-line case spec: `ROUTINE:n=N,src_off=O,src_fault=F,dst_off=O,dst_fault=F`.

memset specs have `fill=C` (the int argument) and no src_*; memmove specs have
`disp=D` (dst - src, both in one mapping: src is not a side of its own) and no src_*.
A case whose faults are at MTE tag granules (arm64 `--granule 16`) ends `,granule=16`:
its fault positions are then 16-byte granules, not pages.

It is what `sweep` prints for a reproducer and what `repro` reads, so parse(format(x))
must give x back. Validation is records.case_check() (the mirror of cf_case_check() in
harness/cases.c): a malformed spec is refused here with a message saying how to fix it,
instead of as an ERROR record from the executor.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import records
from .errors import CopyfuzzError

if TYPE_CHECKING:
    from .routines import Routine

KEYS = ("n", "fill", "disp", "src_off", "src_fault", "dst_off", "dst_fault", "granule")
SRC_KEYS = ("src_off", "src_fault")
INT_MIN, UINT_MAX = -(2**31), 2**32 - 1
MAX_FAULT = records.MAX_FAULT


class SpecError(CopyfuzzError):
    pass


@dataclass(frozen=True)
class Spec:
    routine: str
    kind: str  # one of records.KINDS: decides which keys exist (src_*, fill, disp)
    n: int
    src_off: int = 0
    src_fault: int | None = None  # bytes from src to its first inaccessible byte
    dst_off: int = 0
    dst_fault: int | None = None
    fill: int = 0  # memset: its int argument as 32 bits (0xffffff81 is -127)
    disp: int = 0  # memmove: dst - src
    granule: int = 0  # records.GRANULES: 0 = faults at pages, 16 = at MTE tag granules

    def to_case(self, profile: str, case_id: int = 0) -> records.Case:
        def fault(value: int | None) -> int:
            return records.NO_FAULT if value is None else value

        return records.Case(
            kind=records.KINDS.index(self.kind),
            profile=records.PROFILES.index(profile),
            id=case_id,
            n=self.n,
            src_off=self.src_off,
            dst_off=self.dst_off,
            src_fault=fault(self.src_fault),
            dst_fault=fault(self.dst_fault),
            fill=self.fill,
            disp=self.disp,
            granule=self.granule,
        )


def split_routine(text: str) -> tuple[str, str]:
    """'riscv/copy_user:n=3' -> ('riscv/copy_user', 'n=3'); the routine is looked up
    before the rest is parsed, because its kind decides which keys are allowed.
    The last ':' splits: a checked file's routine is itself 'path/file.S:symbol'."""
    routine, sep, rest = text.strip().rpartition(":")
    if not sep or not routine.strip():
        raise SpecError(
            f"malformed case spec {text!r}: expected ROUTINE:n=N[,src_off=O,src_fault=F,dst_off=O,dst_fault=F]"
            " (memset: fill=C, no src_*; memmove: disp=D, no src_*)"
        )
    return routine.strip(), rest


def _parse_int(key: str, value: str) -> int:
    v = value.strip()
    try:
        if v[:2].lower() == "0x" and len(v) > 2:
            return int(v[2:], 16)
        if v.isascii() and v.isdigit():
            return int(v, 10)
    except ValueError:
        pass
    raise SpecError(f"{key}={value!r} is not a number (decimal or 0x-hex)")


def _parse_signed(key: str, value: str) -> int:
    """A number that may be negative: -5, -0x10."""
    v = value.strip()
    negative = v.startswith("-")
    try:
        magnitude = _parse_int(key, v[1:] if negative else v)
    except SpecError:
        raise SpecError(f"{key}={value!r} is not a number (decimal or 0x-hex, may be negative)") from None
    return -magnitude if negative else magnitude


def _parse_fill(value: str) -> int:
    """memset's int: 0..0xffffffff, or negative down to -2^31 (stored as its 32 bits)."""
    fill = _parse_signed("fill", value)
    if not INT_MIN <= fill <= UINT_MAX:
        raise SpecError(f"fill={value.strip()} is not an int: {INT_MIN}..{UINT_MAX} (0x-hex allowed)")
    return fill & UINT_MAX


def _parse_fault(key: str, value: str) -> int | None:
    if value.strip().lower() == "none":
        return None
    fault = _parse_int(key, value)
    return None if fault == records.NO_FAULT else fault  # the record's spelling of none


def _side(side: str, given: dict[str, str], granule: int = 0) -> tuple[int, int | None]:
    """Offset and fault of one side, the offset derived from the fault if omitted."""
    off_key, fault_key = f"{side}_off", f"{side}_fault"
    fault = _parse_fault(fault_key, given[fault_key]) if fault_key in given else None
    if off_key in given:
        off = _parse_int(off_key, given[off_key])
    elif fault is not None and fault > 0:
        # The first inaccessible byte sits on a page (granule) boundary: the offset follows.
        off = (-fault) % records.fault_unit(granule)
    else:
        off = 0
    return off, fault


def _why_not(spec: Spec, error: int) -> str:
    """What is wrong with a spec the case check refuses, said so that it can be fixed."""
    if error == records.CASE_TOO_LONG:
        return f"n={spec.n} is too long: at most {records.MAX_LEN} (1 MiB)"
    if error == records.CASE_BAD_DISP:
        most = records.memmove_max_disp(spec.n)
        if abs(spec.disp) > most:
            return (f"disp={spec.disp} is out of range for n={spec.n}: |disp| <= {most} "
                    f"(n + {records.MEMMOVE_SLACK}, and n + |disp| <= {records.MAX_LEN})")
        return (f"disp={spec.disp} with dst_fault={spec.dst_fault} puts src further than "
                f"{MAX_FAULT} below the fault")
    sides = {"src": (spec.src_off, spec.src_fault), "dst": (spec.dst_off, spec.dst_fault)}
    if error == records.CASE_KERNEL_SIDE_FAULT:
        side = records.KERNEL_SIDE[spec.kind]
        return (f"{side}_fault={sides[side][1]}: {spec.routine} is a {spec.kind} routine, whose {side} "
                "is kernel memory and never faults: drop it")
    if error == records.CASE_BAD_OFFSET:
        side = "src" if spec.src_off >= records.PAGE_SIZE else "dst"
        return f"{side}_off={sides[side][0]} is not a page offset: it must be below {records.PAGE_SIZE}"
    if error in (records.CASE_SRC_UNREACHABLE, records.CASE_DST_UNREACHABLE):
        side = "src" if error == records.CASE_SRC_UNREACHABLE else "dst"
        off, fault = sides[side]
        if fault is not None and fault > MAX_FAULT:
            # The executor bounds positions too: one that far past the end means no fault.
            return f"{side}_fault={fault} is too far: at most {MAX_FAULT}, or none"
        unit = records.fault_unit(spec.granule)
        fitting = (-(fault or 0)) % unit
        where = "a 16-byte tag granule's start (granule=16)" if spec.granule else "a page boundary"
        return (f"{side}_fault={fault} cannot happen with {side}_off={off}: the first inaccessible byte is "
                f"always at {where}; {side}_off={fitting} makes it reachable")
    if error == records.CASE_BAD_GRANULE:
        return f"granule={spec.granule}: give granule=16 (MTE tag granules), or leave it out (pages)"
    return records.case_error_message(error)


def parse_fields(routine: str, kind: str, text: str) -> Spec:
    """Parse the part after 'ROUTINE:' for a routine of the given kind."""
    given: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not value.strip():
            raise SpecError(f"malformed case spec item {item!r}: expected key=value")
        if key not in KEYS:
            raise SpecError(f"unknown case spec key {key!r}: the keys are {', '.join(KEYS)}")
        if key in given:
            raise SpecError(f"case spec key {key!r} given twice")
        given[key] = value
    if "n" not in given:
        raise SpecError("the case spec needs n=N (the number of bytes)")
    if kind not in records.HAS_SRC:
        extra = [k for k in SRC_KEYS if k in given]
        if extra:
            why = ("its source is dst - disp in the same mapping: give disp=D"
                   if kind == "memmove" else "it has no source")
            raise SpecError(f"{routine} is a {kind} routine: {why}, drop {', '.join(extra)}")
    for key, owner in (("fill", "memset"), ("disp", "memmove")):
        if key in given and kind != owner:
            raise SpecError(f"{key}= is for {owner} routines; {routine} is a {kind} routine")
    n = _parse_int("n", given["n"])
    granule = _parse_int("granule", given["granule"]) if "granule" in given else 0
    src_off, src_fault = _side("src", given, granule) if kind in records.HAS_SRC else (0, None)
    dst_off, dst_fault = _side("dst", given, granule)
    fill = _parse_fill(given["fill"]) if "fill" in given else 0
    disp = _parse_signed("disp", given["disp"]) if "disp" in given else 0
    if not INT_MIN <= disp < 2**31:
        raise SpecError(f"disp={disp} is out of range for n={n}: |disp| <= {records.memmove_max_disp(n)}")
    spec = Spec(routine, kind, n, src_off, src_fault, dst_off, dst_fault, fill, disp, granule)
    error = records.case_check(spec.to_case("linux"))
    if error != records.CASE_OK:
        raise SpecError(_why_not(spec, error))
    return spec


def parse(text: str, kind: str) -> Spec:
    routine, rest = split_routine(text)
    return parse_fields(routine, kind, rest)


def format_spec(spec: Spec) -> str:
    parts = [f"n={spec.n}"]
    if spec.kind == "memset":
        parts.append(f"fill={spec.fill:#x}")
    if spec.kind == "memmove":
        parts.append(f"disp={spec.disp}")
    if spec.kind in records.HAS_SRC:
        parts.append(f"src_off={spec.src_off}")
        if spec.src_fault is not None:
            parts.append(f"src_fault={spec.src_fault}")
    parts.append(f"dst_off={spec.dst_off}")
    if spec.dst_fault is not None:
        parts.append(f"dst_fault={spec.dst_fault}")
    if spec.granule:
        parts.append(f"granule={spec.granule}")
    return f"{spec.routine}:{','.join(parts)}"


def from_case(routine: str, case: records.Case) -> Spec:
    """The spec of a case record from the executor (e.g. a sweep reproducer)."""
    kind = records.KINDS[case.kind] if case.kind < len(records.KINDS) else "copy"

    def fault(value: int) -> int | None:
        return None if value == records.NO_FAULT else value

    if kind not in records.HAS_SRC:
        return Spec(routine, kind, case.n, 0, None, case.dst_off, fault(case.dst_fault),
                    case.fill, case.disp, case.granule)
    return Spec(routine, kind, case.n, case.src_off, fault(case.src_fault),
                case.dst_off, fault(case.dst_fault), case.fill, case.disp, case.granule)


def parse_spec_line(line: str, routine: "Routine") -> Spec:
    """A corpus line: a full spec for this routine, or just its fields ('n=8,src_off=3')."""
    if ":" in line:
        name, rest = split_routine(line)
        if name != routine.name:
            raise SpecError(f"the spec is for {name}, not {routine.name}")
        return parse_fields(routine.name, routine.kind, rest)
    return parse_fields(routine.name, routine.kind, line)
