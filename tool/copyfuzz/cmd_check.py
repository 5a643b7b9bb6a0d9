"""`copyfuzz check FILE.S --symbol SYM[:KIND]`: a kernel-style file, unmodified.

Builds the file against the compat include tree, audits its exception table,
then sweeps each symbol like `copyfuzz sweep` (same options, same JSON, same
exit status: 0 clean, 1 findings or audit problems, 2 bad input or build error).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from . import build, executor
from .checkfile import BSD_COPY_NAMES, no_extable_message
from .cmd_sweep import Extension, RoutineSweep, check_granule, check_sweep_args, sweep_and_report
from .errors import CopyfuzzError
from .options import CheckOptions, KernelBuildOptions
from .records import RETURNS_DST, USER_COPIES
from .routines import Routine
from .selection import file_routines
from .session import routine_argv
from .spec import format_spec, from_case


def build_file_routines(root: Path, path: Path, routines: list[Routine]) -> None:
    """Build a file's routines and refuse a copy or clear routine whose file has no
    exception table (CopyfuzzError, with the assembler's messages as details when the file
    does not build)."""
    build.build_routines(root, routines)
    for r in routines:
        if r.kind in RETURNS_DST and r.symbol not in BSD_COPY_NAMES:
            continue
        info = executor.info(routine_argv(root, r))
        message = no_extable_message(path, r.symbol, r.kind) if info.get("extable") == "none" else None
        if message and r.kind_reason:  # a kind from the name: say so, it may be the name that misleads
            message += f" (the {r.kind_reason})"
        if message:
            raise CopyfuzzError(message)


def run_check(root: Path, args: argparse.Namespace) -> int:
    opts = CheckOptions.from_args(args)
    sweep = opts.sweep
    baseline = check_sweep_args(sweep)
    assert sweep.profile is not None  # check's --profile has a default
    routines = file_routines(root, opts.file, sweep.target, sweep.profile)
    check_granule(sweep, routines)
    plan = confirm_plan(root, opts, routines) if opts.confirm else None
    build_file_routines(root, Path(opts.file), routines)
    return sweep_and_report(root, sweep, routines, baseline, plan)


def confirm_plan(root: Path, opts: CheckOptions, routines: list[Routine]) -> Extension:
    """--confirm: each error class's smallest reproducer of each user-copy symbol, run as
    the syscalls that drive it on a kernel built with FILE in its place (kernel/confirm.py).
    What can be refused is refused before the sweep: the file's place in the tree, the
    architecture, the kernel source."""
    # Imported here: a check without --confirm does not load the kernel modules.
    from .cmd_confirm import call_lines, call_results
    from .kernel import build as kbuild
    from .kernel import confirm as kconfirm
    from .kernel import inputs as kinputs
    from .kernel import options as koptions
    from .kernel import report as kreport
    from .kernel import runner as krunner

    f = opts.sweep.target.file
    given = [flag for flag, v in (("-D", f.define), ("-I", f.include), ("--with", f.with_files),
                                  ("--defsym", f.defsym), ("--alternative", f.alternative)) if v]
    if given:
        raise CopyfuzzError(f"--confirm builds {opts.file} inside the kernel, where {', '.join(given)} do not "
                            "apply (the kernel's own headers and configuration decide): check without them, "
                            "or confirm a file that needs none")
    located = kconfirm.tree_path(opts.file)
    rel = kinputs.tree_path(opts.confirm_as, "--confirm-as") if opts.confirm_as else (located[1] if located else None)
    if rel is None:
        raise CopyfuzzError(f"--confirm: where does {opts.file} go in the kernel tree? Its path has no "
                            "arch/<arch>/ part: say so with --confirm-as, e.g. --confirm-as arch/riscv/lib/uaccess.S")
    arch = routines[0].arch
    for where in (rel, opts.file if located else ""):
        other = kconfirm.tree_path(where) if where else None
        if other is not None and other[0] != arch:
            raise CopyfuzzError(f"--confirm: {where} is {other[0]}'s, not {arch}'s: a {arch} kernel never runs it")
    if arch not in koptions.KERNEL_ARCHES or (arch == "riscv" and routines[0].xlen != 64):
        raise CopyfuzzError(f"--confirm: no booted kernel for {arch} at {routines[0].xlen} bits "
                            "(riscv RV64, arm64, arm)")
    kargs = KernelBuildOptions(arch=arch, tree=opts.kernel_tree, source=opts.kernel_source)
    kinputs.check(root, kargs)
    content = kinputs.read_limited(Path(opts.file), "--confirm:")
    kbuild.ensure_packages(root)
    source_root = kinputs.request(root, kargs).source.root
    if not kinputs.file_of_tree(source_root, rel):
        raise CopyfuzzError(f"--confirm: {rel} is not a file of the kernel source (--confirm-as sets the path)")
    extra = () if (source_root / rel).read_bytes() == content else ((rel, content),)

    def extend(results: list[RoutineSweep]) -> tuple[str, object, list[str]]:
        # symbol, the classes whose smallest reproducer a spec is, the spec, its mapping or why none
        asked: dict[tuple[str, str], tuple[list[str], kconfirm.Mapping | str]] = {}
        for r in results:
            if r.routine.kind not in USER_COPIES:
                continue
            for cls, found in sorted(r.reproducers.items()):
                if cls not in r.findings:
                    continue  # notes (imprecise) are no finding to confirm
                s = from_case(r.routine.name, found.case)
                key = (r.routine.symbol, format_spec(s))
                if key in asked:
                    asked[key][0].append(cls)
                    continue
                try:
                    m: kconfirm.Mapping | str = kconfirm.map_case(r.routine.kind, s.n, s.src_off, s.src_fault,
                                                                   s.dst_off, s.dst_fault)
                except CopyfuzzError as e:
                    m = str(e).removeprefix("confirm: ")
                asked[key] = ([cls], m)
        cases = sorted({c for _, m in asked.values() if not isinstance(m, str) for c in kconfirm.syscall_cases(m)})
        own = " replaced" if extra else ", the tree's own"
        lines = ["", f"confirm on a booted {arch} kernel ({rel}{own}):"]
        out: list[dict[str, object]] = []
        if not cases:
            lines.append("  nothing to confirm: no user-copy finding that a syscall drives")
            for (symbol, spec_text), (classes, m) in asked.items():
                out.append({"symbol": symbol, "classes": classes, "spec": spec_text, "why_not": m, "syscalls": []})
            return "confirm", {"kernel": None, "findings": out}, lines
        kernel = kbuild.build(root, kinputs.request(root, kargs, extra=extra))
        pargs = ["--timeout", str(opts.confirm_timeout)] + [w for c in cases for w in ("--case", c)]
        vm, host, workdir = krunner.sweep_cases(root, kernel, pargs, 1, None, True, opts.confirm_timeout)
        rep = kreport.Report(kernel, vm, host, workdir, opts.sweep.findings, None, pargs)
        lines[1] = f"confirm on the booted kernel: {kernel.arch.name}, {kernel.label}"
        for (symbol, spec_text), (classes, m) in asked.items():
            lines.append(f"  {symbol} {', '.join(classes)} {spec_text.rpartition(':')[2]}:")
            if isinstance(m, str):
                lines.append(f"    no syscall drives it: {m}")
                out.append({"symbol": symbol, "classes": classes, "spec": spec_text, "why_not": m, "syscalls": []})
                continue
            calls = call_results(kconfirm.syscall_cases(m), vm, host, rep)
            lines += call_lines(calls, vm, rep, "    ")
            out.append({"symbol": symbol, "classes": classes, "spec": spec_text, "note": m.note or None,
                        "syscalls": calls})
        return "confirm", {"kernel": rep.to_json()["kernel"], "findings": out}, lines

    return extend
