/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: a model of the kernel's C glue for its vector user copy (6.10+,
 * arch/riscv/lib/riscv_v_helpers.c), written for copyfuzz from the kernel's contract.
 * Linked with a routine built with -D CONFIG_RISCV_ISA_V (checkfile.py), so that
 * `check uaccess.S --with uaccess_vector.S --isa rv64gcv -D CONFIG_RISCV_ISA_V
 * --alternative` runs the vector path as a kernel with V does:
 *
 *   __asm_copy_to_user (uaccess.S): below riscv_v_usercopy_threshold bytes, the
 *     scalar copy; otherwise `tail enter_vector_usercopy` (with a3 = enable_sum);
 *   enter_vector_usercopy (here): the vector copy (uaccess_vector.S); if it leaves
 *     bytes, dst and src advance past what it copied and the scalar routine
 *     (uaccess.S's fallback_scalar_usercopy) copies the rest, whose return is
 *     the result.
 *
 * What the model leaves out: may_use_simd() is always true here (a user copy in an
 * interrupt, or with the vector unit busy, takes the scalar path in the kernel: the
 * same scalar routine the sweep also runs below the threshold), and
 * kernel_vector_begin/end (saving the user's vector state) have nothing to do in
 * the executor. Every name is weak: a file that defines its own wins, and kernels
 * before the _sum_enabled variants (6.10) link too.
 */
#include <stddef.h>

#ifndef CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD
#define CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD 768 /* the Kconfig default */
#endif

/* Defined by the files under test (weak references: absent is NULL). */
extern unsigned long __asm_vector_usercopy(void *, const void *, size_t) __attribute__((weak));
extern unsigned long __asm_vector_usercopy_sum_enabled(void *, const void *, size_t)
	__attribute__((weak));
extern unsigned long fallback_scalar_usercopy(void *, const void *, size_t) __attribute__((weak));
extern unsigned long fallback_scalar_usercopy_sum_enabled(void *, const void *, size_t)
	__attribute__((weak));

__attribute__((weak)) size_t riscv_v_usercopy_threshold = CONFIG_RISCV_ISA_V_UCOPY_THRESHOLD;

unsigned long enter_vector_usercopy(void *dst, const void *src, size_t n, int enable_sum);

/* Direct calls (never through a pointer), so that the audit follows them into the
 * files' code. The variant entered with user access enabled when the file has one
 * and the caller asks for it; otherwise the one that enables it itself. */
static unsigned long vector_copy(void *dst, const void *src, size_t n, int enable_sum)
{
	if (!enable_sum && __asm_vector_usercopy_sum_enabled)
		return __asm_vector_usercopy_sum_enabled(dst, src, n);
	if (!__asm_vector_usercopy) /* no vector copy linked: all of it is left */
		return n;
	return __asm_vector_usercopy(dst, src, n);
}

static unsigned long scalar_copy(void *dst, const void *src, size_t n, int enable_sum)
{
	if (!enable_sum && fallback_scalar_usercopy_sum_enabled)
		return fallback_scalar_usercopy_sum_enabled(dst, src, n);
	if (!fallback_scalar_usercopy) /* nothing to fall back to: the file is not this shape */
		__builtin_trap();
	return fallback_scalar_usercopy(dst, src, n);
}

__attribute__((weak)) unsigned long enter_vector_usercopy(void *dst, const void *src, size_t n,
							  int enable_sum)
{
	size_t remain = vector_copy(dst, src, n, enable_sum);

	if (remain) {
		size_t copied = n - remain;

		return scalar_copy((char *)dst + copied, (const char *)src + copied, remain, enable_sum);
	}
	return 0;
}
