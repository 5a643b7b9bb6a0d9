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

/*
 * MTE (--granule 16): faults at any 16-byte tag granule, as the kernel's user copies
 * meet them with tagged user memory. The arenas are mapped PROT_MTE; a case tags the
 * granules from its fault boundary on with a tag its pointers do not carry, so the
 * routine's first access there takes a synchronous tag-check fault (SIGSEGV,
 * SEGV_MTESERR). The harness itself runs with PSTATE.TCO set (no tag checks); call.S
 * clears it for the routine only.
 */
#define CF_ARCH_HAS_MTE 1
#define CF_PROT_MTE 0x20

/* Tagged addresses and synchronous tag-check faults for this process; TCO on. 0 or -1. */
static inline int cf_mte_enable(void)
{
	/* PR_SET_TAGGED_ADDR_CTRL: PR_TAGGED_ADDR_ENABLE | PR_MTE_TCF_SYNC, tags 1-15 for IRG */
	if (cf_syscall6(CF_NR_prctl, 55, 1 | (1 << 1) | (0xfffe << 3), 0, 0, 0, 0) != 0)
		return -1;
	__asm__ volatile(".inst 0xd503419f" ::
				 : "memory"); /* msr tco, #1 (the harness builds as v8.0) */
	return 0;
}

/* Give the granules of [lo, hi) (16-byte aligned) the allocation tag `tag`. */
static inline void cf_mte_set_tags(uint8_t *lo, uint8_t *hi, unsigned tag)
{
	for (uintptr_t p = (uintptr_t)lo; p < (uintptr_t)hi; p += 16) {
		register uintptr_t x9 __asm__("x9") = p | ((uintptr_t)tag << 56);
		__asm__ volatile(".inst 0xd9200929" : : "r"(x9) : "memory"); /* stg x9, [x9] */
	}
}

/* Do the granules of [lo, hi) (16-byte aligned) have tag 1 in [one_lo, one_hi) and 0
 * elsewhere? 1 or 0. */
static inline int cf_mte_tags_are(uintptr_t lo, uintptr_t hi, uintptr_t one_lo, uintptr_t one_hi)
{
	for (uintptr_t p = lo; p < hi; p += 16) {
		register uintptr_t x9 __asm__("x9") = p;
		__asm__ volatile(".inst 0xd9600129" : "+r"(x9)); /* ldg x9, [x9] */
		if ((x9 >> 56 & 15) != (p >= one_lo && p < one_hi))
			return 0;
	}
	return 1;
}

#endif /* CF_ARCH_SYS_H */
