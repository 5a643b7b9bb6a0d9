"""The audit's 32-bit ARM decoding (tool/copyfuzz/decode/arm.py) on single instructions:
what each reads, writes, accesses and where it goes, and the dataflow through it. The
encodings are the assembler's (arm-linux-gnueabihf-as, ARM state, -march=armv8-a), so
this needs no toolchain."""

from __future__ import annotations

import pytest
from copyfuzz import audit
from copyfuzz.decode import arm

# (little-endian hex) -> (mnemonic, access, base, writeback, rd, also, flow)
CASES = [
    ("0440bce4", "ldrt", "load", "r12", True, "r4", (), "next"),  # ldrt r4, [ip], #4: post-index moves ip
    ("0140f1e4", "ldrbt", "load", "r1", True, "r4", (), "next"),  # ldrbt r4, [r1], #1
    ("0440aee4", "strt", "store", "lr", True, None, (), "next"),  # strt r4, [lr], #4
    ("0130e0e4", "strbt", "store", "r0", True, None, (), "next"),  # strbt r3, [r0], #1
    ("0400b1e5", "ldr", "load", "r1", True, "r0", (), "next"),  # ldr r0, [r1, #4]!
    ("020191e7", "ldr", "load", "r1", False, "r0", (), "next"),  # ldr r0, [r1, r2, lsl #2]
    ("b200d1e1", "ldrh", "load", "r1", False, "r0", (), "next"),  # ldrh r0, [r1, #2]
    ("d840c1e1", "ldrd", "load", "r1", False, "r4", ("r5",), "next"),  # ldrd r4, r5, [r1, #8]
    ("f840c0e0", "strd", "store", "r0", True, None, (), "next"),  # strd r4, r5, [r0], #8
    ("9f4fb1e1", "ldrexd", "load", "r1", False, "r4", ("r5",), "next"),  # ldrexd r4, r5, [r1]
    ("902f81e1", "strex", "store", "r1", False, "r2", (), "next"),  # strex r2, r0, [r1]: the status
    ("f00fb1e8", "ldm", "load", "r1", True, "r4", ("r5", "r6", "r7", "r8", "r9", "r10", "r11"), "next"),
    ("030090e8", "ldm", "load", "r0", False, "r0", ("r1",), "next"),  # ldm r0, {r0, r1}
    ("f000aee8", "stm", "store", "lr", True, None, (), "next"),  # stm lr!, {r4-r7}
    ("0c00b119", "ldmibne", "load", "r1", True, "r2", ("r3",), "next"),  # ldmibne r1!, {r2, r3}
    ("f14f2de9", "push", "store", "sp", True, None, (), "next"),  # push {r0, r4-r11, lr}
    ("f08fbde8", "pop", "load", "sp", True, "r4", ("r5", "r6", "r7", "r8", "r9", "r10", "r11"), "stop"),
    ("1080bd18", "popne", "load", "sp", True, "r4", (), "next"),  # a conditional return falls through too
    ("04409de4", "pop", "load", "sp", True, "r4", (), "next"),  # ldr r4, [sp], #4
    ("04e02de5", "str", "store", "sp", True, None, (), "next"),  # str lr, [sp, #-4]!
    ("020b91ed", "vldr", "load", "r1", False, None, (), "next"),  # vldr d0, [r1, #8]: no integer register
    ("048b2ded", "vpush", "store", "sp", True, None, (), "next"),  # vpush {d8, d9}
    ("080bb1ec", "vldmia", "load", "r1", True, None, (), "next"),  # vldmia r1!, {d0-d3}
    ("0d0721f4", "vld1.8", "load", "r1", True, None, (), "next"),  # vld1.8 {d0}, [r1]!
    ("820a00f4", "vst1.32", "store", "r0", True, None, (), "next"),  # vst1.32 {d0, d1}, [r0], r2
    ("015e91ed", "ldc", "load", "r1", False, None, (), "next"),  # ldc p14, c5, [r1, #4]
    ("40f0d1f5", "pld", None, None, False, None, (), "next"),  # a prefetch never faults
    ("08009fe5", "ldr", None, "pc", False, "r0", (), "next"),  # ldr r0, [pc, #8]: a literal, not an access
    ("feffffea", "b", None, None, False, None, (), "jump"),
    ("feffff1a", "bne", None, None, False, None, (), "branch"),
    ("feffffeb", "bl", None, None, False, "lr", (), "call"),
    ("33ff2fe1", "blx", None, None, False, "lr", (), "next"),  # blx r3: a call the audit cannot follow
    ("1eff2fe1", "bx", None, None, False, None, (), "stop"),  # bx lr: return
    ("1eff2f11", "bxne", None, None, False, None, (), "next"),
    ("0ef0a0e1", "mov", None, None, False, None, (), "stop"),  # mov pc, lr: return
    ("108092e8", "ldm", "load", "r2", False, "r4", (), "stop"),  # ldm r2, {r4, pc}: an indirect jump
    ("00f18fe0", "add", None, None, False, None, (), "jump"),  # add pc, pc, r0, lsl #2: into the table that follows
    ("f000f0e7", "udf", None, None, False, None, (), "stop"),
    ("920381e0", "umull", None, None, False, "r0", ("r1",), "next"),  # umull r0, r1, r2, r3
    ("700f1dee", "mrc", None, None, False, "r0", (), "next"),  # mrc p15, 0, r0, c13, c0, 3 (TPIDRURO)
    ("103af1ee", "vmrs", None, None, False, "r3", (), "next"),  # vmrs r3, fpscr
    ("030050e1", "cmp", None, None, False, None, (), "next"),  # compares write no register
]


