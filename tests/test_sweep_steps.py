"""executor.Sweep's steps one at a time, against the fake executor (tests/fake_executor.py):
starting a shard's segment, taking a stream item, a segment's end, the stall watchdog,
a death judged and gone past, the narrowing search, the merged Finished. The whole
sweep, end to end: tests/test_executor.py and tests/test_channel.py."""

from __future__ import annotations

import json
import queue
import sys
import time
from pathlib import Path

import pytest
from copyfuzz import executor, plan, records
from copyfuzz.executor import ExecutorError, NewClassCase, NewReproducer, Progress, Sweep

FAKE = [sys.executable, str(Path(__file__).parent / "fake_executor.py"), "build/x.elf"]
WRONG = records.class_mask(["wrong-data"])


def finding(case_id: int, classes: int) -> NewClassCase:
    return NewClassCase(records.Case(0, 0, case_id, case_id, 0, 0), records.Result(id=case_id, classes=classes))


def until_eof(sw: Sweep) -> list[object]:
    """The items of the sweep's queue up to its first EOF, each taken by its segment
    (as run() would, short of merging them)."""
    items: list[object] = []
    while True:
        seg, item = sw.queue.get(timeout=30)
        if item is executor._EOF:
            return items
        assert seg.take(item) is None
        items.append(item)


