/* SPDX-License-Identifier: MIT */
/*
 * fake_cfref.c - the plan of tests/fake_executor.py's sweep behind libcfref.so's
 * entry points (tool/copyfuzz/plan.py): case ids 0..99 whatever the options, case i
 * being n = i, src_off = i % 16, dst_off = i % 8, no faults. The fake tree of
 * tests/test_cli.py builds it in place of the real library; tests/test_executor.py
 * loads it directly.
 */
#include "../../harness/cases.h"

#define TOTAL 100u

static uint64_t ids_below(uint64_t x, uint64_t shard, uint64_t shards)
{
	return x > shard ? (x - shard + shards - 1) / shards : 0;
}

uint64_t cf_sweep_count(const struct cf_sweep_cfg *cfg, uint64_t shard, uint64_t shards,
			uint64_t start, uint64_t end)
{
	(void)cfg;
	if (end > TOTAL)
		end = TOTAL;
	return start < end ? ids_below(end, shard, shards) - ids_below(start, shard, shards) : 0;
}

bool cf_sweep_case_at(const struct cf_sweep_cfg *cfg, uint64_t id, struct cf_case *c)
{
	if (id >= TOTAL)
		return false;
	*c = (struct cf_case){.magic = CF_CASE_MAGIC,
			      .kind = cfg->kind,
			      .profile = cfg->profile,
			      .id = id,
			      .n = id,
			      .src_off = (uint32_t)(id % 16),
			      .dst_off = (uint32_t)(id % 8),
			      .src_fault = CF_NO_FAULT,
			      .dst_fault = CF_NO_FAULT};
	return true;
}

enum cf_case_error cf_case_check_for(const struct cf_case *c, uint16_t kind)
{
	(void)c, (void)kind;
	return CF_CASE_OK;
}
