/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: PAN (privileged access never) cannot be switched at EL0. Clearing
 * it (user access on) is mapped onto setting FPSR.QC, bit 27, and setting it onto
 * clearing QC, as arch/arm64/include/cf_asm.h does for our own routines: the harness
 * clears QC before each call and reports uaccess-left-enabled when a routine returns
 * with it set (harness/arch/arm64/arch_sys.h). Only saturating SIMD arithmetic sets QC
 * otherwise, which copy code does not use.
 */
#ifndef CF_COMPAT_ASM_SYSREG_H
#define CF_COMPAT_ASM_SYSREG_H

#define CF_UACCESS_QC_BIT 27

#ifdef __ASSEMBLER__
	/* User access on (PAN cleared) / off (PAN set), with a scratch register. */
	.macro cf_uaccess_on, tmp
	mrs \tmp, fpsr
	orr \tmp, \tmp, #(1 << CF_UACCESS_QC_BIT)
	msr fpsr, \tmp
	.endm

	.macro cf_uaccess_off, tmp
	mrs \tmp, fpsr
	bic \tmp, \tmp, #(1 << CF_UACCESS_QC_BIT)
	msr fpsr, \tmp
	.endm

	/* `msr pan, #imm` takes no register: x16 is borrowed and put back from the stack. */
	.macro cf_set_pstate_pan, pan
	str x16, [sp, #-16]!
	.if \pan
	cf_uaccess_off x16
	.else
	cf_uaccess_on x16
	.endif
	ldr x16, [sp], #16
	.endm

/* SET_PSTATE_PAN(1): user access off; SET_PSTATE_PAN(0): on. One statement (for
 * ALTERNATIVE(..., __stringify(SET_PSTATE_PAN(0)), ...)). UAO only changes which
 * instructions are unprivileged, which the alternatives already decide: nothing here. */
#define SET_PSTATE_PAN(x) cf_set_pstate_pan x
#define SET_PSTATE_UAO(x)
#endif

#endif
