"""The booted-kernel tier (`make check-kernel`): real kernels from Debian's
linux-source-6.12, built small for riscv64, arm64 and 32-bit ARM, booted under
qemu-system, with our own fixture in place of the kernel's user-copy file.

The seeded fixture (its fault fixup returns n: "nothing copied" after a partial copy)
must make write() hang, found by `kernel sweep` with the hung task's kernel stack and a
reproducer that builds standalone; the clean fixture must not, under the same sweep.
`confirm` must show the seeded finding at the syscall level and not the clean one's
absence as one. Needs the kernel packages (scripts/deps.sh kernel) and a few minutes per
architecture for its first build; later runs find the kernels in the cache.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from kernel_fixtures import boot_fixtures

pytestmark = pytest.mark.kernel

FIXTURES = boot_fixtures()
CROSS = {"riscv": "riscv64-linux-gnu-", "arm64": "aarch64-linux-gnu-", "arm": "arm-linux-gnueabihf-"}
# The syscalls that reach copy_from_user (the fixtures replace only that direction), a
# few thousand cases: every n to 8 at every accessible count, and n=80 sampled.
SWEEP = ["--syscalls", "write,pwrite64,writev,pipe_write,sendto", "--max-len", "8", "--sizes", "80",
         "--koffs", "0,1,4095", "--timeout", "1", "--hang-budget", "2"]


def sweep(tmp_path: Path, arch: str, replacement: Path) -> tuple[int, dict[str, Any], str]:
    path = FIXTURES[arch].replaces
    proc = run_cli("kernel", "sweep", "--arch", arch, "--replace", f"{path}={replacement}", *SWEEP,
                   "--findings", str(tmp_path / "findings"), "--json", timeout=3000)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else {}, proc.stderr


@pytest.mark.parametrize("arch", list(FIXTURES))
def test_seeded_fixture_hangs_write_and_clean_one_does_not(tmp_path: Path, arch: str) -> None:
    rc, clean, err = sweep(tmp_path, arch, FIXTURES[arch].path)
    assert rc == 0, (err, clean)
    assert clean["findings"] == [], clean["findings"]
    cases = clean["cases"]
    assert cases["total"] > 2000 and cases["ran"] == cases["total"] and not cases["skipped"], cases
    assert clean["host"]["ran"] == cases["total"]

    rc, report, err = sweep(tmp_path, arch, FIXTURES[arch].seeded(tmp_path))
    assert rc == 1, (err, report)
    found = {(f["syscall"], f["class"]): f for f in report["findings"]}
    hang = found[("write", "hang")]
    # the smallest: two bytes, one readable (the fixup says "nothing copied" after one byte)
    assert hang["case"].startswith("write:n=2,acc=1,"), hang
    assert hang["host"] == "no"
    # Each hang carries the task's kernel stack. Where it is caught is a matter of timing: a
    # spinning task, and ARM's unwinder stops at an exception frame, so a task caught in the
    # fault handler shows nothing above it (all three stacks so caught failed two fresh
    # clones' runs, 2026-11-28 and 11-29). The prober samples until a stack reaches the
    # system call: the write path is required of the write family's stacks together,
    # symbolized frames of each.
    stacks = [f["stack"] for (syscall, cls), f in found.items() if cls == "hang"]
    assert all(sum("+0x" in line for line in s) >= 2 for s in stacks), stacks
    assert any(any("generic_perform_write" in line for line in s) for s in stacks), stacks
    assert report["cases"]["skipped"].get("write", 0) > 0  # its hang budget was spent, and said so
    repro = Path(hang["reproducer"])
    # It builds standalone for the target; on the host's kernel, which has no such bug, it
    # says so (exit 0). qemu-user is no judge: it refuses a partly accessible buffer whole.
    subprocess.run([f"{CROSS[arch]}gcc", "-static", "-O2", "-o", str(tmp_path / "repro-target"), str(repro)],
                   check=True)
    subprocess.run(["gcc", "-static", "-O2", "-o", str(tmp_path / "repro-host"), str(repro)], check=True)
    assert subprocess.run([str(tmp_path / "repro-host")], capture_output=True, timeout=60).returncode == 0


def test_confirm_shows_the_seeded_finding_at_the_syscall_level(tmp_path: Path) -> None:
    fixture = FIXTURES["riscv"]
    path, symbol = fixture.replaces, fixture.symbol
    bad = fixture.seeded(tmp_path)
    spec = f"{bad}:{symbol}:n=80,src_off=4090,src_fault=6,dst_off=0"
    proc = run_cli("confirm", spec, "--as", path, "--arch", "riscv", "--timeout", "1", "--json",
                   "--findings", str(tmp_path / "findings"), timeout=3000)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    by_case = {c["syscall"]: c for c in report["cases"]}
    assert by_case["write"]["confirmed"] and "hang" in by_case["write"]["classes"]
    assert report["direction"] == "to_kernel" and report["replaced"] == path

    good = fixture.path
    proc = run_cli("confirm", f"{good}:{symbol}:n=80,src_off=4090,src_fault=6,dst_off=0", "--as", path,
                   "--arch", "riscv", "--timeout", "1", "--findings", str(tmp_path / "findings"), timeout=3000)
    assert proc.returncode == 0, (proc.stdout, proc.stderr)
    assert "not reproduced at the syscall level: write:" in proc.stdout
