/* SPDX-License-Identifier: MIT
 *
 * copy_template.S (ARM) - the one copy core behind memcpy.S, copy_from_user.S and
 * copy_to_user.S, in ARM state.
 *
 * Not a routine by itself: #included between CF_FUNC_START and CF_FUNC_END of the
 * routine that instantiates it. The includer chooses:
 *   CF_TEMPLATE_MEMCPY  return the original dst; no fixups, no user access (with
 *                       CF_NO_EXTABLE)
 *   CF_SRC_USER         loads are user accesses (ldrt/ldrbt, with table entries):
 *                       copy_from_user
 *   CF_DST_USER         stores are user accesses (strt/strbt): copy_to_user
 *   CF_MUTANT_*         seeded bugs (arch/arm/mutants/); each hook below is an #ifdef
 *                       block with a one-line comment naming it.
 * A user copy returns the number of bytes NOT copied, and switches user access on for
 * its body (CF_UACCESS_ENABLE) and off on every way out.
 *
 * Entry: r0 = dst, r1 = src, r2 = n.
 *
 * Shape:
 *   1. n < 16: byte loop.
 *   2. bytes until dst is 4-aligned.
 *   3a. src aligned too: 32-byte blocks (eight loads, then eight stores: ldm/stm on the
 *       kernel's side, single ldrt/strt on the user's, which have no multiple form),
 *       single words, the byte tail.
 *   3b. src misaligned: aligned src words merged by register-shifted orr into aligned
 *       dst words, four per block, then single words, the byte tail. Only src words
 *       holding a needed byte are loaded. No access is ever misaligned.
 * ldrt/strt only post-index, so every loop works on copies of the cursors (ip, lr)
 * and moves r0/r1 on only after the iteration's last store.
 *
 * Exact fault semantics. At every loop-iteration boundary
 *   r0 = first dst byte not yet stored, r1 = the matching src byte
 * (in 3b, r1 is the aligned word holding it; the fixup adds the misalignment back),
 * and r2 = dst + n. A fault on a word or block access resumes at a fixup that restarts
 * the copy bytewise from (r0, r1): bytes of a partly stored block are stored again with
 * the same values, and the byte loop stops exactly at the first inaccessible byte on
 * either side. A fault on a byte access returns r2 - r0.
 *
 * Register plan (r4-r11 and lr saved: AAPCS callee-saved, and lr the working pointer):
 *   r0   dst cursor              r1   src cursor
 *   r2   dst end                 r3   end bound of the current loop; scratch
 *   r4-r11  the words of a block (3b: r4 the carried src word, r5-r8 new ones,
 *           r10 the right shift in bits, r11 the left shift)
 *   ip   working src pointer     lr   working dst pointer
 * Frame: the original dst (memcpy's return value; [sp]), r4-r11, lr: the exit pops the
 * return address straight into pc.
 */

#include "cf_asm.h"

#define CF_COPY_SMALL	16	/* below this, bytes: the word paths would not pay */

/* Each access moves its base on (post-index): (fixup, register(s), base). */
#ifdef CF_SRC_USER
#define LDB(fix, r, b)	UA(fix, ldrbt r, [b], #1)
#define LDW(fix, r, b)	UA(fix, ldrt r, [b], #4)
#define LD4(fix, b)	LDW(fix, r5, b); LDW(fix, r6, b); LDW(fix, r7, b); LDW(fix, r8, b)
#define LD8(fix, b)	LDW(fix, r4, b); LDW(fix, r5, b); LDW(fix, r6, b); LDW(fix, r7, b); \
			LDW(fix, r8, b); LDW(fix, r9, b); LDW(fix, r10, b); LDW(fix, r11, b)
