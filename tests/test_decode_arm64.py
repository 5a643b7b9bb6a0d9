"""The audit's arm64 decoding (tool/copyfuzz/decode/arm64.py) on single instructions:
what each reads, writes, accesses and where it goes. The encodings are the assembler's
(aarch64-linux-gnu-as, -march=armv8.1-a), so this needs no toolchain."""

from __future__ import annotations

import pytest
from copyfuzz.decode import arm64

# (encoding, little-endian hex) -> (mnemonic, access, base, writeback, rd, also, flow)
CASES = [
    ("208440f8", "ldr", "load", "x1", True, "x0", (), "next"),  # ldr x0, [x1], #8
    ("208c40f8", "ldr", "load", "x1", True, "x0", (), "next"),  # ldr x0, [x1, #8]!
    ("220cc1a8", "ldp", "load", "x1", True, "x2", ("x3",), "next"),  # ldp x2, x3, [x1], #16
    ("e20fbfa9", "stp", "store", "sp", True, None, (), "next"),  # stp x2, x3, [sp, #-16]!
    ("246862f8", "ldr", "load", "x1", False, "x4", (), "next"),  # ldr x4, [x1, x2]
    ("245862b8", "ldr", "load", "x1", False, "x4", (), "next"),  # ldr w4, [x1, w2, uxtw #2]
    ("67040058", "ldr", None, None, False, "x7", (), "next"),  # ldr x7, literal: not an access
    ("41fc03c8", "stlxr", "store", "x2", False, "x3", (), "next"),  # status register written
    ("620021f8", "ldadd", "store", "x3", False, "x2", (), "next"),  # atomics write memory
    ("628021f8", "swp", "store", "x3", False, "x2", (), "next"),
    ("627ca1c8", "cas", "store", "x3", False, "x1", (), "next"),
    ("200080f9", "prfm", None, None, False, None, (), "next"),  # a prefetch never faults
    ("21740bd5", "dc", "store", "x1", False, None, (), "next"),  # dc zva zeroes a block
    ("2070df4c", "ld1", "load", "x1", True, None, (), "next"),  # a SIMD register: no rd
    ("41f05f38", "ldurb", "load", "x2", False, "x1", (), "next"),
    ("41080078", "sttrh", "store", "x2", False, None, (), "next"),
    ("2000c03d", "ldr", "load", "x1", False, None, (), "next"),  # ldr q0
    ("3f0840f2", "tst", None, None, False, None, (), "next"),  # compares write no register
    ("200042fa", "ccmp", None, None, False, None, (), "next"),
    ("c0035fd6", "ret", None, None, False, None, (), "stop"),
    ("40011fd6", "br", None, None, False, None, (), "stop"),
    ("200020d4", "brk", None, None, False, None, (), "stop"),
]


@pytest.mark.parametrize("hexcode,mnemonic,access,base,writeback,rd,also,flow", CASES)
def test_one_instruction(hexcode: str, mnemonic: str, access: str | None, base: str | None, writeback: bool,
                         rd: str | None, also: tuple[str, ...], flow: str) -> None:
    insn = arm64.ISA.disassemble([(bytes.fromhex(hexcode), 0x1000)], 64)[0x1000]
    assert (insn.mnemonic, insn.access, insn.base, insn.writeback, insn.rd, insn.also, insn.flow) == \
        (mnemonic, access, base, writeback, rd, also, flow), insn


def test_branches_calls_and_their_targets() -> None:
    code = bytes.fromhex("21feffb4" "01fe1f37" "f5ffff97" "20013fd6")  # cbz, tbnz, bl, blr at 0x40..
    insns = arm64.ISA.disassemble([(code, 0x40)], 64)
    # each encodes its target relative to itself (-0x3c, -0x40, -0x2c from where they were assembled)
    assert (insns[0x40].flow, insns[0x40].target, insns[0x40].srcs) == ("branch", 0x4, ("x1",))
    assert (insns[0x44].flow, insns[0x44].target) == ("branch", 0x4)
    assert (insns[0x48].flow, insns[0x48].target, insns[0x48].rd) == ("call", 0x1c, "x30")
    assert (insns[0x4c].indirect, insns[0x4c].rd, insns[0x4c].srcs) == (True, "x30", ("x9",))


def test_values_through_the_transfer_function() -> None:
    """adrp + add :lo12: is an address (data, exact), mov #imm a constant, mov from sp the
    stack, arithmetic the union of its operands' origins."""
    code = bytes.fromhex("05000090" "a5400091" "a00080d2" "e1030091" "f120cf9a")
    insns = arm64.ISA.disassemble([(code, 0x10000)], 64)
    regs = {"x7": (frozenset({"user"}), None), "x15": (frozenset({"const"}), 8), "sp": (frozenset({"stack"}), None)}

    def read(r: str) -> tuple[frozenset[str], int | None]:
        return regs.get(r, (frozenset({"unknown"}), None))

    mask = (1 << 64) - 1
    assert arm64.ISA.written(insns[0x10000], read, [], mask) == (frozenset({"data"}), 0x10000)  # adrp x5
    regs["x5"] = (frozenset({"data"}), 0x10000)
    assert arm64.ISA.written(insns[0x10004], read, [], mask) == (frozenset({"data"}), 0x10010)  # add x5, x5, #16
    assert arm64.ISA.written(insns[0x10008], read, [], mask) == (frozenset({"const"}), 5)  # mov x0, #5
    assert arm64.ISA.written(insns[0x1000c], read, [], mask)[0] == frozenset({"stack"})  # mov x1, sp
    assert arm64.ISA.written(insns[0x10010], read, [], mask)[0] == frozenset({"user"})  # lsl x17, x7, x15


def test_undecodable_word_may_write_its_rd() -> None:
    """An encoding Capstone does not know: four bytes stepped over, its Rd field taken as
    written (a value of unknown origin)."""
    insns = arm64.ISA.disassemble([(bytes.fromhex("e5ffffff" "1f2003d5"), 0)], 64)
    assert insns[4].mnemonic == "nop"
    assert insns[0].size == 4


def test_mops_is_the_access_its_options_make_unprivileged() -> None:
    """FEAT_MOPS (issue 25, point 7): cpyfpwt [x0]!, [x1]!, x2! (copy_to_user's shape) stores
    through x0, not x1 (Capstone's one memory operand is the source); cpyfprt (reads
    unprivileged: copy_from_user's) loads through x1; setp [x0]!, x2!, x3 stores through
    x0. The pointers move on with their origins; the count is written."""
    code = bytes.fromhex("40140119" "40240119" "4004c319")
    insns = arm64.ISA.disassemble([(code, 0x1000)], 64)
    got = [(i.mnemonic, i.access, i.base, i.writeback, i.rd, i.also) for _, i in sorted(insns.items())]
    assert got == [("cpyfpwt", "store", "x0", True, None, ("x2",)),
                   ("cpyfprt", "load", "x1", True, None, ("x2",)),
                   ("setp", "store", "x0", True, None, ("x2",))]
    assert insns[0x1008].srcs == ("x0", "x2", "x3")
