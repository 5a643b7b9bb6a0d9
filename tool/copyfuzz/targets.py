"""What a command runs on: bundled routines by name or pattern, or a .S file's symbols."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from .checkfile import check_defines, external_routine, parse_symbol
from .errors import CopyfuzzError
from .routines import Routine, discover, select


def is_file_target(text: str) -> bool:
    return text.endswith((".S", ".s")) or Path(text).is_file()


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
