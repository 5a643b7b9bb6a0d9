/* SPDX-License-Identifier: MIT
 *
 * copy_template.S (arm64) - the one copy core behind memcpy.S, copy_from_user.S and
 * copy_to_user.S.
 *
 * Not a routine by itself: #included between CF_FUNC_START and CF_FUNC_END of the
 * routine that instantiates it. The includer chooses:
 *   CF_TEMPLATE_MEMCPY  return the original dst; no fixups, no user access (with
 *                       CF_NO_EXTABLE)
 *   CF_SRC_USER         loads are user accesses (ldtr*, with table entries):
 *                       copy_from_user
 *   CF_DST_USER         stores are user accesses (sttr*): copy_to_user
 *   CF_MUTANT_*         seeded bugs (arch/arm64/mutants/); each hook below is an
 *                       #ifdef block with a one-line comment naming it.
 * A user copy returns the number of bytes NOT copied, and switches user access on
 * for its body (CF_UACCESS_ENABLE) and off on every way out.
 *
 * Entry: x0 = dst, x1 = src, x2 = n.
 *
 * Shape:
 *   1. n < CF_COPY_SMALL: byte loop.
 *   2. bytes until dst is 8-aligned.
 *   3a. src aligned too: 64-byte blocks (all loads, then all stores), single
 *       words, the byte tail.
 *   3b. src misaligned: aligned src words merged by lsr/lsl/orr into aligned dst
 *       words, 8 per block, then single words, then the byte tail. Only src words
 *       holding a needed byte are loaded. No access is ever misaligned.
 * User accesses have no pair form (ldtr/sttr), so a user pair is two single ones.
 *
 * Exact fault semantics. At every loop-iteration boundary
 *   x0 = first dst byte not yet stored, x1 = the matching src byte
 * (in 3b, x1 is the aligned word holding it; the fixup adds the misalignment
 * back), and x3 = dst + n. A fault on a word or block access resumes at a fixup
 * that restarts the copy bytewise from (x0, x1): bytes of a partly stored block
 * are stored again with the same values, and the byte loop stops exactly at the
 * first inaccessible byte on either side. A fault on a byte access returns
 * x3 - x0, exactly the number of bytes not copied.
 *
 * Register plan (caller-saved only: x19-x29, x18 and sp are never touched):
 *   x0   dst cursor              x1   src cursor
 *   x2   n (kept)                x3   dst end
 *   x4   end bound of the current loop
 *   x5   memcpy only: the original dst, returned
 *   x6-x13, x16  the words of a block (3b: x6 the carried src word)
 *   x14  3b: src misalignment in bits (right shift); x15 its negation (left
 *        shift: lslv takes the amount modulo 64, so -x14 is 64 - x14)
 *   w16  the byte in flight       x17  scratch
 */

#include "cf_asm.h"

#define CF_COPY_SMALL	16	/* below this, bytes: the word paths would not pay */

/* Each access: (fixup, register(s), base, byte offset). Kernel-side ones carry no
 * table entry: a fault there is the kernel's own bug, not the user's. */
#ifdef CF_SRC_USER
#define LDB(fix, r, b, o)	UA(fix, ldtrb r, [b, #(o)])
#define LDX(fix, r, b, o)	UA(fix, ldtr r, [b, #(o)])
#define LDP(fix, r1, r2, b, o)	LDX(fix, r1, b, o); LDX(fix, r2, b, (o) + 8)
#else
#define LDB(fix, r, b, o)	ldrb r, [b, #(o)]
#define LDX(fix, r, b, o)	ldr r, [b, #(o)]
#define LDP(fix, r1, r2, b, o)	ldp r1, r2, [b, #(o)]
#endif
#ifdef CF_DST_USER
#define STB(fix, r, b, o)	UA(fix, sttrb r, [b, #(o)])
#define STX(fix, r, b, o)	UA(fix, sttr r, [b, #(o)])
#ifdef CF_MUTANT_PAIR_STORE_HALF_DONE
/* BUG pair-store-half-done: a fault on the pair's second half reports the whole pair as not stored. */
#define STP(fix, r1, r2, b, o)	STX(fix, r1, b, o); STX(.Lfix_byte, r2, b, (o) + 8)
#else
#define STP(fix, r1, r2, b, o)	STX(fix, r1, b, o); STX(fix, r2, b, (o) + 8)
#endif
#else
#define STB(fix, r, b, o)	strb r, [b, #(o)]
#define STX(fix, r, b, o)	str r, [b, #(o)]
#define STP(fix, r1, r2, b, o)	stp r1, r2, [b, #(o)]
#endif

