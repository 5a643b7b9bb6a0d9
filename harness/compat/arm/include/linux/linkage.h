/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the symbol macros (ENTRY/ENDPROC, WEAK, SYM_FUNC_*, SYM_CODE_*) are
 * RISC-V's, except those that give a symbol its type: ARM gas reads `@` as the start of a
 * comment, so they say `%function` here and mean the same.
 */
#ifndef CF_COMPAT_ARM_LINUX_LINKAGE_H
#define CF_COMPAT_ARM_LINUX_LINKAGE_H

#include "../../../riscv/include/linux/linkage.h"

#ifdef __ASSEMBLER__
#undef ENDPROC
#undef SYM_FUNC_START
#undef SYM_FUNC_START_NOALIGN
#undef SYM_FUNC_START_LOCAL
#undef SYM_FUNC_START_LOCAL_NOALIGN
#undef SYM_FUNC_START_WEAK
#undef SYM_FUNC_ALIAS
#undef SYM_FUNC_ALIAS_LOCAL
#undef SYM_FUNC_ALIAS_WEAK
#define ENDPROC(name) .type name, %function; END(name)
#define SYM_FUNC_START(name) .globl name; .type name, %function; ALIGN; name:
#define SYM_FUNC_START_NOALIGN(name) .globl name; .type name, %function; name:
#define SYM_FUNC_START_LOCAL(name) .type name, %function; ALIGN; name:
#define SYM_FUNC_START_LOCAL_NOALIGN(name) .type name, %function; name:
#define SYM_FUNC_START_WEAK(name) .weak name; .type name, %function; ALIGN; name:
#define SYM_FUNC_ALIAS(alias, name) .globl alias; .type alias, %function; .set alias, name; .size alias, . - name
#define SYM_FUNC_ALIAS_LOCAL(alias, name) .type alias, %function; .set alias, name; .size alias, . - name
#define SYM_FUNC_ALIAS_WEAK(alias, name) .weak alias; .type alias, %function; .set alias, name; .size alias, . - name
#endif

#endif
