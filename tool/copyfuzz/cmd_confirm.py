"""`copyfuzz confirm SPEC`: a routine-level finding shown (or not) at the syscall level.

What it does: kernel/options.CONFIRM_ABOUT (its --help says the same).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from . import infer, regressions, targets
from . import spec as specs
from .cmd_repro import spec_argument
from .errors import CopyfuzzError
from .kernel import build as kbuild
from .kernel import confirm, inputs, report, runner
from .kernel import vm as kvm
from .kernel.sweep import Result
from .options import ConfirmOptions, ReproOptions
from .selection import is_file_spec


def run_confirm(root: Path, args: argparse.Namespace) -> int:
    opts = ConfirmOptions.from_args(args)
    saved = regressions.read_specs(Path(opts.spec)) if Path(opts.spec).is_file() else []
    if len(saved) > 1:
        raise CopyfuzzError(f"{opts.spec}: {len(saved)} case specs in it: "
                            "confirm takes one (give it as SPEC on the command line)")
    # A .spec file's saved `# options:` fill in the kind, --arch and --cpu not given (and
    # say what the case was built with); confirm runs no executor: no --memcheck to settle.
    name, rest, settled = spec_argument(ReproOptions(opts.spec, opts.target), audit_on=False)
    target = settled.target
    if isinstance(rest, bytes):
        raise CopyfuzzError("confirm takes a case spec or a .spec file, not a raw fuzzer input "
                            "(turn it into a spec with 'copyfuzz repro --routine NAME FILE' first)")
    if not is_file_spec(name):
        raise CopyfuzzError(f"confirm: {name!r} is not FILE.S:SYMBOL: a case of a kernel file's routine "
                            "(FILE.S:SYMBOL:n=...); copyfuzz's own routines are in no kernel")
    f = target.file
    built_as = [flag for flag, v in (("-D", f.define), ("-I", f.include), ("--with", f.with_files),
                                     ("--defsym", f.defsym), ("--alternative", f.alternative)) if v]
    if built_as or target.xlen not in (None, 64):
        raise CopyfuzzError(f"confirm: the case was found with {', '.join(built_as) or '--xlen 32'}, which a kernel "
                            "build does not see (the kernel's own headers, configuration and RV64 decide): its "
                            "syscalls would not run the code that was checked")
    path, symbol = name.rsplit(":", 1)
    kind, why, refused = f.kind, "", None
    if not kind:
        try:
            kind, why = confirm_kind(path, symbol)
        except CopyfuzzError as e:  # said after the checks of the file and the symbol
            kind, refused = "copy", e
    case = specs.parse_fields(name, kind, rest)
    mapping = confirm.map_case(kind, case.n, case.src_off, case.src_fault, case.dst_off, case.dst_fault)
    located = confirm.tree_path(path)
    rel = inputs.tree_path(opts.tree_path, "--as") if opts.tree_path else (located[1] if located else None)
    if rel is None:
        raise CopyfuzzError(f"confirm: where does {path} go in the kernel tree? Its path has no arch/<arch>/ "
                            "part: say so with --as, e.g. --as arch/riscv/lib/uaccess.S")
    arch = f.arch
    if arch is None:  # the file's path says, or --as does
        said = located or confirm.tree_path(rel)
        if said is None:
            raise CopyfuzzError("confirm: which architecture? add --arch riscv|arm64|arm")
        arch = said[0]
    for where in (rel, path if located else ""):
        other = confirm.tree_path(where) if where else None
        if other is not None and other[0] != arch:
            raise CopyfuzzError(f"confirm: {where} is {other[0]}'s, not {arch}'s: a {arch} kernel never "
                                "runs it")
    if not 0 < opts.timeout <= 3600:
        raise CopyfuzzError(f"--timeout {opts.timeout}: must be in (0, 3600] seconds")
    kernel_opts = opts.kernel(arch)
    content = inputs.read_limited(Path(path), "confirm:")
    if not re.search(rb"(?<![\w.$])" + re.escape(symbol.encode()) + rb"(?![\w.$])", content):
        raise CopyfuzzError(f"confirm: {path} never names {symbol}")
    if refused is not None:
        raise refused
    inputs.check(root, kernel_opts)
    infer.say(symbol, why)
    kbuild.ensure_packages(root)
    if f.cpu:  # a user-mode model the saved options carry may be one qemu-system's machine refuses
        kvm.check_cpu(targets.get(arch), f.cpu, "" if opts.target.file.cpu else opts.spec)
    probe = inputs.request(root, kernel_opts)
    if not inputs.file_of_tree(probe.source.root, rel):
        raise CopyfuzzError(f"confirm: {rel} is not a file of {probe.source.label} (--as sets the path)")
    extra = () if (probe.source.root / rel).read_bytes() == content else ((rel, content),)
    kernel = kbuild.build(root, inputs.request(root, kernel_opts, extra=extra))
    cases = confirm.syscall_cases(mapping)
    pargs = ["--timeout", str(opts.timeout)] + [w for c in cases for w in ("--case", c)]
    vm, host, workdir = runner.sweep_cases(root, kernel, pargs, 1, f.cpu, not opts.no_host, opts.timeout)
    out = report.Report(kernel, vm, host, workdir, opts.findings, None, pargs)
    out.write_reproducers()
    results = call_results(cases, vm, host, out)
    if opts.json:
        obj = out.to_json()
        obj.update({"spec": f"{name}:{rest}", "kind": kind, "direction": mapping.direction,
                    "replaced": rel if extra else None, "note": mapping.note or None, "cases": results})
        print(json.dumps(obj, indent=1))
    else:
        print(f"{name}:{rest}  ({kind}, {mapping.direction.replace('_', ' ')}: {mapping.n} bytes, "
              f"{mapping.acc} accessible, kernel-side offset {mapping.koff})")
        print(f"{kernel.arch.name} kernel: {kernel.label} ({'cached' if kernel.cached else 'built'})"
              + ("" if extra else f"; {rel} is the tree's own"))
        if mapping.note:
            print(f"note: {mapping.note}")
        for line in call_lines(results, vm, out):
            print(line)
    return 1 if any(r["confirmed"] for r in results) else 0


def call_results(cases: list[str], vm: Result, host: Result | None, out: report.Report) -> list[dict[str, Any]]:
    """What each syscall case did on the booted kernel (and the host's): its findings, each
    with a reproducer, or its plain result."""
    results = []
    for c in cases:
        found = vm.by_case.get(c, [])
        results.append({"case": c, "syscall": c.split(":", 1)[0], "confirmed": bool(found),
                        "classes": [f.cls for f in found], "observed": vm.observed.get(c, {}),
                        "host": host.observed.get(c, {}) if host else None,
                        "reproducers": [str(out.write_reproducer(f)) for f in found]})
    return results


def call_lines(results: list[dict[str, Any]], vm: Result, out: report.Report, indent: str = "") -> list[str]:
    lines = []
    for res in results:
        found = vm.by_case.get(res["case"], [])
        for f, path in zip(found, res["reproducers"], strict=True):
            lines.append(f"{indent}confirmed: {res['case']}: {f.cls}: {out.observed_text(f)}")
            lines += [f"{indent}    {s}" for s in f.stack[:8]]
            lines.append(f"{indent}  reproducer: {path}")
        if not found:
            lines.append(f"{indent}not reproduced at the syscall level: {res['case']}: "
                         f"{report.observation(res['observed'])}")
    return lines


def confirm_kind(path: str, symbol: str) -> tuple[str, str]:
    """The kind of a spec given without --kind: its name's (infer.py), said on stderr; a
    user-direction name whose file names the other direction too is run by check as one
    routine of both (kind copy), and so is taken here."""
    inferred = infer.kind_from_name(symbol)
    kind, why = inferred.value, inferred.reason
    other = infer.other_direction(symbol, kind)
    if other:
        text = inputs.read_limited(Path(path), "confirm:")
        if re.search(rb"(?<![\w.$])" + re.escape(other.encode()) + rb"(?![\w.$])", text):
            kind, why = "copy", (f"kind copy: the file names {symbol} and {other}, which check runs as one routine "
                                 f"of both directions (either side may fault); give --kind to choose")
    return kind, why
