/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the user-access macros of arm64 copy routines, every vintage's.
 *
 * Switching user access on and off stays visible (asm/sysreg.h: FPSR.QC stands for
 * "PAN cleared"). The CPU modelled has PAN: uaccess_enable/uaccess_disable always
 * switch. Without --alternative it has no UAO, so the *_not_uao pair switches too, as
 * on such CPUs; with --alternative (UAO) that pair does nothing, as in the kernel. The
 * uaccess_ttbr0_* pair only switches with -D CONFIG_ARM64_SW_TTBR0_PAN, as only then
 * do kernels define it non-empty.
 *
 * Unprivileged ldtr/sttr run at EL0 as they are. The UAO-era macros (4.9-5.10) keep
 * the plain post-indexed access unless --alternative (a CPU with UAO: ldtr/sttr).
 */
#ifndef CF_COMPAT_ASM_ASM_UACCESS_H
#define CF_COMPAT_ASM_ASM_UACCESS_H

#include <asm/assembler.h>

#ifdef __ASSEMBLER__
#ifdef CONFIG_ARM64_SW_TTBR0_PAN
	.macro uaccess_ttbr0_enable, tmp1, tmp2, tmp3
	cf_uaccess_on \tmp1
	.endm
	.macro uaccess_ttbr0_disable, tmp1, tmp2
	cf_uaccess_off \tmp1
	.endm
#else
	.macro uaccess_ttbr0_enable, tmp1, tmp2, tmp3
	.endm
	.macro uaccess_ttbr0_disable, tmp1, tmp2
	.endm
#endif

	/* 4.9-5.10: around the body of copy and clear routines (4.x: fewer temporaries). */
	.macro uaccess_enable_not_uao, tmp1, tmp2, tmp3
	uaccess_ttbr0_enable \tmp1, \tmp2, \tmp3
	.if !CF_ALT_TAKEN
	cf_uaccess_on \tmp1
	.endif
	.endm
	.macro uaccess_disable_not_uao, tmp1, tmp2
	uaccess_ttbr0_disable \tmp1, \tmp2
	.if !CF_ALT_TAKEN
	cf_uaccess_off \tmp1
	.endif
	.endm
	.macro uaccess_enable, tmp1, tmp2, tmp3
	uaccess_ttbr0_enable \tmp1, \tmp2, \tmp3
	cf_uaccess_on \tmp1
	.endm
	.macro uaccess_disable, tmp1, tmp2
	uaccess_ttbr0_disable \tmp1, \tmp2
	cf_uaccess_off \tmp1
	.endm

	/* 4.9-5.10: one access, post-incremented; a fault on it goes to l. */
	.macro uao_user_alternative, l, inst, alt_inst, reg, addr, post_inc
	.if CF_ALT_TAKEN
8888:	\alt_inst \reg, [\addr]
	add \addr, \addr, \post_inc
	.else
8888:	\inst \reg, [\addr], \post_inc
	nop
	.endif
	_asm_extable 8888b, \l
	.endm

	/*
	 * Pairs. The kernel also gives the original side's first nop an entry (it is the
	 * second ldtr once patched); an entry on a nop means nothing, so only the side
	 * built gets entries, each on an access.
	 */
	.macro uao_ldp, l, reg1, reg2, addr, post_inc
	.if CF_ALT_TAKEN
8888:	ldtr \reg1, [\addr]
8889:	ldtr \reg2, [\addr, #8]
	add \addr, \addr, \post_inc
	_asm_extable 8889b, \l
	.else
8888:	ldp \reg1, \reg2, [\addr], \post_inc
	nop
	nop
	.endif
	_asm_extable 8888b, \l
	.endm

	.macro uao_stp, l, reg1, reg2, addr, post_inc
	.if CF_ALT_TAKEN
8888:	sttr \reg1, [\addr]
8889:	sttr \reg2, [\addr, #8]
	add \addr, \addr, \post_inc
	_asm_extable 8889b, \l
	.else
8888:	stp \reg1, \reg2, [\addr], \post_inc
	nop
	nop
	.endif
	_asm_extable 8888b, \l
	.endm

	/* 5.11+: unprivileged accesses have no post-index or pair forms. */
	.macro user_ldp, l, reg1, reg2, addr, post_inc
8888:	ldtr \reg1, [\addr]
8889:	ldtr \reg2, [\addr, #8]
	add \addr, \addr, \post_inc
	_asm_extable_uaccess 8888b, \l
	_asm_extable_uaccess 8889b, \l
	.endm

	.macro user_stp, l, reg1, reg2, addr, post_inc
8888:	sttr \reg1, [\addr]
8889:	sttr \reg2, [\addr, #8]
	add \addr, \addr, \post_inc
	_asm_extable_uaccess 8888b, \l
	_asm_extable_uaccess 8889b, \l
	.endm

	.macro user_ldst, l, inst, reg, addr, post_inc
8888:	\inst \reg, [\addr]
	add \addr, \addr, \post_inc
	_asm_extable_uaccess 8888b, \l
	.endm
#endif

#endif