@pytest.mark.parametrize("hexcode,mnemonic,access,base,writeback,rd,also,flow", CASES)
def test_one_instruction(hexcode: str, mnemonic: str, access: str | None, base: str | None, writeback: bool,
                         rd: str | None, also: tuple[str, ...], flow: str) -> None:
    insn = arm.ISA.disassemble([(bytes.fromhex(hexcode), 0x1000)], 32)[0x1000]
    assert (insn.mnemonic, insn.access, insn.base, insn.writeback, insn.rd, insn.also, insn.flow) == \
        (mnemonic, access, base, writeback, rd, also, flow), insn


def test_conditions_indirect_flow_and_sources() -> None:
    code = bytes.fromhex("00009115" "33ff2fe1" "108092e8" "1eff2fe1" "154b84e1" "020191e7")
    insns = arm.ISA.disassemble([(code, 0)], 32)
    assert insns[0].conditional and not insns[0xc].conditional  # ldrne r0, [r1]; bx lr
    assert insns[4].indirect and insns[8].indirect and not insns[0xc].indirect  # blx r3, ldm into pc, bx lr
    assert insns[0x10].srcs == ("r4", "r5", "r11")  # orr r4, r4, r5, lsl fp: the shift register is read
    assert insns[0x14].srcs == ("r1", "r2")  # ldr r0, [r1, r2, lsl #2]: base and index


def test_branch_and_call_targets() -> None:
    """Each encodes its target relative to itself + 8: b . at 0x40, bne +0x10, bl -0x20."""
    code = bytes.fromhex("feffffea" "0200001a" "f6ffffeb")
    insns = arm.ISA.disassemble([(code, 0x40)], 32)
    assert (insns[0x40].flow, insns[0x40].target) == ("jump", 0x40)
    assert (insns[0x44].flow, insns[0x44].target) == ("branch", 0x54)
    assert (insns[0x48].flow, insns[0x48].target, insns[0x48].rd) == ("call", 0x28, "lr")


def test_computed_jump_into_the_table_that_follows() -> None:
    """add pc, pc, r0, lsl #2 enters the table at its own address + 8 (every entry then
    runs on); addne the same as a branch, so the audit walks the table's accesses."""
    code = bytes.fromhex("00f18fe0" "00f18f10")
    insns = arm.ISA.disassemble([(code, 0x100)], 32)
    assert (insns[0x100].flow, insns[0x100].target, insns[0x100].indirect) == ("jump", 0x108, False)
    assert (insns[0x104].flow, insns[0x104].target) == ("branch", 0x10c)


