/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the symbol macros a kernel RISC-V .S file uses, defined
 * for a userspace build. Names follow the kernel (facts); definitions are
 * ours. Both the old ENTRY/END/ENDPROC and the SYM_* families.
 */
#ifndef CF_COMPAT_LINUX_LINKAGE_H
#define CF_COMPAT_LINUX_LINKAGE_H

#include <linux/export.h>

#ifdef __ASSEMBLER__
#define __ALIGN .balign 4
#define ALIGN __ALIGN

#define ENTRY(name) .globl name; ALIGN; name:
#define END(name) .size name, . - name
#define ENDPROC(name) .type name, @function; END(name)
#define WEAK(name) .weak name; ALIGN; name:
#define GLOBAL(name) .globl name; name:

#define SYM_FUNC_START(name) .globl name; .type name, @function; ALIGN; name:
#define SYM_FUNC_START_NOALIGN(name) .globl name; .type name, @function; name:
#define SYM_FUNC_START_LOCAL(name) .type name, @function; ALIGN; name:
#define SYM_FUNC_START_LOCAL_NOALIGN(name) .type name, @function; name:
#define SYM_FUNC_START_WEAK(name) .weak name; .type name, @function; ALIGN; name:
#define SYM_FUNC_END(name) .size name, . - name
#define SYM_TYPED_FUNC_START(name) SYM_FUNC_START(name)
/* Another name for a function already ended: same address, same size. */
#define SYM_FUNC_ALIAS(alias, name) .globl alias; .type alias, @function; .set alias, name; .size alias, . - name
#define SYM_FUNC_ALIAS_LOCAL(alias, name) .type alias, @function; .set alias, name; .size alias, . - name
#define SYM_FUNC_ALIAS_WEAK(alias, name) .weak alias; .type alias, @function; .set alias, name; .size alias, . - name

#define SYM_CODE_START(name) .globl name; ALIGN; name:
#define SYM_CODE_START_NOALIGN(name) .globl name; name:
#define SYM_CODE_START_LOCAL(name) ALIGN; name:
#define SYM_CODE_START_LOCAL_NOALIGN(name) name:
#define SYM_CODE_END(name) .size name, . - name
#define SYM_INNER_LABEL(name, linkage) .globl name; name:
#define SYM_INNER_LABEL_ALIGN(name, linkage) .globl name; ALIGN; name:
#define SYM_DATA_START(name) .globl name; name:
#define SYM_DATA_START_LOCAL(name) name:
#define SYM_DATA_END(name) .size name, . - name
#define SYM_DATA(name, ...) .globl name; name: __VA_ARGS__
#define SYM_DATA_LOCAL(name, ...) name: __VA_ARGS__
#endif

#endif
