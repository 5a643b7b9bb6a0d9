/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: module exports mean nothing in an executor (one definition, RISC-V's). */
#include "../../../riscv/include/linux/export.h"
