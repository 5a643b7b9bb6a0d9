"""`copyfuzz repro SPEC|FILE`: run one case through `serve` and explain what happened.

FILE is a .spec file (its first spec line), a Hypothesis failure (a `.failure` file of
`copyfuzz fuzz --engine hypothesis`, or Hypothesis's own "Falsifying example: ...Case(...)"
text, with --routine), or a raw fuzzer input (libFuzzer artifact, AFL crash), decoded as
the driver decodes it for the routine given by --routine.

Exit 1 if the case shows a class that is an error under the profile, 0 if not,
2 for bad input (or an executor that cannot run).
"""

from __future__ import annotations

import argparse
import json
import sys
import typing
from dataclasses import replace
from pathlib import Path

from . import build, executor, fuzzinput, plan, records, regressions, signals, targets
from .elfinfo import Symbolizer, routine_symbolizer, where
from .errors import CopyfuzzError
from .options import ReproOptions
from .plugin import VIOL_LOAD_OOB, VIOL_OVERREAD, VIOL_STORE_OOB, PluginMemory
from .routines import Routine, discover, find
from .selection import file_routines, is_file_spec, with_isa
from .session import Need, Session, routine_argv
from .spec import Spec, format_spec, from_case, parse_fields, split_routine
from .ui import emit, escape, new_table, plural, stdout_console


def relative_address(addr: int, spec: Spec, result: records.Result) -> str:
    """`src+K` / `dst+K` when addr is near a placed buffer, else hex."""
    bases = [("dst", result.dst)]
    if spec.kind not in ("clear", "memset"):
        bases.insert(0, ("src", result.src))
    best: tuple[int, str] | None = None
    for name, base in bases:
        if not base:
            continue
        end = base + spec.n
        distance = 0 if base <= addr <= end + records.PAGE_SIZE else min(abs(addr - base), abs(addr - end))
        if distance <= 2 * records.PAGE_SIZE and (best is None or distance < best[0]):
            k = addr - base
            best = (distance, f"{name}+{k}" if k >= 0 else f"{name}-{-k}")
    return best[1] if best else f"{addr:#x}"


def correct_byte(cfref: plan.CfRef, spec: Spec, profile: str, off: int) -> int | None:
    """What a complete call stores at dst + off: zero (clear), the fill byte (memset), else
    the source byte there (None where the source has no readable byte)."""
    if spec.kind == "clear":
        return 0
    if spec.kind == "memset":
        return spec.fill & 0xFF
    return cfref.src_byte(spec.to_case(profile), off)


def difference_kind(spec: Spec, result: records.Result, correct: int | None = None) -> str | None:
    """What the first differing byte is, by where it lies (the oracle's ranges,
    docs/semantics.md): a wrong byte of the copy; past the count the routine reported,
    the byte a complete call stores there (correct: stored but not reported) or another
    one (a wrong byte past the reported count); or a byte outside [dst, dst + n)."""
    if not result.diff_count:
        return None
    off = result.diff_off
    if off < 0 or off >= spec.n:
        return "outside-the-buffer"
    returned = not set(result.class_list) & {"hang", "unhandled-fault", "crash"}
    if returned and spec.kind not in records.RETURNS_DST and off >= result.claimed:
        return "stored-but-not-reported" if result.diff_got == correct else "wrong-byte-past-reported"
    return "wrong-byte"


def _data_row(spec: Spec, result: records.Result, correct: int | None) -> str:
    """The first difference, each against its own reference: the source (or zero), or
    what the byte held before the call."""
    off, want, got = result.diff_off, result.diff_want, result.diff_got
    more = f"; {plural(result.diff_count, 'byte')} differ{'s' if result.diff_count == 1 else ''} in all"
    kind = difference_kind(spec, result, correct)
    done = "cleared" if spec.kind == "clear" else "copied"
    count = (f"the routine reported C = {result.claimed} bytes {done}: by its count this byte was not "
             f"touched{more}")
    source = {"clear": "zero", "memset": "the fill byte"}.get(spec.kind, "the source byte")
    if kind == "stored-but-not-reported":
        what = "zero, as a clear stores" if spec.kind == "clear" else "the correct source byte"
        return (f"stored but not reported ({what}): "
                f"dst{off:+d} now holds {got:#04x} (it held {want:#04x} before the call), but {count}")
    if kind == "wrong-byte-past-reported":
        should = f"{source} there is {correct:#04x}" if correct is not None else "the source has no readable byte there"
        return (f"stored a wrong byte past the reported count: dst{off:+d} now holds {got:#04x}, neither what it "
                f"held before the call ({want:#04x}) nor the byte a complete call stores ({should}); {count}")
    if kind == "outside-the-buffer":
        return (f"stored outside [dst, dst + n): dst{off:+d} now holds {got:#04x} (it held {want:#04x} "
                f"before the call){more}")
    return f"wrong byte: dst{off:+d} should be {source} {want:#04x}, it is {got:#04x}{more}"


