/* SPDX-License-Identifier: MIT */
/*
 * place.h - where a case's buffers sit in their arenas (arena.h's picture), and what
 * the arenas hold there before a call: pure functions of the case, no system calls.
 * The executor places buffers with them; the native fuzz driver (fuzz/driver.c) and the
 * tool (libcfref.so) compute from them the bytes a routine saw, without reading them
 * back from guest memory a routine can write.
 */
#ifndef CF_PLACE_H
#define CF_PLACE_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

/* The arenas' window (guards around it: arena.h) and their fills. */
#define CF_ARENA_WINDOW (CF_MAX_LEN + 3 * CF_PAGE_SIZE)
#define CF_ARENA_GUARD (CF_MAX_LEN + 2 * CF_PAGE_SIZE)
#define CF_SRC_SEED 0x5eed5eedull /* the source arena */
#define CF_CANARY_SEED 0xca9a21e5ull /* the destination's, and its canary image */

/*
 * Where a case side starts, as an offset from the window's first byte (acc): with no
 * fault, at page offset off a page clear of either edge; with fault > 0, fault bytes
 * before the high guard (byte [fault] is the first inaccessible one); with fault == 0,
 * inside the high guard at page offset off (not even byte 0 is accessible). With
 * granule (MTE), always a page clear of the low guard at page offset off: the fault
 * boundary at byte [fault] is a tag granule inside the window (executor.c tags it).
 */
uint64_t cf_place_index(uint32_t off, uint64_t fault, uint32_t granule);

/*
 * A case's buffers as window offsets: memmove's both lie in the destination's arena,
 * src = dst - disp; a kind without a source has src_arena CF_PLACE_NONE. And the bytes
 * around dst the oracles compare, [lo, hi) from dst: the canaries below (memmove: below
 * the lower buffer), the buffers, up to CF_CANARY_LEN above, never into the guard.
 */
enum cf_place_arena { CF_PLACE_NONE, CF_PLACE_SRC_ARENA, CF_PLACE_DST_ARENA };
struct cf_case_place {
	int64_t dst, src;
	enum cf_place_arena src_arena;
	int64_t below; /* bytes of the case's buffers under dst (memmove upwards: disp) */
	int64_t lo, hi;
};
struct cf_case_place cf_case_place(const struct cf_case *c);

/* The deterministic pseudo-random fill: p[i] = byte from + i of a stream seeded by seed
 * (a word store per 8 bytes where from and p allow it). */
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

#endif /* CF_PLACE_H */