def test_segment_runs_its_shard_and_range(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_ARGV_FILE", str(tmp_path / "argv.json"))
    sw = Sweep(FAKE, fake_plan, jobs=3, stop_mask=0x8, timeout_ms=500)
    q: queue.Queue[tuple[executor._Segment, object]] = queue.Queue()
    seg = sw.segment(1, 10, 40, q)
    try:
        assert (seg.shard, seg.start, seg.planned) == (1, 10, fake_plan.count(1, 3, 10, 40)) == (1, 10, 10)
        while q.get(timeout=30)[1] is not executor._EOF:
            pass
    finally:
        seg.end()
    argv = json.loads((tmp_path / "argv.json").read_text())["argv"]
    assert argv[:2] == ["build/x.elf", "sweep"]
    opts = " ".join(argv[2:])
    for part in ("--max-hangs 16", "--timeout-ms 500", "--stop-mask 0x8", "--shard 1/3", "--start 10 --end 40"):
        assert part in opts
    assert sw.queue.empty()  # its own queue, not the merged one


def test_take_merges_findings_and_progress(fake_plan: plan.SweepPlan) -> None:
    sw = Sweep(FAKE, fake_plan)
    sh = sw.shards[0]
    sw.launch(sh, 0)
    try:
        seg = sh.segment
        assert seg is not None
        assert [e.cls for e in sw.take(seg, finding(10, WRONG)) if isinstance(e, NewReproducer)] == ["wrong-data"]
        assert list(sw.take(seg, finding(12, WRONG))) == []  # not smaller
        assert [e.case.id for e in sw.take(seg, finding(3, WRONG)) if isinstance(e, NewReproducer)] == [3]
        sh.cases = 5  # from an earlier segment
        tick = records.Result(type=records.RESULT_PROGRESS, id=20, ret=100)
        assert list(sw.take(seg, tick)) == [Progress(25, 100)]
        stale = sw.segment(0, 0, plan.NO_END, queue.Queue())
        try:
            assert list(sw.take(stale, finding(1, WRONG))) == []  # a judged segment's item is dropped
        finally:
            stale.end()
        assert sw.best.best["wrong-data"].case.id == 3
    finally:
        sw.close()


def test_a_clean_end_is_booked(fake_plan: plan.SweepPlan) -> None:
    sw = Sweep(FAKE, fake_plan, stop_mask=0x8)
    sh = sw.shards[0]
    sw.launch(sh, 0)
    until_eof(sw)
    assert list(sw.ended(sh)) == []
    assert sh.segment is None and sh.cases == 4 and sh.counts == {"wrong-data": 1}
    assert sw.stopped == ["stop-mask"]


def test_an_end_without_done_is_judged(monkeypatch: pytest.MonkeyPatch, fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "nodone")
    sw = Sweep(FAKE, fake_plan)
    sw.launch(sw.shards[0], 0)
    until_eof(sw)
    # Exited 0 mid-stream: its last case runs alone and is fine, so the run is narrowed; every
    # run goes wrong (no DONE), the first case alone does not: no finding, an error.
    with pytest.raises(ExecutorError, match="without DONE; it goes wrong at case build/x.elf:n=0,.* "
                                            "but that case alone is fine"):
        list(sw.ended(sw.shards[0]))
    sw.close()


def test_watchdog_waits_then_kills_a_silent_segment(monkeypatch: pytest.MonkeyPatch,
                                                    fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    sw = Sweep(FAKE, fake_plan, stall_timeout_s=5.0)
    sh = sw.shards[0]
    sw.launch(sh, 0)
    try:
        sw.last_heard = time.monotonic()
        assert list(sw.watch()) == [] and sh.segment is not None  # not silent long enough
        sw.last_heard -= 10
        with pytest.raises(ExecutorError, match="wrote nothing for 5 s .* before its first case"):
            list(sw.watch())
        assert sh.segment is None  # killed and judged
    finally:
        sw.close()


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_death_is_judged_and_the_shard_goes_on_after_it(monkeypatch: pytest.MonkeyPatch,
                                                          fake_plan: plan.SweepPlan, jobs: int) -> None:
    monkeypatch.setenv("FAKE_DIE_AT", "37")
    sw = Sweep(FAKE, fake_plan, jobs=jobs)
    sh = sw.shards[1 % jobs]  # the shard of case 37
    sw.launch(sh, 0)
    try:
        until_eof(sw)
        events = list(sw.broken(sh, None))
        assert [(e.cls, e.case.id) for e in events] == [("crash", 37)]
        assert [case_id for case_id, _ in sw.deaths] == [37]
        assert "exited with status 7" in sw.deaths[0][1]
        assert sh.cases == len(range(sh.index, 38, jobs)) and sh.counts["crash"] == 1 and sh.deaths == 1
        assert sh.segment is not None and sh.segment.start == 38  # goes on after it
    finally:
        sw.close()


def test_a_shard_that_keeps_dying_stops(monkeypatch: pytest.MonkeyPatch, fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setattr(executor, "MAX_DEATHS", 1)
    monkeypatch.setenv("FAKE_DIE_AT", "2")
    sw = Sweep(FAKE, fake_plan)
    sh = sw.shards[0]
    sw.launch(sh, 0)
    until_eof(sw)
    assert len(list(sw.broken(sh, None))) == 1
    assert sh.segment is None and sw.stopped == ["max-crashes"]


def test_probe_says_whether_a_range_goes_wrong(monkeypatch: pytest.MonkeyPatch, fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_DIE_AT", "7")
    sw = Sweep(FAKE, fake_plan)
    failed, begun, _ = sw.probe(0, 2, 7)
    assert (failed, begun) == (False, 5)
    failed, begun, _ = sw.probe(0, 2, 8)
    assert (failed, begun) == (True, 6)


@pytest.mark.parametrize("jobs, shard, culprit", [(1, 0, 0), (1, 0, 40), (1, 0, 99), (3, 2, 41), (3, 1, 1)])
def test_narrow_finds_the_first_run_that_goes_wrong(monkeypatch: pytest.MonkeyPatch, fake_plan: plan.SweepPlan,
                                                    jobs: int, shard: int, culprit: int) -> None:
    sw = Sweep(FAKE, fake_plan, jobs=jobs)
    runs: list[int] = []

    def probe(s: int, start: int, end: int) -> tuple[bool, int, list[int]]:
        assert (s, start) == (shard, 0)
        runs.append(end)
        return end > culprit, len(range(shard, end, jobs)), [0] * records.CONTROL_COUNTS

    monkeypatch.setattr(sw, "probe", probe)
    found, begun, _ = sw.narrow(sw.shards[shard], 0, 99 - (99 - shard) % jobs, "died", "")
    assert found == culprit and begun == len(range(shard, culprit + 1, jobs))
    assert len(runs) <= 2 * (100 // jobs).bit_length() + 1  # growing runs, then bisection: no linear scan


def test_narrow_gives_up_when_nothing_goes_wrong_again(monkeypatch: pytest.MonkeyPatch,
                                                       fake_plan: plan.SweepPlan) -> None:
    sw = Sweep(FAKE, fake_plan)
    monkeypatch.setattr(sw, "probe", lambda shard, start, end: (False, end - start, []))
    with pytest.raises(ExecutorError, match="x.elf sweep died, but its cases run again do not"):
        sw.narrow(sw.shards[0], 0, 50, "died", "")


def test_finished_merges_the_shards(fake_plan: plan.SweepPlan) -> None:
    sw = Sweep(FAKE, fake_plan, jobs=2)
    sw.shards[0].counts, sw.shards[0].cases, sw.shards[0].messages = {"crash": 1, "imprecise": 2}, 50, ["a", ""]
    sw.shards[1].counts, sw.shards[1].cases, sw.shards[1].messages = {"wrong-data": 3, "imprecise": 1}, 50, ["b"]
    sw.deaths = [(9, "late"), (3, "early")]
    sw.best.add(finding(4, WRONG))
    done = sw.finished()
    assert done.cases == 100
    expected = {"crash": 1, "imprecise": 3, "wrong-data": 3}
    assert list(done.counts) == [c for c in records.CLASS_NAMES if c in expected] and done.counts == expected
    assert done.deaths == ["early", "late"] and done.stderr == ["a", "b"]
    assert done.reproducers["wrong-data"].case.id == 4
