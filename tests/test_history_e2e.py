"""End to end: `copyfuzz history` and `--bisect` on a git repository built from our own routines.

tests/fixtures/history/make-repo.sh builds it (docs/history.md runs the same script):
successive versions of one file, each our bundled arch/riscv/copy_user.S with mutant
switches of arch/riscv/mutants/ defined at its top, beside its own include/ directory (the
file includes include/cf_asm.h and include/copy_template.S with quotes, so every version
needs its siblings from the same commit):

  c1  add lib/uaccess.S: clean                      c7  rename to lib/usercopy.S, text of c5
  c2  README only (no row)                          c8  include/copy_template.S broken (no row)
  c3  off by one: over-report appears               c9  c1's text: does not build (c8's include)
  c4  + wrong shift: wrong-data appears             c10 include fixed (no row)
  c5  wrong shift only: over-report disappears      c11 clean + another comment: wrong-data disappears
  c6  an opcode that does not exist: does not build

Needs the cross toolchain and QEMU: a missing tool FAILS these tests.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

MAKE_REPO = ROOT / "tests" / "fixtures" / "history" / "make-repo.sh"
SYMBOL = "__asm_copy_to_user"
MAX_LEN = "16"  # reaches every class below (the wrong shift's first case has n=16)
OFF_BY_ONE = "#define CF_MUTANT_FIXUP_OFF_BY_ONE 1\n"
# For a test that asserts no class, only that a clean version builds and is swept, or a
# class the probe past the sweep shows at any length (the merges' no-progress): the
# shortest sweep (a third less CPU a version than MAX_LEN's; the last --max-len counts).
SHORT = ("--max-len", "1")


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    r = tmp_path_factory.mktemp("history") / "repo"
    out = subprocess.run(["bash", str(MAKE_REPO), str(r)], check=True, capture_output=True, text=True).stdout
    c = dict(line.split() for line in out.splitlines())
    assert list(c) == [f"c{i}" for i in range(1, 12)]
    # Uncommitted work in the tree and the index: history must neither read nor touch it.
    (r / "lib" / "usercopy.S").write_text(OFF_BY_ONE + (ROOT / "arch" / "riscv" / "copy_user.S").read_text())
    (r / "scratch.S").write_text("junk\n")
    git(r, "add", "scratch.S")
    return r, c


def history(repo: Path, cache: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = run_cli("history", str(repo), "--file", "lib/usercopy.S", "--symbol", SYMBOL, "--max-len", MAX_LEN,
                   "--jobs", "2", "--cache", str(cache), "--json", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def state(repo: Path) -> tuple[str, bytes, str]:
    return (git(repo, "status", "--porcelain"), (repo / ".git" / "index").read_bytes(),
            (repo / "lib" / "usercopy.S").read_text())


@pytest.fixture(scope="module")
def first_run(repo: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    r, _ = repo
    cache = tmp_path_factory.mktemp("cache")
    before = state(r)
    rc, report, err = history(r, cache)
    assert rc == 0, err  # the newest version (c11) is clean
    assert state(r) == before
    return {"report": report, "cache": cache}


def test_one_row_per_commit_that_changed_the_file(repo: tuple[Path, dict[str, str]],
                                                  first_run: dict[str, Any]) -> None:
    _, c = repo
    rows = first_run["report"]["commits"]
    assert [row["commit"] for row in rows] == [c[k] for k in ("c1", "c3", "c4", "c5", "c6", "c7", "c9", "c11")]
    assert first_run["report"]["file"] == "lib/usercopy.S"
    by = {row["commit"]: row for row in rows}
    assert by[c["c1"]]["subject"] == "lib: a word copy" and by[c["c1"]]["date"].startswith("20")
    assert by[c["c7"]]["path"] == "lib/usercopy.S" and by[c["c7"]]["status"].startswith("R")
    assert by[c["c3"]]["path"] == "lib/uaccess.S"


def test_classes_appear_and_disappear(repo: tuple[Path, dict[str, str]], first_run: dict[str, Any]) -> None:
    _, c = repo
    by = {row["commit"]: row for row in first_run["report"]["commits"]}
    findings = {k: set(by[c[k]]["findings"]) for k in ("c1", "c3", "c4", "c5", "c7", "c11")}
    assert findings == {"c1": set(), "c3": {"over-report"}, "c4": {"over-report", "wrong-data"},
                        "c5": {"wrong-data"}, "c7": {"wrong-data"}, "c11": set()}
    assert by[c["c1"]]["cases"] > 0 and by[c["c11"]]["cases"] > 0  # clean means swept
    assert by[c["c3"]]["appeared"] == ["over-report"] and by[c["c4"]]["appeared"] == ["wrong-data"]
    assert by[c["c5"]]["disappeared"] == ["over-report"]
    assert by[c["c11"]]["disappeared"] == ["wrong-data"]  # across the versions that do not build
    assert by[c["c7"]]["appeared"] == [] and by[c["c7"]]["disappeared"] == []
    for row in by.values():
        assert set(row["reproducers"]) == set(row["findings"]), row
    # The smallest reproducer names the file by its path at that commit and runs as repro runs it.
    assert by[c["c4"]]["reproducers"]["wrong-data"].startswith(f"lib/uaccess.S:{SYMBOL}:n=")
    assert by[c["c7"]]["reproducers"]["wrong-data"].startswith(f"lib/usercopy.S:{SYMBOL}:n=")
    assert by[c["c4"]]["findings"]["wrong-data"] == by[c["c5"]]["findings"]["wrong-data"]


def test_versions_that_do_not_build_are_rows(repo: tuple[Path, dict[str, str]], first_run: dict[str, Any]) -> None:
    _, c = repo
    by = {row["commit"]: row for row in first_run["report"]["commits"]}
    assert [k for k in c if c[k] in by and not by[c[k]]["builds"]] == ["c6", "c9"]
    assert "not_an_opcode a0" in by[c["c6"]]["error"] and "lib/uaccess.S:" in by[c["c6"]]["error"]
    # c9's own text is c1's: the template it includes, at c9, is the broken one (and the
    # cache told the two apart: the included files' blobs are part of the key).
    assert "not_an_opcode a1" in by[c["c9"]]["error"] and "lib/include/copy_template.S" in by[c["c9"]]["error"]
    assert "/tmp" not in by[c["c9"]]["error"] and "copyfuzz-history" not in by[c["c9"]]["error"]


def test_identical_texts_are_checked_once_and_a_rerun_checks_nothing(
        repo: tuple[Path, dict[str, str]], first_run: dict[str, Any]) -> None:
    r, c = repo
    report = first_run["report"]
    by = {row["commit"]: row for row in report["commits"]}
    # c7 is c5's text (and includes) under a new name: from the cache, within the first run.
    assert (report["checked"], report["cached"]) == (7, 1)
    assert [k for k in c if c[k] in by and by[c[k]]["cached"]] == ["c7"]
    rc, again, err = history(r, first_run["cache"])
    assert rc == 0, err
    assert (again["checked"], again["cached"]) == (0, 8)
    strip = ("cached",)
    assert ([{k: v for k, v in row.items() if k not in strip} for row in again["commits"]]
            == [{k: v for k, v in row.items() if k not in strip} for row in report["commits"]])
    # Other options are other results: a longer sweep checks again.
    rc, longer, err = history(r, first_run["cache"], "--since", c["c9"], "--max-len", "17")
    assert rc == 0, err
    assert (longer["checked"], longer["cached"]) == (2, 0)


def test_since_and_until(repo: tuple[Path, dict[str, str]], first_run: dict[str, Any]) -> None:
    r, c = repo
    rc, report, err = history(r, first_run["cache"], "--since", c["c4"], "--until", c["c7"])
    assert rc == 1, err  # the newest version in range (c7) has wrong-data
    rows = report["commits"]
    assert [row["commit"] for row in rows] == [c[k] for k in ("c4", "c5", "c6", "c7")]
    assert rows[0]["appeared"] == []  # the version at --since: nothing before it to compare
    assert report["checked"] == 0  # all in the cache from the first run
    # --since on a commit that did not change the file: its version is the last change before it.
    rc, report, err = history(r, first_run["cache"], "--since", c["c2"], "--until", c["c3"])
    assert [row["commit"] for row in report["commits"]] == [c["c1"], c["c3"]]
    # The newest version does not build: exit 2, after the rows.
    rc, report, err = history(r, first_run["cache"], "--until", c["c6"])
    assert rc == 2 and report["commits"][-1]["builds"] is False
    assert err.count("\n") == 1 and "does not build" in err
    assert "does not build" in report["error"]  # one object, with its error


def test_text_rows(repo: tuple[Path, dict[str, str]], first_run: dict[str, Any]) -> None:
    r, c = repo
    proc = run_cli("history", str(r), "--file", "lib/usercopy.S", "--symbol", SYMBOL, "--max-len", MAX_LEN,
                   "--cache", str(first_run["cache"]))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    row = {k: next(i for i, line in enumerate(lines) if line.startswith(c[k][:12])) for k in ("c3", "c5", "c6")}
    assert "+ over-report" in lines[row["c3"]] and "lib/uaccess.S:__asm_copy_to_user:n=" in lines[row["c3"]]
    assert any("- over-report (gone)" in line for line in lines[row["c5"]:row["c6"]])
    assert "does not build" in lines[row["c6"]] and "not_an_opcode a0" in lines[row["c6"]]
    assert "8 commits: 0 checked, 8 from the cache" in proc.stdout
    # no progress (stderr is not a terminal): only what was worked out, said once
    [said] = proc.stderr.splitlines()
    assert said.startswith("copyfuzz: lib/usercopy.S: arch riscv from its instructions (the words only one "
                           "architecture uses: riscv ") and said.endswith(", as its path has no arch/<name>/")


def test_bisect_first_bad(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    r, c = repo
    before = state(r)
    rc, report, err = history(r, tmp_path, "--bisect", "wrong-data", "--good", c["c1"], "--bad", c["c7"])
    assert rc == 0, err
    assert report["first_bad"] == c["c4"]
    assert state(r) == before
    assert report["steps"][0] == {"commit": c["c1"], "step": "--good", "verdict": "good"}
    assert report["steps"][1]["verdict"] == "bad"
    # c3..c7 changed the file: a binary search over 4 versions between takes at most 3 steps
    assert 1 <= len(report["steps"]) - 2 <= 3
    assert report["checked"] == len({s["commit"] for s in report["steps"]})
    proc = run_cli("history", str(r), "--file", "lib/usercopy.S", "--symbol", SYMBOL, "--max-len", MAX_LEN,
                   "--cache", str(tmp_path), "--bisect", "wrong-data", "--good", c["c1"], "--bad", c["c7"])
    assert proc.returncode == 0, proc.stderr
    assert f"first_bad: {c['c4']}" in proc.stdout and "step 1" in proc.stdout
    assert f"{c['c4']} is the first bad commit" in proc.stdout


def test_bisect_first_fixed(repo: tuple[Path, dict[str, str]], first_run: dict[str, Any]) -> None:
    r, c = repo
    rc, report, err = history(r, first_run["cache"], "--bisect", "over-report", "--fixed", "--bad", c["c3"],
                              "--good", c["c11"])
    assert rc == 0, err
    assert report["first_fixed"] == c["c5"] and "first_bad" not in report
    # wrong-data disappears at c9 or c11: c9 does not build, so the search cannot tell (as git bisect skip).
    rc, report, err = history(r, first_run["cache"], "--bisect", "wrong-data", "--fixed", "--bad", c["c4"],
                              "--good", c["c11"])
    assert rc == 2 and report["first_fixed"] is None and report["candidates"] == [c["c9"], c["c11"]]
    assert "only versions that do not build are left" in err
    assert "only versions that do not build are left" in report["error"]  # one object, with its error


@pytest.mark.parametrize("args, message", [
    (["--bisect", "wrong-data", "--good", "c7", "--bad", "c1"], "is not an ancestor"),
    (["--bisect", "over-report", "--fixed", "--bad", "c11", "--good", "c3"], "is not an ancestor of --good"),
    (["--bisect", "wrong-data", "--good", "c4", "--bad", "c4"], "the same commit"),
    (["--bisect", "wrong-data", "--good", "c5", "--bad", "c7"], "is not a good version"),
    (["--bisect", "over-report", "--good", "c1", "--bad", "c7"], "is not a bad version"),
    (["--bisect", "no-such-class", "--good", "c1", "--bad", "c7"], "not a finding class"),
    (["--bisect", "wrong-data", "--good", "c1"], "needs --good REV and --bad REV"),
    (["--good", "c1"], "only with --bisect"),
    (["--until", "no-such-rev"], "--until no-such-rev: no such commit"),
    (["--since", "c11", "--until", "c1"], "no commit in"),
    # refused upfront, as check refuses them, not a "does not build" row per version
    (["--arch", "arm64", "--isa", "rv64gcv"], "--isa/--vlen name RISC-V extensions"),
    (["--arch", "arm", "--xlen", "64"], "--xlen 64: arm routines are 32-bit only"),
])
def test_bad_input(repo: tuple[Path, dict[str, str]], first_run: dict[str, Any], args: list[str], message: str) -> None:
    r, c = repo
    args = [c.get(a, a) for a in args]
    rc, report, err = history(r, first_run["cache"], *args)
    assert rc == 2 and err.count("\n") == 1, err
    assert message in err and message in report["error"], (err, report)


def test_not_a_repository_and_a_file_that_never_existed(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    r, _ = repo
    rc, report, err = history(tmp_path, tmp_path / "cache")
    assert rc == 2 and "not a git repository" in report["error"] and err.count("\n") == 1
    proc = run_cli("history", str(r), "--file", "lib/nothing.S", "--symbol", SYMBOL, "--json")
    assert proc.returncode == 2 and "no commit in the history" in json.loads(proc.stdout)["error"]
    proc = run_cli("history", str(r), "--file", "../outside.S", "--symbol", SYMBOL)
    assert proc.returncode == 2 and "path inside the repository" in proc.stderr


def test_a_version_without_the_symbol_is_a_row(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    r, c = repo
    rc, report, err = history(r, tmp_path, "--symbol", "cf_not_here:copy", "--since", c["c7"])
    assert rc == 2 and "does not build" in err  # the newest version cannot be said to be clean
    rows = report["commits"]
    assert [row["commit"] for row in rows] == [c["c7"], c["c9"], c["c11"]]
    assert all(not row["builds"] for row in rows)
    assert "'cf_not_here' is not defined there" in rows[0]["error"] and "__asm_copy_to_user" in rows[0]["error"]
    assert rows[1]["error"].startswith("lib/include/copy_template.S:")  # the assembler stops first


def test_a_cache_entry_of_another_shape_is_a_miss(repo: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    """An edited or foreign cache entry gave a ValueError traceback (issue 26, point 2):
    it is checked again, and rewritten. Each wrong shape is told from the real entry in
    process; one of them goes through the command."""
    from copyfuzz.cmd_history import _is_result

    r, c = repo
    cache = tmp_path / "cache"
    rc, report, err = history(r, cache, "--until", c["c1"], *SHORT)
    assert rc == 0 and report["checked"] == 1, err
    (entry,) = cache.rglob("*.json")
    data = json.loads(entry.read_text())
    assert _is_result(data), data
    for wrong in ({"cases": "many"}, {"findings": [1, 2]}, {"findings": {"wrong-data": "many"}},
                  {"reproducers": {"wrong-data": "ab"}}, {"builds": "yes"}):
        assert not _is_result({**data, **wrong}), wrong
    entry.write_text(json.dumps({**data, "findings": {"wrong-data": "many"}}))
    rc, report, err = history(r, cache, "--until", c["c1"], *SHORT)
    assert rc == 0 and report["checked"] == 1 and report["cached"] == 0, err
    rc, report, err = history(r, cache, "--until", c["c1"], *SHORT)
    assert rc == 0 and report["cached"] == 1, err  # rewritten in the right shape
    proc = run_cli("history", str(r), "--file", "lib/usercopy.S", "--symbol", SYMBOL, *SHORT,
                   "--cache", str(cache), "--until", c["c1"])  # the text rows read the entry too
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_a_version_that_is_a_symlink_is_a_row_saying_so(tmp_path: Path) -> None:
    """The file replaced by a symbolic link in one commit: that row says so (its blob is
    the link's target name, which used to be assembled: 'unrecognized opcode')."""
    r = tmp_path / "repo"
    (r / "lib").mkdir(parents=True)
    git(r, "init", "-q")
    src = ROOT / "tests" / "fixtures" / "kernel" / "uaccess_new.S"
    (r / "lib" / "usercopy.S").write_text(src.read_text())
    (r / "lib" / "other.S").write_text(src.read_text())
    for step in ("file", "symlink", "file again"):
        if step == "symlink":
            (r / "lib" / "usercopy.S").unlink()
            (r / "lib" / "usercopy.S").symlink_to("other.S")
        elif step == "file again":
            (r / "lib" / "usercopy.S").unlink()
            (r / "lib" / "usercopy.S").write_text(src.read_text() + "\n")
        git(r, "add", "-A")
        git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", step)
    rc, report, err = history(r, tmp_path / "cache", *SHORT)
    assert rc == 0, err
    rows = {row["subject"]: row for row in report["commits"]}
    assert "a symlink at this commit, not a regular file" in rows["symlink"]["error"], rows["symlink"]
    assert rows["file"]["builds"] and rows["file again"]["builds"], rows


# ---- merges: a merge's result is a version; bisect walks the graph (issue 26 point 1) ----

BUG_LINE = "#define CONFIG_FIXTURE_NO_RETRY 1\n"  # the fixture's seeded bug: no-progress


def _commit(r: Path, message: str) -> str:
    git(r, "add", "-A")
    git(r, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(r, "rev-parse", "HEAD")


def merge_repo(tmp_path: Path, merge_brings_the_bug: bool) -> tuple[Path, dict[str, str]]:
    """c1 clean; a branch's commit B and main's commit M; then main merges the branch. B
    adds the bug (a line at the top), M a comment at the end, and git merges both; or,
    with merge_brings_the_bug, both are clean and the merge's own resolution adds it."""
    r = tmp_path / "repo"
    (r / "lib").mkdir(parents=True)
    git(r, "init", "-q", "-b", "main")
    f = r / "lib" / "usercopy.S"
    clean = (ROOT / "tests" / "fixtures" / "kernel" / "uaccess_new.S").read_text()
    f.write_text(clean)
    c = {"c1": _commit(r, "c1")}
    git(r, "checkout", "-q", "-b", "branch")
    f.write_text(("/* the branch's comment */\n" if merge_brings_the_bug else BUG_LINE) + clean)
    c["B"] = _commit(r, "B")
    git(r, "checkout", "-q", "main")
    f.write_text(clean + "/* main's comment */\n")
    c["M"] = _commit(r, "M")
    if merge_brings_the_bug:
        git(r, "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-commit", "branch")
        f.write_text(BUG_LINE + f.read_text())
        c["merge"] = _commit(r, "merge")
    else:
        git(r, "-c", "user.name=t", "-c", "user.email=t@t", "merge", "-q", "--no-edit", "-m", "merge", "branch")
        c["merge"] = git(r, "rev-parse", "HEAD")
    return r, c


# the repository, its commits, a cache, whether the merge (not the branch) brings the bug
Merged = tuple[Path, dict[str, str], Path, bool]


@pytest.fixture(scope="module", params=[False, True], ids=["from-the-branch", "by-the-merge"])
def merged(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Merged:
    """merge_repo and one cache for both tests of each shape: history neither reads nor
    touches the tree (first_run checks it), and a result is cached by the texts' blobs and
    the options, so the bisect reads the rows the history test checked (four versions,
    about 4 s of CPU) and still walks the graph, examining and naming what it would unaided.
    Both run SHORT: the fixture's bug shows as no-progress at any --max-len, in check's
    probe past the sweep (n = 32, a fault halfway), where MAX_LEN's sweep took 3 s more a
    shape."""
    tmp = tmp_path_factory.mktemp("merge")
    r, c = merge_repo(tmp, request.param)
    return r, c, tmp / "cache", request.param


def test_a_merge_is_a_version_and_the_newest_decides(merged: Merged) -> None:
    """The merge is a row (its file differs from both parents'), and the file at --until
    decides the exit status: HEAD has the bug, so 1, whatever main's own commit says."""
    r, c, cache, merge_brings_the_bug = merged
    rc, report, err = history(r, cache, *SHORT)
    assert rc == 1, (err, report)
    rows = {row["commit"]: row for row in report["commits"]}
    assert c["merge"] in rows and "no-progress" in rows[c["merge"]]["findings"], report
    assert "no-progress" not in rows[c["M"]]["findings"]
    assert ("no-progress" in rows[c["B"]]["findings"]) != merge_brings_the_bug


def test_bisect_walks_the_graph_and_names_a_tested_commit(merged: Merged) -> None:
    """--bisect over a merge finds the commit that brought the class (the branch's, or the
    merge itself), and every commit it names was tested: it used to name an untested one
    from a list ordered by date, then fail with a KeyError."""
    r, c, cache, merge_brings_the_bug = merged
    rc, report, err = history(r, cache, "--bisect", "no-progress", "--good", c["c1"], "--bad", c["merge"], *SHORT)
    assert rc == 0 and "Traceback" not in err, (err, report)
    assert report["first_bad"] == (c["merge"] if merge_brings_the_bug else c["B"]), report
    tested = {s["commit"]: s["verdict"] for s in report["steps"]}
    assert tested.get(report["first_bad"]) == "bad", report["steps"]