def explain(spec: Spec, profile: str, result: records.Result, sym: Symbolizer | None,
            correct: int | None = None, *, arch: str) -> dict[str, object]:
    """Everything the report shows, as data (the --json output); correct is what a complete
    call stores at the first differing byte (correct_byte), when that byte is in [0, n)."""
    n, a = spec.n, result.accessible
    out: dict[str, object] = {
        "spec": format_spec(spec),
        "routine": spec.routine,
        "kind": spec.kind,
        "profile": profile,
        "n": n,
        "accessible": a,
        "claimed": result.claimed,
    }
    if spec.kind == "memset":
        out["fill"] = spec.fill
    if spec.kind == "memmove":
        out["disp"] = spec.disp
    if spec.kind in records.RETURNS_DST:
        out["ret"] = result.ret
        out["expected_ret"] = result.dst
    else:
        out["ret"] = result.ret
        out["expected_ret"] = n - a  # exact; linux allows less precision, see text
    out["data"] = {
        "differing_bytes": result.diff_count,
        "first_offset": result.diff_off if result.diff_count else None,
        "first_is": difference_kind(spec, result, correct),
        "correct_byte": correct if result.diff_count and 0 <= result.diff_off < n else None,
        "expected_byte": result.diff_want if result.diff_count else None,
        "actual_byte": result.diff_got if result.diff_count else None,
    }
    fault: dict[str, object] = {"count": result.faults}
    if result.faults:
        fault.update(
            pc=result.fault_pc,
            pc_symbol=where(sym, result.fault_pc),
            address=result.fault_addr,
            address_relative=relative_address(result.fault_addr, spec, result),
            fixup=result.fixup_pc or None,
            fixup_symbol=where(sym, result.fixup_pc) if result.fixup_pc else None,
            trail=fault_trail(result, spec, sym),
            returned_through=result.returned_through,
        )
    out["fault"] = fault
    out["signal"] = executor.signal_name(result.signal) if result.signal else None
    ended = signals.ended_by(result)
    if ended is not None:
        ended.update(pc_symbol=where(sym, result.fault_pc),
                     address_relative=relative_address(result.fault_addr, spec, result))
    out["ended_by"] = ended  # the signal that ended the call (crash, unhandled fault), with its reason
    out["registers_clobbered"] = records.reg_names(result.regs_bad, arch)
    if result.regs_bad:
        out["first_bad_register_value"] = result.reg_got
    errors = result.errors
    out["classes"] = result.class_list
    out["errors"] = records.class_names(errors)
    out["notes"] = records.class_names(result.classes & ~errors)
    out["dst"] = result.dst
    out["src"] = result.src if spec.kind not in ("clear", "memset") else None
    return out


def fault_trail(result: records.Result, spec: Spec, sym: Symbolizer | None) -> list[dict[str, object]]:
    """Every fault the record keeps, in order, with where the table sent each."""
    return [{"number": result.fault_number(i), "pc": pc, "pc_symbol": where(sym, pc), "address": addr,
             "address_relative": relative_address(addr, spec, result), "fixup": fixup or None,
             "fixup_symbol": where(sym, fixup) if fixup else None}
            for i, (pc, addr, fixup) in enumerate(result.trail)]


def _returned_code(result: records.Result) -> list[tuple[str, int, int]]:
    """The fault whose fixup made the return, and that fixup, for the code listing: when it
    is not the first fault (whose listing is there already)."""
    if result.returned_via < 2:
        return []
    pc, _, fixup = result.trail[result.returned_via - 1]
    return [("returned", pc, 3), ("returned_fixup", fixup, 0)]


def _trail_rows(result: records.Result, fault: dict[str, object]) -> list[tuple[str, str]]:
    """One row per fault of a call that took more than one, the one whose fixup made the
    return marked (issue 25: the first fault's fixup can be right and a later one's not)."""
    trail = fault.get("trail")
    if result.faults < 2 or not isinstance(trail, list):
        return []
    rows: list[tuple[str, str]] = []
    last = 0
    for t in trail:
        number = int(t["number"])
        if number > last + 1:
            rows.append(("", f"  … {plural(number - last - 1, 'fault')} not kept …"))
        last = number
        fixup = escape(str(t["fixup_symbol"])) if t["fixup"] else "[red]none[/]"
        mark = "  [bold]← the return came through this fixup[/]" if number == fault.get("returned_through") else ""
        rows.append(("", f"  {number}. pc {escape(str(t['pc_symbol']))}, address {t['address_relative']}, "
                         f"fixup -> {fixup}{mark}"))
    return rows


