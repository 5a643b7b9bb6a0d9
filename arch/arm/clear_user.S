/* SPDX-License-Identifier: MIT
 *
 * clear_user.S - clear_user for 32-bit ARM with exact fault semantics.
 *
 * copyfuzz: symbol=arm_clear_user
 * copyfuzz: kind=clear
 * copyfuzz: profile=exact
 * copyfuzz: about=strt zeros in 16-byte blocks after aligning; faults retried bytewise
 *
 * unsigned long arm_clear_user(void *addr, unsigned long n)
 * Returns the number of bytes not cleared: exactly the bytes from the first
 * inaccessible one to the end.
 *
 * Exact fault semantics: r0 moves on only after a whole word or block is stored
 * (strt is post-index only: the stores go through ip), so a fault on one restarts
 * bytewise from r0 (storing zeros again where they landed) and stops at the first
 * inaccessible byte; a fault on a byte returns r2 - r0.
 *
 * Register plan (caller-saved only):
 *   r0  cursor: first byte not yet cleared    r1  n, then the loop bound
 *   r2  end                                   r3  zero
 *   ip  working pointer
 */

#include "include/cf_asm.h"

	.text
CF_FUNC_START(arm_clear_user)
	CF_UACCESS_ENABLE(r3)
	mov	r3, #0
	add	r2, r0, r1
	cmp	r1, #16
	blo	.Lclear_bytes
	ands	r1, r0, #3
	beq	.Lclear_aligned
	bic	r1, r0, #3
	add	r1, r1, #4
.Lclear_align:
	UA(.Lfix_byte, strbt r3, [r0], #1)
	cmp	r0, r1
	blo	.Lclear_align
.Lclear_aligned:
	sub	r1, r2, r0
	bics	r1, r1, #15
	beq	.Lclear_words
	add	r1, r0, r1
.Lclear_block:
	mov	ip, r0
	UA(.Lfix_retry, strt r3, [ip], #4)
	UA(.Lfix_retry, strt r3, [ip], #4)
	UA(.Lfix_retry, strt r3, [ip], #4)
	UA(.Lfix_retry, strt r3, [ip], #4)
	mov	r0, ip
	cmp	r0, r1
	blo	.Lclear_block
.Lclear_words:
	bic	r1, r2, #3
	cmp	r0, r1
	bhs	.Lclear_bytes
.Lclear_word:
	mov	ip, r0
	UA(.Lfix_retry, strt r3, [ip], #4)
	mov	r0, ip
	cmp	r0, r1
	blo	.Lclear_word
.Lclear_bytes:
	cmp	r0, r2
	bhs	.Lclear_done
.Lclear_byte:
	UA(.Lfix_byte, strbt r3, [r0], #1)
	cmp	r0, r2
	blo	.Lclear_byte
.Lclear_done:
	CF_UACCESS_DISABLE(r3)
	mov	r0, #0
	bx	lr
.Lfix_retry:
	b	.Lclear_bytes
.Lfix_byte:
	CF_UACCESS_DISABLE(r3)
	sub	r0, r2, r0
	bx	lr
CF_FUNC_END(arm_clear_user)
