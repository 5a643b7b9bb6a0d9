"""`copyfuzz audit ROUTINE | FILE.S --symbol SYM`: the static exception-table audit.

Exit 1 when the audit finds problems, 0 when it does not, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from . import build
from .audit import TABLE_KINDS, Audit, audit_routine
from .errors import CopyfuzzError
from .options import TargetCommandOptions
from .selection import bundled_routines, file_routines, is_file_target
from .ui import emit, escape, new_table, stdout_console

# How the listing names an access's base (audit.py: where its register's value came from).
BASE_LABELS = {"user": "user", "unknown": "user?", "stack": "stack", "data": "own data", "kernel": "kernel"}
# Rows of the text listing: a table costs about 1 ms a row to lay out (20,000 rows: 23 s
# of a 24 s audit); past this many, --json has them all.
LISTING_SHOWN = 2000


def print_audit(a: Audit, listing: bool = True) -> None:
    console = stdout_console()
    assert a.sym is not None
    s = a.summary
    emit(console, f"[bold]{escape(a.name)}[/] ({a.kind}, {a.table_format} table, {s['entries']} entries): "
                  f"{s['reachable']} reachable instructions, {s['loads']} loads, {s['stores']} stores")
    emit(console, f"  accesses: {s['user']} through the argument pointers, {s['unknown_base']} of unknown base, "
                  f"{s['stack']} on the stack, {s['data']} of the file's own data"
                  + (f", {s['kernel']} to the kernel's buffer" if s["kernel"] else "") + "; "
                  f"{s['covered']} covered, {s['uncovered']} uncovered, {s['fixups']} fixups")
    if listing:
        table = new_table(show_edge=False, pad_edge=False, box=None)
        for col in ("address", "where", "bytes", "instruction", "access", "", "fixup"):
            table.add_column(col, no_wrap=True)
        for i in a.listing[:LISTING_SHOWN]:
            mark, fixup, access = "", "", ""
            if i.access:
                access = f"{BASE_LABELS.get(i.origin or 'unknown', '?')} {i.access}"
            if i.addr in a.entries:
                mark = "[green]✓[/]" if i.access else "[red]?[/]"
                fixup = a.sym.describe(a.entries[i.addr])
            elif i.access and not a.needs_entry(i):
                mark = "[dim]no entry needed[/]"
            elif i.access:
                mark = "[dim]-[/]" if a.kind not in TABLE_KINDS else "[bold red]✗ no entry[/]"
            elif i.indirect:
                mark = "[yellow]indirect: not followed[/]"
            table.add_row(f"{i.addr:#x}", escape(a.sym.describe(i.addr)), i.raw.hex(),
                          escape(f"{i.mnemonic} {i.op_str}".strip()), access, mark, escape(fixup))
        emit(console, table)
        if len(a.listing) > LISTING_SHOWN:
            emit(console, f"  ... and {len(a.listing) - LISTING_SHOWN:,} more instructions (--json lists them all; "
                          "the problems below cover them all)")
    if a.problems:
        emit(console, f"[bold red]{len(a.problems)} audit problem{'s' if len(a.problems) != 1 else ''}:[/]")
        for p in a.problems:
            emit(console, f"  {p.addr:#x} {escape(a.sym.describe(p.addr))}: {escape(p.what)}")
    else:
        emit(console, "[green]audit: no problems[/]")


def run_audit(root: Path, args: argparse.Namespace) -> int:
    opts = TargetCommandOptions.from_args(args, positional="target", take_file=False)
    assert opts.routine is not None  # a required positional
    target = opts.target
    if is_file_target(opts.routine):
        routines = file_routines(root, opts.routine, target, "linux")
        build.build_routines(root, routines)
    else:
        if target.file.given():
            raise CopyfuzzError(f"{', '.join(target.file.given())}: for a FILE.S target only")
        routines = bundled_routines(root, [opts.routine], target.xlen, isa=target.isa)
        build.build_routines(root, routines)
    build.check_runners(routines)
    audits = [audit_routine(root, r) for r in routines]
    if args.json:
        print(json.dumps({"routines": [a.to_json() for a in audits]}, indent=2))
    else:
        for i, a in enumerate(audits):
            if i:
                emit(stdout_console())
            print_audit(a)
    return 1 if any(a.problems for a in audits) else 0
