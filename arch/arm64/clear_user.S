/* SPDX-License-Identifier: MIT
 *
 * clear_user.S - clear_user for arm64 with exact fault semantics.
 *
 * copyfuzz: symbol=__arch_clear_user
 * copyfuzz: kind=clear
 * copyfuzz: profile=exact
 * copyfuzz: about=sttr xzr in 32-byte blocks after aligning; faults retried bytewise
 *
 * unsigned long __arch_clear_user(void *addr, unsigned long n)
 * Returns the number of bytes not cleared: exactly the bytes from the first
 * inaccessible one to the end.
 *
 * Exact fault semantics: x0 advances only after a whole word or block is
 * stored, so a fault on one restarts bytewise from x0 (storing zeros again
 * where they landed) and stops at the first inaccessible byte; a fault on a
 * byte returns x3 - x0.
 *
 * Register plan (caller-saved only):
 *   x0  cursor: first byte not yet cleared    x1  n
 *   x3  end                                   x4  end bound of the current loop
 *   x17 scratch
 */

#include "include/cf_asm.h"

	.text
CF_FUNC_START(__arch_clear_user)
	CF_UACCESS_ENABLE(x17)
	add	x3, x0, x1
	cmp	x1, #16
	b.lo	.Lclear_bytes
	ands	x4, x0, #7
	b.eq	.Lclear_aligned
	and	x4, x0, #-8
	add	x4, x4, #8
.Lclear_align:
	UA(.Lfix_byte, sttrb wzr, [x0])
	add	x0, x0, #1
	cmp	x0, x4
	b.lo	.Lclear_align
.Lclear_aligned:
	sub	x4, x3, x0
	ands	x4, x4, #-32
	b.eq	.Lclear_words
	add	x4, x0, x4
.Lclear_block:
	UA(.Lfix_retry, sttr xzr, [x0, #0])
	UA(.Lfix_retry, sttr xzr, [x0, #8])
	UA(.Lfix_retry, sttr xzr, [x0, #16])
	UA(.Lfix_retry, sttr xzr, [x0, #24])
	add	x0, x0, #32
	cmp	x0, x4
	b.lo	.Lclear_block
.Lclear_words:
	and	x4, x3, #-8
	cmp	x0, x4
	b.hs	.Lclear_bytes
.Lclear_word:
	UA(.Lfix_retry, sttr xzr, [x0])
	add	x0, x0, #8
	cmp	x0, x4
	b.lo	.Lclear_word
.Lclear_bytes:
	cmp	x0, x3
	b.hs	.Lclear_done
.Lclear_byte:
	UA(.Lfix_byte, sttrb wzr, [x0])
	add	x0, x0, #1
	cmp	x0, x3
	b.lo	.Lclear_byte
.Lclear_done:
	CF_UACCESS_DISABLE(x17)
	mov	x0, #0
	ret
.Lfix_retry:
	b	.Lclear_bytes
.Lfix_byte:
	CF_UACCESS_DISABLE(x17)
	sub	x0, x3, x0
	ret
CF_FUNC_END(__arch_clear_user)
