"""End to end: .clusterfuzzlite/build.sh as ClusterFuzzLite's address build runs it, without
Docker (docs/clusterfuzzlite.md). A copy of the tree is the simulated $SRC/copyfuzz; $OUT,
$WORK and the compiler variables are set as the builder sets them. Then targets run from
$OUT as a runner starts them: in an empty directory that is not the source's, with no
COPYFUZZ_* variable and an empty PATH, so they must find executor, plugin and qemu alone.
Needs clang, the cross gcc of every architecture and a dynamic qemu-user: a missing tool
FAILS these tests.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROOT

# long: the module's build of every fuzz target in a copy is 15 of its 17 s; `make
# check-long` runs it, with docs/clusterfuzzlite.md's commands (pytest.ini).
pytestmark = [pytest.mark.e2e, pytest.mark.long]

MUTANT = "riscv/mutants/wrong-shift"
# As ClusterFuzzLite's address build sets them (OSS-Fuzz base flags, ASan, libFuzzer coverage).
FLAGS = ("-O1 -fno-omit-frame-pointer -gline-tables-only -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION "
         "-fsanitize=address -fsanitize-address-use-after-scope -fsanitize=fuzzer-no-link")
SEEDS = {"seed-plain": bytes(10), "seed-shift": b"\x00\x0c\x00\x08\x03\x00\x00\x00\x00\x00"}


@dataclass
class Build:
    src: Path
    out: Path
    work: Path
    log: str


def target_name(routine: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", routine) + "_fuzzer"


def bundled_routines() -> list[str]:
    """Those that get a target: not the ones that need an ISA extension (build.sh leaves
    them out, its qemu runs the default CPU)."""
    return sorted(f"{p.parent.name}/{p.stem}" for p in (ROOT / "arch").glob("*/*.S")
                  if not re.search(r"^[ /*]*copyfuzz: isa=", p.read_text()[:4000], re.M))


def copy_tree(dest: Path) -> None:
    """The files a checkout has (and new ones git does not ignore), not build/ or .venv/."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                             "--exclude-standard"], capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        path = ROOT / name
        if path.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest / name)


def no_copyfuzz_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("COPYFUZZ_")}


