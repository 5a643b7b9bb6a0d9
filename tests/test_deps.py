"""scripts/deps.sh, which ./copyfuzz runs before every command: it asks dpkg about the
packages only when dpkg's database changed since they were all there, and never records
a check that found something missing.

Runs a copy of the script in a scratch root with fake dpkg-query and apt-get first on
PATH (logging their calls); the venv step is satisfied by a linked .venv and its stamp.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

STAMP = ".venv/.packages.stamp"


def scratch(tmp_path: Path, installed: bool = True) -> tuple[Path, Path]:
    root = tmp_path / "root"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "deps.sh", root / "scripts" / "deps.sh")
    shutil.copy(ROOT / "requirements.txt", root / "requirements.txt")
    (root / ".venv" / "bin").mkdir(parents=True)
    python = root / ".venv" / "bin" / "python"  # only looked at (-x), never run here
    python.write_text("#!/bin/sh\nexit 1\n")
    python.chmod(0o755)
    shutil.copy(ROOT / "requirements.txt", root / ".venv" / ".requirements.stamp")
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "calls"
    status = "install ok installed" if installed else "deinstall ok config-files"
    (fake / "dpkg-query").write_text(f"#!/bin/sh\necho \"dpkg-query $*\" >>{log}\nprintf '{status}'\n")
    (fake / "apt-get").write_text(f"#!/bin/sh\necho \"apt-get $*\" >>{log}\nexit 100\n")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    return root, log


def deps(root: Path, log: Path) -> tuple[int, list[str]]:
    log.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{log.parent / 'bin'}:{os.environ['PATH']}"}
    proc = subprocess.run(["sh", str(root / "scripts" / "deps.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    return proc.returncode, log.read_text().splitlines() if log.exists() else []


def test_packages_are_asked_about_once_until_dpkg_changes(tmp_path: Path) -> None:
    root, log = scratch(tmp_path)
    rc, calls = deps(root, log)
    assert rc == 0 and len(calls) > 10 and all(c.startswith("dpkg-query -W") for c in calls), calls
    assert (root / STAMP).is_file()
    assert deps(root, log) == (0, [])  # nothing changed: not asked again
    # dpkg's database written after the check (a package removed, say): asked again
    os.utime(root / STAMP, (0, 0))
    rc, calls = deps(root, log)
    assert rc == 0 and calls
    # another package list than the one checked: asked again
    (root / STAMP).write_text("make\n")
    rc, calls = deps(root, log)
    assert rc == 0 and calls
    assert deps(root, log) == (0, [])


def test_a_check_that_found_a_package_missing_is_not_recorded(tmp_path: Path) -> None:
    root, log = scratch(tmp_path, installed=False)
    rc, calls = deps(root, log)
    assert rc != 0  # as root apt-get was run (and failed here); else exit 2, saying what to install
    assert os.geteuid() != 0 or any(c.startswith("apt-get") for c in calls), calls
    assert not (root / STAMP).exists()
    rc, calls = deps(root, log)
    assert rc != 0 and any(c.startswith("dpkg-query") for c in calls)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_a_user_who_cannot_write_the_stamp_still_runs(tmp_path: Path) -> None:
    """All packages there, dpkg's database newer than the stamp, and .venv root's: the
    check runs again, the stamp stays as it was, and the command goes on (exit 0)."""
    top = Path(tempfile.mkdtemp(prefix="copyfuzz-deps-"))  # pytest's own tmp is root's alone
    try:
        top.chmod(0o755)
        root, log = scratch(top)
        assert deps(root, log)[0] == 0
        os.utime(root / STAMP, (0, 0))
        (root / ".venv").chmod(0o555)
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh",
                               str(root / "scripts" / "deps.sh")],
                              env={**os.environ, "PATH": f"{top / 'bin'}:{os.environ['PATH']}"},
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert (root / STAMP).stat().st_mtime == 0
    finally:
        shutil.rmtree(top)
