/* SPDX-License-Identifier: MIT
 *
 * cf_asm.h - assembler helpers for copyfuzz's 32-bit ARM routines (ARM state).
 *
 * Include from a .S file (it is run through the C preprocessor). ARM gas takes ';' as a
 * statement separator, so each macro expands to one line.
 *
 * Knobs, defined before the #include:
 *   CF_NO_EXTABLE   UA() emits only the instruction: for template instances that must
 *                   not carry fixups (memcpy).
 * ARM kernels have only ever had absolute { insn, fixup } table entries.
 */
#ifndef CF_ASM_H
#define CF_ASM_H

#if !defined(__ASSEMBLER__)
#error "cf_asm.h is for assembler sources (.S) only"
#endif

	.syntax unified
	.arm

/* ---- symbols ---- */
#define CF_FUNC_START(name)						\
	.globl name; .type name, %function; .balign 4; name:
#define CF_FUNC_END(name)						\
	.size name, . - name

/* ---- exception table ---- */
#define CF_EXTABLE(insn, fixup)						\
	.pushsection __ex_table, "a"; .balign 4; .long (insn), (fixup); .popsection

#include "../../cf_ua.h" /* UA(fixup, insn...) */

/*
 * User access on and off. The kernel switches the user domain's access (DACR, a
 * privileged register) around its user accesses; the harness's stand-in is FPSCR.QC
 * (bit 27; harness/arch/arm/arch_sys.h), cleared before the call and checked after it:
 * a routine that returns with user access still on is a finding (uaccess-left-enabled).
 */
#define CF_UACCESS_ENABLE(tmp)						\
	vmrs tmp, fpscr; orr tmp, tmp, #(1 << 27); vmsr fpscr, tmp
#define CF_UACCESS_DISABLE(tmp)						\
	vmrs tmp, fpscr; bic tmp, tmp, #(1 << 27); vmsr fpscr, tmp

#endif /* CF_ASM_H */
