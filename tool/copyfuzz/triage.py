"""From an engine's failing input to a saved regression: the one triage path of every engine.

An engine hands over candidate cases for one failure (its minimised input first, the
original last). Each is re-run alone through `serve`, with the coverage plugin as the
driver runs it; the first that shows an error class under the profile is the finding:
its classes and fault pc, saved as a regression spec (one per build, class and fault pc).
When no candidate reproduces (an empty artifact a crashed or disk-full run left, an
executor killed from outside), the engine's word alone is not a finding: it is reported
as not reproduced, and nothing is saved.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import build, executor, records, regressions
from .elfinfo import routine_symbolizer, where
from .errors import CopyfuzzError
from .plugin import PluginMemory
from .routines import Routine
from .spec import Spec, format_spec


@dataclass
class CampaignFinding:
    """A reproduced finding of a campaign and where it was saved."""

    cls: str
    classes: list[str]
    spec: str
    fault_pc: str
    artifact: str
    regression: str
    new: bool


def run_specs(root: Path, routine: Routine, profile: str, specs: list[Spec]) -> list[records.Result]:
    """Each case through one `serve` (with the coverage plugin, as the driver runs it)."""
    argv = executor.executor_argv(root, routine.elf, build.routine_prefix(routine))
    plugin = None if build.native(routine.xlen) else PluginMemory(root, routine.xlen)
    out = []
    try:
        with executor.Server(argv, plugin=plugin) as server:
            for i, spec in enumerate(specs):
                result = server.run(spec.to_case(profile, i + 1))
                if result.type == records.RESULT_ERROR:
                    raise CopyfuzzError(f"{format_spec(spec)}: the executor rejected the case: "
                                        f"{records.case_error_message(result.aux)}")
                out.append(result)
    finally:
        if plugin:
            plugin.close()
    return out


def describe_fault_pc(root: Path, routine: Routine, result: records.Result) -> str:
    """`0x1234 (symbol+0x10)`, as repro shows it; "" when the case did not fault."""
    if not result.faults:
        return ""
    try:
        info = executor.info(executor.executor_argv(root, routine.elf, build.routine_prefix(routine)))
    except CopyfuzzError:
        info = {}
    named = where(routine_symbolizer(root, routine, info), result.fault_pc)
    hexpc = f"{result.fault_pc:#x}"
    return hexpc if named == hexpc else f"{hexpc} ({named})"


def triage(root: Path, routine: Routine, profile: str, regressions_dir: Path, engine: str,
           candidates: list[Spec], artifact: str = "",
           pick: Callable[[list[str]], str] | None = None) -> CampaignFinding | None:
    """The first candidate that reproduces, saved as a regression; None if none does.
    pick chooses the class the finding is filed under (default: the first in report order)."""
    for spec, result in zip(candidates, run_specs(root, routine, profile, candidates)):
        if result.errors:
            classes = result.error_list
            fault_pc = describe_fault_pc(root, routine, result)
            cls = pick(classes) if pick else classes[0]
            path, new = regressions.save(regressions_dir, routine, spec, cls, classes, engine=engine,
                                         fault_pc=fault_pc, profile=profile)
            return CampaignFinding(cls, classes, format_spec(spec), fault_pc, artifact, str(path), new)
    return None
