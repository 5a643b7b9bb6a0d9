/* SPDX-License-Identifier: MIT
 *
 * copy_user_bytewise.S - the simple baseline: one byte at a time.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=byte-at-a-time user copy, absolute (pre-5.18) exception-table format
 *
 * unsigned long __asm_copy_to_user(void *to, const void *from, unsigned long n)
 * unsigned long __asm_copy_from_user(...)   (the same code)
 * Returns the bytes not copied. Each byte is loaded, then stored, so the
 * first inaccessible byte on either side stops the copy right there and
 * the fixup's end - dst is exact. Slow (5 instructions per byte), but the
 * reference point every faster routine must agree with.
 *
 * Deliberately uses the OLD absolute exception-table format, so that both
 * formats are exercised by the harness.
 *
 * Mutation hook: CF_MUTANT_FIXUP_FULL_SIZE (see mutants/fixup-full-size.S).
 *
 * Register plan (caller-saved only):
 *   a0  dst cursor: next byte to store     a1  src cursor
 *   a2  n, untouched                       t6  dst end = a0 + n
 *   t0  the byte in flight
 */

#define CF_EXTABLE_ABS 1	/* { insn, fixup } pointer pairs */
#include "include/cf_asm.h"

	.text
CF_FUNC_START(__asm_copy_to_user)
	add	t6, a0, a2		/* the fixup measures from the end */
	beqz	a2, .Ldone		/* the loop below runs at least once */
.Lloop:
	UA(.Lfixup, lbu t0, 0(a1))
	UA(.Lfixup, sb t0, 0(a0))
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, t6, .Lloop
.Ldone:
	li	a0, 0			/* everything copied */
	ret

	/* Either access faulted: a0 is the first byte not copied. */
.Lfixup:
#ifdef CF_MUTANT_FIXUP_FULL_SIZE
	/* BUG fixup-full-size: returns n although a0 - dst bytes were stored. */
	mv	a0, a2
#else
	sub	a0, t6, a0
#endif
	ret
CF_FUNC_END(__asm_copy_to_user)
CF_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)
