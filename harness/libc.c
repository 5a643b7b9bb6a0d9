/* SPDX-License-Identifier: MIT */
/*
 * libc.c - memcpy/memset/memmove/memcmp for the freestanding executor.
 *
 * The compiler may emit calls to these for struct copies. The build makes
 * them *local* to the harness (objcopy --localize-symbol), so a routine under
 * test named memcpy never serves the harness, nor the harness the routine.
 * Every executor has it (and ARM builds the division-by-zero hooks below).
 */
#include <stddef.h>
#include <stdint.h>

void *memcpy(void *restrict d, const void *restrict s, size_t n);
void *memmove(void *d, const void *s, size_t n);
void *memset(void *d, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

/*
 * A word at a time: the executor copies and compares the case's windows (kilobytes) for
 * every fuzz input, in guest code under QEMU, where every instruction costs
 * (docs/perf.md). Where both sides share their alignment, aligned words, bytes before and
 * after. Where they do not (seven cases in eight: the windows' offsets are the case's),
 * the first side is aligned and the other side's bytes come from the aligned words that
 * hold them, shifted together. Every access is a byte of the range or an aligned word
 * holding one: a page never splits an aligned word, so a window that ends at a guard
 * page (or an MTE tag granule) stays inside it. The word loops are unrolled (memcmp's
 * compares four words to a branch): under QEMU every pass of a loop is a translation
 * block entered again.
 */
#define CF_UNROLL _Pragma("GCC unroll 4")
typedef uintptr_t __attribute__((may_alias)) cf_word;
#define CF_WORD sizeof(cf_word)

/* The word at p, from the aligned words lo (holding p, k bytes into it, 0 < k < W) and
 * hi (the next one): its bytes in memory order, whatever the byte order. */
static cf_word joined(cf_word lo, cf_word hi, unsigned k)
{
	unsigned lo_bits = 8 * k, hi_bits = 8 * (unsigned)CF_WORD - lo_bits;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return (lo >> lo_bits) | (hi << hi_bits);
#else
	return (lo << lo_bits) | (hi >> hi_bits);
#endif
}

void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
	uint8_t *dp = d;
	const uint8_t *sp = s;
	if (n >= 3 * CF_WORD) {
		for (; (uintptr_t)dp & (CF_WORD - 1); n--)
			*dp++ = *sp++;
		unsigned k = (uintptr_t)sp & (CF_WORD - 1);
		if (k == 0) {
			CF_UNROLL
			for (; n >= CF_WORD; n -= CF_WORD, dp += CF_WORD, sp += CF_WORD)
				*(cf_word *)dp = *(const cf_word *)sp;
		} else {
			/* Each hi holds the last byte of the word stored next (n >= W): every
			 * word loaded holds a byte copied. */
			const cf_word *sw = (const cf_word *)(sp - k);
			cf_word lo = *sw++;
			CF_UNROLL
			for (; n >= CF_WORD; n -= CF_WORD, dp += CF_WORD, sp += CF_WORD) {
				cf_word hi = *sw++;
				*(cf_word *)dp = joined(lo, hi, k);
				lo = hi;
			}
		}
	}
	while (n--)
		*dp++ = *sp++;
	return d;
}

void *memmove(void *d, const void *s, size_t n)
{
	uint8_t *dp = d;
	const uint8_t *sp = s;
	if (dp < sp) {
		while (n--)
			*dp++ = *sp++;
	} else {
		while (n--)
			dp[n] = sp[n];
	}
	return d;
}

void *memset(void *d, int c, size_t n)
{
	uint8_t *dp = d;
	if (n >= 2 * CF_WORD) {
		cf_word w = (cf_word)-1 / 0xff * (uint8_t)c; /* the byte in every lane */
		for (; (uintptr_t)dp & (CF_WORD - 1); n--)
			*dp++ = (uint8_t)c;
		CF_UNROLL
		for (; n >= CF_WORD; n -= CF_WORD, dp += CF_WORD)
			*(cf_word *)dp = w;
	}
	while (n--)
		*dp++ = (uint8_t)c;
	return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;
	if (n >= 3 * CF_WORD) {
		for (; (uintptr_t)x & (CF_WORD - 1); n--, x++, y++)
			if (*x != *y)
				return *x - *y;
		/* Equal words skipped, four to a branch, then one at a time; the first unequal
		 * one is compared bytewise below. */
		unsigned k = (uintptr_t)y & (CF_WORD - 1);
		const cf_word *xw = (const cf_word *)x;
		if (k == 0) {
			const cf_word *yw = (const cf_word *)y;
			for (; n >= 4 * CF_WORD; n -= 4 * CF_WORD, xw += 4, yw += 4)
				if ((xw[0] ^ yw[0]) | (xw[1] ^ yw[1]) | (xw[2] ^ yw[2]) |
				    (xw[3] ^ yw[3]))
					break;
			for (; n >= CF_WORD && *xw == *yw; n -= CF_WORD, xw++, yw++)
				;
		} else { /* as memcpy: every word loaded holds a byte compared */
			const cf_word *yw = (const cf_word *)(y - k);
			cf_word lo = *yw++;
			for (; n >= 4 * CF_WORD; n -= 4 * CF_WORD, xw += 4, yw += 4) {
				if ((xw[0] ^ joined(lo, yw[0], k)) |
				    (xw[1] ^ joined(yw[0], yw[1], k)) |
				    (xw[2] ^ joined(yw[1], yw[2], k)) |
				    (xw[3] ^ joined(yw[2], yw[3], k)))
					break;
				lo = yw[3];
			}
			for (; n >= CF_WORD && *xw == joined(lo, *yw, k); n -= CF_WORD, xw++, yw++)
				lo = *yw;
		}
		y += (const uint8_t *)xw - x;
		x = (const uint8_t *)xw;
	}
	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

#if __riscv_xlen == 32
/*
 * 64-bit division helpers the compiler calls on RV32. Debian's cross libgcc
 * is RV64-only, so the freestanding RV32 executor brings its own: plain
 * shift-and-subtract; the harness divides rarely and never by zero.
 */
uint64_t __udivdi3(uint64_t n, uint64_t d);
uint64_t __umoddi3(uint64_t n, uint64_t d);

static uint64_t udivmod64(uint64_t n, uint64_t d, uint64_t *rem)
{
	uint64_t q = 0, r = 0;
	if (d == 0) {
		*rem = 0;
		return 0;
	}
	for (int i = 63; i >= 0; i--) {
		r = (r << 1) | ((n >> i) & 1);
		if (r >= d) {
			r -= d;
			q |= 1ull << i;
		}
	}
	*rem = r;
	return q;
}

uint64_t __udivdi3(uint64_t n, uint64_t d)
{
	uint64_t r;
	return udivmod64(n, d, &r);
}

uint64_t __umoddi3(uint64_t n, uint64_t d)
{
	uint64_t r;
	udivmod64(n, d, &r);
	return r;
}
#endif

#ifdef __arm__
/*
 * What libgcc's ARM division helpers call on a division by zero. Its own versions
 * raise SIGFPE through the C library, which the freestanding executor has not; the
 * harness never divides by zero, so the quotient the helper passes is returned as is.
 */
int __aeabi_idiv0(int r);
long long __aeabi_ldiv0(long long r);

int __aeabi_idiv0(int r)
{
	return r;
}

long long __aeabi_ldiv0(long long r)
{
	return r;
}
#endif
