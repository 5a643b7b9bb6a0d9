/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: __memzero(ptr, n), which ARM copy_from_user fixups up to 4.11 call to
 * zero the kernel-side bytes not copied (r0 = where the copy stopped, r1 = bytes left).
 * Our own bytewise loop, linked with every ARM file `check` builds (weak: a file's own
 * wins). It zeroes, as the kernel's does, so such a fixup stores past what it reports:
 * store-beyond-reported, the contract of that era. -D CF_ARM_MEMZERO_SKIP makes it return
 * at once, to check the rest of the contract (today's raw_copy_from_user, which leaves
 * the zeroing to its caller).
 */
	.syntax unified
	.arm
	.text
	.weak __memzero
	.type __memzero, %function
	.balign 4
__memzero:
#ifndef CF_ARM_MEMZERO_SKIP
	mov r2, #0
1:	subs r1, r1, #1
	strbhs r2, [r0], #1
	bhs 1b
#endif
	bx lr
	.size __memzero, . - __memzero
