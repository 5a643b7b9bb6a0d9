"""The QEMU plugin's per-target instruction decoders (plugin/cfplugin.c): which instructions
get a memory callback, and which are RISC-V vector instructions.

The instructions are assembled by each target's cross assembler, so the table names
mnemonics, not hand-made encodings; tests/c/plugin_decode.c runs the plugin's own
decoders on their bytes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

VEC_OP, VEC_MEM = 1, 2

# (instruction, may access memory): A64
A64 = [
    ("ldp x6, x7, [x1]", True),
    ("stp x6, x7, [x0, #16]", True),
    ("ldtr x6, [x1]", True),
    ("sttrb w16, [x0]", True),
    ("ldrb w16, [x1], #1", True),
    ("ldr q0, [x1]", True),
    ("ld1 {v0.16b}, [x1]", True),
    ("ldr x0, .", True),  # load literal
    ("ldxr x0, [x1]", True),
    ("stlxr w2, x0, [x1]", True),
    ("ldadd x0, x1, [x2]", True),
    ("prfm pldl1keep, [x1]", True),
    ("ld1b {z0.b}, p0/z, [x0]", True),  # SVE
    ("dc zva, x0", True),  # writes a block
    ("dc civac, x0", True),  # the same group
    ("add x0, x0, #1", False),
    ("lsr x6, x6, x14", False),
    ("orr x6, x6, x17", False),
    ("cmp x0, x3", False),
    ("csel x4, x4, x3, lo", False),
    ("adrp x0, .", False),
    ("add v0.16b, v0.16b, v1.16b", False),
    ("fadd d0, d1, d2", False),
    ("b.lo .", False),
    ("b .", False),
    ("bl .", False),
    ("cbz x0, .", False),
    ("tbnz x0, #3, .", False),
    ("ret", False),
    ("br x17", False),
    ("svc #0", False),
    ("nop", False),
    ("mrs x0, tpidr_el0", False),
    ("msr fpsr, x0", False),
]

# (instruction, may access memory): A32 (ARM state)
A32 = [
    ("ldrt r4, [ip], #4", True),
    ("ldrbt r4, [r1], #1", True),
    ("strt r4, [lr], #4", True),
    ("strbt r3, [r0], #1", True),
    ("ldr r0, [r1, r2, lsl #2]", True),
    ("ldr r0, [pc, #8]", True),  # a literal
    ("ldrne r0, [r1]", True),
    ("ldrh r0, [r1, #2]", True),  # the extra loads and stores: bits 7 and 4 set
    ("ldrsb r0, [r1, #-1]", True),
    ("ldrd r4, r5, [r1, #8]", True),
    ("strht r0, [r1], #2", True),
    ("ldrex r0, [r1]", True),  # synchronization primitives
    ("strex r2, r0, [r1]", True),
    ("lda r0, [r1]", True),
    ("stlexb r2, r0, [r1]", True),
    ("ldm r1!, {r4-r11}", True),
    ("stmdb sp!, {r4, lr}", True),
    ("push {r0, r4-r11, lr}", True),
    ("pop {r4-r11, pc}", True),
    ("vldr d0, [r1, #8]", True),
    ("vstmdb sp!, {d8-d9}", True),
    ("ldc p14, c5, [r1, #4]", True),
    ("vld1.8 {d0}, [r1]!", True),  # the unconditional space
    ("vst1.32 {d0-d1}, [r0], r2", True),
    ("ldc2 p14, c5, [r1]", True),
    ("srsdb sp!, #19", True),
    ("add r0, r0, #1", False),
    ("orr r4, r4, r5, lsl fp", False),
    ("mul r0, r1, r2", False),  # bits 7 and 4 set, but a multiply
    ("umull r0, r1, r2, r3", False),
    ("movw r0, #0x1234", False),
    ("cmp r0, r3", False),
    ("b .", False),
    ("bne .", False),
    ("bl .", False),
    ("blx .+8", False),  # blx (immediate): the unconditional space
    ("bx lr", False),
    ("blx r3", False),
    ("mov pc, lr", False),
    ("svc #0", False),
    ("nop", False),
    ("udf #0", False),
    ("vmrs r3, fpscr", False),
    ("vmsr fpscr, r3", False),
    ("mrc p15, 0, r0, c13, c0, 3", False),
    ("mcrr p15, 0, r0, r1, c2", False),  # in the coprocessor load/store class, but a transfer
    ("vmov r0, r1, d0", False),
    ("vadd.f64 d0, d1, d2", False),
    ("vadd.i8 d0, d1, d2", False),
    ("pld [r1, #64]", False),  # hints never access data
    ("pli [r1]", False),
    ("pldw [r1, r2]", False),
    ("dmb ish", False),
    ("isb", False),
    ("clrex", False),
]

# (instruction, may access memory, vector class): RISC-V, compressed forms included
RISCV = [
    ("ld t1, 0(a1)", True, 0),
    ("c.ld a0, 0(a1)", True, 0),
    ("c.sdsp ra, 8(sp)", True, 0),
    ("sb t1, 0(a0)", True, 0),
    ("fld f0, 0(a0)", True, 0),
    ("amoadd.w a0, a1, (a2)", True, 0),
    ("lr.d a0, (a1)", True, 0),
    ("cbo.zero (a0)", True, 0),
    ("vle8.v v0, (a0)", True, VEC_MEM),
    ("vse64.v v0, (a0)", True, VEC_MEM),
    ("add a0, a0, a1", False, 0),
    ("c.addi a0, 1", False, 0),
    ("beq a0, a1, .", False, 0),
    ("c.jr ra", False, 0),
    ("jal ra, .", False, 0),
    ("fence", False, 0),
    ("fence.i", False, 0),
    ("vsetvli t0, a0, e8, m1, ta, ma", False, VEC_OP),
    ("vadd.vv v0, v1, v2", False, VEC_OP),
]


@pytest.fixture(scope="module")
def decode(plugin_decode: Path) -> Path:
    return plugin_decode


def assemble(tmp: Path, prefix: str, flags: list[str], lines: list[str]) -> bytes:
    """The .text of lines, assembled one instruction per line (no relaxation, no padding)."""
    src, obj, text = tmp / "a.s", tmp / "a.o", tmp / "a.bin"
    src.write_text("".join(f"{line}\n" for line in lines))
    subprocess.run([f"{prefix}as", *flags, "-o", str(obj), str(src)], check=True)
    subprocess.run([f"{prefix}objcopy", "-O", "binary", "-j", ".text", str(obj), str(text)], check=True)
    return text.read_bytes()


def run(decode: Path, target: str, insns: list[bytes | None]) -> list[tuple[bool, int]]:
    out = subprocess.run([str(decode), target, *(b.hex() if b is not None else "-" for b in insns)],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    return [(m == "1", int(v)) for m, v in (line.split() for line in out if line)]


def test_a64_memory_access_is_the_loads_and_stores_class(decode: Path, tmp_path: Path) -> None:
    code = assemble(tmp_path, "aarch64-linux-gnu-", ["-march=armv8.2-a+lse+sve"], [i for i, _ in A64])
    words = [code[k:k + 4] for k in range(0, len(code), 4)]
    assert len(words) == len(A64)
    for target in ("aarch64", "aarch64_be"):  # A64 instructions are little-endian either way
        got = run(decode, target, list(words))
        assert {i: g for (i, _), g in zip(A64, got, strict=True)} == {i: (want, 0) for i, want in A64}


def test_a32_memory_access_by_encoding_class(decode: Path, tmp_path: Path) -> None:
    code = assemble(tmp_path, "arm-linux-gnueabihf-", ["-march=armv8-a", "-mfpu=neon-vfpv4"],
                    [".syntax unified", ".arm", *(i for i, _ in A32)])
    words = [code[k:k + 4] for k in range(0, len(code), 4)]
    assert len(words) == len(A32)
    got = run(decode, "arm", list(words))
    assert {i: g for (i, _), g in zip(A32, got, strict=True)} == {i: (want, 0) for i, want in A32}
    quiet = subprocess.run([str(decode), "arm", words[0].hex()], check=True, capture_output=True, text=True)
    assert quiet.stderr == ""  # decoded: no note


def test_riscv_memory_and_vector_classes(decode: Path, tmp_path: Path) -> None:
    code = assemble(tmp_path, "riscv64-linux-gnu-", ["-march=rv64gcv_zicboz", "-mno-relax"],
                    [i for i, *_ in RISCV])
    insns: list[bytes | None] = []
    k = 0
    while k < len(code):
        size = 4 if code[k] & 3 == 3 else 2
        insns.append(code[k:k + size])
        k += size
    assert len(insns) == len(RISCV)
    for target in ("riscv64", "riscv32"):
        got = run(decode, target, insns)
        assert {i: g for (i, *_), g in zip(RISCV, got, strict=True)} == {i: (mem, vec) for i, mem, vec in RISCV}


def test_unknown_target_and_withheld_bytes_get_a_callback(decode: Path) -> None:
    nop = bytes.fromhex("1f2003d5")  # A64 nop: no access where the target is decoded
    proc = subprocess.run([str(decode), "x86_64", nop.hex(), "-"], check=True, capture_output=True, text=True)
    assert proc.stdout.split("\n")[:2] == ["1 0", "1 0"]
    assert "x86_64 is not decoded" in proc.stderr
    assert run(decode, "aarch64", [nop, None]) == [(False, 0), (True, 0)]
    assert run(decode, "riscv64", [None]) == [(True, 0)]
    thumb = bytes.fromhex("0846")  # mov r0, r1: a two-byte (Thumb) instruction is not decoded
    assert run(decode, "arm", [thumb, None]) == [(True, 0), (True, 0)]
    armeb = subprocess.run([str(decode), "armeb", nop.hex()], check=True, capture_output=True, text=True)
    assert "armeb is not decoded" in armeb.stderr
