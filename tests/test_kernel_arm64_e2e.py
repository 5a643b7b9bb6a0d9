"""End to end: `copyfuzz check` on our arm64 kernel-style fixtures, one per vintage.

The fixtures (tests/fixtures/kernel/arch/arm64/, our own code written with each era's
macros) assemble unmodified against harness/compat/arm64/include; the architecture comes
from the `arch/arm64` in their path. Each is exact without switches, each seeded bug
(CONFIG_FIXTURE_*) is found as its class, and each era's exception-table layout is the
one the audit reads back. Needs the aarch64 toolchain and qemu-aarch64.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

ARM64 = ROOT / "tests" / "fixtures" / "kernel" / "arch" / "arm64"
MAX_LEN = "20"  # past one 16-byte pair and into the byte tail

# fixture, its symbols, the flags of its era, the table layout those give
ERAS = [
    ("uaccess_abs.S", ["__copy_to_user:copy_to_user", "__clear_user"], ["-D", "CF_EXTABLE_ABS"], "abs"),
    ("uaccess_uao.S", ["__arch_copy_from_user:copy_from_user", "__arch_clear_user"],
     ["-D", "CF_EXTABLE_REL8"], "rel8"),
    ("uaccess_user_ldst.S", ["__arch_copy_to_user:copy_to_user"], ["-D", "CF_EXTABLE_REL8"], "rel8"),
    ("uaccess_extable.S", ["__arch_copy_from_user:copy_from_user", "__arch_clear_user"], [], "rel"),
]


def check(tmp_path: Path, name: str, symbols: list[str], *args: str) -> tuple[int, dict[str, set[str]]]:
    words = [w for s in symbols for w in ("--symbol", s)]
    proc = run_cli("check", str(ARM64 / name), *words, "--json", "--max-len", MAX_LEN,
                   "--findings", str(tmp_path), *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.strip(), proc.stderr
    report = json.loads(proc.stdout)
    return proc.returncode, {r["name"].rsplit(":", 1)[1]: set(r["findings"]) for r in report["routines"]}


@pytest.mark.parametrize("alternative", [[], ["--alternative"]], ids=["original", "alternative"])
@pytest.mark.parametrize("name, symbols, era, layout", ERAS, ids=[e[0] for e in ERAS])
def test_clean_under_exact(tmp_path: Path, name: str, symbols: list[str], era: list[str], layout: str,
                           alternative: list[str]) -> None:
    code, findings = check(tmp_path, name, symbols, *era, *alternative, "--profile", "exact")
    assert code == 0, findings
    assert all(not f for f in findings.values()), findings


@pytest.mark.parametrize("name, symbols, era, layout", ERAS, ids=[e[0] for e in ERAS])
def test_table_layout_of_the_era(name: str, symbols: list[str], era: list[str], layout: str) -> None:
    symbol = symbols[0]
    proc = run_cli("audit", str(ARM64 / name), "--symbol", symbol, *era, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["routines"][0]["extable"] == layout


@pytest.mark.parametrize("name, symbol, args, classes", [
    ("uaccess_abs.S", "__copy_to_user:copy_to_user",
     ["-D", "CF_EXTABLE_ABS", "--alternative", "-D", "CONFIG_FIXTURE_PAN_LEFT"], {"uaccess-left-enabled"}),
    ("uaccess_uao.S", "__arch_copy_from_user:copy_from_user",
     ["-D", "CF_EXTABLE_REL8", "-D", "CONFIG_FIXTURE_PAN_LEFT"], {"uaccess-left-enabled"}),
    ("uaccess_user_ldst.S", "__arch_copy_to_user:copy_to_user",
     ["-D", "CF_EXTABLE_REL8", "-D", "CONFIG_FIXTURE_NO_RETRY"], {"no-progress", "store-beyond-reported"}),
    ("uaccess_extable.S", "__arch_copy_from_user:copy_from_user",
     ["-D", "CONFIG_FIXTURE_MISSING_ENTRY"], {"unhandled-fault"}),
    ("uaccess_extable.S", "__arch_clear_user", ["-D", "CONFIG_FIXTURE_FULL_SIZE"],
     {"no-progress", "store-beyond-reported"}),
], ids=["abs-pan-left", "uao-pan-left", "user_ldst-no-retry", "extable-missing-entry", "extable-full-size"])
def test_seeded_bug_found(tmp_path: Path, name: str, symbol: str, args: list[str], classes: set[str]) -> None:
    code, findings = check(tmp_path, name, [symbol], *args)
    assert code == 1
    assert set(findings[symbol.split(":")[0]]) == classes, findings


def test_uao_pan_switch_is_the_cpu_without_uao(tmp_path: Path) -> None:
    """With --alternative (a CPU with UAO) uaccess_disable_not_uao does nothing in the
    kernel: the same seeded fixup is clean there."""
    code, findings = check(tmp_path, "uaccess_uao.S", ["__arch_copy_from_user:copy_from_user"],
                           "-D", "CF_EXTABLE_REL8", "-D", "CONFIG_FIXTURE_PAN_LEFT", "--alternative")
    assert code == 0, findings
