/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the cache-line size arm64 kernels align hot loops to
 * (`.p2align L1_CACHE_SHIFT`): 64 bytes unless -D CONFIG_ARM64_L1_CACHE_SHIFT=N.
 */
#ifndef CF_COMPAT_ASM_CACHE_H
#define CF_COMPAT_ASM_CACHE_H
#ifdef CONFIG_ARM64_L1_CACHE_SHIFT
#define L1_CACHE_SHIFT CONFIG_ARM64_L1_CACHE_SHIFT
#else
#define L1_CACHE_SHIFT 6
#endif
#define L1_CACHE_BYTES (1 << L1_CACHE_SHIFT)
#endif
