"""Each architecture of targets.ARCHES has what the tool looks up by its name (issue 28
point 3: an architecture is one row), and every other place docs/adding.md says a new
architecture needs: PLACES below checks each for every architecture, and the docs' list
must name the same places. The target.mk facts the tool reads through `make target-env`
are kept in $(O)/target-env.json, rebuilt when a target.mk or the Makefile changes."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from conftest import ROOT
from copyfuzz import decode, paths, targets
from copyfuzz.errors import CopyfuzzError
from kernel_fixtures import boot_fixtures


def _read(rel: str) -> str:
    return (ROOT / rel).read_text()


def _file(pattern: str) -> Callable[[targets.Arch], None]:
    def check(arch: targets.Arch) -> None:
        path = ROOT / pattern.replace("NAME", arch.name)
        assert path.is_file(), f"{arch.name}: no {path.relative_to(ROOT)}"
    return check


def _registry_row(arch: targets.Arch) -> None:
    assert targets.get(arch.name) is arch
    assert len(arch.regs) == 16 and arch.machine, arch  # records.h's 16 bits of regs_bad
    assert arch.widths and all(arch.build_dir_name(w) and arch.default_qemu(w) for w in arch.widths)


def _decoder(arch: targets.Arch) -> None:
    isa = decode.for_arch(arch.name)
    assert isa.name == arch.name
    assert isa.sp in isa.regs and set(isa.args) <= set(isa.regs)


def _plugin_row(arch: targets.Arch, request: pytest.FixtureRequest) -> None:
    """Each QEMU the architecture's executors run under (qemu-<target_name>) has its row in
    the plugin's cf_targets: a target without one gets a note and no decoding."""
    exe = request.getfixturevalue("plugin_decode")
    for xlen in arch.widths:
        name = Path(shlex.split(arch.default_qemu(xlen))[0]).name.removeprefix("qemu-")
        proc = subprocess.run([str(exe), name], capture_output=True, text=True, check=True)
        assert proc.stderr == "", f"{arch.name} at {xlen} bits: {proc.stderr}"


def _packages(rel: str) -> Callable[[targets.Arch], None]:
    def check(arch: targets.Arch) -> None:
        words = set(_read(rel).split())
        triple = arch.target_mk.cross_compile.removesuffix("-")
        assert {f"gcc-{triple}", f"binutils-{triple}"} <= words, f"{rel}: no gcc-{triple} or binutils-{triple}"
    return check


def _cflite_cross(arch: targets.Arch) -> None:
    case = rf"^\s*{re.escape(arch.name)}\) cross=\$\{{CROSS_COMPILE{re.escape(arch.env_suffix)}:-\}} ;;$"
    assert re.search(case, _read(".clusterfuzzlite/build.sh"), re.M), f"build.sh: no '{arch.name})' case"


def _kernel_config(arch: targets.Arch) -> None:
    if arch.kernel:
        _file("kernel/config/NAME.config")(arch)


def _prober(arch: targets.Arch) -> None:
    if arch.kernel:
        words = re.search(r"^PROBER_ARCHES\s*:=(.*)$", _read("Makefile"), re.M)
        assert words and arch.name in words[1].split(), f"Makefile: {arch.name} not in PROBER_ARCHES"


def _boot_fixture(arch: targets.Arch) -> None:
    if arch.kernel:
        assert arch.name in boot_fixtures(), f"no tests/fixtures/kernel/boot/ fixture with arch={arch.name}"


Check = Callable[[targets.Arch, pytest.FixtureRequest], None]


def _plain(check: Callable[[targets.Arch], None]) -> Check:
    return lambda arch, request: check(arch)


