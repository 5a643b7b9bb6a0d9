"""The documentation's commands that boot kernels (`# kernel tier` in a ```sh block:
docs/README.md, "Writing docs"), run as written and checked for the exit status the page
says by `make check-kernel`, and those that run for minutes (`# long tier`: the README's
main job), by `make check-long`.

They run at the checkout's root, so that they share its kernel cache ($(O)/kernel/) and
its build with the rest of their tier: a scratch copy, as the docs test makes for the
other commands, would build every kernel again. What they write goes to findings/
(ignored by git). The checks on the tags themselves are cheap and run in `make check`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, accept_findings_written, findings_state
from test_docs_commands import COMMANDS, TIERS, Command, command_env, normalise

# each tier's pytest mark, which its make target selects (TIERS names the target)
TIER_MARKS = {"kernel tier": pytest.mark.kernel, "long tier": pytest.mark.long}
KERNEL_COMMANDS = [c for c in COMMANDS if c.tier == "kernel tier"]
# one run of each command: they run at the root, so the same text does the same thing
_FIRST: dict[str, Command] = {}
for _c in COMMANDS:
    if _c.tier:
        _FIRST.setdefault(normalise(_c.text), _c)
TIER_COMMANDS = list(_FIRST.values())
TIMEOUT_S = 1800


def test_the_docs_show_kernel_commands() -> None:
    assert len(KERNEL_COMMANDS) >= 3, "no `# kernel tier` command in the docs"


def test_the_readmes_main_job_is_in_the_long_tier() -> None:
    assert any(c.page == "README.md" and c.tier == "long tier" for c in COMMANDS), \
        "the README's main job is run by no test"


def test_each_tier_has_a_mark_its_make_target_selects() -> None:
    assert set(TIER_MARKS) == set(TIERS), "a docs tier without a pytest mark"
    makefile = (ROOT / "Makefile").read_text()
    for tier, (_, target) in TIERS.items():
        name = target.removeprefix("make ")
        recipe = makefile.split(f"\n{name}:", 1)[1].split("\n\n", 1)[0] if f"\n{name}:" in makefile else ""
        assert f"-m {TIER_MARKS[tier].name}" in recipe or f'-m "{TIER_MARKS[tier].name}' in recipe, \
            f"`{target}` runs no test marked {TIER_MARKS[tier].name}, the `# {tier}` commands' mark"


@pytest.mark.e2e
@pytest.mark.parametrize("cmd", [pytest.param(c, id=c.where, marks=TIER_MARKS[c.tier]) for c in TIER_COMMANDS])
def test_tier_command(cmd: Command) -> None:
    # The user's environment, as the docs test gives its commands: not the suite's
    # COPYFUZZ_JOBS=1 (conftest), which held the README's main job to one CPU (343 s).
    before = findings_state()
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.text], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=command_env())
    accept_findings_written(before)  # a user's command at the root writes to findings/, as here
    assert proc.returncode == cmd.expect, (f"{cmd.where}: `{cmd.text}` exited {proc.returncode}, "
                                           f"the page says {cmd.expect}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


@pytest.mark.parametrize("status", [0, 1, 5])
def test_pytest_collecting_nothing_fails_the_make_targets(tmp_path: Path, status: int) -> None:
    """Every target runs pytest through the Makefile's $(call pytest,...), where pytest's
    "no tests ran" (exit 5) is a failure: a mark that selects nothing never passes."""
    makefile = (ROOT / "Makefile").read_text()
    assert makefile.count("-m pytest") == 1, "a recipe runs pytest without $(call pytest,...)"
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nexit {status}\n")
    fake.chmod(0o755)
    probe = "cf-probe:\n\t@$(call pytest,probe tests,-m probe); exit $$rc\n"
    proc = subprocess.run(["make", "-s", "--no-print-directory", "--eval", probe, "cf-probe", f"PYTHON={fake}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert (proc.returncode == 0) == (status == 0), proc.stderr
    assert ("pytest collected no probe tests" in proc.stderr) == (status == 5), proc.stderr


@pytest.mark.parametrize(("main", "side"), [(0, 0), (0, 3), (4, 0), (4, 3)])
def test_lint_beside_the_tests_fails_check_and_shows_its_output_after(tmp_path: Path, main: int, side: int) -> None:
    """`make check` runs lint beside pytest through $(call beside,...): lint's output comes
    after the tests' whole, either failing fails the target (the tests' status first), and
    the background job takes Ctrl-C (sh starts it ignoring SIGINT)."""
    makefile = (ROOT / "Makefile").read_text()
    assert "$(call beside,lint" in makefile
    side_cmd = (f"python3 -c 'import signal; import sys; print(\"side: \" + str(signal.getsignal(signal.SIGINT) "
                f"is signal.default_int_handler)); sys.exit({side})'")  # no commas: they split $(call) args
    main_cmd = f"(sleep 0.3; echo main; exit {main})"
    probe = f"cf-probe:\n\t@$(call beside,the side job,{side_cmd},{main_cmd})\n"
    proc = subprocess.run(["make", "-s", "--no-print-directory", "--eval", probe, "cf-probe"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.stdout == "main\nside: True\n", proc.stdout
    assert (proc.returncode == 0) == (main == side == 0), proc.stderr
    assert ("make: the side job failed" in proc.stderr) == (side != 0), proc.stderr
