/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: switching user access, as ARM kernels with -D CONFIG_CPU_SW_DOMAIN_PAN
 * do it (4.3+; these macros moved from asm/assembler.h here in 5.9).
 *
 * The kernel writes the domain access control register (DACR, `mcr p15, 0, Rt, c3, c0,
 * 0`) to give the user domain access or take it away. That is privileged; what is modelled
 * instead is one bit: FPSCR.QC (bit 27), set for "user access on" and cleared for "off".
 * The harness clears QC before each call and reports uaccess-left-enabled when a routine
 * returns with it set (harness/arch/arm/arch_sys.h); only saturating SIMD arithmetic sets
 * QC otherwise, which copy code does not use. Without CONFIG_CPU_SW_DOMAIN_PAN the macros
 * are empty, as in the kernel. The barrier after a DACR write (instr_sync) is left out:
 * FPSCR needs none.
 */
#ifndef CF_COMPAT_ASM_UACCESS_ASM_H
#define CF_COMPAT_ASM_UACCESS_ASM_H

#define CF_UACCESS_QC_BIT 27

#ifdef __ASSEMBLER__
	/* QC on / off through a scratch register. */
	.macro cf_uaccess_on, tmp
	vmrs \tmp, fpscr
	orr \tmp, \tmp, #(1 << CF_UACCESS_QC_BIT)
	vmsr fpscr, \tmp
	.endm

	.macro cf_uaccess_off, tmp
	vmrs \tmp, fpscr
	bic \tmp, \tmp, #(1 << CF_UACCESS_QC_BIT)
	vmsr fpscr, \tmp
	.endm

	/* User access on (the kernel: DACR with the user domain as client). */
	.macro uaccess_enable, tmp, isb = 1
#ifdef CONFIG_CPU_SW_DOMAIN_PAN
	cf_uaccess_on \tmp
#endif
	.endm

	/* User access off (the kernel: DACR with the user domain as no access). */
	.macro uaccess_disable, tmp, isb = 1
#ifdef CONFIG_CPU_SW_DOMAIN_PAN
	cf_uaccess_off \tmp
#endif
	.endm

	/*
	 * The pair C code wraps around arm_copy_*_user (asm/uaccess.h's
	 * uaccess_save_and_enable() and uaccess_restore()), for assembly that does the same:
	 * tmp receives the state before (FPSCR here, DACR in the kernel), then access is on.
	 */
	.macro uaccess_save_and_enable, tmp
#ifdef CONFIG_CPU_SW_DOMAIN_PAN
	vmrs \tmp, fpscr
	cf_uaccess_on \tmp
#endif
	.endm

	/*
	 * The kernel's exception entry saves DACR in its frame (uaccess_save) and reloads it on
	 * the way out (uaccess_restore, into r0). Every call here starts with access off, so
	 * saving records nothing and restoring turns access off; ip is borrowed through the
	 * stack, as r0 holds the routine's result.
	 */
	.macro uaccess_save, tmp
	.endm

	.macro uaccess_restore
#ifdef CONFIG_CPU_SW_DOMAIN_PAN
	str ip, [sp, #-8]!
	cf_uaccess_off ip
	ldr ip, [sp], #8
#endif
	.endm
#endif

#endif