#ifdef CF_MUTANT_PREMATURE_FAILURE
/* BUG premature-failure: a fault on a wide access gives up there, with no byte retry. */
#define FIX_WIDE	.Lfix_byte
#define FIX_SHIFT	.Lfix_byte
#else
#define FIX_WIDE	.Lfix_retry
#define FIX_SHIFT	.Lfix_shift
#endif

/* One dst word k of a 3b block: the top bytes of src word 'cur', the bottom of 'nxt'. */
#define SHIFT_WORD(cur, nxt)						\
	lsr	cur, cur, x14; lsl x17, nxt, x15; orr cur, cur, x17

#ifdef CF_TEMPLATE_MEMCPY
	mov	x5, x0
#else
	CF_UACCESS_ENABLE(x17)
#endif
	add	x3, x0, x2		/* every fixup measures from the end */
	cmp	x2, #CF_COPY_SMALL
	b.lo	.Lcopy_bytes

	/* 2. Bytes until dst is aligned: all later stores are aligned. */
	ands	x4, x0, #7
	b.eq	.Lcopy_dst_aligned
	and	x4, x0, #-8
	add	x4, x4, #8		/* x4 = next aligned dst address */
.Lcopy_align:
#ifdef CF_MUTANT_HEAD_NO_EXTABLE
	/* BUG head-no-extable: the alignment loop's user load has no table entry. */
	ldtrb	w16, [x1]
#else
	LDB(.Lfix_byte, w16, x1, 0)
#endif
	STB(.Lfix_byte, w16, x0, 0)
	add	x0, x0, #1
	add	x1, x1, #1
	cmp	x0, x4
	b.lo	.Lcopy_align

.Lcopy_dst_aligned:
	ands	x14, x1, #7		/* src misalignment, in bytes */
	b.ne	.Lcopy_shift

	/* 3a. Both aligned. Blocks while a whole block is left. */
	sub	x4, x3, x0
	ands	x4, x4, #-64		/* bytes the block loop will do */
	b.eq	.Lcopy_words
	add	x4, x0, x4
.Lcopy_block:
	/* All loads first: a src fault then leaves this block unstored. */
	LDP(FIX_WIDE, x6, x7, x1, 0)
	LDP(FIX_WIDE, x8, x9, x1, 16)
	LDP(FIX_WIDE, x10, x11, x1, 32)
	LDP(FIX_WIDE, x12, x13, x1, 48)
	STP(FIX_WIDE, x6, x7, x0, 0)
	STP(FIX_WIDE, x8, x9, x0, 16)
	STP(FIX_WIDE, x10, x11, x0, 32)
	STP(FIX_WIDE, x12, x13, x0, 48)
	/* Advance only after the whole block: the fixup restarts from here. */
	add	x0, x0, #64
	add	x1, x1, #64
	cmp	x0, x4
	b.lo	.Lcopy_block

.Lcopy_words:
	and	x4, x3, #-8		/* the last whole aligned dst word */
	cmp	x0, x4
	b.hs	.Lcopy_bytes
.Lcopy_word:
	LDX(FIX_WIDE, x6, x1, 0)
	STX(FIX_WIDE, x6, x0, 0)
	add	x0, x0, #8
	add	x1, x1, #8
	cmp	x0, x4
	b.lo	.Lcopy_word
	b	.Lcopy_bytes

	/* 3b. src misaligned by x14 bytes: x1 becomes the aligned word holding it. */
.Lcopy_shift:
	sub	x1, x1, x14
	lsl	x14, x14, #3
#ifdef CF_MUTANT_WRONG_SHIFT
	/* BUG wrong-shift: the left shift is one byte short (64 - 8 - x14 bits). */
	mov	x15, #56
	sub	x15, x15, x14
#else
	neg	x15, x14
#endif
	LDX(FIX_SHIFT, x6, x1, 0)	/* the carried word: holds the first bytes */
	sub	x4, x3, x0
	ands	x4, x4, #-64
	b.eq	.Lshift_words
	add	x4, x0, x4
