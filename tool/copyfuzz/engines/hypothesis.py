"""Hypothesis: the strategies of strategies.py over one persistent `serve`.

A case whose errors include a class not found yet fails; Hypothesis shrinks it, and the
shrunk case goes through the shared triage path. The search then goes on without that
class until the time is up (or, with --until, the class is found).
"""

from __future__ import annotations

import contextlib
import shlex
import signal
import time
from pathlib import Path
from typing import Iterator

from .. import atomic, coverage, records, regressions
from ..campaign import Campaign, clear_status, status_line
from ..session import Need, Session


class _TimeUp(BaseException):
    """Raised inside the Hypothesis test to end the search (not a failure to shrink)."""


class _Interrupted(BaseException):
    """Raised inside the Hypothesis test at the first case after a SIGINT."""


@contextlib.contextmanager
def _sigint_as_flag() -> Iterator[list[bool]]:
    """SIGINT noted in a flag while Hypothesis runs, for the test to act on at its next
    case (or the campaign after the triage in progress): a KeyboardInterrupt raised by
    the handler could land in one of Hypothesis's gc callbacks, where Python prints it
    and goes on (1 run in 16 ran its whole time). KeyboardInterrupt on the way out."""
    flag = [False]

    def note(signum: int, frame: object) -> None:
        if flag[0]:  # a second Ctrl-C (the first came during a triage): now
            raise KeyboardInterrupt
        flag[0] = True

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield flag
    finally:
        signal.signal(signal.SIGINT, previous)
    if flag[0]:
        raise KeyboardInterrupt


def _bit(cls: str) -> int:
    return 1 << records.CLASS_BY_NAME[cls].bit


def run(c: Campaign, show: bool, deadline: float, total_s: int) -> None:
    from hypothesis import configuration

    assert c.run is not None
    # Hypothesis's own files (caches it keeps under .hypothesis/ in the current directory)
    # go in the run's directory, removed with it: nothing lands where the command was not
    # told to write.
    configuration.set_hypothesis_home_dir(c.run.path / "hypothesis")
    with _sigint_as_flag() as interrupted:
        _search(c, show, deadline, total_s, interrupted)


def _search(c: Campaign, show: bool, deadline: float, total_s: int, interrupted: list[bool]) -> None:
    from hypothesis import HealthCheck, Phase, given, seed, settings

    from .. import strategies

    r = c.routine
    found_mask = 0
    hard_stop = c.triage_deadline  # Hypothesis's shrinking is part of the triage
    started = time.monotonic()
    shown_at = [0.0]
    # The memory audit as the driver runs it (its classes are findings), and the counts for
    # the coverage line; fuzz refuses a native routine before this.
    server = Session(c.root, r, Need.MEMCHECK)
    plugin = server.plugin
    assert plugin is not None

    class State:
        calls = 0
        failing: records.Case | None = None
        failing_errors = 0

    try:
        while time.monotonic() < deadline and not c.until_met:
            state = State()
            mask = found_mask

            def run_case(case: records.Case) -> int:
                # An executor that dies during a case is that case's crash result (Server
                # restarts it); an ExecutorError is the tool's own failure: exit 2.
                return server.accepted(server.run(case), "a drawn case: ").errors

            @seed(c.seed + c.rounds)
            @settings(max_examples=10**8, database=None, deadline=None, derandomize=False,
                      phases=[Phase.generate, Phase.shrink], suppress_health_check=list(HealthCheck),
                      report_multiple_bugs=False, print_blob=False)
            @given(strategies.cases(r.kind, c.profile, max_len=c.max_len))
            def search(case: records.Case) -> None:
                if interrupted[0]:
                    raise _Interrupted()
                now = time.monotonic()
                if now >= hard_stop or (state.failing is None and now >= deadline):
                    raise _TimeUp()
                state.calls += 1
                errors = run_case(case)
                if show and now - shown_at[0] >= 1:
                    shown_at[0] = now
                    c.coverage = coverage.from_plugin(c.audit, plugin) if c.audit else None
                    status_line(c, started, total_s, c.executions + state.calls,
                                (c.executions + state.calls) / max(1e-9, now - started), f"round {c.rounds}")
                if errors & ~mask:
                    state.failing, state.failing_errors = case, errors
                    # On disk before Hypothesis shrinks it, rewritten as it shrinks: a campaign
                    # killed meanwhile still leaves the failure (copyfuzz repro FILE takes it).
                    write_failure(c, case, errors & ~mask)
                    raise AssertionError("a new class")

            c.rounds += 1
            try:
                search()
            except (_TimeUp, _Interrupted, AssertionError):
                pass
            finally:
                if show:
                    clear_status()
            c.executions += state.calls
            if interrupted[0]:  # _sigint_as_flag raises KeyboardInterrupt on the way out
                return
            if state.failing is None:
                break
            found = c.triage([c.spec_of(state.failing)],
                             pick=lambda classes: next((x for x in classes if not mask & _bit(x)), classes[0]))
            # Never search for these classes again; when serve alone does not show the
            # failure, for the classes the search saw (never loop on it).
            found_mask |= sum(_bit(x) for x in found.classes) if found else state.failing_errors
    finally:
        if c.audit is not None:
            c.coverage = coverage.from_plugin(c.audit, plugin)
        server.close()  # the executor, then the plugin memory


def write_failure(c: Campaign, case: records.Case, new_errors: int) -> Path:
    """findings/hypothesis-<class>.failure (regressions.format_failure): the failing case as
    Hypothesis shows it and as a spec (written aside, then renamed: a reader never sees half of it)."""
    classes = records.class_names(new_errors)
    path = c.findings_dir / regressions.failure_name(classes[0])
    # the build (a file's -D and kind, --xlen, --isa): repro reads it back as a regression's
    options = c.routine.repro_options
    file, _, symbol = c.routine.name.rpartition(":") if c.routine.external_elf else ("", "", "")
    target = shlex.join([file, "--symbol", symbol]) if file else c.routine.name
    command = (f"copyfuzz fuzz {target}{' ' + shlex.join(options) if options else ''} "
               f"--engine hypothesis --seed {c.seed}")
    atomic.write(path, regressions.format_failure(c.spec_of(case), classes, command, options,
                                                  f"search(case={case!r})"))
    return path

