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
import sys
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


def run_deps(root: Path, log: Path, *words: str) -> subprocess.CompletedProcess[str]:
    log.unlink(missing_ok=True)
    env = {**os.environ, "PATH": f"{log.parent / 'bin'}:{os.environ['PATH']}"}
    return subprocess.run(["sh", str(root / "scripts" / "deps.sh"), *words], env=env, capture_output=True,
                          text=True, timeout=60)


def deps(root: Path, log: Path, *words: str) -> tuple[int, list[str]]:
    proc = run_deps(root, log, *words)
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


def fake_python(log: Path, pip: str, uv_works: bool = True) -> str:
    """A venv's python that logs its calls; `-m pip` or pip run from a wheel installs a
    logging uv when asked for uv's pin. pip: "own" (the venv has pip), "wheel" (it has
    not; the interpreter's ensurepip wheel is found), "broken" (found, but pip from it
    fails) or "ensurepip" (no wheel found)."""
    uv = log.parent / "root" / ".venv" / "bin" / "uv"
    wheel = "/bundled/pip-1-py3-none-any.whl" if pip in ("wheel", "broken") else ""
    return (f"#!/bin/sh\n"
            f"case \"$*\" in '-c import pip') exit {0 if pip == 'own' else 1};; '-c import ensurepip'*) "
            f"echo '{wheel}'; exit 0;; esac\n"
            + (f"case \"$*\" in /bundled/*) echo \"python $*\" >>{log}; exit 1;; esac\n" if pip == "broken" else "") +
            f"echo \"python $*\" >>{log}\ncase \"$*\" in *uv==*) "
            f"printf '#!/bin/sh\\necho \"uv $*\" >>{log}\\nexit {0 if uv_works else 1}\\n' >{uv}; "
            f"chmod +x {uv};; esac\n")


@pytest.mark.parametrize(("pip", "uv_works"), [("own", True), ("own", False), ("wheel", True),
                                               ("wheel", False), ("ensurepip", True), ("broken", True)])
def test_the_venv_is_installed_by_uv_or_else_by_pip(tmp_path: Path, pip: str, uv_works: bool) -> None:
    """A venv whose stamp is not requirements.txt: pip installs only uv's pin, uv the
    pins; when uv fails, pip installs the pins and says why it does. pip is the venv's
    own, else run from ensurepip's wheel (not installed), else installed by ensurepip."""
    root, log = scratch(tmp_path)
    (root / ".venv" / ".requirements.stamp").unlink()
    (root / ".venv" / "bin" / "python").write_text(fake_python(log, pip, uv_works))
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    proc = subprocess.run(["sh", str(root / "scripts" / "deps.sh")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    calls = [c for c in log.read_text().splitlines() if not c.startswith("dpkg-query")]
    if pip == "broken":  # tried, then ensurepip's pip
        assert calls[0].startswith("python /bundled/pip-1-py3-none-any.whl/pip install"), calls
        calls = calls[1:]
    if pip in ("ensurepip", "broken"):
        assert calls[0] == "python -m ensurepip", calls
        calls = calls[1:]
    pip_run = "python /bundled/pip-1-py3-none-any.whl/pip" if pip == "wheel" else "python -m pip"
    pin = next(line for line in (ROOT / "requirements.txt").read_text().split() if line.startswith("uv=="))
    assert calls[0].startswith(f"{pip_run} install") and calls[0].endswith(f" {pin}"), calls
    assert calls[1] == "uv pip install -q --system-certs --python .venv/bin/python -r requirements.txt", calls
    if uv_works:
        assert len(calls) == 2 and "pip" not in proc.stderr, (calls, proc.stderr)
    else:
        assert calls[2:] == [f"{pip_run} install -q --disable-pip-version-check -r requirements.txt"], calls
        assert "copyfuzz: uv could not install the pins; installing them with pip" in proc.stderr
    assert (root / ".venv" / ".requirements.stamp").read_bytes() == (root / "requirements.txt").read_bytes()


def test_a_new_venv_has_no_pip_installed_and_finds_the_wheel_of_this_python(tmp_path: Path) -> None:
    """`python3 -m venv --without-pip`, then deps.sh's way to ensurepip's wheel, with this
    machine's Python: a file that runs as pip."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True, timeout=120)
    python = tmp_path / "v" / "bin" / "python"
    assert subprocess.run([python, "-c", "import pip"], capture_output=True).returncode != 0
    text = (ROOT / "scripts" / "deps.sh").read_text()
    snippet = text.split("BUNDLED_PIP='", 1)[1].split("'", 1)[0]
    wheel = subprocess.run([python, "-c", snippet], capture_output=True, text=True, check=True).stdout.strip()
    assert Path(wheel).is_file() and Path(wheel).name.startswith("pip-"), wheel
    version = subprocess.run([python, f"{wheel}/pip", "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and version.stdout.startswith("pip "), version


def test_packages_and_venv_take_one_step_each(tmp_path: Path) -> None:
    """`make check` runs `deps.sh packages` before the builds and `deps.sh venv` beside
    them: the one asks dpkg and never sets up the venv, the other the reverse."""
    root, log = scratch(tmp_path, installed=False)
    (root / ".venv" / ".requirements.stamp").unlink()  # the venv step runs pip
    (root / ".venv" / "bin" / "python").write_text(fake_python(log, "own"))
    rc, calls = deps(root, log, "packages")
    assert rc != 0 and calls and not any(c.startswith("python") for c in calls), calls
    rc, calls = deps(root, log, "venv")  # packages missing, but not asked about
    assert rc == 0 and not any(c.startswith(("dpkg-query", "apt-get")) for c in calls), calls
    assert any(c.startswith("python -m pip") for c in calls), calls
    rc, calls = deps(root, log, "packages", "venv")  # both named: both taken
    assert rc != 0 and any(c.startswith("dpkg-query") for c in calls), calls
    proc = run_deps(root, log, "everything")
    assert (proc.returncode, proc.stderr) == (2, "deps.sh: unknown word 'everything' "
                                                 "(expected kernel, packages or venv)\n")
