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

#include "plugin_abi.h"

__attribute__((section("__sancov_guards"),
	       used)) static uint32_t riscv_edge_guards[CF_COV_MAP_SIZE];

extern uint8_t *__afl_area_ptr;

void cf_afl_feed(const uint8_t *edges);
void cf_afl_feed(const uint8_t *edges)
{
	uint8_t *map = __afl_area_ptr;
	if (!map)
		return;
	for (unsigned i = 0; i < CF_COV_MAP_SIZE; i++)
		if (edges[i] && riscv_edge_guards[i])
			map[riscv_edge_guards[i]] += edges[i];
}
