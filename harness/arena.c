/* SPDX-License-Identifier: MIT */
#include "arena.h"

#include "sys.h"

int cf_arena_init(struct cf_arena *a, uint64_t seed)
{
	a->size = CF_PAGE_SIZE + CF_ARENA_WINDOW + CF_ARENA_GUARD;
	a->base = cf_mmap_anon(a->size, CF_PROT_NONE);
	if (!a->base)
		return -1;
	a->acc = a->base + CF_PAGE_SIZE;
	a->acc_end = a->acc + CF_ARENA_WINDOW;
	if (cf_mprotect(a->acc, CF_ARENA_WINDOW, CF_PROT_RW) != 0)
		return -1;
	cf_fill_pattern(a->acc, CF_ARENA_WINDOW, seed);
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
	return cf_mprotect(a->acc, CF_ARENA_WINDOW, CF_PROT_READ);
}

uint8_t *cf_place_clear_of_guards(const struct cf_arena *a, uint32_t off)
{
	return a->acc + CF_PAGE_SIZE + (off % CF_PAGE_SIZE);
}

uint8_t *cf_place_fault_after(const struct cf_arena *a, uint64_t fault)
{
	return a->acc_end - fault;
}

uint8_t *cf_place_in_guard(const struct cf_arena *a, uint32_t off)
{
	return a->acc_end + (off % CF_PAGE_SIZE);
}

uint8_t *cf_place(const struct cf_arena *a, uint32_t off, uint64_t fault)
{
	if (fault == CF_NO_FAULT)
		return cf_place_clear_of_guards(a, off);
	if (fault == 0)
		return cf_place_in_guard(a, off);
	return cf_place_fault_after(a, fault);
}

/* splitmix64: a fast stream whose every byte depends on its position. */
static uint64_t mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void cf_fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t state = seed * 0x9e3779b97f4a7c15ull + 1;
	for (size_t i = 0; i < len; i += 8) {
		uint64_t w = mix64(state += 0x9e3779b97f4a7c15ull);
		for (size_t k = 0; k < 8 && i + k < len; k++)
			p[i + k] = (uint8_t)(w >> (8 * k));
	}
}
