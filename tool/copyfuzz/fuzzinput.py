"""The fuzz driver's input bytes <-> case specs. decode() is the driver's own decoder
(fuzz/input.c, whose header input.h has the layout), called through libcfref.so: an
engine's input replays as the case the driver ran. encode() is its inverse, for seeding
corpora; the tests hold the two to each other.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import struct
from pathlib import Path
from typing import Any

from . import corpus, files, plan, records, regressions
from .errors import CopyfuzzError
from .spec import Spec, from_case

PAGE = records.PAGE_SIZE
DEFAULT_MAX_LEN = 65536


def _units(n: int, off: int, unit: int) -> int:
    return max(1, (off % unit + n + unit - 1) // unit)


def decode(root: Path, data: bytes, kind: str, max_len: int = DEFAULT_MAX_LEN, routine: str = "",
           granule: int = 0) -> Spec:
    """The case the driver runs for these bytes (COPYFUZZ_KIND=kind, COPYFUZZ_MAX_LEN=max_len,
    COPYFUZZ_GRANULE=granule)."""
    if kind not in records.KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    case = _cfref(root).decode_input(data, records.KINDS.index(kind), max_len, granule)
    return from_case(routine, case)


@functools.cache
def _cfref(root: Path) -> plan.CfRef:
    """libcfref.so, built or checked by make once per process, not once per input."""
    return plan.load(root)


def _encode_side(fault: int | None, n: int, off: int, memcpy_kind: bool, unit: int) -> tuple[int, int]:
    """(mode, k) giving this fault, or ValueError if the layout cannot express it."""
    if fault is None:
        return 0, 0
    units, off = _units(n, off, unit), off % unit
    if memcpy_kind:
        if fault == units * unit - off:
            return 3, 0
        raise ValueError(f"a memcpy fault can only be at {units * unit - off}, not {fault}")
    if fault == 0:
        return 2, 0
    if (fault + off) % unit == 0 and 1 <= (fault + off) // unit <= min(units + 1, 256):
        return 3, (fault + off) // unit - 1
    raise ValueError(f"a fault at {fault} with offset {off} is not in the input layout's range")


def encode(spec: Spec) -> bytes:
    """Bytes that decode to this case (for seeding a corpus); ValueError if none do
    (n above 65535, or a fault further than one page past the end)."""
    if spec.n > 0xFFFF:
        raise ValueError(f"n={spec.n} is above what an input can ask for (65535)")
    if not 0 <= spec.src_off < PAGE or not 0 <= spec.dst_off < PAGE:
        raise ValueError("offsets must be page offsets")
    kernel = records.KERNEL_SIDE.get(spec.kind)
    if kernel and getattr(spec, f"{kernel}_fault") is not None:
        raise ValueError(f"a {spec.kind} case never faults on its {kernel} (the kernel's)")
    mc = spec.kind in records.RETURNS_DST
    unit = records.fault_unit(spec.granule)
    if spec.kind not in records.HAS_SRC:
        src_mode, src_k, src_off = 0, 0, 0
    else:
        src_off = spec.src_off
        src_mode, src_k = _encode_side(spec.src_fault, spec.n, src_off, mc, unit)
    top = records.memmove_top(spec.n, spec.disp)
    dst_mode, dst_k = _encode_side(spec.dst_fault, top, spec.dst_off, mc, unit)
    v = spec.fill
    if spec.kind == "memmove":
        most = records.memmove_max_disp(spec.n)
        if abs(spec.disp) > most:
            raise ValueError(f"disp={spec.disp} is out of range for n={spec.n}")
        v = spec.disp + most
    return bytes([
        src_mode | dst_mode << 2,
        16,
        spec.n & 0xFF, spec.n >> 8,
        src_off & 0xFF, src_off >> 8,
        spec.dst_off & 0xFF, spec.dst_off >> 8,
        src_k, dst_k,
        *v.to_bytes(4, "little"),
        *([1] if spec.granule else []),  # page cases keep their 14 bytes (corpus names)
    ])


# ---- files holding cases: spec files (regressions.py's) or raw engine inputs ----


# AFL++'s bookkeeping in an output dir (and copyfuzz's beside it): never engine inputs.
# Its inputs are queue/, crashes/ and hangs/ entries named id:...
AFL_HANDLED = "afl-handled"  # copyfuzz's digests of AFL++ crashes already triaged (engines/afl.py)
AFL_FILES = frozenset({"fuzzer_stats", "fuzzer_setup", "plot_data", "cmdline", "fuzz_bitmap", "target_hash",
                       "is_main_node", "fastresume.bin", "README.txt", AFL_HANDLED})
AFL_INPUT_DIRS = ("queue", "crashes", "hangs")


def _afl_bookkeeping(path: Path) -> bool:
    if path.name in AFL_FILES or path.suffix == ".lock":
        return True
    instance = path.parent.parent  # an AFL++ instance's queue/, crashes/, hangs/ hold id:... entries only
    return (path.parent.name in AFL_INPUT_DIRS and not path.name.startswith("id:")
            and any((instance / name).is_file() for name in ("fuzzer_stats", "fuzzer_setup", "cmdline")))


def case_files(directory: Path) -> list[Path]:
    """The files under directory that may hold cases (replay DIR, cov --corpus DIR), in name
    order: not hidden ones (.logs/, .cur_input, .synced/), logs and temporaries, nor AFL++'s
    bookkeeping (fuzzer_stats, crashes/README.txt, ...), which would decode as raw cases."""
    return sorted(p for p in directory.rglob("*") if p.is_file()
                  and not any(part.startswith(".") for part in p.relative_to(directory).parts)
                  and p.suffix not in (".log", ".tmp") and not _afl_bookkeeping(p))


_HYPOTHESIS_CASE = re.compile(r"Falsifying example:.*?\bCase\((?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\)", re.S)


# The wire's bookkeeping, not the case's: a replayed case gets its own.
_WIRE_ONLY = ("id", "seal", "magic")


def hypothesis_case(data: bytes) -> records.Case | None:
    """The case of a Hypothesis failure as Hypothesis prints it (`Falsifying example:
    test(case=Case(kind=0, ..., n=5, ...))`, e.g. pytest's output saved to a file): every
    field printed (records.Case's), None if there is no such example. A field that is not
    Case's, a value that is not an integer, or a case the executor would refuse is a
    CopyfuzzError: replaying another case than the one that failed would be a wrong verdict."""
    m = _HYPOTHESIS_CASE.search(data.decode("utf-8", "replace"))
    if not m:
        return None
    known = {f.name for f in dataclasses.fields(records.Case)}
    fields: dict[str, int] = {}
    for key, value in re.findall(r"\b(\w+)\s*=\s*([^,\s()]+)", m.group("body")):
        if key not in known:
            raise CopyfuzzError(f"Hypothesis's Case({key}={value}): Case has no field {key!r}")
        try:
            fields[key] = int(value, 0)
        except ValueError:
            raise CopyfuzzError(f"Hypothesis's Case({key}={value}): not an integer") from None
    need = ("kind", "n", "src_off", "dst_off")
    if not all(k in fields for k in need):
        return None
    case = records.Case(**{"profile": 0, **{k: v for k, v in fields.items() if k not in _WIRE_ONLY}, "id": 1})
    try:
        case.pack()
    except struct.error:
        raise CopyfuzzError(f"Hypothesis's {case}: a field is out of range") from None
    error = records.case_check(case)
    if error != records.CASE_OK:
        raise CopyfuzzError(f"Hypothesis's {case}: {records.case_error_message(error)}")
    return case


def read_case_file(path: Path) -> tuple[str, Any]:
    """('spec', [(routine|None, fields), ...]), ('hypothesis', Case) or ('raw', bytes).
    A .spec, .finding or .failure file must be whole (regressions.DamagedFile otherwise).
    An engine's input (corpus.engine_named) is raw whatever its bytes read as."""
    return case_of(path, files.read_input_bytes(path, regressions.CASE_FILE_LIMIT))


def case_of(path: Path, data: bytes) -> tuple[str, Any]:
    """read_case_file of a file's bytes already read."""
    if path.suffix in regressions.SPEC_SUFFIXES:
        return "spec", regressions.specs_of(path, data)
    if corpus.engine_named(path.name, data):
        return "raw", data
    try:
        lines = regressions.spec_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        lines = None
    if lines is not None:
        return "spec", lines
    try:
        case = hypothesis_case(data)
    except CopyfuzzError as e:
        raise CopyfuzzError(f"{path}: {e}") from None
    if case is not None:
        return "hypothesis", case
    return "raw", data
