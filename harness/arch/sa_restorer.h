/* SPDX-License-Identifier: MIT */
/*
 * sa_restorer.h - installing a handler where the kernel's sigaction has sa_restorer
 * (arm64, ARM; their arch_frame.h includes it): ours, cf_sigreturn in call.S, makes
 * rt_sigreturn itself, so a handler returns the same way natively and under QEMU,
 * vDSO or not.
 */
#ifndef CF_SA_RESTORER_H
#define CF_SA_RESTORER_H

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

#endif /* CF_SA_RESTORER_H */