# What docs/adding.md's table of a new architecture's places names (its first column), and
# how each is checked; "NAME" is the architecture's name.
PLACES: dict[str, Check] = {
    "harness/arch/NAME/target.mk": _plain(_file("harness/arch/NAME/target.mk")),
    "harness/arch/NAME/arch_sys.h": _plain(_file("harness/arch/NAME/arch_sys.h")),
    "harness/arch/NAME/arch_frame.h": _plain(_file("harness/arch/NAME/arch_frame.h")),
    "harness/arch/NAME/call.S": _plain(_file("harness/arch/NAME/call.S")),
    "harness/compat/NAME/include/": _plain(_file("harness/compat/NAME/include/generated/autoconf.h")),
    "arch/NAME/": _plain(_file("arch/NAME/include/cf_asm.h")),
    "tool/copyfuzz/targets.py": _plain(_registry_row),
    "tool/copyfuzz/decode/NAME.py": _plain(_decoder),
    "plugin/cfplugin.c": _plugin_row,
    "scripts/deps.sh": _plain(_packages("scripts/deps.sh")),
    ".clusterfuzzlite/Dockerfile": _plain(_packages(".clusterfuzzlite/Dockerfile")),
    ".clusterfuzzlite/build.sh": _plain(_cflite_cross),
    "kernel/config/NAME.config": _plain(_kernel_config),
    "Makefile": _plain(_prober),
    "tests/fixtures/kernel/boot/": _plain(_boot_fixture),
}


@pytest.mark.parametrize("place", list(PLACES))
@pytest.mark.parametrize("arch", list(targets.ARCHES))
def test_every_architecture_has_each_place_docs_adding_names(arch: str, place: str,
                                                             request: pytest.FixtureRequest) -> None:
    PLACES[place](targets.get(arch), request)


def _docs_places() -> Iterator[str]:
    text = _read("docs/adding.md")
    section = text[text.index("## An architecture"):]
    section = section[:section.find("\n## ", 1) if "\n## " in section[1:] else None]
    for line in section.splitlines():
        if m := re.match(r"^\| `([^`]+)` \|", line):
            yield m[1]


def test_docs_adding_lists_the_places_this_test_checks() -> None:
    listed = list(_docs_places())
    assert len(listed) == len(set(listed)), listed
    assert set(listed) == set(PLACES)


def test_the_registry_is_the_makefiles_architectures() -> None:
    """The Makefile's ARCH is any harness/arch/<arch>/ with a target.mk; the tool's are its rows."""
    assert {p.parent.name for p in (ROOT / "harness" / "arch").glob("*/target.mk")} == set(targets.ARCHES)


def test_an_unknown_architecture_has_no_decoder() -> None:
    with pytest.raises(CopyfuzzError, match=r"unknown architecture 'mips' \(known: riscv, arm64, arm\)"):
        decode.for_arch("mips")


# ---- target.mk through make ----

def test_the_tool_reads_target_mk_as_make_does() -> None:
    """What the tool knows of each width is what make says of it, at the defaults."""
    for arch in targets.ARCHES.values():
        for xlen in arch.widths:
            out = subprocess.run(["make", "-s", "--no-print-directory", f"ARCH={arch.name}", f"XLEN={xlen}",
                                  "target-env"], cwd=ROOT, env={"PATH": os.environ["PATH"]}, check=True,
                                 capture_output=True, text=True).stdout
            said = dict(shlex.split(line)[0].removeprefix("CF_TARGET_").split("=", 1) for line in out.splitlines())
            assert said["WIDTHS"].split() == [str(w) for w in arch.widths]
            assert (said["BUILD_NAME"], said["QEMU"], said["CROSS_COMPILE"]) == (
                arch.build_dir_name(xlen), arch.default_qemu(xlen), arch.target_mk.cross_compile)
    assert targets.RISCV.widths == (64, 32) and targets.ARM64.widths == (64,) and targets.ARM.widths == (32,)


def test_make_refuses_a_width_target_mk_does_not_list() -> None:
    proc = subprocess.run(["make", "-s", "ARCH=arm64", "XLEN=32", "target-env"], cwd=ROOT, capture_output=True,
                          text=True)
    assert proc.returncode != 0 and "ARCH=arm64: XLEN must be 64" in proc.stderr


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """targets as a new process finds it, with $(O) in tmp_path; the facts read before are
    put back after."""
    (tmp_path / "o").mkdir()
    monkeypatch.setenv("O", str(tmp_path / "o"))
    monkeypatch.setattr(targets, "_loaded", None)
    yield paths.target_env_cache(targets.TREE)


def _make_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int | None]]:
    calls: list[tuple[str, int | None]] = []
    real = targets._target_env

    def counted(arch: str, xlen: int | None) -> dict[str, str]:
        calls.append((arch, xlen))
        return real(arch, xlen)

    monkeypatch.setattr(targets, "_target_env", counted)
    return calls


