"""What a kernel sweep (or a confirm) says: the table for people, one JSON object for
machines, a standalone C reproducer per finding, the --known baseline.

Every finding here is a prober line from the booted kernel; `host` says whether the host's
kernel showed the same class for the same syscall in the same cases (`shared`: the
generic layer's behaviour, not the architecture's routine), did not (`no`), or was not
asked (`not run`).
"""

from __future__ import annotations

import json
import platform
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .. import atomic, known
from ..errors import CopyfuzzError
from . import casedef, reproducer
from .build import Kernel
from .sweep import Finding, Result

# The prober's classes, and the host's own: the kernel died in the case (sweep.py).
CLASSES: tuple[str, ...] = tuple(c.name for c in casedef.definition().classes) + ("panic",)


def syscall_names() -> list[str]:
    return [s.name for s in casedef.definition().syscalls]


def count_cases(host_prober: Path, pargs: list[str]) -> int:
    """How many cases the options enumerate (the prober's own count)."""
    r = subprocess.run([str(host_prober), *pargs, "--count"], capture_output=True, text=True)
    if r.returncode != 0:
        said = (r.stderr or r.stdout).strip().splitlines()
        raise CopyfuzzError(said[-1].removeprefix("prober: ") if said else f"the prober refused {pargs}")
    try:
        return int(r.stdout.split()[0])
    except (IndexError, ValueError):
        raise CopyfuzzError(f"the prober's --count said {r.stdout!r}") from None


def observation(fields: dict[str, str]) -> str:
    """What a call did, from a prober line's fields: its return, errno, and details."""
    if not fields:
        return "no observation"
    ret, err = fields.get("ret", "?"), fields.get("errno", "0")
    said = f"returned {ret}" + (f" (errno {err})" if err not in ("", "0") else "")
    detail = ", ".join(f"{k}={v}" for k, v in fields.items() if k not in ("ret", "errno", "case", "index"))
    return said + (f"; {detail}" if detail else "")


def known_name(f: Finding) -> str:
    """A finding's routine name in --known lines: kernel:SYSCALL."""
    return f"kernel:{f.syscall}"


@dataclass
class Row:
    finding: Finding
    host: str  # "shared", "no", "not run"
    host_case: str
    reproducer: Path | None = None
    known_by: known.Entry | None = None


