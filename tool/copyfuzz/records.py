"""Python mirror of harness/records.h: case and result records, classes, enums, the
control block, the seal, and the case-validity rules.

records.h is the one definition (its layouts are X-macros); tests/test_records.py
compiles a C program that walks those X-macros and compares every field's name, offset,
size and C type, every enumerator and constant with this module, and checks
case_check() against the C cf_case_check_for() through libcfref.so, so the two cannot
drift apart silently.
"""

from __future__ import annotations

import ctypes
import operator
import struct
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from .cheader import defines, rows, struct_layout

_DEFINES = defines("records.h")  # its numeric #defines; the expressions below are checked by test_records
PAGE_SIZE = _DEFINES["CF_PAGE_SIZE"]
GRANULE_MTE = _DEFINES["CF_GRANULE_MTE"]  # a case's faults at 16-byte MTE tag granules (arm64 --granule 16)
GRANULES = (0, GRANULE_MTE)  # a case's granule: 0 = page boundaries
MAX_LEN = 1 << 20
CANARY_LEN = _DEFINES["CF_CANARY_LEN"]
MEMMOVE_SLACK = _DEFINES["CF_MEMMOVE_SLACK"]  # memmove's |disp| <= n + 16
NO_FAULT = (1 << 64) - 1
MAX_FAULT = MAX_LEN + PAGE_SIZE  # CF_MAX_FAULT: positions past it are refused

CASE_MAGIC = _DEFINES["CF_CASE_MAGIC"]  # "CFC1"
RESULT_MAGIC = _DEFINES["CF_RESULT_MAGIC"]  # "CFR1"

class KindInfo(NamedTuple):
    """One row of CF_KINDS (harness/records.h): what a kind's record and contract have."""

    name: str
    user_copy: bool  # N = f(dst, src, n), the bytes not copied
    has_src: bool  # a source side of its own (memmove's source is dst - disp in dst's mapping)
    src_faults: bool  # can that side fault at all? The kernel's side of a one-way user copy cannot
    dst_faults: bool
    returns_dst: bool  # returns dst (no fixups, every fault unhandled), else N, the bytes not done
    args: tuple[str, ...]  # what it is called with
    signature: str  # its C signature


def _kind_info(row: list[str]) -> KindInfo:
    _, name, user_copy, has_src, src_faults, dst_faults, returns_dst, args, signature = row
    return KindInfo(name, user_copy == "1", has_src == "1", src_faults == "1", dst_faults == "1",
                    returns_dst == "1", tuple(args.split(", ")), signature)


KIND_INFO: dict[str, KindInfo] = {info.name: info for info in map(_kind_info, rows("records.h", "CF_KINDS", 9))}
# enum cf_kind / enum cf_profile, by value.
KINDS = tuple(KIND_INFO)
PROFILES = ("linux", "exact")
USER_COPIES = tuple(k for k, info in KIND_INFO.items() if info.user_copy)
HAS_SRC = tuple(k for k, info in KIND_INFO.items() if info.has_src)
RETURNS_DST = tuple(k for k, info in KIND_INFO.items() if info.returns_dst)
# The side of a one-way user copy that is the kernel's (it never faults).
KERNEL_SIDE = {k: side for k, info in KIND_INFO.items() if info.user_copy
               for side, faults in (("src", info.src_faults), ("dst", info.dst_faults)) if not faults}


def side_faults(kind: str, side: str) -> bool:
    """Can this side ("src" or "dst") of a case of this kind fault at all?"""
    info = KIND_INFO[kind]
    return info.src_faults if side == "src" else info.dst_faults


KIND_ARGS = {k: info.args for k, info in KIND_INFO.items()}
SIGNATURES = {k: info.signature for k, info in KIND_INFO.items()}


def memmove_max_disp(n: int) -> int:
    """cf_memmove_max_disp: the widest |dst - src| for a memmove of n bytes."""
    if n >= MAX_LEN:
        return 0
    return min(n + MEMMOVE_SLACK, MAX_LEN - n)


def memmove_top(n: int, disp: int) -> int:
    """cf_memmove_top: how far above dst a memmove's two buffers end."""
    return n - disp if disp < 0 else n


class ClassInfo(NamedTuple):
    name: str  # the name used in output
    bit: int
    c_name: str  # the enumerator in records.h
    about: str  # one line for people


# CF_CLASSES (harness/records.h), in report order.
CLASSES: tuple[ClassInfo, ...] = tuple(ClassInfo(name, int(bit), c_name, about)
                                       for c_name, bit, name, about in rows("records.h", "CF_CLASSES", 4))
