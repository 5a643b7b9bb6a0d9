/* SPDX-License-Identifier: MIT
 *
 * cf_asm.h - assembler helpers for copyfuzz's RISC-V routines.
 *
 * Include from a .S file (it is run through the C preprocessor). Everything
 * here is XLEN-generic so the same routine assembles for RV64 and RV32.
 *
 * Knobs, defined before the #include:
 *   CF_EXTABLE_ABS  exception-table entries in the old absolute format
 *                   { insn, fixup } as XLEN-sized pointers (through ~5.17);
 *                   default is the 5.18+ relative format (see CF_EXTABLE).
 *   CF_NO_EXTABLE   UA() emits only the instruction: for template instances
 *                   that must not carry fixups (memcpy).
 *
 * RISC-V gas takes ';' as a statement separator, so each macro expands to
 * one line of ';'-separated statements.
 */
#ifndef CF_ASM_H
#define CF_ASM_H

#if !defined(__ASSEMBLER__)
#error "cf_asm.h is for assembler sources (.S) only"
#endif

/* ---- register width ---- */
#if __riscv_xlen == 64
#define SZREG	8		/* bytes in an integer register */
#define LGREG	3		/* log2(SZREG) */
#define REG_L	ld		/* full-width load */
#define REG_S	sd		/* full-width store */
#define CF_PTR	.dword		/* a pointer-sized datum */
#elif __riscv_xlen == 32
#define SZREG	4
#define LGREG	2
#define REG_L	lw
#define REG_S	sw
#define CF_PTR	.word
#else
#error "unsupported __riscv_xlen"
#endif

/* ---- symbols ---- */
/* A global function entry, 4-byte aligned (the harness may place it anywhere). */
#define CF_FUNC_START(name)						\
	.globl name; .type name, @function; .balign 4; name:

/* Ends the function started by CF_FUNC_START: gives the symbol its size. */
#define CF_FUNC_END(name)						\
	.size name, . - name

/*
 * A second global name for the same code (e.g. copy_from_user for
 * copy_to_user). Use after CF_FUNC_END(name) so the size is known.
 */
#define CF_FUNC_ALIAS(alias, name)					\
	.globl alias; .type alias, @function; .set alias, name;		\
	.size alias, . - name

/* ---- exception table ---- */
#define CF_EX_TYPE_FIXUP 1	/* EX_TYPE_FIXUP: resume at the fixup address */

#ifdef CF_EXTABLE_ABS
/* Old format: two absolute XLEN-wide pointers, aligned to pointer size. */
#define CF_EXTABLE(insn, fixup)						\
	.pushsection __ex_table, "a";					\
	.balign SZREG;							\
	CF_PTR (insn), (fixup);						\
	.popsection
#else
/*
 * 5.18+ format: struct { int insn; int fixup; short type; short data; },
 * each int an offset from the address of that int itself ('.' moves on
 * by 4 between the two .long directives, which is exactly that).
 */
#define CF_EXTABLE(insn, fixup)						\
	.pushsection __ex_table, "a";					\
	.balign 4;							\
	.long (insn) - .;						\
	.long (fixup) - .;						\
	.short CF_EX_TYPE_FIXUP;					\
	.short 0;							\
	.popsection
#endif

#include "../../cf_ua.h" /* UA(fixup, insn...) */

#endif /* CF_ASM_H */
