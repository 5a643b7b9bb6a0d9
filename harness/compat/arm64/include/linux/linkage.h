/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the symbol macros (ENTRY/ENDPROC, SYM_FUNC_*, SYM_CODE_*) mean the
 * same on every architecture copyfuzz builds for; their one definition is RISC-V's
 * (`.type name, @function` is accepted by the AArch64 assembler too). arm64 files of
 * 4.x-5.x also use the PI/WEAK_PI variants, which are the plain ones here: no
 * position-independent alias is needed in an executor.
 */
#ifndef CF_COMPAT_ARM64_LINUX_LINKAGE_H
#define CF_COMPAT_ARM64_LINUX_LINKAGE_H

#include "../../../riscv/include/linux/linkage.h"

#ifdef __ASSEMBLER__
#define SYM_FUNC_START_PI(name) SYM_FUNC_START(name)
#define SYM_FUNC_START_WEAK_PI(name) SYM_FUNC_START_WEAK(name)
#define SYM_FUNC_END_PI(name) SYM_FUNC_END(name)
#define SYM_FUNC_START_TRACE(name) SYM_FUNC_START(name)
#define SYM_FUNC_END_TRACE(name) SYM_FUNC_END(name)
#define ENDPIPROC(name) ENDPROC(name)
#endif

#endif
