"""`copyfuzz cov ROUTINE [--sweep | --corpus DIR]`: which instructions ran, how often.

Runs cases under the QEMU plugin, which counts every execution of every
instruction of the routine (and its fixups) and how execution left it; the
executor counts every fault taken through each exception-table entry. The
listing is Capstone's, annotated: execution count, the branch directions taken,
the table entry and how often it was taken, never-executed instructions marked.
The summary gives the share of instructions and of edges (branch directions and
fault paths, coverage.py). In the terminal, and with --html FILE as one HTML file.
"""

from __future__ import annotations

import argparse
import dataclasses
import html
import json
import sys
from pathlib import Path
from typing import Any

from . import build, executor, files, fuzzinput, plan, plugin, records, regressions, targets
from .audit import Audit, audit_routine
from .coverage import Coverage, from_plugin
from .errors import CopyfuzzError
from .options import TargetCommandOptions
from .plugin import PluginMemory
from .routines import Routine
from .selection import bundled_routines, file_routines
from .session import Need, Session, plugin_memory, routine_argv
from .spec import from_case, parse_fields
from .ui import emit, escape, new_table, stdout_console

SWEEP_MAX_LEN = 64  # cov's sweep, without --max-len


def _cases(count: object) -> str:
    """'1 case', '12,345 cases'."""
    n = int(count)  # type: ignore[call-overload]
    return f"{n:,} case{'' if n == 1 else 's'}"


def corpus_cases(root: Path, directory: Path, routine: Routine, profile: str, max_len: int = fuzzinput.DEFAULT_MAX_LEN,
                 granule: int = 0) -> list[tuple[str, records.Case]]:
    """(where, case) of every file under DIR: binary case records (64 bytes each), case specs (one
    per line), or a fuzz engine's input (libFuzzer corpus, AFL++ queue), decoded as the driver of a
    campaign with this max_len and granule decodes it."""
    if not directory.is_dir():
        raise CopyfuzzError(f"--corpus {directory}: not a directory")
    cases: list[tuple[str, records.Case]] = []
    for path in fuzzinput.case_files(directory):
        data = files.read_input_bytes(path, regressions.CASE_FILE_LIMIT)
        if len(data) % records.CASE_SIZE == 0 and data[:4] == records.CASE_MAGIC.to_bytes(4, "little"):
            for off in range(0, len(data), records.CASE_SIZE):
                cases.append((f"{path} (record {off // records.CASE_SIZE})",
                              records.Case.unpack(data[off:off + records.CASE_SIZE])))
            continue
        kind, content = fuzzinput.case_of(path, data)  # regressions.py reads the spec formats
        if kind == "raw":
            cases.append((str(path), fuzzinput.decode(root, data, routine.kind, max_len, routine.name,
                                                      granule).to_case(profile)))
        elif kind == "hypothesis":
            assert isinstance(content, records.Case)
            cases.append((str(path), from_case(routine.name, content).to_case(profile)))
        else:
            for i, (name, fields) in enumerate(content):
                where = f"{path} (case {i + 1})"
                try:
                    if name is not None and name != routine.name:
                        raise CopyfuzzError(f"the spec is for {name}, not {routine.name}")
                    cases.append((where, parse_fields(routine.name, routine.kind, fields).to_case(profile)))
                except CopyfuzzError as e:
                    raise CopyfuzzError(f"{where}: {e}") from e
    if not cases:
        raise CopyfuzzError(f"--corpus {directory}: no cases found")
    return cases


def collect(root: Path, routine: Routine, corpus: str | None, max_len: int | None, granule: int, audit: Audit
            ) -> tuple[dict[int, int], dict[int, int], list[int], Coverage]:
    """corpus, max_len, granule: cov's --corpus, --max-len and --granule."""
    # The plugin as fuzz runs it (the memory audit on; natively refused): cov reports its counts.
    if corpus:
        cases = corpus_cases(root, Path(corpus), routine, routine.profile,
                             fuzzinput.DEFAULT_MAX_LEN if max_len is None else max_len, granule)
        with Session(root, routine, Need.MEMCHECK, granule=granule) as server:  # the plugin adds up over them all
            results = server.run_many([dataclasses.replace(case, id=i) for i, (_, case) in enumerate(cases)])
            # A case the executor refused ran nothing: counted as nothing, the coverage would be wrong.
            for (where, _), result in zip(cases, results, strict=True):
                server.accepted(result, f"{where}: ")
            assert server.plugin is not None
            return _counted(server.plugin, audit)
    with plugin_memory(root, routine, Need.MEMCHECK) as plugin:
        sweep_plan = plan.SweepPlan(plan.load(root), routine.kind, routine.profile, routine.xlen,
                                    SWEEP_MAX_LEN if max_len is None else max_len, granule=granule)
        for _ in executor.sweep(routine_argv(root, routine), sweep_plan, jobs=1, plugins=[plugin],
                                label=routine.name):
            pass
        return _counted(plugin, audit)


def _counted(plugin: PluginMemory, audit: Audit) -> tuple[dict[int, int], dict[int, int], list[int], Coverage]:
    return plugin.insn_counts(), plugin.insn_flow(), list(plugin.shm.extable_hits), from_plugin(audit, plugin)


def _directions(insn_flow: int) -> str:
    """A conditional branch's directions seen: 'taken', 'not taken', 'both'."""
    both = plugin.FLOW_NEXT | plugin.FLOW_JUMP
    return {both: "both", plugin.FLOW_JUMP: "taken", plugin.FLOW_NEXT: "not taken"}.get(insn_flow & both, "")


