/* SPDX-License-Identifier: MIT */
/*
 * call.S (ARM) - the checking trampoline (see harness/call.h), in ARM state.
 *
 * Register plan:
 *   entry  r0 = struct cf_call *c
 *   r12    c while loading the routine's arguments, then the routine's address; c again
 *          after the call
 *   r1-r3  scratch; r3 poisoned (an unmapped address) for the call
 *   r4-r11 the known values c->s_in[0..7] during the call
 * AAPCS has the routine keep r4-r11, sp and d8-d15 (s_in[8..11] are not used: copied
 * to s_out; d8-d15 are compared here, the result reported in the gp slot).
 * The routine may return with lr holding anything (ARM's copy template pops the return
 * address straight into pc): returning to cf_call_return is the check, so ra_out is
 * set to it here. There is no gp; tp is TPIDRURW (user read/write thread ID). The
 * user-access stand-in is FPSCR.QC.
 * Frame: r4-r11, ip, lr (ten words: sp stays 8-byte aligned).
 */
#include "call.h"
#include "arch_sys.h"

#define W(i) ((i) * 4)
/* r1 = the halves of dn XOR s_in[2k], s_in[2k+1], folded, when not 0 (called from d15
 * down: the lowest bad one wins). r0, r2, r3 scratch. */
#define D_CHANGED(dn, k)						\
	vmov r2, r3, dn; ldr r0, [r12, #W(CF_CALL_S_IN + 2 * (k))]; eor r2, r2, r0;	\
	ldr r0, [r12, #W(CF_CALL_S_IN + 2 * (k) + 1)]; eor r3, r3, r0; orrs r2, r2, r3;	\
	movne r1, r2

	.syntax unified
	.arm
	.fpu vfpv3-d16
	.text
	.balign 4
	.globl cf_call_begin
cf_call_begin:
	.globl cf_call_target
	.type cf_call_target, %function
cf_call_target:
	push	{r4-r11, ip, lr}
	mov	r12, r0
	str	sp, [r12, #W(CF_CALL_SAVED_SP)]
	mov	r1, #0
	str	r1, [r12, #W(CF_CALL_GP_IN)]
	mrc	p15, 0, r1, c13, c0, 2
	str	r1, [r12, #W(CF_CALL_TP_IN)]
	/* From here on a signal may abandon the call through cf_call_unwind. */
	ldr	r1, =cf_active_call
	str	r12, [r1]
	add	r1, r12, #W(CF_CALL_S_IN)
	ldm	r1, {r4-r11}
	vldm	r1, {d8-d11}		/* AAPCS keeps d8-d15 too: s_in[0..7] twice */
	vldm	r1, {d12-d15}
	vmrs	r1, fpscr
	bic	r1, r1, #(1 << 27)	/* the compat uaccess stand-in starts off */
	vmsr	fpscr, r1
	ldr	r0, [r12, #W(CF_CALL_ARGS + 0)]
	ldr	r1, [r12, #W(CF_CALL_ARGS + 1)]
	ldr	r2, [r12, #W(CF_CALL_ARGS + 2)]
	ldr	r12, [r12, #W(CF_CALL_FN)]
	ldr	r3, =0xbad00303		/* nothing maps it: a routine using r3 unset faults */
	blx	r12
	.globl cf_call_return
cf_call_return:
	/* Record what the routine left. */
	ldr	r12, =cf_active_call
	ldr	r12, [r12]
	str	r0, [r12, #W(CF_CALL_RET)]
	add	r1, r12, #W(CF_CALL_S_OUT)
	stm	r1, {r4-r11}
	add	r1, r12, #W(CF_CALL_S_IN + 8)	/* the unused slots: unchanged */
	ldm	r1, {r0, r2, r3, lr}
	add	r1, r12, #W(CF_CALL_S_OUT + 8)
	stm	r1, {r0, r2, r3, lr}
	str	sp, [r12, #W(CF_CALL_SP_OUT)]
	/* gp_out (ARM has no gp): how the lowest of d8-d15 that differs from what it was
	 * given differs (the XOR of its halves, folded), 0 when all came back. */
	mov	r1, #0
	D_CHANGED(d15, 3)
	D_CHANGED(d14, 2)
	D_CHANGED(d13, 1)
	D_CHANGED(d12, 0)
	D_CHANGED(d11, 3)
	D_CHANGED(d10, 2)
	D_CHANGED(d9, 1)
	D_CHANGED(d8, 0)
	str	r1, [r12, #W(CF_CALL_GP_OUT)]
	mrc	p15, 0, r1, c13, c0, 2
	str	r1, [r12, #W(CF_CALL_TP_OUT)]
	ldr	r1, =cf_call_return
	str	r1, [r12, #W(CF_CALL_RA_OUT)]
	vmrs	r1, fpscr
	str	r1, [r12, #W(CF_CALL_UACCESS_OUT)]
	mov	r1, #CF_CALL_RETURNED
	str	r1, [r12, #W(CF_CALL_STATUS)]
	.globl cf_call_unwind
cf_call_unwind:
	/* Entered with any register state (in ARM state: trap.c clears CPSR.T). */
	ldr	r1, =cf_active_call
	ldr	r12, [r1]
	mov	r2, #0
	str	r2, [r1]
	ldr	sp, [r12, #W(CF_CALL_SAVED_SP)]
	ldr	r2, [r12, #W(CF_CALL_TP_IN)]
	mcr	p15, 0, r2, c13, c0, 2
	pop	{r4-r11, ip, lr}
	bx	lr
	.ltorg
	.size cf_call_target, . - cf_call_target
	.globl cf_call_end
cf_call_end:

/* sa_restorer of every handler (arch_frame.h). */
	.globl cf_sigreturn
	.type cf_sigreturn, %function
cf_sigreturn:
	mov	r7, #CF_NR_rt_sigreturn
	svc	#0
	.size cf_sigreturn, . - cf_sigreturn

/* Process entry for the freestanding executor: an outermost frame, then C. */
	.globl _start
	.type _start, %function
_start:
	mov	fp, #0
	mov	lr, #0
	mov	r0, sp
	bic	sp, sp, #7
	bl	cf_start_c
1:	b	1b
	.size _start, . - _start

	.section .note.GNU-stack, "", %progbits
