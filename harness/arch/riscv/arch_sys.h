/* SPDX-License-Identifier: MIT */
/*
 * arch_sys.h (RISC-V) - the system call instruction and numbers (sys.h has the calls).
 * Register plan: a7 = number, a0-a5 = arguments, a0 = result.
 */
#ifndef CF_ARCH_SYS_H
#define CF_ARCH_SYS_H

#include "../generic_nr.h"

#define CF_ARCH_NAME "riscv"
/* call.h's uaccess_out is fflags: the compat SR_SUM bit is fflags.NX. */
#define CF_UACCESS_ON(word) ((word)&1u)

static inline long cf_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long a0 __asm__("a0") = a;
	register long a1 __asm__("a1") = b;
	register long a2 __asm__("a2") = c;
	register long a3 __asm__("a3") = d;
	register long a4 __asm__("a4") = e;
	register long a5 __asm__("a5") = f;
	register long a7 __asm__("a7") = nr;
	__asm__ volatile("ecall"
			 : "+r"(a0)
			 : "r"(a1), "r"(a2), "r"(a3), "r"(a4), "r"(a5), "r"(a7)
			 : "memory");
	return a0;
}

#include "../no_mte.h"

#endif /* CF_ARCH_SYS_H */
