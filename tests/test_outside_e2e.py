"""End to end: shapes of code written elsewhere (tests/fixtures/outside/, our own code).

- shared_body.S: the exported symbol is empty and falls through into a wrapper that
  `call`s the copy body (an auipc + jalr pair), reads the file's own threshold
  variable with `la` + REG_L and keeps ra on the stack; zero-size aliases stand in
  front of the wrapper and the body. The audit must follow the call, list the
  threshold loads as own data and the ra save as stack, and name the sized
  functions in reports.
- tail_report.S: a copy that stores the last byte of a 5-byte copy but reports it not
  copied, as the source byte or as its complement: repro tells the two apart.
- traps.S: a copy whose seeded bugs end the call with SIGILL or with SIGTRAP in its
  .fixup section, with SIGBUS (a misaligned AMO) or SIGFPE (sent to itself): sweep,
  check and repro name the signal, its reason and the code.
Needs the cross toolchain and QEMU: a missing tool FAILS these tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TOOL, run_cli
from copyfuzz import build

pytestmark = pytest.mark.e2e

OUTSIDE = ROOT / "tests" / "fixtures" / "outside"
SHARED = str(OUTSIDE / "shared_body.S")
TRAPS = str(OUTSIDE / "traps.S")
TAIL = str(OUTSIDE / "tail_report.S")
COPY = ["--symbol", "__asm_copy_to_user"]


def audit(path: str, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("audit", path, *COPY, "--json", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["routines"][0]


def check(tmp_path: Path, path: str, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("check", path, *COPY, "--json", "--max-len", "16", "--findings", str(tmp_path), *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["routines"][0]


def repro(spec: str, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run_cli("repro", spec, "--kind", "copy", "--json", *args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def test_audit_follows_the_call_into_the_shared_body_and_classifies_every_access() -> None:
    rc, a = audit(SHARED)
    assert rc == 0, a["problems"]
    s = a["summary"]
    # 16 wrapper instructions, 11 in the body (its fixup included)
    assert s["reachable"] == len(a["listing"]) == 27, a["listing"]
    assert (s["loads"], s["stores"]) == (3, 2)  # no GOT load: la is auipc + addi (built without PIC)
    assert (s["user"], s["covered"], s["uncovered"]) == (2, 2, 0)
    by_base = {(row["access"], row["base"]) for row in a["listing"] if row["access"]}
    assert by_base == {("load", "data"), ("load", "stack"), ("store", "stack"), ("load", "user"), ("store", "user")}
    assert s["data"] == 1 and s["stack"] == 2  # REG_L of the threshold; ra saved and restored
    # The listing names the sized functions, not the zero-size aliases at their addresses.
    wheres = [row["where"] for row in a["listing"]]
    assert wheres[0] == "copy_wrapper" and "copy_body_sum_enabled" in wheres
    assert not any(w.startswith(("__asm_copy", "__asm_copy_to_user_sum")) for w in wheres), wheres
    call = next(row for row in a["listing"] if row["insn"].startswith("jalr ra, ra"))
    assert call["target"] is not None and int(call["target"], 16) == int(
        next(row for row in a["listing"] if row["where"] == "copy_body_sum_enabled")["address"], 16)


def test_memcheck_lets_the_routine_load_its_own_data(tmp_path: Path) -> None:
    """The plugin's memory audit (check --memcheck, and every fuzz campaign) called the
    threshold load a load-out-of-bounds on every case: the routine's own data
    (cf_target_data) may be loaded like the source and the stack."""
    rc, r = check(tmp_path, SHARED, "--memcheck")
    assert rc == 0 and r["findings"] == {} and r["notes"] == {}, r
    proc = run_cli("repro", f"{SHARED}:__asm_copy_to_user:n=3,src_off=0,dst_off=0", "--kind", "copy",
                   "--memcheck", "--json")
    memcheck = json.loads(proc.stdout)["memcheck"]
    assert proc.returncode == 0 and memcheck["violations"] == [] and memcheck["counters"]["loads"] >= 4, memcheck


def test_missing_entry_in_the_called_body_is_found_and_named_by_its_sized_function(tmp_path: Path) -> None:
    define = ["-D", "CONFIG_FIXTURE_MISSING_ENTRY"]
    rc, a = audit(SHARED, *define)
    assert rc == 1
    assert len(a["problems"]) == 1, a["problems"]
    problem = a["problems"][0]
    assert "has no table entry" in problem["problem"] and problem["where"].startswith("copy_body_sum_enabled+")
    rc, r = check(tmp_path, SHARED, *define)
    assert rc == 1 and "unhandled-fault" in r["findings"], r
    assert r["audit"]["problems"] == a["problems"]
    assert r["ended_by"]["unhandled-fault"]["where"] == problem["where"]
    rc, rep = repro(r["reproducers"]["unhandled-fault"], *define)
    assert rc == 1
    assert rep["fault"]["pc_symbol"] == problem["where"] and rep["ended_by"]["signal"] == "SIGSEGV"
    assert int(problem["address"], 16) == rep["fault"]["pc"]


def test_a_body_the_audit_cannot_reach_is_a_problem_not_an_all_clear(tmp_path: Path) -> None:
    define = ["-D", "CONFIG_FIXTURE_HIDDEN_BODY"]
    rc, a = audit(SHARED, *define)
    assert rc == 1
    assert a["summary"]["user"] == 0 and a["summary"]["indirect"] == 1
    assert [p["problem"].split(":")[0] for p in a["problems"]] == [
        "no reachable load or store through the argument pointers (a0 and a1)"]
    rc, r = check(tmp_path, SHARED, *define)
    assert rc == 1 and r["findings"] == {}, r  # the copy itself works: the audit is what fails
    assert len(r["audit"]["problems"]) == 1
    text = run_cli("check", SHARED, *COPY, *define, "--max-len", "4", "--findings", str(tmp_path))
    assert text.returncode == 1 and "1 problem" in text.stdout and "ok" not in text.stdout.split("\n")[3]
    assert "1 problems" not in text.stdout


@pytest.mark.parametrize("define, spec, signal, reason, where", [
    ("CONFIG_FIXTURE_ILLEGAL_AT_7", "n=7,src_off=0,dst_off=0", "SIGILL", "illegal opcode", "__asm_copy_to_user+"),
    ("CONFIG_FIXTURE_EBREAK_IN_FIXUP", "n=1,src_off=0,dst_off=0,dst_fault=0", "SIGTRAP", "breakpoint",
     "cf_target_fixup+"),
])
def test_a_crash_shows_its_signal_reason_and_code(tmp_path: Path, define: str, spec: str, signal: str,
                                                  reason: str, where: str) -> None:
    rc, r = check(tmp_path, TRAPS, "-D", define)
    assert rc == 1 and "crash" in r["findings"], r
    ended = r["ended_by"]["crash"]
    assert (ended["signal"], ended["reason"]) == (signal, reason), ended
    assert ended["where"].startswith(where)
    if signal == "SIGILL":  # the summary's text, once
        text = run_cli("check", TRAPS, *COPY, "-D", define, "--max-len", "8", "--findings", str(tmp_path))
        assert f"crash: {signal} ({reason}) at pc {ended['where']}" in text.stdout, text.stdout
        assert "→" in text.stdout  # the disassembly, with the pc marked

    rc, rep = repro(f"{TRAPS}:__asm_copy_to_user:{spec}", "-D", define)
    assert rc == 1 and rep["errors"] == ["crash"]
    assert rep["ended_by"]["signal"] == signal and rep["ended_by"]["reason"] == reason
    assert rep["ended_by"]["pc_symbol"] == ended["where"]
    marked = [row for row in rep["code"]["signal"] if row["at"]]
    assert len(marked) == 1 and marked[0]["address"] == rep["fault"]["pc"]
    assert marked[0]["insn"] == ("(undecoded) ffffffff" if signal == "SIGILL" else "c.ebreak")
    if signal == "SIGTRAP":
        assert rep["ended_by"]["handled_before"] == 1  # the SIGSEGV whose fixup led there
    text = run_cli("repro", f"{TRAPS}:__asm_copy_to_user:{spec}", "-D", define, "--kind", "copy")
    assert f"{signal} ({reason}) at pc {ended['where']}" in text.stdout, text.stdout


@pytest.mark.parametrize("define, klass, signal, reason", [
    ("CONFIG_FIXTURE_MISALIGNED_AMO", "unhandled-fault", "SIGBUS", "misaligned address"),
    ("CONFIG_FIXTURE_RAISE_SIGFPE", "crash", "SIGFPE", "sent by kill()"),
])
def test_sigbus_and_sigfpe_as_qemu_user_mode_can_produce_them(tmp_path: Path, define: str, klass: str,
                                                               signal: str, reason: str) -> None:
    """SIGBUS: only a misaligned AMO (QEMU emulates misaligned plain loads and stores); it
    is a fault the table is asked about, as the kernel's do_trap_error does, so without an
    entry it is unhandled. SIGFPE: no RISC-V instruction raises it; a routine can send it
    to itself, a crash (docs/semantics.md)."""
    rc, r = check(tmp_path, TRAPS, "-D", define)
    assert rc == 1 and list(r["findings"]) == [klass], r
    ended = r["ended_by"][klass]
    assert (ended["signal"], ended["reason"]) == (signal, reason) and ended["where"].startswith("__asm_copy_to_user+")
    rc, rep = repro(f"{TRAPS}:__asm_copy_to_user:n=3,src_off=0,dst_off=0", "-D", define)
    assert rc == 1 and rep["errors"] == [klass]
    assert (rep["ended_by"]["signal"], rep["ended_by"]["reason"]) == (signal, reason)
    rows = rep["code"]["signal"]
    at = [i for i, row in enumerate(rows) if row["at"]]
    assert len(at) == 1 and rows[at[0]]["address"] == rep["fault"]["pc"]
    # a fault's pc is the instruction's; a signal sent by a system call stops after the ecall
    insn = rows[at[0]]["insn"] if signal == "SIGBUS" else rows[at[0] - 1]["insn"]
    assert insn.startswith("amoadd.w" if signal == "SIGBUS" else "ecall"), rows


def test_repro_says_stored_but_not_reported_for_a_byte_past_the_reported_count() -> None:
    spec = "riscv/mutants/no-progress-partial-word:n=192,dst_off=4000,dst_fault=96"
    proc = run_cli("repro", spec, "--profile", "linux", "--json")
    data = json.loads(proc.stdout)["data"]
    assert data["first_is"] == "stored-but-not-reported" and data["first_offset"] >= 64
    text = run_cli("repro", spec, "--profile", "linux").stdout
    assert "stored but not reported (the correct source byte): dst+64 now holds" in text, text
    assert "expected 0x" not in text
    wrong = run_cli("repro", "riscv/mutants/wrong-shift:n=16,src_off=0,dst_off=5").stdout
    assert "wrong byte: dst+8 should be the source byte" in wrong, wrong


@pytest.mark.parametrize("define, first_is", [("CONFIG_FIXTURE_UNREPORTED", "stored-but-not-reported"),
                                              ("CONFIG_FIXTURE_SCRIBBLE", "wrong-byte-past-reported")])
def test_repro_tells_the_source_byte_past_the_count_from_a_wrong_one(define: str, first_is: str) -> None:
    """The byte at dst+4 is past the reported count (C = 4) either way; only one of the two
    is the source byte, which the result record does not carry (libcfref computes it)."""
    spec = f"{TAIL}:__asm_copy_to_user:n=5,src_off=3,dst_off=7"
    rc, rep = repro(spec, "-D", define)
    assert rc == 1 and rep["claimed"] == 4, rep
    data = rep["data"]
    assert data["first_is"] == first_is and data["first_offset"] == 4 and data["differing_bytes"] == 1
    correct, got = data["correct_byte"], data["actual_byte"]
    assert correct is not None and (got == correct) == (first_is == "stored-but-not-reported")
    if first_is != "stored-but-not-reported":
        assert got == correct ^ 0xFF  # the fixture stores the complement
    text = run_cli("repro", spec, "-D", define, "--kind", "copy").stdout
    line = {"stored-but-not-reported": "stored but not reported (the correct source byte): dst+4 now holds",
            "wrong-byte-past-reported": f"stored a wrong byte past the reported count: dst+4 now holds {got:#04x}, "
                                        f"neither what it held before the call"}[first_is]
    assert line in text, text
    if first_is != "stored-but-not-reported":
        assert f"the source byte there is {correct:#04x}" in text


@pytest.mark.parametrize("symbol", ["f:copy", "__asm_copy_to_user"])  # the second looks for its other direction
def test_a_file_that_includes_dev_zero_stops_at_the_builds_limits(tmp_path: Path, symbol: str) -> None:
    """Every build of a file from outside the tree runs under limits (build.OUTSIDE_BUILD_*):
    the preprocessor reading /dev/zero stops at 4 GiB of address space, with the build's
    own message, instead of taking the machine's memory. (The test itself runs under 12
    GiB: a build past the tool's limit fails there, at a larger allocation.)"""
    src = tmp_path / "zero.S"
    src.write_text('#include "/dev/zero"\n.globl f\nf: ret\n')
    proc = subprocess.run(["prlimit", f"--as={12 << 30}", sys.executable, "-m", "copyfuzz", "check", str(src),
                           "--symbol", symbol, "--arch", "riscv", "--max-len", "2"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(TOOL)})
    assert proc.returncode == 2, proc.stderr
    assert "does not build for riscv" in proc.stderr, proc.stderr
    m = re.search(r"out of memory allocating (\d+) bytes", proc.stderr)
    assert m and int(m.group(1)) <= build.OUTSIDE_BUILD_MEMORY + 4096, proc.stderr


