/* SPDX-License-Identifier: MIT */
#include <asm/alternative-macros.h>
