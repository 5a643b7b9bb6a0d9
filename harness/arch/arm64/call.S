/* SPDX-License-Identifier: MIT */
/*
 * call.S (arm64) - the checking trampoline (see harness/call.h).
 *
 * Register plan:
 *   entry    x0 = struct cf_call *c
 *   x9       c while loading the routine's arguments, and again after the call
 *   x10, x11 scratch (caller-saved: the routine may leave anything there)
 *   x3-x15, x17 poisoned (unmapped addresses) for the call
 *   x16      the routine's address (IP0: free for a branch)
 *   x19-x29  the known values c->s_in[0..10] during the call, x18 c->s_in[11]
 * AAPCS64 has the routine keep x19-x29 and sp; x18 is the platform register, which
 * the kernel keeps for its shadow call stack, so a copy routine must not touch it
 * either. AAPCS64 has the low 64 bits of d8-d15 kept as well: they get s_in[0..7] and
 * are compared after the call, the result reported in the gp slot (there is no gp).
 * tp is tpidr_el0. The user-access stand-in is FPSR (QC).
 * With --granule 16 (cf_mte_on) the harness runs with PSTATE.TCO set and the routine
 * with it clear: only the routine's accesses are tag-checked.
 * Frame: 14 words: x19-x30, x18, one pad (sp stays 16-byte aligned).
 */
#include "call.h"
#include "../generic_nr.h"

#define W(i) ((i) * 8)

