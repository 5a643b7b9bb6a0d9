/* SPDX-License-Identifier: MIT */
/*
 * call.S (RISC-V) - the checking trampoline (see harness/call.h).
 *
 * The user-access stand-in is fflags: the compat headers switch SR_SUM on fflags.NX (bit 0).
 *
 * Register plan:
 *   entry  a0 = struct cf_call *c
 *   t1     c while loading the routine's arguments
 *   t0     routine address, then c again after the call
 *   t1-t6, a3-a7  poisoned (unmapped addresses) for the call
 *   s0-s11 the known values c->s_in[] during the call
 * Frame: 16 words: ra, s0-s11 (keeps sp 16-byte aligned on RV32 and RV64).
 * Relaxation is off: gp-relative addressing would break if a routine
 * clobbered gp, and this code must survive exactly that.
 */
#include "call.h"

#if __riscv_xlen == 64
#define SZREG 8
#define REG_L ld
#define REG_S sd
#else
#define SZREG 4
#define REG_L lw
#define REG_S sw
#endif
#define W(i) ((i) * SZREG)
#if __riscv_xlen == 64
#define POISON(r) (0x7bad00000000 + (r))
#else
#define POISON(r) (0xbad00000 + (r))
#endif
#define FRAME (16 * SZREG)

	.option norelax
	.text
	.balign 4
	.globl cf_call_begin
cf_call_begin:
	.globl cf_call_target
	.type cf_call_target, @function
cf_call_target:
	addi	sp, sp, -FRAME
	REG_S	ra, W(0)(sp)
	REG_S	s0, W(1)(sp)
	REG_S	s1, W(2)(sp)
	REG_S	s2, W(3)(sp)
	REG_S	s3, W(4)(sp)
	REG_S	s4, W(5)(sp)
	REG_S	s5, W(6)(sp)
	REG_S	s6, W(7)(sp)
	REG_S	s7, W(8)(sp)
	REG_S	s8, W(9)(sp)
	REG_S	s9, W(10)(sp)
	REG_S	s10, W(11)(sp)
	REG_S	s11, W(12)(sp)
	REG_S	sp, W(CF_CALL_SAVED_SP)(a0)
	REG_S	gp, W(CF_CALL_GP_IN)(a0)
	REG_S	tp, W(CF_CALL_TP_IN)(a0)
	mv	t1, a0
	/* From here on a signal may abandon the call through cf_call_unwind. */
	la	t0, cf_active_call
	REG_S	t1, 0(t0)
	REG_L	s0, W(CF_CALL_S_IN + 0)(t1)
	REG_L	s1, W(CF_CALL_S_IN + 1)(t1)
	REG_L	s2, W(CF_CALL_S_IN + 2)(t1)
	REG_L	s3, W(CF_CALL_S_IN + 3)(t1)
	REG_L	s4, W(CF_CALL_S_IN + 4)(t1)
	REG_L	s5, W(CF_CALL_S_IN + 5)(t1)
	REG_L	s6, W(CF_CALL_S_IN + 6)(t1)
	REG_L	s7, W(CF_CALL_S_IN + 7)(t1)
	REG_L	s8, W(CF_CALL_S_IN + 8)(t1)
	REG_L	s9, W(CF_CALL_S_IN + 9)(t1)
	REG_L	s10, W(CF_CALL_S_IN + 10)(t1)
	REG_L	s11, W(CF_CALL_S_IN + 11)(t1)
	REG_L	t0, W(CF_CALL_FN)(t1)
	REG_L	a0, W(CF_CALL_ARGS + 0)(t1)
	REG_L	a1, W(CF_CALL_ARGS + 1)(t1)
	REG_L	a2, W(CF_CALL_ARGS + 2)(t1)
	csrw	fflags, zero		/* the compat SUM bit starts off */
	/*
	 * The other argument and temporary registers hold addresses nothing maps, each naming
	 * its register (t1: ...0606): a routine that uses one it never set (t1 held c, the
	 * others whatever the harness left) faults there, as it would oops in the kernel,
	 * instead of reaching the harness's memory.
	 */
	li	t1, POISON(0x606)
	li	t2, POISON(0x707)
	li	a3, POISON(0xd0d)
	li	a4, POISON(0xe0e)
	li	a5, POISON(0xf0f)
	li	a6, POISON(0x1010)
	li	a7, POISON(0x1111)
	li	t3, POISON(0x1c1c)
	li	t4, POISON(0x1d1d)
	li	t5, POISON(0x1e1e)
	li	t6, POISON(0x1f1f)
	jalr	ra, 0(t0)
	.globl cf_call_return