def _linux_range(n: int, a: int) -> str:
    if a >= n:
        return "N = 0"
    if a == 0:
        return f"N = {n} (nothing was accessible)"
    if a == 1:
        return f"N = {n - 1}"
    return f"{n - a} <= N <= {n - 1}"


# Outcomes after which a0 means nothing: the routine never came back.
_NO_RETURN = ("hang", "unhandled-fault", "crash")


def memcheck_report(plugin: PluginMemory) -> dict[str, object]:
    """The plugin's view of the case: its counters and the first access of each kind
    outside the windows."""
    now = plugin.shm.now
    violations = []
    for bit, name, v in ((VIOL_STORE_OOB, "store outside [dst, dst + n)", now.store_oob),
                         (VIOL_LOAD_OOB, "load outside [src, src + n)", now.load_oob),
                         (VIOL_OVERREAD, "aligned load reaching past the source", now.overread)):
        if now.viol & bit:
            violations.append({"what": name, "pc": v.pc, "address": v.addr, "size": v.size})
    return {"counters": now.as_dict(), "violations": violations}


def _observed_rows(spec: Spec, result: records.Result, report: dict[str, object],
                   gone: list[str]) -> list[tuple[str, str]]:
    """What the executor saw of the call: return value, data, fault, registers."""
    n, a = spec.n, result.accessible
    rows: list[tuple[str, str]] = []
    if gone:
        rows.append(("return", f"[red]none: the routine did not return ({', '.join(gone)})[/]"))
    elif spec.kind in records.RETURNS_DST:
        got = "dst" if result.ret == result.dst else relative_address(result.ret, spec, result)
        rows.append(("return", f"{got}   expected dst"))
    else:
        ok = result.ret == n - a
        mark = "" if ok else "  [red]<- differs[/]"
        rows.append(("return", f"N = {result.ret}   expected N = n - A = {n - a} (exact); "
                               f"linux allows {_linux_range(n, a)}{mark}"))
        done = "cleared" if spec.kind == "clear" else "copied"
        rows.append(("claimed", f"C = n - N = {plural(result.claimed, 'byte')} claimed {done}"))
    sides = {"clear": "accessible", "memset": "accessible",
             "memmove": f"accessible on both sides (one mapping, src = dst{-spec.disp:+d})",
             "copy_from_user": "of the user source accessible (dst is the kernel's)",
             "copy_to_user": "of the user destination accessible (src is the kernel's)"}.get(
        spec.kind, "accessible on both sides")
    rows.append(("accessible", f"A = {plural(a, 'leading byte')} {sides} (n = {n})"))
    if result.diff_count:
        data = report["data"]
        assert isinstance(data, dict)
        rows.append(("data", _data_row(spec, result, data["correct_byte"])))
    else:
        rows.append(("data", "destination and canaries as expected"))
    fault = report["fault"]
    assert isinstance(fault, dict)
    ended = report.get("ended_by")
    if isinstance(ended, dict):
        what = "no table entry for this pc" if ended["signal"] in ("SIGSEGV", "SIGBUS") else \
            "not a user-access fault: no fixup applies"
        text = f"[red]{ended['signal']} ({escape(str(ended['reason']))})[/] at pc {escape(str(ended['pc_symbol']))}"
        if ended["signal"] in ("SIGSEGV", "SIGBUS"):
            text += f", address {ended['address_relative']}"
        rows.append(("signal", f"{text}: {what}"))
        if ended["handled_before"]:
            rows.append(("fault", f"{plural(int(ended['handled_before']), 'fault')} handled before it"))
            rows += _trail_rows(result, fault)
    elif result.faults:
        fixup = fault["fixup_symbol"] or "[red]none[/]"
        signal_name = (f" ({executor.signal_name(result.signal)}: "
                       f"{signals.reason(result.signal, signals.si_code(result))})" if result.signal else "")
        rows.append(("fault", f"{plural(result.faults, 'fault')} taken{signal_name}; first at pc "
                              f"{fault['pc_symbol']}, address {fault['address_relative']}, fixup -> {fixup}"))
        rows += _trail_rows(result, fault)
    else:
        rows.append(("fault", "none taken"))
        if result.signal:
            rows.append(("signal", executor.signal_name(result.signal)))
    ex = report.get("executor")
    if isinstance(ex, dict) and "extable" in ex:
        table_text = "none: no fixups" if ex["extable"] == "none" else \
            f"{ex['extable']} format, {ex.get('extable_entries', '?')} entries"
        rows.append(("extable", table_text))
    mem = report.get("memcheck")
    if isinstance(mem, dict):
        c = mem["counters"]
        rows.append(("memcheck", f"{c['insns']:,} instructions, {c['loads']:,} loads, {c['stores']:,} stores, "
                                 f"{c['misaligned']} misaligned (QEMU plugin)"))
        for v in mem["violations"]:
            rows.append(("", f"[red]{v['what']}[/]: {v['size']}-byte access at {v['address_relative']} "
                             f"by {v['pc_symbol']}"))
    if result.regs_bad:
        regs = ", ".join(typing.cast("list[str]", report["registers_clobbered"]))
        rows.append(("registers", f"[red]clobbered: {regs}[/] (first bad value {result.reg_got:#x})"))
    elif gone:
        rows.append(("registers", "not checked: the routine did not return"))
    else:
        rows.append(("registers", "preserved"))
    return rows


