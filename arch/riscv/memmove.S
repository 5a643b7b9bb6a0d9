/* SPDX-License-Identifier: MIT
 *
 * memmove.S - copy between buffers that may overlap, word at a time.
 *
 * copyfuzz: symbol=memmove
 * copyfuzz: kind=memmove
 * copyfuzz: profile=exact
 * copyfuzz: about=forward unless dst lies inside [src, src+n), then backward; co-aligned words, byte tails
 *
 * void *memmove(void *dst, const void *src, size_t n); returns dst. No
 * exception table: any fault is a bug (the harness reports it as unhandled).
 *
 * Direction: dst - src (unsigned) < n means dst starts inside the source,
 * above src: a forward copy would overwrite source bytes before reading
 * them, so it copies backward from the ends. Otherwise (dst below src, or
 * no overlap, or dst == src) it copies forward.
 *
 * Each direction: n < 2*SZREG bytewise. Else bytes until the dst cursor is
 * aligned (at its start going forward, at its end going backward); if the
 * src cursor is then aligned too, aligned words while a whole word is
 * left; then the remaining bytes. Co-aligned words are safe on overlap:
 * the buffers are then at least SZREG apart, and every word is loaded
 * before the store that could overlap it.
 *
 * Mutation hook: CF_MUTANT_MEMMOVE_ALWAYS_FORWARD
 * (mutants/memmove-always-forward.S).
 *
 * Register plan (caller-saved only):
 *   a0  dst, returned untouched    a1  src, untouched
 *   a2  n, untouched               t0  dst cursor
 *   t1  src cursor                 t2  bound of the current loop
 *   t3  scratch (direction and alignment tests)
 *   t4  the byte or word in flight
 */

#include "include/cf_asm.h"

	.text
CF_FUNC_START(memmove)
	mv	t0, a0
	mv	t1, a1
#ifndef CF_MUTANT_MEMMOVE_ALWAYS_FORWARD
	sub	t3, a0, a1
	bltu	t3, a2, .Lmove_backward	/* dst inside (src, src + n) */
#endif

/* ---- forward: t0, t1 climb from the starts ---- */
	li	t2, 2 * SZREG
	bltu	a2, t2, .Lfwd_tail
	andi	t3, t0, SZREG - 1
	beqz	t3, .Lfwd_aligned
	andi	t2, t0, -SZREG
	addi	t2, t2, SZREG		/* t2 = dst's next aligned address */
.Lfwd_head:
	lb	t4, 0(t1)
	sb	t4, 0(t0)
	addi	t0, t0, 1
	addi	t1, t1, 1
	bltu	t0, t2, .Lfwd_head
.Lfwd_aligned:
	andi	t3, t1, SZREG - 1
	bnez	t3, .Lfwd_tail		/* src not co-aligned: bytes */
	add	t2, a0, a2
	andi	t2, t2, -SZREG		/* t2 = last word boundary before the end */
.Lfwd_words:
	REG_L	t4, 0(t1)
	REG_S	t4, 0(t0)
	addi	t0, t0, SZREG
	addi	t1, t1, SZREG
	bltu	t0, t2, .Lfwd_words
.Lfwd_tail:
	add	t2, a0, a2		/* t2 = dst end */
	bgeu	t0, t2, .Lmove_done
.Lfwd_byte:
	lb	t4, 0(t1)
	sb	t4, 0(t0)
	addi	t0, t0, 1
	addi	t1, t1, 1
	bltu	t0, t2, .Lfwd_byte
	ret

/* ---- backward: t0, t1 descend from the ends ---- */
.Lmove_backward:
	add	t0, a0, a2
	add	t1, a1, a2
	li	t2, 2 * SZREG
	bltu	a2, t2, .Lbwd_tail
	andi	t3, t0, SZREG - 1
	beqz	t3, .Lbwd_aligned
	andi	t2, t0, -SZREG		/* t2 = dst end rounded down */
.Lbwd_head:
	addi	t0, t0, -1
	addi	t1, t1, -1
	lb	t4, 0(t1)
	sb	t4, 0(t0)
	bltu	t2, t0, .Lbwd_head
.Lbwd_aligned:
	andi	t3, t1, SZREG - 1
	bnez	t3, .Lbwd_tail		/* src not co-aligned: bytes */
	addi	t2, a0, SZREG - 1
	andi	t2, t2, -SZREG		/* t2 = first word boundary after dst */
.Lbwd_words:
	addi	t0, t0, -SZREG
	addi	t1, t1, -SZREG
	REG_L	t4, 0(t1)
	REG_S	t4, 0(t0)
	bltu	t2, t0, .Lbwd_words
.Lbwd_tail:
	bgeu	a0, t0, .Lmove_done
.Lbwd_byte:
	addi	t0, t0, -1
	addi	t1, t1, -1
	lb	t4, 0(t1)
	sb	t4, 0(t0)
	bltu	a0, t0, .Lbwd_byte
.Lmove_done:
	ret
CF_FUNC_END(memmove)
CF_FUNC_ALIAS(__memmove, memmove)
