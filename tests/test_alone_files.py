"""`make check` runs the tests marked `alone` after the others: the first run lists the
files that hold them (--alone-files-out, tests/conftest.py), and the second collects only
those files (--alone-files-in). No session a test starts takes the options over."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def new_session_env() -> dict[str, str]:
    """This environment, but for what makes a session an xdist worker or gives it limits."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST_", "COPYFUZZ_TEST_"))}


def session(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**new_session_env(), "PYTHONPATH": str(Path(__file__).parent)})


def test_the_first_run_lists_the_alone_files_and_the_second_collects_only_those(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    alone: by itself\n")
    imported = tmp_path / "imported"
    imported.mkdir()
    head = "import pathlib\nimport pytest\npathlib.Path({!r}, __name__).touch()\n\n\n"
    files = {"test_a.py": "@pytest.mark.alone\ndef test_x():\n    pass\n\n\ndef test_y():\n    pass\n",
             "test_b.py": "def test_z():\n    pass\n",
             "test_c d.py": "pytestmark = pytest.mark.alone\n\n\n"  # a space in its name
                          "@pytest.mark.parametrize('n', [1, 2])\ndef test_w(n):\n    pass\n"}
    for name, body in files.items():
        (tmp_path / name).write_text(head.format(str(imported)) + body)
    listed = tmp_path / "alone-files"

    first = session(tmp_path, "-m", "not alone", "-n", "2", f"--alone-files-out={listed}")
    assert first.returncode == 0 and "2 passed" in first.stdout, first.stdout + first.stderr
    assert listed.read_text() == "test_a.py\ntest_c d.py\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("alone-files.")]

    for module in imported.iterdir():
        module.unlink()
    second = session(tmp_path, "-m", "alone", f"--alone-files-in={listed}")
    assert second.returncode == 0 and "3 passed" in second.stdout, second.stdout + second.stderr
    assert sorted(p.name for p in imported.iterdir()) == ["test_a", "test_c d"]  # test_b.py was not collected

    # No list, or an empty one: everything is collected, as without the option.
    for content in (None, ""):
        listed.unlink(missing_ok=True)
        if content is not None:
            listed.write_text(content)
        every = session(tmp_path, "-m", "alone", f"--alone-files-in={listed}")
        assert every.returncode == 0 and "3 passed, 2 deselected" in every.stdout, every.stdout + every.stderr

    # A list that cannot be written (its directory is a file): the run goes on.
    unwritable = session(tmp_path, "-m", "not alone", f"--alone-files-out={tmp_path / 'test_b.py' / 'list'}")
    assert unwritable.returncode == 0 and "2 passed" in unwritable.stdout, unwritable.stdout + unwritable.stderr


def test_in_this_suite_a_file_not_listed_is_not_collected_in_either_directory(tmp_path: Path) -> None:
    """The filter is a plugin: a hook of tests/conftest.py would see tests/ only, not fuzz/."""
    listed = tmp_path / "alone-files"
    listed.write_text("tests/test_alone_files.py\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only",
                          f"--alone-files-in={listed}"], cwd=ROOT, env=new_session_env(), capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    collected = {line.split("::")[0] for line in run.stdout.splitlines() if "::" in line}
    assert collected == {"tests/test_alone_files.py"}, collected
