"""harness/link-executor.sh keeps the harness object's global names beside it
(`<harness>.globals`) for its check of undefined references; what it kept is used only
while it belongs to that very object: its device, inode, size and times."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT
from copyfuzz import build, paths

pytestmark = pytest.mark.e2e

FIXTURE = ROOT / "tests" / "fixtures" / "outside" / "needs_defsym.S"  # takes cf_word_min from the link


def _link(harness: Path, out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "harness/link-executor.sh", "--", str(harness), str(FIXTURE), str(out), "nd",
                           "cf_defsym_memcpy", "memcpy"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_harness_names_kept_follow_the_harness_object(tmp_path: Path) -> None:
    env = build.link_env(ROOT, 64, "riscv")
    harness = tmp_path / "harness.o"
    shutil.copyfile(paths.harness_object(ROOT, 64, "riscv"), harness)
    kept = tmp_path / "harness.o.globals"

    refused = _link(harness, tmp_path / "a.elf", env)
    assert refused.returncode == 3 and "undefined symbols: cf_word_min:" in refused.stderr
    assert kept.is_file() and "cf_word_min" not in kept.read_text()
    assert "cf_extable_lookup" in kept.read_text().split("\n")  # a name the harness defines
    assert _link(harness, tmp_path / "a.elf", env).returncode == 3  # from what was kept

    # Another harness object in its place, one that defines the name, copied there with
    # the first one's times (as cp -p or rsync -a would): what was kept is not used for it.
    objcopy = env["CF_LINK_OBJCOPY"].split()
    subprocess.run([*objcopy, "--add-symbol", "cf_word_min=16,global", str(harness), str(tmp_path / "new.o")],
                   check=True)
    times = harness.stat()
    shutil.copyfile(tmp_path / "new.o", harness)
    os.utime(harness, ns=(times.st_atime_ns, times.st_mtime_ns))
    linked = _link(harness, tmp_path / "b.elf", env)
    assert linked.returncode == 0, linked.stderr
    assert "cf_word_min" in kept.read_text().split("\n")

    # A list without the object's identity is not trusted.
    kept.write_text("cf_extable_lookup\n")
    assert _link(harness, tmp_path / "c.elf", env).returncode == 0
    assert "cf_word_min" in kept.read_text().split("\n")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("harness.o.globals.")]
