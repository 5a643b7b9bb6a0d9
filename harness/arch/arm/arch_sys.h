/* SPDX-License-Identifier: MIT */
/*
 * arch_sys.h (ARM, EABI) - the system call instruction and numbers (sys.h has the calls).
 * Register plan: r7 = number, r0-r5 = arguments, r0 = result. The harness is built in
 * ARM state, where r7 is not the frame pointer.
 */
#ifndef CF_ARCH_SYS_H
#define CF_ARCH_SYS_H

#define CF_NR_read 3
#define CF_NR_write 4
#define CF_NR_close 6
#define CF_NR_setrlimit 75
#define CF_NR_munmap 91
#define CF_NR_setitimer 104
#define CF_NR_mprotect 125
#define CF_NR_prctl 172
#define CF_NR_rt_sigreturn 173
#define CF_NR_rt_sigaction 174
#define CF_NR_sigaltstack 186
#define CF_NR_mmap 192 /* mmap2: the offset in 4096-byte units; the harness maps at 0 */
#define CF_NR_exit_group 248
#define CF_NR_futex 422 /* futex_time64: a 64-bit timespec, as sys.h passes it */

#define CF_ARCH_NAME "arm"
/* call.h's uaccess_out is FPSCR: the compat headers turn domain access for user memory on
 * and off as FPSCR.QC (bit 27), a flag only saturating SIMD arithmetic sets. */
#define CF_UACCESS_ON(word) (((word) >> 27) & 1u)

#ifndef __ASSEMBLER__
static inline long cf_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r0 __asm__("r0") = a;
	register long r1 __asm__("r1") = b;
	register long r2 __asm__("r2") = c;
	register long r3 __asm__("r3") = d;
	register long r4 __asm__("r4") = e;
	register long r5 __asm__("r5") = f;
	register long r7 __asm__("r7") = nr;
	__asm__ volatile("svc #0"
			 : "+r"(r0)
			 : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r7)
			 : "memory");
	return r0;
}

#include "../no_mte.h"
#endif

#endif /* CF_ARCH_SYS_H */
