"""What copyfuzz works out when the command line does not say (issue 25, points 1 and 2):
a routine's kind from its name, a file's architecture from its path or its instructions,
each with its reason, or an error naming the option that decides. The snippets are ours,
in the shapes of the real files named beside them."""

from __future__ import annotations

from pathlib import Path

import pytest
from copyfuzz import infer
from copyfuzz.errors import CopyfuzzError


@pytest.mark.parametrize("symbol, kind", [
    ("__arch_copy_to_user", "copy_to_user"),  # arm64
    ("__arch_copy_from_user", "copy_from_user"),
    ("arm_copy_from_user", "copy_from_user"),  # 32-bit ARM
    ("__copy_to_user_std", "copy_to_user"),
    ("__asm_copy_to_user", "copy_to_user"),  # RISC-V, by name alone (build.same_address decides copy)
    ("__clear_user", "clear"),
    ("__arch_clear_user", "clear"),
    ("memcpy", "memcpy"),
    ("__pi_memmove", "memmove"),
    ("__memset", "memset"),
    ("__asm_vector_usercopy", "copy"),  # RISC-V's vector path: both sides user or kernel
    ("hostile_copy", "copy"),
])
def test_kind_from_name(symbol: str, kind: str) -> None:
    got = infer.kind_from_name(symbol)
    assert got.value == kind and symbol in got.reason and f"kind {kind}" in got.reason


@pytest.mark.parametrize("symbol, example", [("cf_threshold", "copy_from_user"), ("do_stuff", "copy_from_user"),
                                             ("mmiocpy", "memcpy"), ("mmioset", "memset"), ("__memzero", "clear")])
def test_a_name_that_says_no_kind_is_refused_with_the_option(symbol: str, example: str) -> None:
    """The example fits the name where the name hints at one (mmiocpy: a memcpy)."""
    with pytest.raises(CopyfuzzError, match=rf"add :KIND, e.g. --symbol {symbol}:{example} \(kinds: copy, "):
        infer.kind_from_name(symbol)


def test_the_other_direction() -> None:
    assert infer.other_direction("__asm_copy_to_user", "copy_to_user") == "__asm_copy_from_user"
    assert infer.other_direction("__ARCH_COPY_FROM_USER", "copy_from_user") == "__ARCH_copy_to_user"
    assert infer.other_direction("__clear_user", "clear") is None


ARM64 = """
// x0 = to, x1 = from, x2 = n
SYM_FUNC_START(cf_copy)
	cmp	x2, #16
	b.lo	1f
	ldp	x3, x4, [x1], #16
	stp	x3, x4, [x0], #16
1:	cbz	x2, 2f
	ldtrb	w3, [x1]
2:	mov	x0, #0
	ret
"""
ARM = """
@ r0 = to, r1 = from, r2 = n
ENTRY(cf_copy)
	stmfd	sp!, {r4, lr}
	subs	r2, r2, #4
	blt	1f
	ldmia	r1!, {r3, r4}
	stmia	r0!, {r3, r4}
1:	ldrbt	r3, [r1], #1	@ a comment with x0 and a0 in it
	strb	r3, [r0], #1
	ldmfd	sp!, {r4, pc}
"""
RISCV = """
/* a0 = to, a1 = from, a2 = n; x0 is zero */
ENTRY(cf_copy)
	beqz	a2, 2f
1:	lbu	t0, 0(a1)
	sb	t0, 0(a0)
	addi	a0, a0, 1
	addi	a2, a2, -1
	bnez	a2, 1b
2:	li	a0, 0
	ret
"""


XREGS_RISCV = """
/* RISC-V with numeric register names: x10 = a0. x-registers count for no architecture */
	beqz	x12, 2f
1:	lbu	x5, 0(x11)
	sb	x5, 0(x10)
	addi	x10, x10, 1
	addi	x12, x12, -1
	bnez	x12, 1b
2:	ret
"""


@pytest.mark.parametrize("text, arch", [(ARM64, "arm64"), (ARM, "arm"), (RISCV, "riscv"), (XREGS_RISCV, "riscv")])
def test_arch_from_the_instructions(text: str, arch: str) -> None:
    got = infer.arch_of(Path("/nowhere/lib/copy.S"), text)
    assert got.value == arch and "from its instructions" in got.reason and "no arch/<name>/" in got.reason


def test_the_path_decides_unless_the_instructions_say_otherwise() -> None:
    got = infer.arch_of(Path("/src/linux/arch/arm64/lib/copy.S"), "ret\n")
    assert got.value == "arm64" and "arch/arm64/" in got.reason
    # U-Boot keeps arm64 code under arch/arm/lib/: neither is taken, both are offered
    with pytest.raises(CopyfuzzError, match=r"its path says arm \(arch/arm/\) but its instructions are arm64's .*"
                                            r"add --arch arm64 or --arch arm$"):
        infer.arch_of(Path("/src/u-boot/arch/arm/lib/memcpy-arm64.S"), ARM64)
    # a path in a repository is taken as it is, not resolved from the current directory
    assert infer.arch_from_path(Path("lib/copy.S"), resolve=False) is None
    assert infer.arch_from_path(Path("arch/arm/lib/copy.S"), resolve=False) == "arm"


@pytest.mark.parametrize("text", ["", ".globl f\nf:\n\tret\n", ARM64 + ARM])
def test_instructions_that_do_not_decide_are_refused_with_arch(text: str) -> None:
    with pytest.raises(CopyfuzzError, match=r"cannot tell its architecture .*add --arch riscv\|arm64\|arm$"):
        infer.arch_of(Path("/nowhere/copy.S"), text)
