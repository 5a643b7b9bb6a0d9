/* SPDX-License-Identifier: MIT */
/*
 * arch_frame.h (arm64) - the kernel's signal frame, as trap.c needs it: where the pc of
 * the interrupted code is (read to find the fault, written to resume at a fixup), and
 * how a handler is installed. Included by trap.c after struct k_stack.
 */
#ifndef CF_ARCH_FRAME_H
#define CF_ARCH_FRAME_H

/* struct ucontext: the sigcontext starts 16-aligned after a 1024-bit sigmask area:
 * fault_address, x0-x30, sp, pc, pstate (then the FP/SIMD records, not needed here). */
struct k_ucontext {
	unsigned long flags;
	void *link;
	struct k_stack stack;
	uint64_t sigmask;
	uint8_t unused[1024 / 8 - sizeof(uint64_t)];
	struct {
		uint64_t fault_address;
		uint64_t regs[31];
		uint64_t sp, pc, pstate;
	} mc __attribute__((aligned(16)));
};
_Static_assert(__builtin_offsetof(struct k_ucontext, mc.pc) == 440, "arm64 ucontext layout");

#define CF_UC_PC(uc) ((uc)->mc.pc)

#include "../sa_restorer.h"

#endif /* CF_ARCH_FRAME_H */