#define FRAME (14 * 8)
/* x12 = dN ^ s_in[k] when that is not 0 (called from d15 down: the lowest bad one wins). */
#define D_CHANGED(dn, k)						\
	fmov x10, dn; ldr x11, [x9, #W(CF_CALL_S_IN + (k))];		\
	eor x10, x10, x11; cmp x10, #0; csel x12, x10, x12, ne

	.text
	.balign 4
	.globl cf_call_begin
cf_call_begin:
	.globl cf_call_target
	.type cf_call_target, %function
cf_call_target:
	sub	sp, sp, #FRAME
	stp	x19, x20, [sp, #W(0)]
	stp	x21, x22, [sp, #W(2)]
	stp	x23, x24, [sp, #W(4)]
	stp	x25, x26, [sp, #W(6)]
	stp	x27, x28, [sp, #W(8)]
	stp	x29, x30, [sp, #W(10)]
	str	x18, [sp, #W(12)]
	mov	x9, x0
	mov	x10, sp
	str	x10, [x9, #W(CF_CALL_SAVED_SP)]
	str	xzr, [x9, #W(CF_CALL_GP_IN)]
	mrs	x10, tpidr_el0
	str	x10, [x9, #W(CF_CALL_TP_IN)]
	/* From here on a signal may abandon the call through cf_call_unwind. */
	adrp	x10, cf_active_call
	str	x9, [x10, #:lo12:cf_active_call]
	ldp	x19, x20, [x9, #W(CF_CALL_S_IN + 0)]
	ldp	x21, x22, [x9, #W(CF_CALL_S_IN + 2)]
	ldp	x23, x24, [x9, #W(CF_CALL_S_IN + 4)]
	ldp	x25, x26, [x9, #W(CF_CALL_S_IN + 6)]
	ldp	x27, x28, [x9, #W(CF_CALL_S_IN + 8)]
	ldp	d8, d9, [x9, #W(CF_CALL_S_IN + 0)]	/* AAPCS64 keeps d8-d15 too */
	ldp	d10, d11, [x9, #W(CF_CALL_S_IN + 2)]
	ldp	d12, d13, [x9, #W(CF_CALL_S_IN + 4)]
	ldp	d14, d15, [x9, #W(CF_CALL_S_IN + 6)]
	ldr	x29, [x9, #W(CF_CALL_S_IN + 10)]
	ldr	x18, [x9, #W(CF_CALL_S_IN + 11)]
	ldr	x16, [x9, #W(CF_CALL_FN)]
	ldp	x0, x1, [x9, #W(CF_CALL_ARGS + 0)]
	ldr	x2, [x9, #W(CF_CALL_ARGS + 2)]
	msr	fpsr, xzr		/* the compat PAN stand-in starts off */
	adrp	x10, cf_mte_on		/* --granule 16: tag checks for the routine only */
	ldr	w10, [x10, #:lo12:cf_mte_on]
	cbz	w10, 1f
	.inst	0xd503409f		/* msr tco, #0 (assembled as v8.0: MTE is v8.5) */
1:	/*
	 * The other argument and scratch registers hold addresses nothing maps, each naming
	 * its register (x9: 0x7bad00000909, x12: 0x7bad00000c0c): a routine that uses one it never set (x9 held c,
	 * the others whatever the harness left) faults there, as it would oops in the kernel,
	 * instead of reading or writing the harness's memory. (Not higher: qemu-aarch64
	 * reports a fault above its address space at address 0.)
	 */
	mov	x3, #0x7bad00000000
	add	x4, x3, #0x404
	add	x5, x3, #0x505
	add	x6, x3, #0x606
	add	x7, x3, #0x707
	add	x8, x3, #0x808
	add	x9, x3, #0x909
	add	x10, x3, #0xa0a
	add	x11, x3, #0xb0b
	add	x12, x3, #0xc0c
	add	x13, x3, #0xd0d
	add	x14, x3, #0xe0e
	add	x15, x3, #0xf0f
	add	x17, x3, #0x111
	add	x3, x3, #0x303
	blr	x16
	.globl cf_call_return
cf_call_return:
	/* Record what the routine left; a correct one returned here through x30. */
	adrp	x9, cf_active_call
	ldr	x9, [x9, #:lo12:cf_active_call]
	str	x0, [x9, #W(CF_CALL_RET)]
	stp	x19, x20, [x9, #W(CF_CALL_S_OUT + 0)]
	stp	x21, x22, [x9, #W(CF_CALL_S_OUT + 2)]
	stp	x23, x24, [x9, #W(CF_CALL_S_OUT + 4)]
	stp	x25, x26, [x9, #W(CF_CALL_S_OUT + 6)]
	stp	x27, x28, [x9, #W(CF_CALL_S_OUT + 8)]
	str	x29, [x9, #W(CF_CALL_S_OUT + 10)]
	str	x18, [x9, #W(CF_CALL_S_OUT + 11)]
	mov	x10, sp
	str	x10, [x9, #W(CF_CALL_SP_OUT)]
	/* gp_out (no gp on arm64): how the first of d8-d15 that differs from what it was
	 * given (s_in[0..7]) differs (the XOR), 0 when all came back. */
	mov	x12, #0
	D_CHANGED(d15, 7)
	D_CHANGED(d14, 6)
	D_CHANGED(d13, 5)
	D_CHANGED(d12, 4)
	D_CHANGED(d11, 3)
	D_CHANGED(d10, 2)
	D_CHANGED(d9, 1)
	D_CHANGED(d8, 0)
	str	x12, [x9, #W(CF_CALL_GP_OUT)]
	mrs	x10, tpidr_el0
	str	x10, [x9, #W(CF_CALL_TP_OUT)]
	str	x30, [x9, #W(CF_CALL_RA_OUT)]
	mrs	x10, fpsr
	str	x10, [x9, #W(CF_CALL_UACCESS_OUT)]
	mov	x10, #CF_CALL_RETURNED
	str	x10, [x9, #W(CF_CALL_STATUS)]
	.globl cf_call_unwind
cf_call_unwind:
	/* Entered with any register state: rebuild ours from *cf_active_call. */
	adrp	x10, cf_mte_on
	ldr	w10, [x10, #:lo12:cf_mte_on]
	cbz	w10, 2f
	.inst	0xd503419f		/* msr tco, #1: the harness runs unchecked (arch_sys.h) */
2:	adrp	x10, cf_active_call
	ldr	x9, [x10, #:lo12:cf_active_call]
	str	xzr, [x10, #:lo12:cf_active_call]
	ldr	x11, [x9, #W(CF_CALL_SAVED_SP)]
	mov	sp, x11
	ldr	x11, [x9, #W(CF_CALL_TP_IN)]
	msr	tpidr_el0, x11
	ldp	x19, x20, [sp, #W(0)]
	ldp	x21, x22, [sp, #W(2)]
	ldp	x23, x24, [sp, #W(4)]
	ldp	x25, x26, [sp, #W(6)]
	ldp	x27, x28, [sp, #W(8)]
	ldp	x29, x30, [sp, #W(10)]
	ldr	x18, [sp, #W(12)]
	add	sp, sp, #FRAME
	ret
	.size cf_call_target, . - cf_call_target
	.globl cf_call_end
cf_call_end:

/* sa_restorer of every handler (arch_frame.h). */
	.globl cf_sigreturn
	.type cf_sigreturn, %function
cf_sigreturn:
	mov	x8, #CF_NR_rt_sigreturn
	svc	#0
	.size cf_sigreturn, . - cf_sigreturn

/* Process entry for the freestanding executor: an outermost frame, then C. */
	.globl _start
	.type _start, %function
_start:
	mov	x29, #0
	mov	x30, #0
	mov	x0, sp
	bl	cf_start_c
1:	b	1b
	.size _start, . - _start
