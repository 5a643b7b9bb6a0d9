/* SPDX-License-Identifier: MIT */
/*
 * cases.h - which cases exist: validation, the exhaustive enumeration and the
 * seeded random phase. Pure C, no system calls: unit-tested natively.
 */
#ifndef CF_CASES_H
#define CF_CASES_H

#include <stdbool.h>
#include <stdint.h>

#include "records.h"

/* Why a case cannot run, or CF_CASE_OK. */
enum cf_case_error cf_case_check(const struct cf_case *c);
/* The same, for a routine of this kind (else CF_CASE_KIND_MISMATCH). */
enum cf_case_error cf_case_check_for(const struct cf_case *c, uint16_t kind);

/* Where faults can begin: page boundaries, or every granule bytes (CF_GRANULE_MTE). */
static inline uint64_t cf_fault_unit(uint32_t granule)
{
	return granule ? granule : CF_PAGE_SIZE;
}
/* Can a side at page offset off have its first inaccessible byte at fault? */
bool cf_fault_reachable(uint32_t off, uint64_t fault, uint32_t granule);

/* The sweep's parameters; an X-macro like the records' (records.h), because the
 * tool passes this struct to libcfref.so through ctypes (tool/copyfuzz/plan.py). */
#define CF_SWEEP_CFG_FIELDS(X)                                        \
	X(uint16_t, kind, , "enum cf_kind")                           \
	X(uint16_t, profile, , "enum cf_profile")                     \
	X(uint32_t, szreg, , "misalignments run over 0 .. 2*szreg-1") \
	X(uint64_t, min_len, , "exhaustive phase: n from min_len")    \
	X(uint64_t, max_len, , "to max_len")                          \
	X(uint64_t, random_count, , "random phase: this many cases")  \
	X(uint64_t, random_seed, , "from this seed")                  \
	X(uint64_t, random_max_len, , "n up to this (0: 65536)")      \
	X(uint64_t, granule, , "0: faults at pages; CF_GRANULE_MTE: at tag granules")

struct cf_sweep_cfg {
	CF_SWEEP_CFG_FIELDS(CF_X_FIELD)
};

/*
 * Enumeration state. Cases come out in id order: exhaustive ids first
 * (n ascending, then src and dst misalignment, then src and dst fault
 * position), then the random ones. Shard i/k keeps the ids = i (mod k).
 */
struct cf_sweep_iter {
	struct cf_sweep_cfg cfg;
	uint64_t shard, shards;
	uint64_t next_id;
	/* exhaustive position */
	uint64_t n;
	uint32_t sm, dm;
	uint32_t si, di; /* index into the per-side fault lists */
	uint64_t vi; /* variant: memset's fill, memmove's displacement */
	bool exhaustive_done;
	uint64_t random_done;
};

void cf_sweep_begin(struct cf_sweep_iter *it, const struct cf_sweep_cfg *cfg, uint64_t shard,
		    uint64_t shards);
/* Fills *c with the next case of this shard; false when there is none. */
bool cf_sweep_next(struct cf_sweep_iter *it, struct cf_case *c);
/* Go on at case id `id` (this shard's first id >= it): a sweep resumed past a case
 * that killed its executor. */
void cf_sweep_seek(struct cf_sweep_iter *it, uint64_t id);
/* Cases the whole sweep (all shards) has, and this shard's share. */
uint64_t cf_sweep_total(const struct cf_sweep_cfg *cfg);
uint64_t cf_sweep_shard_total(const struct cf_sweep_cfg *cfg, uint64_t shard, uint64_t shards);
/* This shard's cases with ids in [start, end): what a (resumed) run must report. */
uint64_t cf_sweep_count(const struct cf_sweep_cfg *cfg, uint64_t shard, uint64_t shards,
			uint64_t start, uint64_t end);
/* Case number id of the whole enumeration; false past its end. */
bool cf_sweep_case_at(const struct cf_sweep_cfg *cfg, uint64_t id, struct cf_case *c);

/*
 * The fault positions one side takes for length n and misalignment m
 * (index 0 is "no fault"). For copy and clear: no fault, then every
 * position below n + 2*szreg that a page boundary can produce at that
 * misalignment (0 always can: the buffer's own page is inaccessible).
 * For memcpy, memset and memmove one more: the first position at or past
 * top (the buffer's end; memmove: where the higher of both buffers ends,
 * cf_memmove_top): no fault is ever allowed.
 */
uint32_t cf_fault_count(const struct cf_sweep_cfg *cfg, uint64_t n, uint32_t m);
/* Position idx (< cf_fault_count) of that list, and the side's page offset. */
void cf_fault_at(const struct cf_sweep_cfg *cfg, uint32_t m, uint32_t idx, uint64_t top,
		 uint64_t *fault, uint32_t *off);

/*
 * Variants: the exhaustive sweep's innermost dimension. memset runs each length
 * and placement with every fill value class (cf_memset_fill_at), memmove with
 * every displacement dst - src from -max to +max (max = cf_memmove_max_disp(n)
 * in records.h, n + 16 for short copies): both copy directions, every overlap and exact
 * overlap (0). Other kinds have one variant.
 */
uint64_t cf_variant_count(const struct cf_sweep_cfg *cfg, uint64_t n);
uint32_t cf_memset_fill_at(uint32_t idx);

/* Random case number i of a seeded phase (counter-based: any order, any shard). */
void cf_random_case(const struct cf_sweep_cfg *cfg, uint64_t i, struct cf_case *c);

#endif /* CF_CASES_H */
