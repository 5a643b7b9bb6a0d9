"""`copyfuzz list`: the routines and mutants under arch/."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .routines import Routine, discover
from .ui import emit, new_table, stdout_console


def routine_json(r: Routine) -> dict[str, object]:
    out: dict[str, object] = {
        "name": r.name,
        "kind": r.kind,
        "profile": r.profile,
        "symbol": r.symbol,
        "mutant": r.is_mutant,
        "about": r.about,
        "path": str(r.path),
        "executor": r.elf,
    }
    if r.is_mutant:
        out["expect"] = list(r.expect)
    return out


def run_list(root: Path, args: argparse.Namespace) -> int:
    routines = discover(root)
    if args.json:
        print(json.dumps([routine_json(r) for r in routines], indent=2))
        return 0
    console = stdout_console()
    if not routines:
        emit(console, f"no routines under {root / 'arch'}")
        return 0
    table = new_table(title="routines", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("routine", "kind", "profile", "symbol", "mutant", "about / expect"):
        table.add_column(column, no_wrap=column != "about / expect")
    for r in routines:
        about = r.about
        if r.is_mutant:
            about = f"expect {','.join(r.expect)}" + (f": {r.about}" if r.about else "")
        table.add_row(r.name, r.kind, r.profile, r.symbol, "mutant" if r.is_mutant else "", about)
    emit(console, table)
    return 0
