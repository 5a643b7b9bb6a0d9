/* SPDX-License-Identifier: MIT
 *
 * copy_template.S - the one copy core behind copy_user.S and memcpy.S.
 *
 * Not a routine by itself: #included between CF_FUNC_START and CF_FUNC_END
 * of the routine that instantiates it. The includer chooses:
 *   CF_TEMPLATE_MEMCPY  return the original dst (memcpy); no fixup code.
 *                       Must come with CF_NO_EXTABLE so UA() emits no
 *                       table entries.
 *   (neither)           a user copy: return the number of bytes NOT copied,
 *                       every user access carries a table entry.
 *   CF_MUTANT_*         seeded bugs (see arch/riscv/mutants/); each hook below
 *                       is an #ifdef block with a one-line comment naming it.
 *
 * Entry: a0 = dst, a1 = src, a2 = n.
 *
 * Shape (in the style of the 2021 RISC-V uaccess rewrite):
 *   1. n < CF_COPY_SMALL: byte loop.
 *   2. copy bytes until dst is SZREG-aligned.
 *   3a. src now aligned too: unrolled 8*SZREG blocks (8 loads, then 8
 *       stores), then single words, then the byte tail.
 *   3b. src misaligned: aligned src word loads merged by srl/sll/or into
 *       aligned dst stores, 8 words per iteration, then single words, then
 *       the byte tail. Only words holding at least one needed byte are
 *       loaded (never the word past the end: it may be on an unmapped page).
 *
 * Exact fault semantics. At every loop-iteration boundary
 *   a0 = first dst byte not yet stored, a1 = the matching src byte
 * (in 3b a1 is the aligned word holding that byte; the fixup adds the
 * misalignment back), and DEND = dst + n. A fault on a word or block access
 * resumes at a fixup that restarts the copy bytewise from (a0, a1): bytes of
 * a partly stored block are stored again with the same values, and the byte
 * loop stops exactly at the first inaccessible byte on either side. A fault
 * on a byte access returns DEND - a0, which is then exactly the number of
 * bytes not copied.
 *
 * Register plan (caller-saved only; s*, sp, gp, tp are never touched):
 *   a0      dst cursor                    a1   src cursor
 *   a2      n on entry; afterwards data   DEND dst end (t6)
 *   t0      end bound of the current loop
 *   t1      byte / single word in flight; block-length scratch
 *   a2-a7, t1, t2   the 8 words of an aligned block
 *   t3, t4  misaligned path: right / left shift counts in bits
 *   a2, a3  misaligned path: alternating src words (the one carried over is
 *           already loaded); a4 the shifted high part
 *   t5      memcpy only: the original dst, returned
 */

#include "cf_asm.h"

/*
 * Below this many bytes copy bytewise. 2*SZREG: after aligning dst (at most
 * SZREG-1 bytes) at least SZREG+1 bytes are left, so the word paths always
 * have at least one whole aligned dst word to do; below that their setup
 * (alignment test, bound computation, shift setup) costs more than it saves.
 * Correctness does not depend on it: every loop computes its own bound from
 * what is left.
 */
#define CF_COPY_SMALL	(2 * SZREG)
#define CF_BLOCK	(8 * SZREG)	/* bytes per unrolled iteration */

#ifdef CF_MUTANT_CLOBBER_S_REGISTER
/* BUG clobber-s-register: the dst end lives in callee-saved s1, never saved. */
#define DEND	s1
#else
#define DEND	t6
#endif

/*
 * One dst word of the misaligned path: word k of this iteration is the
 * top bytes of the carried src word 'cur' and the bottom bytes of the next
 * src word 'nxt'. After the step 'nxt' is the carried word; the caller
 * alternates the two registers, so no mv is needed.
 */
#define CF_SHIFT_WORD(k, cur, nxt)					\
	UA(.Lfix_shift, REG_L nxt, ((k) + 1) * SZREG(a1));		\
	srl	cur, cur, t3;						\
	sll	a4, nxt, t4;						\
	or	cur, cur, a4;						\
	UA(.Lfix_shift, REG_S cur, (k) * SZREG(a0))

#ifdef CF_TEMPLATE_MEMCPY
	mv	t5, a0			/* memcpy returns the original dst */
