/* Prints the offsets of struct cf_plugin_shm, for tests/test_plugin_e2e.py. */
#include <stddef.h>
#include <stdio.h>

#include "../../harness/plugin_abi.h"

#define OFF(f) printf("%s %zu\n", #f, offsetof(struct cf_plugin_shm, f))

int main(void)
{
	OFF(plugin_ready);
	OFF(code_lo);
	OFF(fixup_hi);
	OFF(stack_hi);
	OFF(now);
	OFF(now.viol);
	OFF(now.store_oob);
	OFF(now.overread);
	OFF(now.edges_hit);
	OFF(edges);
	OFF(cases);
	OFF(insn_count);
	OFF(extable_hits);
	OFF(insn_flow);
	OFF(data_lo);
	OFF(data_hi);
	printf("size %zu\n", sizeof(struct cf_plugin_shm));
	printf("snapshot.slot %zu\n", offsetof(struct cf_cov_snapshot, slot));
	printf("snapshot.entry %zu\n", offsetof(struct cf_cov_snapshot, entry));
	printf("snapshot.size %zu\n", sizeof(struct cf_cov_snapshot));
	printf("version %d\n", CF_PLUGIN_VERSION);
	printf("snapshot.magic %u\n", CF_SNAPSHOT_MAGIC);
	return 0;
}
