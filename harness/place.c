/* SPDX-License-Identifier: MIT */
#include "place.h"

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

uint8_t cf_pattern_byte(uint64_t seed, uint64_t i)
{
	return (uint8_t)(pattern_word(seed, i / 8) >> (8 * (i % 8)));
}

void cf_fill_pattern(uint8_t *p, uint64_t from, size_t len, uint64_t seed)
{
	size_t i = 0;
	for (; i < len && (from + i) % 8; i++) /* up to the stream's next word */
		p[i] = cf_pattern_byte(seed, from + i);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* A word's bytes are the stream's in order: a store per word, not eight. */
	typedef uint64_t __attribute__((may_alias, aligned(8))) word;
	if (((uintptr_t)(p + i) & 7) == 0)
		for (; i + 8 <= len; i += 8)
			*(word *)(p + i) = pattern_word(seed, (from + i) / 8);
#endif
	for (; i < len; i += 8) {
		uint64_t w = pattern_word(seed, (from + i) / 8);
		for (size_t k = 0; k < 8 && i + k < len; k++)
			p[i + k] = (uint8_t)(w >> (8 * k));
	}
}

uint64_t cf_place_index(uint32_t off, uint64_t fault, uint32_t granule)
{
	if (fault == CF_NO_FAULT || granule)
		return CF_PAGE_SIZE + (off % CF_PAGE_SIZE);
	if (fault == 0)
		return CF_ARENA_WINDOW + (off % CF_PAGE_SIZE);
	return CF_ARENA_WINDOW - fault;
}

struct cf_case_place cf_case_place(const struct cf_case *c)
{
	struct cf_case_place p = {0};
	int is_memmove = c->kind == CF_KIND_MEMMOVE;
	if (is_memmove && c->disp > 0 && (c->dst_fault == CF_NO_FAULT || c->granule)) {
		/* The lower buffer, src, a page clear of the window's start (the arena leaves
		 * room for n + |disp| <= CF_MAX_LEN), dst disp above it at its own page offset.
		 * A granule case too: its fault boundary is a tag wherever dst sits, and dst a
		 * page in, as other granule sides sit, would put src below the window. */
		uint32_t src_off = (uint32_t)((c->dst_off - (uint32_t)c->disp) % CF_PAGE_SIZE);
		p.src = (int64_t)cf_place_index(src_off, CF_NO_FAULT, 0);
		p.dst = p.src + c->disp;
	} else {
		/* dst where its fault puts it; memmove's src = dst - disp: above dst, or (a
		 * page fault) below it, with the guard bounding both (cf_case_check keeps src
		 * inside the arena). */
		p.dst = (int64_t)cf_place_index(c->dst_off, c->dst_fault, c->granule);
		p.src = is_memmove ? p.dst - c->disp
				   : (int64_t)cf_place_index(c->src_off, c->src_fault, c->granule);
	}
	p.src_arena = is_memmove                 ? CF_PLACE_DST_ARENA
		      : cf_kind_has_src(c->kind) ? CF_PLACE_SRC_ARENA
						 : CF_PLACE_NONE;
	if (p.src_arena == CF_PLACE_NONE)
		p.src = 0;
	p.below = is_memmove && c->disp > 0 ? c->disp : 0;
	if (p.dst <= (int64_t)CF_ARENA_WINDOW) { /* else in the guard: nothing to compare */
		int64_t readable = (int64_t)CF_ARENA_WINDOW - p.dst;
		int64_t top = (int64_t)(is_memmove ? cf_memmove_top(c->n, c->disp) : c->n);
		p.lo = -p.below - (int64_t)CF_CANARY_LEN;
		p.hi = top + (int64_t)CF_CANARY_LEN < readable ? top + (int64_t)CF_CANARY_LEN
							       : readable;
	}
	return p;
}

int cf_case_src_byte(const struct cf_case *c, int64_t i)
{
	struct cf_case_place p = cf_case_place(c);
	if (p.src_arena != CF_PLACE_SRC_ARENA || i < 0)
		return -1;
	uint64_t at = (uint64_t)p.src + (uint64_t)i;
	if (c->granule && c->src_fault != CF_NO_FAULT && (uint64_t)i >= c->src_fault)
		return -1; /* behind the tag boundary: mapped, but not the routine's to read */
	return at < CF_ARENA_WINDOW ? cf_pattern_byte(CF_SRC_SEED, at) : -1;
}
