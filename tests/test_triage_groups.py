"""Campaign.triage_groups, the one group-then-triage path of AFL++'s crashes and the drivers'
.finding files: which cases it triages, under which class, and which it defers or skips.
The executor and the triage are stand-ins: unit tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
from conftest import ROOT
from copyfuzz import atomic, records, regressions
from copyfuzz.campaign import Campaign
from copyfuzz.routines import discover, find
from copyfuzz.spec import Spec, format_spec, parse_fields
from copyfuzz.triage import CampaignFinding

Failure = tuple[Path, Spec, list[str]]
ROUTINE = find(discover(ROOT), "riscv/copy_user")


def spec(fields: str) -> Spec:
    return parse_fields(ROUTINE.name, ROUTINE.kind, fields)


def _result(classes: list[str], pc: int = 0) -> records.Result:
    mask = records.class_mask(classes)
    return records.Result(type=records.RESULT_CASE, classes=mask, errors=mask, fault_pc=pc, faults=1 if pc else 0)


class Stand:
    """A campaign whose serve answers from a table and whose triage is noted."""

    def __init__(self, tmp_path: Path, table: dict[str, records.Result], run_at_most: int = 1 << 30,
                 finds: Callable[[Spec, str], CampaignFinding | None] | None = None,
                 writes_untriaged: bool = False) -> None:
        results = {format_spec(spec(f)): r for f, r in table.items()}  # by the case, as a spec line
        self.c = Campaign(ROOT, ROUTINE, "linux", 1, tmp_path / "corpus", tmp_path / "findings", tmp_path / "reg",
                          "afl", 64)
        self.triaged: list[tuple[str, str | None, list[str] | None]] = []
        self.deferred: list[tuple[str, list[str]]] = []

        def run_in_time(specs: list[Spec]) -> list[records.Result]:
            return [results[format_spec(s)] for s in specs][:run_at_most]

        def triage(candidates: list[Spec], artifact: Path | None = None, pick: Any = None, move: bool = True,
                   seen: list[str] | None = None) -> CampaignFinding | None:
            case = candidates[0]
            result = results[format_spec(case)]
            cls = pick(result.error_list) if pick and result.errors else None
            self.triaged.append((format_spec(case), cls, seen))
            if not result.errors:
                self.c.unreproduced_specs.add(format_spec(case))
                return None
            found = finds(case, cls or "") if finds else None
            if found is not None:
                self.c.found.append(found)
            return found

        def defer(failures: list[tuple[Spec, list[str]]]) -> None:
            self.deferred += [(format_spec(s), classes) for s, classes in failures]

        self.c.run_in_time = run_in_time  # type: ignore[method-assign]
        self.c.triage = triage  # type: ignore[method-assign]
        if not writes_untriaged:  # else the campaign's own defer writes its files
            self.c.defer = defer  # type: ignore[method-assign]


def _failures(tmp_path: Path, fields: list[str]) -> list[Failure]:
    return [(tmp_path / f"f{i}", spec(f), ["seen"]) for i, f in enumerate(fields)]


FIELDS = ["n=9", "n=3", "n=5", "n=7", "n=2"]
TABLE = {"n=9": _result(["wrong-data"], 0x10), "n=3": _result(["wrong-data", "imprecise"], 0x10),
         "n=5": _result([]), "n=7": _result(["over-report"], 0x20), "n=2": _result(["wrong-data"])}


def _stand(tmp_path: Path, **kw: Any) -> tuple[Stand, list[Failure]]:
    return Stand(tmp_path, TABLE, **kw), _failures(tmp_path, FIELDS)


@pytest.mark.parametrize("unreproduced", [True, False])
def test_each_group_s_smallest_case_is_triaged_under_its_class(tmp_path: Path, unreproduced: bool) -> None:
    stand, failures = _stand(tmp_path, run_at_most=4)
    stand.c.triage_groups(failures, unreproduced=unreproduced, covered=False)
    s = [format_spec(f[1]) for f in failures]
    # n=2 was not run in time: deferred with what its source saw; n=5 shows nothing.
    assert stand.deferred == [(s[4], ["seen"])]
    assert stand.triaged == [*([(s[2], None, None)] if unreproduced else []),
                             (s[1], "wrong-data", ["wrong-data", "imprecise"]),  # smaller than n=9
                             (s[3], "over-report", ["over-report"])]


def test_past_the_deadline_a_batch_is_saved_in_one_file_per_set_of_classes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the triage time left is written once a set of classes, not once a case: each
    write is fsynced, and forty of them took 5.7 s past the deadline on a loaded machine.
    Every case is kept, each once, with the classes its source saw."""
    fields = [f"n={n}" for n in range(2, 42)]
    table = {f"n={n}": _result(["wrong-data"] if n % 2 else ["over-report"], 0x10 + n % 2) for n in range(2, 42)}
    stand = Stand(tmp_path, table, run_at_most=10, writes_untriaged=True)
    stand.c.start()
    stand.c.triage_deadline = 0.0  # the triage time is over: past the ten run, nothing is triaged
    writes: list[Path] = []
    real_write = atomic.write_unique

    def counted(directory: Path, *args: Any) -> Path:
        writes.append(directory)
        return real_write(directory, *args)

    monkeypatch.setattr(atomic, "write_unique", counted)
    failures = [(tmp_path / f"f{i}", spec(f), ["seen"]) for i, f in enumerate(fields)]
    stand.c.triage_groups(failures + failures[10:13], unreproduced=True, covered=False)
    assert stand.triaged == []
    files = [Path(p) for p in stand.c.out_of_time]
    assert len(writes) == len(files) == 3  # the 30 not run, then each group's smallest case
    assert sorted(regressions.header(p)["classes"] for p in files) == ["over-report", "seen", "wrong-data"]
    saved = [line for p in files for line in p.read_text().splitlines() if not line.startswith("#")]
    expected = {format_spec(f[1]) for f in failures[10:]} | {format_spec(spec("n=2")), format_spec(spec("n=3"))}
    assert sorted(saved) == sorted(expected) and stand.c.deferred_specs == expected


