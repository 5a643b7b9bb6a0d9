"""End to end: the QEMU plugin behind --memcheck, bench and cov.

Needs qemu-riscv64 with plugin support (Debian's 7.2): a missing tool FAILS.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli
from copyfuzz import build, fuzzinput, paths, plugin, records, routines
from copyfuzz.session import Need, Session
from copyfuzz.spec import format_spec, parse_fields

pytestmark = pytest.mark.e2e


def test_plugin_abi_mirror_matches_the_header(tmp_path: Path) -> None:
    exe = tmp_path / "dump"
    subprocess.run(["cc", "-o", str(exe), str(ROOT / "tests/c/plugin_abi_dump.c")], check=True)
    c = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                          text=True).stdout.splitlines())
    py = {f: getattr(plugin.Shm, f).offset for f in ("plugin_ready", "code_lo", "fixup_hi", "stack_hi",
                                                      "now", "edges", "cases", "insn_count", "extable_hits",
                                                      "insn_flow", "data_lo", "data_hi")}
    py["now.viol"] = plugin.Shm.now.offset + plugin.CaseCounters.viol.offset
    py["now.store_oob"] = plugin.Shm.now.offset + plugin.CaseCounters.store_oob.offset
    py["now.overread"] = plugin.Shm.now.offset + plugin.CaseCounters.overread.offset
    py["now.edges_hit"] = plugin.Shm.now.offset + plugin.CaseCounters.edges_hit.offset
    py["size"] = ctypes.sizeof(plugin.Shm)
    py["snapshot.slot"] = plugin.Snapshot.slot.offset
    py["snapshot.entry"] = plugin.Snapshot.entry.offset
    py["snapshot.size"] = ctypes.sizeof(plugin.Snapshot)
    py["version"] = plugin.VERSION
    py["snapshot.magic"] = plugin.SNAPSHOT_MAGIC
    assert {k: int(v) for k, v in c.items()} == py


def test_the_edge_map_holds_the_last_case_only() -> None:
    """The plugin clears the edges of a case when the next one starts (the executor no
    longer zeroes the map under QEMU): after a long faulting copy then an empty one, the
    map is the empty one's, as in an executor that ran nothing before it."""
    r = routines.find(routines.discover(ROOT), "riscv/copy_user")
    build.build_routines(ROOT, [r])
    long = records.Case(kind=0, profile=0, id=1, n=3000, src_off=3, dst_off=5, src_fault=4093)
    empty = records.Case(kind=0, profile=0, id=2, n=0, src_off=0, dst_off=0)

    def edges(cases: list[records.Case]) -> list[bytes]:
        seen = []
        with Session(ROOT, r, Need.COVERAGE) as s:
            assert s.plugin is not None
            for case in cases:
                s.accepted(s.run(case))
                seen.append(bytes(s.plugin.shm.edges))
        return seen

    after_long, after_both = edges([long, empty])
    (alone,) = edges([empty])
    assert after_both == alone and any(alone)
    assert sum(map(bool, after_long)) > sum(map(bool, alone))


def test_memcheck_catches_the_in_page_overread_guard_pages_miss(tmp_path: Path) -> None:
    plain = run_cli("sweep", "riscv/mutants/overread-in-page", "--max-len", "40", "--json",
                    "--findings", str(tmp_path / "a"))
    # needs=memcheck: a mutant sweep runs it under the plugin on its own
    report = json.loads(plain.stdout)["routines"][0]
    assert report["memcheck"] and report["caught"], report
    assert "load-out-of-bounds" in report["findings"]
    # ...and without the plugin, the guard pages see nothing: the data copied is right.
    elf = paths.executor(ROOT, "riscv/mutants/overread-in-page", 64)
    out = subprocess.run(["qemu-riscv64", str(elf), "sweep", "--max-len", "40", "--profile", "exact"],
                         check=True, capture_output=True).stdout
    types = []
    for off in range(0, len(out), records.RESULT_SIZE):  # no finding, no case records: all are results
        assert int.from_bytes(out[off:off + 4], "little") == 0x31524643, "a finding's case record"
        types.append(int.from_bytes(out[off + 4:off + 6], "little"))
    assert types[-1] == 2 and set(types) == {1, 2}, "only PROGRESS and DONE: no class seen at all"


