/* SPDX-License-Identifier: MIT */
/*
 * arch_frame.h (ARM) - the kernel's signal frame, as trap.c needs it: where the pc of
 * the interrupted code is (read to find the fault, written to resume at a fixup), and
 * how a handler is installed. Included by trap.c after struct k_stack.
 */
#ifndef CF_ARCH_FRAME_H
#define CF_ARCH_FRAME_H

/* struct ucontext: flags, link, the stack, then struct sigcontext: trap_no, error_code,
 * oldmask, r0-r10, fp, ip, sp, lr, pc, cpsr, fault_address. */
struct k_ucontext {
	unsigned long flags;
	void *link;
	struct k_stack stack;
	unsigned long trap_no, error_code, oldmask;
	unsigned long regs[16]; /* r0-r15: [13] sp, [14] lr, [15] pc */
	unsigned long cpsr, fault_address;
};
_Static_assert(__builtin_offsetof(struct k_ucontext, regs[15]) == 92, "arm ucontext layout");

#define CF_UC_PC(uc) ((uc)->regs[15])
/* Abandoning a call resumes the trampoline, ARM code: out of Thumb state (CPSR.T). */
#define CF_UC_TO_HARNESS(uc) ((uc)->cpsr &= ~(1ul << 5))

#include "../sa_restorer.h"

#endif /* CF_ARCH_FRAME_H */
