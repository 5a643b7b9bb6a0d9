"""O= moves every build, for make and for the tool alike (copyfuzz/paths.py).

`make O=DIR` builds under DIR; `O=DIR ./copyfuzz ...` finds (and builds) everything there
and never reads or writes build/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, budget, run_cli, source_copy
from copyfuzz import paths
from copyfuzz.routines import discover

pytestmark = pytest.mark.e2e

NEW = ROOT / "tests" / "fixtures" / "kernel" / "uaccess_new.S"


@pytest.mark.parametrize("o, elf", [
    ("out/x", "out/x/riscv64/riscv/copy_user.elf"),
    ("/abs/o", "/abs/o/riscv64/riscv/copy_user.elf"),
])
def test_executors_and_make_follow_O(monkeypatch: pytest.MonkeyPatch, o: str, elf: str) -> None:
    monkeypatch.setenv("O", o)
    cu = next(r for r in discover(ROOT) if r.name == "riscv/copy_user")
    assert cu.elf == elf
    assert ROOT / cu.elf == paths.executor(ROOT, "riscv/copy_user", 64)
    assert paths.make_vars(ROOT) == [f"O={o}"]  # as the targets are named: make runs at the root
    assert paths.plugin(ROOT) == (ROOT / o / "host" / "cfplugin.so")


@pytest.mark.long  # 17 s: a whole build from nothing in a copy (the fresh clone's `make check` builds too)
def test_make_O_then_the_tool_with_the_same_O_never_touches_build(tmp_path: Path) -> None:
    """In a copy of the sources with no build/ (the checkout's own build/ is the other
    test worker's to write): after `make O=o`, the tool with the same O builds and finds
    everything there, and build/ never appears."""
    src = source_copy(tmp_path / "src")
    build = src / "build"
    o = tmp_path / "o"
    env = {k: v for k, v in os.environ.items() if k != "O"}
    subprocess.run(["make", "-s", f"O={o}", "all"], cwd=src, env=env, check=True, capture_output=True)
    at_src = {"O": str(o), "PYTHONPATH": str(src / "tool")}

    sweep = run_cli("sweep", "riscv/copy_user", "--max-len", "16", "--jobs", "1",
                    "--findings", str(tmp_path / "f"), env=at_src, cwd=src)
    assert sweep.returncode == 0, sweep.stderr
    check = run_cli("check", str(src / NEW.relative_to(ROOT)), "--symbol", "__asm_copy_to_user", "--max-len", "8",
                    "--jobs", "1", "--findings", str(tmp_path / "f"), env=at_src, cwd=src)
    assert check.returncode == 0, check.stderr
    assert list((o / "riscv64" / "check").glob("uaccess_new-__asm_copy_to_user-*.elf"))
    memcheck = run_cli("repro", "riscv/copy_user:n=3", "--memcheck", env=at_src, cwd=src)  # the plugin, under O
    assert memcheck.returncode == 0, memcheck.stderr
    for engine in ("libfuzzer", "afl"):  # the fuzz targets, under O
        fuzz = run_cli("fuzz", "riscv/copy_user", "--engine", engine, "--time", budget(3),
                       "--corpus", str(tmp_path / "c"),
                       "--findings", str(tmp_path / engine), "--regressions", str(tmp_path / "r"), "--json",
                       env=at_src, cwd=src, timeout=300)
        assert fuzz.returncode == 0, fuzz.stderr[-2000:]
        assert json.loads(fuzz.stdout)["executions"] > 0

    listing = subprocess.run([sys.executable, str(src / "ci" / "routines.py"), "routines", "riscv/copy_user"],
                             env={**env, **at_src}, check=True, capture_output=True, text=True).stdout
    assert listing.rstrip("\n").split("\t")[-1] == str(o / "riscv64" / "riscv" / "copy_user.elf")
    host = subprocess.run([sys.executable, str(src / "ci" / "routines.py"), "paths"],
                          env={**env, **at_src}, check=True, capture_output=True, text=True).stdout
    assert host.split("\t")[0] == str(o / "host" / "cfplugin.so")
    assert not build.exists(), "build/ was created"


def test_reading_the_makefile_starts_no_process(tmp_path: Path) -> None:
    """The tool runs make before every command to check its build: reading the Makefile
    must start nothing (each routine's metadata read at parse time was about 300
    processes per make, a third of the test suite's process starts). -q: no recipe runs;
    make's $(shell ...) runs through SHELL, which logs here. The goal is the Makefile itself
    (no rule, always up to date): with `all`, a routine the other pytest worker was
    building at that moment was out of date, and make -q expanded its recipe, whose
    metadata is read at run time by design."""
    log = tmp_path / "started"
    shell = tmp_path / "sh"
    shell.write_text(f'#!/bin/sh\necho "$*" >>{log}\nexec /bin/sh "$@"\n')
    shell.chmod(0o755)
    for xlen in ("64", "32"):
        subprocess.run(["make", "-s", "-q", *paths.make_vars(ROOT), f"XLEN={xlen}", f"SHELL={shell}", "Makefile"],
                       cwd=ROOT, capture_output=True)
    assert not log.exists(), log.read_text()