NUM_CLASSES = len(CLASSES)
CLASS_BY_NAME = {c.name: c for c in CLASSES}
CLASS_NAMES = tuple(c.name for c in CLASSES)
# Former names, still taken wherever a class name is read (specs' headers, known files,
# --until, --bisect, expect=); output uses the current name.
CLASS_ALIASES = {"sum-left-enabled": "uaccess-left-enabled"}


def canonical_class(name: str) -> str:
    """The current name of a class given by any of its names (unknown names unchanged)."""
    return CLASS_ALIASES.get(name, name)

# aligned-overread cannot fault: a note under every profile
ERRORS_EXACT = ((1 << NUM_CLASSES) - 1) & ~(1 << CLASS_BY_NAME["aligned-overread"].bit)
ERRORS_LINUX = ERRORS_EXACT & ~(1 << CLASS_BY_NAME["imprecise"].bit)
ERROR_MASK = {"linux": ERRORS_LINUX, "exact": ERRORS_EXACT}
# The classes only the QEMU plugin's memory audit (--memcheck) sees (records.h says so).
MEMCHECK_CLASSES = ("load-out-of-bounds", "aligned-overread")


def class_names(mask: int) -> list[str]:
    """Names of the classes in a bit mask, in report order."""
    return [c.name for c in CLASSES if mask & (1 << c.bit)]


def class_mask(names: list[str] | tuple[str, ...]) -> int:
    mask = 0
    for name in names:
        mask |= 1 << CLASS_BY_NAME[canonical_class(name)].bit
    return mask


def class_of_bit(bit: int) -> str:
    for c in CLASSES:
        if c.bit == bit:
            return c.name
    return f"class-bit-{bit}"


# enum cf_result_type
RESULT_CASE = 0
RESULT_PROGRESS = 1
RESULT_DONE = 2
RESULT_ERROR = 3
RESULT_COUNT = 4
RESULT_TYPES = ("case", "progress", "done", "error", "count")

# enum cf_sweep_stop, by value: why a sweep ended (the DONE record's aux).
SWEEP_STOPS = ("all-run", "stop-mask", "max-hangs")

# enum cf_executor_option: the executor's option defaults and limits.
EXEC_TIMEOUT_MS_DEFAULT = 500
EXEC_TIMEOUT_MS_MAX = 600_000
EXEC_MAX_HANGS_DEFAULT = 16

# enum cf_case_error: (name, message), by value.
CASE_OK, CASE_BAD_MAGIC, CASE_BAD_KIND, CASE_BAD_PROFILE, CASE_TOO_LONG, CASE_BAD_OFFSET, \
    CASE_SRC_UNREACHABLE, CASE_DST_UNREACHABLE, CASE_KIND_MISMATCH, CASE_BAD_FILL, \
    CASE_BAD_DISP, CASE_KERNEL_SIDE_FAULT, CASE_BAD_GRANULE, CASE_NO_MTE = range(14)
CASE_ERRORS: tuple[tuple[str, str], ...] = (
    ("ok", "the case is well formed"),
    ("bad-magic", "the record is not a case record (bad magic)"),
    ("bad-kind", "unknown routine kind"),
    ("bad-profile", "unknown profile"),
    ("too-long", f"n is larger than the longest case ({MAX_LEN} bytes)"),
    ("bad-offset", f"a page offset is not below the page size ({PAGE_SIZE})"),
    ("src-unreachable",
     "no page boundary can put the src fault there (src_off + src_fault must be a multiple of 4096, "
     "of 16 with granule=16)"),
    ("dst-unreachable",
     "no page boundary can put the dst fault there (dst_off + dst_fault must be a multiple of 4096, "
     "of 16 with granule=16)"),
    ("kind-mismatch", "the case's kind differs from the executor's routine"),
    ("bad-fill", "only a memset case has a fill value"),
    ("bad-disp",
     f"only a memmove case has a displacement, |disp| <= n + {MEMMOVE_SLACK} and n + |disp| <= {MAX_LEN}, "
     f"and src no further than {MAX_FAULT} below the fault"),
    ("kernel-side-fault",
     "a fault on the kernel's side: copy_from_user's destination and copy_to_user's source never fault"),
    ("bad-granule", f"a case's granule is 0 (faults at pages) or {GRANULE_MTE} (at MTE tag granules)"),
    ("no-mte", "a granule case needs an executor run with --granule 16 (arm64, MTE)"),
)
# Said by an executor only (of what it can do), never by cf_case_check() or case_check().
EXECUTOR_CASE_ERRORS = frozenset({CASE_NO_MTE})


