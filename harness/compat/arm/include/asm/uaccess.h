/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: the assembler side of asm/uaccess.h is asm/uaccess-asm.h's. */
#include <asm/assembler.h>
