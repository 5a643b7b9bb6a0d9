"""Routines from outside the tree: a kernel-style .S file checked as it is.

`copyfuzz check path/uaccess.S --symbol SYM[:KIND]` builds the file against the
compat include tree (harness/compat/riscv/include), which stands in for the
kernel's headers, with CONFIG_* switches off unless given with -D.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from . import paths, records
from .errors import CopyfuzzError
from .routines import Routine

COMPAT_INCLUDE = "harness/compat/riscv/include"
_DEFINE = re.compile(r"^[A-Za-z_]\w*(=.*)?$")


def guess_kind(symbol: str) -> str:
    """clear_user-like names are clear, memset-, memmove- and memcpy-like ones those
    kinds, the rest copy."""
    low = symbol.lower()
    for kind in ("memset", "memmove", "memcpy"):
        if kind in low:
            return kind
    if "clear" in low:
        return "clear"
    return "copy"


def no_extable_hint(symbol: str, kind: str) -> str:
    """What to try when a copy or clear routine has no exception table: the kinds without
    fixups whose arguments are the same as this kind's (never memcpy for a memset)."""
    guessed = guess_kind(symbol)
    if guessed in records.RETURNS_DST:
        return f"Wrong kind? By its name it is a {guessed}: --symbol {symbol}:{guessed}"
    fits = [k for k in records.RETURNS_DST if records.KIND_ARGS[k] == records.KIND_ARGS[kind]]
    if not fits:
        return f"Wrong symbol? No kind without fixups takes ({', '.join(records.KIND_ARGS[kind])})"
    return (f"Wrong symbol, or a routine without fixups that takes ({', '.join(records.KIND_ARGS[kind])}) "
            f"and returns dst: " + " or ".join(f"--symbol {symbol}:{k}" for k in fits))


def parse_symbol(text: str, default_kind: str | None) -> tuple[str, str]:
    """'SYM' or 'SYM:KIND' -> (symbol, kind)."""
    symbol, _, kind = text.partition(":")
    kind = kind or default_kind or guess_kind(symbol)
    if not re.fullmatch(r"[A-Za-z_.$][\w.$]*", symbol):
        raise CopyfuzzError(f"--symbol {text!r}: not a symbol name")
    if kind not in records.KINDS:
        raise CopyfuzzError(f"--symbol {text!r}: kind must be one of {', '.join(records.KINDS)}")
    return symbol, kind


def check_defines(defines: list[str]) -> list[str]:
    for d in defines:
        if not _DEFINE.match(d):
            raise CopyfuzzError(f"-D {d!r}: expected NAME or NAME=VALUE")
    return defines


def external_routine(root: Path, path: Path, symbol: str, kind: str, *, xlen: int,
                     defines: list[str], alternative: bool, profile: str) -> Routine:
    if path.suffix not in (".S", ".s"):
        raise CopyfuzzError(f"{path}: expected an assembly source (.S)")
    if not path.is_file():
        raise CopyfuzzError(f"{path}: {'a directory, not a file' if path.is_dir() else 'no such file'}")
    src = path.resolve()
    flags = [f"-D{d}" for d in defines] + (["-DCF_ALTERNATIVE"] if alternative else [])
    key = "\0".join([str(src), symbol, kind, str(xlen), *flags]).encode()
    digest = hashlib.sha1(key).hexdigest()[:10]
    # One executor per file, symbol and build (the digest); the name is only a label.
    label = re.sub(r"[^\w.-]+", "_", f"{src.stem}-{symbol}")
    elf = str(paths.check_dir(paths.REL, xlen) / f"{label}-{digest}.elf")
    # The compat tree stands in for the kernel's headers; the file's own directory
    # serves its local includes. Each flag is one argument: no value is ever parsed.
    asflags = (f"-I{COMPAT_INCLUDE}", f"-I{src.parent}", *flags)
    return Routine(name=f"{path}:{symbol}", path=src, symbol=symbol, kind=kind, profile=profile,
                   about=f"{path} ({', '.join(flags) or 'no -D'})", xlen=xlen,
                   external_elf=elf, asflags=asflags,
                   build_flags=tuple([f"-D{d}" for d in defines] + (["--alternative"] if alternative else [])))


def explain_build_failure(e: CopyfuzzError, path: Path) -> CopyfuzzError:
    """An assembler error, with where the kernel's includes come from."""
    return CopyfuzzError(
        f"{path} does not build (the assembler's messages follow). Kernel includes "
        f"(<linux/linkage.h>, <asm/asm.h>, <asm/asm-extable.h>, ...) resolve to copyfuzz's "
        f"compat tree {COMPAT_INCLUDE}; CONFIG_* switches are off unless given with -D",
        details=e.details)