def case_error_message(code: int) -> str:
    if 0 <= code < len(CASE_ERRORS):
        name, message = CASE_ERRORS[code]
        return f"{message} ({name})"
    return f"unknown case error {code}"


def reg_names(mask: int, arch: str) -> list[str]:
    """The registers of a result's regs_bad (enum cf_reg_bit), by the architecture's names."""
    from . import targets  # on use: the fake executor (tests) imports this module at each start

    return [name for bit, name in enumerate(targets.get(arch).regs) if name and mask & (1 << bit)]


# ---- records ----
# (field name, struct code) in declaration order, read from the C X-macros that define
# the structs (cheader.py: harness/records.h, harness/cases.h). "<" = little-endian, no
# padding, which matches the C layout because the headers order fields to need none;
# tests/test_records.py checks names, offsets and sizes against what the C compiler made
# of them (tests/c/layout_dump.c).
CASE_LAYOUT = struct_layout("records.h", "CF_CASE_FIELDS")
RESULT_LAYOUT = struct_layout("records.h", "CF_RESULT_FIELDS")
CONTROL_MAGIC = _DEFINES["CF_CONTROL_MAGIC"]  # "CFK1"
CONTROL_VERSION = _DEFINES["CF_CONTROL_VERSION"]
CONTROL_LAYOUT = struct_layout("records.h", "CF_CONTROL_FIELDS")
CONTROL_COUNTS = int(dict(CONTROL_LAYOUT)["counts"][:-1])
# struct cf_sweep_cfg (harness/cases.h): not a record, but the tool hands it to
# libcfref.so (plan.py), so it is read and checked the same way.
SWEEP_CFG_LAYOUT = struct_layout("cases.h", "CF_SWEEP_CFG_FIELDS")
LAYOUTS = {"case": CASE_LAYOUT, "result": RESULT_LAYOUT, "control": CONTROL_LAYOUT,
           "sweep_cfg": SWEEP_CFG_LAYOUT}

CASE_FORMAT = "<" + "".join(code for _, code in CASE_LAYOUT)
RESULT_FORMAT = "<" + "".join(code for _, code in RESULT_LAYOUT)
CASE_STRUCT = struct.Struct(CASE_FORMAT)
RESULT_STRUCT = struct.Struct(RESULT_FORMAT)
CASE_SIZE = CASE_STRUCT.size
RESULT_SIZE = RESULT_STRUCT.size
# A record's fields in wire order, as one tuple (for pack).
_CASE_FIELDS = operator.attrgetter(*(name for name, _ in CASE_LAYOUT))
# The result's arrays (the fault trail): (name, count) in wire order, count None for a scalar.
_RESULT_SHAPE = tuple((name, int(code[:-1]) if len(code) > 1 else None) for name, code in RESULT_LAYOUT)
FAULT_TRAIL = dict(_RESULT_SHAPE)["trail_pc"] or 0  # CF_FAULT_TRAIL


def _result_values(r: "Result") -> list[int]:
    """The wire values of a Result, arrays flattened and padded with zeros."""
    out: list[int] = []
    for name, count in _RESULT_SHAPE:
        value = getattr(r, name)
        if count is None:
            out.append(value)
        else:
            if len(value) > count:
                raise ValueError(f"{name} holds {len(value)} values, the record {count}")
            out += [*value, *[0] * (count - len(value))]
    return out


def _result_fields(values: tuple[int, ...]) -> dict[str, Any]:
    """Wire values back into fields: an array is a tuple."""
    out: dict[str, Any] = {}
    i = 0
    for name, count in _RESULT_SHAPE:
        if count is None:
            out[name] = values[i]
            i += 1
        else:
            out[name] = tuple(values[i:i + count])
            i += count
    return out
CONTROL_SIZE = struct.calcsize("<" + "".join(code for _, code in CONTROL_LAYOUT))
assert CASE_SIZE == 64 and RESULT_SIZE == 256


def field_offsets(layout: tuple[tuple[str, str], ...]) -> dict[str, tuple[int, int]]:
    """name -> (offset, size) as struct computes them; compared with offsetof()."""
    out: dict[str, tuple[int, int]] = {}
    prefix = "<"
    for name, code in layout:
        offset = struct.calcsize(prefix)
        out[name] = (offset, struct.calcsize("<" + code))
        prefix += code
    return out


