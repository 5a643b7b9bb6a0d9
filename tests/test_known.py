"""Baselines of known findings (tool/copyfuzz/known.py): the format, matching, writing,
and a bad file on each command's command line (exit 2, one line, before anything runs)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from copyfuzz import known, records
from copyfuzz.errors import CopyfuzzError

GOOD = """\
# accepted on 2026-11-25
no-progress __asm_copy_to_user+0x5C
store-beyond-reported __asm_copy_to_user+0x5c   # the same bug
wrong-data *

hang __clear_user riscv/clear_user
crash 0x1234
unhandled-fault __asm_copy_to_user+0x0 tests/fixtures/kernel/uaccess_new.S:__asm_copy_to_user
"""


def test_parse_takes_comments_blank_lines_and_canonical_pcs() -> None:
    entries = known.parse(GOOD, "k.txt")
    assert [(e.cls, e.pc, e.routine, e.source) for e in entries] == [
        ("no-progress", "__asm_copy_to_user+0x5c", None, "k.txt:2"),
        ("store-beyond-reported", "__asm_copy_to_user+0x5c", None, "k.txt:3"),
        ("wrong-data", "*", None, "k.txt:4"),
        ("hang", "__clear_user", "riscv/clear_user", "k.txt:6"),
        ("crash", "0x1234", None, "k.txt:7"),
        ("unhandled-fault", "__asm_copy_to_user", "tests/fixtures/kernel/uaccess_new.S:__asm_copy_to_user",
         "k.txt:8"),
    ]


@pytest.mark.parametrize("line, why", [
    ("no-progres __asm_copy_to_user+0x5c", "unknown class 'no-progres'"),
    ("No-Progress *", "unknown class"),
    ("no-progress", "expected 'CLASS PC [ROUTINE]'"),
    ("no-progress __asm_copy_to_user+92", "the offset must be hexadecimal"),
    ("no-progress __asm_copy_to_user+", "the offset must be hexadecimal"),
    ("no-progress +0x10", "is not a fault pc"),
    ("no-progress 12", "is not a fault pc"),
    ("no-progress * riscv/copy_user extra", "one routine a line"),
    ("no-progress *\nno-progress *", "the same entry as line 2"),
])
def test_a_bad_line_names_the_file_the_line_and_why(line: str, why: str) -> None:
    text = "# header\n" + line + "\n"
    with pytest.raises(CopyfuzzError) as e:
        known.parse(text, "base.txt")
    message = str(e.value)
    lineno = 2 + line.count("\n")
    assert message.startswith(f"base.txt:{lineno}: "), message
    assert why in message, message
    assert "\n" not in message


def test_every_class_name_is_accepted() -> None:
    text = "".join(f"{c} *\n" for c in records.CLASS_NAMES)
    assert [e.cls for e in known.parse(text, "x")] == list(records.CLASS_NAMES)


def test_matching_by_class_pc_and_routine() -> None:
    base = known.Baseline(Path("k.txt"), known.parse(GOOD, "k.txt"))
    f = known.Finding
    assert base.match(f("riscv/copy_user", "no-progress", "__asm_copy_to_user+0x5c")) is not None
    # the same class at another pc, or another class at the pc, is new
    assert base.match(f("riscv/copy_user", "no-progress", "__asm_copy_to_user+0x60")) is None
    assert base.match(f("riscv/copy_user", "over-report", "__asm_copy_to_user+0x5c")) is None
    # a case that did not fault: only CLASS * matches it
    assert base.match(f("riscv/copy_user", "no-progress", None)) is None
    hit = base.match(f("riscv/copy_user", "wrong-data", None))
    assert hit is not None and hit.source == "k.txt:4"
    # a routine's line holds for that routine alone
    assert base.match(f("riscv/clear_user", "hang", "__clear_user")) is not None
    assert base.match(f("riscv/mutants/clear-returns-zero", "hang", "__clear_user")) is None
    unused = {e.source for e in base.unused()}
    assert unused == {"k.txt:3", "k.txt:7", "k.txt:8"}


def test_render_is_sorted_and_parses_back_to_the_same_findings() -> None:
    findings = [
        known.Finding("r", "wrong-data", "__asm_copy_to_user+0x11c"),
        known.Finding("r", "wrong-data", "__asm_copy_to_user+0xc6"),
        known.Finding("r", "no-progress", "__asm_copy_to_user+0x6"),
        known.Finding("r", "wrong-data", None),
        known.Finding("r", "no-progress", "__asm_copy_to_user+0x6"),  # twice: once
    ]
    text = known.render(findings, ["r"], "copyfuzz fuzz r --write-known k.txt")
    lines = text.splitlines()
    assert lines[1] == "# command: copyfuzz fuzz r --write-known k.txt"
    assert "# routine: r" in lines
    body = [line for line in lines if not line.startswith("#")]
    # classes in report order (records.CLASSES), a class's pcs by symbol and offset, `*` first
    assert body == ["wrong-data *", "wrong-data __asm_copy_to_user+0xc6", "wrong-data __asm_copy_to_user+0x11c",
                    "no-progress __asm_copy_to_user+0x6"]
    base = known.Baseline(Path("k"), known.parse(text, "k"))
    assert all(base.match(f) is not None for f in findings)
    assert not base.unused()


def test_render_scopes_lines_when_the_run_had_several_routines() -> None:
    findings = [known.Finding("riscv/a", "hang", "__clear_user"), known.Finding("riscv/b", "hang", "__clear_user")]
    text = known.render(findings, ["riscv/a", "riscv/b", "riscv/c"], "c")
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body == ["hang __clear_user riscv/a", "hang __clear_user riscv/b"]
    base = known.Baseline(Path("k"), known.parse(text, "k"))
    assert base.match(known.Finding("riscv/c", "hang", "__clear_user")) is None
    assert "# routine: riscv/c" in text
    empty = known.render([], ["riscv/a"], "c")
    assert known.parse(empty, "k") == [] and "# no findings" in empty


def test_write_is_atomic_and_replaces(tmp_path: Path) -> None:
    out = tmp_path / "k.txt"
    out.write_text("old\n")
    known.write(out, [known.Finding("r", "hang", None)], ["r"], "c")
    assert out.read_text().splitlines()[-1] == "hang *"
    assert [p.name for p in tmp_path.iterdir()] == ["k.txt"]


def test_pc_of_described_reads_triages_fault_pc() -> None:
    assert known.pc_of_described("0x13522 (__asm_copy_to_user+0x6)") == "__asm_copy_to_user+0x6"
    assert known.pc_of_described("0x13522") == "0x13522"
    assert known.pc_of_described("") is None


def test_from_result_reads_fuzz_and_replay_json() -> None:
    fuzz = {"routine": "r", "finds": [{"cls": "no-progress", "classes": ["no-progress", "imprecise"],
                                       "fault_pc": "0x10 (f+0x4)"}]}
    assert known.from_result(fuzz) == (["r"], [known.Finding("r", "no-progress", "f+0x4"),
                                               known.Finding("r", "imprecise", "f+0x4")])
    replay = [{"routine": "a", "unique_findings": [{"class": "hang", "pc": None}]}, {"routine": "b"}]
    assert known.from_result(replay) == (["a", "b"], [known.Finding("a", "hang", None)])
    with pytest.raises(CopyfuzzError):
        known.from_result({"something": "else"})


@pytest.mark.parametrize("command", [
    ["sweep", "riscv/copy_user"],
    ["check", "tests/fixtures/kernel/uaccess_new.S", "--symbol", "__asm_copy_to_user"],
    ["fuzz", "riscv/copy_user"],
    ["replay", "corpora"],
])
def test_a_bad_baseline_is_exit_2_and_one_line_on_every_command(tmp_path: Path, command: list[str]) -> None:
    bad = tmp_path / "known.txt"
    bad.write_text("no-progress *\nno-progres __asm_copy_to_user+0x5c\n")
    proc = run_cli(*command, "--known", str(bad), timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"copyfuzz: {bad}:2: unknown class 'no-progres' (classes: " \
                                  f"{', '.join(records.CLASS_NAMES)})", proc.stderr
    proc = run_cli(*command, "--known", str(tmp_path / "missing.txt"), "--json", timeout=120)
    assert proc.returncode == 2
    assert "cannot read it" in json.loads(proc.stdout)["error"], proc.stdout
    proc = run_cli(*command, "--write-known", str(tmp_path), timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == f"copyfuzz: --write-known {tmp_path}: is a directory"


def test_junit_fails_on_new_findings_alone_and_names_the_known_ones() -> None:
    from copyfuzz import junit

    def find(cls: str, pc: str, known_by: list[str] | None) -> dict[str, object]:
        return {"cls": cls, "classes": [cls], "spec": f"r:n={len(pc)}", "fault_pc": pc, "regression": "",
                "new": True, "known": known_by is not None, "known_by": known_by}

    data = {"routine": "r", "engine": "libfuzzer",
            "finds": [find("no-progress", "0x10 (f+0x4)", ["k.txt:2"]), find("wrong-data", "", None)]}
    tc = junit.fuzz_testcase(data, {})
    assert tc.skipped is None and [o.type for o in tc.outcomes] == ["wrong-data"]
    assert "known findings (not failures): no-progress f+0x4 (baseline k.txt:2)" in tc.stdout
    data["finds"] = data["finds"][:1]
    tc = junit.fuzz_testcase(data, {})
    assert tc.outcomes == [] and tc.skipped == "known findings only: no-progress f+0x4 (baseline k.txt:2)"

    entry: dict[str, Any] = {"routine": "r", "cases": 3, "failing_cases": 2, "findings": {"hang": 2, "crash": 1},
             "reproducers": {"hang": "r:n=1", "crash": "r:n=2"},
             "unique_findings": [
                 {"class": "hang", "pc": None, "cases": 1, "reproducer": "r:n=1", "known": True, "known_by": "k:1"},
                 {"class": "hang", "pc": "f+0x8", "cases": 1, "reproducer": "r:n=3", "known": False},
                 {"class": "crash", "pc": "f+0x8", "cases": 1, "reproducer": "r:n=2", "known": True,
                  "known_by": "k:2"}]}
    [tc] = junit.replay_testcases([entry], {}, set(), False)
    assert [(o.type, o.message) for o in tc.outcomes] == [("hang", "hang: r:n=3")]
    assert tc.outcomes[0].text.startswith("1 case of class hang") and tc.skipped is None
    assert "hang * (baseline k:1); crash f+0x8 (baseline k:2)" in tc.stdout
    entry["unique_findings"] = [u for u in entry["unique_findings"] if u["known"]]
    [tc] = junit.replay_testcases([entry], {}, set(), False)
    assert tc.outcomes == [] and tc.skipped is not None and tc.skipped.startswith("known findings only: hang *")


def test_a_known_file_that_is_no_regular_file_or_too_large_is_refused(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """--known /dev/zero grew to the machine's memory, and a FIFO with no writer waited for
    ever (issue 26, point 8): both are one line; so is a file past known.MAX_BYTES."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), fifo, tmp_path):
        with pytest.raises(CopyfuzzError, match="not a regular file|cannot read it"):
            known.load(path)
    big = tmp_path / "big.txt"
    big.write_text("wrong-data *\n" * 100)
    monkeypatch.setattr(known, "MAX_BYTES", 1000)
    with pytest.raises(CopyfuzzError, match="larger than"):
        known.load(big)
    big.write_text("".join(f"wrong-data sym{i}\n" for i in range(50)))
    monkeypatch.setattr(known, "MAX_BYTES", big.stat().st_size)
    assert len(known.load(big).entries) == 50  # at the limit: read


