"""The booted-kernel prober (kernel/prober/), run on this machine's kernel: its enumeration,
its specs against casedef.py's, a clean sweep, each check proven able to fire, the
watchdog, the line protocol, and the C reproducers (host, and one per cross target
under qemu-user)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from conftest import ROOT
from copyfuzz import paths
from copyfuzz.errors import CopyfuzzError
from copyfuzz.kernel import casedef, reproducer

pytestmark = pytest.mark.e2e

D = casedef.definition()
CHECKED = [c.name for c in D.classes if c.name not in ("hang", "crash")]


@pytest.fixture(scope="module")
def probers() -> dict[str, Path]:
    build, rel = paths.build_dir(ROOT), paths.build_dir(paths.REL)  # make names its targets as given
    subprocess.run(["make", "-s", *paths.make_vars(ROOT), f"{rel}/host/prober", f"{rel}/host/prober-asan"],
                   cwd=ROOT, check=True)
    return {"plain": build / "host" / "prober", "asan": build / "host" / "prober-asan"}


@pytest.fixture()
def workdir() -> Iterator[Path]:
    """A tmpfs directory when there is one (the VM's files live on tmpfs too)."""
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    d = Path(tempfile.mkdtemp(prefix="cf-prober-", dir=base))
    yield d
    left = list(d.iterdir())
    shutil.rmtree(d)
    assert left == [], f"files left behind: {left}"


def run(prober: Path, *args: str, timeout: float = 60) -> tuple[int, list[casedef.Line], str]:
    proc = subprocess.run([str(prober), *args], capture_output=True, text=True, timeout=timeout)
    lines = [casedef.parse_line(t) for t in proc.stdout.splitlines()]
    assert None not in lines, "a line without a good checksum:\n" + proc.stdout
    return proc.returncode, [x for x in lines if x], proc.stderr


def listing(prober: Path, *args: str) -> list[tuple[int, str]]:
    out = subprocess.run([str(prober), "--list", *args], capture_output=True, text=True, check=True).stdout
    return [(int(i), s) for i, s in (line.split() for line in out.splitlines())]


# ---- enumeration ----
def test_counts_and_order(probers: dict[str, Path]) -> None:
    p = probers["plain"]
    small = ["--max-len", "3", "--sizes", "768", "--koffs", "0,4095"]
    cases = listing(p, *small)
    assert [i for i, _ in cases] == list(range(len(cases)))
    count = subprocess.run([str(p), "--count", *small], capture_output=True, text=True, check=True).stdout
    assert int(count) == len(cases)
    parsed = [casedef.Case.parse(s) for _, s in cases]
    names = [s.name for s in D.syscalls]
    key = [(names.index(c.syscall), c.n, c.acc, c.koff, c.segs, [p.name for p in D.prots].index(c.prot), c.gap)
           for c in parsed]
    assert key == sorted(key) and len(set(key)) == len(key)
    by_sys = {s.name: [c for c in parsed if c.syscall == s.name] for s in D.syscalls}
    # every n 0..3, every acc 0..n; koffs 0 and 4095 (udp: 0); gaps 0-7 only when acc == n
    full = sum(n + 8 for n in range(4))  # (acc < n) + 8 gaps at acc == n
    assert len([c for c in by_sys["write"] if c.n <= 3]) == full * 2
    assert len([c for c in by_sys["sendto"] if c.n <= 3]) == full
    assert len([c for c in by_sys["readv"] if c.n <= 3]) == full * 2 * 2 * 2  # koffs, segs 2 and 4, prots
    # n=768 takes the sampled acc set
    accs = sorted({c.acc for c in by_sys["write"] if c.n == 768})
    want = sorted({*range(10), *(a for k in range(1, 13) for a in (64 * k - 1, 64 * k, 64 * k + 1) if a <= 768),
                   767, 768})
    assert accs == want
    # shards and --start partition the same cases
    shards = [listing(p, *small, "--shard", f"{j}/3") for j in range(3)]
    assert sorted(x for s in shards for x in s) == cases
    assert listing(p, *small, "--start", "100") == cases[100:]


def test_specs_round_trip_and_rejections_match(probers: dict[str, Path]) -> None:
    p = probers["plain"]
    for _, spec in listing(p, "--max-len", "2", "--sizes", "4096", "--koffs", "4093"):
        assert casedef.Case.parse(spec).spec() == spec
    for spec in ["read:acc=3,n=5", "sendto", "readv:segs=4,prot=ro,n=9,acc=9,gap=7"]:
        c = casedef.Case.parse(spec)
        got = subprocess.run([str(p), "--list", "--case", spec], capture_output=True, text=True, check=True)
        assert got.stdout.split() == ["0", c.spec()]
    bad = ["nosuch:n=1", "read:n=1,x=2", "read:n", "read:n=1,n=2", "read:n=1,", "read:n=-1", "read:n=1048577",
           "read:n=2,acc=3", "read:n=2,acc=1,gap=1", "sendto:koff=1", "sendto:n=65508,acc=65508",
           "write:segs=2", "write:prot=ro", "read:prot=rw", "read:koff=65536", "read:n=99999999999", "readv:segs=5"]
    for spec in bad:
        proc = subprocess.run([str(p), "--case", spec, "--count"], capture_output=True, text=True)
        assert proc.returncode == 2
        with pytest.raises(CopyfuzzError) as e:
            casedef.Case.parse(spec)
        assert proc.stderr.strip() == f"prober: {e.value}", spec


# ---- the sweep on the host kernel ----
def test_a_small_sweep_is_clean_for_every_syscall(probers: dict[str, Path], workdir: Path) -> None:
    rc, lines, err = run(probers["asan"], "--max-len", "24", "--sizes", "4096", "--koffs", "0,3,4093",
                         "--dir", str(workdir))
    assert rc == 0, err
    hello, end = lines[0], lines[-1]
    assert hello.type == "hello" and hello.fields["fs"] in ("tmpfs", "ext4", "btrfs", "xfs", "overlayfs")
    assert end.type == "end" and end.fields["status"] == "complete"
    assert end.fields["run"] == hello.fields["cases"] and end.fields["findings"] == "0"
    assert [x for x in lines if x.type not in ("hello", "progress", "end")] == []


@pytest.mark.parametrize("cls", CHECKED)
def test_every_check_can_fire(probers: dict[str, Path], workdir: Path, cls: str) -> None:
    syscalls = "pipe_read" if cls == "lost-data" else "write,read,writev,readv,pipe_write,pipe_read,sendto,recvfrom"
    rc, lines, err = run(probers["plain"], "--syscalls", syscalls, "--max-len", "6", "--sizes", "4096",
                         "--koffs", "0,4095", "--selftest-break", cls, "--dir", str(workdir))
    assert rc == 1, err
    summary = {(x.fields["syscall"], x.fields["class"]) for x in lines if x.type == "summary"}
    fired = {s for s, c in summary if c == cls}
    assert fired, summary
    if cls not in ("lost-data", "over-report", "no-progress", "spurious-fault"):
        assert fired == set(syscalls.split(","))
    findings = [x for x in lines if x.type == "finding"]
    assert findings and all(casedef.Case.parse(x.fields["case"]) for x in findings)


def test_the_watchdog_reports_a_hang_with_its_stack_and_goes_on(probers: dict[str, Path], workdir: Path) -> None:
    args = ["--syscalls", "write,read", "--max-len", "1", "--sizes", "", "--koffs", "0", "--dir", str(workdir)]
    total = int(subprocess.run([str(probers["plain"]), "--count", *args], capture_output=True, text=True).stdout)
    rc, lines, err = run(probers["plain"], *args, "--selftest-hang", "3", "--timeout", "0.3", "--hang-budget", "1")
    assert rc == 1, err
    hang = [x for x in lines if x.type == "finding"]
    assert [(x.fields["class"], x.fields["index"]) for x in hang] == [("hang", "3")]
    stack = [x for x in lines if x.type == "stack"]
    assert stack and all(x.fields["index"] == "3" for x in stack)
    assert any("pipe_read" in x.fields.get("line", "") + x.fields.get("wchan", "") for x in stack)
    skip = [x for x in lines if x.type == "skip"]  # a budget of one hang: the rest of write skipped
    write_cases = len(listing(probers["plain"], *args, "--syscalls", "write"))
    assert [(x.fields["syscall"], int(x.fields["cases"])) for x in skip] == [("write", write_cases - 4)]
    end = lines[-1]
    assert end.type == "end" and end.fields["hangs"] == "1" and int(end.fields["run"]) == total - (write_cases - 4)
    # the worker was killed and reaped; a crash is told from a hang
    rc, lines, _ = run(probers["plain"], *args, "--selftest-crash", "5")
    assert [(x.fields["class"], x.fields["index"]) for x in lines if x.type == "finding"] == [("crash", "5")]
    assert lines[-1].fields["run"] == str(total)


def test_every_line_carries_its_checksum(probers: dict[str, Path], workdir: Path) -> None:
    proc = subprocess.run([str(probers["plain"]), "--case", "read:n=5,acc=3", "--dir", str(workdir),
                           "--selftest-break", "wrong-data"], capture_output=True, text=True)
    raw = proc.stdout.splitlines()
    assert raw and all(casedef.parse_line(t) for t in raw)
    assert casedef.parse_line("[   1.234] some printk " + raw[0]) is not None  # a console prefix
    tampered = raw[1].replace("index=0", "index=1")
    assert tampered != raw[1] and casedef.parse_line(tampered) is None
    # --case runs say what each call did (`result`, for copyfuzz confirm), findings or not
    assert [casedef.parse_line(t).type for t in raw] == ["hello", "result", "finding", "summary", "end"]  # type: ignore


# ---- reproducers ----
REPRO_CASES = ["write:n=100,acc=50,koff=4093", "writev:n=300,acc=150,segs=3", "readv:n=300,acc=150,segs=3,prot=ro",
               "read:n=10,acc=10,gap=3", "pread64:n=40,acc=0", "pwrite64:n=7,acc=7,koff=4095",
               "pipe_write:n=9000,acc=5000,koff=3", "pipe_read:n=9000,acc=5000,koff=3",
               "sendto:n=100,acc=50", "recvfrom:n=100,acc=50", "recvfrom:n=64,acc=64"]


def build_repro(tmp: Path, case: casedef.Case, cc: str = "gcc", brk: str | None = None) -> Path:
    src = tmp / "repro.c"
    text = reproducer.render(case, brk)
    assert len(text.splitlines()) < 100 and case.spec() in text.splitlines()[0]
    src.write_text(text)
    exe = tmp / "repro"
    subprocess.run([cc, "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(src)], check=True)
    return exe


@pytest.mark.parametrize("spec", REPRO_CASES)
def test_a_reproducer_holds_on_the_host_and_detects_a_broken_expectation(workdir: Path, spec: str) -> None:
    case = casedef.Case.parse(spec)
    exe = build_repro(workdir, case)
    proc = subprocess.run([str(exe)], capture_output=True, text=True, cwd=workdir, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "contract holds" in proc.stdout
    brk = "no-progress" if case.acc >= 1 and case.acc < case.n and case.info.object != "udp" else "bad-return"
    exe = build_repro(workdir, case, brk=brk)
    proc = subprocess.run([str(exe)], capture_output=True, text=True, cwd=workdir, timeout=30)
    assert proc.returncode == 1 and f"{brk}:" in proc.stdout, proc.stdout
    for p in (exe, workdir / "repro.c"):
        p.unlink()


CROSS = [("riscv64-linux-gnu-gcc", "qemu-riscv64"), ("aarch64-linux-gnu-gcc", "qemu-aarch64"),
         ("arm-linux-gnueabihf-gcc", "qemu-arm")]


@pytest.mark.parametrize("cc,qemu", CROSS)
def test_a_reproducer_cross_builds_and_runs_under_qemu_user(workdir: Path, cc: str, qemu: str) -> None:
    exe = build_repro(workdir, casedef.Case.parse("write:n=100,acc=100,koff=4093,gap=5"), cc=cc)
    proc = subprocess.run([qemu, str(exe)], capture_output=True, text=True, cwd=workdir, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for p in (exe, workdir / "repro.c"):
        p.unlink()


def test_formats_md_names_every_syscall_class_field_and_line_type() -> None:
    text = (ROOT / "docs" / "formats.md").read_text()
    section = text[text.index("## Prober cases and lines"):]
    for name in [s.name for s in D.syscalls] + [c.name for c in D.classes] + [f.name for f in D.fields]:
        assert f"`{name}`" in section, name
    types = {line.split(" | ")[0].strip("| `") for line in section.splitlines() if line.startswith("| `")}
    source = (ROOT / "kernel" / "prober" / "supervisor.c").read_text()
    emitted = set(__import__("re").findall(r'cf_line\("(\w+)"', source))
    assert emitted <= types and {"hello", "progress", "finding", "stack", "skip", "error", "summary", "end"} <= types