def test_the_facts_are_kept_in_the_build_directory_and_read_back(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _make_runs(monkeypatch)
    first = targets.target_mks()
    assert sorted(calls, key=str) == sorted([("riscv", None), ("riscv", 32), ("arm64", None), ("arm", None)], key=str)
    assert fresh.parent == Path(os.environ["O"]) and fresh.is_file()
    assert not list(fresh.parent.glob(".*.tmp"))  # written aside and renamed
    calls.clear()
    monkeypatch.setattr(targets, "_loaded", None)  # the next process
    assert targets.target_mks() == first and calls == []


@pytest.mark.parametrize("spoil", ["a target.mk changed", "garbage", "another version"])
def test_a_changed_target_mk_or_a_spoilt_cache_is_read_from_make_again(
        fresh: Path, monkeypatch: pytest.MonkeyPatch, spoil: str) -> None:
    targets.target_mks()
    if spoil == "garbage":
        fresh.write_text("{not json")
    else:
        kept = json.loads(fresh.read_text())
        if spoil == "another version":
            kept["stamp"][0] += 1
        else:  # as an edit would: the stamp is the files' stat (the real file is left alone)
            arm = next(s for s in kept["stamp"][1:] if s[0] == str(targets.target_mk_path("arm")))
            arm[4] -= 1
        fresh.write_text(json.dumps(kept))
    calls = _make_runs(monkeypatch)
    monkeypatch.setattr(targets, "_loaded", None)
    assert targets.ARM.widths == (32,) and ("arm", None) in calls
    calls.clear()
    monkeypatch.setattr(targets, "_loaded", None)
    assert targets.ARM.widths == (32,) and calls == []  # kept again


def test_an_unwritable_or_missing_build_directory_is_no_error_and_is_not_made(
        fresh: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("O", str(tmp_path / "file" / "o"))  # under a file: no directory can be made
    assert targets.RISCV.build_dir_name(32) == "riscv32"
    monkeypatch.setattr(targets, "_loaded", None)
    monkeypatch.setenv("O", str(tmp_path / "none"))  # $(O) is make's to create (and to refuse)
    assert targets.RISCV.build_dir_name(32) == "riscv32" and not (tmp_path / "none").exists()


def test_the_callers_environment_never_reaches_target_mks_defaults(
        fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("QEMU", "CROSS_COMPILE", "XLEN", "BUILD_NAME", "WIDTHS"):
        monkeypatch.setenv(name, "spoilt")
    monkeypatch.setenv("MAKEFLAGS", "XLEN=16")
    assert targets.RISCV.target_mk.qemu == {64: "qemu-riscv64", 32: "qemu-riscv32"}
    assert targets.RISCV.target_mk.cross_compile == "riscv64-linux-gnu-"
    assert targets.RISCV.qemu_command(64) == ["spoilt"]  # the environment's QEMU still wins at run time


def test_runs_at_once_from_no_cache_all_get_the_facts_and_leave_one_whole_cache(tmp_path: Path) -> None:
    o = tmp_path / "o"
    o.mkdir()
    env = {**os.environ, "O": str(o), "PYTHONPATH": str(ROOT / "tool")}
    code = "from copyfuzz import targets; print(targets.RISCV.widths, targets.ARM.build_dir_name(32))"
    runs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(6)]
    assert [r.communicate(timeout=120)[0] for r in runs] == ["(64, 32) arm\n"] * 6
    assert [r.returncode for r in runs] == [0] * 6
    assert set(json.loads((o / "target-env.json").read_text())["arches"]) == set(targets.ARCHES)
    assert [p.name for p in o.iterdir()] == ["target-env.json"]  # no temporaries left


# ---- bad input: one clear line, or a cache miss; never a traceback, a hang or a wrong fact ----

def _deep(cache: Path) -> None:
    cache.write_text("[" * 200_000)


def _fifo(cache: Path) -> None:
    cache.unlink()
    os.mkfifo(cache)


def _dev_zero(cache: Path) -> None:
    cache.unlink()
    cache.symlink_to("/dev/zero")


def _kept(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    """The cache as written, its stamp still matching, with one value changed."""
    def spoil(cache: Path) -> None:
        kept = json.loads(cache.read_text())
        change(kept["arches"]["riscv"])
        cache.write_text(json.dumps(kept))  # json.dumps writes float("inf") as Infinity
    return spoil


CORRUPT: dict[str, Callable[[Path], object]] = {
    "nested 200000 deep": _deep,
    "a FIFO": _fifo,
    "a symlink to /dev/zero": _dev_zero,
    "a width of Infinity": _kept(lambda r: r.update(widths=[64, float("inf")])),
    "a width of 64.0": _kept(lambda r: r.update(widths=[64.0, 32])),
    "a width of true": _kept(lambda r: r.update(widths=[True, 32])),
    "a width of 10**400": _kept(lambda r: r.update(widths=[10**400, 32])),
    "a QEMU that is a number": _kept(lambda r: r["qemu"].update({"64": 5})),
    "a QEMU of a width not listed": _kept(lambda r: r["qemu"].update({"1000000": "x"})),
    "no riscv": lambda cache: cache.write_text(cache.read_text().replace('"riscv"', '"mips"')),
    "a list": lambda cache: cache.write_text("[]"),
}


@contextlib.contextmanager
def _bounded(seconds: int, more_memory: int) -> Iterator[None]:
    """A hang is a failure after seconds (not an OSError: the code under test may catch
    those); memory past more_memory bytes beyond what the process has now is a MemoryError,
    not the machine's memory (a cache read to the end of /dev/zero)."""
    def hung(signum: int, frame: object) -> None:
        pytest.fail(f"hung for {seconds} s")

    old_handler = signal.signal(signal.SIGALRM, hung)
    old_limit = resource.getrlimit(resource.RLIMIT_AS)
    size = int(re.findall(r"^VmSize:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)[0]) << 10
    resource.setrlimit(resource.RLIMIT_AS, (size + more_memory, old_limit[1]))
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        resource.setrlimit(resource.RLIMIT_AS, old_limit)
        signal.signal(signal.SIGALRM, old_handler)


@pytest.mark.parametrize("corrupt", list(CORRUPT))
def test_a_corrupt_cache_is_a_miss_and_make_is_asked(fresh: Path, monkeypatch: pytest.MonkeyPatch,
                                                     corrupt: str) -> None:
    """Whatever $(O)/target-env.json holds, the facts come from make: a FIFO is not waited
    on, /dev/zero not read to the end, deep nesting and a width of Infinity (once an
    OverflowError) not a traceback."""
    first = targets.target_mks()
    CORRUPT[corrupt](fresh)
    calls = _make_runs(monkeypatch)
    monkeypatch.setattr(targets, "_loaded", None)
    with _bounded(20, 1 << 30):
        assert targets.target_mks() == first
    assert ("riscv", None) in calls
    if corrupt != "a symlink to /dev/zero":  # written aside and renamed over it
        assert json.loads(fresh.read_text())["arches"]["riscv"]["widths"] == [64, 32]


@pytest.fixture
def scratch_tree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[str], None]:
    """targets.TREE as a copy of the Makefile and the target.mk files, each of which a test
    may add lines to (add(text) appends to riscv's)."""
    tree = tmp_path / "tree"
    (tree / "harness").mkdir(parents=True)
    shutil.copy(ROOT / "Makefile", tree)
    shutil.copytree(ROOT / "harness" / "arch", tree / "harness" / "arch",
                    ignore=lambda d, names: [n for n in names if n != "target.mk" and "." in n])
    monkeypatch.setattr(targets, "TREE", tree)

    def add(text: str) -> None:
        with (tree / "harness" / "arch" / "riscv" / "target.mk").open("a") as f:
            f.write(text + "\n")
    return add


def test_a_target_mks_own_output_is_not_read_as_its_facts(scratch_tree: Callable[[str], None]) -> None:
    scratch_tree("$(info it's a debug line)\n$(info WIDTHS=128)")
    said = targets._target_env("riscv", None)
    assert (said["WIDTHS"], said["QEMU"]) == ("64 32", "qemu-riscv64") and "it's a debug line" not in said


def test_a_malformed_cf_target_line_is_one_line_naming_the_target_mk(
        scratch_tree: Callable[[str], None]) -> None:
    scratch_tree("$(info CF_TARGET_EXTRA='unbalanced)")
    with pytest.raises(CopyfuzzError, match=r"harness/arch/riscv/target\.mk: .*CF_TARGET_EXTRA.*no closing quotation"):
        targets._target_env("riscv", None)


@pytest.mark.parametrize("arch", [targets.RISCV, targets.ARM64])
def test_an_unbalanced_quote_in_qemu_is_one_line_naming_its_variable(
        monkeypatch: pytest.MonkeyPatch, arch: targets.Arch) -> None:
    var = f"QEMU{arch.env_suffix}"
    monkeypatch.setenv(var, 'qemu-x -cpu "max')
    with pytest.raises(CopyfuzzError, match=rf'^{var}=qemu-x -cpu "max: unbalanced quote$'):
        arch.qemu_command(arch.widths[0])


def test_an_unbalanced_quote_in_target_mks_qemu_names_the_target_mk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QEMU", raising=False)
    mk = targets.RISCV.target_mk
    monkeypatch.setattr(targets, "_loaded", {**targets.target_mks(),
                                             "riscv": dataclasses.replace(mk, qemu={**mk.qemu, 64: "qemu-riscv64 'x"})})
    with pytest.raises(CopyfuzzError, match=r"harness/arch/riscv/target\.mk: QEMU=qemu-riscv64 'x: unbalanced quote$"):
        targets.RISCV.qemu_command(64)


def test_every_target_builds_with_its_own_xlen_and_cross_compile(tmp_path: Path) -> None:
    """`make all-targets` (for_each_target) under an XLEN, CROSS_COMPILE and QEMU meant for
    one architecture: each architecture builds at its own widths (arm64 is refused at 32
    bits), RISC-V with the environment's CROSS_COMPILE (its variable, as for the tool), the
    others with their CROSS_COMPILE<suffix> or target.mk's default."""
    env = {**os.environ, "XLEN": "32", "CROSS_COMPILE": "bad-", "QEMU": "nope", "CROSS_COMPILE_ARM": "arm-own-"}
    env.pop("MAKEFLAGS", None)
    env.pop("CROSS_COMPILE_ARM64", None)
    proc = subprocess.run(["make", "-n", f"O={tmp_path}", "all-targets"], cwd=ROOT, env=env, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    used = set(re.findall(rf"^(\S+)gcc .* -o {re.escape(str(tmp_path))}/(\w+)/", proc.stdout, re.M))
    assert used == {("bad-", "riscv64"), ("bad-", "riscv32"), ("arm-own-", "arm"),
                    (targets.ARM64.target_mk.cross_compile, "arm64")}
    for arch in targets.ARCHES.values():
        assert arch.make_vars(arch.widths[0])[2] == "CROSS_COMPILE=" + arch.target_mk.cross_compile  # env as given


def test_on_matching_hardware_a_named_emulator_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal of a native routine's plugin says to name QEMU: naming it must work."""
    monkeypatch.setattr("platform.machine", lambda: "riscv64")
    monkeypatch.delenv("QEMU", raising=False)
    assert targets.RISCV.native(64) and not targets.RISCV.native(32)
    monkeypatch.setenv("QEMU", "qemu-riscv64")
    assert not targets.RISCV.native(64)
    monkeypatch.setenv("QEMU", " ")  # blank: no emulator named
    assert targets.RISCV.native(64)


def test_the_makefiles_cross_compile_variables_are_the_registrys() -> None:
    """for_each_target gives each architecture its own CROSS_COMPILE variable (cross_var);
    the tool reads the same ones (Arch.cross): CROSS_COMPILE plus the row's env_suffix."""
    rule = "print-cross-var: ; @echo $(foreach a,$(ARCHES),$(a)=$(call cross_var,$(a)))"
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "--eval", rule, "print-cross-var"],
                         env={"PATH": os.environ["PATH"]}, capture_output=True, text=True, check=True).stdout
    assert dict(w.split("=") for w in out.split()) == {
        a.name: f"CROSS_COMPILE{a.env_suffix}" for a in targets.ARCHES.values()}