def test_memcheck_on_clean_routines_has_only_notes(tmp_path: Path) -> None:
    proc = run_cli("sweep", "--memcheck", "--max-len", "24", "--json", "--findings", str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
    for r in json.loads(proc.stdout)["routines"]:
        assert r["memcheck"] and r["findings"] == {}, r
        assert set(r["notes"]) <= {"aligned-overread"}, r


def _bench(*args: str) -> dict[str, Any]:
    proc = run_cli("bench", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


def test_bench_counts_are_deterministic_and_meet_the_targets() -> None:
    args = ("riscv/copy_user", "--sizes", "8192", "--no-small", "--no-mix", "--reps", "5")
    one, two = _bench(*args), _bench(*args)
    keys = ("insns", "loads", "stores", "misaligned", "taken", "bytes_loaded", "bytes_stored")

    def strip(rep: dict[str, Any]) -> list[dict[str, Any]]:
        return [{k: r[k] for k in keys} for r in rep["routines"]["riscv/copy_user"]["rows"]]

    assert strip(one) == strip(two), "instruction counts must be bit-identical from run to run"
    rows = one["routines"]["riscv/copy_user"]["rows"]
    for r in rows:
        off = r["src_off"] if r["group"] == "from" else r["dst_off"]
        assert r["misaligned"] == 0, r
        assert r["insn_per_byte"] <= (0.35 if off == 0 else 0.7), r
        assert r["bytes_stored"] == 8192 and r["mib_s"] > 0


def test_bench_vs_summary_csv_and_plot(tmp_path: Path) -> None:
    rep = _bench("riscv/copy_user", "--vs", "riscv/copy_user_bytewise", "--sizes", "8192", "--no-small",
                 "--reps", "3", "--plot", str(tmp_path / "b.png"))
    assert "fewer instructions aligned" in rep["summary"]
    assert (tmp_path / "b.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert rep["routines"]["riscv/copy_user"]["mix"]["weighted_insns_per_call"] > 0
    csv = run_cli("bench", "riscv/clear_user", "--sizes", "8192", "--no-small", "--no-mix", "--reps", "2", "--csv")
    assert csv.returncode == 0 and csv.stdout.splitlines()[0].startswith("routine,group,n,")
    assert len(csv.stdout.splitlines()) == 1 + 8  # clear: only the to_user direction
    bad = run_cli("bench", "riscv/copy_user", "--vs", "riscv/clear_user")
    assert bad.returncode == 2 and "one kind" in bad.stderr


def test_bench_on_a_kernel_file() -> None:
    rep = _bench("--file", str(ROOT / "tests/fixtures/kernel/uaccess_new.S"), "--symbol", "__asm_copy_to_user",
                 "--sizes", "8192", "--no-small", "--no-mix", "--reps", "2")
    (rows,) = [r["rows"] for r in rep["routines"].values()]
    assert all(r["insns"] > 0 for r in rows)


def test_cov_sweep_and_corpus(tmp_path: Path) -> None:
    proc = run_cli("cov", "riscv/copy_user", "--max-len", "16", "--json", "--html", str(tmp_path / "c.html"))
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert 0 < rep["executed"] < rep["instructions"], "n <= 16 never reaches the block loops"
    never = [r for r in rep["listing"] if r["count"] == 0]
    assert any(r["insn"].startswith(("ld", "c.ld")) for r in never)
    assert rep["entries_taken"] > 0
    assert "never executed" in (tmp_path / "c.html").read_text()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("# two cases\nn=4096,src_off=0,dst_off=0\n"
                                  "riscv/copy_user:n=100,src_off=3,dst_off=0\n")
    rep2 = json.loads(run_cli("cov", "riscv/copy_user", "--corpus", str(corpus), "--json").stdout)
    assert rep2["cases"] == 2 and rep2["entries_taken"] == 0
    assert rep2["executed"] > 0
    # a fuzz engine's raw input in the corpus is decoded as the driver decodes it
    case = parse_fields("riscv/copy_user", "copy", "n=64,src_off=4056,src_fault=40,dst_off=0")
    (corpus / "crash-input").write_bytes(fuzzinput.encode(case))
    rep3 = json.loads(run_cli("cov", "riscv/copy_user", "--corpus", str(corpus), "--json").stdout)
    assert rep3["cases"] == 3 and rep3["entries_taken"] > 0


def test_cov_edges_are_branch_directions_and_fault_paths(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "zero").write_text("n=0,src_off=0,dst_off=0\n")
    rep = json.loads(run_cli("cov", "riscv/copy_user", "--corpus", str(corpus), "--json").stdout)
    branches = [r for r in rep["listing"] if r["branch"] is not None]
    assert branches, "copy_user has conditional branches"
    # one case: each branch it ran went exactly one way, and the others never ran
    for r in branches:
        assert (r["branch"] in ("taken", "not taken")) if r["count"] else r["branch"] == "", r
    cov = rep["coverage"]
    assert cov["branch_edges"] == 2 * len(branches)
    assert cov["branch_covered"] == sum(1 for r in branches if r["count"])
    assert cov["fault_edges"] == rep["entries"] and cov["fault_covered"] == 0
    # an exhaustive sweep takes both ways somewhere, and faults through entries: to 24 bytes
    # (8 branches both ways, 9 of the 41 entries), in a fifth of the time of 64 (all 41)
    full = json.loads(run_cli("cov", "riscv/copy_user", "--max-len", "24", "--json").stdout)
    assert any(r["branch"] == "both" for r in full["listing"])
    assert full["coverage"]["branch_covered"] > cov["branch_covered"]
    assert full["coverage"]["fault_covered"] == full["entries_taken"] > 0
    assert "branch directions" in full["summary"]


def test_cov_corpus_decodes_raw_inputs_with_the_campaigns_max_len(tmp_path: Path) -> None:
    raw = fuzzinput.encode(parse_fields("riscv/copy_user", "copy", "n=1000,src_off=8,dst_off=0"))
    as_run = fuzzinput.decode(ROOT, raw, "copy", 300, "riscv/copy_user")
    assert as_run != fuzzinput.decode(ROOT, raw, "copy", fuzzinput.DEFAULT_MAX_LEN, "riscv/copy_user")
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "id:000000,orig:seed").write_bytes(raw)
    (tmp_path / "spec").mkdir()
    (tmp_path / "spec" / "a.txt").write_text(f"{format_spec(as_run)}\n")
    got = json.loads(run_cli("cov", "riscv/copy_user", "--corpus", str(tmp_path / "raw"), "--max-len", "300",
                             "--json").stdout)
    want = json.loads(run_cli("cov", "riscv/copy_user", "--corpus", str(tmp_path / "spec"), "--json").stdout)
    assert [r["count"] for r in got["listing"]] == [r["count"] for r in want["listing"]]


@pytest.mark.parametrize("args,message", [
    ((), "the executor rejected the case"),  # a granule case on a session of page cases
    (("--granule", "16"), "need MTE (arm64)"),
])
def test_cov_corpus_refuses_what_it_cannot_run(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "a.txt").write_text("n=64,src_off=4064,src_fault=16,dst_off=0,granule=16\n")
    for extra in ((), ("--json",)):
        proc = run_cli("cov", "riscv/copy_user", "--corpus", str(tmp_path), *args, *extra)
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        if extra:
            assert message in json.loads(proc.stdout)["error"]


def test_cov_corpus_reads_a_fuzz_findings_dir(tmp_path: Path) -> None:
    # a driver's .finding file (its input= line too), as fuzz leaves them in its findings dir
    (tmp_path / "crash-1.finding").write_text("spec=riscv/copy_user:n=64,src_off=4056,src_fault=40,dst_off=0\n"
                                              "classes=wrong-data\nwhy=dst[3] differs\ninput=0500400000000000\n")
    proc = run_cli("cov", "riscv/copy_user", "--corpus", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cases"] == 1
    (tmp_path / "other.finding").write_text("spec=riscv/clear_user:n=4,dst_off=0\n")
    proc = run_cli("cov", "riscv/copy_user", "--corpus", str(tmp_path))
    assert proc.returncode == 2 and "other.finding" in proc.stderr and "riscv/clear_user" in proc.stderr, proc.stderr
