/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: ALTERNATIVE(old, new, vendor, ext, config) picks one path
 * at build time: the original unless CF_ALTERNATIVE is defined (copyfuzz
 * check --alternative), which takes the first replacement. The contents may
 * be quoted strings, as kernels write them; a gas macro strips the quotes.
 */
#ifndef CF_COMPAT_ASM_ALTERNATIVE_MACROS_H
#define CF_COMPAT_ASM_ALTERNATIVE_MACROS_H

#ifdef __ASSEMBLER__
	.macro cf_alternative_emit text
	\text
	.endm
#ifdef CF_ALTERNATIVE
#define ALTERNATIVE(old, new, vendor, ext, config) cf_alternative_emit new
#define ALTERNATIVE_2(old, new1, v1, e1, c1, new2, v2, e2, c2) cf_alternative_emit new1
#else
#define ALTERNATIVE(old, new, vendor, ext, config) cf_alternative_emit old
#define ALTERNATIVE_2(old, new1, v1, e1, c1, new2, v2, e2, c2) cf_alternative_emit old
#endif
#endif

#endif
