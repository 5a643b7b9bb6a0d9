"""The prober's lines (docs/formats.md, "Prober cases and lines"), read back.

Every line the prober prints is `CF <type> key=value ... #<crc32>`, the checksum over
everything before ` #` in lowercase hex. On a VM's console kernel messages can come
before it or cut into it: a line is taken from its `CF ` on, and one whose checksum does
not match is not the prober's (counted, never trusted).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

PREFIX = "CF "


@dataclass(frozen=True)
class Line:
    type: str
    fields: dict[str, str]
    words: tuple[str, ...]  # the words that are not key=value, in order

    def get(self, key: str, default: str = "") -> str:
        return self.fields.get(key, default)

    def int(self, key: str, default: int = 0) -> int:
        try:
            return int(self.fields[key], 0)
        except (KeyError, ValueError):
            return default


def parse(text: str) -> Line | None:
    """A prober line, or None for anything else (kernel messages, damaged lines)."""
    start = text.rfind(PREFIX)
    if start < 0:
        return None
    body, sep, crc = text[start:].rstrip().rpartition(" #")
    if not sep or len(crc) != 8:
        return None
    try:
        if zlib.crc32(body.encode()) != int(crc, 16):
            return None
    except ValueError:
        return None
    words = body.split()
    if len(words) < 2:
        return None
    fields: dict[str, str] = {}
    plain = []
    for w in words[2:]:
        k, eq, v = w.partition("=")
        if eq and k:
            fields[k] = v
        else:
            plain.append(w)
    return Line(words[1], fields, tuple(plain))


def damaged(text: str) -> bool:
    """A line that looks like the prober's but does not check out."""
    return PREFIX in text and parse(text) is None
