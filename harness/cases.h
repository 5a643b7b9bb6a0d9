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

/* Can a side at page offset off have its first inaccessible byte at fault? */
bool cf_fault_reachable(uint32_t off, uint64_t fault);

struct cf_sweep_cfg {
	uint16_t kind, profile;
	uint32_t szreg;          /* misalignments run over 0 .. 2*szreg-1 */
	uint64_t min_len, max_len;
	uint64_t random_count, random_seed, random_max_len;
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
	bool exhaustive_done;
	uint64_t random_done;
};

void cf_sweep_begin(struct cf_sweep_iter *it, const struct cf_sweep_cfg *cfg,
		    uint64_t shard, uint64_t shards);
/* Fills *c with the next case of this shard; false when there is none. */
bool cf_sweep_next(struct cf_sweep_iter *it, struct cf_case *c);
/* Cases the whole sweep (all shards) has, and this shard's share. */
uint64_t cf_sweep_total(const struct cf_sweep_cfg *cfg);
uint64_t cf_sweep_shard_total(const struct cf_sweep_cfg *cfg, uint64_t shard, uint64_t shards);

/*
 * The fault positions one side takes for length n and misalignment m
 * (index 0 is "no fault"). For copy and clear: no fault, then every
 * position below n + 2*szreg that a page boundary can produce at that
 * misalignment (0 always can: the buffer's own page is inaccessible).
 * For memcpy only positions at or past n: no fault is ever allowed.
 */
uint32_t cf_fault_count(const struct cf_sweep_cfg *cfg, uint64_t n, uint32_t m);
/* Position idx (< cf_fault_count) of that list, and the side's page offset. */
void cf_fault_at(const struct cf_sweep_cfg *cfg, uint64_t n, uint32_t m, uint32_t idx,
		 uint64_t *fault, uint32_t *off);

/* Random case number i of a seeded phase (counter-based: any order, any shard). */
void cf_random_case(const struct cf_sweep_cfg *cfg, uint64_t i, struct cf_case *c);

#endif /* CF_CASES_H */
