/* SPDX-License-Identifier: MIT */
/*
 * arena.h - guard-page arenas and buffer placement.
 *
 * Each side (src, dst) owns one arena: a PROT_NONE reservation with a single
 * accessible window in it. Faults are made by *moving the buffer*, never by
 * calling mprotect per case: a buffer whose first inaccessible byte must be
 * at offset F starts F bytes before the end of the window. That keeps the
 * page-granular truth (the first inaccessible byte is a page boundary) and
 * costs no system call per case.
 *
 *   | guard | accessible window (CF_ARENA_WINDOW)        | guard (CF_ARENA_GUARD) |
 *           ^acc                                         ^acc_end
 */
#ifndef CF_ARENA_H
#define CF_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

#define CF_ARENA_WINDOW (CF_MAX_LEN + 3 * CF_PAGE_SIZE)
#define CF_ARENA_GUARD (CF_MAX_LEN + 2 * CF_PAGE_SIZE)

struct cf_arena {
	uint8_t *base; /* the whole reservation */
	size_t size;
	uint8_t *acc; /* first accessible byte (page aligned) */
	uint8_t *acc_end; /* first byte of the high guard (page aligned) */
};

/* Reserve an arena; fill its window with fill(seed). Returns 0 or -1. */
int cf_arena_init(struct cf_arena *a, uint64_t seed);
void cf_arena_fini(struct cf_arena *a);

/* Make the window read-only (the source: a stray store then faults). */
int cf_arena_seal(struct cf_arena *a);

/* Start at page offset off, at least a page from either edge of the window. */
uint8_t *cf_place_clear_of_guards(const struct cf_arena *a, uint32_t off);
/* Start fault bytes before the high guard: byte [fault] is the first inaccessible one. */
uint8_t *cf_place_fault_after(const struct cf_arena *a, uint64_t fault);
/* Start inside the high guard at page offset off: not even byte 0 is accessible. */
uint8_t *cf_place_in_guard(const struct cf_arena *a, uint32_t off);

/* The placement a case side asks for (fault == CF_NO_FAULT: clear of guards). */
uint8_t *cf_place(const struct cf_arena *a, uint32_t off, uint64_t fault);

/* Bytes readable from p before the high guard (0 if p is in it). */
static inline uint64_t cf_arena_readable(const struct cf_arena *a, const uint8_t *p)
{
	return p < a->acc_end ? (uint64_t)(a->acc_end - p) : 0;
}

/* The deterministic pseudo-random fill: byte i of a stream seeded by seed. */
void cf_fill_pattern(uint8_t *p, size_t len, uint64_t seed);

#endif /* CF_ARENA_H */
