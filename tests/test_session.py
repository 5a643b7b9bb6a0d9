"""session.Session against the fake executor: the one rule for the plugin, closing, rejected cases."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from copyfuzz import build, paths, records, session
from copyfuzz.errors import CopyfuzzError
from copyfuzz.executor import ExecutorError
from copyfuzz.routines import Routine
from copyfuzz.session import Need, Session

FAKE = str(Path(__file__).parent / "fake_executor.py")
ROUTINE = Routine(name="riscv/x", path=Path("arch/riscv/x.S"), symbol="f", kind="copy", profile="exact",
                  arch="riscv")


@pytest.fixture
def qemu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A routine under "QEMU" (the fake executor, which takes -plugin as QEMU would), a
    plugin file to name, and where the fake writes its arguments: the root."""
    monkeypatch.setattr(build, "routine_prefix", lambda r: [sys.executable, FAKE])
    monkeypatch.setattr(build, "routine_native", lambda r: False)
    monkeypatch.setenv("FAKE_ARGV_FILE", str(tmp_path / "argv.json"))
    so = paths.plugin(tmp_path)
    so.parent.mkdir(parents=True)
    so.write_bytes(b"")
    return tmp_path


def _started(root: Path) -> dict[str, Any]:
    started: dict[str, Any] = json.loads((root / "argv.json").read_text())
    return started


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_session_runs_cases_and_says_when_the_executor_rejects_one(qemu: Path) -> None:
    with Session(qemu, ROUTINE, timeout_ms=700, granule=16) as s:
        assert s.plugin is None
        r = s.run(records.Case(kind=0, profile=1, id=1, n=3, src_off=0, dst_off=0))
        assert s.accepted(r) is r and r.class_list == ["wrong-data"]
        rejected = s.run(records.Case(kind=0, profile=0, id=2, n=4, src_off=0, dst_off=0, magic=0))
        with pytest.raises(CopyfuzzError, match=r"^n=4: the executor rejected the case: "):
            s.accepted(rejected, "n=4: ")
    started = _started(qemu)
    assert started["plugin"] is None and started["argv"][0] == str(qemu / ROUTINE.elf)
    assert started["argv"][1] == "serve" and "--plugin-fd" not in started["argv"]
    assert started["argv"][started["argv"].index("--granule") + 1] == "16"
    assert started["argv"][started["argv"].index("--timeout-ms") + 1] == "700"


@pytest.mark.parametrize("need", [Need.COVERAGE, Need.MEMCHECK])
def test_the_plugin_goes_to_qemu_and_the_executor_and_is_closed_with_the_session(qemu: Path, need: Need) -> None:
    before = _open_fds()
    with Session(qemu, ROUTINE, need) as s:
        assert s.plugin is not None
        fd = s.plugin.fd
        s.run(records.Case(kind=0, profile=0, id=1, n=1, src_off=0, dst_off=0))
    started = _started(qemu)
    assert started["plugin"] == f"{paths.plugin(qemu)},fd={fd}" and started["plugin_fd_open"]
    argv = started["argv"]
    assert argv[argv.index("--plugin-fd") + 1] == str(fd)
    assert ("--plugin-coverage-only" in argv) == (need is Need.COVERAGE)
    assert s.plugin is None and _open_fds() == before  # the memfd, the channel: all closed


def test_natively_a_need_for_the_plugin_is_refused_unless_optional(qemu: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "routine_native", lambda r: True)
    before = _open_fds()
    with pytest.raises(CopyfuzzError, match="need QEMU: the plugin is a QEMU TCG plugin"):
        Session(qemu, ROUTINE, Need.MEMCHECK)
    assert not (qemu / "argv.json").exists() and _open_fds() == before  # refused before anything started
    with Session(qemu, ROUTINE, Need.MEMCHECK, optional=True) as s:
        assert s.plugin is None
        s.run(records.Case(kind=0, profile=0, id=1, n=1, src_off=0, dst_off=0))
    assert _started(qemu)["plugin"] is None and "--plugin-fd" not in _started(qemu)["argv"]
    assert session.plugin_for(qemu, ROUTINE, Need.COVERAGE, optional=True) is None
    assert session.plugin_for(qemu, ROUTINE, Need.NONE) is None


def test_an_executor_that_cannot_start_leaves_no_plugin_open(qemu: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "routine_prefix", lambda r: [str(qemu / "no-such-qemu")])
    before = _open_fds()
    with pytest.raises(ExecutorError, match="cannot start"):
        Session(qemu, ROUTINE, Need.COVERAGE)
    assert _open_fds() == before