class Report:
    def __init__(self, kernel: Kernel, vm: Result, host: Result | None, workdir: Path, findings_dir: Path,
                 baseline: known.Baseline | None, pargs: list[str], notes: list[str] | None = None) -> None:
        self.kernel, self.vm, self.host, self.workdir = kernel, vm, host, workdir
        # what the sweep chose for the user, and why; then what happened to the VMs
        self.notes = [*(notes or []), *vm.notes]
        self.findings_dir = findings_dir / "kernel" / f"{kernel.arch.name}-{kernel.key[:10]}"
        self.pargs = pargs
        order = {name: i for i, name in enumerate(syscall_names())}
        self.rows: list[Row] = []
        for (syscall, cls), f in sorted(vm.findings.items(), key=lambda kv: (order.get(kv[0][0], 99), kv[1].index)):
            if host is None:
                shared, hcase = "not run", ""
            elif (syscall, cls) in host.findings:
                shared, hcase = "shared", host.findings[(syscall, cls)].case
            else:
                shared, hcase = "no", ""
            row = Row(f, shared, hcase)
            if baseline is not None:
                row.known_by = baseline.match(known.Finding(known_name(f), cls, None))
            self.rows.append(row)
        self.baseline = baseline

    def write_reproducers(self) -> None:
        for row in self.rows:
            row.reproducer = self.write_reproducer(row.finding)

    def write_reproducer(self, f: Finding) -> Path:
        """A standalone C file for the finding's case, named after the case and the class
        (the same case and class always give the same file)."""
        case = casedef.Case.parse(f.case)
        self.findings_dir.mkdir(parents=True, exist_ok=True)
        name = "-".join([case.syscall, *(f"{fl.name}{case.value(fl.name)}" for fl in casedef.definition().fields),
                         f.cls])
        path = self.findings_dir / f"{name}.c"
        atomic.write(path, reproducer.render(case))
        return path

    def write_known(self, path: Path) -> None:
        known.write(path, [known.Finding(known_name(r.finding), r.finding.cls, None) for r in self.rows],
                    [f"kernel:{s}" for s in syscall_names()])

    def new_findings(self) -> list[Row]:
        return [r for r in self.rows if r.known_by is None]

    def exit_status(self) -> int:
        """1 findings (not all --known), else 2 when a problem kept cases from running as
        asked (a worker that died outside a call, a VM that stalled), else 0."""
        if self.new_findings():
            return 1
        return 2 if self.vm.errors else 0

    def observed_text(self, f: Finding) -> str:
        if f.cls == "hang":
            return f"did not return in {f.observed.get('elapsed', '?')} s"
        if f.cls == "panic":
            return f"the kernel died: {f.observed.get('why', '')}"
        return observation(f.observed)

    def to_json(self) -> dict[str, object]:
        return {
            "kernel": {"arch": self.kernel.arch.name, "label": self.kernel.label, "image": str(self.kernel.image),
                       "key": self.kernel.key, "cached": self.kernel.cached},
            "cases": {"total": self.vm.total, "ran": self.vm.ran, "skipped": self.vm.skipped,
                      "seconds": round(self.vm.seconds, 1), "boots": self.vm.boots,
                      "damaged_lines": self.vm.damaged},
            "host": None if self.host is None else {"kernel": platform.release(), "machine": platform.machine(),
                                                    "ran": self.host.ran, "findings": len(self.host.findings)},
            "findings": [{"syscall": r.finding.syscall, "class": r.finding.cls, "case": r.finding.case,
                          "count": r.finding.count, "observed": r.finding.observed, "stack": r.finding.stack,
                          "host": r.host, "host_case": r.host_case or None,
                          "reproducer": str(r.reproducer) if r.reproducer else None,
                          "known": r.known_by is not None,
                          "known_by": r.known_by.source if r.known_by else None} for r in self.rows],
            "errors": self.vm.errors,
            "prober_args": self.pargs,
            "notes": self.notes,
            "workdir": str(self.workdir),
            "known": self.baseline.to_json() if self.baseline is not None else None,
        }

    def print_json(self) -> None:
        print(json.dumps(self.to_json(), indent=1))

    def print_table(self) -> None:
        k, vm = self.kernel, self.vm
        print(f"{k.arch.name} kernel: {k.label} ({'cached' if k.cached else 'built'})")
        rate = vm.ran / vm.seconds if vm.seconds else 0
        print(f"booted kernel: {vm.ran:,} of {vm.total:,} cases in {vm.seconds:.0f} s ({rate:,.0f} cases/s, "
              f"{vm.boots} boot{'s' if vm.boots != 1 else ''})")
        if self.host is not None:
            print(f"host kernel: Linux {platform.release()} {platform.machine()}, {self.host.ran:,} cases")
        else:
            print("host kernel: not run (--no-host)")
        for note in self.notes:
            print(f"note: {note}")
        for syscall, n in sorted(vm.skipped.items()):
            print(f"not run: {n:,} cases of {syscall} (its hang budget was spent)")
        for e in vm.errors:
            print(f"problem: {e}")
        if not self.rows:
            print("clean: no finding in the cases that ran")
            return
        print()
        width = max(len(r.finding.case) for r in self.rows)
        print(f"{'class':<22} {'cases':>8}  {'smallest case':<{width}}  host")
        for r in self.rows:
            mark = "  (known)" if r.known_by else ""
            print(f"{r.finding.cls:<22} {r.finding.count:>8,}  {r.finding.case:<{width}}  {r.host}{mark}")
        for r in self.rows:
            f = r.finding
            print()
            print(f"{f.case}: {f.cls}: {self.observed_text(f)}")
            if f.stack:
                print("  kernel stack:")
                for s in f.stack[:16]:
                    print(f"    {s}")
            if r.reproducer:
                print(f"  reproducer: {r.reproducer}")
            if r.known_by:
                print(f"  {known.reason(r.known_by)}")