#else
#define LDB(fix, r, b)	ldrb r, [b], #1
#define LDW(fix, r, b)	ldr r, [b], #4
#define LD4(fix, b)	ldm b!, {r5-r8}
#define LD8(fix, b)	ldm b!, {r4-r11}
#endif
#ifdef CF_DST_USER
#define STB(fix, r, b)	UA(fix, strbt r, [b], #1)
#define STW(fix, r, b)	UA(fix, strt r, [b], #4)
#define ST4(fix, b)	STW(fix, r4, b); STW(fix, r5, b); STW(fix, r6, b); STW(fix, r7, b)
#ifdef CF_MUTANT_BLOCK_STORE_HALF_DONE
/* BUG block-store-half-done: a fault on a block's second half reports the whole block as not stored. */
#define ST8(fix, b)	STW(fix, r4, b); STW(fix, r5, b); STW(fix, r6, b); STW(fix, r7, b); \
			STW(.Lfix_byte, r8, b); STW(.Lfix_byte, r9, b); STW(.Lfix_byte, r10, b); \
			STW(.Lfix_byte, r11, b)
#else
#define ST8(fix, b)	STW(fix, r4, b); STW(fix, r5, b); STW(fix, r6, b); STW(fix, r7, b); \
			STW(fix, r8, b); STW(fix, r9, b); STW(fix, r10, b); STW(fix, r11, b)
#endif
#else
#define STB(fix, r, b)	strb r, [b], #1
#define STW(fix, r, b)	str r, [b], #4
#define ST4(fix, b)	stm b!, {r4-r7}
#define ST8(fix, b)	stm b!, {r4-r11}
#endif

#ifdef CF_MUTANT_PREMATURE_FAILURE
/* BUG premature-failure: a fault on a word access gives up there, with no byte retry. */
#define FIX_WIDE	.Lfix_byte
#define FIX_SHIFT	.Lfix_byte
#else
#define FIX_WIDE	.Lfix_retry
#define FIX_SHIFT	.Lfix_shift
#endif

/* One dst word of 3b: the top bytes of src word 'cur', the bottom of 'nxt', into cur. */
#define SHIFT_WORD(cur, nxt)						\
	mov cur, cur, lsr r10; orr cur, cur, nxt, lsl r11

	push	{r0, r4-r11, lr}
#ifndef CF_TEMPLATE_MEMCPY
	CF_UACCESS_ENABLE(r3)
#endif
	mov	r3, r2
	add	r2, r0, r2		/* every fixup measures from the end */
	cmp	r3, #CF_COPY_SMALL
	blo	.Lcopy_bytes

	/* 2. Bytes until dst is aligned: all later stores are aligned. */
	ands	r3, r0, #3
	beq	.Lcopy_dst_aligned
	bic	r3, r0, #3
	add	r3, r3, #4		/* r3 = next aligned dst address */
.Lcopy_align:
#ifdef CF_MUTANT_HEAD_NO_EXTABLE
	/* BUG head-no-extable: the alignment loop's user load has no table entry. */
	ldrbt	r4, [r1], #1
#else
	LDB(.Lfix_byte, r4, r1)
#endif
	STB(.Lfix_byte, r4, r0)
	cmp	r0, r3
	blo	.Lcopy_align

.Lcopy_dst_aligned:
	ands	r3, r1, #3		/* src misalignment, in bytes */
	bne	.Lcopy_shift

	/* 3a. Both aligned. Blocks while a whole block is left. */
	sub	r3, r2, r0
	bics	r3, r3, #31		/* bytes the block loop will do */
	beq	.Lcopy_words
	add	r3, r0, r3
.Lcopy_block:
	/* All loads first: a src fault then leaves this block unstored. */
	mov	ip, r1
	mov	lr, r0
	LD8(FIX_WIDE, ip)
	ST8(FIX_WIDE, lr)
	/* Move on only after the whole block: the fixup restarts from here. */
	mov	r1, ip
	mov	r0, lr
	cmp	r0, r3
	blo	.Lcopy_block

.Lcopy_words:
	bic	r3, r2, #3		/* the last whole aligned dst word */
	cmp	r0, r3
	bhs	.Lcopy_bytes
