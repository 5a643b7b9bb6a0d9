"""Facts the tool reads from the harness's C headers, so that no layout is spelled twice:
the fields of an X-macro layout (`#define CF_..._FIELDS(X)`, one `X(type, name, dims,
"meaning")` a field; harness/records.h, cases.h, plugin_abi.h) and the numbers of their
`#define`s. records.py builds struct formats from them, plugin.py ctypes structures; the
tests compare both with what the C compiler made of the headers.
"""

from __future__ import annotations

import ctypes
import functools
import re
from pathlib import Path
from typing import Any

from . import xmacro
from .errors import CopyfuzzError

HARNESS = Path(__file__).resolve().parents[2] / "harness"
_STRUCT_CODES = {"uint8_t": "B", "uint16_t": "H", "uint32_t": "I", "uint64_t": "Q", "int32_t": "i", "int64_t": "q"}
_CTYPES = {"uint8_t": ctypes.c_uint8, "uint16_t": ctypes.c_uint16, "uint32_t": ctypes.c_uint32,
           "uint64_t": ctypes.c_uint64, "int32_t": ctypes.c_int32, "int64_t": ctypes.c_int64}
_X_FIELD = re.compile(r'X\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(?:\[\s*(\w+)\s*\])?\s*,\s*"(?:[^"\\]|\\.)*"\s*\)')


@functools.cache
def _text(header: str) -> str:
    path = HARNESS / header
    try:
        return path.read_text()
    except OSError as e:
        raise CopyfuzzError(f"{path}: {e.strerror}: the tool reads its record layouts there") from e


@functools.cache
def defines(header: str) -> dict[str, int]:
    """Every `#define NAME NUMBER` of the header (decimal or hex, an unsigned suffix allowed)."""
    return {name: int(value, 0) for name, value in
            re.findall(r"^#define (\w+) (0x[0-9a-fA-F]+|\d+)u?\b", _text(header), re.M)}


def _body(header: str, macro: str) -> str:
    """The body of `#define MACRO(X)`, its lines spliced as the preprocessor does."""
    m = re.search(rf"^#define {macro}\(X\)((?:.*\\\n)*.*)$", _text(header), re.M)
    if m is None:
        raise CopyfuzzError(f"{HARNESS / header}: no #define {macro}(X)")
    return m.group(1).replace("\\\n", " ")


def rows(header: str, macro: str, arity: int) -> list[list[str]]:
    """The X(...) entries of a list macro such as CF_CLASSES: each argument's text (an
    identifier, a number, or adjacent string literals joined), read by xmacro.calls."""
    return [[a.value for a in args] for _, args in xmacro.calls(_body(header, macro), {"X": arity},
                                                               f"{HARNESS / header}: {macro}")]


def fields(header: str, macro: str) -> list[tuple[str, str, int | None]]:
    """(C type, name, array bound or None) of each field of `#define MACRO(X)`; a bound is
    a number or a #define of the same header."""
    where = HARNESS / header
    body = _body(header, macro)
    out: list[tuple[str, str, int | None]] = []
    found = _X_FIELD.findall(body)
    if len(found) != len(re.findall(r"\bX\(", body)):  # a field the pattern misread is an error, never left out
        raise CopyfuzzError(f"{where}: {macro}: cannot read every X(type, name, dims, \"meaning\") in it")
    for ctype, name, bound in found:
        if not bound:
            count = None
        elif bound.isdigit():
            count = int(bound)
        elif bound in defines(header):
            count = defines(header)[bound]
        else:
            raise CopyfuzzError(f"{where}: {macro}: field {name}'s bound {bound} is no #define of a number there")
        out.append((ctype, name, count))
    if not out:
        raise CopyfuzzError(f"{where}: {macro} has no fields")
    return out


def struct_layout(header: str, macro: str) -> tuple[tuple[str, str], ...]:
    """The layout as (name, struct code) pairs, "16Q" for an array of 16 uint64_t."""
    out = []
    for ctype, name, count in fields(header, macro):
        if ctype not in _STRUCT_CODES:
            raise CopyfuzzError(f"{HARNESS / header}: {macro}: field {name} has type {ctype}, "
                                "which the tool cannot read")
        out.append((name, f"{'' if count is None else count}{_STRUCT_CODES[ctype]}"))
    return tuple(out)


def ctypes_fields(header: str, macro: str, types: dict[str, Any] | None = None) -> list[tuple[str, Any]]:
    """The layout as a ctypes Structure's _fields_; `types` gives the ctypes class of each
    structure type (its typedef name) the fields use."""
    known = {**_CTYPES, **(types or {})}
    out: list[tuple[str, Any]] = []
    for ctype, name, count in fields(header, macro):
        if ctype not in known:
            raise CopyfuzzError(f"{HARNESS / header}: {macro}: field {name} has type {ctype}, "
                                "which the tool cannot read")
        out.append((name, known[ctype] if count is None else known[ctype] * count))
    return out
