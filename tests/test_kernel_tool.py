"""The booted-kernel commands' own logic, without building or booting a kernel: the
inputs they refuse, the source's identity and farm, the config fragments, the
initramfs, the case mapping of `confirm`, and how the prober's lines become a result
(restarts, panics, counts). The kernel tier (test_kernel_boot_e2e.py) runs them for real.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import zlib
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from copyfuzz import targets
from copyfuzz.errors import CopyfuzzError
from copyfuzz.kernel import build, confirm, initramfs, inputs, options, source, sweep, vm


def line(type_: str, **fields: object) -> str:
    body = "CF " + type_ + "".join(f" {k}={v}" for k, v in fields.items())
    return f"{body} #{zlib.crc32(body.encode()):08x}"


def fake_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "linux"
    (tree / "arch" / "riscv" / "lib").mkdir(parents=True)
    (tree / "Makefile").write_text("all:\n")
    (tree / "Kconfig").write_text("")
    (tree / "arch" / "riscv" / "lib" / "uaccess.S").write_text("/* original */\n")
    (tree / ".config").write_text("CONFIG_X=y\n")  # an in-tree build's: never in the farm
    (tree / "include" / "config").mkdir(parents=True)
    return tree


# ---- inputs ----

def test_replace_refuses_what_is_not_a_plain_file_of_the_tree(tmp_path: Path) -> None:
    src = source.tree(fake_tree(tmp_path))
    fix = tmp_path / "fix.S"
    fix.write_text("/* fix */\n")
    ok = inputs.replacements([f"arch/riscv/lib/uaccess.S={fix}"], src)
    assert ok == (("arch/riscv/lib/uaccess.S", b"/* fix */\n"),)
    for spec, why in [("arch/riscv/lib/uaccess.S", "PATH=FILE"), (f"/etc/passwd={fix}", "plain path"),
                      (f"arch/../Makefile={fix}", "plain path"), (f"arch/riscv/lib={fix}", "not a file"),
                      (f"arch/riscv/lib/nope.S={fix}", "not a file"),
                      (f"arch/riscv/lib/uaccess.S={tmp_path / 'missing'}", "No such file"),
                      ("arch/riscv/lib/uaccess.S=/dev/zero", "not a regular file")]:
        with pytest.raises(CopyfuzzError, match=why):
            inputs.replacements([spec], src)
    with pytest.raises(CopyfuzzError, match="twice"):
        inputs.replacements([f"arch/riscv/lib/uaccess.S={fix}"] * 2, src)


def test_a_tree_must_be_a_kernel_tree(tmp_path: Path) -> None:
    with pytest.raises(CopyfuzzError, match="not a kernel source tree"):
        source.tree(tmp_path)


def test_a_trees_identity_follows_its_content(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path)
    first = source.tree(tree).identity
    assert source.tree(tree).identity == first
    f = tree / "arch" / "riscv" / "lib" / "uaccess.S"
    f.write_text("/* changed */\n")
    os.utime(f, ns=(1, 1))
    assert source.tree(tree).identity != first
    # in git: the revision, and a digest of the uncommitted changes
    subprocess.run(["git", "init", "-q", str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   check=True)
    clean = source.tree(tree).identity
    assert clean.startswith("git:")
    f.write_text("/* dirty */\n")
    assert source.tree(tree).identity != clean


def test_the_farm_links_every_file_but_an_in_tree_builds_state(tmp_path: Path) -> None:
    tree = fake_tree(tmp_path)
    farm = tmp_path / "farm"
    source.make_farm(tree, farm)
    link = farm / "arch" / "riscv" / "lib" / "uaccess.S"
    assert link.is_symlink() and link.read_text() == "/* original */\n"
    assert not (farm / ".config").exists() and not (farm / "include" / "config").exists()
    req = build.Request(targets.get("riscv"), source.tree(tree), (("arch/riscv/lib/uaccess.S", b"new\n"),))
    copied = build._place_replacements(req, farm, set())
    assert not link.is_symlink() and link.read_text() == "new\n"
    assert (tree / "arch" / "riscv" / "lib" / "uaccess.S").read_text() == "/* original */\n"  # the tree untouched
    build._place_replacements(build.Request(req.arch, req.source), farm, copied)  # no longer replaced
    assert link.read_text() == "/* original */\n"


def test_config_fragments(tmp_path: Path) -> None:
    opts = build.parse_fragment("# c\nCONFIG_A=y\n?CONFIG_B=m\n# CONFIG_C is not set\n\n", "f")
    assert [(o.name, o.value, o.optional) for o in opts] == [("CONFIG_A", "y", False), ("CONFIG_B", "m", True),
                                                             ("CONFIG_C", "n", False)]
    for bad in ("A=y", "CONFIG_A", "CONFIG_A=", "CONFIG_A B=y"):
        with pytest.raises(CopyfuzzError, match="f:1"):
            build.parse_fragment(bad, "f")
    got = {"CONFIG_A": "y", "CONFIG_C": "n"}
    assert build._holds(opts[0], got) and build._holds(opts[2], got)
    assert build._holds(opts[1], got)  # optional, and the tree does not know it
    assert not build._holds(build.Option("CONFIG_D", "y", False, "f"), got)
    # our own fragments parse, and every architecture with a kernel has one
    for arch in options.KERNEL_ARCHES:
        assert build.parse_fragment((build.CONFIG_DIR / f"{arch}.config").read_text(), arch)
    assert build.parse_fragment((build.CONFIG_DIR / "common.config").read_text(), "common")


def test_initramfs_is_newc(tmp_path: Path) -> None:
    data = initramfs.archive({"init": (b"\x7fELF...", True), "cf-args": (b"--max-len\n8\n", False)})
    assert data.startswith(b"070701") and b"TRAILER!!!" in data and len(data) % 4 == 0
    # the cpio header's fields: mode and size of the first entry (cf-args, sorted)
    assert int(data[14:22], 16) == 0o100644 and int(data[54:62], 16) == len(b"--max-len\n8\n")
    with pytest.raises(ValueError):
        initramfs.archive({"../x": (b"", False)})


# ---- confirm's mapping ----

def test_routine_cases_map_to_syscall_cases() -> None:
    m = confirm.map_case("copy", 80, 4090, 6, 0, None)
    assert (m.direction, m.n, m.acc, m.koff, m.note) == ("to_kernel", 80, 6, 0, "")
    cases = confirm.syscall_cases(m)
    assert cases[0] == "write:n=80,acc=6,koff=0,segs=1,prot=none,gap=0"
    assert {c.split(":")[0] for c in cases} == {"write", "pwrite64", "writev", "pipe_write", "sendto"}
    m = confirm.map_case("copy_to_user", 72, 4095, None, 4080, 16)
    assert (m.direction, m.acc, m.koff) == ("to_user", 16, 4095) and "page by page" in m.note
    for args, why in [(("memset", 1, 0, None, 0, 0), "not a user copy"), (("copy", 4, 0, 1, 0, 1), "both sides"),
                      (("copy", 4, 0, None, 0, None), "neither side"),
                      (("copy_from_user", 4, 0, None, 0, 1), "kernel side")]:
        with pytest.raises(CopyfuzzError, match=why):
            confirm.map_case(*args)
    assert confirm.tree_path("../linux/arch/riscv/lib/uaccess.S") == ("riscv", "arch/riscv/lib/uaccess.S")
    assert confirm.tree_path("/x/arch/arm/arch/arm64/lib/copy_to_user.S") == ("arm64", "arch/arm64/lib/copy_to_user.S")
    assert confirm.tree_path("uaccess.S") is None and confirm.tree_path("arch/x86/lib/a.S") is None


# ---- the prober's lines ----

def test_lines_become_a_result() -> None:
    result = sweep.Result("vm")
    progress: list[int] = []
    r = sweep._Reader(result, progress.append)
    case = "write:n=2,acc=1,koff=0,segs=1,prot=none,gap=0"
    for text in [
        "[    1.0] some printk", line("hello", version=1, cases=9),
        line("progress", next=3, run=3, findings=0),
        "noise " + line("finding", **{"class": "hang", "case": case, "index": 4, "ret": "none", "errno": "none",
                                      "elapsed": "2.0"}),
        line("stack", index=4, pid=9, line="[<0>]%20generic_perform_write+0xc8/0x158"),
        line("stack", index=4, pid=9, wchan="0"),
        line("finding", **{"class": "hang", "case": case.replace("n=2", "n=3"), "index": 7, "ret": "none",
                           "errno": "none"}),
        line("skip", syscall="write", hangs=3, cases=5, next=9),
        line("summary", syscall="write", **{"class": "hang"}, count=40, first=case, index=4),
        line("finding", **{"class": "hang", "case": case, "index": 4}).replace("index=4", "index=5"),  # damaged
        line("end", run=6, findings=2, hangs=2, status="complete"),
    ]:
        r.feed(text)
    r.finish()
    f = result.findings[("write", "hang")]
    assert (f.case, f.index, f.count) == (case, 4, 40)  # the smallest case; the count from the summary
    assert f.stack == ["[<0>] generic_perform_write+0xc8/0x158", "wchan: 0"]
    assert result.skipped == {"write": 5} and result.ran == 6 and r.status == "complete"
    assert result.damaged == 1 and progress == [3]
    assert [x.case for x in result.by_case[case]] == [case]


class FakeVM:
    """Stands in for vm.VM: each boot plays the next script of console lines."""

    scripts: list[list[str]] = []
    boots: list[list[str]] = []
    console = "Kernel panic - not syncing"

    def __init__(self, kernel: object, initrd: Path, console: Path, cpu: object) -> None:
        self.args = initrd.read_bytes()
        self.exit_code = 0
        self.argv = ["qemu-system-fake"]

    def __enter__(self) -> "FakeVM":
        FakeVM.boots.append([a for a in self.args.split(b"cf-args")[-1].decode(errors="replace").split()
                             if a.startswith("--")])
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def lines(self, idle_s: float, first_s: float | None = None) -> list[str]:
        return FakeVM.scripts.pop(0)

    def last_lines(self) -> str:
        return FakeVM.console


def test_a_kernel_that_dies_twice_in_the_same_place_is_pinned_to_a_case(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    case = "read:n=5,acc=2,koff=0,segs=1,prot=none,gap=0"
    FakeVM.boots = []
    FakeVM.scripts = [
        [line("hello", version=1), line("progress", next=10, run=10)],  # died after case 10
        [line("hello", version=1), line("run", index=10, case="read:n=5,acc=1,koff=0,segs=1,prot=none,gap=0"),
         line("run", index=11, case=case)],  # --trace: died in case 11
        [line("hello", version=1), line("end", run=20, status="complete")],
    ]
    monkeypatch.setattr(sweep, "VM", FakeVM)
    kernel = argparse.Namespace(arch=argparse.Namespace(name="riscv"))
    script = [list(s) for s in FakeVM.scripts]
    result = sweep.run_vm(kernel, b"prober", ["--max-len", "8"], tmp_path, (0, 1), None)  # type: ignore[arg-type]
    panic = result.findings[("read", "panic")]
    assert panic.case == case and panic.index == 11 and "panic" in panic.observed["console"]
    assert ["--trace" in b for b in FakeVM.boots] == [False, True, False]
    assert result.boots == 3 and result.ran == 10 + 20  # the first boot's 10 count, up to its last progress
    # A VM that ends twice in one place with no sign of a panic on its console (qemu killed,
    # a stall) is a problem of the run, never a finding.
    FakeVM.scripts, FakeVM.console = script, "some ordinary line"
    result = sweep.run_vm(kernel, b"prober", ["--max-len", "8"], tmp_path, (0, 1), None)  # type: ignore[arg-type]
    assert not result.findings and "without a kernel panic" in result.errors[0]
    FakeVM.console = "Kernel panic - not syncing"


def test_a_first_boot_that_never_reaches_the_prober_is_booted_again_once(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep, "VM", FakeVM)
    kernel = argparse.Namespace(arch=argparse.Namespace(name="riscv"))
    FakeVM.boots = []
    FakeVM.scripts = [["OpenSBI v1.2", "Boot HART MEDELEG : 0xf0b509"],  # nothing after the firmware
                      [line("hello", version=1), line("end", run=20, status="complete")]]
    result = sweep.run_vm(kernel, b"prober", [], tmp_path, (1, 2), None)  # type: ignore[arg-type]
    assert result.boots == 2 and result.ran == 20 and not result.errors
    assert result.notes == ["shard 2 of 2: the riscv kernel did not reach the prober (qemu ended); booted it again"]
    # twice: a kernel that does not boot, one error with the console's last lines
    FakeVM.scripts = [["OpenSBI v1.2"], ["OpenSBI v1.2"]]
    with pytest.raises(CopyfuzzError, match="the riscv kernel did not boot to the prober"):
        sweep.run_vm(kernel, b"prober", [], tmp_path, (0, 1), None)  # type: ignore[arg-type]
    assert FakeVM.scripts == []


def test_a_prober_that_refuses_its_arguments_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    FakeVM.scripts = [[line("error", kind="args")]]
    monkeypatch.setattr(sweep, "VM", FakeVM)
    kernel = argparse.Namespace(arch=argparse.Namespace(name="arm"))
    with pytest.raises(CopyfuzzError, match="prober in the arm kernel stopped: kind=args"):
        sweep.run_vm(kernel, b"p", [], tmp_path, (0, 1), None)  # type: ignore[arg-type]


# ---- the command line ----

@pytest.mark.parametrize("argv, why", [
    (["kernel", "sweep", "--arch", "x86"], "invalid choice"),
    (["kernel", "sweep", "--replace", "nothing"], "PATH=FILE"),
    (["kernel", "build", "--tree", "/nonexistent"], "not a kernel source tree"),
    (["kernel", "sweep", "--timeout", "0"], "--timeout"),
    (["confirm", "riscv/copy_user:n=1,dst_fault=0"], "is not FILE.S:SYMBOL"),
    (["confirm", "tests/fixtures/kernel/boot/riscv_uaccess.S:__asm_copy_from_user:n=8,src_off=4093,src_fault=3",
      "--as", "/tmp/victim.S"], "plain path inside the tree"),
    (["confirm", "tests/fixtures/kernel/boot/riscv_uaccess.S:__asm_copy_from_user:n=8,src_off=4093,src_fault=3",
      "--as", "arch/riscv/lib/uaccess.S", "--arch", "arm64"], "not arm64's"),
    (["confirm", "tests/fixtures/kernel/boot/riscv_uaccess.S:no_such_symbol:n=8,src_off=4093,src_fault=3",
      "--as", "arch/riscv/lib/uaccess.S"], "never names no_such_symbol"),
    (["check", "tests/fixtures/kernel/boot/riscv_uaccess.S", "--symbol", "__asm_copy_from_user", "--confirm",
      "--confirm-as", "../x.S"], "plain path inside the tree"),
    (["check", "tests/fixtures/kernel/boot/riscv_uaccess.S", "--symbol", "__asm_copy_from_user", "--confirm",
      "-D", "X"], "do not apply"),
])
def test_bad_input_is_one_line_and_exit_2(argv: list[str], why: str) -> None:
    proc = run_cli(*argv, "--json")
    assert proc.returncode == 2, proc.stderr
    assert why in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 2
    assert '"error"' in proc.stdout


@pytest.mark.kernel  # needs qemu-system (scripts/deps.sh kernel); no kernel is built
def test_a_cpu_the_machine_refuses_is_said_before_a_build(tmp_path: Path) -> None:
    """A --cpu that qemu-system's virt machine refuses (a model it does not have, or one
    mach-virt does not take, as a user-mode model a .spec file saved may be) is one
    error with qemu's reason, before minutes of kernel build, not a kernel that prints
    nothing. The default models pass the same check."""
    for arch, cpu, reason in (("riscv", "no-such-model", "unable to find CPU model"),
                              ("arm64", "arm926", "not supported")):
        proc = run_cli("kernel", "sweep", "--arch", arch, "--cpu", cpu, "--findings", str(tmp_path / "f"))
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert f"--cpu {cpu}: " in proc.stderr and "refuses it" in proc.stderr and reason in proc.stderr, proc.stderr
    spec = tmp_path / "case.spec"
    spec.write_text("# options: --cpu no-such-model\n"
                    "tests/fixtures/kernel/boot/riscv_uaccess.S:__asm_copy_from_user:n=8,src_off=4093,src_fault=3\n")
    proc = run_cli("confirm", str(spec), "--as", "arch/riscv/lib/uaccess.S", "--findings", str(tmp_path / "f"))
    assert proc.returncode == 2 and f"--cpu no-such-model (saved in {spec}'s options)" in proc.stderr, proc.stderr
    for a in targets.ARCHES.values():
        if a.kernel is not None:
            vm.check_cpu(a, a.kernel.machine[a.kernel.machine.index("-cpu") + 1])


def test_a_spec_found_with_build_options_is_not_confirmed(tmp_path: Path) -> None:
    spec = tmp_path / "case.spec"
    spec.write_text("# options: -DCONFIG_FIXTURE_FULL_SIZE=1\n"
                    "tests/fixtures/kernel/boot/riscv_uaccess.S:__asm_copy_from_user:n=8,src_off=4093,src_fault=3\n")
    proc = run_cli("confirm", str(spec), "--as", "arch/riscv/lib/uaccess.S")
    assert proc.returncode == 2 and "a kernel build does not see" in proc.stderr, proc.stderr


def test_a_fragment_may_not_undo_what_the_vm_needs(tmp_path: Path) -> None:
    frag = tmp_path / "f.config"
    for text, why in [("CONFIG_MODULES=y\n", "contradicts kernel/config/common.config"),
                      ("CONFIG_FOO=y # comment\n", "not a kconfig line")]:
        frag.write_text(text)
        proc = run_cli("kernel", "build", "--arch", "riscv", "--config", str(frag))
        assert proc.returncode == 2 and why in proc.stderr, proc.stderr


def test_a_fragment_may_turn_back_on_what_we_leave_out_by_default(tmp_path: Path) -> None:
    """Our ?-lines (IPv6 and the rest left out for a smaller build) are defaults: the
    user's line of the same name takes their place, and nothing calls it a contradiction."""
    from copyfuzz.kernel import inputs
    from copyfuzz.options import KernelBuildOptions

    frag = tmp_path / "f.config"
    frag.write_text("CONFIG_IPV6=y\n")
    inputs.check(ROOT, KernelBuildOptions("riscv", config=frag))  # no error
    req = build.Request(targets.get("riscv"), source.tree(fake_tree(tmp_path)), fragment=frag.read_text(),
                        fragment_name="f")
    ipv6 = [o for o in build.options(req) if o.name == "CONFIG_IPV6"]
    assert [(o.value, o.origin) for o in ipv6] == [("y", "f")]
    plain = [o for o in build.options(build.Request(req.arch, req.source)) if o.name == "CONFIG_IPV6"]
    assert [(o.value, o.optional) for o in plain] == [("n", True)]


