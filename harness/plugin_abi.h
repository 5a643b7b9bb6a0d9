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
 *      callback: the executor's fault log stays the truth for faults); at
 *      the first instruction it sees under a new seq it clears the edge map
 *      (natively, where the executor's loop over it ran under QEMU);
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
#define CF_PLUGIN_VERSION 4
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

/* The layouts: X(type, name, dims, "meaning") per field, as in records.h; the tool reads
 * them (tool/copyfuzz/cheader.py, plugin.py) and tests/c/plugin_abi_dump.c prints the
 * compiler's offsets for tests/test_plugin_e2e.py. */
#define CF_X_FIELD(type, name, dims, about) type name dims;

#define CF_PLUGIN_VIOLATION_FIELDS(X)                    \
	X(uint64_t, pc, , "the access's instruction")    \
	X(uint64_t, addr, , "the first byte it touched") \
	X(uint64_t, size, , "how many bytes it touched")

typedef struct cf_plugin_violation {
	CF_PLUGIN_VIOLATION_FIELDS(CF_X_FIELD)
} cf_plugin_violation_t;

/* Written by the plugin while the routine runs. The vector (RVV) counts are decoded by
 * the plugin from the encoding: any OP-V (vsetvli and arithmetic), and the loads and
 * stores (LOAD-FP/STORE-FP with a vector width), whose element accesses QEMU reports one
 * callback each. */
#define CF_PLUGIN_CASE_FIELDS(X)                                                                 \
	X(uint64_t, insns, , "instructions executed in the routine's code")                      \
	X(uint64_t, loads, , "memory loads (each vector element counts)")                        \
	X(uint64_t, stores, , "memory stores (each vector element counts)")                      \
	X(uint64_t, bytes_loaded, , "bytes loaded")                                              \
	X(uint64_t, bytes_stored, , "bytes stored")                                              \
	X(uint64_t, misaligned, , "accesses whose address is not a multiple of their size")      \
	X(uint64_t, taken, , "control transfers to anything but the next instruction")           \
	X(uint64_t, viol, , "CF_VIOL_* bits")                                                    \
	X(cf_plugin_violation_t, store_oob, , "the first store outside the dst window")          \
	X(cf_plugin_violation_t, load_oob, , "the first load outside the src window")            \
	X(cf_plugin_violation_t, overread, , "the first aligned load sharing a word with src")   \
	X(uint64_t, last_pc, , "plugin state: the previous instruction, for edges and taken")    \
	X(uint64_t, last_size, , "plugin state: its size")                                       \
	X(uint64_t, edges_hit, , "distinct edge-map bytes set this case")                        \
	X(uint64_t, vinsns, , "vector instructions executed, loads and stores included")         \
	X(uint64_t, vmem_insns, , "vector loads and stores executed")                            \
	X(uint64_t, velems, , "elements they accessed (vl per unit-stride access, active ones)") \
	X(uint64_t, vbytes_loaded, , "bytes vector loads moved (elements x element width)")      \
	X(uint64_t, vbytes_stored, , "bytes vector stores moved")

typedef struct cf_plugin_case {
	CF_PLUGIN_CASE_FIELDS(CF_X_FIELD)
} cf_plugin_case_t;

#define CF_PLUGIN_SHM_FIELDS(X)                                                                  \
	X(uint32_t, magic, , "the executor sets it, the plugin checks it")                       \
	X(uint32_t, version, , "CF_PLUGIN_VERSION: the executor sets it, the plugin checks it")  \
	X(uint64_t, plugin_ready, , "the plugin sets CF_PLUGIN_MAGIC once installed")            \
	X(uint64_t, code_lo, , "executor, once: the routine's code (cf_target_text)")            \
	X(uint64_t, code_hi, , "its end")                                                        \
	X(uint64_t, fixup_lo, , "executor, once: its .fixup section, or 0")                      \
	X(uint64_t, fixup_hi, , "its end, or 0")                                                 \
	X(uint64_t, seq, , "executor, per case")                                                 \
	X(uint64_t, src_lo, , "loads may touch these bytes")                                     \
	X(uint64_t, src_hi, , "their end")                                                       \
	X(uint64_t, dst_lo, , "stores may touch these bytes")                                    \
	X(uint64_t, dst_hi, , "their end")                                                       \
	X(uint64_t, stack_lo, , "the routine's own stack: loads and stores allowed")             \
	X(uint64_t, stack_hi, , "its end")                                                       \
	X(cf_plugin_case_t, now, , "per case, zeroed by the executor")                           \
	X(uint8_t, edges, [CF_COV_MAP_SIZE], "per case: the plugin clears it on a new seq")      \
	X(uint64_t, cases, , "cumulative: cases run with the plugin")                            \
	X(uint64_t, insn_count, [CF_INSN_SLOTS],                                                 \
	  "cumulative, by (pc - code_lo) / 2, code then fixup")                                  \
	X(uint64_t, extable_hits, [CF_EXTABLE_SLOTS],                                            \
	  "cumulative, by table entry index (executor)")                                         \
	X(uint8_t, insn_flow, [CF_INSN_SLOTS], "cumulative CF_FLOW_* bits, slots as insn_count") \
	X(uint64_t, data_lo, , "executor, once: the routine's own data (cf_target_data), or 0")  \
	X(uint64_t, data_hi, , "its end; loads from it are no violation (stores are)")

struct cf_plugin_shm {
	CF_PLUGIN_SHM_FIELDS(CF_X_FIELD)
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

#define CF_COV_SNAPSHOT_FIELDS(X)                                    \
	X(uint32_t, magic, , "CF_SNAPSHOT_MAGIC")                    \
	X(uint32_t, version, , "CF_PLUGIN_VERSION")                  \
	X(uint64_t, code_lo, , "as the shared memory's")             \
	X(uint64_t, code_hi, , "")                                   \
	X(uint64_t, fixup_lo, , "")                                  \
	X(uint64_t, fixup_hi, , "")                                  \
	X(uint64_t, cases, , "cases run with the plugin")            \
	X(uint8_t, slot, [CF_INSN_SLOTS], "CF_SLOT_RAN | CF_FLOW_*") \
	X(uint8_t, entry, [CF_EXTABLE_SLOTS], "1: the table entry was faulted through")

struct cf_cov_snapshot {
	CF_COV_SNAPSHOT_FIELDS(CF_X_FIELD)
};

#endif /* CF_PLUGIN_ABI_H */
