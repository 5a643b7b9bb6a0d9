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

import pytest

BOOT = Path(__file__).resolve().parent / "fixtures" / "kernel" / "boot"
SEED = "CONFIG_FIXTURE_FULL_SIZE"  # the fault fixup returns n: "nothing copied"
_META = re.compile(r"^ \* copyfuzz: (arch|replaces|symbol)=(\S+)$")
# `make check-kernel` runs the booted-kernel tier on two workers (`--dist loadgroup`), one
# group a unit: an architecture's tests (its kernel builds, in one work directory, one
# after the other) and the docs' other commands (the README's main job, minutes on two
# CPUs). Each worker takes two groups at the start, in this order (tests/conftest.py sorts
# them so): arm64 and the docs on one, riscv and arm on the other, about 620 s and 690 s
# of the tier's 1,320 s on one worker (docs/perf.md, "Booted-kernel sweeps"). A build's
# serial steps and a sweep's single VM leave a CPU idle that the other worker then uses.
KERNEL_GROUPS = ("arm64", "riscv", "docs", "arm")


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


def kernel_group(name: str) -> pytest.MarkDecorator:
    """The booted-kernel tier's scheduling unit for name (KERNEL_GROUPS)."""
    if name not in KERNEL_GROUPS:
        raise ValueError(f"{name!r} is none of the kernel tier's groups {KERNEL_GROUPS}")
    return pytest.mark.xdist_group(f"kernel-{name}")


def kernel_group_rank(item: pytest.Item) -> int:
    """Where item's group goes out (KERNEL_GROUPS order); ungrouped items last."""
    mark = item.get_closest_marker("xdist_group")  # as pytest-xdist reads it
    name = str(mark.args[0] if mark.args else mark.kwargs.get("name", "")) if mark else ""
    group = name.removeprefix("kernel-")
    return KERNEL_GROUPS.index(group) if name.startswith("kernel-") and group in KERNEL_GROUPS else len(KERNEL_GROUPS)
