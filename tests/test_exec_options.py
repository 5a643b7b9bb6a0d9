"""The executor's options are one table (harness/exec_options.h): the executor parses by
it, and the tool's execopts reads it. Every row is an option the executor takes, with the
value its row says; nothing else is."""

from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT
from copyfuzz import build, execopts, paths

pytestmark = pytest.mark.e2e

VALUES = {"NUM": "1", "WORD": None, "FLAG": None}
WORDS = {"granule": "16", "shard": "0/2", "profile": "exact"}


def executor(*args: str) -> subprocess.CompletedProcess[str]:
    elf = paths.executor(ROOT, "riscv/copy_user", 64)
    runner = [] if build.native(64, "riscv") else build.qemu_command(64, "riscv")
    return subprocess.run([*runner, str(elf), "info", *args], capture_output=True, text=True, timeout=60)


def test_the_executor_takes_every_option_of_the_table_as_its_row_says() -> None:
    for name, arg in execopts.ARGS.items():
        value = WORDS[name] if arg == "WORD" else VALUES[arg]
        proc = executor(*execopts.opt(name, value))
        assert proc.returncode == 0, (name, proc.stderr)
    assert set(WORDS) == {n for n, a in execopts.ARGS.items() if a == "WORD"}


@pytest.mark.parametrize("args, why", [(["--no-such-option"], "unknown option"),
                                       (["--max-len"], "--max-len needs a number"),
                                       (["--granule", "8"], "--granule takes 16"),
                                       (["--profile", "loose"], "--profile takes linux or exact")])
def test_anything_else_is_refused_with_its_reason(args: list[str], why: str) -> None:
    proc = executor(*args)
    assert proc.returncode == 2 and proc.stderr.startswith(f"copyfuzz executor: {why}\nusage:"), proc.stderr


def test_the_tool_spells_only_options_of_the_table() -> None:
    with pytest.raises(KeyError):
        execopts.opt("max-length", 1)
    with pytest.raises(ValueError):
        execopts.opt("bare", 1)
    with pytest.raises(ValueError):
        execopts.opt("max-len")
