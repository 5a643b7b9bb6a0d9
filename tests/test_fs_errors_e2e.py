"""A file that cannot be read or written is bad input: exit 2, one line, no traceback.

Output paths are checked before the work (a bench, a sweep) whose results they hold;
what only fails while writing (a full disk: /dev/full) fails after the results are
printed. The tests run as root, where permission bits stop nothing: they use what
fails for root too (a path under a regular file, /proc/self, /dev/full, /proc/self/mem).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli

pytestmark = pytest.mark.e2e

BENCH = ["bench", "riscv/copy_user", "--sizes", "8192", "--no-small", "--no-mix", "--reps", "1"]
MUTANT = "riscv/mutants/tail-extra-byte"  # caught within n <= 8


def _one_line(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    for needle in needles:
        assert needle in proc.stderr, proc.stderr


def _full(tmp_path: Path, name: str) -> Path:
    """A file name under which every write fails with ENOSPC."""
    link = tmp_path / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to("/dev/full")
    return link


# ---- checked before the work ----

@pytest.mark.parametrize("args, needles", [
    ([*BENCH, "--plot", "{tmp}/missing/x.png"], ["--plot", "missing does not exist"]),
    ([*BENCH, "--plot", "{tmp}"], ["--plot", "is a directory"]),  # named .png below
    (["cov", "riscv/copy_user", "--max-len", "4", "--html", "{tmp}/missing/x.html"], ["--html", "does not exist"]),
    (["cov", "riscv/copy_user", "--max-len", "4", "--html", "{tmp}"], ["--html", "is a directory"]),
    (["sweep", "riscv/copy_user", "--max-len", "4", "--jobs", "1", "--findings", "/dev/null/f"],
     ["--findings", "/dev/null is not a directory"]),
    (["sweep", "riscv/copy_user", "--max-len", "4", "--jobs", "1", "--findings", "/proc/self/f"],
     ["--findings", "cannot write in /proc/self"]),
], ids=["plot-missing-dir", "plot-is-dir", "html-missing-dir", "html-is-dir", "findings-under-file",
        "findings-read-only"])
def test_an_output_path_that_cannot_be_written_fails_before_the_work(tmp_path: Path, args: list[str],
                                                                    needles: list[str]) -> None:
    out_dir = tmp_path / "out.png" if "--plot" in args else tmp_path / "out"
    out_dir.mkdir()
    args = [a.replace("{tmp}", str(out_dir)) for a in args]
    proc = run_cli(*args)
    _one_line(proc, *needles)
    assert proc.stdout == "", "the work ran before the output path was checked"


def test_check_of_a_directory(tmp_path: Path) -> None:
    (tmp_path / "uaccess.S").mkdir()
    _one_line(run_cli("check", str(tmp_path / "uaccess.S"), "--symbol", "f"), "a directory, not a file")


# ---- a full disk: the results first, then one line ----

def test_findings_on_a_full_disk_the_report_then_one_line(tmp_path: Path) -> None:
    findings = tmp_path / "findings"
    _full(findings, "riscv__mutants__tail-extra-byte.jsonl")
    proc = run_cli("sweep", MUTANT, "--max-len", "8", "--jobs", "1", "--findings", str(findings))
    _one_line(proc, "cannot write findings to", "riscv__mutants__tail-extra-byte.jsonl", "No space left")
    assert "caught" in proc.stdout and f"{MUTANT}:n=" in proc.stdout  # the sweep ran to its end


def test_findings_on_a_full_disk_under_json_one_object_with_the_error(tmp_path: Path) -> None:
    """Exit 2 under --json: the report, which says why, and no second object (cli.main)."""
    findings = tmp_path / "findings"
    _full(findings, "riscv__mutants__tail-extra-byte.jsonl")
    proc = run_cli("sweep", MUTANT, "--max-len", "8", "--jobs", "1", "--findings", str(findings), "--json")
    _one_line(proc, "cannot write findings to")
    report = json.loads(proc.stdout)
    assert "cannot write findings to" in report["error"] and report["routines"][0]["cases"] > 0


def test_plot_on_a_full_disk_the_tables_then_one_line(tmp_path: Path) -> None:
    proc = run_cli(*BENCH, "--plot", str(_full(tmp_path, "x.png")))
    _one_line(proc, "--plot", "x.png", "No space left")
    assert "instructions per call" in proc.stdout or "dst+7" in proc.stdout


def test_html_on_a_full_disk_the_listing_then_one_line(tmp_path: Path) -> None:
    proc = run_cli("cov", "riscv/copy_user", "--max-len", "4", "--html", str(_full(tmp_path, "x.html")))
    _one_line(proc, "--html", "x.html", "No space left")
    assert "riscv/copy_user:" in proc.stdout and "cases" in proc.stdout


@pytest.mark.parametrize("args", [["list"], ["list", "--json"],
                                  ["sweep", "riscv/copy_user", "--max-len", "2", "--jobs", "1", "--json"]])
def test_standard_output_on_a_full_disk(tmp_path: Path, args: list[str]) -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run(["./copyfuzz", *args, *(["--findings", str(tmp_path)] if "sweep" in args else [])],
                              cwd=Path(__file__).resolve().parents[1], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=600)
    proc.stdout = ""
    _one_line(proc, "standard output: No space left on device")


# ---- inputs that cannot be read ----

def test_unreadable_inputs_are_named(tmp_path: Path) -> None:
    """/proc/self/mem opens, and every read of it fails (EIO): for root too."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "input").symlink_to("/proc/self/mem")
    for args in (["repro", "/proc/self/mem", "--routine", "riscv/copy_user"],
                 ["replay", str(corpus), "--routine", "riscv/copy_user"],
                 ["cov", "riscv/copy_user", "--corpus", str(corpus)]):
        _one_line(run_cli(*args), "cannot read", "mem" if args[0] == "repro" else "input", "Input/output error")
