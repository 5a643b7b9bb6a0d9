"""End to end: `copyfuzz fuzz`, `replay` and `repro FILE` over the native libFuzzer
driver, and the Python mirror of the driver's input decoding (fuzzinput) against the C
one. Needs clang and QEMU: a missing tool FAILS these tests.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, budget, run_cli
from copyfuzz import build, envs, executor, fuzzinput, paths, records
from copyfuzz.spec import Spec, format_spec

pytestmark = pytest.mark.e2e

LIBFUZZER = paths.libfuzzer_target(ROOT)
CORRECT = {"copy": "riscv/copy_user", "clear": "riscv/clear_user", "memcpy": "riscv/memcpy",
           "memset": "riscv/memset", "memmove": "riscv/memmove"}


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all", "fuzz-targets"], cwd=ROOT, check=True)


def one_way_executor(tmp_path: Path, kind: str) -> Path:
    """copy_user's body built as a copy_from_user or copy_to_user routine (as check builds it)."""
    proc = run_cli("check", "arch/riscv/copy_user.S", "--symbol", f"__asm_copy_to_user:{kind}", "--max-len", "0",
                   "--findings", str(tmp_path / "check"))
    assert proc.returncode == 0, proc.stderr
    built = [elf for elf in paths.check_dir(ROOT, 64, "riscv").glob("copy_user-__asm_copy_to_user-*.elf")
             if executor.info([*([] if build.native(64, "riscv") else build.qemu_command(64, "riscv")),
                                     str(elf)]).get("kind") == kind]
    assert built, kind
    return built[0]


@pytest.mark.parametrize("kind,max_len", [("copy", 65536), ("clear", 5000), ("memcpy", 300), ("memset", 65536),
                                          ("memmove", 300), ("copy_from_user", 65536), ("copy_to_user", 300)])