def test_values_through_the_transfer_function() -> None:
    """sub r0, pc, #8 (adr) is an exact address of the file, mov/mvn #imm constants, movt
    (movw/movt) an address, mov from sp the stack, add #imm keeps the origin and the
    value, a literal load the file's data, shifted-register arithmetic the union."""
    code = bytes.fromhex("08004fe2" "0500a0e3" "0000e0e3" "780645e3" "0d10a0e1" "04c081e2" "08009fe5"
                         "154b84e1")
    insns = arm.ISA.disassemble([(code, 0x10000)], 32)
    regs = {"r1": (frozenset({"data"}), 0x100), "r4": (frozenset({"user"}), None), "sp": (frozenset({"stack"}), None)}

    def read(r: str) -> tuple[frozenset[str], int | None]:
        return regs.get(r, (frozenset({"unknown"}), None))

    mask = (1 << 32) - 1
    written = [arm.ISA.written(insns[0x10000 + 4 * k], read, [], mask) for k in range(8)]
    assert written[0] == (frozenset({"data"}), 0x10000)  # pc reads as the address + 8
    assert written[1] == (frozenset({"const"}), 5)
    assert written[2] == (frozenset({"const"}), 0xffffffff)
    assert written[3][0] == frozenset({"data"})  # movt r0, #0x5678
    assert written[4][0] == frozenset({"stack"})  # mov r1, sp
    assert written[5] == (frozenset({"data"}), 0x104)  # add ip, r1, #4
    assert written[6][0] == frozenset({"data"})  # ldr r0, [pc, #8]
    assert written[7][0] == frozenset({"user", "unknown"})  # orr r4, r4, r5, lsl fp


def test_a_conditional_write_keeps_the_old_origins_and_writeback_keeps_the_base() -> None:
    """moveq r0, #1 may not run: r0 may still be the user pointer. ldrbt r4, [r1], #1
    moves r1 on (still a user pointer) and loads r4 (unknown); ldm writes every listed register."""
    code = bytes.fromhex("0100a003" "0140f1e4" "f00fb1e8")
    insns = arm.ISA.disassemble([(code, 0)], 32)
    index = {r: i for i, r in enumerate(arm.ISA.regs)}
    state = audit._entry_state("copy", arm.ISA)
    after = audit._transfer(insns[0], state, index, arm.ISA, [], (1 << 32) - 1)
    assert after[index["r0"]] == (frozenset({"user", "const"}), None)
    after = audit._transfer(insns[4], state, index, arm.ISA, [], (1 << 32) - 1)
    assert after[index["r1"]] == (frozenset({"user"}), None)
    assert after[index["r4"]] == (frozenset({"unknown"}), None)
    after = audit._transfer(insns[8], state, index, arm.ISA, [], (1 << 32) - 1)
    assert all(after[index[f"r{i}"]] == (frozenset({"unknown"}), None) for i in range(4, 12))


def test_undecodable_word_may_write_its_rd() -> None:
    """An encoding Capstone does not know: four bytes stepped over, bits 15:12 taken as a
    written register (a value of unknown origin)."""
    insns = arm.ISA.disassemble([(bytes.fromhex("00a0f0f7" "00f020e3"), 0)], 32)
    assert (insns[0].size, insns[0].rd) == (4, "r10")
    assert insns[4].mnemonic == "nop"


def test_a_computed_jump_through_a_known_table_address_is_followed() -> None:
    """adr r4, table; add pc, r4, ip (copy_template's CALGN path): the dataflow knows r4,
    so the audit walks the table, and the store only it reaches is seen; the same jump
    through a register of unknown value stays an indirect jump, not followed."""
    code = bytes.fromhex("04408fe2" "0cf084e0" "f000f0e7"  # adr r4, table; add pc, r4, ip; udf
                         "0110c0e4" "1eff2fe1"  # table: strb r1, [r0], #1; bx lr
                         "0140a0e1" "0cf084e0" "f000f0e7")  # mov r4, r1; add pc, r4, ip; udf
    insns = arm.ISA.disassemble([(code, 0x1000)], 32)
    assert insns[0x1004].indirect and insns[0x1018].indirect  # neither is known from the word alone
    for start, followed in ((0x1000, True), (0x1014, False)):
        resolved: set[int] = set()
        states = audit._flow(insns, {}, [(start, audit._entry_state("clear", arm.ISA))], [], 32, arm.ISA, resolved)
        assert (0x100c in states) is followed  # the table's store
        assert resolved == ({start + 4} if followed else set())
