/* SPDX-License-Identifier: MIT */
#include <linux/export.h>