def test_python_decode_matches_the_driver(tmp_path: Path, kind: str, max_len: int) -> None:
    rnd = random.Random(f"{kind}{max_len}")
    inputs = []
    for i in range(67):  # 201 inputs over the three kinds
        size = rnd.choice([0, 1, 3, 9, 10, 12, 14, rnd.randrange(0, 20)])
        data = bytes(rnd.randrange(256) for _ in range(size))
        path = tmp_path / f"in{i:03d}"
        path.write_bytes(data)
        inputs.append(path)
    elf = paths.executor(ROOT, CORRECT[kind], 64) if kind in CORRECT else one_way_executor(tmp_path, kind)
    env = envs.driver_env(executor=elf, kind=kind, profile="exact",
                          plugin="", max_len=max_len, print_case="1")
    proc = subprocess.run([str(LIBFUZZER), *map(str, inputs)], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = dict(re.findall(r"Running: (\S+)\ncase: (\S+)", proc.stderr))
    assert len(shown) == len(inputs)
    for path in inputs:
        mine = fuzzinput.decode(ROOT, path.read_bytes(), kind, max_len, routine="r")
        assert format_spec(mine) == f"r:{shown[str(path)]}", path.read_bytes().hex()


def _sweep_like_specs(kind: str) -> list[Spec]:
    """Page-granular cases like a sweep's: faults on page boundaries within reach."""
    out = []
    for n in (0, 1, 7, 64, 255, 4096, 4097, 65535):
        for off in (0, 1, 4095):
            pages = max(1, (off + n + 4095) // 4096)
            faults: list[int | None] = [None, 0, *[(j * 4096 - off) for j in range(1, pages + 2)]]
            if kind in records.RETURNS_DST:
                faults = [None, pages * 4096 - off]
            for fault in faults:
                if kind == "memmove":
                    for disp in (0, 1, -1, n + 16, -(n + 16)):
                        top = records.memmove_top(n, disp)
                        guard = max(1, (off + top + 4095) // 4096) * 4096 - off
                        out.append(Spec("r", kind, n, 0, None, off, None if fault is None else guard, disp=disp))
                elif kind == "memset":
                    out += [Spec("r", kind, n, 0, None, off, fault, fill=f) for f in (0, 0xA5, 0xFFFFFF81)]
                elif kind == "clear":
                    out.append(Spec("r", kind, n, 0, None, off, fault))
                else:  # the copies: a fault on each side that can fault (one-way: the user's)
                    if records.side_faults(kind, "src") or fault is None:
                        out.append(Spec("r", kind, n, off, fault, (off * 7) % 4096, None))
                    if records.side_faults(kind, "dst") or fault is None:
                        out.append(Spec("r", kind, n, 3, None, off, fault))
    return out


@pytest.mark.parametrize("kind", records.KINDS)
def test_encode_round_trips(kind: str) -> None:
    for spec in _sweep_like_specs(kind):
        assert fuzzinput.decode(ROOT, fuzzinput.encode(spec), kind, routine="r") == spec


Campaign = tuple[subprocess.CompletedProcess[str], Path]  # the run and its directory


@pytest.fixture(scope="module")
def mutant_campaign(tmp_path_factory: pytest.TempPathFactory) -> Campaign:
    tmp = tmp_path_factory.mktemp("wrong-shift")
    proc = run_cli("fuzz", "riscv/mutants/wrong-shift", "--time", budget(300), "--until", "wrong-data", "--seed", "1",
                   "--corpus", str(tmp / "corpus"), "--findings", str(tmp / "findings"),
                   "--regressions", str(tmp / "regressions"), timeout=300)
    return proc, tmp


def test_fuzz_finds_the_mutant_and_saves_a_regression(mutant_campaign: Campaign) -> None:
    proc, tmp = mutant_campaign
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert "wrong-data" in proc.stdout
    specs = sorted((tmp / "regressions").glob("riscv__mutants__wrong-shift--*.spec"))
    assert specs, list((tmp / "regressions").iterdir()) if (tmp / "regressions").exists() else "none"
    text = specs[0].read_text()
    assert "# found-by: libfuzzer" in text and "# fault-pc: " in text and "# class: " in text
    spec_lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(spec_lines) == 1 and spec_lines[0].startswith("riscv/mutants/wrong-shift:n=")
    repro = run_cli("repro", str(specs[0]))
    assert repro.returncode == 1 and "wrong-data" in repro.stdout, repro.stdout + repro.stderr


def test_replay_of_the_regressions_reproduces(mutant_campaign: Campaign) -> None:
    _, tmp = mutant_campaign
    proc = run_cli("replay", str(tmp / "regressions"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "riscv/mutants/wrong-shift" in proc.stdout and "wrong-data" in proc.stdout


def test_repro_of_a_libfuzzer_finding_and_of_its_raw_input(mutant_campaign: Campaign) -> None:
    _, tmp = mutant_campaign
    finding = sorted((tmp / "findings").glob("driver-*.finding"))[0]
    fields = dict(line.partition("=")[::2] for line in finding.read_text().splitlines())
    raw = tmp / "raw-input"
    raw.write_bytes(bytes.fromhex(fields["input"]))  # the bytes libFuzzer gave the driver
    for artifact in (finding, raw):
        proc = run_cli("repro", str(artifact), "--routine", "riscv/mutants/wrong-shift")
        assert proc.returncode == 1 and "wrong-data" in proc.stdout, proc.stdout + proc.stderr
        assert f"wrong-shift:{fields['spec']}" in proc.stdout, proc.stdout  # the same case
    without = run_cli("repro", str(raw))
    assert without.returncode == 2 and "--routine" in without.stderr


def test_fuzz_of_a_correct_routine_is_clean_and_grows_a_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    # 2 s: some 28,000 cases (over 1000 asserted) and both workers' snapshots (one at exit)
    proc = run_cli("fuzz", "riscv/copy_user", "--time", budget(2), "--jobs", "2", "--corpus", str(corpus),
                   "--findings", str(tmp_path / "findings"), "--regressions", str(tmp_path / "reg"),
                   "--json", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert any(corpus.iterdir())
    rep = json.loads(proc.stdout)
    # the two workers' coverage snapshots, merged: executions and coverage of the routine
    cov = rep["coverage"]
    assert cov["workers"] >= 2, cov
    assert cov["cases"] > 1000 and rep["executions"] > 1000
    assert 0 < cov["executed"] <= cov["instructions"] and 0 < cov["edges_covered"] <= cov["edges"]
    assert cov["fault_covered"] > 0
    assert not (tmp_path / "reg").exists() or not any((tmp_path / "reg").iterdir())
    assert not any((tmp_path / "findings/.runs").iterdir()), "the run left its private directory"
    # the raw corpus replays clean for its routine, and needs --routine
    replay = run_cli("replay", str(corpus), "--routine", "riscv/copy_user")
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert run_cli("replay", str(corpus)).returncode == 2


def test_replay_of_clean_specs_exits_0(tmp_path: Path) -> None:
    (tmp_path / "a.spec").write_text("# clean\nriscv/copy_user:n=100,src_off=3,dst_off=5\n")
    (tmp_path / "b.spec").write_text("riscv/clear_user:n=4096,dst_off=7,dst_fault=4089\n")
    proc = run_cli("replay", str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "riscv/copy_user" in proc.stdout and "riscv/clear_user" in proc.stdout


@pytest.mark.parametrize("engine", ["libfuzzer", "hypothesis"])
def test_a_damaged_regression_stops_the_campaign_in_one_line(tmp_path: Path, engine: str) -> None:
    """A regression of the routine whose spec cannot be (a fault no page boundary makes) is
    refused before fuzzing, as replay refuses it; a finding would else be filed under it."""
    regs = tmp_path / "r"
    regs.mkdir()
    bad = regs / "riscv__copy_user--wrong-data.spec"
    bad.write_text("# class: wrong-data\n# fault-pc: none\nriscv/copy_user:n=1,src_off=3,src_fault=5,dst_off=0\n")
    proc = run_cli("fuzz", "riscv/copy_user", "--engine", engine, "--time", "1", "--corpus", str(tmp_path / "c"),
                   "--findings", str(tmp_path / "f"), "--regressions", str(regs))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"copyfuzz: {bad}: src_fault=5 cannot happen with src_off=3"), line
    assert run_cli("replay", str(regs)).returncode == 2
    repro = run_cli("repro", str(bad), "--json")  # names the file too
    assert repro.returncode == 2 and json.loads(repro.stdout)["error"].startswith(f"{bad}: src_fault=5"), repro.stdout


@pytest.mark.parametrize("routine", ["riscv/copy_user", "arm/copy_to_user"])
def test_a_one_second_campaign_runs_and_arm_at_its_own_width(tmp_path: Path, routine: str) -> None:
    """--time 1 runs libFuzzer for a second (it ran none: -max_total_time takes whole
    seconds, and less than one was left by the first round); fuzz has no --xlen, and a
    32-bit ARM routine runs at 32 bits (it was refused as --xlen 64)."""
    proc = run_cli("fuzz", routine, "--time", "1", "--corpus", str(tmp_path / "c"), "--findings",
                   str(tmp_path / "f"), "--regressions", str(tmp_path / "r"), "--json", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert rep["rounds"] == 1 and rep["executions"] > 0, rep


def test_repro_of_a_raw_input_decodes_it_with_the_campaigns_max_len(tmp_path: Path) -> None:
    raw = fuzzinput.encode(Spec("riscv/copy_user", "copy", 1000, 8, None, 0, None))
    as_run = fuzzinput.decode(ROOT, raw, "copy", 300, "riscv/copy_user")
    assert as_run != fuzzinput.decode(ROOT, raw, "copy", fuzzinput.DEFAULT_MAX_LEN, "riscv/copy_user")
    (tmp_path / "crash-x").write_bytes(raw)
    proc = run_cli("repro", str(tmp_path / "crash-x"), "--routine", "riscv/copy_user", "--max-len", "300", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["spec"] == format_spec(as_run)


def _afl_output_dir(top: Path) -> Path:
    """An AFL++ output dir as afl-fuzz leaves it: one queue entry, its bookkeeping around it."""
    inst = top / "main-H"
    for sub in ("queue", "crashes", "hangs", "queue/.state"):
        (inst / sub).mkdir(parents=True)
    (inst / "queue" / "id:000000,time:0,execs:0,orig:seed").write_bytes(
        fuzzinput.encode(Spec("riscv/copy_user", "copy", 24, 3, None, 5, None)))
    (inst / "crashes" / "README.txt").write_text("Command line used to find this crash:\n\n./driver @@\n")
    (inst / "hangs" / "notes").write_bytes(b"\x01" * 14)  # not an id: entry of an instance's dir
    for name in ("fuzzer_stats", "fuzzer_setup", "plot_data", "cmdline", "target_hash", "is_main_node"):
        (inst / name).write_text("execs_done : 1\n")
    (inst / "fuzz_bitmap").write_bytes(bytes(64))
    (inst / ".cur_input").write_bytes(bytes(14))
    (top / "afl-handled").write_text("0123abcd\n")
    (top / "main-H.lock").write_text("")
    return top


def test_replay_and_cov_skip_afls_bookkeeping(tmp_path: Path) -> None:
    top = _afl_output_dir(tmp_path / "afl")
    assert [p.name for p in fuzzinput.case_files(top)] == ["id:000000,time:0,execs:0,orig:seed"]
    proc = run_cli("replay", str(top), "--routine", "riscv/copy_user", "--json")
    assert proc.returncode == 0, proc.stderr
    assert [r["cases"] for r in json.loads(proc.stdout)] == [1]
    proc = run_cli("cov", "riscv/copy_user", "--corpus", str(top), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["cases"] == 1
