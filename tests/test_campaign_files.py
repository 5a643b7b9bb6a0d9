"""The files campaigns keep: atomic writes, regression specs (one format, strict reading,
deduplicated across concurrent writers), the corpus. Unit tests: no executor needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from copyfuzz import atomic, corpus, regressions
from copyfuzz.errors import CopyfuzzError
from copyfuzz.routines import Routine, discover, find
from copyfuzz.spec import parse_fields


def copy_user() -> Routine:
    return find(discover(ROOT), "riscv/copy_user")


def test_atomic_write_is_whole_or_absent_and_exclusive_never_replaces(tmp_path: Path) -> None:
    path = tmp_path / "x"
    assert atomic.write(path, b"one")
    assert not atomic.write(path, b"two", exclusive=True) and path.read_bytes() == b"one"
    assert atomic.write(path, "three") and path.read_text() == "three"
    assert [p.name for p in tmp_path.iterdir()] == ["x"]  # no temporaries left


def test_atomic_write_failure_is_one_error_naming_the_path_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(CopyfuzzError, match="cannot write .*missing/x"):
        atomic.write(tmp_path / "missing" / "x", b"data")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(CopyfuzzError, match="cannot write"):
        atomic.write(blocker / "x", b"data")  # a path under a regular file: fails even for root
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


def test_write_many_writes_a_batch_before_it_syncs_and_syncs_before_it_renames(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One journal commit a batch, not one a file: every temporary is written before the
    first fsync, and none is in place before the last (else a kill leaves a file unsynced)."""
    (tmp_path / "f1").write_bytes(b"old")
    seen: list[tuple[int, int]] = []  # at each fsync: (temporaries, files in place)
    real = os.fsync

    def fsync(fd: int) -> None:
        names = [p.name for p in tmp_path.iterdir()]
        seen.append((sum(n.endswith(".tmp") for n in names), sum(not n.endswith(".tmp") for n in names)))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(atomic, "BATCH", 3)
    files: list[tuple[Path, bytes | str]] = [(tmp_path / f"f{k}", f"new {k}") for k in range(5)]
    assert atomic.write_many(files, exclusive=True) == [True, False, True, True, True]
    assert seen == [(3, 1)] * 3 + [(2, 3)] * 2  # two batches: 3 then 2, f1 there before
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"f{k}" for k in range(5)]
    assert (tmp_path / "f1").read_bytes() == b"old" and (tmp_path / "f4").read_text() == "new 4"


def test_write_many_failing_midway_leaves_no_temporary(tmp_path: Path) -> None:
    files: list[tuple[Path, bytes | str]] = [(tmp_path / "a", b"1"), (tmp_path / "no" / "b", b"2"),
                                             (tmp_path / "c", b"3")]
    with pytest.raises(CopyfuzzError, match="cannot write .*no/b"):
        atomic.write_many(files)
    assert list(tmp_path.iterdir()) == []


