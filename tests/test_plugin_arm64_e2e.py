"""End to end on arm64: the QEMU plugin under qemu-aarch64 behind --memcheck, bench, repro
and fuzz (tests/test_plugin_e2e.py has the RISC-V ones).

The sweeps pass --no-audit: tests/test_arm64_e2e.py has the arm64 audit.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, fuzz_args, run_cli
from copyfuzz import paths, records

pytestmark = pytest.mark.e2e

OVERREAD = "arm64/mutants/overread-in-page"


def test_memcheck_catches_the_arm64_in_page_overread_guard_pages_miss(tmp_path: Path) -> None:
    proc = run_cli("sweep", OVERREAD, "--max-len", "16", "--no-audit", "--json", "--findings", str(tmp_path))
    report = json.loads(proc.stdout)["routines"][0]  # needs=memcheck: under the plugin on its own
    assert report["memcheck"] and report["caught"], report
    assert "load-out-of-bounds" in report["findings"]
    # Without the plugin the guard pages see nothing: only PROGRESS and DONE records.
    out = subprocess.run(["qemu-aarch64", str(paths.executor(ROOT, OVERREAD, 64)), "sweep", "--max-len", "16",
                          "--profile", "exact"], check=True, capture_output=True).stdout
    types = {int.from_bytes(out[off + 4:off + 6], "little") for off in range(0, len(out), records.RESULT_SIZE)}
    assert types == {1, 2}, "a class seen without the plugin"


def test_memcheck_on_clean_arm64_routines_has_only_notes(tmp_path: Path) -> None:
    proc = run_cli("sweep", "arm64/memcpy", "arm64/copy_from_user", "arm64/copy_to_user", "arm64/clear_user",
                   "--memcheck", "--max-len", "20", "--no-audit", "--json", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    routines = json.loads(proc.stdout)["routines"]
    assert len(routines) == 4
    for r in routines:
        assert r["memcheck"] and r["findings"] == {}, r
        assert set(r["notes"]) <= {"aligned-overread"}, r


def test_bench_counts_arm64_accesses_as_the_template_makes_them() -> None:
    """8 KiB through the copy template: 64-byte blocks of ldp/stp (two 8-byte accesses
    each, as QEMU reports a pair), never a misaligned access. Exact counts, so a decoder
    that dropped a load or store class, or a wrong QEMU, shows here."""
    proc = run_cli("bench", "arm64/memcpy", "--vs", "riscv/memcpy", "--sizes", "8192", "--no-small", "--no-mix",
                   "--reps", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert "fewer instructions aligned" in rep["summary"]
    rows = rep["routines"]["arm64/memcpy"]["rows"]
    assert len(rows) == 16
    for r in rows:
        assert r["misaligned"] == 0 and r["vinsns"] == 0 and r["bytes_stored"] == 8192, r
        if r["group"] == "from":  # dst aligned: the shifting path loads one word ahead
            k = r["src_off"]
            assert (r["loads"], r["stores"]) == ((1024, 1024) if k == 0 else (1025, 1024)), r
            assert r["bytes_loaded"] == 8192 + (8 if k else 0), r
        else:  # 8-k head bytes, then 127 shifted blocks, 7 words and a tail of k bytes
            k = r["dst_off"]
            assert (r["loads"], r["stores"]) == ((1024, 1024) if k == 0 else (1032, 1031)), r
        assert 0 < r["insns"] < 8192, r


def test_repro_memcheck_on_arm64_specs() -> None:
    bad = run_cli("repro", f"{OVERREAD}:n=1,src_off=1,dst_off=0")  # needs=memcheck: on by itself
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "8-byte access at src+0 by __arch_copy_from_user+" in bad.stdout
    assert "load-out-of-bounds" in bad.stdout
    good = run_cli("repro", "arm64/copy_from_user:n=16,src_off=0,dst_off=0", "--memcheck")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "2 loads, 2 stores, 0 misaligned (QEMU plugin)" in good.stdout


def test_a_regression_of_an_audit_class_is_repro_d_under_the_audit_as_replay_runs_it(tmp_path: Path) -> None:
    """A file routine has no needs= line: its saved class says the memory audit found it."""
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "x.spec").write_text(
        f"# class: load-out-of-bounds\narch/{OVERREAD}.S:__arch_copy_from_user:n=1,src_off=1,dst_off=0\n")
    replayed = run_cli("replay", str(tmp_path / "r"))
    assert replayed.returncode == 1 and "load-out-of-bounds" in replayed.stdout, replayed.stdout + replayed.stderr
    repro = run_cli("repro", str(tmp_path / "r" / "x.spec"))
    assert repro.returncode == 1 and "load-out-of-bounds" in repro.stdout, repro.stdout + repro.stderr
    assert "comes from the memory audit: --memcheck on" in repro.stderr


def test_libfuzzer_finds_the_arm64_overread_through_the_plugin(tmp_path: Path) -> None:
    """The driver runs the executor under the routine's QEMU (qemu-aarch64) with the
    plugin: only the plugin sees this mutant."""
    proc = run_cli(*fuzz_args(tmp_path, OVERREAD, "libfuzzer", 30, "--until", "load-out-of-bounds", "--seed", "1",
                              "--json"))
    assert proc.returncode == 1, proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert rep["until_met"] and set(rep["findings"]) == {"load-out-of-bounds"}, rep["findings"]