@dataclass(frozen=True)
class Case:
    kind: int
    profile: int
    id: int
    n: int
    src_off: int
    dst_off: int
    src_fault: int = NO_FAULT
    dst_fault: int = NO_FAULT
    fill: int = 0  # memset: the int argument (all 32 bits)
    disp: int = 0  # memmove: dst - src
    seal: int = 0  # only in the sweep's stream (records.h)
    magic: int = CASE_MAGIC
    granule: int = 0  # 0: faults at page boundaries; GRANULE_MTE: at tag granules

    _WIRE_ORDER = tuple(name for name, _ in CASE_LAYOUT)

    def pack(self) -> bytes:
        return CASE_STRUCT.pack(*_CASE_FIELDS(self))

    @classmethod
    def unpack(cls, data: bytes) -> "Case":
        return cls(**dict(zip(cls._WIRE_ORDER, CASE_STRUCT.unpack(data), strict=True)))


@dataclass(frozen=True)
class Result:
    type: int = RESULT_CASE
    signal: int = 0
    id: int = 0
    classes: int = 0
    errors: int = 0
    ret: int = 0
    accessible: int = 0
    claimed: int = 0
    diff_off: int = 0
    diff_count: int = 0
    diff_want: int = 0
    diff_got: int = 0
    regs_bad: int = 0
    reg_got: int = 0
    faults: int = 0
    aux: int = 0
    fault_pc: int = 0
    fault_addr: int = 0
    fixup_pc: int = 0
    dst: int = 0
    src: int = 0
    # The faults in order: the first FAULT_TRAIL - 1, then the last (records.h).
    trail_pc: tuple[int, ...] = ()
    trail_addr: tuple[int, ...] = ()
    trail_fixup: tuple[int, ...] = ()
    trail_len: int = 0
    returned_via: int = 0  # 1 + the trail index whose fixup led to the return; 0: none
    seal: int = 0
    magic: int = RESULT_MAGIC

    def pack(self) -> bytes:
        return RESULT_STRUCT.pack(*_result_values(self))

    @classmethod
    def unpack(cls, data: bytes) -> "Result":
        return cls(**_result_fields(RESULT_STRUCT.unpack(data)))

    @property
    def trail(self) -> list[tuple[int, int, int]]:
        """(pc, data address, fixup or 0) of each fault the record keeps, in order."""
        n = min(self.trail_len, len(self.trail_pc))
        return list(zip(self.trail_pc[:n], self.trail_addr[:n], self.trail_fixup[:n], strict=True))

    def fault_number(self, slot: int) -> int:
        """Which fault of the call (1-based) trail slot `slot` holds: the last slot follows
        the latest fault once there are more than the trail keeps."""
        return self.faults if slot == FAULT_TRAIL - 1 and self.faults > FAULT_TRAIL else slot + 1

    @property
    def returned_through(self) -> int | None:
        """The fault (1-based) whose fixup the call returned through; None: it took none,
        or did not return."""
        return self.fault_number(self.returned_via - 1) if self.returned_via else None

    @property
    def class_list(self) -> list[str]:
        return class_names(self.classes)

    @property
    def error_list(self) -> list[str]:
        return class_names(self.errors)


# Keep the dataclasses and the layouts in step (a cheap import-time check).
assert {f.name for f in fields(Case)} == {name for name, _ in CASE_LAYOUT}
assert {f.name for f in fields(Result)} == {name for name, _ in RESULT_LAYOUT}


# ---- case validity: the one Python copy of cf_case_check_for() (harness/cases.c) ----


def fault_unit(granule: int) -> int:
    """Where faults can begin: page boundaries, or every granule bytes (cf_fault_unit)."""
    return granule or PAGE_SIZE


def fault_reachable(off: int, fault: int, granule: int = 0) -> bool:
    """Can a side at page offset off have its first inaccessible byte at fault?"""
    return fault == NO_FAULT or fault == 0 or (off + fault) % fault_unit(granule) == 0


