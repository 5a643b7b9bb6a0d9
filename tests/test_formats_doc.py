"""docs/formats.md's record tables say what records.h says: every field, offset and type.

records.py is held to the X-macros in records.h (test_records.py); this holds the
documentation to records.py, so a field added or moved shows up in all three or fails.
"""

from __future__ import annotations

import re

import pytest
from conftest import ROOT
from copyfuzz import records

TYPES = {"u8": "B", "u16": "H", "u32": "I", "u64": "Q", "i32": "i", "i64": "q"}
SECTIONS = {"case": "## Case record", "result": "## Result record", "control": "## Control block"}


def table(heading: str) -> list[tuple[int, str, str]]:
    """(offset, field, struct code) rows of the first table after the heading."""
    text = (ROOT / "docs" / "formats.md").read_text()
    start = text.index(heading)
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        m = re.match(r"\| (\d+) \| (\w+) \| (\w+)(?:×(\d+))? \|", line)
        if m:
            count = f"{m.group(4)}" if m.group(4) else ""
            rows.append((int(m.group(1)), m.group(2), count + TYPES[m.group(3)]))
        elif rows:
            break
    return rows


@pytest.mark.parametrize("name", list(SECTIONS))
def test_table_matches_the_layout(name: str) -> None:
    layout = records.LAYOUTS[name]
    offsets = records.field_offsets(layout)
    assert table(SECTIONS[name]) == [(offsets[field][0], field, code) for field, code in layout]
