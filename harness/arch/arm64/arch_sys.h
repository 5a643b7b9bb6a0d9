/* SPDX-License-Identifier: MIT */
/*
 * arch_sys.h (arm64) - the system call instruction and numbers (sys.h has the calls).
 * Register plan: x8 = number, x0-x5 = arguments, x0 = result.
 */
#ifndef CF_ARCH_SYS_H
#define CF_ARCH_SYS_H

#include "../generic_nr.h"

#define CF_ARCH_NAME "arm64"
/* call.h's uaccess_out is FPSR: the compat headers turn PAN off and on as FPSR.QC
 * (bit 27), a flag that only saturating SIMD arithmetic sets, which copy code never
 * does; the harness itself is built with -mgeneral-regs-only. */
#define CF_UACCESS_ON(word) (((word) >> 27) & 1u)

static inline long cf_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	register long x8 __asm__("x8") = nr;
	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5), "r"(x8)
			 : "memory");
	return x0;
}

#endif /* CF_ARCH_SYS_H */
