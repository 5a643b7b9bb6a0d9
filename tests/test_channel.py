"""The executor channel against the fake executor: a case that ends its executor or
writes into its record channel is a finding for that case, in serve and in sweeps; a
sweep whose account does not match the tool's own plan is never clean.

The fake (tests/fake_executor.py) plays the hostile routine: FAKE_DIE_AT=ID exits 7 in
that case, FAKE_FORGE_AT=ID writes an unsealed DONE record into the channel there. The
real executor and hostile RISC-V routines: tests/test_hostile_e2e.py.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from copyfuzz import executor, plan, records
from copyfuzz.executor import ExecutorError

FAKE = [sys.executable, str(Path(__file__).parent / "fake_executor.py"), "build/x.elf"]
CRASH = records.class_mask(["crash"])


def case(i: int) -> records.Case:
    return records.Case(kind=0, profile=0, id=i, n=i, src_off=i % 16, dst_off=i % 8)


def test_serve_turns_a_death_into_a_crash_and_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_DIE_AT", "2")
    with executor.Server(FAKE) as server:
        assert server.run(case(1)).classes == 0 and server.last_death is None
        r = server.run(case(2))
        assert (r.type, r.id, r.classes, r.errors) == (records.RESULT_CASE, 2, CRASH, CRASH)
        assert server.last_death == "the executor exited with status 7 during this case"
        r = server.run(case(3))  # a fresh executor
        assert r.classes == records.class_mask(["wrong-data"]) and server.last_death is None


def test_serve_turns_a_forged_record_into_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_FORGE_AT", "4")
    with executor.Server(FAKE) as server:
        r = server.run(case(4))
        assert r.classes == CRASH
        assert server.last_death == "the executor broke its channel: a record failed its seal check during this case"
        assert server.run(case(6)).classes == 0


@pytest.mark.parametrize("hostile", ["FAKE_DIE_AT", "FAKE_FORGE_AT"])
def test_pipelined_cases_are_run_ones_and_a_death_midway_ends_only_its_case(monkeypatch: pytest.MonkeyPatch,
                                                                             hostile: str) -> None:
    """run_many writes cases ahead (executor.PIPELINE): the results are run()'s, in order,
    a case that ends its executor is that case's crash, and the cases written after it
    run on a fresh executor."""
    with executor.Server(FAKE) as server:
        alone = [server.run(case(i)) for i in range(1, 80)]
    monkeypatch.setenv(hostile, "40")
    with executor.Server(FAKE) as server:
        many = server.run_many([case(i) for i in range(1, 80)])
    assert [r.id for r in many] == list(range(1, 80))
    assert many[39].classes == CRASH and many[39].id == 40
    assert [r.classes for r in many[:39] + many[40:]] == [r.classes for r in alone[:39] + alone[40:]]


def test_run_many_ends_at_its_time_even_amid_a_long_case(monkeypatch: pytest.MonkeyPatch) -> None:
    """A triage time is kept while a case runs long: the results so far, the executor
    stopped, and the next case runs on a fresh one."""
    monkeypatch.setenv("FAKE_SLOW_AT", "3")
    with executor.Server(FAKE) as server:
        started = time.monotonic()
        got = server.run_many([case(i) for i in range(1, 10)], until=started + 0.5)
        assert time.monotonic() - started < 5, "it waited for the long case"
        assert [r.id for r in got] == [1, 2]
        assert server.run(case(4)).id == 4


@pytest.mark.parametrize("jobs", [1, 3])
@pytest.mark.parametrize("hostile", ["FAKE_DIE_AT", "FAKE_FORGE_AT"])
def test_sweep_finds_the_case_and_goes_on_after_it(monkeypatch: pytest.MonkeyPatch, fake_plan: plan.SweepPlan,
                                                   hostile: str, jobs: int) -> None:
    monkeypatch.setenv(hostile, "37")  # 37 shows no class of its own
    events = list(executor.sweep(FAKE, fake_plan, jobs=jobs))
    finished = events[-1]
    assert isinstance(finished, executor.Finished)
    assert finished.cases == 100  # every case of the plan, the one that broke it included
    wrong = sum(1 for i in range(100) if i % 7 == 3 or i % 11 == 5)
    assert finished.counts == {"wrong-data": wrong, "imprecise": sum(1 for i in range(100) if i % 11 == 5),
                               "crash": 1}
    assert finished.reproducers["crash"].case == fake_plan.case_at(37)
    assert len(finished.deaths) == 1 and finished.deaths[0].startswith("build/x.elf:n=37,")
    assert finished.stopped == []


def test_sweep_gives_up_on_a_shard_that_keeps_dying(monkeypatch: pytest.MonkeyPatch,
                                                     fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setattr(executor, "MAX_DEATHS", 2)
    monkeypatch.setenv("FAKE_DIE_AT", "0,1,2,3")
    finished = list(executor.sweep(FAKE, fake_plan, jobs=1))[-1]
    assert isinstance(finished, executor.Finished)
    assert finished.stopped == ["max-crashes"]
    assert finished.counts == {"crash": 2} and finished.cases == 2
    assert finished.reproducers["crash"].case.id == 0


def test_sweep_account_that_differs_from_the_plan_is_an_error(monkeypatch: pytest.MonkeyPatch,
                                                              fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "short")
    with pytest.raises(ExecutorError, match="announced 99 cases, but the plan has 100"):
        list(executor.sweep(FAKE, fake_plan, jobs=1))