def _straight_line(tmp_path: Path, count: int) -> Path:
    """A memcpy-named function of count compressed additions (2 bytes each), then ret."""
    src = tmp_path / f"big{count}.S"
    src.write_text(f".text\n.globl big_memcpy\nbig_memcpy:\n.rept {count}\naddi a5, a5, 1\n.endr\nret\n")
    return src


def test_code_past_the_audits_bound_is_refused_in_one_line(tmp_path: Path) -> None:
    """The audit decodes all of the executor's code, about 4 KB of memory an instruction:
    past audit.AUDIT_MAX_CODE_BYTES it refuses at once, with the way around it, instead of
    taking gigabytes (a 2-million-instruction function took 5.3 GB)."""
    proc = run_cli("check", str(_straight_line(tmp_path, 600_000)), "--symbol", "big_memcpy:memcpy",
                   "--arch", "riscv", "--max-len", "1", timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "1,200,002 bytes of code, and the audit reads at most 1,048,576" in proc.stderr
    assert "--no-audit" in proc.stderr


def test_the_audits_text_listing_stops_at_its_bound(tmp_path: Path) -> None:
    """Laying out a table row costs about a millisecond: a 20,000-row listing took 23 s.
    The text shows cmd_audit.LISTING_SHOWN rows and says how many more --json has."""
    proc = run_cli("audit", str(_straight_line(tmp_path, 3000)), "--symbol", "big_memcpy:memcpy",
                   "--arch", "riscv", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "... and 1,001 more instructions (--json lists them all" in proc.stdout
    assert len(json.loads(run_cli("audit", str(tmp_path / "big3000.S"), "--symbol", "big_memcpy:memcpy",
                                  "--arch", "riscv", "--json").stdout)["routines"][0]["listing"]) == 3001
