/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the 5.18+ relative exception table. Each entry is
 * { int insn; int fixup; short type; short data; } with both ints relative
 * to their own address; the harness reads exactly this.
 */
#ifndef CF_COMPAT_ASM_EXTABLE_H
#define CF_COMPAT_ASM_EXTABLE_H

#define EX_TYPE_NONE 0
#define EX_TYPE_FIXUP 1
#define EX_TYPE_BPF 2
#define EX_TYPE_UACCESS_ERR_ZERO 3
#define EX_TYPE_LOAD_UNALIGNED_ZEROPAD 4

#ifdef __ASSEMBLER__
#define __ASM_EXTABLE_RAW(insn, fixup, type, data) \
	.pushsection __ex_table, "a"; \
	.balign 4; \
	.long ((insn) - .); \
	.long ((fixup) - .); \
	.short (type); \
	.short (data); \
	.popsection;

	.macro _asm_extable, insn, fixup
	__ASM_EXTABLE_RAW(\insn, \fixup, EX_TYPE_FIXUP, 0)
	.endm

#define _ASM_EXTABLE(insn, fixup) __ASM_EXTABLE_RAW(insn, fixup, EX_TYPE_FIXUP, 0)
#endif

#endif