#endif
	add	DEND, a0, a2		/* every fixup measures from the end */
	li	t0, CF_COPY_SMALL
	bltu	a2, t0, .Lcopy_bytes	/* small: words would not pay */

	/* 2. Bytes until dst is aligned: all later stores are aligned. */
	andi	t1, a0, SZREG - 1
	beqz	t1, .Lcopy_dst_aligned
	andi	t0, a0, -SZREG
	addi	t0, t0, SZREG		/* t0 = next aligned dst address */
.Lcopy_align:
	UA(.Lfix_byte, lbu t1, 0(a1))
	UA(.Lfix_byte, sb t1, 0(a0))
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, t0, .Lcopy_align

.Lcopy_dst_aligned:
	andi	t3, a1, SZREG - 1	/* src misalignment, in bytes */
	bnez	t3, .Lcopy_shift

	/* 3a. Both aligned. Blocks while a whole block is left. */
	sub	t1, DEND, a0
	andi	t1, t1, -CF_BLOCK	/* bytes the block loop will do */
#ifdef CF_MUTANT_WORD_THRESHOLD_TOO_SMALL
	/* BUG word-threshold-too-small: tests n, not what is left after aligning dst. */
	li	t0, CF_BLOCK
	bltu	a2, t0, .Lcopy_words
#else
	beqz	t1, .Lcopy_words
#endif
	add	t0, a0, t1		/* t0 = dst where the blocks end */
.Lcopy_block:
	/* All loads first: a src fault then leaves this block unstored. */
	UA(.Lfix_retry, REG_L a2, 0 * SZREG(a1))
	UA(.Lfix_retry, REG_L a3, 1 * SZREG(a1))
	UA(.Lfix_retry, REG_L a4, 2 * SZREG(a1))
	UA(.Lfix_retry, REG_L a5, 3 * SZREG(a1))
	UA(.Lfix_retry, REG_L a6, 4 * SZREG(a1))
	UA(.Lfix_retry, REG_L a7, 5 * SZREG(a1))
	UA(.Lfix_retry, REG_L t1, 6 * SZREG(a1))
	UA(.Lfix_retry, REG_L t2, 7 * SZREG(a1))
	UA(.Lfix_retry, REG_S a2, 0 * SZREG(a0))
	UA(.Lfix_retry, REG_S a3, 1 * SZREG(a0))
	UA(.Lfix_retry, REG_S a4, 2 * SZREG(a0))
	UA(.Lfix_retry, REG_S a5, 3 * SZREG(a0))
	UA(.Lfix_retry, REG_S a6, 4 * SZREG(a0))
	UA(.Lfix_retry, REG_S a7, 5 * SZREG(a0))
	UA(.Lfix_retry, REG_S t1, 6 * SZREG(a0))
	UA(.Lfix_retry, REG_S t2, 7 * SZREG(a0))
	/* Advance only after the whole block: the fixup restarts from here. */
	addi	a0, a0, CF_BLOCK
	addi	a1, a1, CF_BLOCK
	bltu	a0, t0, .Lcopy_block

.Lcopy_words:
	/* Single words up to the last whole aligned dst word. */
	andi	t0, DEND, -SZREG
	bgeu	a0, t0, .Lcopy_bytes
.Lcopy_word:
	UA(.Lfix_retry, REG_L t1, 0(a1))
	UA(.Lfix_retry, REG_S t1, 0(a0))
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
	bltu	a0, t0, .Lcopy_word
	j	.Lcopy_bytes

	/*
	 * 3b. dst aligned, src not. With r = 8 * (src % SZREG), dst word k is
	 * (w[k] >> r) | (w[k+1] << (XLEN - r)), w[] the aligned src words
	 * (little-endian). w[k+1] always holds a needed byte: the last byte of
	 * dst word k comes from it because r > 0.
	 */
.Lcopy_shift:
	slli	t3, t3, 3		/* right shift count in bits */
	neg	t4, t3			/* left: XLEN - r; shifts read only the low bits */
#ifdef CF_MUTANT_WRONG_SHIFT
	/* BUG wrong-shift: for src % SZREG == 3 the left shift is a byte too far. */
	addi	t1, t3, -24
	bnez	t1, .Lshift_count_ok
	addi	t4, t4, 8
.Lshift_count_ok:
#endif
	andi	a1, a1, -SZREG		/* a1 = aligned word holding the src byte */
	UA(.Lfix_shift, REG_L a2, 0(a1))	/* w[0]: holds the first src byte */
	sub	t1, DEND, a0
	andi	t1, t1, -CF_BLOCK
	beqz	t1, .Lshift_words
	add	t0, a0, t1		/* t0 = dst where the blocks end */
