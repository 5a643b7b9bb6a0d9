"""Any number of copyfuzz runs at once build what they need and all succeed.

Every build step writes under a name of its own and renames its output into place
(Makefile's $(TMP), harness/link-executor.sh's directory beside the executor), so runs
racing to build one executor, or the harness under it from an empty build directory,
never read, link or delete each other's half-written files.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TOOL

pytestmark = pytest.mark.e2e

FIXTURE = ROOT / "tests" / "fixtures" / "kernel" / "uaccess_new.S"
RUNS = 4


def _at_once(argvs: list[list[str]], build_dir: Path, cwd: Path) -> list[subprocess.CompletedProcess[str]]:
    """Start every `copyfuzz ARGV` before waiting for any, all with O=build_dir."""
    env = {**os.environ, "PYTHONPATH": str(TOOL), "O": str(build_dir)}
    procs = [subprocess.Popen([sys.executable, "-m", "copyfuzz", *argv], env=env, cwd=cwd, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for argv in argvs]
    out = []
    for argv, p in zip(argvs, procs, strict=True):
        stdout, stderr = p.communicate(timeout=600)
        out.append(subprocess.CompletedProcess(argv, p.returncode, stdout, stderr))
    return out


def _all_succeeded(runs: list[subprocess.CompletedProcess[str]], build_dir: Path) -> None:
    for r in runs:
        assert r.returncode == 0, r.stderr
    leftovers = [p for p in build_dir.rglob("*") if p.name.startswith(".link.") or p.name.endswith(".tmp")]
    assert not leftovers, leftovers


def _check(path: Path, findings: Path) -> list[str]:
    # --max-len 0: each run still audits its executor and runs it (some 2,200 cases of n=0),
    # both of which a half-written executor fails; longer cases only cost time (0.6 s a run).
    return ["check", str(path), "--symbol", "__asm_copy_to_user", "--max-len", "0", "--jobs", "1",
            "--findings", str(findings)]


@pytest.fixture(scope="module")
def harness_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A build directory with the harness and the host libraries built, and no executor:
    for the tests of races on executors. The harness's own race, from an empty build
    directory, is test_concurrent_checks_of_one_file_from_an_empty_build_dir's; four more
    runs building it in each other test cost most of their CPU time."""
    tmp = tmp_path_factory.mktemp("harness")
    build_dir = tmp / "o"
    _all_succeeded(_at_once([_check(FIXTURE, tmp / "f")], build_dir, tmp), build_dir)
    shutil.rmtree(build_dir / "riscv64" / "check")
    return build_dir


def _copy(build_dir: Path, dest: Path) -> Path:
    """A build directory of a test's own, as build_dir is (copy2 keeps the times: make finds
    the harness up to date)."""
    return Path(shutil.copytree(build_dir, dest))


def test_concurrent_checks_of_one_file_from_an_empty_build_dir(tmp_path: Path) -> None:
    build_dir = tmp_path / "o"  # as after `make clean`: the harness is built by whoever comes first
    _all_succeeded(_at_once([_check(FIXTURE, tmp_path / f"f{i}") for i in range(RUNS)], build_dir, tmp_path),
                   build_dir)
    # (The race on the executors' links alone, the harness built: the next test.)
    assert len(list((build_dir / "riscv64" / "check").glob("*.elf"))) == 1


def test_concurrent_checks_of_files_with_one_name(tmp_path: Path, harness_built: Path) -> None:
    copies = []
    for i in range(RUNS):
        copy = tmp_path / f"d{i}" / FIXTURE.name
        copy.parent.mkdir()
        copy.write_bytes(FIXTURE.read_bytes())
        copies.append(copy)
    build_dir = _copy(harness_built, tmp_path / "o")  # the runs race on their executors' links alone
    _all_succeeded(_at_once([_check(c, tmp_path / f"f{i}") for i, c in enumerate(copies)], build_dir, tmp_path),
                   build_dir)
    assert len(list((build_dir / "riscv64" / "check").glob("*.elf"))) == RUNS  # one executor each


def test_concurrent_sweeps_build_bundled_routines_through_make(tmp_path: Path, harness_built: Path) -> None:
    build_dir = _copy(harness_built, tmp_path / "o")  # the makes race on the routines' links
    assert not (build_dir / "riscv64" / "riscv").exists()
    argv = ["sweep", "riscv/copy_user", "riscv/clear_user", "--max-len", "4", "--jobs", "1", "--no-audit"]
    _all_succeeded(_at_once([[*argv, "--findings", str(tmp_path / f"f{i}")] for i in range(RUNS)],
                            build_dir, tmp_path), build_dir)
    assert (build_dir / "riscv64" / "riscv" / "copy_user.elf").is_file()  # built there, by these runs
