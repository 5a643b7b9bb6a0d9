/* SPDX-License-Identifier: MIT
 *
 * copy_to_user_bytewise.S - the simple arm64 baseline: one byte at a time.
 *
 * copyfuzz: symbol=__arch_copy_to_user
 * copyfuzz: kind=copy_to_user
 * copyfuzz: profile=exact
 * copyfuzz: about=byte-at-a-time copy_to_user (ldrb/sttrb), 4.6-5.15 relative-pair exception table
 *
 * unsigned long __arch_copy_to_user(void *to, const void *from, unsigned long n)
 * Returns the bytes not copied. Each byte is loaded, then stored with sttrb, so
 * the first inaccessible destination byte stops the copy right there and the
 * fixup's end - dst is exact. The reference point of bench (6 instructions a
 * byte), and the one bundled routine with 8-byte { int insn, fixup; } entries.
 *
 * Register plan (caller-saved only):
 *   x0  dst cursor: next byte to store     x1  src cursor
 *   x2  n, untouched                       x3  dst end = x0 + n
 *   w4  the byte in flight
 */

#define CF_EXTABLE_REL8 1
#include "include/cf_asm.h"

	.text
CF_FUNC_START(__arch_copy_to_user)
	add	x3, x0, x2		/* the fixup measures from the end */
	cbz	x2, .Ldone		/* the loop below runs at least once */
.Lloop:
	ldrb	w4, [x1], #1		/* the kernel's own buffer: never faults */
	UA(.Lfixup, sttrb w4, [x0])
	add	x0, x0, #1
	cmp	x0, x3
	b.lo	.Lloop
.Ldone:
	mov	x0, #0			/* everything copied */
	ret

	/* The store faulted: x0 is the first byte not copied. */
.Lfixup:
	sub	x0, x3, x0
	ret
CF_FUNC_END(__arch_copy_to_user)
