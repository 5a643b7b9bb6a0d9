"""End to end: baselines of known findings (--known, --write-known) on check, sweep, fuzz,
replay, the CI scripts and the JUnit report, on our bundled mutants (small --max-len,
campaigns with --until). Needs the cross toolchain, QEMU and clang: a missing tool FAILS.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, budget, fuzz_args, run_cli

pytestmark = pytest.mark.e2e

FULL_SIZE = "riscv/mutants/fixup-full-size"  # no-progress, store-beyond-reported (and imprecise, exact)
WRONG_SHIFT = "riscv/mutants/wrong-shift"  # wrong-data
TAIL = "riscv/mutants/tail-extra-byte"  # store-out-of-bounds
FULL_SIZE_CLASSES = ["no-progress", "store-beyond-reported", "imprecise"]
SYMBOL = "__asm_copy_to_user"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all"], cwd=ROOT, check=True)


def json_of(proc: subprocess.CompletedProcess[str]) -> Any:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def body(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line and not line.startswith("#")]


def star_baseline(path: Path, routine: str, classes: list[str]) -> Path:
    path.write_text("# hand-written\n" + "".join(f"{c} * {routine}\n" for c in classes))
    return path


# ---- check (and the sweep behind it) ----


# 8 bytes (they were 16): each mutant shows there what it shows at 16, the same classes
# at the same fault pcs, for a third less of each sweep
MAX_LEN = "8"


def check(tmp: Path, mutant: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli("check", f"arch/{mutant}.S", "--symbol", SYMBOL, "--max-len", MAX_LEN,
                   "--findings", str(tmp / "findings"), *extra)


def test_check_on_a_mutant_file_is_a_kernel_file(tmp_path: Path) -> None:
    """A file under arch/*/mutants/ checked as a file has no expect= to judge it by: it is
    judged like any kernel file (this ended in an IndexError)."""
    proc = check(tmp_path, FULL_SIZE)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "ESCAPED" not in proc.stdout and "no-progress" in proc.stdout, proc.stdout


def test_check_known_round_trip_and_a_new_class(tmp_path: Path) -> None:
    base = tmp_path / "known.txt"
    proc = check(tmp_path, FULL_SIZE, "--write-known", str(base), "--json")
    assert proc.returncode == 1, proc.stderr
    first = json_of(proc)["routines"][0]
    pcs = {u["class"]: u["pc"] for u in first["unique_findings"]}
    assert set(pcs) == {"no-progress", "store-beyond-reported"} and all(
        pc.startswith(f"{SYMBOL}+0x") for pc in pcs.values()), pcs
    assert not any(u["known"] for u in first["unique_findings"])
    # the written baseline: a header naming the command and the routine, one line a finding, sorted
    text = base.read_text()
    assert f"--write-known {base}" in text.splitlines()[1] and f"# routine: arch/{FULL_SIZE}.S:{SYMBOL}" in text
    assert body(base) == [f"store-beyond-reported {pcs['store-beyond-reported']}",
                          f"no-progress {pcs['no-progress']}"]

    proc = check(tmp_path, FULL_SIZE, "--known", str(base), "--json")
    assert proc.returncode == 0, proc.stdout
    report = json_of(proc)
    again = report["routines"][0]
    assert again["findings"] == first["findings"]  # still reported ...
    assert all(u["known"] and u["known_by"].startswith(f"{base}:") for u in again["unique_findings"])  # ... as known
    assert report["known"] == {"file": str(base), "entries": 2, "unused": []}

    text_proc = check(tmp_path, FULL_SIZE, "--known", str(base))
    assert text_proc.returncode == 0
    assert "(known)" in text_proc.stdout and "2 accepted, 0 new" in text_proc.stdout, text_proc.stdout

    # another mutant: a class the baseline does not list fails, and the unused lines show
    proc = check(tmp_path, TAIL, "--known", str(base), "--json")
    assert proc.returncode == 1
    report = json_of(proc)
    assert [(u["class"], u["known"]) for u in report["routines"][0]["unique_findings"]] == [
        ("store-out-of-bounds", False)]
    assert len(report["known"]["unused"]) == 2

    # the same class at another pc is new too
    base.write_text(f"no-progress {SYMBOL}+0x1000\nstore-beyond-reported *\n")
    proc = check(tmp_path, FULL_SIZE, "--known", str(base), "--json")
    assert proc.returncode == 1
    known = {u["class"]: u["known"] for u in json_of(proc)["routines"][0]["unique_findings"]}
    assert known == {"no-progress": False, "store-beyond-reported": True}


def test_sweep_of_several_routines_scopes_its_baseline(tmp_path: Path) -> None:
    base = tmp_path / "sweep.txt"
    common = ["sweep", FULL_SIZE, TAIL, "--max-len", MAX_LEN, "--findings", str(tmp_path / "f"), "--json"]
    proc = run_cli(*common, "--write-known", str(base))
    assert proc.returncode == 0, proc.stderr  # mutants: caught is the verdict
    lines = body(base)
    assert lines and all(len(line.split()) == 3 for line in lines), lines
    assert {line.split()[2] for line in lines} == {FULL_SIZE, TAIL}
    report = json_of(run_cli(*common, "--known", str(base)))
    uniques = [u for r in report["routines"] for u in r["unique_findings"]]
    assert uniques and all(u["known"] for u in uniques), uniques
    # a line scoped to another routine does not hold for this one
    other = tmp_path / "other.txt"
    other.write_text("store-out-of-bounds * riscv/copy_user\n")
    report = json_of(run_cli(*common, "--known", str(other)))
    assert not any(u["known"] for r in report["routines"] for u in r["unique_findings"])
    assert report["known"]["unused"] == [f"{other}:1: store-out-of-bounds * riscv/copy_user"]


# ---- fuzz, replay, JUnit ----


def fuzz(tmp: Path, routine: str, until: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*fuzz_args(tmp, routine, "libfuzzer", 300, "--until", until, "--seed", "1", "--max-len", "64",
                              "--json", *extra), timeout=900)


@pytest.fixture(scope="module")
def found(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """A campaign on the mutant that writes its baseline: (its directory, the baseline, its result)."""
    tmp = tmp_path_factory.mktemp("found")
    base = tmp / "found.txt"
    proc = fuzz(tmp, FULL_SIZE, "no-progress", "--write-known", str(base))
    assert proc.returncode == 1, proc.stderr[-3000:]
    return tmp, base, json_of(proc)


def test_fuzz_writes_each_class_at_its_fault_pc(found: tuple[Path, Path, dict[str, Any]]) -> None:
    _, base, rep = found
    assert rep["finds"] and not any(f["known"] for f in rep["finds"]) and rep["known"] is None
    # --until stops soon after the first: the load's and the store's pc may both be in
    each = [(f["fault_pc"].split("(")[1].rstrip(")"), f["classes"]) for f in rep["finds"]]
    assert all(classes == ["store-beyond-reported", "no-progress", "imprecise"] for _, classes in each), each
    assert sorted(body(base)) == sorted(f"{c} {pc}" for pc, classes in each for c in classes)


def test_fuzz_with_its_own_baseline_is_green(found: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    """The saved regressions come back first (seeded as findings): all known, exit 0."""
    done, base, _ = found
    proc = fuzz(tmp_path, FULL_SIZE, "no-progress", "--regressions", str(done / "regressions"), "--known", str(base))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rep = json_of(proc)
    assert rep["finds"] and all(f["known"] and f["known_by"] for f in rep["finds"]), rep["finds"]


def test_fuzz_known_anywhere_green_new_class_red_and_junit(tmp_path: Path) -> None:
    accepted = star_baseline(tmp_path / "accepted.txt", FULL_SIZE, FULL_SIZE_CLASSES)
    proc = fuzz(tmp_path / "a", FULL_SIZE, "no-progress", "--known", str(accepted))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    green = tmp_path / "green.json"
    green.write_text(proc.stdout)
    rep = json_of(proc)
    assert rep["finds"] and all(f["known"] for f in rep["finds"])

    proc = fuzz(tmp_path / "b", WRONG_SHIFT, "wrong-data", "--known", str(accepted))
    assert proc.returncode == 1, proc.stderr[-3000:]
    red = tmp_path / "red.json"
    red.write_text(proc.stdout)
    assert not any(f["known"] for f in json_of(proc)["finds"])

    out = tmp_path / "junit.xml"
    proc = run_cli("junit", "--out", str(out), str(green), str(red))
    assert proc.returncode == 1, proc.stderr
    cases = {tc.get("classname"): tc for tc in ET.parse(out).getroot().iter("testcase")}
    skipped = cases[FULL_SIZE].find("skipped")
    assert skipped is not None and cases[FULL_SIZE].find("failure") is None
    message = skipped.get("message", "")
    assert message.startswith("known findings only: ") and f"no-progress {SYMBOL}+0x" in message, message
    assert f"(baseline {accepted}:2)" in message, message
    assert cases[WRONG_SHIFT].find("failure") is not None and cases[WRONG_SHIFT].find("skipped") is None


def test_replay_known_new_and_write_known(found: tuple[Path, Path, dict[str, Any]], tmp_path: Path) -> None:
    done, base, _ = found
    regs = tmp_path / "regs"
    shutil.copytree(done / "regressions", regs)
    proc = run_cli("replay", str(regs), "--known", str(base), "--json", "--write-known", str(tmp_path / "r.txt"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    entry = json_of(proc)[0]
    assert entry["failing_cases"] >= 1 and entry["new_failing_cases"] == 0
    assert all(u["known"] for u in entry["unique_findings"])
    assert body(tmp_path / "r.txt") == body(base)  # the same findings, the same lines
    green = tmp_path / "replay.json"
    green.write_text(proc.stdout)
    out = tmp_path / "junit.xml"
    assert run_cli("junit", "--out", str(out), str(green)).returncode == 0
    assert "known findings only" in (next(ET.parse(out).getroot().iter("skipped")).get("message") or "")

    # a regression of another mutant: new, exit 1, and only it fails
    (regs / "other.spec").write_text(f"{TAIL}:n=1,src_off=0,dst_off=0\n")
    proc = run_cli("replay", str(regs), "--known", str(base), "--json")
    assert proc.returncode == 1
    by_routine = {e["routine"]: e for e in json_of(proc)}
    assert by_routine[FULL_SIZE]["new_failing_cases"] == 0
    tail = by_routine[TAIL]["unique_findings"]  # replay runs under the plugin: load-out-of-bounds too
    assert "store-out-of-bounds" in {u["class"] for u in tail}
    assert all(u["pc"] is None and not u["known"] for u in tail), tail
    text = run_cli("replay", str(regs), "--known", str(base))
    assert "1 with new findings" in text.stdout and "with known findings only" in text.stdout, text.stdout


# ---- the CI scripts ----


def ci(script: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "ci" / script), *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, stdin=subprocess.DEVNULL)


def test_ci_scripts_take_known_and_write_known(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("no-progress *\nno-progress __asm_copy_to_user+12\n")
    for script in ("campaign.sh", "replay.sh"):
        proc = ci(script, "--known", bad, "--artifacts", tmp_path / "never")
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith(f"copyfuzz: {bad}:2: "), proc.stderr
        assert not (tmp_path / "never").exists()

    accepted = star_baseline(tmp_path / "accepted.txt", FULL_SIZE, FULL_SIZE_CLASSES)
    art = tmp_path / "art"
    written = tmp_path / "out" / "found.txt"
    # --until: the run ends at its first (known) finding, about 1 s in, not at its --time;
    # what it found is written and replayed below as the whole --time's finds were.
    proc = ci("campaign.sh", "--routines", FULL_SIZE, "--engines", "libfuzzer", "--time", budget(3), "--seed", "1",
              "--until", "no-progress", "--artifacts", art, "--known", accepted, "--write-known", written)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    skipped = next(ET.parse(art / "junit.xml").getroot().iter("testcase")).find("skipped")
    assert skipped is not None and "known findings only" in skipped.get("message", "")
    lines = body(written)
    assert lines and {line.split()[0] for line in lines} <= set(FULL_SIZE_CLASSES), lines
    assert "# command: ci/campaign.sh --routines" in written.read_text()

    regs = art / "riscv__mutants__fixup-full-size" / "libfuzzer" / "regressions"
    out = tmp_path / "replayed.txt"
    proc = ci("replay.sh", "--corpora", tmp_path / "no-corpora", "--regressions", regs, "--artifacts", tmp_path / "rep",
              "--known", written, "--write-known", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    result = json.loads((tmp_path / "rep" / "regressions.json").read_text())
    assert all(u["known"] for e in result for u in e["unique_findings"])
    assert body(out) == lines


def test_a_long_baseline_is_read_in_linear_time_and_its_unused_lines_summed_up(tmp_path: Path) -> None:
    """A million-line baseline took 148 s, nearly all of it printing each unused line
    (issue 26, point 8): the text report lists known.SHOWN_UNUSED of them and counts the
    rest; --json still lists every one."""
    from copyfuzz import known

    extra = 10
    base = tmp_path / "many.txt"
    base.write_text("".join(f"wrong-data sym{i}+0x4\n" for i in range(known.SHOWN_UNUSED + extra)))
    common = ("sweep", "riscv/copy_user", "--max-len", "1", "--no-audit", "--known", str(base),
              "--findings", str(tmp_path / "f"))
    text = run_cli(*common)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("unused: ") == known.SHOWN_UNUSED
    assert f"... and {extra} more unused lines" in text.stdout
    assert len(json_of(run_cli(*common, "--json"))["known"]["unused"]) == known.SHOWN_UNUSED + extra