def run_build(base: Path, extra: str) -> tuple[subprocess.CompletedProcess[str], Build]:
    src, out, work = base / "src", base / "out", base / "work"
    for d in (src / "copyfuzz", out, work):
        d.mkdir(parents=True)
    copy_tree(src / "copyfuzz")
    corpus = src / "copyfuzz/corpora/riscv__copy_user"
    corpus.mkdir(parents=True, exist_ok=True)
    for name, data in SEEDS.items():
        (corpus / name).write_bytes(data)
    shutil.copy2(src / "copyfuzz/.clusterfuzzlite/build.sh", src / "build.sh")  # as the Dockerfile does
    env = {**no_copyfuzz_env(), "SRC": str(src), "OUT": str(out), "WORK": str(work), "CC": "clang",
           "CXX": "clang++", "CFLAGS": FLAGS, "CXXFLAGS": FLAGS, "LIB_FUZZING_ENGINE": "-fsanitize=fuzzer",
           "SANITIZER": "address", "FUZZING_ENGINE": "libfuzzer", "FUZZING_LANGUAGE": "c",
           "ARCHITECTURE": "x86_64", "COPYFUZZ_EXTRA_TARGETS": extra}
    proc = subprocess.run(["bash", str(src / "build.sh")], cwd=src / "copyfuzz", env=env,
                          capture_output=True, text=True, timeout=900)
    return proc, Build(src, out, work, proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def cflite(tmp_path_factory: pytest.TempPathFactory) -> Build:
    proc, build = run_build(tmp_path_factory.mktemp("cflite"), MUTANT)
    assert proc.returncode == 0, build.log[-4000:]
    return build


def run_target(build: Build, tmp_path: Path, routine: str, *args: str,
               **env: str) -> subprocess.CompletedProcess[str]:
    """The target from $OUT as a runner starts it: its own empty directory, empty PATH."""
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    return subprocess.run([str(build.out / target_name(routine)), *args], cwd=run_dir,
                          env={**no_copyfuzz_env(), "PATH": str(run_dir), **env},
                          capture_output=True, text=True, timeout=300)


def looks_like_fuzz_target(path: Path) -> bool:
    """ClusterFuzz's rule: an executable without extension named *_fuzzer or holding the
    entry point's name."""
    if path.suffix not in ("", ".exe") or not path.is_file() or not os.access(path, os.X_OK):
        return False
    return path.name.endswith("_fuzzer") or b"LLVMFuzzerTestOneInput" in path.read_bytes()


def test_out_holds_the_targets_and_nothing_that_looks_like_one(cflite: Build) -> None:
    expected = {target_name(r) for r in [*bundled_routines(), MUTANT]}
    found = {p.relative_to(cflite.out).as_posix() for p in cflite.out.rglob("*") if looks_like_fuzz_target(p)}
    assert found == expected
    helpers = [p for p in (cflite.out / "copyfuzz").rglob("*") if p.is_file()]
    for p in helpers:  # stricter than the rule: whatever their extension
        assert not p.name.endswith("_fuzzer") and b"LLVMFuzzerTestOneInput" not in p.read_bytes(), p
    names = {p.relative_to(cflite.out / "copyfuzz").as_posix() for p in helpers}
    for r in [*bundled_routines(), MUTANT]:
        assert f"{r}.elf" in names
    assert {"cfplugin.so", "qemu/ld.so", "qemu/qemu-riscv64", "qemu/qemu-aarch64", "qemu/qemu-arm",
            "qemu/lib/libc.so.6"} <= names
    assert not any("mutants" in n and MUTANT not in n for n in names)  # only the named mutant
    for r in bundled_routines():
        assert "max_len = 16" in (cflite.out / f"{target_name(r)}.options").read_text()


def test_seed_corpus_is_zipped_from_corpora(cflite: Build) -> None:
    archive = cflite.out / f"{target_name('riscv/copy_user')}_seed_corpus.zip"
    listing = subprocess.run(["unzip", "-Z1", str(archive)], capture_output=True, text=True, check=True)
    assert set(SEEDS) <= set(listing.stdout.split())


def test_the_oracle_has_no_sanitizer_coverage(cflite: Build) -> None:
    ref = subprocess.run(["nm", str(cflite.work / "copyfuzz/ref.o")], capture_output=True, text=True,
                         check=True).stdout
    driver = subprocess.run(["nm", str(cflite.work / "copyfuzz/driver.o")],  # LLVMFuzzerTestOneInput's
                            capture_output=True, text=True, check=True).stdout
    assert "__asan" in ref and "__sanitizer_cov" not in ref  # the sanitizer stays, coverage goes
    assert "__sanitizer_cov" in driver


def test_correct_routine_runs_clean_from_out(cflite: Build, tmp_path: Path) -> None:
    proc = run_target(cflite, tmp_path, "riscv/copy_user", "-runs=4000", "-seed=2")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Done 4000 runs" in proc.stderr and "FINDING" not in proc.stderr
    # The plugin's RISC-V edges arrive as extra features: far more than the driver's own
    # edges (without the plugin, ft stays near cov).
    cov, ft = map(int, re.findall(r"DONE\s+cov: (\d+) ft: (\d+)", proc.stderr)[-1])
    assert ft > cov + 50, (cov, ft)
    assert not list((tmp_path / "run").iterdir())


def test_mutant_found_from_out_and_clean_on_its_parent(cflite: Build, tmp_path: Path) -> None:
    proc = run_target(cflite, tmp_path, MUTANT, "-max_total_time=120", "-seed=1")
    assert proc.returncode != 0, proc.stderr[-3000:]
    shown = proc.stderr.split("==copyfuzz== FINDING: ")[1].split(" ")[0].split(",")
    assert "wrong-data" in shown or shown[0] == "imprecise", shown
    (artifact,) = (tmp_path / "run").glob("crash-*")  # saved in the working directory
    again = run_target(cflite, tmp_path, "riscv/copy_user", str(artifact))
    assert again.returncode == 0, again.stderr[-3000:]


def test_environment_still_wins_over_the_bundle(cflite: Build, tmp_path: Path) -> None:
    """copy_user's target, told by COPYFUZZ_EXECUTOR to run the mutant's executor."""
    proc = run_target(cflite, tmp_path, "riscv/copy_user", "-max_total_time=120", "-seed=1",
                      COPYFUZZ_EXECUTOR=str(cflite.out / f"copyfuzz/{MUTANT}.elf"))
    assert proc.returncode != 0 and "==copyfuzz== FINDING" in proc.stderr, proc.stderr[-3000:]


def _qemu_children(pid: int, loader: Path) -> list[int]:
    """The target's children running the bundled loader (qemu), not e.g. the symbolizer
    libFuzzer starts for its NEW_FUNC lines."""
    out = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        try:
            if os.readlink(f"/proc/{child}/exe") == str(loader):
                out.append(int(child))
        except OSError:
            continue
    return out


def test_bundled_qemu_maps_only_bundled_libraries(cflite: Build, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    proc = subprocess.Popen([str(cflite.out / target_name("riscv/copy_user")), "-max_total_time=60"],
                            cwd=run_dir, env={**no_copyfuzz_env(), "PATH": str(run_dir)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bundle = str(cflite.out / "copyfuzz") + "/"
    maps: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("cfplugin.so" in m for m in maps):
            time.sleep(0.2)
            maps = []
            for child in _qemu_children(proc.pid, cflite.out / "copyfuzz/qemu/ld.so"):
                try:
                    maps += Path(f"/proc/{child}/maps").read_text().splitlines()
                except OSError:
                    continue  # between fork and exec, or restarting
    finally:
        proc.kill()
        proc.wait()
    files = {line.split(None, 5)[5] for line in maps if len(line.split(None, 5)) == 6}
    assert any(f.endswith("/cfplugin.so") for f in files), "qemu never loaded the plugin"
    shared = sorted(f for f in files if f.startswith("/") and ".so" in f)
    assert shared and all(f.startswith(bundle) for f in shared), [f for f in shared if not f.startswith(bundle)]
    assert bundle + "qemu/qemu-riscv64" in files


def test_an_unknown_extra_target_fails_the_build(tmp_path: Path) -> None:
    proc, build = run_build(tmp_path, "riscv/mutants/no-such-mutant")
    assert proc.returncode != 0
    assert "no routine riscv/mutants/no-such-mutant" in build.log
    assert not list(build.out.iterdir())


def test_docker_context_leaves_out_what_git_ignores() -> None:
    """The image's COPY takes the checkout; what .gitignore keeps out of the repository
    (a stale build/, the venv, findings) must stay out of the image too."""
    ignored = {line.strip().strip("/") for line in (ROOT / ".dockerignore").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    ignored |= {p.removeprefix("**/") for p in ignored}
    wanted = {line.strip().strip("/") for line in (ROOT / ".gitignore").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    assert not wanted - ignored, f".dockerignore lacks {sorted(wanted - ignored)}"


def test_cflite_local_runs_on_one_root_take_turns(tmp_path: Path) -> None:
    """A second ci/cflite-local.sh on the same --root waits for the first (which would
    otherwise have its $OUT wiped mid-run), says so, then goes on to build. (That the
    build itself works, the docs' commands show: it is stopped once it has begun.)"""
    root = tmp_path / "cfl"
    root.mkdir()
    with open(f"{root}.lock", "a") as held:  # the first run, as far as the second can tell
        fcntl.flock(held, fcntl.LOCK_EX)
        second = subprocess.Popen(["bash", str(ROOT / "ci" / "cflite-local.sh"), "--root", str(root)],
                                  cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        try:
            assert second.stderr is not None
            line = second.stderr.readline()
            assert "is in use by another run: waiting for it" in line, line
            time.sleep(1)
            assert second.poll() is None and not (root / "out").exists(), "it went ahead"
            fcntl.flock(held, fcntl.LOCK_UN)
            # Then it goes on: its scratch tree and the build's start (build.sh in $SRC).
            started = time.monotonic()
            while not (root / "src" / "build.sh").exists() and second.poll() is None:
                assert time.monotonic() - started < 120, "it did not go on once the lock was free"
                time.sleep(0.05)
            assert (root / "src" / "build.sh").exists() and (root / "out").is_dir(), second.communicate()[1]
        finally:
            if second.poll() is None:
                os.killpg(second.pid, signal.SIGKILL)  # the build and its compilers
            second.communicate()
