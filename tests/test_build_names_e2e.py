"""File names are data: a checked file's path never reaches make's parser or a shell.

`copyfuzz check` links files from outside the tree with harness/link-executor.sh, every
name one argument. A name that make would expand ($(shell ...)) or a shell would run
(`...`, $(...), ;) must build and check like any other, and nothing in it may run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

FIXTURE = ROOT / "tests" / "fixtures" / "kernel" / "uaccess_new.S"
SYMBOL = "__asm_copy_to_user"


# Trees no command here runs in, and too large to walk for every test: the booted-kernel
# tier's kernel builds (380,000 files after `make check-kernel`: 2 s a walk), the venv.
UNTOUCHED = (ROOT / "build" / "kernel", ROOT / ".venv", ROOT / ".git")


def _no_canary(*dirs: Path) -> None:
    for d in dirs:
        hits = []
        for top, subdirs, files in os.walk(d):
            subdirs[:] = [s for s in subdirs if Path(top, s) not in UNTOUCHED]
            hits += [Path(top, f) for f in files + subdirs if f.startswith("PWNED")]
        assert not hits, f"a file name was run as a command: {hits}"


@pytest.mark.parametrize("rel", [
    "x$(shell touch PWNED)y.S",                 # make's function syntax
    "a b.S",                                   # a space: make splits words on it
    "q'\"d/u.S",                               # quotes in a directory name
    "n\nl/u.S",                                # a newline in a directory name
    "$(touch PWNED2)`touch PWNED3`;d/-u;x.S",   # shell substitutions, a separator, a leading '-'
    "#c%d:e=f\\g/h.S",                        # make's comment, pattern, rule and escape characters
], ids=["make-shell", "space", "quotes", "newline", "shell-subst", "make-specials"])
def test_any_file_name_builds_and_checks_and_nothing_runs(tmp_path: Path, rel: str) -> None:
    src = tmp_path / "src" / rel
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_bytes(FIXTURE.read_bytes())
    proc = run_cli("check", str(src), "--symbol", SYMBOL, "--max-len", "8", "--jobs", "1", "--json",
                   "--findings", str(tmp_path / "findings"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["routines"]
    assert [r["name"] for r in report] == [f"{src}:{SYMBOL}"]
    assert report[0]["cases"] > 0 and report[0]["findings"] == {}
    _no_canary(tmp_path, ROOT)


def test_defines_are_passed_as_they_are_never_run(tmp_path: Path) -> None:
    """A -D value is the preprocessor's, as one argument: make never sees it."""
    proc = run_cli("check", str(FIXTURE), "--symbol", SYMBOL, "--max-len", "4", "--jobs", "1", "--json",
                   "-D", "CF_UNUSED=$(shell touch PWNED) `touch PWNED4` $$(touch PWNED5)",
                   "--findings", str(tmp_path / "findings"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    _no_canary(tmp_path, ROOT)


@pytest.mark.parametrize("o", ["/tmp/copyfuzz o", "/tmp/$(shell touch PWNED)", "/tmp/a:b"])
def test_a_build_directory_make_cannot_take_is_refused_in_one_line(tmp_path: Path, o: str) -> None:
    proc = run_cli("sweep", "riscv/copy_user", "--max-len", "1", "--jobs", "1", env={"O": o}, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "make cannot take this build directory" in proc.stderr
    assert not Path(o).exists()
    _no_canary(tmp_path, ROOT)