def case_check(case: Case, kind: int | None = None) -> int:
    """Why the executor would refuse the case (an enum cf_case_error value), or CASE_OK;
    with kind, also whether it fits a routine of that kind. The same rules in the same
    order as cf_case_check_for(); tests/test_case_check.py holds them to it."""
    if case.magic != CASE_MAGIC:
        return CASE_BAD_MAGIC
    if case.kind >= len(KINDS):
        return CASE_BAD_KIND
    if case.profile >= len(PROFILES):
        return CASE_BAD_PROFILE
    if case.granule not in GRANULES:
        return CASE_BAD_GRANULE
    if case.n > MAX_LEN:
        return CASE_TOO_LONG
    if case.src_off >= PAGE_SIZE or case.dst_off >= PAGE_SIZE:
        return CASE_BAD_OFFSET
    if KINDS[case.kind] in HAS_SRC and (
            not fault_reachable(case.src_off, case.src_fault, case.granule)
            or (case.src_fault != NO_FAULT and case.src_fault > MAX_FAULT)):
        return CASE_SRC_UNREACHABLE
    if (not fault_reachable(case.dst_off, case.dst_fault, case.granule)
            or (case.dst_fault != NO_FAULT and case.dst_fault > MAX_FAULT)):
        return CASE_DST_UNREACHABLE
    kernel = KERNEL_SIDE.get(KINDS[case.kind])  # a one-way user copy's side that never faults
    if kernel and getattr(case, f"{kernel}_fault") != NO_FAULT:
        return CASE_KERNEL_SIDE_FAULT
    if case.fill != 0 and KINDS[case.kind] != "memset":
        return CASE_BAD_FILL
    if case.disp != 0 and KINDS[case.kind] != "memmove":
        return CASE_BAD_DISP
    if KINDS[case.kind] == "memmove" and (
            abs(case.disp) > memmove_max_disp(case.n)
            or (case.dst_fault != NO_FAULT and case.disp > 0 and case.dst_fault + case.disp > MAX_FAULT)):
        return CASE_BAD_DISP
    if kind is not None and case.kind != kind:
        return CASE_KIND_MISMATCH
    return CASE_OK


# ---- the seal (cf_seal in records.h) ----

_M64 = (1 << 64) - 1
_SEAL_M1, _SEAL_M2 = 0x9E6C63D0676A9A99, 0xD8E5C0B2E25A3C6B
_WORDS = {size: struct.Struct(f"<{size // 8 - 1}Q") for size in (CASE_SIZE, RESULT_SIZE)}


def seal(key: tuple[int, int], seq: int, data: bytes) -> int:
    """The keyed checksum of a record's bytes but its last 8 (the seal field itself),
    at place seq of its stream. cf_seal_mix is written out in the loop: serve checks
    every result, and a call per word would double the cost."""
    words = _WORDS.get(len(data)) or struct.Struct(f"<{len(data) // 8 - 1}Q")
    k1, m = key[1], _M64
    h = key[0] ^ seq
    for w in (0, *(x ^ k1 for x in words.unpack_from(data))):
        h ^= w
        h ^= h >> 31
        h = (h * _SEAL_M1) & m
        h ^= h >> 29
        h = (h * _SEAL_M2) & m
        h ^= h >> 32
    return h


def sealed(key: tuple[int, int], seq: int, data: bytes) -> bool:
    return int.from_bytes(data[-8:], "little") == seal(key, seq, data)


# ---- ctypes views of the layouts (libcfref.so, shared memory, tests) ----

_CTYPES = {"B": ctypes.c_uint8, "H": ctypes.c_uint16, "I": ctypes.c_uint32, "i": ctypes.c_int32,
           "Q": ctypes.c_uint64, "q": ctypes.c_int64}


def ctypes_struct(name: str, layout: tuple[tuple[str, str], ...]) -> type[ctypes.Structure]:
    """A ctypes.Structure with the layout's fields (an array for a counted code, "16Q")."""
    fields_: list[tuple[str, object]] = []
    for field_name, code in layout:
        count, base = (int(code[:-1]), code[-1]) if len(code) > 1 else (1, code)
        ctype = _CTYPES[base]
        fields_.append((field_name, ctype * count if len(code) > 1 else ctype))
    return type(name, (ctypes.Structure,), {"_fields_": fields_})


CaseStruct = ctypes_struct("CaseStruct", CASE_LAYOUT)
ResultStruct = ctypes_struct("ResultStruct", RESULT_LAYOUT)
ControlStruct = ctypes_struct("ControlStruct", CONTROL_LAYOUT)
SweepCfgStruct = ctypes_struct("SweepCfgStruct", SWEEP_CFG_LAYOUT)
assert ctypes.sizeof(CaseStruct) == CASE_SIZE and ctypes.sizeof(ResultStruct) == RESULT_SIZE
assert ctypes.sizeof(ControlStruct) == CONTROL_SIZE
