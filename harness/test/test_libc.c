/* SPDX-License-Identifier: MIT */
/*
 * test_libc.c - harness/libc.c's memcpy, memset, memcmp and memmove, natively (under
 * ASan+UBSan), against byte-at-a-time definitions: every length up to ten words and three
 * bytes, every alignment of both sides, the first difference at every place, and ranges
 * that end at a page the functions must not touch (PROT_NONE: a word access past the
 * range would fault). The functions are renamed (-Dmemcpy=cfl_memcpy ...) so glibc's
 * stay glibc's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void *cfl_memcpy(void *restrict d, const void *restrict s, size_t n);
void *cfl_memmove(void *d, const void *s, size_t n);
void *cfl_memset(void *d, int c, size_t n);
int cfl_memcmp(const void *a, const void *b, size_t n);

#define W sizeof(uintptr_t)
#define MAXN (10 * W + 3) /* past two of memcmp's four-word groups, and unrolled passes */

static int failures;

static void fail(const char *what, size_t n, size_t da, size_t sa)
{
	if (failures++ < 20)
		fprintf(stderr, "test_libc: %s wrong at n=%zu, alignments %zu/%zu\n", what, n, da,
			sa);
}

static int sign(int v)
{
	return (v > 0) - (v < 0);
}

/* memcpy, memcmp and memset on [d, d + n) and [s, s + n); d and s may end at a guard page. */
static void check_one(uint8_t *d, uint8_t *s, size_t n, size_t da, size_t sa)
{
	uint8_t want[MAXN];
	for (size_t i = 0; i < n; i++)
		s[i] = (uint8_t)(i * 7 % 254 + 1),
		d[i] = 0xee; /* 1..254: one up or down stays a byte */
	if (cfl_memcpy(d, s, n) != d || memcmp(d, s, n))
		fail("memcpy", n, da, sa);
	if (cfl_memcmp(d, s, n) != 0)
		fail("memcmp (equal)", n, da, sa);
	for (size_t k = 0; k < n; k++) { /* one byte differs, above or below */
		for (int up = 0; up < 2; up++) {
			d[k] = (uint8_t)(s[k] + (up ? 1 : -1));
			if (sign(cfl_memcmp(d, s, n)) != (up ? 1 : -1))
				fail("memcmp (a difference)", n, da, sa);
			d[k] = s[k];
		}
	}
	int c = (int)(n * 31 + da) - 128; /* negative too: only the low byte counts */
	memset(want, (uint8_t)c, n);
	if (cfl_memset(d, c, n) != d || memcmp(d, want, n))
		fail("memset", n, da, sa);
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, (size_t)page * 4, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED || mprotect(map + page, (size_t)page, PROT_NONE) ||
	    mprotect(map + 3 * page, (size_t)page, PROT_NONE)) {
		perror("test_libc: mmap");
		return 1;
	}
	uint8_t *a_end = map + page, *b_end = map + 3 * page; /* guard pages follow */
	for (size_t n = 0; n <= MAXN; n++) {
		check_one(a_end - n, b_end - n, n, 0, 0); /* both end at their guard page */
		for (size_t da = 0; da < W; da++)
			for (size_t sa = 0; sa < W; sa++)
				check_one(a_end - MAXN - W + da, b_end - MAXN - W + sa, n, da, sa);
	}
	uint8_t want[MAXN + 2 * W];
	/* memmove both ways, overlapping, bytewise as before */
	uint8_t *m = map + 2 * page;
	for (size_t n = 0; n <= MAXN; n++)
		for (size_t shift = 0; shift < 2 * W; shift++)
			for (int up = 0; up < 2; up++) {
				for (size_t i = 0; i < n + 2 * W; i++)
					m[i] = (uint8_t)i;
				memmove(want, up ? m : m + shift, n);
				cfl_memmove(up ? m + shift : m, up ? m : m + shift, n);
				if (memcmp(up ? m + shift : m, want, n))
					fail("memmove", n, shift, up);
			}
	if (failures) {
		fprintf(stderr, "test_libc: %d failures\n", failures);
		return 1;
	}
	printf("test_libc: memcpy, memset, memcmp, memmove: ok\n");
	return 0;
}