.Lshift_block:
	/* src words 1-8 of this block (8 dst words need the carried one and these). */
	LDP(FIX_SHIFT, x7, x8, x1, 8)
	LDP(FIX_SHIFT, x9, x10, x1, 24)
	LDP(FIX_SHIFT, x11, x12, x1, 40)
	LDP(FIX_SHIFT, x13, x16, x1, 56)
	SHIFT_WORD(x6, x7)
	SHIFT_WORD(x7, x8)
	SHIFT_WORD(x8, x9)
	SHIFT_WORD(x9, x10)
	SHIFT_WORD(x10, x11)
	SHIFT_WORD(x11, x12)
	SHIFT_WORD(x12, x13)
	SHIFT_WORD(x13, x16)
	STP(FIX_SHIFT, x6, x7, x0, 0)
	STP(FIX_SHIFT, x8, x9, x0, 16)
	STP(FIX_SHIFT, x10, x11, x0, 32)
	STP(FIX_SHIFT, x12, x13, x0, 48)
	mov	x6, x16			/* carried into the next block */
	add	x0, x0, #64
	add	x1, x1, #64
	cmp	x0, x4
	b.lo	.Lshift_block

.Lshift_words:
	and	x4, x3, #-8
	cmp	x0, x4
	b.hs	.Lshift_tail
.Lshift_word:
	/* a whole dst word needs bytes of the next src word too (the misalignment is >= 1) */
	LDX(FIX_SHIFT, x7, x1, 8)
	SHIFT_WORD(x6, x7)
	STX(FIX_SHIFT, x6, x0, 0)
	mov	x6, x7
	add	x0, x0, #8
	add	x1, x1, #8
	cmp	x0, x4
	b.lo	.Lshift_word
.Lshift_tail:
	add	x1, x1, x14, lsr #3	/* back to the byte */

	/* The byte tail; also where every word fixup restarts. */
.Lcopy_bytes:
	cmp	x0, x3
	b.hs	.Lcopy_done
#ifdef CF_MUTANT_OVERREAD_IN_PAGE
	/* BUG overread-in-page: the tail takes 8 src bytes in one load whenever they stay in the page. */
	and	x17, x1, #4095
	cmp	x17, #4096 - 8
	b.hi	.Lcopy_byte
	LDX(.Lfix_byte, x17, x1, 0)
	add	x4, x0, #8
	cmp	x4, x3
	csel	x4, x4, x3, lo		/* up to 8 bytes from this word, then load again */
.Loverread_byte:
	STB(.Lfix_byte, w17, x0, 0)
	lsr	x17, x17, #8
	add	x0, x0, #1
	add	x1, x1, #1
	cmp	x0, x4
	b.lo	.Loverread_byte
	b	.Lcopy_bytes
#endif
.Lcopy_byte:
	LDB(.Lfix_byte, w16, x1, 0)
	STB(.Lfix_byte, w16, x0, 0)
	add	x0, x0, #1
	add	x1, x1, #1
	cmp	x0, x3
	b.lo	.Lcopy_byte
.Lcopy_done:
#ifdef CF_TEMPLATE_MEMCPY
	mov	x0, x5
#else
	CF_UACCESS_DISABLE(x17)
	mov	x0, #0
#endif
	ret

#ifndef CF_TEMPLATE_MEMCPY
	/* A word of 3b faulted: x1 back to the byte, then as any word. */
.Lfix_shift:
	add	x1, x1, x14, lsr #3
	/* A word or block faulted: retry from the iteration's start, bytewise. */
.Lfix_retry:
	b	.Lcopy_bytes
	/* A byte faulted: x0 is exactly the first byte not copied. */
.Lfix_byte:
#ifndef CF_MUTANT_UACCESS_LEFT_ENABLED
	CF_UACCESS_DISABLE(x17)
#else
	/* BUG uaccess-left-enabled: the fault path returns with user access still on. */
#endif
#ifdef CF_MUTANT_FIXUP_FULL_SIZE
	/* BUG fixup-full-size: reports n, whatever was copied. */
	mov	x0, x2
#else
	sub	x0, x3, x0
#endif
	ret
#endif
