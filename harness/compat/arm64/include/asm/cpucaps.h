/* SPDX-License-Identifier: MIT */
#include <asm/cpufeature.h>
