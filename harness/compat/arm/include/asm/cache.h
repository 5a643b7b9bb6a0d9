/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: the L1 line size: 64 bytes unless -D CONFIG_ARM_L1_CACHE_SHIFT=N. */
#ifndef CF_COMPAT_ASM_CACHE_H
#define CF_COMPAT_ASM_CACHE_H
#ifdef CONFIG_ARM_L1_CACHE_SHIFT
#define L1_CACHE_SHIFT CONFIG_ARM_L1_CACHE_SHIFT
#else
#define L1_CACHE_SHIFT 6
#endif
#define L1_CACHE_BYTES (1 << L1_CACHE_SHIFT)
#endif
