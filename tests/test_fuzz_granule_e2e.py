"""`copyfuzz fuzz --granule 16` (arm64, libFuzzer and AFL++): an input may ask for its
faults at 16-byte MTE tag granules inside a page (byte 14), the driver decodes it as
fuzzinput does and runs its executor with --granule 16, and what a campaign finds there
is saved, replayed and reproduced as a granule case. Needs clang, qemu-aarch64 and its
MTE."""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path

import pytest
from conftest import ROOT, budget, run_cli
from copyfuzz import build, envs, fuzzinput, paths, records, triage
from copyfuzz.spec import Spec, format_spec, parse

pytestmark = pytest.mark.e2e

LIBFUZZER = paths.libfuzzer_target(ROOT)
# Its tail over-reads inside the page: with faults at pages only the plugin sees it
# (load-out-of-bounds); at a tag granule the over-read faults, and the routine gives up
# on bytes it could have copied (spurious-fault, no-progress), which pages never show.
OVERREAD = "arm64/mutants/overread-in-page"
GRANULE_ONLY = {"spurious-fault", "no-progress"}


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    subprocess.run(["make", "-s", "all", "fuzz-targets"], cwd=ROOT, check=True)
    subprocess.run(["make", "-s", "ARCH=arm64", "all"], cwd=ROOT, check=True)


@pytest.mark.parametrize("routine,kind", [("arm64/copy_from_user", "copy_from_user"), ("arm64/memcpy", "memcpy"),
                                          ("arm64/clear_user", "clear")])
