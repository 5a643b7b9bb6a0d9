/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: ARM state, unified syntax, as a kernel without CONFIG_THUMB2_KERNEL.
 * Unified syntax (what 5.x+ kernels set for every file) still takes the pre-UAL spellings
 * of older files (ldrneb, sbcnes, strnebt), with a deprecation warning; `it` is checked
 * and emits nothing in ARM state. -D CONFIG_THUMB2_KERNEL is not supported: the harness
 * calls routines in ARM state.
 */
#ifndef CF_COMPAT_ASM_UNIFIED_H
#define CF_COMPAT_ASM_UNIFIED_H

#ifdef CONFIG_THUMB2_KERNEL
#error "copyfuzz builds ARM routines in ARM state: CONFIG_THUMB2_KERNEL is not supported"
#endif

#ifdef __ASSEMBLER__
	.syntax unified
	.arm

/* ARM(x): x only in ARM state; THUMB(x): only in Thumb-2 kernels (never here). */
#define ARM(x...) x
#define THUMB(x...)
/* W(insn): the wide (32-bit) encoding; every ARM-state instruction is. */
#define W(instr) instr
/* A code label's address as a branch target (Thumb-2 would set bit 0). */
#define BSYM(sym) sym
#endif

#endif
