"""What a command runs on: bundled routines by name or pattern, or a .S file's symbols."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from pathlib import Path

from .checkfile import check_defines, external_routine, parse_symbol
from .errors import CopyfuzzError
from .routines import Routine, discover, select


def is_file_target(text: str) -> bool:
    return text.endswith((".S", ".s")) or Path(text).is_file()


def is_file_spec(name: str) -> bool:
    """Does a spec's routine name a .S file's symbol ('path/file.S:symbol')?"""
    return ".S:" in name or ".s:" in name


def file_routines(root: Path, path: str, args: argparse.Namespace, profile: str) -> list[Routine]:
    if not args.symbol:
        raise CopyfuzzError(f"{path}: say which routine to check with --symbol SYM[:KIND]")
    defines = check_defines(args.define or [])
    out = []
    for text in args.symbol:
        symbol, kind = parse_symbol(text, args.kind)
        out.append(external_routine(root, Path(path), symbol, kind, xlen=args.xlen, defines=defines,
                                    alternative=args.alternative, profile=profile))
    return out


def bundled_routines(root: Path, patterns: list[str], xlen: int,
                     default_all: bool = True) -> list[Routine]:
    routines = discover(root)
    chosen = select(routines, patterns) if patterns else (
        [r for r in routines if not r.is_mutant] if default_all else [])
    return [dataclasses.replace(r, xlen=xlen) for r in chosen]


def apply_saved_options(args: argparse.Namespace, text: str, where: str) -> None:
    """Fill what the command line left unset from a regression's `# options:` line: the
    flags `repro` needs to rebuild a file routine as the campaign built it
    (Routine.repro_options: -DNAME[=VALUE], --alternative, --kind K, --xlen N). Flags
    given on the command line win."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise CopyfuzzError(f"{where}: `# options: {text}`: {e}") from None
    defines: list[str] = []
    alternative, kind, xlen = False, None, None
    i = 0
    while i < len(words):
        w = words[i]
        value = words[i + 1] if i + 1 < len(words) else None
        if w.startswith("-D") and len(w) > 2:
            defines.append(w[2:])
        elif w in ("-D", "--kind", "--xlen") and value is not None:
            if w == "-D":
                defines.append(value)
            elif w == "--kind":
                kind = value
            elif value in ("32", "64"):
                xlen = int(value)
            else:
                raise CopyfuzzError(f"{where}: `# options: {text}`: --xlen {value!r} is not 32 or 64")
            i += 1
        elif w == "--alternative":
            alternative = True
        else:
            raise CopyfuzzError(f"{where}: `# options: {text}`: {w!r} is not one of -DNAME[=VALUE], "
                                "--alternative, --kind KIND, --xlen N")
        i += 1
    if not getattr(args, "define", None):
        args.define = check_defines(defines) or None
    if not getattr(args, "alternative", False):
        args.alternative = alternative
    if getattr(args, "kind", None) is None:
        args.kind = kind
    if getattr(args, "xlen", 64) == 64 and xlen:
        args.xlen = xlen
