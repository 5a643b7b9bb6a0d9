"""What ended a call: the signal, its reason (si_code decoded) and the code around its pc.

The executor records, for a call a signal ended (`crash`: SIGILL, SIGTRAP, SIGFPE sent
by the routine...; `unhandled-fault`: SIGSEGV or SIGBUS at a pc no table entry covers), that
signal, its pc and data address (fault_pc, fault_addr) and its si_code (the result's
`aux`, harness/records.h). repro, sweep and check show it the same way: this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from . import records
from .audit import code_around
from .elfinfo import Symbolizer, where
from .errors import CopyfuzzError
from .executor import signal_name

if TYPE_CHECKING:
    from .routines import Routine

# si_code meanings (Linux, asm-generic/siginfo.h), per signal; codes <= 0 say who sent it.
_REASONS: dict[str, dict[int, str]] = {
    "SIGILL": {1: "illegal opcode", 2: "illegal operand", 3: "illegal addressing mode", 4: "illegal trap",
               5: "privileged opcode", 6: "privileged register", 7: "coprocessor error", 8: "internal stack error"},
    "SIGTRAP": {1: "breakpoint", 2: "trace trap", 3: "branch trap", 4: "hardware breakpoint or watchpoint"},
    "SIGBUS": {1: "misaligned address", 2: "nonexistent physical address", 3: "object-specific hardware error"},
    "SIGFPE": {1: "integer divide by zero", 2: "integer overflow", 3: "floating-point divide by zero",
               4: "floating-point overflow", 5: "floating-point underflow", 6: "floating-point inexact result",
               7: "floating-point invalid operation", 8: "subscript out of range"},
    "SIGSEGV": {1: "address not mapped", 2: "invalid permissions for the mapping", 3: "bounds check failed",
                4: "protection key check failed", 8: "asynchronous MTE tag check fault",
                9: "MTE tag check fault (synchronous)"},
}
_SENDERS = {0: "sent by kill()", 0x80: "sent by the kernel", -1: "sent by sigqueue()", -6: "sent by tkill()"}
# Classes for which the recorded signal is the one that ended the call.
ENDING_CLASSES = ("crash", "unhandled-fault")


def si_code(result: records.Result) -> int:
    """The result's aux as the signed int the kernel gave."""
    return result.aux - (1 << 32) if result.aux >= 1 << 31 else result.aux


def reason(sig: int, code: int) -> str:
    name = signal_name(sig)
    if code in _SENDERS:
        return _SENDERS[code]
    return _REASONS.get(name, {}).get(code, f"si_code {code}")


def ended_by(result: records.Result) -> dict[str, object] | None:
    """The signal that ended the call, as the executor saw it; None if none did (it returned
    or hung, or the executor itself died: then there is no pc to show)."""
    if not result.faults or not result.signal or not set(ENDING_CLASSES) & set(result.class_list):
        return None
    code = si_code(result)
    return {"signal": signal_name(result.signal), "number": result.signal, "si_code": code,
            "reason": reason(result.signal, code), "pc": result.fault_pc, "address": result.fault_addr,
            "handled_before": result.faults - 1}


def code_rows(elf: Path, xlen: int, sym: Symbolizer | None, pc: int, before: int = 3,
              after: int = 4, *, arch: str) -> list[dict[str, object]]:
    """The disassembly around pc, from whichever code section holds it; [] if none does."""
    try:
        insns = code_around(elf, xlen, pc, before, after, arch=arch)
    except CopyfuzzError:
        return []
    return [{"address": i.addr, "where": where(sym, i.addr), "insn": f"{i.mnemonic} {i.op_str}".strip(),
             "at": i.addr == pc} for i in insns]


def summary(info: dict[str, object], sym: Symbolizer | None) -> str:
    """One line: 'SIGILL (illegal opcode) at pc copy+0x12'."""
    text = f"{info['signal']} ({info['reason']}) at pc {where(sym, int(info['pc']))}"  # type: ignore[call-overload]
    if info["signal"] in ("SIGSEGV", "SIGBUS"):
        text += f", address {int(info['address']):#x}"  # type: ignore[call-overload]
    return text


def routine_rows(root: Path, routine: "Routine", sym: Symbolizer | None, pc: int) -> list[dict[str, object]]:
    return code_rows(root / routine.elf, routine.xlen, sym, pc, arch=routine.arch)


# Mnemonics that are undefined on purpose (the architecture's "permanently undefined"
# encodings): a SIGILL there is the routine's own crash.
UNDEFINED_ON_PURPOSE = frozenset({"udf", "unimp", "c.unimp", "illegal"})


def unrunnable(info: dict[str, object]) -> str | None:
    """A SIGILL at an instruction Capstone decodes, and not one undefined on purpose: this
    QEMU cannot run the routine (an extension its CPU lacks, such as FEAT_MOPS, or an
    instruction EL0 may not execute). What the instruction is, or None."""
    if info.get("signal") != "SIGILL":
        return None
    rows = info.get("code")
    at = next((row for row in rows if isinstance(row, dict) and row.get("at")), None) \
        if isinstance(rows, list) else None
    insn = str(at["insn"]) if at else ""
    if not insn or insn.startswith("(undecoded)") or insn.split()[0] in UNDEFINED_ON_PURPOSE:
        return None  # no instruction at all, or one undefined on purpose: the routine's crash
    return insn
