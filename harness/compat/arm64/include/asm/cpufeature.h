/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: capability names (ARM64_HAS_PAN, ARM64_HAS_UAO, ARM64_HAS_MOPS, ...)
 * are only ever arguments of the alternative macros here, which choose a side at build
 * time (asm/alternative-macros.h): they need no value.
 */
#include <asm/alternative.h>
