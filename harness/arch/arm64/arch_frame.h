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

/* arm64's sigaction has sa_restorer: ours (call.S) makes rt_sigreturn itself, so a
 * handler returns the same way natively and under QEMU, vDSO or not. */
struct k_sigaction {
	void (*handler)(int, void *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};
#define K_SA_RESTORER 0x04000000ul
void cf_sigreturn(void);

static inline int cf_sigaction(int sig, void (*fn)(int, void *, void *), unsigned long flags,
			       uint64_t mask)
{
	struct k_sigaction sa = {fn, flags | K_SA_RESTORER, cf_sigreturn, mask};
	return (int)cf_syscall6(CF_NR_rt_sigaction, sig, (long)&sa, 0, 8, 0, 0);
}

#endif /* CF_ARCH_FRAME_H */
