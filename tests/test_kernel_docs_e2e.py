"""The documentation's commands that boot kernels (`# kernel tier` in a ```sh block:
docs/README.md, "Writing docs") or run for minutes (`# long tier`: the README's main
job), run as written and checked for the exit status the page says, by `make
check-kernel`.

They run at the checkout's root, so that they share its kernel cache ($(O)/kernel/) with
the rest of the tier: a scratch copy, as the docs test makes for the other commands,
would build every kernel again. What they write goes to findings/ (ignored by git).
"""

from __future__ import annotations

import re
import subprocess

import pytest
from conftest import ROOT
from kernel_fixtures import KERNEL_GROUPS, kernel_group
from test_docs_commands import COMMANDS, Command, command_env, normalise

# The docs' own tests, and commands that name no architecture (the README's main job), in
# the group "docs"; a command for one architecture in that architecture's group, so it
# finds the kernel its group's tests built in the cache (kernel_fixtures.KERNEL_GROUPS).
pytestmark = [pytest.mark.kernel, kernel_group("docs")]

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


def group_of(cmd: Command) -> str:
    """The architecture the command's --arch names, or the kernel file its `--as` does."""
    arch = re.search(r"--arch[= ](\w+)", cmd.text) or re.search(r"--as[= ]arch/(\w+)/", cmd.text)
    return arch[1] if arch and arch[1] in KERNEL_GROUPS else "docs"


@pytest.mark.parametrize("cmd", [pytest.param(c, id=c.where, marks=kernel_group(group_of(c)))
                                 for c in TIER_COMMANDS])
def test_kernel_command(cmd: Command) -> None:
    # The user's environment, as the docs test gives its commands: not the suite's
    # COPYFUZZ_JOBS=1 (conftest), which held the README's main job to one CPU (343 s).
    proc = subprocess.run(["bash", "-o", "pipefail", "-c", cmd.text], cwd=ROOT, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=command_env())
    assert proc.returncode == cmd.expect, (f"{cmd.where}: `{cmd.text}` exited {proc.returncode}, "
                                           f"the page says {cmd.expect}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
