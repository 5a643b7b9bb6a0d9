"""End to end: `copyfuzz check` on our 32-bit ARM kernel-style fixtures, one per vintage.

The fixtures (tests/fixtures/kernel/arch/arm/, our own code written with each era's
macros) assemble unmodified against harness/compat/arm/include; the architecture comes
from the `arch/arm` in their path. Each is exact without switches, with and without the
era's configuration switches, and each seeded bug (CONFIG_FIXTURE_*) is found as its
class. The ARM audit is not written yet: --no-audit. Needs the armhf toolchain and
qemu-arm.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

pytestmark = pytest.mark.e2e

ARM = ROOT / "tests" / "fixtures" / "kernel" / "arch" / "arm"
MAX_LEN = "20"


def check(tmp_path: Path, name: str, symbols: list[str], *args: str) -> tuple[int, dict[str, set[str]]]:
    words = [w for s in symbols for w in ("--symbol", s)]
    proc = run_cli("check", str(ARM / name), *words, "--json", "--max-len", MAX_LEN, "--no-audit",
                   "--findings", str(tmp_path), *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.strip(), proc.stderr
    report = json.loads(proc.stdout)
    return proc.returncode, {r["name"].rsplit(":", 1)[1]: set(r["findings"]) for r in report["routines"]}


@pytest.mark.parametrize("name, symbols, config", [
    ("uaccess_domains.S", ["__copy_to_user:copy_to_user", "__clear_user"], []),
    ("uaccess_domains.S", ["__copy_to_user:copy_to_user", "__clear_user"], ["-D", "CONFIG_CPU_USE_DOMAINS"]),
    ("uaccess_pan.S", ["arm_copy_from_user:copy_from_user"], []),
    ("uaccess_pan.S", ["arm_copy_from_user:copy_from_user"], ["-D", "CONFIG_CPU_SW_DOMAIN_PAN"]),
], ids=["domains-plain", "domains-ldrt-strt", "pan-off", "pan-on"])
def test_clean_under_exact(tmp_path: Path, name: str, symbols: list[str], config: list[str]) -> None:
    code, findings = check(tmp_path, name, symbols, *config, "--profile", "exact")
    assert code == 0, findings
    assert all(not f for f in findings.values()), findings


@pytest.mark.parametrize("name, symbol, args, classes", [
    ("uaccess_domains.S", "__copy_to_user:copy_to_user", ["-D", "CONFIG_FIXTURE_FULL_SIZE"],
     {"no-progress", "store-beyond-reported"}),
    ("uaccess_pan.S", "arm_copy_from_user:copy_from_user",
     ["-D", "CONFIG_CPU_SW_DOMAIN_PAN", "-D", "CONFIG_FIXTURE_PAN_LEFT"], {"uaccess-left-enabled"}),
], ids=["domains-full-size", "pan-left"])
def test_seeded_bug_found(tmp_path: Path, name: str, symbol: str, args: list[str], classes: set[str]) -> None:
    code, findings = check(tmp_path, name, [symbol], *args)
    assert code == 1
    assert findings[symbol.split(":")[0]] == classes, findings


def test_pan_switch_needs_sw_domain_pan(tmp_path: Path) -> None:
    """Without CONFIG_CPU_SW_DOMAIN_PAN the kernel's uaccess_enable/disable are empty: the
    same seeded fixup is clean."""
    code, findings = check(tmp_path, "uaccess_pan.S", ["arm_copy_from_user:copy_from_user"],
                           "-D", "CONFIG_FIXTURE_PAN_LEFT")
    assert code == 0, findings


def test_a_fixup_in_text_fixup_is_named_by_its_section_not_the_function_before_it() -> None:
    """6.x ARM keeps its fixups in .text.fixup; copyfuzz's own __memzero (linked with every
    ARM file) came just before it, and every fixup read as `__memzero+0x14` (issue 25,
    point 4). A sized function names only the pcs inside it."""
    proc = run_cli("audit", str(ARM / "uaccess_pan.S"), "--symbol", "arm_copy_from_user:copy_from_user", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)["routines"][0]["listing"]
    fixups = {row["fixup"] for row in listing if row["fixup"]}
    assert fixups == {"cf_target_fixup"}, fixups
    assert not any("__memzero" in row["where"] for row in listing)