def test_an_unreproduced_case_is_reported_once(tmp_path: Path) -> None:
    stand, failures = _stand(tmp_path)
    stand.c.triage_groups(failures[2:3] * 2, unreproduced=True, covered=False)
    stand.c.triage_groups(failures[2:3], unreproduced=True, covered=False)
    assert [t[0] for t in stand.triaged] == [format_spec(failures[2][1])]


def test_covered_skips_pairs_a_finding_holds_before_or_in_the_batch(tmp_path: Path) -> None:
    def finds(spec: Spec, cls: str) -> CampaignFinding:
        # each finding shows wrong-data and imprecise at 0x10: the first holds (imprecise, 0x10) too
        return CampaignFinding(cls, ["wrong-data", "imprecise"], format_spec(spec), "0x10 (f+0x4)", "", "", True)

    stand = Stand(tmp_path, dict(TABLE, **{"n=4": _result(["imprecise"], 0x10)}), finds=finds)
    failures = _failures(tmp_path, ["n=3", "n=4", "n=7"])
    stand.c.triage_groups(failures, unreproduced=False, covered=True)
    assert [t[1] for t in stand.triaged] == ["wrong-data", "over-report"]  # not (imprecise, 0x10): held
    stand.triaged.clear()
    stand.c.triage_groups(failures, unreproduced=False, covered=True)
    assert [t[1] for t in stand.triaged] == ["over-report"]  # its finding (by finds) is not at 0x20
    stand.triaged.clear()
    stand.c.triage_groups(failures, unreproduced=False, covered=False)
    assert [t[1] for t in stand.triaged] == ["wrong-data", "imprecise", "over-report"]


def test_once_until_is_met_nothing_more_is_triaged_and_the_files_are_listed(tmp_path: Path) -> None:
    def finds(spec: Spec, cls: str) -> CampaignFinding:
        return CampaignFinding(cls, [cls], format_spec(spec), "0x10", "", "", True)

    stand, failures = _stand(tmp_path, finds=finds)
    stand.c.until = frozenset({"wrong-data"})
    stand.c.triage_groups(failures, unreproduced=True, covered=False)
    assert [t[0] for t in stand.triaged] == [format_spec(failures[i][1]) for i in (2, 1)]
    assert stand.c.untriaged == [str(failures[i][0]) for i in (3, 4)]


def test_a_driver_file_that_is_no_case_of_the_campaign_is_said_and_skipped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A damaged .finding, or a granule case in a campaign whose faults are at pages (a
    driver of another campaign wrote it), is kept and named, not triaged: it must not end
    the campaign with the executor's refusal."""
    stand = Stand(tmp_path, {"n=3": _result(["wrong-data"], 0x10)})
    stand.c.findings_dir.mkdir(parents=True)
    run = tmp_path / "run"
    run.mkdir()
    for name, text in (("driver-1-0.finding", "spec=n=3,src_off=0,dst_off=0\nclasses=wrong-data\n"),
                       ("driver-1-1.finding", "spec=n=zz\n"),
                       ("driver-1-2.finding", "spec=n=3,src_off=0,dst_off=0,granule=16\n")):
        (run / name).write_text(text)
    stand.c.take_driver_findings(run)
    assert [t[0] for t in stand.triaged] == [format_spec(spec("n=3"))]
    err = capsys.readouterr().err
    assert "driver-1-1.finding: not a case of this campaign" in err
    assert "driver-1-2.finding: not a case of this campaign (a granule case" in err
    assert sorted(p.name for p in stand.c.findings_dir.iterdir()) == [f"driver-1-{i}.finding" for i in range(3)]