def test_stale_temporaries_of_dead_writers_go_and_live_ones_stay(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f".x.{dead.pid}-0123abcd.tmp"
    live = tmp_path / f".y.{os.getpid()}-0123abcd.tmp"
    stale.write_bytes(b"half")
    live.write_bytes(b"in progress")
    atomic.remove_stale_temporaries(tmp_path)
    assert not stale.exists() and live.exists()


def test_corpus_add_names_by_hash_and_never_twice(tmp_path: Path) -> None:
    assert corpus.add(tmp_path, b"abc")
    assert not corpus.add(tmp_path, b"abc")
    assert corpus.add(tmp_path, b"def", prefix=corpus.SEED_PREFIX)
    assert not corpus.add(tmp_path, b"def")  # a seed counts as present
    assert corpus.size(tmp_path) == 2
    assert corpus.add_many(tmp_path, [b"abc", b"ghi", b"ghi", b"jkl"]) == 2  # new ones, each once
    assert corpus.size(tmp_path) == 4


def test_take_whole_skips_inputs_cut_short(tmp_path: Path) -> None:
    staging, into = tmp_path / "staging", tmp_path / "corpus"
    staging.mkdir()
    into.mkdir()
    (staging / corpus.name_of(b"whole")).write_bytes(b"whole")
    (staging / corpus.name_of(b"cut short")).write_bytes(b"cut")
    assert corpus.take_whole(into, staging, remove=True) == 1
    assert sorted(p.read_bytes() for p in into.iterdir()) == [b"whole"] and not any(staging.iterdir())



def test_take_whole_skips_an_input_libfuzzer_deletes_while_it_reads(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    staging, into = tmp_path / "staging", tmp_path / "corpus"
    staging.mkdir()
    into.mkdir()
    for data in (b"reduced away", b"kept"):
        (staging / corpus.name_of(data)).write_bytes(data)
    gone = staging / corpus.name_of(b"reduced away")
    read = Path.read_bytes

    def deleted_first(self: Path) -> bytes:
        if self == gone:
            self.unlink()  # libFuzzer's delete, after the listing and the is_file check
        return read(self)

    monkeypatch.setattr(Path, "read_bytes", deleted_first)
    assert corpus.take_whole(into, staging, remove=False) == 1
    assert [p.read_bytes() for p in into.iterdir()] == [b"kept"]

SAVE = """
import sys
from pathlib import Path
from copyfuzz import regressions
from copyfuzz.routines import Routine, discover, find
from copyfuzz.spec import parse_fields
r = find(discover(Path(sys.argv[1])), "riscv/copy_user")
spec = parse_fields(r.name, r.kind, "n=5,src_off=4093,src_fault=3")
path, _ = regressions.save(Path(sys.argv[2]), r, spec, "wrong-data", ["wrong-data"], engine="e" + sys.argv[3],
                           fault_pc="0x1000 (x+0x10)", profile="linux")
print(path)
"""


def test_concurrent_saves_of_one_finding_write_one_regression(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tool")}
    procs = [subprocess.Popen([sys.executable, "-c", SAVE, str(ROOT), str(tmp_path), str(k)], env=env,
                              stdout=subprocess.PIPE, text=True) for k in range(12)]
    paths = {p.communicate(timeout=60)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    specs = list(tmp_path.glob("*.spec"))
    assert len(specs) == 1 and paths == {str(specs[0])}
    reg = regressions.read(specs[0])
    assert reg.cls == "wrong-data" and reg.line == "riscv/copy_user:n=5,src_off=4093,src_fault=3,dst_off=0"


def test_a_regression_is_kept_apart_by_class_and_fault_pc(tmp_path: Path) -> None:
    r = copy_user()
    spec = parse_fields(r.name, r.kind, "n=5")
    saved = {regressions.save(tmp_path, r, spec, cls, [cls], engine="x", fault_pc=pc, profile="linux")[0]
             for cls in ("wrong-data", "no-progress") for pc in ("0x10 (a)", "0x20 (b)", "")}
    assert len(saved) == 6


@pytest.mark.parametrize("text,why", [
    ("# class: wrong-data\n# fault-pc: none\n", "no case spec line"),
    ("# class: wrong-data\nriscv/copy_user:n=5,src_o", "cut short"),
    ("", "empty"),
    ("riscv/copy_user:n=5\nsome garbage\n", "neither a comment nor a case spec"),
    (b"\xff\xfe\n".decode("latin-1"), "not text|neither"),
])
def test_damaged_regressions_are_errors_naming_the_file(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "broken.spec"
    path.write_text(text)
    with pytest.raises(CopyfuzzError, match=rf"broken\.spec: damaged case file \(.*({why})"):
        regressions.read(path)


def test_header_only_is_reported_as_having_no_spec_line(tmp_path: Path) -> None:
    path = tmp_path / "h.spec"
    path.write_text("# class: wrong-data\n# fault-pc: none\n")
    with pytest.raises(CopyfuzzError, match="no case spec line"):
        regressions.read(path)


@pytest.mark.e2e
@pytest.mark.parametrize("damage", ["truncated", "header-only", "empty"])
def test_replay_of_a_damaged_regression_is_exit_2_naming_it(tmp_path: Path, damage: str) -> None:
    (tmp_path / "good.spec").write_text("# class: x\nriscv/copy_user:n=100,src_off=3,dst_off=5\n")
    text = {"truncated": "# class: wrong-data\nriscv/copy_user:n=100,src_off=3,dst_o",
            "header-only": "# class: wrong-data\n# found-by: libfuzzer\n", "empty": ""}[damage]
    (tmp_path / "lost.spec").write_text(text)
    proc = run_cli("replay", str(tmp_path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "lost.spec: damaged case file" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["huge.spec", "huge-input"])
def test_a_case_file_larger_than_any_real_one_is_refused_unread(tmp_path: Path, name: str) -> None:
    """A 300 MB file in a replay directory took 62 s and 1.7 GB, read whole: now one line."""
    with open(tmp_path / name, "wb") as f:
        f.truncate(regressions.CASE_FILE_LIMIT + 1)  # sparse: nothing to write, much to read
    proc = run_cli("replay", str(tmp_path), "--routine", "riscv/copy_user")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"copyfuzz: {tmp_path / name}: larger than 64 MiB", proc.stderr


def test_regression_format_round_trips() -> None:
    r = copy_user()
    spec = parse_fields(r.name, r.kind, "n=7,dst_off=4095,dst_fault=1")
    text = regressions.format_text(spec, "no-progress", ["no-progress", "imprecise"], "afl", "", "exact", [])
    header = regressions.parse_header(text)
    assert header == {"class": "no-progress", "classes": "no-progress,imprecise", "found-by": "afl",
                      "fault-pc": "none", "profile": "exact"}
    assert regressions.spec_lines(text) == [("riscv/copy_user", "n=7,src_off=0,dst_off=4095,dst_fault=1")]
    assert regressions.pc_key("none") == regressions.pc_key("") == "none"
    assert regressions.pc_key("0x10 (a+0x2)") == "0x10"


def test_a_driver_finding_file_reads_as_its_key_value_lines(tmp_path: Path) -> None:
    path = tmp_path / "driver-1-2.finding"
    path.write_text("spec=riscv/copy_user:n=5,src_off=0\nclasses=wrong-data,over-report\nno equals sign\n")
    assert regressions.read_finding(path) == {"spec": "riscv/copy_user:n=5,src_off=0",
                                              "classes": "wrong-data,over-report"}
    assert regressions.read_finding(tmp_path / "missing.finding") == {}


def test_files_by_spec_maps_each_spec_line_to_its_first_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.spec").write_text("# class: wrong-data\nriscv/copy_user:n=5,src_off=1\n")
    (tmp_path / "sub" / "b.spec").write_text("riscv/copy_user:n=5,src_off=1\nn=7\n")
    (tmp_path / "c.spec").write_text("not a spec\n")
    assert regressions.files_by_spec(tmp_path) == {"riscv/copy_user:n=5,src_off=1": tmp_path / "a.spec",
                                                   "n=7": tmp_path / "sub" / "b.spec"}
    assert regressions.files_by_spec(tmp_path / "none") == {}


def test_a_hypothesis_failure_file_reads_back_as_a_whole_spec_file(tmp_path: Path) -> None:
    from copyfuzz import fuzzinput

    r = copy_user()
    spec = parse_fields(r.name, r.kind, "n=16,src_off=4090,src_fault=6")
    text = regressions.format_failure(spec, ["wrong-data", "imprecise"], "copyfuzz fuzz riscv/copy_user --seed 3",
                                      ["--kind", "copy", "-DX=a b"], "search(case=Case(kind=0, n=16))")
    path = tmp_path / regressions.failure_name("wrong-data")
    assert path.name == "hypothesis-wrong-data.failure"
    path.write_text(text)
    header = regressions.header(path)
    assert header == {"Hypothesis failure": "copyfuzz fuzz riscv/copy_user --seed 3",
                      "classes": "wrong-data,imprecise", "options": "--kind copy '-DX=a b'",
                      "Falsifying example": "search(case=Case(kind=0, n=16))"}
    line = ("riscv/copy_user", "n=16,src_off=4090,src_fault=6,dst_off=0")
    assert regressions.read_specs(path) == [line] and fuzzinput.read_case_file(path) == ("spec", [line])
    # No options line for a bundled routine's default build.
    assert "# options:" not in regressions.format_failure(spec, ["wrong-data"], "c", [], "e")
    # Written whole (atomic.write): one cut short is damaged, never read as what is left of it.
    path.write_text(text.rstrip("\n").rpartition("\n")[0] + "\n")
    with pytest.raises(CopyfuzzError, match=r"hypothesis-wrong-data\.failure: damaged case file \(no case spec"):
        fuzzinput.read_case_file(path)


def test_a_hypothesis_example_replays_with_every_field_it_prints(tmp_path: Path) -> None:
    from copyfuzz import fuzzinput, records
    memset, memmove = records.KINDS.index("memset"), records.KINDS.index("memmove")
    out = (f"Falsifying example: test_memset(\n    case=Case(kind={memset}, profile=1, id=7, n=40, src_off=0,"
           f" dst_off=4090, src_fault=18446744073709551615, dst_fault=6, fill=305419866, disp=0, seal=0,"
           f" magic={records.CASE_MAGIC}, granule=16),\n)\n")
    case = fuzzinput.hypothesis_case(out.encode())
    assert case == records.Case(kind=memset, profile=1, id=1, n=40, src_off=0, dst_off=4090, dst_fault=6,
                                fill=0x1234565A, granule=16)
    (tmp_path / "out.txt").write_text(f"Falsifying example: t(case=Case(kind={memmove}, n=9, src_off=0, "
                                      f"dst_off=0, disp=-3))\n")
    assert fuzzinput.read_case_file(tmp_path / "out.txt") == ("hypothesis", records.Case(
        kind=memmove, profile=0, id=1, n=9, src_off=0, dst_off=0, disp=-3))
    for body, why in ((f"kind={memset}, n=4, src_off=0, dst_off=0, colour=3", "no field 'colour'"),
                      (f"kind={memset}, n=4, src_off=0, dst_off=0, fill=x", "not an integer"),
                      ("kind=99, n=4, src_off=0, dst_off=0", "kind"),
                      (f"kind={memset}, n=4, src_off=0, dst_off=0, granule=8", "granule")):
        (tmp_path / "bad.txt").write_text(f"Falsifying example: t(case=Case({body}))\n")
        with pytest.raises(CopyfuzzError, match=rf"bad\.txt: .*{why}"):
            fuzzinput.read_case_file(tmp_path / "bad.txt")


def test_an_engine_input_is_raw_though_its_bytes_read_as_a_spec(tmp_path: Path) -> None:
    """A fuzzer writes text too: an input named as engines name theirs (its SHA-1, an
    artifact prefix, our seed prefix, AFL++'s id:) is a raw input, never replayed as a spec."""
    from copyfuzz import fuzzinput
    data = b"n=5,src_off=0,dst_off=0\n"
    digest = corpus.name_of(data)
    for name in (digest, f"crash-{digest}", f"seed-{digest}", f"slow-unit-{digest}",
                 "id:000003,sig:11,src:000001,time:5,execs:9,op:havoc,rep:2"):
        (tmp_path / name).write_bytes(data)
        assert fuzzinput.read_case_file(tmp_path / name) == ("raw", data), name
    # The same bytes under a name of the user's, or a digest that is not theirs: a spec.
    for name in ("case.txt", "0" * 40, f"crash-{'1' * 40}"):
        (tmp_path / name).write_bytes(data)
        assert fuzzinput.read_case_file(tmp_path / name) == ("spec", [(None, "n=5,src_off=0,dst_off=0")]), name
