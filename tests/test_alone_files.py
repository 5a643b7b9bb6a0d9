"""`make check` runs the tests marked `alone` after the others: the first run lists the
files that hold them (COPYFUZZ_TEST_ALONE_FILES, tests/conftest.py), and the second
collects only those files."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ALONE_FILES


def session(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST_", "COPYFUZZ_TEST_"))}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**base, "PYTHONPATH": str(Path(__file__).parent), **env})


def test_the_first_run_lists_the_alone_files_and_the_second_collects_only_those(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    alone: by itself\n")
    imported = tmp_path / "imported"
    imported.mkdir()
    head = "import pathlib\nimport pytest\npathlib.Path({!r}, __name__).touch()\n\n\n"
    (tmp_path / "test_a.py").write_text(head.format(str(imported)) +
                                        "@pytest.mark.alone\ndef test_x():\n    pass\n\n\ndef test_y():\n    pass\n")
    (tmp_path / "test_b.py").write_text(head.format(str(imported)) + "def test_z():\n    pass\n")
    (tmp_path / "test_c.py").write_text(head.format(str(imported)) + "pytestmark = pytest.mark.alone\n\n\n"
                                        "@pytest.mark.parametrize('n', [1, 2])\ndef test_w(n):\n    pass\n")
    listed = tmp_path / "alone-files"
    env = {ALONE_FILES: str(listed)}

    first = session(tmp_path, "-m", "not alone", "-n", "2", env=env)
    assert first.returncode == 0 and "2 passed" in first.stdout, first.stdout + first.stderr
    assert listed.read_text() == "test_a.py\ntest_c.py\n"

    for module in imported.iterdir():
        module.unlink()
    second = session(tmp_path, "-m", "alone", *listed.read_text().split(), env=env)
    assert second.returncode == 0 and "3 passed" in second.stdout, second.stdout + second.stderr
    assert sorted(p.name for p in imported.iterdir()) == ["test_a", "test_c"]  # test_b.py was not collected
    assert listed.read_text() == "test_a.py\ntest_c.py\n"
