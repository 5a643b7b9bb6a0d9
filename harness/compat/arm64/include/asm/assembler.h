/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: what copy routines take from the kernel's asm/assembler.h. The
 * exception-table macros and USER() live in asm/asm-extable.h (where 5.16+ kernels
 * have them), the alternatives in asm/alternative-macros.h; both are included here, as
 * every vintage's copy files find them through this header.
 */
#ifndef CF_COMPAT_ASM_ASSEMBLER_H
#define CF_COMPAT_ASM_ASSEMBLER_H

#include <asm/alternative.h>
#include <asm/asm-extable.h>
#include <asm/cache.h>
#include <asm/sysreg.h>
#include <linux/linkage.h>

#ifdef __ASSEMBLER__
	/* n nops */
	.macro nops, num
	.rept \num
	nop
	.endr
	.endm

	/* Speculation barriers: no effect on what a copy computes. */
	.macro csdb
	hint #20
	.endm

	.macro mask_nospec64, idx, limit, tmp
	.endm
#endif

#endif
