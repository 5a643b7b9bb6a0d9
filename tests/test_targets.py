"""Each architecture of targets.ARCHES has what the tool looks up by its name (issue 28
point 3: an architecture is one row): its decoder, decode/<arch>.py. The target.mk facts
the tool reads through `make target-env` are kept in $(O)/target-env.json, rebuilt when a
target.mk or the Makefile changes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT
from copyfuzz import decode, paths, targets
from copyfuzz.errors import CopyfuzzError


@pytest.mark.parametrize("arch", list(targets.ARCHES))
def test_every_architecture_has_its_decoder(arch: str) -> None:
    isa = decode.for_arch(arch)
    assert isa.name == arch
    assert isa.sp in isa.regs and set(isa.args) <= set(isa.regs)


def test_an_unknown_architecture_has_no_decoder() -> None:
    with pytest.raises(CopyfuzzError, match=r"unknown architecture 'mips' \(known: riscv, arm64, arm\)"):
        decode.for_arch("mips")


# ---- target.mk through make ----

def test_the_tool_reads_target_mk_as_make_does() -> None:
    """What the tool knows of each width is what make says of it, at the defaults."""
    for arch in targets.ARCHES.values():
        for xlen in arch.widths:
            out = subprocess.run(["make", "-s", "--no-print-directory", f"ARCH={arch.name}", f"XLEN={xlen}",
                                  "target-env"], cwd=ROOT, env={"PATH": os.environ["PATH"]}, check=True,
                                 capture_output=True, text=True).stdout
            said = dict(shlex.split(line)[0].removeprefix("CF_TARGET_").split("=", 1) for line in out.splitlines())
            assert said["WIDTHS"].split() == [str(w) for w in arch.widths]
            assert (said["BUILD_NAME"], said["QEMU"], said["CROSS_COMPILE"]) == (
                arch.build_dir_name(xlen), arch.default_qemu(xlen), arch.target_mk.cross_compile)
    assert targets.RISCV.widths == (64, 32) and targets.ARM64.widths == (64,) and targets.ARM.widths == (32,)


def test_make_refuses_a_width_target_mk_does_not_list() -> None:
    proc = subprocess.run(["make", "-s", "ARCH=arm64", "XLEN=32", "target-env"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "ARCH=arm64: XLEN must be 64" in proc.stderr


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """targets as a new process finds it, with $(O) in tmp_path; the facts read before are
    put back after."""
    (tmp_path / "o").mkdir()
    monkeypatch.setenv("O", str(tmp_path / "o"))
    monkeypatch.setattr(targets, "_loaded", None)
    yield paths.target_env_cache(targets.TREE)


def _make_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int | None]]:
    calls: list[tuple[str, int | None]] = []
    real = targets._target_env

    def counted(arch: str, xlen: int | None) -> dict[str, str]:
        calls.append((arch, xlen))
        return real(arch, xlen)

    monkeypatch.setattr(targets, "_target_env", counted)
    return calls


def test_the_facts_are_kept_in_the_build_directory_and_read_back(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _make_runs(monkeypatch)
    first = targets.target_mks()
    assert sorted(calls, key=str) == sorted([("riscv", None), ("riscv", 32), ("arm64", None), ("arm", None)], key=str)
    assert fresh.parent == Path(os.environ["O"]) and fresh.is_file()
    assert not list(fresh.parent.glob(".*.tmp"))  # written aside and renamed
    calls.clear()
    monkeypatch.setattr(targets, "_loaded", None)  # the next process
    assert targets.target_mks() == first and calls == []


@pytest.mark.parametrize("spoil", ["a target.mk changed", "garbage", "another version"])
def test_a_changed_target_mk_or_a_spoilt_cache_is_read_from_make_again(
        fresh: Path, monkeypatch: pytest.MonkeyPatch, spoil: str) -> None:
    targets.target_mks()
    if spoil == "garbage":
        fresh.write_text("{not json")
    else:
        kept = json.loads(fresh.read_text())
        if spoil == "another version":
            kept["stamp"][0] += 1
        else:  # as an edit would: the stamp is the files' stat (the real file is left alone)
            arm = next(s for s in kept["stamp"][1:] if s[0] == str(targets.target_mk_path("arm")))
            arm[4] -= 1
        fresh.write_text(json.dumps(kept))
    calls = _make_runs(monkeypatch)
    monkeypatch.setattr(targets, "_loaded", None)
    assert targets.ARM.widths == (32,) and ("arm", None) in calls
    calls.clear()
    monkeypatch.setattr(targets, "_loaded", None)
    assert targets.ARM.widths == (32,) and calls == []  # kept again


def test_an_unwritable_or_missing_build_directory_is_no_error_and_is_not_made(
        fresh: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("O", str(tmp_path / "file" / "o"))  # under a file: no directory can be made
    assert targets.RISCV.build_dir_name(32) == "riscv32"
    monkeypatch.setattr(targets, "_loaded", None)
    monkeypatch.setenv("O", str(tmp_path / "none"))  # $(O) is make's to create (and to refuse)
    assert targets.RISCV.build_dir_name(32) == "riscv32" and not (tmp_path / "none").exists()


def test_the_callers_environment_never_reaches_target_mks_defaults(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QEMU", "CROSS_COMPILE", "XLEN", "BUILD_NAME", "WIDTHS"):
        monkeypatch.setenv(name, "spoilt")
    monkeypatch.setenv("MAKEFLAGS", "XLEN=16")
    assert targets.RISCV.target_mk.qemu == {64: "qemu-riscv64", 32: "qemu-riscv32"}
    assert targets.RISCV.target_mk.cross_compile == "riscv64-linux-gnu-"
    assert targets.RISCV.qemu_command(64) == ["spoilt"]  # the environment's QEMU still wins at run time
