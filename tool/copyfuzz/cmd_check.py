"""`copyfuzz check FILE.S --symbol SYM[:KIND]`: a kernel-style file, unmodified.

Builds the file against the compat include tree, audits its exception table,
then sweeps each symbol like `copyfuzz sweep` (same options, same JSON, same
exit status: 0 clean, 1 findings or audit problems, 2 bad input or build error).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import build, executor, records
from .checkfile import BSD_COPY_NAMES, no_extable_message
from .cmd_sweep import check_granule, check_sweep_args, sweep_and_report
from .errors import CopyfuzzError
from .routines import Routine
from .selection import file_routines


def build_file_routines(root: Path, path: Path, routines: list[Routine]) -> None:
    """Build a file's routines and refuse a copy or clear routine whose file has no
    exception table (CopyfuzzError, with the assembler's messages as details when the file
    does not build)."""
    build.build_routines(root, routines)
    for r in routines:
        if r.kind in records.RETURNS_DST and r.symbol not in BSD_COPY_NAMES:
            continue
        info = executor.info(executor.executor_argv(root, r.elf, build.routine_prefix(r)))
        message = no_extable_message(path, r.symbol, r.kind) if info.get("extable") == "none" else None
        if message:
            raise CopyfuzzError(message)


def run_check(root: Path, args: argparse.Namespace) -> int:
    check_sweep_args(args)
    routines = file_routines(root, args.file, args, args.profile)
    check_granule(args, routines)
    build_file_routines(root, Path(args.file), routines)
    return sweep_and_report(root, args, routines)