def _print(spec: Spec, profile: str, result: records.Result, report: dict[str, object]) -> None:
    console = stdout_console()
    emit(console, f"[bold]{escape(format_spec(spec))}[/]  ({spec.kind}, profile {profile})")
    rows: list[tuple[str, str]] = []
    gone = [c for c in _NO_RETURN if c in result.class_list]
    died = report.get("executor_died")
    if died:
        # Nothing else was observed: the process that would have observed it is gone.
        rows.append(("return", f"[red]none: the routine did not return ({', '.join(gone)})[/]"))
        rows.append(("executor", f"[red]{escape(str(died))}[/] (the routine runs inside it with all "
                                 "its rights: copyfuzz is not a sandbox)"))
    else:
        rows += _observed_rows(spec, result, report, gone)
    errors = records.class_names(result.errors)
    notes = records.class_names(result.classes & ~result.errors)
    for label, names, style in (("errors", errors, "red"), ("notes", notes, "yellow")):
        if not names:
            rows.append((label, "none"))
        for i, c in enumerate(names):
            rows.append((label if i == 0 else "", f"[{style}]{c}[/]: {records.CLASS_BY_NAME[c].about}"))
    table = new_table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for label, text in rows:
        table.add_row(f"  {label}", text)
    emit(console, table)
    code = report.get("code")
    if isinstance(code, dict):
        for label, rows_ in code.items():
            title = {"fault": "the first fault", "fixup": "the fixup it resumed at",
                     "signal": "where the signal ended the call",
                     "returned": "the fault whose fixup made the return",
                     "returned_fixup": "that fixup"}[label]
            emit(console, f"  [bold]{title}[/] (Capstone):")
            for r in rows_:
                mark = "[red]→[/]" if r["at"] else " "
                emit(console, f"    {mark} {r['address']:#x}  {escape(str(r['where'])):<28} {escape(str(r['insn']))}")


def _routine(root: Path, opts: ReproOptions, name: str) -> Routine:
    """A bundled routine, or 'path/file.S:symbol' built like `copyfuzz check` builds it."""
    target = opts.target
    if is_file_spec(name):
        path, symbol = name.rsplit(":", 1)
        target = replace(target, file=replace(target.file, symbol=(symbol,)))
        return file_routines(root, path, target, opts.profile or "linux")[0]
    if target.file.given():
        raise CopyfuzzError(f"{', '.join(target.file.given())}: for FILE.S:SYMBOL specs only")
    return with_isa(find(discover(root), name), target.xlen, target.isa)


