/* SPDX-License-Identifier: MIT
 *
 * cf_asm.h - assembler helpers for copyfuzz's arm64 routines.
 *
 * Include from a .S file (it is run through the C preprocessor). AArch64 gas takes
 * ';' as a statement separator, so each macro expands to one line.
 *
 * Knobs, defined before the #include:
 *   CF_EXTABLE_ABS   exception-table entries as absolute .quad pairs { insn, fixup }
 *                    (through 4.5)
 *   CF_EXTABLE_REL8  relative pairs { int insn, fixup; } (4.6 to 5.15)
 *                    default: the 5.16+ entries { int insn, fixup; short type, data; }
 *   CF_NO_EXTABLE    UA() emits only the instruction: for template instances that
 *                    must not carry fixups (memcpy).
 */
#ifndef CF_ASM_H
#define CF_ASM_H

#if !defined(__ASSEMBLER__)
#error "cf_asm.h is for assembler sources (.S) only"
#endif

/* ---- symbols ---- */
#define CF_FUNC_START(name)						\
	.globl name; .type name, %function; .balign 4; name:
#define CF_FUNC_END(name)						\
	.size name, . - name

/* ---- exception table ---- */
#define CF_EX_TYPE_FIXUP 1	/* 5.16's EX_TYPE_FIXUP: resume at the fixup address */
#if defined(CF_EXTABLE_ABS)
#define CF_EXTABLE(insn, fixup)						\
	.pushsection __ex_table, "a"; .balign 8;			\
	.quad (insn), (fixup); .popsection
#elif defined(CF_EXTABLE_REL8)
#define CF_EXTABLE(insn, fixup)						\
	.pushsection __ex_table, "a"; .balign 4;			\
	.long (insn) - .; .long (fixup) - .; .popsection
#else
#define CF_EXTABLE(insn, fixup)						\
	.pushsection __ex_table, "a"; .balign 4;			\
	.long (insn) - .; .long (fixup) - .;				\
	.short CF_EX_TYPE_FIXUP; .short 0; .popsection
#endif

#include "../../cf_ua.h" /* UA(fixup, insn...) */

/*
 * User access on and off. PAN is privileged, so the harness's stand-in for "PAN
 * cleared" is FPSR.QC (bit 27; harness/arch/arm64/arch_sys.h), which the harness
 * clears before the call and checks after it: a routine that returns with user
 * access still on is a finding (uaccess-left-enabled). As the 4.x-5.x routines did
 * around their body (uaccess_enable_not_uao / uaccess_disable_not_uao).
 */
#define CF_UACCESS_ENABLE(tmp)						\
	mrs tmp, fpsr; orr tmp, tmp, #(1 << 27); msr fpsr, tmp
#define CF_UACCESS_DISABLE(tmp)						\
	mrs tmp, fpsr; bic tmp, tmp, #(1 << 27); msr fpsr, tmp

#endif /* CF_ASM_H */
