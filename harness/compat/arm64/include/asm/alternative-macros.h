/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: arm64 alternatives are chosen at build time. Without --alternative
 * (CF_ALTERNATIVE undefined) every alternative keeps its original code, as on a CPU
 * without the optional capabilities (no UAO, no MOPS); with --alternative every
 * replacement is taken, as on a CPU with all of them. PAN is there in both
 * (asm/asm-uaccess.h).
 *
 * The block forms (alternative_if_not CAP / alternative_if CAP, alternative_else,
 * alternative_endif, alternative_else_nop_endif) cannot open an .if in one gas macro and
 * close it in another, so the side not taken is assembled into a section that is never
 * loaded (.cf_alt_unused, not "a"): it must still assemble, as in the kernel.
 */
#ifndef CF_COMPAT_ASM_ALTERNATIVE_MACROS_H
#define CF_COMPAT_ASM_ALTERNATIVE_MACROS_H

#ifdef CF_ALTERNATIVE
#define CF_ALT_TAKEN 1
#else
#define CF_ALT_TAKEN 0
#endif

#ifdef __ASSEMBLER__
#include <linux/stringify.h>

/* ALTERNATIVE(old, new, cap[, config]): strings or bare instructions; a gas macro
 * strips the quotes. */
	.macro cf_alternative_emit text
	\text
	.endm
#if CF_ALT_TAKEN
#define ALTERNATIVE(oldinstr, newinstr, ...) cf_alternative_emit newinstr
#else
#define ALTERNATIVE(oldinstr, newinstr, ...) cf_alternative_emit oldinstr
#endif

	.macro cf_alt_unused_begin
	.pushsection .cf_alt_unused, "", %progbits
	.set .Lcf_alt_in_unused, 1
	.endm

	.macro cf_alt_unused_end
	.if .Lcf_alt_in_unused
	.popsection
	.set .Lcf_alt_in_unused, 0
	.endif
	.endm

	.set .Lcf_alt_in_unused, 0

	/* The block after it is the original code, alternative_else's the replacement. */
	.macro alternative_if_not cap
	.if CF_ALT_TAKEN
	cf_alt_unused_begin
	.endif
	.endm

	/* The block after it is the replacement, alternative_else's the original. */
	.macro alternative_if cap
	.if !CF_ALT_TAKEN
	cf_alt_unused_begin
	.endif
	.endm

	.macro alternative_else
	.if .Lcf_alt_in_unused
	cf_alt_unused_end
	.else
	cf_alt_unused_begin
	.endif
	.endm

	.macro alternative_endif
	cf_alt_unused_end
	.endm

	/* The other side is as many nops: nothing to run. */
	.macro alternative_else_nop_endif
	cf_alt_unused_end
	.endm

	.macro alternative_insn insn1, insn2, cap, enable = 1
	.if CF_ALT_TAKEN && \enable
	\insn2
	.else
	\insn1
	.endif
	.endm

	/* Callback alternatives patch in code computed at boot: the original stays. */
	.macro alternative_cb cb
	.endm
	.macro alternative_cb_end
	.endm
#endif

#endif
