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
/* The executor's fill seeds: the source arena, and the destination's canary image. */
#define CF_SRC_SEED 0x5eed5eedull
#define CF_CANARY_SEED 0xca9a21e5ull

struct cf_arena {
	uint8_t *base; /* the whole reservation */
	size_t size;
	uint8_t *acc; /* first accessible byte (page aligned) */
	uint8_t *acc_end; /* first byte of the high guard (page aligned) */
	int extra_prot; /* added to every protection of the window (PROT_MTE: tagged memory) */
	int sealed; /* the window is read-only (cf_arena_seal) */
	uint64_t seed; /* the window's fill */
	uint8_t *image; /* NULL, or a copy of the window kept elsewhere, filled alike */
	/* Filled so far: window bytes [0, filled_lo) and [filled_hi, CF_ARENA_WINDOW). */
	uint64_t filled_lo, filled_hi;
};

/* Reserve an arena (its window mapped with extra_prot too), to hold fill(seed) and, if
 * image is not NULL, its copy there (CF_ARENA_WINDOW bytes). Returns 0 or -1. */
int cf_arena_init(struct cf_arena *a, uint64_t seed, int extra_prot, uint8_t *image);
void cf_arena_fini(struct cf_arena *a);

/*
 * Fill window bytes [lo, hi) (offsets from acc, clipped to the window) and their image,
 * if not filled yet: whole pages, with a page more on either side. Filling 2 MiB at an
 * executor's start cost it 15 ms under QEMU, where a sweep touches a few pages; a case
 * asks for the bytes it may see before it runs. Every case is placed near one end of
 * the window (arena.h's picture), so what is filled is a part from each end, each grown
 * as needed. Returns 0 or -1 (a sealed window made writable for the moment, mprotect).
 */
int cf_arena_fill(struct cf_arena *a, int64_t lo, int64_t hi);

/* Make the window read-only (the source: a stray store then faults). */
int cf_arena_seal(struct cf_arena *a);
/* Only the window's pages that hold [lo, hi): read-only (sealed), or writable again (to
 * set tags in them: a tag store needs write permission). mprotect's cost grows with the
 * pages it changes: under QEMU user mode, the 1 MiB window is 259 of them. */
int cf_arena_seal_range(struct cf_arena *a, uintptr_t lo, uintptr_t hi, int sealed);

/*
 * Where a case side starts, as an offset from the window's first byte (acc): with no
 * fault, at page offset off a page clear of either edge; with fault > 0, fault bytes
 * before the high guard (byte [fault] is the first inaccessible one); with fault == 0,
 * inside the high guard at page offset off (not even byte 0 is accessible). With
 * granule (MTE), always a page clear of the low guard at page offset off: the fault
 * boundary at byte [fault] is a tag granule inside the window (executor.c tags it).
 */
uint64_t cf_place_index(uint32_t off, uint64_t fault, uint32_t granule);
/* The placement a case side asks for, and the no-fault one for page offset off. */
uint8_t *cf_place(const struct cf_arena *a, uint32_t off, uint64_t fault, uint32_t granule);
uint8_t *cf_place_clear_of_guards(const struct cf_arena *a, uint32_t off);

/* Bytes readable from p before the high guard (0 if p is in it). */
static inline uint64_t cf_arena_readable(const struct cf_arena *a, const uint8_t *p)
{
	return p < a->acc_end ? (uint64_t)(a->acc_end - p) : 0;
}

/* The deterministic pseudo-random fill: p[i] = byte from + i of a stream seeded by seed
 * (from: a multiple of 8). */
void cf_fill_pattern(uint8_t *p, uint64_t from, size_t len, uint64_t seed);
/* Byte i of that stream, alone (what cf_fill_pattern stores at p[i]). */
uint8_t cf_pattern_byte(uint64_t seed, uint64_t i);

/*
 * Byte i of a case's source as the executor's source arena holds it (filled with
 * CF_SRC_SEED and never written), or -1 where the source has no readable byte (past its
 * fault, or a kind without a source of its own). A pure function of the case: the tool
 * computes it through libcfref.so (repro: is a byte stored past the count the source's?).
 */
int cf_case_src_byte(const struct cf_case *c, int64_t i);

#endif /* CF_ARENA_H */
