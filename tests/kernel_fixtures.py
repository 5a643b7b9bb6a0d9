"""Our fixtures that stand in for a kernel's user-copy file on a booted kernel
(tests/fixtures/kernel/boot/). Each says in its header, one ` * copyfuzz: key=value` a
line, its architecture (`arch`), the file of the kernel tree it replaces (`replaces`)
and the symbol write() reaches in it (`symbol`); the kernel tier and bench/ read them
here. `seeded()` writes a copy with the fixture's seeded bug switched on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

BOOT = Path(__file__).resolve().parent / "fixtures" / "kernel" / "boot"
SEED = "CONFIG_FIXTURE_FULL_SIZE"  # the fault fixup returns n: "nothing copied"
_META = re.compile(r"^ \* copyfuzz: (arch|replaces|symbol)=(\S+)$")
# `make check-kernel` runs the booted-kernel tier on two workers, one group a scheduling
# unit (tests/conftest.py's scheduler, through kernel_group): an architecture's tests (its
# kernel builds share one work directory, one after the other) and the docs' other
# commands (the README's main job: minutes on two CPUs). Each worker takes two groups at
# the start, in this order: arm64 and the docs on one, riscv and arm on the other, about
# 620 s and 690 s of the tier's 1,320 s on one worker (docs/perf.md, "Booted-kernel
# sweeps"). A build's serial steps and a sweep's single VM leave a CPU the other uses.
# (pytest-xdist's own `xdist_group` marks do nothing under pytest 9: its loadgroup renames
# node ids through an attribute pytest no longer reads.)
KERNEL_GROUPS = ("arm64", "riscv", "docs", "arm")
KERNEL_TIER = ("tests/test_kernel_boot_e2e.py::", "tests/test_kernel_docs_e2e.py::")
_CONFIRM = "tests/test_kernel_boot_e2e.py::test_confirm_"


@dataclass(frozen=True)
class BootFixture:
    path: Path
    arch: str
    replaces: str
    symbol: str

    def seeded(self, directory: Path) -> Path:
        out = directory / f"seeded-{self.path.name}"
        out.write_text(f"#define {SEED} 1\n" + self.path.read_text())
        return out


def boot_fixtures() -> dict[str, BootFixture]:
    """arch -> its fixture."""
    out = {}
    for path in sorted(BOOT.glob("*.S")):
        meta = {m[1]: m[2] for line in path.read_text().splitlines()[:12] if (m := _META.match(line))}
        out[meta["arch"]] = BootFixture(path, meta["arch"], meta["replaces"], meta["symbol"])
    return out


def kernel_group(nodeid: str) -> str | None:
    """The KERNEL_GROUPS group of a booted-kernel tier test, by its node id (the scheduler
    has no items, only ids); None for a test of another tier. A boot test's id is its
    architecture; a docs command's group is its architecture's (test_kernel_docs_e2e.group_of)."""
    if not nodeid.startswith(KERNEL_TIER):
        return None
    if nodeid.startswith(_CONFIRM):
        return "riscv"  # it confirms on riscv
    param = nodeid[nodeid.find("[") + 1:-1] if nodeid.endswith("]") else ""
    if nodeid.startswith(KERNEL_TIER[0]):
        return param if param in KERNEL_GROUPS else "docs"
    from test_kernel_docs_e2e import group_by_where  # lazily: it reads every docs page
    return group_by_where().get(param, "docs")


def kernel_group_rank(nodeid: str) -> int:
    """Where a test's group goes out (KERNEL_GROUPS order); other tiers' tests last."""
    group = kernel_group(nodeid)
    return KERNEL_GROUPS.index(group) if group else len(KERNEL_GROUPS)