.Lcopy_word:
	mov	ip, r1
	mov	lr, r0
	LDW(FIX_WIDE, r4, ip)
	STW(FIX_WIDE, r4, lr)
	mov	r1, ip
	mov	r0, lr
	cmp	r0, r3
	blo	.Lcopy_word
	b	.Lcopy_bytes

	/* 3b. src misaligned by r3 bytes: r1 becomes the aligned word holding it. */
.Lcopy_shift:
	sub	r1, r1, r3
	lsl	r10, r3, #3
#ifdef CF_MUTANT_WRONG_SHIFT
	/* BUG wrong-shift: the left shift is one byte short (24 - 8*m bits). */
	rsb	r11, r10, #24
#else
	rsb	r11, r10, #32
#endif
	mov	ip, r1
	LDW(FIX_SHIFT, r4, ip)		/* the carried word: holds the first bytes */
	sub	r3, r2, r0
	bics	r3, r3, #15
	beq	.Lshift_words
	add	r3, r0, r3
.Lshift_block:
	/* src words 1-4 of this block (4 dst words need the carried one and these). */
	add	ip, r1, #4
	mov	lr, r0
	LD4(FIX_SHIFT, ip)
	SHIFT_WORD(r4, r5)
	SHIFT_WORD(r5, r6)
	SHIFT_WORD(r6, r7)
	SHIFT_WORD(r7, r8)
	ST4(FIX_SHIFT, lr)
	mov	r4, r8			/* carried into the next block */
	add	r1, r1, #16
	mov	r0, lr
	cmp	r0, r3
	blo	.Lshift_block

.Lshift_words:
	bic	r3, r2, #3
	cmp	r0, r3
	bhs	.Lshift_tail
.Lshift_word:
	/* a whole dst word needs bytes of the next src word too (the misalignment is >= 1) */
	add	ip, r1, #4
	mov	lr, r0
	LDW(FIX_SHIFT, r5, ip)
	SHIFT_WORD(r4, r5)
	STW(FIX_SHIFT, r4, lr)
	mov	r4, r5
	add	r1, r1, #4
	mov	r0, lr
	cmp	r0, r3
	blo	.Lshift_word
.Lshift_tail:
	add	r1, r1, r10, lsr #3	/* back to the byte */

	/* The byte tail; also where every word fixup restarts. */
.Lcopy_bytes:
	cmp	r0, r2
	bhs	.Lcopy_done
.Lcopy_byte:
	LDB(.Lfix_byte, r4, r1)
	STB(.Lfix_byte, r4, r0)
	cmp	r0, r2
	blo	.Lcopy_byte
.Lcopy_done:
#ifdef CF_TEMPLATE_MEMCPY
	pop	{r0, r4-r11, pc}
#else
	CF_UACCESS_DISABLE(r3)
	mov	r0, #0
	add	sp, sp, #4
	pop	{r4-r11, pc}

	/* A word of 3b faulted: r1 back to the byte, then as any word. */
.Lfix_shift:
	add	r1, r1, r10, lsr #3
	/* A word or block faulted: retry from the iteration's start, bytewise. */
.Lfix_retry:
	b	.Lcopy_bytes
	/* A byte faulted: r0 is exactly the first byte not copied. */
.Lfix_byte:
#ifndef CF_MUTANT_UACCESS_LEFT_ENABLED
	CF_UACCESS_DISABLE(r3)
#else
	/* BUG uaccess-left-enabled: the fault path returns with user access still on. */
#endif
#ifdef CF_MUTANT_FIXUP_FULL_SIZE
	/* BUG fixup-full-size: reports n (end - the original dst), whatever was copied. */
	ldr	r3, [sp]
	sub	r0, r2, r3
#else
	sub	r0, r2, r0
#endif
	add	sp, sp, #4
	pop	{r4-r11, pc}
#endif
