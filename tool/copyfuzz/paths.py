"""Where builds go: the one home of every build path the tool uses.

The Makefile puts everything under $(O) (default `build`, as in the kernel's `make O=DIR`):
executors in $(O)/riscv<XLEN>/, host objects (plugin, fuzz targets, libcfref.so) in
$(O)/host/. The tool reads the same `O` from its environment, so `O=/tmp/out make` and
`O=/tmp/out ./copyfuzz sweep` agree, and passes it on to every make it runs.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_O = "build"


def build_dir(root: Path) -> Path:
    """$(O): absolute as given, or relative to the repository root."""
    o = os.environ.get("O") or DEFAULT_O
    p = Path(o)
    return p if p.is_absolute() else root / p


def make_vars(root: Path) -> list[str]:
    """The O= every make the tool runs gets (always given: make's own default is relative
    to its working directory, ours to the repository root)."""
    return [f"O={build_dir(root)}"]


def arch_dir(root: Path, xlen: int, arch: str = "riscv") -> Path:
    """$(BUILD) in the Makefile: one directory per architecture and register width."""
    return build_dir(root) / f"{arch}{xlen}"


def executor(root: Path, name: str, xlen: int) -> Path:
    """A bundled routine's executor: name is its path under arch/ without .S."""
    arch = name.split("/", 1)[0]
    return arch_dir(root, xlen, arch) / f"{name}.elf"


def check_dir(root: Path, xlen: int, arch: str = "riscv") -> Path:
    """Executors of files from outside the tree (copyfuzz check)."""
    return arch_dir(root, xlen, arch) / "check"


def host_dir(root: Path) -> Path:
    return build_dir(root) / "host"


def plugin(root: Path) -> Path:
    return host_dir(root) / "cfplugin.so"


def libfuzzer_target(root: Path) -> Path:
    return host_dir(root) / "fuzz" / "copyfuzz_fuzzer"


def afl_target(root: Path) -> Path:
    return host_dir(root) / "fuzz" / "copyfuzz_afl_fuzzer"


def libcfref(root: Path) -> Path:
    return host_dir(root) / "libcfref.so"