def test_python_decode_matches_the_driver_with_granules(tmp_path: Path, routine: str, kind: str) -> None:
    rnd = random.Random(routine)
    inputs = []
    for i in range(60):
        size = rnd.choice([0, 10, 14, 15, 15, 15, rnd.randrange(0, 20)])
        data = bytes(rnd.randrange(256) for _ in range(size))
        path = tmp_path / f"in{i:03d}"
        path.write_bytes(data)
        inputs.append(path)
    env = envs.driver_env(executor=paths.executor(ROOT, routine, 64), kind=kind, profile="exact", plugin="",
                          max_len=300, print_case="1", granule=records.GRANULE_MTE,
                          qemu=build.qemu_command(64, "arm64")[0])
    proc = subprocess.run([str(LIBFUZZER), *map(str, inputs)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    shown = dict(re.findall(r"Running: (\S+)\ncase: (\S+)", proc.stderr))
    assert len(shown) == len(inputs)
    granules = 0
    for path in inputs:
        mine = fuzzinput.decode(ROOT, path.read_bytes(), kind, 300, routine="r", granule=records.GRANULE_MTE)
        assert format_spec(mine) == f"r:{shown[str(path)]}", path.read_bytes().hex()
        granules += mine.granule == records.GRANULE_MTE
    assert granules > 3, "few inputs asked for granules: the test tested little"


def test_granule_specs_encode_and_decode_back() -> None:
    for n in (0, 1, 15, 16, 17, 100, 300):
        for off in (0, 1, 15, 16, 4095):
            units = max(1, (off % 16 + n + 15) // 16)
            for fault in [None, 0, *[j * 16 - off % 16 for j in range(1, min(units + 2, 257))]]:
                spec = Spec("r", "copy_from_user", n, off, fault, 8, None, granule=records.GRANULE_MTE)
                data = fuzzinput.encode(spec)
                assert fuzzinput.decode(ROOT, data, "copy_from_user", routine="r", granule=16) == spec
                # A campaign without granules reads the same bytes as a page case.
                assert fuzzinput.decode(ROOT, data, "copy_from_user", routine="r").granule == 0


def test_a_granule_campaign_finds_what_pages_cannot_show(tmp_path: Path) -> None:
    proc = run_cli("fuzz", OVERREAD, "--granule", "16", "--time", budget(120), "--seed", "1", "--json",
                   "--until", ",".join(sorted(GRANULE_ONLY)), "--corpus", str(tmp_path / "corpus"), "--findings",
                   str(tmp_path / "findings"), "--regressions", str(tmp_path / "regressions"), timeout=600)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-3000:]
    rep = json.loads(proc.stdout)
    assert rep["until_met"], rep
    find = next(f for f in rep["finds"] if GRANULE_ONLY & set(f["classes"]))
    spec = parse(find["spec"], "copy_from_user")
    assert spec.granule == records.GRANULE_MTE and spec.src_fault is not None, find
    assert (spec.src_off + spec.src_fault) % records.PAGE_SIZE != 0, "a page boundary: pages could show it"
    assert spec.n <= 80, f"not shrunk at granules: {find['spec']}"  # n = 1 and 65 here (seed 1)
    # The regression is a granule case: repro and replay run it as one.
    regression = Path(find["regression"])
    assert ",granule=16" in regression.read_text()
    repro = run_cli("repro", str(regression), "--json")
    assert repro.returncode == 1 and GRANULE_ONLY & set(json.loads(repro.stdout)["errors"]), repro.stdout


def test_the_shrinker_moves_a_granule_case_by_granules() -> None:
    """Its neighbours stay granule cases with their faults at granules, offsets near the
    page's start as the sweep has them (not moved to a page boundary, where a fault at
    a granule would be one at a page)."""
    spec = Spec("r", "copy_from_user", 2566, 1783, 2537, 2, None, granule=records.GRANULE_MTE)
    out = triage.neighbours(spec, 64)
    assert out and all(s.granule == 16 for s in out)
    faulting = [s for s in out if s.src_fault]
    assert faulting and all((s.src_off + (s.src_fault or 0)) % 16 == 0 and s.src_off < 16 for s in faulting
                            if s.src_off != spec.src_off)


@pytest.mark.parametrize("args,message", [
    (("riscv/copy_user",), "need MTE (arm64)"),
    ((OVERREAD, "--engine", "hypothesis"), "Hypothesis draws page cases only"),
])
def test_granules_are_for_arm64_and_the_drivers_engines(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    proc = run_cli("fuzz", *args, "--granule", "16", "--time", "1", "--corpus", str(tmp_path / "c"),
                   "--findings", str(tmp_path / "f"))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("value", ["8", "16x", "-1"])
def test_the_driver_refuses_a_granule_it_cannot_make(tmp_path: Path, value: str) -> None:
    env = {**envs.driver_env(executor=paths.executor(ROOT, "arm64/memcpy", 64), kind="memcpy", plugin="",
                             qemu=build.qemu_command(64, "arm64")[0]), "COPYFUZZ_GRANULE": value}
    (tmp_path / "in").write_bytes(bytes(15))
    proc = subprocess.run([str(LIBFUZZER), str(tmp_path / "in")], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and f"COPYFUZZ_GRANULE={value}: expected 0 or 16" in proc.stderr, proc.stderr


def test_cov_corpus_runs_a_granule_campaigns_cases_with_granule_16(tmp_path: Path) -> None:
    spec = Spec("arm64/copy_from_user", "copy_from_user", 64, 4064, 16, 0, None, granule=records.GRANULE_MTE)
    (tmp_path / "a.txt").write_text(f"{format_spec(spec)}\n")
    (tmp_path / "id:000000").write_bytes(fuzzinput.encode(spec))  # a raw input of the campaign
    proc = run_cli("cov", "arm64/copy_from_user", "--corpus", str(tmp_path), "--granule", "16", "--json")
    assert proc.returncode == 0, proc.stderr
    rep = json.loads(proc.stdout)
    assert rep["cases"] == 2 and rep["entries_taken"] > 0
    proc = run_cli("cov", "arm64/copy_from_user", "--corpus", str(tmp_path))  # a session of page cases
    assert proc.returncode == 2 and "a.txt (case 1): the executor rejected the case" in proc.stderr, proc.stderr
