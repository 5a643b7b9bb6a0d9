/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: arm64 exception-table entries in the layout of the kernel being
 * checked. The file cannot say which (the same USER() and user_ldst appear in 5.11 and
 * 6.x), so it is chosen with -D, as for our own routines (arch/arm64/include/cf_asm.h):
 *   -D CF_EXTABLE_ABS   absolute { .quad insn, fixup } pairs, through 4.5
 *   -D CF_EXTABLE_REL8  { .long insn - ., fixup - . }, 4.6 to 5.15
 *   (default)           { .long insn - ., fixup - .; .short type, data }, 5.16+
 * The harness reads all three and resumes at the fixup. That is all the types copy
 * routines use need: EX_TYPE_UACCESS_ERR_ZERO with both registers wzr writes nothing,
 * and EX_TYPE_UACCESS_CPY only adds which side (data 1: the store) may fault, which
 * the copy_{from,to}_user kinds already hold to.
 */
#ifndef CF_COMPAT_ASM_ASM_EXTABLE_H
#define CF_COMPAT_ASM_ASM_EXTABLE_H

/* Distinct numbers are all the harness needs; 5.16's values where it had the type. */
#define EX_TYPE_NONE 0
#define EX_TYPE_FIXUP 1
#define EX_TYPE_BPF 2
#define EX_TYPE_UACCESS_ERR_ZERO 3
#define EX_TYPE_KACCESS_ERR_ZERO 4
#define EX_TYPE_LOAD_UNALIGNED_ZEROPAD 5
#define EX_TYPE_UACCESS_CPY 6

/* data of the ERR_ZERO types: the register numbers set to -EFAULT and to 0. */
#define EX_DATA_REG_ERR_SHIFT 0
#define EX_DATA_REG_ZERO_SHIFT 5
#define CF_EX_DATA_WZR_WZR ((31 << EX_DATA_REG_ERR_SHIFT) | (31 << EX_DATA_REG_ZERO_SHIFT))
/* data of EX_TYPE_UACCESS_CPY: set when the user side is the destination. */
#define EX_DATA_UACCESS_WRITE 1

#ifdef __ASSEMBLER__
#if defined(CF_EXTABLE_ABS)
#define __ASM_EXTABLE_RAW(insn, fixup, type, data) \
	.pushsection __ex_table, "a"; \
	.align 3; \
	.quad (insn), (fixup); \
	.popsection;
#elif defined(CF_EXTABLE_REL8)
#define __ASM_EXTABLE_RAW(insn, fixup, type, data) \
	.pushsection __ex_table, "a"; \
	.align 3; \
	.long ((insn) - .), ((fixup) - .); \
	.popsection;
#else
#define __ASM_EXTABLE_RAW(insn, fixup, type, data) \
	.pushsection __ex_table, "a"; \
	.align 2; \
	.long ((insn) - .); \
	.long ((fixup) - .); \
	.short (type); \
	.short (data); \
	.popsection;
#endif

#define _ASM_EXTABLE(insn, fixup) __ASM_EXTABLE_RAW(insn, fixup, EX_TYPE_FIXUP, 0)
#define _ASM_EXTABLE_UACCESS(insn, fixup) \
	__ASM_EXTABLE_RAW(insn, fixup, EX_TYPE_UACCESS_ERR_ZERO, CF_EX_DATA_WZR_WZR)

	/* A fault on insn resumes at fixup. */
	.macro _asm_extable, insn, fixup
	__ASM_EXTABLE_RAW(\insn, \fixup, EX_TYPE_FIXUP, 0)
	.endm

	/* The same for a user access (5.16+: type UACCESS_ERR_ZERO, no register set). */
	.macro _asm_extable_uaccess, insn, fixup
	_ASM_EXTABLE_UACCESS(\insn, \fixup)
	.endm

	/* A MOPS copy instruction; uaccess_is_write says which side is the user's. */
	.macro _asm_extable_uaccess_cpy, insn, fixup, uaccess_is_write
	__ASM_EXTABLE_RAW(\insn, \fixup, EX_TYPE_UACCESS_CPY, \uaccess_is_write)
	.endm

	/* An entry only when a fixup is given (cache-maintenance helpers). */
	.macro _cond_extable, insn, fixup
	.ifnc \fixup,
	_asm_extable \insn, \fixup
	.endif
	.endm

	.macro _cond_uaccess_extable, insn, fixup
	.ifnc \fixup,
	_asm_extable_uaccess \insn, \fixup
	.endif
	.endm

/* USER(fixup, insn): one user access and its entry. */
#define USER(l, x...) \
9999:	x; \
	_asm_extable_uaccess 9999b, l

#define USER_CPY(l, uaccess_is_write, x...) \
9999:	x; \
	_asm_extable_uaccess_cpy 9999b, l, uaccess_is_write
#endif

#endif
