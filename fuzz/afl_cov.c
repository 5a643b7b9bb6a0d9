/* SPDX-License-Identifier: MIT */
/*
 * afl_cov.c - RISC-V coverage into AFL++'s map (the AFL++ build only).
 *
 * AFL++'s runtime numbers every guard in the __sancov_guards section when the
 * program starts (PCGUARD instrumentation), growing its map to fit. Reserving
 * one guard per byte of the plugin's edge map here gets each RISC-V edge its
 * own AFL map index; after each case the driver adds the edge counts there.
 * Compiled with plain clang, not afl-clang-fast: this file declares the map.
 */
#include <stdint.h>
#include <string.h>

#include "plugin_abi.h"

__attribute__((section("__sancov_guards"),
	       used)) static uint32_t riscv_edge_guards[CF_COV_MAP_SIZE];

_Static_assert(CF_COV_MAP_SIZE % 8 == 0, "cf_afl_feed reads the edge map in words");

extern uint8_t *__afl_area_ptr;

void cf_afl_feed(const uint8_t *edges);
void cf_afl_feed(const uint8_t *edges)
{
	uint8_t *map = __afl_area_ptr;
	if (!map)
		return;
	/* A case takes a few dozen edges of 4096: skip the map eight zero bytes at a time
	 * (this loop ran for every execution: 5 % of an AFL++ campaign's time, docs/perf.md). */
	for (unsigned w = 0; w < CF_COV_MAP_SIZE; w += 8) {
		uint64_t any;
		memcpy(&any, edges + w, sizeof any);
		if (!any)
			continue;
		for (unsigned i = w; i < w + 8; i++)
			if (edges[i] && riscv_edge_guards[i])
				map[riscv_edge_guards[i]] += edges[i];
	}
}
