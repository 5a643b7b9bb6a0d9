"""history on awkward repositories (issue 26): what git says is read exactly, --file is
a path, never a pattern, and a killed run leaves nothing for good. Needs only git."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from copyfuzz import atomic
from copyfuzz.history import Repo


def git(repo: Path, *argv: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *argv],
                   check=True, capture_output=True)


def commit(repo: Path, path: str, text: str, subject: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", "--", path)
    git(repo, "commit", "-q", "-m", subject)


def test_a_subject_holding_the_old_record_marker_keeps_its_commit(tmp_path: Path) -> None:
    """A subject with \\x01 (git's record marker before) split a commit's record in two and
    the commit vanished: a buggy HEAD was reported clean."""
    git(tmp_path, "init", "-q")
    commit(tmp_path, "lib/a.S", "one\n", "first")
    commit(tmp_path, "lib/a.S", "two\n", "second \x01 with a marker")
    commit(tmp_path, "lib/a.S", "three\n", "third")
    changes = Repo(str(tmp_path)).changes("lib/a.S", "HEAD")
    assert [c.subject for c in changes] == ["first", "second \x01 with a marker", "third"]


def test_file_is_a_path_not_a_pathspec(tmp_path: Path) -> None:
    """`lib/*.S` and `:(glob)` once merged other files' histories into one list."""
    git(tmp_path, "init", "-q")
    commit(tmp_path, "lib/a.S", "a\n", "a")
    commit(tmp_path, "lib/b.S", "b\n", "b")
    repo = Repo(str(tmp_path))
    assert [c.subject for c in repo.changes("lib/a.S", "HEAD")] == ["a"]
    assert repo.changes("lib/*.S", "HEAD") == []
    assert repo.changes(":(glob)lib/*.S", "HEAD") == []
    assert repo.blob("HEAD", "lib/*.S") is None


def test_a_directory_named_like_the_file_is_refused_not_checked(tmp_path: Path) -> None:
    """A directory x.S: git log -- x.S lists the files under it, and their contents were
    checked as x.S; it is refused in one line (exit 2), and a symbolic link too."""
    from conftest import run_cli

    git(tmp_path, "init", "-q")
    commit(tmp_path, "x.S/inner.S", "inner\n", "a file under a directory x.S")
    repo = Repo(str(tmp_path))
    assert repo.entry("HEAD", "x.S") == "directory" and repo.changes("x.S", "HEAD") == []
    (tmp_path / "link.S").symlink_to("x.S/inner.S")
    git(tmp_path, "add", "link.S")
    git(tmp_path, "commit", "-q", "-m", "a link")
    assert repo.entry("HEAD", "link.S") == "symlink" and repo.entry("HEAD", "x.S/inner.S") == "file"
    assert repo.entry("HEAD", "nothing.S") is None
    for name, what in (("x.S", "a directory"), ("link.S", "a symlink")):
        proc = run_cli("history", str(tmp_path), "--file", name, "--symbol", "f:copy", "--arch", "riscv")
        assert proc.returncode == 2 and f"--file {name}: {what} at HEAD" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_killed_runs_private_directories_are_removed_by_the_next(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A SIGKILLed history left /tmp/copyfuzz-history-* behind for good (issue 26, point 7):
    the next run removes those whose writer is gone, and never a live run's."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = tmp_path / f"copyfuzz-history-{dead.pid}-abcd"
    (left / "src").mkdir(parents=True)
    live = tmp_path / f"copyfuzz-history-{os.getppid()}-efgh"
    live.mkdir()
    other = tmp_path / f"copyfuzz-historyX-{dead.pid}-ijkl"
    other.mkdir()
    fresh = atomic.private_tmpdir("copyfuzz-history-")
    assert fresh.parent == tmp_path and fresh.name.startswith(f"copyfuzz-history-{os.getpid()}-")
    assert not left.exists() and live.exists() and other.exists()


def test_an_include_is_found_where_check_finds_it_and_none_is_left_out(tmp_path: Path) -> None:
    """An include of an included file is looked for beside it, then beside the file itself
    (check's -I of the file's directory): `lib/inc/x.h` including "y.h" of `lib/` built in
    check but not in any history row. And there is no limit: 260 includes all come (256
    did before, and the rest were silently left out)."""
    git(tmp_path, "init", "-q")
    commit(tmp_path, "lib/y.h", "y\n", "y")
    commit(tmp_path, "lib/inc/x.h", '#include "y.h"\n', "x")
    for i in range(260):
        (tmp_path / "lib" / f"h{i}.h").write_text(f"h{i}\n")
    text = '#include "inc/x.h"\n' + "".join(f'#include "h{i}.h"\n' for i in range(260))
    git(tmp_path, "add", "-A")
    commit(tmp_path, "lib/a.S", text, "a")
    sources = Repo(str(tmp_path)).sources("HEAD", "lib/a.S")
    assert {"lib/a.S", "lib/inc/x.h", "lib/y.h"} <= set(sources)
    assert all(f"lib/h{i}.h" in sources for i in range(260)) and len(sources) == 263


@pytest.mark.parametrize("relative", ["false", "true"])
def test_a_subdirectory_as_repo_and_diff_relative(tmp_path: Path, relative: str) -> None:
    """REPO inside the work tree: git printed some paths from the top and read others from
    REPO, so a file was 'not a file' at its own commit; diff.relative=true changed what
    git log prints. Everything is from the top now, --file from REPO."""
    git(tmp_path, "init", "-q")
    git(tmp_path, "config", "diff.relative", relative)
    commit(tmp_path, "lib/u.S", "one\n", "first")
    commit(tmp_path, "lib/u.S", "two\n", "second")
    repo = Repo(str(tmp_path / "lib"))
    path = repo.in_repo("u.S")
    assert path == "lib/u.S" and Path(repo.path).resolve() == tmp_path.resolve()
    changes = repo.changes(path, "HEAD")
    assert [(c.subject, c.path) for c in changes] == [("first", "lib/u.S"), ("second", "lib/u.S")]
    assert repo.blob("HEAD", path) is not None and repo.entry("HEAD", path) == "file"
    assert repo.read(repo.blob("HEAD", path) or "") == b"two\n"