cf_call_return:
	/* Record what the routine left; a correct one returned here via ra. */
	la	t0, cf_active_call
	REG_L	t0, 0(t0)
	REG_S	a0, W(CF_CALL_RET)(t0)
	REG_S	s0, W(CF_CALL_S_OUT + 0)(t0)
	REG_S	s1, W(CF_CALL_S_OUT + 1)(t0)
	REG_S	s2, W(CF_CALL_S_OUT + 2)(t0)
	REG_S	s3, W(CF_CALL_S_OUT + 3)(t0)
	REG_S	s4, W(CF_CALL_S_OUT + 4)(t0)
	REG_S	s5, W(CF_CALL_S_OUT + 5)(t0)
	REG_S	s6, W(CF_CALL_S_OUT + 6)(t0)
	REG_S	s7, W(CF_CALL_S_OUT + 7)(t0)
	REG_S	s8, W(CF_CALL_S_OUT + 8)(t0)
	REG_S	s9, W(CF_CALL_S_OUT + 9)(t0)
	REG_S	s10, W(CF_CALL_S_OUT + 10)(t0)
	REG_S	s11, W(CF_CALL_S_OUT + 11)(t0)
	REG_S	sp, W(CF_CALL_SP_OUT)(t0)
	REG_S	gp, W(CF_CALL_GP_OUT)(t0)
	REG_S	tp, W(CF_CALL_TP_OUT)(t0)
	REG_S	ra, W(CF_CALL_RA_OUT)(t0)
	csrr	t1, fflags
	REG_S	t1, W(CF_CALL_UACCESS_OUT)(t0)
	li	t1, CF_CALL_RETURNED
	REG_S	t1, W(CF_CALL_STATUS)(t0)
	.globl cf_call_unwind
cf_call_unwind:
	/* Entered with any register state: rebuild ours from *cf_active_call. */
	la	t0, cf_active_call
	REG_L	t1, 0(t0)
	REG_S	zero, 0(t0)
	REG_L	sp, W(CF_CALL_SAVED_SP)(t1)
	REG_L	gp, W(CF_CALL_GP_IN)(t1)
	REG_L	tp, W(CF_CALL_TP_IN)(t1)
	REG_L	ra, W(0)(sp)
	REG_L	s0, W(1)(sp)
	REG_L	s1, W(2)(sp)
	REG_L	s2, W(3)(sp)
	REG_L	s3, W(4)(sp)
	REG_L	s4, W(5)(sp)
	REG_L	s5, W(6)(sp)
	REG_L	s6, W(7)(sp)
	REG_L	s7, W(8)(sp)
	REG_L	s8, W(9)(sp)
	REG_L	s9, W(10)(sp)
	REG_L	s10, W(11)(sp)
	REG_L	s11, W(12)(sp)
	addi	sp, sp, FRAME
	ret
	.size cf_call_target, . - cf_call_target
	.globl cf_call_end
cf_call_end:

/* Process entry for the freestanding executor: gp, then C. */
	.globl _start
	.type _start, @function
_start:
	la	gp, __global_pointer$
	mv	a0, sp
	andi	sp, sp, -16
	call	cf_start_c
1:	j	1b
	.size _start, . - _start