.Lshift_block:
	/* 5 instructions per word; a2/a3 alternate as carried and next word. */
	CF_SHIFT_WORD(0, a2, a3)
	CF_SHIFT_WORD(1, a3, a2)
	CF_SHIFT_WORD(2, a2, a3)
	CF_SHIFT_WORD(3, a3, a2)
	CF_SHIFT_WORD(4, a2, a3)
	CF_SHIFT_WORD(5, a3, a2)
	CF_SHIFT_WORD(6, a2, a3)
	CF_SHIFT_WORD(7, a3, a2)
	/* Even count: the carried word is back in a2. */
	addi	a0, a0, CF_BLOCK
	addi	a1, a1, CF_BLOCK
	bltu	a0, t0, .Lshift_block

.Lshift_words:
	andi	t0, DEND, -SZREG	/* last whole aligned dst word */
	bgeu	a0, t0, .Lshift_done
.Lshift_word:
	CF_SHIFT_WORD(0, a2, a3)
	mv	a2, a3			/* at most 7 times per call: not worth unrolling */
	addi	a0, a0, SZREG
	addi	a1, a1, SZREG
	bltu	a0, t0, .Lshift_word
.Lshift_done:
#ifdef CF_MUTANT_LOAD_PAST_END
	/* BUG load-past-end: fetches w[k+1] for the tail unasked; its fault is taken as final. */
	UA(.Lfix_byte, REG_L a3, SZREG(a1))
#endif
	/* Fewer than SZREG bytes left: back to a byte src pointer. */
	srli	t3, t3, 3
	add	a1, a1, t3
	/* fall through */

	/* 1 and 4. Byte loop: small copies, the tail, and the fixup retry. */
.Lcopy_bytes:
	bgeu	a0, DEND, .Lcopy_done
#ifdef CF_MUTANT_OVERREAD_IN_PAGE
	/* BUG overread-in-page: loads a whole word at the tail "because it stays in the page". */
	li	t2, 4095
	and	t1, a1, t2
	li	t2, 4096 - SZREG
	bgtu	t1, t2, .Loverread_done
	UA(.Lfix_byte, REG_L t1, 0(a1))
.Loverread_done:
#endif
.Lcopy_byte:
	UA(.Lfix_byte, lbu t1, 0(a1))
#ifdef CF_MUTANT_STORE_NO_EXTABLE
	/* BUG store-no-extable: this store has no exception-table entry. */
	sb	t1, 0(a0)
#else
	UA(.Lfix_byte, sb t1, 0(a0))
#endif
	addi	a0, a0, 1
	addi	a1, a1, 1
#ifdef CF_MUTANT_TAIL_EXTRA_BYTE
	/* BUG tail-extra-byte: <= instead of <, one byte past the end. */
	bgeu	DEND, a0, .Lcopy_byte
#else
	bltu	a0, DEND, .Lcopy_byte
#endif
.Lcopy_done:
#ifdef CF_TEMPLATE_MEMCPY
	mv	a0, t5
#else
	li	a0, 0			/* nothing left uncopied */
#endif
	ret

#ifndef CF_TEMPLATE_MEMCPY
	/* ---- fixups: reached only through the exception table ---- */

	/* Misaligned path: a1 is the aligned word; add the misalignment back. */
.Lfix_shift:
	srli	t3, t3, 3
	add	a1, a1, t3
	/* fall through */

	/* Word or block fault: (a0, a1) is a boundary; redo from it bytewise. */
.Lfix_retry:
#ifdef CF_MUTANT_NO_PROGRESS_PARTIAL_WORD
	/* BUG no-progress-partial-word: gives up at the word boundary, no byte retry. */
	sub	a0, DEND, a0
	ret
#else
	j	.Lcopy_bytes
#endif

	/* Byte fault: a0 is the first byte that could not be copied. */
.Lfix_byte:
#ifdef CF_MUTANT_FIXUP_LOOPS
	/* BUG fixup-loops: retries the faulting byte, which faults again, forever. */
	j	.Lcopy_byte
#endif
	sub	a0, DEND, a0
#ifdef CF_MUTANT_FIXUP_OFF_BY_ONE
	/* BUG fixup-off-by-one: reports one byte fewer than were left uncopied. */
	addi	a0, a0, -1
#endif
	ret
#endif /* !CF_TEMPLATE_MEMCPY */

#undef DEND
#undef CF_SHIFT_WORD
#undef CF_COPY_SMALL
#undef CF_BLOCK
