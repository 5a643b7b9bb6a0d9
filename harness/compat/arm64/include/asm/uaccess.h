/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: 4.9-4.10 kernels kept the assembler user-access macros here. */
#include <asm/asm-uaccess.h>
