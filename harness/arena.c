/* SPDX-License-Identifier: MIT */
#include "arena.h"

#include "sys.h"

int cf_arena_init(struct cf_arena *a, uint64_t seed, int extra_prot, uint8_t *image)
{
	a->extra_prot = extra_prot;
	a->sealed = 0;
	a->seed = seed;
	a->image = image;
	a->filled_lo = 0;
	a->filled_hi = CF_ARENA_WINDOW;
	a->size = CF_PAGE_SIZE + CF_ARENA_WINDOW + CF_ARENA_GUARD;
	a->base = cf_mmap_anon(a->size, CF_PROT_NONE);
	if (!a->base)
		return -1;
	a->acc = a->base + CF_PAGE_SIZE;
	a->acc_end = a->acc + CF_ARENA_WINDOW;
	return cf_mprotect(a->acc, CF_ARENA_WINDOW, CF_PROT_RW | extra_prot);
}

/* Window bytes [lo, hi), page aligned, filled (and their image). */
static int fill_range(struct cf_arena *a, uint64_t lo, uint64_t hi)
{
	if (lo >= hi)
		return 0;
	if (a->sealed &&
	    cf_arena_seal_range(a, (uintptr_t)(a->acc + lo), (uintptr_t)(a->acc + hi), 0))
		return -1;
	cf_fill_pattern(a->acc + lo, lo, hi - lo, a->seed);
	if (a->sealed &&
	    cf_arena_seal_range(a, (uintptr_t)(a->acc + lo), (uintptr_t)(a->acc + hi), 1))
		return -1;
	if (a->image)
		__builtin_memcpy(a->image + lo, a->acc + lo, hi - lo);
	return 0;
}

int cf_arena_fill(struct cf_arena *a, int64_t lo, int64_t hi)
{
	const int64_t page = CF_PAGE_SIZE, window = CF_ARENA_WINDOW;
	lo = (lo < page ? 0 : lo - page) & ~(page - 1);
	hi = hi > window - page ? window : (hi + 2 * page - 1) & ~(page - 1);
	uint64_t l = (uint64_t)lo, h = (uint64_t)hi;
	if (lo >= hi || h <= a->filled_lo || l >= a->filled_hi)
		return 0;
	if (l < CF_ARENA_WINDOW / 2) { /* grow the low part up to h */
		if (fill_range(a, a->filled_lo, h < a->filled_hi ? h : a->filled_hi))
			return -1;
		a->filled_lo = h;
	} else { /* grow the high part down to l */
		if (fill_range(a, l > a->filled_lo ? l : a->filled_lo, a->filled_hi))
			return -1;
		a->filled_hi = l;
	}
	return 0;
}

void cf_arena_fini(struct cf_arena *a)
{
	if (a->base)
		cf_munmap(a->base, a->size);
	a->base = a->acc = a->acc_end = NULL;
}

int cf_arena_seal(struct cf_arena *a)
{
	a->sealed = 1;
	return cf_mprotect(a->acc, CF_ARENA_WINDOW, CF_PROT_READ | a->extra_prot);
}

int cf_arena_seal_range(struct cf_arena *a, uintptr_t lo, uintptr_t hi, int sealed)
{
	uintptr_t first = lo & ~(uintptr_t)(CF_PAGE_SIZE - 1);
	uintptr_t end = (hi + CF_PAGE_SIZE - 1) & ~(uintptr_t)(CF_PAGE_SIZE - 1);
	if (first >= end)
		return 0;
	int prot = (sealed ? CF_PROT_READ : CF_PROT_RW) | a->extra_prot;
	return cf_mprotect((void *)first, end - first, prot);
}

uint8_t *cf_place_clear_of_guards(const struct cf_arena *a, uint32_t off)
{
	return a->acc + cf_place_index(off, CF_NO_FAULT, 0);
}

uint8_t *cf_place(const struct cf_arena *a, uint32_t off, uint64_t fault, uint32_t granule)
{
	return a->acc + cf_place_index(off, fault, granule);
}

/* splitmix64: a fast stream whose every byte depends on its position. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Word k of the stream seeded by seed: bytes [8k, 8k + 8), little-endian. */
static uint64_t pattern_word(uint64_t seed, uint64_t k)
{
	return mix64(seed * 0x9e3779b97f4a7c15ull + 1 + (k + 1) * 0x9e3779b97f4a7c15ull);
}

void cf_fill_pattern(uint8_t *p, uint64_t from, size_t len, uint64_t seed)
{
	size_t i = 0;
	uint64_t k0 = from / 8;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* A word's bytes are the stream's in order: a store per word, not eight. */
	typedef uint64_t __attribute__((may_alias, aligned(8))) word;
	if (((uintptr_t)p & 7) == 0)
		for (; i + 8 <= len; i += 8)
			*(word *)(p + i) = pattern_word(seed, k0 + i / 8);
#endif
	for (; i < len; i += 8) {
		uint64_t w = pattern_word(seed, k0 + i / 8);
		for (size_t k = 0; k < 8 && i + k < len; k++)
			p[i + k] = (uint8_t)(w >> (8 * k));
	}
}

uint8_t cf_pattern_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)(pattern_word(seed, i / 8) >> (8 * (i % 8)));
}

uint64_t cf_place_index(uint32_t off, uint64_t fault, uint32_t granule)
{
	if (fault == CF_NO_FAULT || granule)
		return CF_PAGE_SIZE + (off % CF_PAGE_SIZE);
	if (fault == 0)
		return CF_ARENA_WINDOW + (off % CF_PAGE_SIZE);
	return CF_ARENA_WINDOW - fault;
}

int cf_case_src_byte(const struct cf_case *c, int64_t i)
{
	if (!cf_kind_has_src(c->kind) || i < 0)
		return -1;
	uint64_t at = cf_place_index(c->src_off, c->src_fault, c->granule) + (uint64_t)i;
	if (c->granule && c->src_fault != CF_NO_FAULT && (uint64_t)i >= c->src_fault)
		return -1; /* behind the tag boundary: mapped, but not the routine's to read */
	return at < CF_ARENA_WINDOW ? cf_pattern_byte(CF_SRC_SEED, at) : -1;
}