def test_the_build_directory_must_be_one_make_can_take(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    proc = run_cli("kernel", "build", "--tree", str(tmp_path), env={"O": f"{tmp_path}/o$(shell touch {marker})"})
    assert proc.returncode == 2 and "make cannot take" in proc.stderr and not marker.exists()


def test_the_tool_knows_where_its_files_are() -> None:
    assert (ROOT / "kernel" / "prober" / "case.def").is_file() and build.CONFIG_DIR.is_dir()


def test_an_architectures_default_sweep_is_said_and_yields_to_the_users_choice() -> None:
    """32-bit ARM's default --max-len is its own (software PAN's TLB flushes under TCG), the
    report says so with the way back to 256; a --max-len the user gave is never changed,
    and the other architectures keep the prober's own default."""
    from copyfuzz.kernel import runner
    from copyfuzz.options import KernelBuildOptions, KernelSweepOptions

    def given(max_len: int | None, arch: targets.Arch) -> KernelSweepOptions:
        return KernelSweepOptions(KernelBuildOptions(arch.name), max_len=max_len)

    extra, notes = runner.arch_defaults(given(None, targets.ARM), targets.ARM)
    assert extra == ["--max-len", "128"]
    assert len(notes) == 1 and "software PAN" in notes[0] and "--max-len 256" in notes[0]
    assert runner.arch_defaults(given(256, targets.ARM), targets.ARM) == ([], [])
    for arch in (targets.RISCV, targets.ARM64):
        assert runner.arch_defaults(given(None, arch), arch) == ([], [])
