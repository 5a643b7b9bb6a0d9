"""A session: one routine's `executor serve`, with the QEMU plugin if the caller needs it.

Every command that runs cases one by one (repro, replay, the fuzz engines' triage and
Hypothesis, cov, bench, the sweep's reach probe) starts its executor here, so the rule
for when the plugin is there is written once (plugin_for):
  - the caller says what it needs from the plugin (Need): nothing, its counts, or its
    counts and its memory audit (the memcheck classes in the results);
  - the plugin is a QEMU TCG plugin: a routine that runs natively has none. A caller
    that needs it is refused, saying how to run under QEMU; a caller that can do without
    it (optional) runs without it.
"""

from __future__ import annotations

import enum
from pathlib import Path

from . import build, executor, records, targets
from .errors import CopyfuzzError
from .plugin import PluginMemory
from .routines import Routine


class Need(enum.Enum):
    """What a caller uses the plugin for."""

    NONE = "none"
    COVERAGE = "coverage"  # the instruction counts only (--plugin-coverage-only): no memcheck classes
    MEMCHECK = "memcheck"  # the counts and the memory audit: its classes in the results, as the fuzz driver runs


def routine_argv(root: Path, routine: Routine) -> list[str]:
    """The routine's executor command: QEMU (with the -cpu of its ISA) unless native, then the ELF."""
    return [*build.routine_prefix(routine), str(root / routine.elf)]


def plugin_runs(routine: Routine) -> bool:
    """Can the routine's executor have the plugin here (it runs under QEMU)?"""
    return not build.routine_native(routine)


def plugin_memory(root: Path, routine: Routine, need: Need) -> PluginMemory:
    """A plugin memory for one executor of the routine (need: COVERAGE or MEMCHECK); natively
    a CopyfuzzError that says how to run under QEMU instead."""
    assert need is not Need.NONE
    if not plugin_runs(routine):
        a = targets.get(routine.arch)
        raise CopyfuzzError("--memcheck, bench counts and cov need QEMU: the plugin is a QEMU "
                            f"TCG plugin (natively, run the same command with "
                            f"QEMU{a.env_suffix}={a.default_qemu(routine.xlen)})")
    return PluginMemory(root, memcheck=need is Need.MEMCHECK)


def plugin_for(root: Path, routine: Routine, need: Need, *, optional: bool = False) -> PluginMemory | None:
    """The plugin memory a session of the routine gets for need: None for NONE, and None
    natively when the caller can do without it (optional); else plugin_memory's."""
    if need is Need.NONE or (optional and not plugin_runs(routine)):
        return None
    return plugin_memory(root, routine, need)


class Session(executor.Server):
    """One `serve` of a routine (executor.Server: run, run_many, time, last_death), with
    its plugin memory (plugin, None without one); both closed on exit.

    need and optional: plugin_for. timeout_ms: the executor's per-case watchdog (None: its
    default); read_timeout_s: how long the tool waits for a result; granule: MTE tag granules
    as fault boundaries too; bare: the executor's bare timing mode (bench)."""

    def __init__(self, root: Path, routine: Routine, need: Need = Need.NONE, *, optional: bool = False,
                 timeout_ms: int | None = None, read_timeout_s: float = 60.0, granule: int = 0,
                 bare: bool = False) -> None:
        self.routine = routine
        self.argv = routine_argv(root, routine)
        self.plugin = plugin_for(root, routine, need, optional=optional)
        try:
            super().__init__(self.argv, timeout_ms=timeout_ms, read_timeout_s=read_timeout_s,
                             plugin=self.plugin, bare=bare, granule=granule)
        except BaseException:
            self._close_plugin()
            raise

    def __enter__(self) -> "Session":
        return self

    @staticmethod
    def accepted(result: records.Result, prefix: str = "") -> records.Result:
        """result, unless the executor rejected its case: then a CopyfuzzError saying why,
        after prefix (executor.accepted, the one home of that check)."""
        return executor.accepted(result, prefix)

    def close(self) -> None:
        """The executor first (it holds the plugin's memory), then the plugin memory."""
        try:
            super().close()
        finally:
            self._close_plugin()

    def _close_plugin(self) -> None:
        if self.plugin is not None:
            self.plugin.close()
            self.plugin = None
