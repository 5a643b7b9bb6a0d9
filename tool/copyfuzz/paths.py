"""Where builds go: the one home of every build path the tool uses.

The Makefile puts everything under $(O) (default `build`, as in the kernel's `make O=DIR`):
executors in $(O)/<arch dir>/ (riscv64, riscv32, arm64), host objects (plugin, fuzz targets, libcfref.so) in
$(O)/host/. The tool reads the same `O` from its environment, so `O=/tmp/out make` and
`O=/tmp/out ./copyfuzz sweep` agree, and passes it on to every make it runs.

Every function takes the repository root and gives an absolute path; with root=REL it
gives the path as make is given it (make runs at the repository root): relative to the
root unless O is absolute. Make targets are named that way, so that they match the rules.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from . import targets
from .errors import CopyfuzzError

DEFAULT_O = "build"
REL = Path()  # root= for paths as make names them (relative to the root unless O is absolute)
# What make can take in a file name: anything else (a space, '$', ':', '#', '%', quotes ...)
# would be split or interpreted by make's parser or by a recipe's shell.
_MAKE_SAFE = re.compile(r"[\w./+,@-]+")


def build_dir(root: Path) -> Path:
    """$(O): absolute as given, or relative to the repository root."""
    o = os.environ.get("O") or DEFAULT_O
    p = Path(o)
    return p if p.is_absolute() else root / p


def make_vars(root: Path) -> list[str]:
    """The O= every make the tool runs gets (always given: make's own default is relative
    to its working directory, ours to the repository root). Given as the user gave it, as
    the targets are named (REL): make runs at the root. An O that make's parser would split
    or expand is refused, never passed on."""
    o = build_dir(REL)
    if not _MAKE_SAFE.fullmatch(str(o)):
        raise CopyfuzzError(f"O={str(o)!r}: make cannot take this build directory (use letters, "
                            "digits and _ . / + , @ - only)")
    return [f"O={o}"]


def arch_dir(root: Path, xlen: int, arch: str) -> Path:
    """$(BUILD) in the Makefile: one directory per architecture and register width
    (riscv64, riscv32, arm64: target.mk's BUILD_NAME)."""
    return build_dir(root) / targets.get(arch).build_dir_name(xlen)


def executor(root: Path, name: str, xlen: int) -> Path:
    """A bundled routine's executor: name is its path under arch/ without .S."""
    arch = name.split("/", 1)[0]
    return arch_dir(root, xlen, arch) / f"{name}.elf"


def check_dir(root: Path, xlen: int, arch: str) -> Path:
    """Executors of files from outside the tree (copyfuzz check)."""
    return arch_dir(root, xlen, arch) / "check"


def isa_dir(root: Path, xlen: int, march: str, arch: str) -> Path:
    """Executors built for an ISA other than their routine's own (--isa): one directory per
    -march, so runs with different ISAs never share an executor."""
    return arch_dir(root, xlen, arch) / f"isa-{march}"


def harness_object(root: Path, xlen: int, arch: str) -> Path:
    """The relocatable harness every executor is linked with ($(BUILD)/harness.o)."""
    return arch_dir(root, xlen, arch) / "harness.o"


def target_env_cache(root: Path) -> Path:
    """What `make target-env` said of every architecture's target.mk (targets.target_mks)."""
    return build_dir(root) / "target-env.json"


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
