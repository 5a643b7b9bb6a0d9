/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: UNWIND(x) is x with -D CONFIG_ARM_UNWIND (unwind-table directives,
 * and the frame-pointer set-up 6.x copy code puts under it), nothing otherwise. fpreg is
 * the frame-pointer register of ARM state, r11.
 */
#ifndef CF_COMPAT_ASM_UNWIND_H
#define CF_COMPAT_ASM_UNWIND_H

#ifdef __ASSEMBLER__
#ifdef CONFIG_ARM_UNWIND
#define UNWIND(code...) code
#else
#define UNWIND(code...)
#endif
#define fpreg fp
#endif

#endif
