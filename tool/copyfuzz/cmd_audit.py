"""`copyfuzz audit ROUTINE | FILE.S --symbol SYM`: the static exception-table audit.

Exit 1 when the audit finds problems, 0 when it does not, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from . import build
from .audit import Audit, audit_routine
from .checkfile import explain_build_failure
from .errors import CopyfuzzError
from .records import RETURNS_DST
from .selection import bundled_routines, file_routines, is_file_target
from .ui import emit, stdout_console


def print_audit(a: Audit, listing: bool = True) -> None:
    console = stdout_console()
    assert a.sym is not None
    s = a.summary
    emit(console, f"[bold]{escape(a.name)}[/] ({a.kind}, {a.table_format} table, {s['entries']} entries): "
                  f"{s['loads']} loads, {s['stores']} stores, {s['covered']} covered, "
                  f"{s['uncovered']} uncovered, {s['stack']} on the stack, {s['fixups']} fixups")
    if listing:
        table = Table(show_edge=False, pad_edge=False, box=None)
        for col in ("address", "where", "bytes", "instruction", "", "fixup"):
            table.add_column(col, no_wrap=True)
        for i in a.listing:
            mark, fixup = "", ""
            if i.addr in a.entries:
                mark, fixup = "[green]✓ " + i.access[0].upper() + "[/]" if i.access else "[red]?[/]", \
                    a.sym.describe(a.entries[i.addr])
            elif i.access and i.base == "sp":
                mark = "stack"
            elif i.access:
                mark = "[dim]" + i.access + "[/]" if a.kind in RETURNS_DST else "[bold red]✗ no entry[/]"
            table.add_row(f"{i.addr:#x}", escape(a.sym.describe(i.addr)), i.raw.hex(),
                          escape(f"{i.mnemonic} {i.op_str}".strip()), mark, escape(fixup))
        emit(console, table)
    if a.problems:
        emit(console, f"[bold red]{len(a.problems)} audit problem{'s' if len(a.problems) != 1 else ''}:[/]")
        for p in a.problems:
            emit(console, f"  {p.addr:#x} {escape(a.sym.describe(p.addr))}: {escape(p.what)}")
    else:
        emit(console, "[green]audit: no problems[/]")


def run_audit(root: Path, args: argparse.Namespace) -> int:
    if is_file_target(args.target):
        routines = file_routines(root, args.target, args, "linux")
        try:
            build.build_routines(root, routines)
        except CopyfuzzError as e:
            raise explain_build_failure(e, Path(args.target)) from e
    else:
        if args.symbol or args.define or args.alternative:
            raise CopyfuzzError("--symbol, -D and --alternative are for FILE.S targets")
        routines = bundled_routines(root, [args.target], args.xlen)
        build.build_routines(root, routines)
    build.check_runner(args.xlen)
    audits = [audit_routine(root, r) for r in routines]
    if args.json:
        print(json.dumps({"routines": [a.to_json() for a in audits]}, indent=2))
    else:
        for i, a in enumerate(audits):
            if i:
                emit(stdout_console())
            print_audit(a)
    return 1 if any(a.problems for a in audits) else 0
