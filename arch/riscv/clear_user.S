/* SPDX-License-Identifier: MIT
 *
 * clear_user.S - zero user memory, word at a time, exact on faults.
 *
 * copyfuzz: symbol=__clear_user
 * copyfuzz: kind=clear
 * copyfuzz: profile=exact
 * copyfuzz: about=unrolled word stores of zero; faults retried bytewise for an exact count
 *
 * unsigned long __clear_user(void *to, unsigned long n)
 * Returns the number of bytes NOT cleared: exactly the bytes from the
 * first inaccessible one to the end.
 *
 * Shape: n < CF_CLEAR_SMALL bytewise; else bytes until dst is aligned,
 * unrolled blocks of 8 zero words, single words, then a byte tail.
 * Fault scheme as in include/copy_template.S: at every loop-iteration
 * boundary a0 is the first byte not yet cleared and t6 the end; a word or
 * block store fault restarts bytewise from a0 (re-zeroing part of a block
 * is harmless); a byte store fault returns t6 - a0, which is then exact.
 *
 * Mutation hook: CF_MUTANT_CLEAR_RETURNS_ZERO (mutants/clear-returns-zero.S).
 *
 * Register plan (caller-saved only):
 *   a0  dst cursor          a1  n, untouched after entry
 *   t6  dst end = a0 + n    t0  end bound of the current loop
 *   t1  scratch (alignment test, block length)
 */

#include "include/cf_asm.h"

/*
 * Below this many bytes clear bytewise. As for copies: with at least
 * 2*SZREG bytes, aligning (at most SZREG-1 bytes) leaves a whole word.
 * Each loop computes its own bound, so this is a cost choice only.
 */
#define CF_CLEAR_SMALL	(2 * SZREG)
#define CF_BLOCK	(8 * SZREG)

	.text
CF_FUNC_START(__clear_user)
	add	t6, a0, a1		/* every fixup measures from the end */
	li	t0, CF_CLEAR_SMALL
	bltu	a1, t0, .Lclear_bytes

	/* Bytes until a0 is aligned: the word stores below must be aligned. */
	andi	t1, a0, SZREG - 1
	beqz	t1, .Lclear_aligned
	andi	t0, a0, -SZREG
	addi	t0, t0, SZREG		/* t0 = next aligned address */
.Lclear_align:
	UA(.Lfix_byte, sb zero, 0(a0))
	addi	a0, a0, 1
	bltu	a0, t0, .Lclear_align

.Lclear_aligned:
	/* Blocks while a whole block is left. */
	sub	t1, t6, a0
	andi	t1, t1, -CF_BLOCK
	beqz	t1, .Lclear_words
	add	t0, a0, t1		/* t0 = where the blocks end */
.Lclear_block:
	UA(.Lfix_retry, REG_S zero, 0 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 1 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 2 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 3 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 4 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 5 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 6 * SZREG(a0))
	UA(.Lfix_retry, REG_S zero, 7 * SZREG(a0))
	/* Advance only after the whole block: the fixup restarts from here. */
	addi	a0, a0, CF_BLOCK
	bltu	a0, t0, .Lclear_block

.Lclear_words:
	andi	t0, t6, -SZREG		/* end of the last whole aligned word */
	bgeu	a0, t0, .Lclear_bytes
.Lclear_word:
	UA(.Lfix_retry, REG_S zero, 0(a0))
	addi	a0, a0, SZREG
	bltu	a0, t0, .Lclear_word

	/* Small clears, the tail, and the fixup retry. */
.Lclear_bytes:
	bgeu	a0, t6, .Lclear_done
.Lclear_byte:
	UA(.Lfix_byte, sb zero, 0(a0))
	addi	a0, a0, 1
	bltu	a0, t6, .Lclear_byte
.Lclear_done:
	li	a0, 0			/* nothing left uncleared */
	ret

	/* ---- fixups: reached only through the exception table ---- */

	/* Word or block store fault: redo bytewise from the boundary in a0. */
.Lfix_retry:
	j	.Lclear_bytes

	/* Byte store fault: a0 is the first byte that could not be cleared. */
.Lfix_byte:
#ifdef CF_MUTANT_CLEAR_RETURNS_ZERO
	/* BUG clear-returns-zero: claims everything was cleared after a fault. */
	li	a0, 0
#else
	sub	a0, t6, a0
#endif
	ret
CF_FUNC_END(__clear_user)
