/* SPDX-License-Identifier: MIT */
/*
 * arch_frame.h (RISC-V) - the kernel's signal frame, as trap.c needs it: where the pc of
 * the interrupted code is (read to find the fault, written to resume at a fixup), and
 * how a handler is installed. Included by trap.c after struct k_stack.
 */
#ifndef CF_ARCH_FRAME_H
#define CF_ARCH_FRAME_H

/* struct ucontext: mcontext starts 16-aligned after a 1024-bit sigmask area;
 * its first words are pc, then x1..x31. */
struct k_ucontext {
	unsigned long flags;
	void *link;
	struct k_stack stack;
	uint64_t sigmask;
	uint8_t unused[1024 / 8 - sizeof(uint64_t)];
	unsigned long gregs[32] __attribute__((aligned(16))); /* [0] = pc, [i] = xi */
};
_Static_assert(__builtin_offsetof(struct k_ucontext, gregs) == (sizeof(long) == 8 ? 176 : 160),
	       "riscv ucontext layout");

#define CF_UC_PC(uc) ((uc)->gregs[0])

/* asm-generic sigaction: no sa_restorer (the kernel returns through the vDSO). */
struct k_sigaction {
	void (*handler)(int, void *, void *);
	unsigned long flags;
	uint64_t mask;
};

static inline int cf_sigaction(int sig, void (*fn)(int, void *, void *), unsigned long flags,
			       uint64_t mask)
{
	struct k_sigaction sa = {fn, flags, mask};
	return (int)cf_syscall6(CF_NR_rt_sigaction, sig, (long)&sa, 0, 8, 0, 0);
}

#endif /* CF_ARCH_FRAME_H */