def spec_argument(opts: ReproOptions, audit_on: bool = True) -> tuple[str, str | bytes, ReproOptions]:
    """(routine name, spec fields) or, for a raw fuzzer input, (routine name, its bytes); and
    the options as a .spec file settles them: what its `# options:` line saved filled in,
    and (audit_on, repro's) --memcheck on when its class comes from the memory audit."""
    path = Path(opts.spec)
    if not path.is_file():
        if opts.routine:
            why = "no such file" if not path.exists() else "not a regular file"
            raise CopyfuzzError(f"{opts.spec}: {why} (--routine is for a FILE argument: a spec file or a raw "
                                "fuzzer input)")
        name, fields = split_routine(opts.spec)
        return name, fields, opts
    kind, content = fuzzinput.read_case_file(path)
    if kind == "spec":
        if not content:
            raise CopyfuzzError(f"{path}: no case spec in it")
        routine, fields = content[0]
        routine = routine or opts.routine
        if not routine:
            raise CopyfuzzError(f"{path}: its spec names no routine: say which with --routine NAME")
        head = regressions.header(path)
        options = head.get("options")
        if options:  # a file routine's build, any routine's --xlen and --isa
            opts = replace(opts, target=opts.target.with_saved(options, str(path)))
        named = (head.get("class", ""), *head.get("classes", "").split(","))
        audit = [c for c in named if c in records.MEMCHECK_CLASSES]
        if audit_on and audit and not opts.memcheck:  # replay runs it under the audit too: they must agree
            opts = replace(opts, memcheck=True)
            print(f"copyfuzz: {path}: its class {audit[0]} comes from the memory audit: --memcheck on",
                  file=sys.stderr)
        return routine, fields, opts
    if kind == "hypothesis":
        if not opts.routine:
            raise CopyfuzzError(f"{path} is a Hypothesis failure: say which routine it is for with --routine NAME")
        assert isinstance(content, records.Case)
        return opts.routine, format_spec(from_case(opts.routine, content)).rpartition(":")[2], opts
    if not opts.routine:
        raise CopyfuzzError(f"{path} is a raw fuzzer input: say which routine it is for with --routine NAME")
    assert isinstance(content, bytes)
    return opts.routine, content, opts


def run_repro(root: Path, args: argparse.Namespace) -> int:
    name, rest, opts = spec_argument(ReproOptions.from_args(args))
    routine = _routine(root, opts, name)
    if isinstance(rest, bytes):
        spec = fuzzinput.decode(root, rest, routine.kind, opts.raw_max_len, routine.name, opts.granule)
    elif opts.max_len is not None or opts.granule:
        given = "--max-len" if opts.max_len is not None else "--granule"
        raise CopyfuzzError(f"{given} is for a raw fuzzer input FILE (decoded as its campaign decoded it); "
                            "a case spec says its own n and granule")
    else:
        try:
            spec = parse_fields(routine.name, routine.kind, rest)
        except CopyfuzzError as e:  # a spec from a file: say which file, as replay does
            raise CopyfuzzError(f"{opts.spec}: {e}" if Path(opts.spec).is_file() else str(e)) from None
    targets.require_mte([(routine.name, routine.arch)], spec.granule)
    profile = opts.profile or routine.profile
    build.build_routines(root, [routine])
    build.check_runner(routine.xlen, routine.arch)
    info = executor.info(routine_argv(root, routine))
    memcheck = opts.memcheck or "memcheck" in routine.needs
    if memcheck:
        build.build_host(root, ["plugin"])
    # The plugin only for the memory audit (natively refused): a plain repro runs as the sweep does.
    with Session(root, routine, Need.MEMCHECK if memcheck else Need.NONE, timeout_ms=opts.timeout_ms,
                 granule=spec.granule) as server:
        result = server.accepted(server.run(spec.to_case(profile)))
        died = server.last_death
        memory = memcheck_report(server.plugin) if server.plugin and not died else None
    if result.type != records.RESULT_CASE:
        raise executor.ExecutorError(f"serve answered with a result of type {result.type}, not a case result")
    correct = correct_byte(plan.load(root), spec, profile, result.diff_off) \
        if result.diff_count and 0 <= result.diff_off < spec.n else None
    report = explain(spec, profile, result, routine_symbolizer(root, routine, info), correct,
                     arch=routine.arch)
    report["executor_died"] = died
    report["executor"] = {k: info[k] for k in ("arch", "extable", "extable_entries", "xlen") if k in info}
    sym_for_code = routine_symbolizer(root, routine, info)
    first = "signal" if report["ended_by"] else "fault"
    report["code"] = {label: signals.code_rows(root / routine.elf, routine.xlen, sym_for_code, pc, before, 4,
                                                arch=routine.arch)
                      for label, pc, before in ((first, result.fault_pc, 3), ("fixup", result.fixup_pc, 0),
                                                *_returned_code(result))
                      if pc}
    if memory is not None:
        sym = routine_symbolizer(root, routine, info)
        for v in memory["violations"]:  # type: ignore[attr-defined]
            v["pc_symbol"] = where(sym, v["pc"])
            v["address_relative"] = relative_address(v["address"], spec, result)
        report["memcheck"] = memory
    if opts.json:
        print(json.dumps(report, indent=2))
    else:
        _print(spec, profile, result, report)
    return 1 if result.errors else 0
