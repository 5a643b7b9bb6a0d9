"""bench/guest_work.py: the guest's translation blocks per case, counted from QEMU's
execution log (docs/perf.md), the same on every run of a build but for its VARIES."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from conftest import ROOT

pytestmark = pytest.mark.e2e


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "bench" / "guest_work.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_blocks_are_counted_per_case_and_per_start_the_same_twice() -> None:
    rows: list[dict[str, Any]] = []
    for _ in range(2):
        proc = _bench("--inputs", "6", "--json")
        assert proc.returncode == 0, proc.stderr[-2000:]
        (row,) = json.loads(proc.stdout)
        rows.append(row)
    first, again = rows

    def steady(row: dict[str, Any]) -> dict[str, Any]:
        """row but for its VARIES (the serve loop's looks at the channel, fd digits)."""
        return {k: ({f: n for f, n in v.items() if f not in row["varies"]} if k.endswith("_blocks") else v)
                for k, v in row.items()}

    assert steady(first) == steady(again) and first["varies"] == ["main", "cf_parse_u64"]
    assert first["cases"] == 6 and first["starts"] == 1
    case, start = first["case_blocks"], first["start_blocks"]
    # every case enters run_case, calls the routine, and copies its windows out
    assert case["run_case"] >= 6 and case["__asm_copy_from_user"] >= 6 and case["memcpy"] > 0
    assert "main" in start and "setup" in start and "run_case" not in start


@pytest.mark.parametrize("args, message", [(("--inputs", "0"), "--inputs must be 1..100000"),
                                           (("--routine", "nope"), "unknown routine 'nope'")])
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    proc = _bench(*args)
    assert proc.returncode == 2 and message in proc.stderr.splitlines()[-1]
    assert "Traceback" not in proc.stderr
