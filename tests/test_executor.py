"""Executor plumbing against a fake executor: stream parsing, shard merging, failures."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from copyfuzz import executor, plan, records
from copyfuzz.errors import CopyfuzzError
from copyfuzz.executor import ExecutorError, NewClassCase, Reproducers, StreamParser

FAKE = [sys.executable, str(Path(__file__).parent / "fake_executor.py"), "build/x.elf"]


def _sealed(*recs: records.Case | records.Result) -> bytes:
    """Records as an executor with the zero key writes them."""
    out = b""
    for seq, rec in enumerate(recs):
        data = rec.pack()
        out += data[:-8] + records.seal((0, 0), seq, data).to_bytes(8, "little")
    return out


def _expected_counts(ids: range) -> dict[str, int]:
    wrong = sum(1 for i in ids if i % 7 == 3 or i % 11 == 5)
    imprecise = sum(1 for i in ids if i % 11 == 5)
    return {"wrong-data": wrong, "imprecise": imprecise}


def test_parser_handles_any_chunking() -> None:
    case = records.Case(kind=0, profile=0, id=9, n=3, src_off=0, dst_off=0)
    result = records.Result(id=9, classes=8)
    done = records.Result(type=records.RESULT_DONE, id=10)
    stream = _sealed(case, result, done)
    for size in (1, 3, 64, 100, len(stream)):
        parser = StreamParser()
        items: list[Any] = []
        for i in range(0, len(stream), size):
            items += parser.feed(stream[i:i + size])
        parser.finish()
        assert [(type(x), getattr(x, "id", None)) for x in items] == [(NewClassCase, None), (records.Result, 10)]
        assert items[0].case.n == 3 and items[0].result.classes == 8


def test_parser_rejects_bad_streams() -> None:
    with pytest.raises(ExecutorError, match="out of sync"):
        StreamParser().feed(b"ABCD" + bytes(60))
    with pytest.raises(ExecutorError, match="without its case"):
        StreamParser().feed(_sealed(records.Result(id=1)))
    with pytest.raises(ExecutorError, match="seal check"):
        StreamParser().feed(records.Result(id=1).pack())  # unsealed
    with pytest.raises(ExecutorError, match="seal check"):
        StreamParser((1, 2)).feed(_sealed(records.Result(id=1)))  # another key
    parser = StreamParser()
    parser.feed(records.Case(0, 0, 1, 1, 0, 0).pack()[:10])
    with pytest.raises(ExecutorError, match="middle of a record"):
        parser.finish()


def test_reproducers_keep_the_smallest_id() -> None:
    best = Reproducers()

    def finding(case_id: int, classes: int) -> NewClassCase:
        return NewClassCase(records.Case(0, 0, case_id, 1, 0, 0), records.Result(id=case_id, classes=classes))

    assert best.add(finding(10, 0b1000)) == ["wrong-data"]
    assert best.add(finding(12, 0b1000)) == []
    assert best.add(finding(4, 0b1001)) == ["bad-return", "wrong-data"]
    assert best.best["wrong-data"].case.id == 4


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_sweep_merges_shards(jobs: int, fake_plan: plan.SweepPlan) -> None:
    events = list(executor.sweep(FAKE, fake_plan, jobs=jobs))
    finished = events[-1]
    assert isinstance(finished, executor.Finished)
    assert finished.cases == 100
    assert finished.counts == _expected_counts(range(100))
    assert finished.reproducers["wrong-data"].case.id == 3
    assert finished.reproducers["imprecise"].case.id == 5
    progress = [e for e in events if isinstance(e, executor.Progress)]
    assert progress and progress[-1].total == 100
    # Every NewReproducer improves on the last one for its class.
    last: dict[str, int] = {}
    for e in events:
        if isinstance(e, executor.NewReproducer):
            assert e.case.id < last.get(e.cls, 1 << 64)
            last[e.cls] = e.case.id
    assert last == {"wrong-data": 3, "imprecise": 5}


def test_sweep_stop_reason(fake_plan: plan.SweepPlan) -> None:
    events = list(executor.sweep(FAKE, fake_plan, stop_mask=0x8, jobs=1))
    finished = events[-1]
    assert isinstance(finished, executor.Finished)
    assert finished.stopped == ["stop-mask"] and finished.cases == 4


@pytest.mark.parametrize("scenario, message", [
    ("crash", "exited with status 3"),
    ("nodone", "without DONE"),
    ("garbage", "unknown record magic"),
])
def test_sweep_failures_are_errors_with_stderr(monkeypatch: pytest.MonkeyPatch, scenario: str,
                                               message: str, fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", scenario)
    with pytest.raises(ExecutorError, match=message) as e:
        list(executor.sweep(FAKE, fake_plan, jobs=2))
    if scenario == "crash":
        assert "internal error on purpose" in e.value.details


def test_sweep_stall_is_an_error(monkeypatch: pytest.MonkeyPatch, fake_plan: plan.SweepPlan) -> None:
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    with pytest.raises(ExecutorError, match="wrote nothing for 1 s"):
        list(executor.sweep(FAKE, fake_plan, jobs=1, stall_timeout_s=1.0))


def test_server_round_trips_and_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with executor.Server(FAKE) as server:
        r = server.run(records.Case(kind=0, profile=1, id=1, n=3, src_off=0, dst_off=0))
        assert r.type == records.RESULT_CASE and r.class_list == ["wrong-data"]
        r = server.run(records.Case(kind=0, profile=0, id=2, n=4, src_off=0, dst_off=0))
        assert r.classes == 0
    monkeypatch.setenv("FAKE_SCENARIO", "crash")
    with (pytest.raises(ExecutorError, match="exited with status 3 before it ran the case") as e,
          executor.Server(FAKE) as server):
        server.run(records.Case(0, 0, 1, 1, 0, 0))
    assert "died serving" in e.value.details
    monkeypatch.setenv("FAKE_SCENARIO", "hang")
    with (pytest.raises(ExecutorError, match="no result within 1 s"),
          executor.Server(FAKE, read_timeout_s=1.0) as server):
        server.run(records.Case(0, 0, 1, 1, 0, 0))


def test_info_parses_key_values() -> None:
    assert executor.info(FAKE)["kind"] == "copy"


def test_a_rejected_case_is_one_error_saying_why() -> None:
    ok = records.Result(type=records.RESULT_CASE, id=1)
    assert executor.accepted(ok) is ok
    bad = records.Result(type=records.RESULT_ERROR, id=2, aux=records.CASE_BAD_KIND)
    with pytest.raises(CopyfuzzError, match=r"^n=3: the executor rejected the case: ") as e:
        executor.accepted(bad, "n=3: ")
    assert str(e.value).endswith(records.case_error_message(records.CASE_BAD_KIND))


def test_a_job_control_stop_is_stopped_and_a_tracing_stop_is_not() -> None:
    """A shard SIGSTOPped is killed as stopped; one that strace or gdb holds at a system
    call or signal ("t" in /proc) is the tracer's to let go, not a stopped executor."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)

    def traced() -> None:
        libc.ptrace(0, 0, None, None)  # PTRACE_TRACEME: the exec below stops it for us

    stopped = subprocess.Popen(["sleep", "60"])
    held = subprocess.Popen(["sleep", "60"], preexec_fn=traced)
    try:
        os.kill(stopped.pid, signal.SIGSTOP)
        os.waitpid(held.pid, os.WUNTRACED)  # its exec's SIGTRAP: a tracing stop until we say
        deadline = time.monotonic() + 10
        while not executor._stopped(stopped.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert executor._stopped(stopped.pid)
        assert not executor._stopped(held.pid)
    finally:
        for p in (stopped, held):
            p.kill()
            p.wait()
