"""The fuzz driver's input bytes <-> case specs: a Python mirror of decode() in
fuzz/driver.c (tests compare the two on random inputs through COPYFUZZ_PRINT_CASE).

Layout (every byte string decodes to a valid case; missing bytes are 0):
  [0]    bits 0-1: src side, bits 2-3: dst side: 0/1 no fault, 2 the buffer's own
         page is gone (fault at 0), 3 a fault after k whole pages
  [1]    n's width in bits (mod 17); [2..3] n's bits (little-endian); n <= max_len
  [4..5] src page offset (mod 4096), [6..7] dst page offset
  [8]    src k, [9] dst k: the fault is at k*4096 - offset, k in 1..pages+1
  [10..13] v (little-endian): memset's fill (all 32 bits); memmove's displacement
         dst - src = v mod (2*max+1) - max, max = records.memmove_max_disp(n)
  [14]   bit 0, when the campaign allows granules (COPYFUZZ_GRANULE=16): a granule case,
         its fault units 16-byte MTE tag granules (k granules, the offset's place in
         its granule) instead of pages
memcpy, memset and memmove routines only get faults at or past the end (memmove: past
both buffers); clear, memset and memmove have no source side of their own;
copy_from_user's destination and copy_to_user's source (the kernel's) never fault.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from . import files, records, regressions
from .spec import Spec

PAGE = records.PAGE_SIZE
DEFAULT_MAX_LEN = 65536


def _byte(data: bytes, i: int) -> int:
    return data[i] if i < len(data) else 0


def _units(n: int, off: int, unit: int) -> int:
    return max(1, (off % unit + n + unit - 1) // unit)


def _side(mode: int, k: int, n: int, off: int, memcpy_kind: bool, unit: int) -> int | None:
    units, off = _units(n, off, unit), off % unit
    if memcpy_kind:
        return units * unit - off if mode >= 2 else None
    if mode < 2:
        return None
    if mode == 2:
        return 0
    return (1 + k % (units + 1)) * unit - off


def decode(data: bytes, kind: str, max_len: int = DEFAULT_MAX_LEN, routine: str = "", granule: int = 0) -> Spec:
    """The case the driver runs for these bytes (COPYFUZZ_KIND=kind, COPYFUZZ_MAX_LEN=max_len,
    COPYFUZZ_GRANULE=granule)."""
    if kind not in records.KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    max_len = min(max_len, records.MAX_LEN)
    sides = _byte(data, 0)
    bits = _byte(data, 1) % 17
    raw = _byte(data, 2) | _byte(data, 3) << 8
    n = (raw & ((1 << bits) - 1) if bits else 0) % (max_len + 1)
    src_off = (_byte(data, 4) | _byte(data, 5) << 8) % PAGE
    dst_off = (_byte(data, 6) | _byte(data, 7) << 8) % PAGE
    v = int.from_bytes(bytes(_byte(data, i) for i in range(10, 14)), "little")
    fill = v if kind == "memset" else 0
    disp = 0
    if kind == "memmove":
        most = records.memmove_max_disp(n)
        disp = v % (2 * most + 1) - most
    mc = kind in records.RETURNS_DST
    case_granule = granule if granule and _byte(data, 14) & 1 else 0
    unit = records.fault_unit(case_granule)
    src_fault = _side(sides & 3, _byte(data, 8), n, src_off, mc, unit)
    dst_fault = _side((sides >> 2) & 3, _byte(data, 9), records.memmove_top(n, disp), dst_off, mc, unit)
    if kind not in records.HAS_SRC:
        src_off = 0
    if not records.side_faults(kind, "src"):  # no source, or the kernel's
        src_fault = None
    if not records.side_faults(kind, "dst"):
        dst_fault = None
    return Spec(routine, kind, n, src_off, src_fault, dst_off, dst_fault, fill, disp, case_granule)


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


# ---- files holding cases: spec files (regressions, .finding) or raw engine inputs ----

SPEC_SUFFIXES = (".spec", ".finding")


_HYPOTHESIS_CASE = re.compile(r"Falsifying example:.*?\bCase\((?P<body>[^()]*(?:\([^()]*\)[^()]*)*)\)", re.S)


def hypothesis_case(data: bytes) -> records.Case | None:
    """The case of a Hypothesis failure as Hypothesis prints it (`Falsifying example:
    test(case=Case(kind=0, ..., n=5, ...))`, e.g. pytest's output saved to a file)."""
    m = _HYPOTHESIS_CASE.search(data.decode("utf-8", "replace"))
    if not m:
        return None
    fields = {k: int(v) for k, v in re.findall(r"\b(\w+)=(\d+)", m.group("body"))}
    need = ("kind", "n", "src_off", "dst_off")
    if not all(k in fields for k in need):
        return None
    return records.Case(kind=fields["kind"], profile=fields.get("profile", 0), id=1, n=fields["n"],
                        src_off=fields["src_off"], dst_off=fields["dst_off"],
                        src_fault=fields.get("src_fault", records.NO_FAULT),
                        dst_fault=fields.get("dst_fault", records.NO_FAULT))


def read_case_file(path: Path) -> tuple[str, Any]:
    """('spec', [(routine|None, fields), ...]), ('hypothesis', Case) or ('raw', bytes).
    A .spec or .finding file must be whole (regressions.DamagedFile otherwise)."""
    if path.suffix in SPEC_SUFFIXES:
        return "spec", regressions.read_specs(path)
    data = files.read_bytes(path)
    try:
        lines = regressions.spec_lines(data.decode("utf-8"))
    except UnicodeDecodeError:
        lines = None
    if lines is not None:
        return "spec", lines
    case = hypothesis_case(data)
    if case is not None:
        return "hypothesis", case
    return "raw", data
