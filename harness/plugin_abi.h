/* SPDX-License-Identifier: MIT */
/*
 * plugin_abi.h - the memory the executor (guest) shares with the QEMU plugin
 * (host), one definition for both and for tool/copyfuzz/plugin.py.
 *
 * The tool creates a memfd of sizeof(struct cf_plugin_shm) and hands its fd
 * to both: `qemu-riscv64 -plugin cfplugin.so,fd=N executor ... --plugin-fd N`.
 * Under qemu-user the guest's mmap of that fd maps the same host pages, so
 * the two sides read and write one structure; no /dev/shm, no files.
 *
 * Protocol per case (the executor drives it):
 *   1. executor: writes the windows, zeroes the per-case block, bumps seq;
 *   2. the routine runs; the plugin, instrumenting only [code_lo, code_hi)
 *      and [fixup_lo, fixup_hi), counts into the per-case block and records
 *      the first access outside the windows (faulting accesses produce no
 *      callback: the executor's fault log stays the truth for faults);
 *   3. executor: reads the per-case block into the result.
 * Cumulative counters (per-instruction counts, extable hits) are only ever
 * added to; the tool reads them after a run (copyfuzz cov).
 *
 * All fields are naturally aligned 64-bit (or byte arrays); the layout does
 * not depend on XLEN, so RV32 and RV64 guests share it with the x86-64 host.
 */
#ifndef CF_PLUGIN_ABI_H
#define CF_PLUGIN_ABI_H

#include <stdint.h>

#define CF_PLUGIN_MAGIC 0x31504643u /* "CFP1" */
#define CF_PLUGIN_VERSION 3
#define CF_COV_MAP_SIZE 4096 /* edge-coverage bytes, reset per case */
#define CF_INSN_SLOTS 8192 /* per-instruction counts: (pc - lo) / 2 */
#define CF_EXTABLE_SLOTS 1024 /* per-entry hit counts (executor) */

/* insn_flow bits: how execution left an instruction (cumulative) */
#define CF_FLOW_NEXT 1u /* to the next instruction: a branch not taken */
#define CF_FLOW_JUMP 2u /* by a control transfer: a branch taken, a jump, a fault to a fixup */

/* per_case.viol bits */
#define CF_VIOL_STORE_OOB 1u /* a store touched a byte outside the dst window */
#define CF_VIOL_LOAD_OOB 2u /* a load touched a byte outside the src window */
#define CF_VIOL_OVERREAD 4u /* a naturally aligned load sharing its word with the src window */

struct cf_plugin_violation {
	uint64_t pc, addr, size;
};

struct cf_plugin_case {
	/* written by the plugin while the routine runs */
	uint64_t insns; /* instructions executed in the routine's code */
	uint64_t loads, stores; /* memory accesses (each vector element counts) */
	uint64_t bytes_loaded, bytes_stored;
	uint64_t misaligned; /* accesses whose address is not a multiple of their size */
	uint64_t taken; /* control transfers to anything but the next instruction */
	uint64_t viol; /* CF_VIOL_* bits */
	struct cf_plugin_violation store_oob, load_oob, overread; /* the first of each */
	uint64_t last_pc; /* plugin state: previous instruction, for edges and taken */
	uint64_t last_size;
	uint64_t edges_hit; /* distinct edge-map bytes set this case */
	/* vector (RVV) instructions, decoded by the plugin from their encoding: any OP-V
	 * (vsetvli and arithmetic), and the loads and stores (LOAD-FP/STORE-FP with a
	 * vector width), whose element accesses QEMU reports one callback each */
	uint64_t vinsns; /* vector instructions executed, loads and stores included */
	uint64_t vmem_insns; /* vector loads and stores executed */
	uint64_t velems; /* elements they accessed (vl per unit-stride access, active ones) */
	uint64_t vbytes_loaded, vbytes_stored; /* bytes they moved (elements x element width) */
};

struct cf_plugin_shm {
	uint32_t magic, version; /* executor sets, plugin checks */
	uint64_t plugin_ready; /* plugin sets to CF_PLUGIN_MAGIC once installed */
	/* set by the executor once */
	uint64_t code_lo, code_hi; /* the routine's code (cf_target_text) */
	uint64_t fixup_lo, fixup_hi; /* its .fixup section, or 0, 0 */
	/* set by the executor per case */
	uint64_t seq;
	uint64_t src_lo, src_hi; /* loads may touch these bytes */
	uint64_t dst_lo, dst_hi; /* stores may touch these bytes */
	uint64_t stack_lo, stack_hi; /* the routine's own stack: loads and stores allowed */
	struct cf_plugin_case now; /* per case, zeroed by the executor */
	uint8_t edges[CF_COV_MAP_SIZE]; /* per case, zeroed by the executor */
	/* cumulative */
	uint64_t cases; /* cases run with the plugin */
	uint64_t insn_count[CF_INSN_SLOTS]; /* by (pc - code_lo) / 2, code then fixup */
	uint64_t extable_hits[CF_EXTABLE_SLOTS]; /* by table entry index (executor) */
	uint8_t insn_flow[CF_INSN_SLOTS]; /* CF_FLOW_* bits, slots as insn_count */
	/* set by the executor once: the routine's own data (cf_target_data), or 0, 0;
	 * loads from it are no violation (stores are) */
	uint64_t data_lo, data_hi;
};

/*
 * A coverage snapshot: what the fuzz driver (fuzz/driver.c) has covered of the
 * routine so far, written to $COPYFUZZ_COVERAGE/cov-<pid> (whole files only:
 * written aside, then renamed) about once a second and at exit. The tool ORs
 * the snapshots of every worker and measures them against the routine's
 * static branches and table entries (tool/copyfuzz/coverage.py).
 */
#define CF_SNAPSHOT_MAGIC 0x31534643u /* "CFS1" */
#define CF_SLOT_RAN 4u /* snapshot slot bit: executed; CF_FLOW_* below it */

struct cf_cov_snapshot {
	uint32_t magic, version; /* CF_SNAPSHOT_MAGIC, CF_PLUGIN_VERSION */
	uint64_t code_lo, code_hi, fixup_lo, fixup_hi;
	uint64_t cases; /* cases run with the plugin */
	uint8_t slot[CF_INSN_SLOTS]; /* CF_SLOT_RAN | CF_FLOW_* */
	uint8_t entry[CF_EXTABLE_SLOTS]; /* 1: the table entry was faulted through */
};

#endif /* CF_PLUGIN_ABI_H */
