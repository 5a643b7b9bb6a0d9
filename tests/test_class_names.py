"""A class's former name (records.CLASS_ALIASES: sum-left-enabled, now uaccess-left-enabled
to fit every architecture's user-access switch) is taken wherever a class name is read,
and output shows the current one."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from copyfuzz import known, records, regressions
from copyfuzz.cmd_fuzz import parse_until
from copyfuzz.errors import CopyfuzzError
from copyfuzz.routines import discover, find
from copyfuzz.spec import parse

OLD, NEW = "sum-left-enabled", "uaccess-left-enabled"


def test_the_class_has_its_new_name_and_the_old_one_is_an_alias() -> None:
    assert NEW in records.CLASS_NAMES and OLD not in records.CLASS_NAMES
    assert records.canonical_class(OLD) == NEW and records.canonical_class(NEW) == NEW
    assert records.canonical_class("wrong-data") == "wrong-data"
    assert records.class_mask([OLD]) == records.class_mask([NEW]) == 1 << 12
    assert records.class_names(1 << 12) == [NEW]
    # every alias names a class that exists, and no alias is a current name
    assert set(records.CLASS_ALIASES.values()) <= set(records.CLASS_NAMES)
    assert not set(records.CLASS_ALIASES) & set(records.CLASS_NAMES)


def test_until_and_known_files_take_the_old_name() -> None:
    assert parse_until(f"{OLD},wrong-data") == frozenset({NEW, "wrong-data"})
    with pytest.raises(CopyfuzzError, match="unknown class"):
        parse_until("sum-left-enable")
    (entry,) = known.parse(f"{OLD} *\n", "k.txt")
    assert entry.cls == NEW and entry.matches("riscv/copy_user", NEW, "__asm_copy_to_user+0x12")


def test_a_regression_saved_under_the_old_name_is_the_same_regression(tmp_path: Path) -> None:
    routine = find(discover(ROOT), "riscv/copy_user")
    spec = parse("riscv/copy_user:n=1,src_off=0,dst_off=0,dst_fault=0", "copy")
    old = tmp_path / "riscv__copy_user--sum-left-enabled.spec"
    old.write_text(regressions.format_text(spec, OLD, [OLD], "libfuzzer", "0x1 (f+0x1)", "exact", []))
    assert regressions.read(old).cls == NEW
    path, new = regressions.save(tmp_path, routine, spec, NEW, [NEW], engine="afl", fault_pc="0x1 (f+0x1)",
                                 profile="exact")
    assert (path, new) == (old, False)


def test_history_bisect_takes_the_old_name(tmp_path: Path) -> None:
    proc = run_cli("history", str(tmp_path), "--file", "x.S", "--symbol", "f", "--bisect", OLD, "--fixed")
    # past the class check: what is missing now is --good/--bad
    assert proc.returncode == 2 and "--bisect needs --good REV and --bad REV" in proc.stderr, proc.stderr
    proc = run_cli("history", str(tmp_path), "--file", "x.S", "--symbol", "f", "--bisect", "no-such", "--fixed")
    assert proc.returncode == 2 and "not a finding class" in proc.stderr, proc.stderr
