"""ISA extensions of a routine: `--isa rv64gcv`, `rv64gc_zba_zbb`, `rv32gcv`.

Only the routine (and its --with files) is assembled with the extensions (-march);
the harness stays rv64gc/rv32gc. The executor is run under QEMU with the matching
`-cpu rv64,v=true,vlen=128,...` properties. What QEMU 7.2 (Debian 12's qemu-user)
accepts was found by trying each property (`qemu-riscv64 -cpu rv64,PROP=true`): the
table below is that list; an extension it lacks (Zicbom, Zicboz, Zicond, ...) is refused
with one line rather than run on a CPU that would raise SIGILL at it.

An executor for an ISA other than its routine's default is a build product of its own
(paths.isa_dir): runs with different ISAs never share a file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import CopyfuzzError

# Single-letter extensions in canonical order (the assembler's rule); g = imafd.
_LETTERS = "imafdcv"
# Multi-letter extensions -> the QEMU 7.2 -cpu property that turns them on ('' when the
# base CPU always has them).
QEMU_PROPS: dict[str, str] = {
    "zicsr": "", "zifencei": "", "zmmul": "zmmul",
    "zba": "zba", "zbb": "zbb", "zbc": "zbc", "zbs": "zbs",
    "zbkb": "zbkb", "zbkc": "zbkc", "zbkx": "zbkx",
    "zk": "zk", "zkn": "zkn", "zknd": "zknd", "zkne": "zkne", "zknh": "zknh", "zkr": "zkr",
    "zks": "zks", "zksed": "zksed", "zksh": "zksh", "zkt": "zkt",
    "zfh": "Zfh", "zfhmin": "Zfhmin", "zihintpause": "Zihintpause",
    "zve32f": "Zve32f", "zve64f": "Zve64f",
}
# Known to the assembler, not to QEMU 7.2: said so when asked for.
NOT_IN_QEMU = ("zicbom", "zicboz", "zicbop", "zicond", "zawrs", "zacas", "zvbb", "zvkb", "zvfh", "zca", "zcb")
VLENS = (128, 256, 512, 1024)  # QEMU 7.2: a power of 2 in [128, 1024]
DEFAULT_VLEN = 128
_ISA = re.compile(r"rv(32|64)([a-z]+)((?:_[a-z][a-z0-9]*)*)")


@dataclass(frozen=True)
class Isa:
    """A parsed --isa: march is what the assembler gets, cpu what QEMU gets."""

    xlen: int
    letters: str  # single-letter extensions as given (g expanded: imafd)
    exts: tuple[str, ...]  # multi-letter extensions, lower case, in order
    vlen: int = 0  # VLEN in bits when V is on (0 otherwise)

    @property
    def march(self) -> str:
        letters = self.letters.replace("imafd", "g", 1) if self.letters.startswith("imafd") else self.letters
        return f"rv{self.xlen}{letters}" + "".join(f"_{e}" for e in self.exts)

    @property
    def vector(self) -> bool:
        return "v" in self.letters or any(e.startswith("zve") for e in self.exts)

    @property
    def is_default(self) -> bool:
        """The harness's own rv64gc/rv32gc: nothing to add."""
        return self.letters == "imafdc" and not self.exts

    @property
    def cpu(self) -> str:
        """QEMU's -cpu for it ('' for the default CPU)."""
        if self.is_default:
            return ""
        props = [f"rv{self.xlen}"]
        if "v" in self.letters:
            props.append("v=true")
        props += [f"{QEMU_PROPS[e]}=true" for e in self.exts if QEMU_PROPS[e]]
        if self.vector:
            props += [f"vlen={self.vlen}", "vext_spec=v1.0"]
        return ",".join(props)

    @property
    def options(self) -> list[str]:
        """As the command line takes it (recorded in `# options:` lines)."""
        if self.is_default:
            return []
        out = ["--isa", self.march]
        if self.vector and self.vlen != DEFAULT_VLEN:
            out += ["--vlen", str(self.vlen)]
        return out


def default(xlen: int) -> Isa:
    return Isa(xlen, "imafdc", ())


def parse(text: str, vlen: int | None = None, what: str = "--isa") -> Isa:
    """--isa TEXT [--vlen N]; a bad value is one line (exit 2)."""
    low = text.strip().lower()
    m = _ISA.fullmatch(low)
    if not m:
        raise CopyfuzzError(f"{what} {text!r}: expected rv64 or rv32, single-letter extensions (g or imafd, "
                            "c, v) and _-separated ones, e.g. rv64gcv, rv64gc_zba_zbb")
    xlen, letters, rest = int(m.group(1)), m.group(2), m.group(3)
    if letters.startswith("g"):
        letters = "imafd" + letters[1:]
    if not letters.startswith("i"):
        raise CopyfuzzError(f"{what} {text!r}: the base must be i or g (rv{xlen}g..., rv{xlen}i...)")
    bad = [c for c in letters if c not in _LETTERS]
    if bad:
        raise CopyfuzzError(f"{what} {text!r}: single-letter extension {bad[0]!r} is not one copyfuzz runs "
                            f"(known: {', '.join(_LETTERS)}, g)")
    order = [_LETTERS.index(c) for c in letters]
    if order != sorted(set(order)):
        raise CopyfuzzError(f"{what} {text!r}: single-letter extensions must be in the order {_LETTERS}, once each")
    if not all(c in letters for c in "imafd"):
        raise CopyfuzzError(f"{what} {text!r}: the routine is linked with an rv{xlen}gc harness: give at least "
                            f"rv{xlen}g (imafd)")
    exts = tuple(e for e in rest.split("_") if e)
    for e in exts:
        if e in NOT_IN_QEMU:
            raise CopyfuzzError(f"{what} {text!r}: QEMU 7.2 (qemu-riscv{xlen} here) cannot run {e}: it has no "
                                "-cpu property for it")
        if e not in QEMU_PROPS:
            raise CopyfuzzError(f"{what} {text!r}: unknown extension {e!r} (known: {', '.join(sorted(QEMU_PROPS))})")
    if len(set(exts)) != len(exts):
        raise CopyfuzzError(f"{what} {text!r}: an extension is given twice")
    isa = Isa(xlen, letters, exts)
    if isa.vector:
        isa = Isa(xlen, letters, exts, vlen or DEFAULT_VLEN)
        if isa.vlen not in VLENS:
            raise CopyfuzzError(f"--vlen {vlen}: QEMU takes a VLEN of {', '.join(map(str, VLENS))} bits")
    elif vlen:
        raise CopyfuzzError(f"--vlen {vlen}: for a vector ISA only (rv{xlen}gcv), not {isa.march}")
    return isa


def with_xlen(isa: Isa, xlen: int) -> Isa:
    """The same extensions at another width (a bundled routine's isa= line under --xlen 32)."""
    return Isa(xlen, isa.letters, isa.exts, isa.vlen)
