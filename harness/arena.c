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
