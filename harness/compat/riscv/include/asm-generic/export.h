/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: older kernels include this from assembly. */
#include <linux/export.h>