def report(a: Audit, counts: dict[int, int], flow: dict[int, int], hits: list[int], cov: Coverage
           ) -> dict[str, Any]:
    assert a.sym is not None
    taken = {insn: hits[i] for i, (insn, _fixup) in enumerate(a.table) if i < len(hits)}
    rows = []
    for i in a.listing:
        rows.append({"address": i.addr, "where": a.sym.describe(i.addr), "count": counts.get(i.addr, 0),
                     "insn": f"{i.mnemonic} {i.op_str}".strip(), "bytes": i.raw.hex(),
                     "entry": a.sym.describe(a.entries[i.addr]) if i.addr in a.entries else None,
                     "taken": taken.get(i.addr, 0) if i.addr in a.entries else None,
                     "branch": _directions(flow.get(i.addr, 0)) if i.flow == "branch" else None})
    entries = [r for r in rows if r["entry"] is not None]
    return {"routine": a.name, "cases": cov.cases, "instructions": cov.instructions, "executed": cov.executed,
            "entries": len(entries), "entries_taken": sum(1 for r in entries if r["taken"]),
            "coverage": cov.to_json(), "summary": cov.line(), "listing": rows}


def print_report(rep: dict[str, Any]) -> None:
    console = stdout_console()
    table = new_table(show_edge=False, pad_edge=False, box=None)
    for col in ("address", "where", "count", "instruction", "branch", "exception table"):
        table.add_column(col, justify="right" if col == "count" else "left", no_wrap=True)
    for r in rep["listing"]:
        count = f"{r['count']:,}" if r["count"] else "[bold red]never[/]"
        entry = ""
        if r["entry"] is not None:
            entry = f"→ {escape(r['entry'])}, " + (f"taken {r['taken']:,}×" if r["taken"] else "never taken")
        branch = r["branch"]
        branch = "" if branch is None else (f"[bold red]{branch or 'never'}[/]" if branch != "both" else "both ways")
        table.add_row(f"{r['address']:#x}", escape(str(r["where"])), count, escape(str(r["insn"])), branch, entry)
    emit(console, table)
    emit(console, f"[bold]{rep['routine']}[/]: {_cases(rep['cases'])}; {rep['summary']}")


def write_html(rep: dict[str, Any], path: Path) -> None:
    rows = rep["listing"]
    top = max([r["count"] for r in rows] + [1])
    out = ["<!doctype html><meta charset=utf-8><title>copyfuzz cov: " + html.escape(str(rep["routine"])) + "</title>",
           "<style>body{font:13px monospace;margin:2em}td,th{padding:1px 8px;text-align:left}"
           "tr.never td{background:#fdd}td.n{text-align:right}td.e{color:#555}</style>",
           f"<h1>{html.escape(str(rep['routine']))}</h1><p>{_cases(rep['cases'])}; {html.escape(str(rep['summary']))}."
           " Red: never executed.</p>",
           "<table><tr><th>address<th>where<th>count<th>instruction<th>branch<th>exception table</tr>"]
    for r in rows:
        shade = int(255 - 120 * (r["count"] / top) ** 0.3) if r["count"] else 255
        style = f' style="background:rgb({shade},{shade},255)"' if r["count"] else ""
        entry = "" if r["entry"] is None else (
            f"→ {html.escape(r['entry'])}, " + (f"taken {r['taken']:,}×" if r["taken"] else "never taken"))
        ran = "ran" if r["count"] else "never"
        out.append(f"<tr class={ran}><td>{r['address']:#x}<td>{html.escape(r['where'])}"
                   f"<td class=n{style}>{r['count']:,}<td>{html.escape(r['insn'])}"
                   f"<td>{'' if r['branch'] is None else html.escape(r['branch'] or 'never')}<td class=e>{entry}</tr>")
    out.append("</table>")
    path.write_text("\n".join(out) + "\n")


def run_cov(root: Path, args: argparse.Namespace) -> int:
    opts = TargetCommandOptions.from_args(args)
    if args.html:  # before the run, not after it
        files.check_file(Path(args.html), "--html")
    target = opts.target
    if opts.file:
        routine = file_routines(root, opts.file, target, "linux")[0]
    else:
        if not opts.routine:
            raise CopyfuzzError("name a routine (copyfuzz list), or a file: FILE.S --symbol S")
        routine = bundled_routines(root, [opts.routine], target.xlen, isa=target.isa)[0]
    targets.require_mte([(routine.name, routine.arch)], args.granule or 0)
    build.build_routines(root, [routine])
    build.build_host(root, ["plugin"])
    build.check_runner(routine.xlen, routine.arch)
    audit = audit_routine(root, routine)
    counts, flow, hits, cov = collect(root, routine, args.corpus, args.max_len, args.granule or 0, audit)
    rep = report(audit, counts, flow, hits, cov)
    # The results first: a failed write of the HTML loses none of them.
    if args.json:
        print(json.dumps({**rep, "listing": [{**r, "address": f"{r['address']:#x}"} for r in rep["listing"]]},
                         indent=2))
    else:
        print_report(rep)
    if args.html:
        sys.stdout.flush()
        with files.writing(Path(args.html), "--html"):
            write_html(rep, Path(args.html))
        if not args.json:
            emit(stdout_console(), f"wrote {args.html}")
    return 0
