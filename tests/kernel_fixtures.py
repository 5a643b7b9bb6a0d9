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
