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

#include "place.h"
#include "records.h"

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

#endif /* CF_ARENA_H */
