/* SPDX-License-Identifier: MIT
 *
 * memset.S - fill memory with a byte, word at a time.
 *
 * copyfuzz: symbol=memset
 * copyfuzz: kind=memset
 * copyfuzz: profile=exact
 * copyfuzz: about=head bytes to an aligned dst, aligned words of the replicated byte, byte tail
 *
 * void *memset(void *dst, int c, size_t n); returns dst. Only the low byte
 * of c is stored (the rest of the int, and of the register, is ignored). No
 * exception table: any fault is a bug (the harness reports it as unhandled).
 *
 * Shape: n < 2*SZREG bytewise. Else the low byte is replicated across a
 * register, bytes are stored until the cursor is aligned, then aligned
 * words up to the last word boundary before the end, then a byte tail.
 * With n >= 2*SZREG, aligning (at most SZREG-1 bytes) leaves a whole word.
 *
 * Mutation hooks: CF_MUTANT_MEMSET_PAST_END (mutants/memset-past-end.S),
 * CF_MUTANT_MEMSET_NO_MASK (mutants/memset-no-mask.S).
 *
 * Register plan (caller-saved only):
 *   a0  dst, returned untouched    a1  c: its low byte, then that byte
 *                                      replicated across the register
 *   a2  n, untouched after entry   t0  cursor
 *   t1  end = dst + n              t2  bound of the current loop
 *   t3  scratch (replication, alignment test)
 */

#include "include/cf_asm.h"

	.text
CF_FUNC_START(memset)
	mv	t0, a0
	add	t1, a0, a2
#ifndef CF_MUTANT_MEMSET_NO_MASK
	andi	a1, a1, 0xff		/* memset stores (unsigned char)c */
#endif
	li	t2, 2 * SZREG
	bltu	a2, t2, .Lset_tail

	/* One byte in every byte of a1. */
	slli	t3, a1, 8
	or	a1, a1, t3
	slli	t3, a1, 16
	or	a1, a1, t3
#if SZREG == 8
	slli	t3, a1, 32
	or	a1, a1, t3
#endif

	/* Bytes until the cursor is aligned. */
	andi	t3, t0, SZREG - 1
	beqz	t3, .Lset_aligned
	andi	t2, t0, -SZREG
	addi	t2, t2, SZREG		/* t2 = next aligned address */
.Lset_head:
	sb	a1, 0(t0)
	addi	t0, t0, 1
	bltu	t0, t2, .Lset_head

.Lset_aligned:
	/* Aligned words up to the last word boundary (at least one word). */
	andi	t2, t1, -SZREG
.Lset_words:
	REG_S	a1, 0(t0)
	addi	t0, t0, SZREG
	bltu	t0, t2, .Lset_words

.Lset_tail:
	/* The bytes left (all of them when n < 2*SZREG). */
	bgeu	t0, t1, .Lset_done
.Lset_byte:
	sb	a1, 0(t0)
	addi	t0, t0, 1
#ifdef CF_MUTANT_MEMSET_PAST_END
	bgeu	t1, t0, .Lset_byte	/* seeded bug: t0 <= end stores the byte at dst + n */
#else
	bltu	t0, t1, .Lset_byte
#endif
.Lset_done:
	ret
CF_FUNC_END(memset)
CF_FUNC_ALIAS(__memset, memset)