@pytest.mark.parametrize("routine", ["riscv/copy_user", "my dir/uaccess.S:__asm_copy_to_user", "it's.S:f",
                                     "a #b/x.S:f", "back\\slash.S:f", 'q"uote.S:f', "tab\there.S:f", "plain#.S:f",
                                     "it's #x.S:f"])
def test_every_line_written_reads_back(routine: str) -> None:
    """--write-known wrote lines --known refused when a path held a blank (issue 26,
    point 9): a routine name that needs it is shell-quoted, and reads back as it was,
    comments and all."""
    line = known.format_line("wrong-data", "f+0x4", routine)
    (entry,) = known.parse(f"{line}   # accepted\n", "k.txt")
    assert (entry.cls, entry.pc, entry.routine) == ("wrong-data", "f+0x4", routine)
    assert entry.text == line


def test_an_older_unquoted_line_keeps_its_comment_apart_and_a_line_break_is_refused() -> None:
    """A quote opens only at the start of a word: a hand-written `it's.S:f   # note`
    reads as before quoting came in; a name with a line break cannot be one line."""
    (entry,) = known.parse("wrong-data f+0x4 it's.S:f   # note\n", "k.txt")
    assert entry.routine == "it's.S:f"
    (entry,) = known.parse('wrong-data f+0x4 "a \\" # b"   # note\n', "k.txt")
    assert entry.routine == 'a " # b'
    for name in ("a\nb.S:f", "a\x0cb.S:f", "a\u2028b.S:f"):
        with pytest.raises(CopyfuzzError, match="line break"):
            known.format_line("wrong-data", "f+0x4", name)
