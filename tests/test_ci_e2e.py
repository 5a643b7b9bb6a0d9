"""The CI scripts (ci/): campaign.sh green on a correct routine and red on a mutant, with
their artifacts and JUnit; replay.sh green on the mutant catalogue and red when a real
routine's regression reproduces or a mutant's no longer does; afl-sync.sh between two
"hosts"; bad input. Also the JUnit writer (copyfuzz junit) on hand-made results.

Needs the toolchain, QEMU and AFL++ (a missing tool FAILS these tests). About 2-3 minutes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import ROOT, budget, run_cli

pytestmark = pytest.mark.e2e

MUTANT = "riscv/mutants/wrong-shift"
CLEAN = "riscv/copy_user"
MUTANT_FILE = "arch/riscv/mutants/wrong-shift.S"  # the mutant as a "kernel file": a real routine
STEM = {MUTANT: "riscv__mutants__wrong-shift", CLEAN: "riscv__copy_user"}


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all"], cwd=ROOT, check=True)


def ci(script: str, *args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(ROOT / "ci" / script), *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def show(proc: subprocess.CompletedProcess[str]) -> str:
    return f"exit {proc.returncode}\nstdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"


def junit(path: Path) -> dict[tuple[str, str], ET.Element]:
    """The report's testcases by (classname, name), after checking the structure and the
    counts GitHub's and GitLab's report readers rely on."""
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    cases: dict[tuple[str, str], ET.Element] = {}
    for level in (root, suites[0]):
        tcs = suites[0].findall("testcase")
        errors = [tc for tc in tcs if tc.find("error") is not None]
        failures = [tc for tc in tcs if tc.find("failure") is not None and tc.find("error") is None]
        skipped = [tc for tc in tcs if tc.find("skipped") is not None]
        assert level.get("tests") == str(len(tcs))
        assert level.get("failures") == str(len(failures))
        assert level.get("errors") == str(len(errors))
        assert level.get("skipped") == str(len(skipped))
        assert float(level.get("time", "x")) >= 0
    for tc in suites[0].findall("testcase"):
        assert tc.get("classname") and tc.get("name")
        assert float(tc.get("time", "x")) >= 0
        key = (tc.get("classname", ""), tc.get("name", ""))
        assert key not in cases, f"two testcases {key}"
        cases[key] = tc
    return cases


# ---- the JUnit writer on hand-made results ----


def _write(base: Path, result: object | None, status: str = "", stderr: str = "") -> Path:
    base.with_suffix(".json").write_text("" if result is None else json.dumps(result))
    if status:
        base.with_suffix(".status").write_text(status)
    if stderr:
        base.with_suffix(".stderr").write_text(stderr)
    return base.with_suffix(".json")


def _find(cls: str, spec: str, pc: str, reg: str, new: bool) -> dict[str, object]:
    return {"cls": cls, "classes": [cls], "spec": spec, "fault_pc": pc, "artifact": "", "regression": reg,
            "new": new}


def _fuzz_result(routine: str, engine: str, finds: list[dict[str, object]]) -> dict[str, object]:
    return {"routine": routine, "engine": engine, "profile": "linux", "seed": 7, "elapsed_s": 12.5,
            "rounds": 2, "executions": 1000, "exec_per_s": 80.0, "corpus": "c", "corpus_size": 3,
            "seeded": 0, "findings_dir": "f", "findings": {}, "coverage": None, "finds": finds}


def test_junit_writer_on_hand_made_results(tmp_path: Path) -> None:
    a = "riscv/a"
    results = [
        _write(tmp_path / "bad", _fuzz_result(a, "libfuzzer", [
            _find("wrong-data", f"{a}:n=9,src_off=1,dst_off=0", "", "regs/a--wrong-data.spec", True),
            _find("wrong-data", f"{a}:n=17,src_off=1,dst_off=0", "", "regs/a--wrong-data.spec", False),
            _find("unhandled-fault", f"{a}:n=3,dst_off=0,dst_fault=1", "0x1234 (a+0x10)",
                  "regs/a--unhandled-fault.spec", True),
        ]), "routine=riscv/a\nname=libfuzzer\nexit=1\nseconds=13.1\n"),
        _write(tmp_path / "good", _fuzz_result("riscv/b", "afl", []), "exit=0\n"),
        # A run that died before printing: its identity comes from the status file; the
        # stderr has a terminal status line and control bytes XML cannot carry.
        _write(tmp_path / "died", None, "routine=riscv/c\nname=hypothesis\nexit=2\nseconds=1.5\n"
                                        "command=./copyfuzz fuzz riscv/c\n",
               "copyfuzz: no free CPU core for afl-fuzz (main): it runs unbound (slower)\n"
               "\r\x1b[Kriscv/c: 10 execs\x00\x07\ncopyfuzz: build failed (make -s all, exit 2)\nas: error\n"),
        _write(tmp_path / "replay", [
            {"routine": MUTANT, "profile": "exact", "cases": 2, "failing_cases": 2,
             "findings": {"wrong-data": 2}, "reproducers": {"wrong-data": f"{MUTANT}:n=9"}},
            {"routine": "riscv/d", "profile": "linux", "cases": 4, "failing_cases": 1,
             "findings": {"no-progress": 1}, "reproducers": {"no-progress": "riscv/d:n=5,dst_off=0,dst_fault=1"}},
            {"routine": "riscv/e", "profile": "linux", "cases": 4, "failing_cases": 0, "findings": {},
             "reproducers": {}},
            # One file built two ways (saved `# options:`): two testcases, told apart by -D.
            {"routine": "k.S:f", "options": ["--kind", "copy"], "profile": "linux", "cases": 1,
             "failing_cases": 0, "findings": {}, "reproducers": {}},
            {"routine": "k.S:f", "options": ["-DCONFIG_X", "--kind", "copy"], "profile": "linux",
             "cases": 1, "failing_cases": 0, "findings": {}, "reproducers": {}},
        ], "name=replay regressions\nexit=1\nseconds=3\n"),
        _write(tmp_path / "skip", None, "routine=riscv/f\nname=replay corpus\nskipped=a mutant's corpus\n"),
    ]
    out = tmp_path / "junit.xml"
    proc = run_cli("junit", "--out", str(out), "--expect-mutants", *map(str, results))
    assert proc.returncode == 2, proc.stderr  # an error outweighs the failures
    cases = junit(out)
    assert list(cases) == [(a, "libfuzzer"), ("riscv/b", "afl"), ("riscv/c", "hypothesis"),
                           (MUTANT, "replay regressions"), ("riscv/d", "replay regressions"),
                           ("riscv/e", "replay regressions"), ("k.S:f", "replay regressions"),
                           ("k.S:f -DCONFIG_X", "replay regressions"), ("riscv/f", "replay corpus")]
    bad = cases[(a, "libfuzzer")]
    failures = bad.findall("failure")
    assert [f.get("type") for f in failures] == ["wrong-data", "unhandled-fault"]  # one per class
    assert bad.get("time") == "12.500"  # the JSON's elapsed_s
    assert failures[0].get("message") == f"wrong-data: {a}:n=9,src_off=1,dst_off=0 (fault pc none)"
    assert "regs/a--wrong-data.spec (new, found 2x)" in (failures[0].text or "")
    assert "fault pc: 0x1234 (a+0x10)" in (failures[1].text or "")
    assert f"spec: {a}:n=3,dst_off=0,dst_fault=1" in (failures[1].text or "")
    assert cases[("riscv/b", "afl")].find("failure") is None
    died = cases[("riscv/c", "hypothesis")]
    error = died.find("error")
    assert error is not None and died.find("failure") is None
    assert error.get("message") == "copyfuzz: build failed (make -s all, exit 2)"
    assert "command: ./copyfuzz fuzz riscv/c" in (error.text or "") and died.get("time") == "1.500"
    raw = out.read_text()
    assert "\x1b" not in raw and "\x00" not in raw and "\x07" not in raw
    # Replay: the mutant reproducing is expected, the real routine reproducing is not.
    assert cases[(MUTANT, "replay regressions")].find("failure") is None
    d_fail = cases[("riscv/d", "replay regressions")].findall("failure")
    assert [f.get("type") for f in d_fail] == ["no-progress"]
    assert "riscv/d:n=5,dst_off=0,dst_fault=1" in (d_fail[0].get("message") or "")
    assert cases[("riscv/e", "replay regressions")].find("failure") is None
    skipped = cases[("riscv/f", "replay corpus")].find("skipped")
    assert skipped is not None and skipped.get("message") == "a mutant's corpus"

    # Without --expect-mutants the mutant reproducing fails, as `copyfuzz replay` says.
    plain = run_cli("junit", "--out", str(out), str(results[3]))
    assert plain.returncode == 1, plain.stderr
    assert cases and junit(out)[(MUTANT, "replay regressions")].find("failure") is not None
    # Only clean results: 0. No result at all: a valid, empty report, 0.
    assert run_cli("junit", "--out", str(out), str(results[1])).returncode == 0
    assert run_cli("junit", "--out", str(out)).returncode == 0 and junit(out) == {}
    # A mutant whose regression no longer reproduces has escaped.
    escaped = _write(tmp_path / "escaped", [{"routine": MUTANT, "profile": "exact", "cases": 3,
                                             "failing_cases": 2, "findings": {"wrong-data": 2},
                                             "reproducers": {"wrong-data": f"{MUTANT}:n=9"}}], "exit=1\n")
    assert run_cli("junit", "--out", str(out), "--expect-mutants", str(escaped)).returncode == 1
    (fail,) = junit(out)[(MUTANT, "replay")].findall("failure")
    assert fail.get("type") == "mutant-escaped" and "1 of 3 cases" in (fail.get("message") or "")
    missing = run_cli("junit", "--out", str(out), str(tmp_path / "nothing.json"))
    assert missing.returncode == 2 and "no such result" in missing.stderr


# ---- campaign.sh ----

Campaign = tuple[subprocess.CompletedProcess[str], Path]  # the run and its directory


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    """The mutant first, then the correct routine, with two engines: the campaign must go
    on after the finding. AFL++ instances are named after host 'b'. --until ends the
    mutant's runs at their finding; the correct routine's run their --time: 3 s (it was 4,
    when afl-fuzz slept 2 s as it started; it finds wrong-data 1.2 to 1.8 s in with two CPU
    hogs beside it, tests/test_fuzz_engines_e2e.py)."""
    tmp = tmp_path_factory.mktemp("campaign")
    proc = ci("campaign.sh", "--routines", f"{MUTANT},{CLEAN}", "--engines", "libfuzzer,afl", "--time", budget(3),
              "--until", "wrong-data", "--seed", "1", "--artifacts", tmp / "art", "--corpus-cache", tmp / "cache",
              "--afl-host", "b")
    return proc, tmp


def test_campaign_is_red_on_the_mutant_and_green_on_the_routine(campaign: Campaign) -> None:
    proc, tmp = campaign
    art = tmp / "art"
    assert proc.returncode == 1, show(proc)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(("clean", "FINDINGS", "ERROR"))]
    assert [line.split()[:3] for line in lines] == [
        ["FINDINGS", MUTANT, "libfuzzer"], ["FINDINGS", MUTANT, "afl"],
        ["clean", CLEAN, "libfuzzer"], ["clean", CLEAN, "afl"]], show(proc)
    cases = junit(art / "junit.xml")
    assert set(cases) == {(r, e) for r in (MUTANT, CLEAN) for e in ("libfuzzer", "afl")}
    for engine in ("libfuzzer", "afl"):
        assert cases[(CLEAN, engine)].find("failure") is None and cases[(CLEAN, engine)].find("error") is None
        failures = cases[(MUTANT, engine)].findall("failure")
        assert [f.get("type") for f in failures] == ["wrong-data"], engine
        text = failures[0].text or ""
        assert f"spec: {MUTANT}:n=" in text and "fault pc: " in text
        run = art / STEM[MUTANT] / engine
        specs = sorted((run / "regressions").glob("*.spec"))
        assert specs and f"regression: {specs[0]}" in text
        assert (run / "findings").is_dir()
        result = json.loads((run / "result.json").read_text())
        assert result["routine"] == MUTANT and result["engine"] == engine and result["finds"]
        assert "exit=1" in (run / "result.status").read_text()
        assert float(cases[(MUTANT, engine)].get("time", "0")) > 0
    # Each routine's corpus is in the cache under the tool's stem; AFL++ ran as main-b.
    for routine in (MUTANT, CLEAN):
        assert any((tmp / "cache" / STEM[routine]).iterdir())
        assert json.loads((art / STEM[routine] / "libfuzzer" / "result.json").read_text())["corpus"] == \
            str(tmp / "cache" / STEM[routine])
    assert (art / STEM[CLEAN] / "afl" / "findings" / "afl" / "main-b" / "queue").is_dir()


def test_campaign_green_resumes_the_corpus_cache(campaign: Campaign) -> None:
    _, tmp = campaign
    cache = tmp / "cache" / STEM[CLEAN]
    before = sum(1 for _ in cache.iterdir())
    art = tmp / "green"
    # 1 s: the run reads the cache as its corpus from the start, and the count is of the
    # directory's files, which a run only adds to.
    proc = ci("campaign.sh", "--routines", CLEAN, "--engines", "libfuzzer", "--time", budget(1),
              "--corpus-cache", tmp / "cache", "--artifacts", art, "--junit", tmp / "green.xml")
    assert proc.returncode == 0, show(proc)
    (tc,) = junit(tmp / "green.xml").values()
    assert tc.get("classname") == CLEAN and tc.find("failure") is None and tc.find("error") is None
    result = json.loads((art / STEM[CLEAN] / "libfuzzer" / "result.json").read_text())
    assert result["corpus"] == str(cache) and result["corpus_size"] >= before > 0


def test_campaign_on_a_kernel_file_then_replay_is_red(tmp_path: Path) -> None:
    """--file/--symbol: the regression names the file's routine, a real routine, so its
    replay must fail (the kernel patch brought the bug back). --until ends the campaign at
    its finding (the whole test takes about 6 s); the time is the bound on a loaded machine, where 5 s of
    Hypothesis once found nothing."""
    art = tmp_path / "art"
    proc = ci("campaign.sh", "--file", MUTANT_FILE, "--symbol", "__asm_copy_to_user:copy", "--engines",
              "hypothesis", "--time", budget(20), "--until", "wrong-data", "--seed", "3", "--artifacts", art)
    assert proc.returncode == 1, show(proc)
    name = f"{MUTANT_FILE}:__asm_copy_to_user"
    (tc,) = junit(art / "junit.xml").values()
    assert (tc.get("classname"), tc.get("name")) == (name, "hypothesis")
    assert [f.get("type") for f in tc.findall("failure")] == ["wrong-data"]
    regressions = art / "arch__riscv__mutants__wrong-shift.S____asm_copy_to_user" / "hypothesis" / "regressions"
    assert f"\n{name}:n=" in next(regressions.glob("*.spec")).read_text()

    replay = ci("replay.sh", "--corpora", tmp_path / "no-corpora", "--regressions", regressions,
                "--artifacts", tmp_path / "replay")
    assert replay.returncode == 1, show(replay)
    (tc,) = junit(tmp_path / "replay" / "junit.xml").values()
    (failure,) = tc.findall("failure")
    assert tc.get("classname") == name and failure.get("type") == "wrong-data"
    assert "regression: " in (failure.text or "") and "fault pc" in (failure.text or "")


def test_campaign_reports_a_run_that_fails_and_goes_on(tmp_path: Path) -> None:
    """A file that does not assemble: every run is an <error>, exit 2, and the report and
    the per-run stderr are there."""
    broken = tmp_path / "broken.S"
    broken.write_text(".globl f\nf:\n\tnot_an_instruction a0\n")
    art = tmp_path / "art"
    proc = ci("campaign.sh", "--file", broken, "--symbol", "f:copy", "--arch", "riscv", "--engines",
              "libfuzzer,hypothesis", "--time", budget(2), "--artifacts", art)
    assert proc.returncode == 2, show(proc)
    cases = junit(art / "junit.xml")
    assert len(cases) == 2
    for tc in cases.values():
        error = tc.find("error")
        assert error is not None and "does not build" in (error.get("message") or ""), ET.tostring(tc)
        assert "not_an_instruction" in (error.text or "")  # the assembler said why
        assert tc.find("system-err") is not None
    stderrs = list(art.glob("*/*/result.stderr"))
    assert len(stderrs) == 2 and all(p.read_text() for p in stderrs)


@pytest.mark.parametrize("args,message", [
    (["--file", MUTANT_FILE], "--symbol"),
    (["--symbol", "__asm_copy_to_user"], "give the file too"),
    (["--engines", "libfuzzer,honggfuzz"], "unknown engine 'honggfuzz'"),
    (["--time", "soon"], "--time: expected a positive integer"),
    (["--triage-time", "08"], "--triage-time: expected a whole number of seconds"),  # not octal, not bash's error
    (["--triage-time", "2000000000"], "--triage-time: expected a whole number of seconds"),
    (["--routines", CLEAN, "--file", MUTANT_FILE, "--symbol", "x"], "not both"),
    (["--frobnicate"], "unknown option '--frobnicate'"),
])
def test_campaign_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    proc = ci("campaign.sh", *args, "--artifacts", tmp_path / "art", timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, show(proc)
    assert not (tmp_path / "art").exists()  # a usage error: nothing made


@pytest.mark.parametrize("args,message", [
    (["--routines", "riscv/no_such_routine"], "unknown routine 'riscv/no_such_routine'"),
    (["--file", "no/such/uaccess.S", "--symbol", "__asm_copy_to_user"], "no/such/uaccess.S: no such file"),
])
def test_campaign_unknown_target_exits_2_with_a_report(tmp_path: Path, args: list[str], message: str) -> None:
    """Nothing runs, and CI's report says why: one <error> named setup."""
    proc = ci("campaign.sh", *args, "--artifacts", tmp_path / "art", timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, show(proc)
    (tc,) = junit(tmp_path / "art" / "junit.xml").values()
    error = tc.find("error")
    assert tc.get("name") == "setup" and error is not None and message in (error.get("message") or "")
    assert not list((tmp_path / "art").glob("*/libfuzzer"))


# ---- replay.sh ----


def test_replay_is_green_on_the_catalogue_and_red_when_a_mutant_escapes(campaign: Campaign, tmp_path: Path) -> None:
    _, tmp = campaign
    corpora = tmp_path / "corpora"
    shutil.copytree(tmp / "cache", corpora)
    (corpora / "regressions").mkdir()
    for spec in (tmp / "art" / STEM[MUTANT]).glob("*/regressions/*.spec"):
        shutil.copy(spec, corpora / "regressions" / f"{spec.parent.parent.name}-{spec.name}")
    (corpora / "riscv__gone").mkdir()  # a corpus of a routine that no longer exists

    proc = ci("replay.sh", "--corpora", corpora, "--artifacts", tmp_path / "green")
    assert proc.returncode == 0, show(proc)
    cases = junit(tmp_path / "green" / "junit.xml")
    assert cases[(CLEAN, "replay corpus")].find("failure") is None
    assert "0 reproducing" in (cases[(CLEAN, "replay corpus")].findtext("system-out") or "")
    assert cases[(MUTANT, "replay corpus")].find("skipped") is not None  # a mutant's corpus
    assert cases[("riscv__gone", "replay corpus")].find("skipped") is not None
    mutant = cases[(MUTANT, "replay regressions")]
    assert mutant.find("failure") is None and "reproduces as expected" in (mutant.findtext("system-out") or "")

    # A regression of the mutant that does not reproduce: the harness would have lost it.
    (corpora / "regressions" / "escaped.spec").write_text(f"# class: wrong-data\n{MUTANT}:n=0\n")
    red = ci("replay.sh", "--corpora", corpora, "--artifacts", tmp_path / "red")
    assert red.returncode == 1, show(red)
    (failure,) = junit(tmp_path / "red" / "junit.xml")[(MUTANT, "replay regressions")].findall("failure")
    assert failure.get("type") == "mutant-escaped"


def test_replay_bad_input_and_nothing_to_replay(tmp_path: Path) -> None:
    proc = ci("replay.sh", "--regressions", tmp_path / "none", "--artifacts", tmp_path / "a", timeout=120)
    assert proc.returncode == 2 and "no such directory" in proc.stderr, show(proc)
    proc = ci("replay.sh", "--bogus", timeout=120)
    assert proc.returncode == 2 and "unknown option '--bogus'" in proc.stderr, show(proc)
    empty = ci("replay.sh", "--corpora", tmp_path / "empty", "--artifacts", tmp_path / "e", timeout=120)
    assert empty.returncode == 0 and "nothing to replay" in empty.stderr, show(empty)
    assert junit(tmp_path / "e" / "junit.xml") == {}


# ---- minimise-corpus.sh ----


def test_minimise_corpus_shrinks_the_cache_and_stays_clean(campaign: Campaign, tmp_path: Path) -> None:
    _, tmp = campaign
    cache = tmp_path / "cache"
    shutil.copytree(tmp / "cache", cache)
    before = {stem: len(list((cache / stem).iterdir())) for stem in STEM.values()}
    proc = ci("minimise-corpus.sh", "--corpus-cache", cache, "--routines", CLEAN)
    assert proc.returncode == 0, show(proc)
    after = len(list((cache / STEM[CLEAN]).iterdir()))
    assert f"{CLEAN}: {before[STEM[CLEAN]]} -> {after} inputs" in proc.stdout
    assert 0 < after <= before[STEM[CLEAN]]
    assert len(list((cache / STEM[MUTANT]).iterdir())) == before[STEM[MUTANT]]  # not asked for
    assert sorted(p.name for p in cache.iterdir()) == sorted(STEM.values())  # no leftovers
    replay = run_cli("replay", str(cache / STEM[CLEAN]), "--routine", CLEAN)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    bad = ci("minimise-corpus.sh", "--corpus-cache", tmp_path / "none", timeout=120)
    assert bad.returncode == 2 and "no such directory" in bad.stderr, show(bad)


# ---- AFL++ across hosts ----


def test_afl_sync_brings_another_hosts_queue_that_afl_imports(campaign: Campaign, tmp_path: Path) -> None:
    """Host b's main-b queue (from the campaign) into host a's output dir; host a's next
    run imports it first thing (AFL_IMPORT_FIRST with --afl-host; AFL++ records what it
    took in main-a/.synced/main-b and names the entries sync:main-b)."""
    _, tmp = campaign
    b_out = tmp / "art" / STEM[CLEAN] / "afl" / "findings" / "afl"
    a_findings = tmp_path / "a"
    a_out = a_findings / "afl"
    a_out.mkdir(parents=True)
    proc = ci("afl-sync.sh", "--host", "a", a_out, b_out)
    assert proc.returncode == 0, show(proc)
    copied = sorted(p.name for p in (a_out / "main-b" / "queue").iterdir())
    assert copied == sorted(p.name for p in (b_out / "main-b" / "queue").glob("id:*")) and copied
    assert not (a_out / "main-b" / "fuzzer_stats").exists() and not (a_out / ".sync-incoming").exists()
    again = ci("afl-sync.sh", "--host", "a", a_out, b_out)
    assert again.returncode == 0 and "afl-sync: 0 new inputs" in again.stdout, show(again)

    # 3 s (it was 4, when afl-fuzz slept 2 s as it started): AFL_IMPORT_FIRST imports before it fuzzes
    run = run_cli("fuzz", CLEAN, "--engine", "afl", "--afl-host", "a", "--time", budget(3), "--json",
                  "--findings", str(a_findings), "--corpus", str(tmp_path / "corpus"),
                  "--regressions", str(tmp_path / "regressions"), timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert (a_out / "main-a" / ".synced" / "main-b").exists(), sorted(p.name for p in (a_out / "main-a").iterdir())
    assert any("sync:main-b" in p.name for p in (a_out / "main-a" / "queue").iterdir())


def test_afl_sync_copies_only_other_hosts_mains(tmp_path: Path) -> None:
    peer, out = tmp_path / "peer", tmp_path / "out"
    for inst, n in (("main-b", 3), ("sec1-b", 2), ("main-a", 2), ("default", 1)):
        (peer / inst / "queue" / ".state").mkdir(parents=True)
        for i in range(n):
            (peer / inst / "queue" / f"id:{i:06d},time:0,orig:x").write_bytes(bytes([i]))
    (out / "main-a").mkdir(parents=True)
    (out / "main-a" / "fuzzer_stats").write_text("execs_done : 1\n")
    proc = ci("afl-sync.sh", "--host", "a", out, peer)
    assert proc.returncode == 0, show(proc)
    assert sorted(p.name for p in out.iterdir()) == ["main-a", "main-b"]  # not sec1-b, default, ours
    assert len(list((out / "main-b" / "queue").iterdir())) == 3
    assert ci("afl-sync.sh", "--host", "a", "--all-instances", out, peer).returncode == 0
    assert len(list((out / "sec1-b" / "queue").iterdir())) == 2
    # A peer dir holding a live local instance of ours under another host's name is refused.
    (out / "main-c").mkdir()
    (out / "main-c" / "fuzzer_stats").write_text("")
    (peer / "main-c" / "queue").mkdir(parents=True)
    clash = ci("afl-sync.sh", "--host", "a", out, peer)
    assert clash.returncode == 2 and "local instance" in clash.stderr, show(clash)
    assert ci("afl-sync.sh", out).returncode == 2  # no peer
