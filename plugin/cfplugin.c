/* SPDX-License-Identifier: MIT */
/*
 * cfplugin.c - copyfuzz's QEMU TCG plugin (QEMU 7.2 plugin API v1).
 *
 *   qemu-riscv64 -plugin cfplugin.so,fd=N executor ... --plugin-fd N
 *   (qemu-riscv32, qemu-aarch64 and qemu-arm the same way: one .so for every target)
 *
 * The plugin maps the memfd N (struct cf_plugin_shm, harness/plugin_abi.h)
 * that the guest executor maps too, and instruments only the routine under
 * test: instructions whose address lies in [code_lo, code_hi) or
 * [fixup_lo, fixup_hi) as the executor published them. For those it counts
 * instructions, control transfers and edges, and checks every memory access
 * against the windows of the current case. Everything is written straight
 * into the shared memory, so nothing is lost when the guest dies of a signal.
 *
 * Debian ships no qemu-plugin.h: the few API types and functions used here
 * are declared below (names, types and values of QEMU 7.2's API v1).
 *
 * Build: cc -O2 -Wall -Wextra -shared -fPIC -o cfplugin.so cfplugin.c
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "../harness/plugin_abi.h"

/* ---- the subset of QEMU's plugin API (v1, QEMU 7.2) this plugin uses ---- */

#define CF_EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
typedef uint32_t qemu_plugin_meminfo_t;

typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;

struct qemu_plugin_tb;
struct qemu_plugin_insn;

enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS = 0,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};

enum qemu_plugin_mem_rw {
	QEMU_PLUGIN_MEM_R = 1,
	QEMU_PLUGIN_MEM_W,
	QEMU_PLUGIN_MEM_RW,
};

typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *udata);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
					  uint64_t vaddr, void *udata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn); /* v1/v2 form */
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *udata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
				      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
				      void *udata);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);

CF_EXPORT extern int qemu_plugin_version;
CF_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
				  char **argv);

/* ---- plugin state ---- */

CF_EXPORT int qemu_plugin_version = 1;

/* What the callbacks need about one instrumented instruction. */
struct cf_insn {
	uint64_t pc;
	uint64_t size;
	uint64_t *count; /* its insn_count slot, or sink when it has none */
	uint8_t *flow; /* its insn_flow slot, or flow_sink */
	unsigned vec; /* CF_VEC_* (vector_class) */
};

#define CF_VEC_OP 1u /* a vector instruction (OP-V: vsetvli, arithmetic, moves) */
#define CF_VEC_MEM 2u /* a vector load or store */

static struct cf_plugin_shm *shm;
static uint64_t sink; /* counts of instructions past the slots */
static uint8_t flow_sink;
static uint8_t *last_flow = &flow_sink; /* the previous instruction's insn_flow */
static struct cf_insn slot_insn[CF_INSN_SLOTS]; /* udata of slotted instructions, reused */
/* The seq whose edges the map holds: the map is cleared when the executor bumps it. */
static uint64_t edges_seq;
static int warned_abi;

/*
 * What the plugin knows of a guest's instruction set: one row of cf_targets
 * (below the decoders) per QEMU target it decodes.
 */
struct cf_target {
	const char *name; /* qemu_info_t's target_name: qemu-<name> runs it */
	/* Can this instruction access data memory? (b: its size bytes) */
	bool (*may_access_memory)(const uint8_t *b, size_t size);
	/* Its CF_VEC_* class; NULL: the target has no vector class counted. */
	unsigned (*vector_class)(const uint8_t *b, size_t size);
};
/* The guest's row, chosen at install; NULL: not decoded, every instruction may
 * access memory. */
static const struct cf_target *target;

/* ---- run time: keep these short, they run on every routine instruction ---- */

/* A new case (seq moved): its edge map starts empty. The whole map, natively (a few
 * dozen ns): the guest can write to it too, so a list of the bytes set here would
 * miss some. */
static void clear_edges(struct cf_plugin_shm *s)
{
	memset(s->edges, 0, sizeof(s->edges));
	edges_seq = s->seq;
}

static void insn_exec(unsigned int vcpu_index, void *udata)
{
	const struct cf_insn *in = udata;
	struct cf_plugin_case *c = &shm->now;
	uint64_t pc = in->pc, last_pc = c->last_pc, last_size = c->last_size;

	(void)vcpu_index;
	if (shm->seq != edges_seq)
		clear_edges(shm);
	c->insns++;
	(*in->count)++;
	if (in->vec) {
		c->vinsns++;
		c->vmem_insns += in->vec == CF_VEC_MEM;
	}
	/* How the previous instruction of this case was left (none at a case's start). */
	if (last_size)
		*last_flow |= last_pc + last_size == pc ? CF_FLOW_NEXT : CF_FLOW_JUMP;
	last_flow = in->flow;
	/* An edge on a control transfer, or into the routine's first instruction. */
	if (last_pc + last_size != pc || last_size == 0) {
		uint64_t h = (last_pc * 0x9e3779b97f4a7c15ull ^ pc) * 0xbf58476d1ce4e5b9ull;
		uint8_t *e = &shm->edges[(h >> 32) % CF_COV_MAP_SIZE];
		uint8_t v = *e;

		c->taken += last_size != 0;
		c->edges_hit += v == 0;
		*e = (uint8_t)(v + (v != UINT8_MAX));
	}
	c->last_pc = pc;
	c->last_size = in->size;
}

/* [addr, end) lies entirely in [lo, hi); an empty window holds nothing. */
static inline bool within(uint64_t addr, uint64_t end, uint64_t lo, uint64_t hi)
{
	return addr >= lo && end <= hi && end > addr;
}

static void record(struct cf_plugin_case *c, uint64_t bit, struct cf_plugin_violation *v,
		   uint64_t pc, uint64_t addr, uint64_t size)
{
	if (!(c->viol & bit)) {
		v->pc = pc;
		v->addr = addr;
		v->size = size;
	}
	c->viol |= bit;
}

static void mem_access(unsigned int vcpu_index, qemu_plugin_meminfo_t info, uint64_t vaddr,
		       void *udata)
{
	const struct cf_insn *in = udata;
	struct cf_plugin_shm *s = shm;
	struct cf_plugin_case *c = &s->now;
	uint64_t size = 1ull << qemu_plugin_mem_size_shift(info);
	uint64_t end = vaddr + size;
	bool aligned = (vaddr & (size - 1)) == 0;

	(void)vcpu_index;
	c->misaligned += !aligned;
	if (in->vec == CF_VEC_MEM) { /* one callback per element */
		c->velems++;
		if (qemu_plugin_mem_is_store(info))
			c->vbytes_stored += size;
		else
			c->vbytes_loaded += size;
	}
	if (qemu_plugin_mem_is_store(info)) {
		c->stores++;
		c->bytes_stored += size;
		if (!within(vaddr, end, s->dst_lo, s->dst_hi) &&
		    !within(vaddr, end, s->stack_lo, s->stack_hi))
			record(c, CF_VIOL_STORE_OOB, &c->store_oob, in->pc, vaddr, size);
	} else {
		c->loads++;
		c->bytes_loaded += size;
		if (within(vaddr, end, s->src_lo, s->src_hi) ||
		    within(vaddr, end, s->stack_lo, s->stack_hi) ||
		    within(vaddr, end, s->data_lo, s->data_hi))
			return;
		/* A naturally aligned load sharing bytes with the source cannot
		 * fault where the source does not: a note, not an error. */
		if (aligned && vaddr < s->src_hi && end > s->src_lo)
			record(c, CF_VIOL_OVERREAD, &c->overread, in->pc, vaddr, size);
		else
			record(c, CF_VIOL_LOAD_OOB, &c->load_oob, in->pc, vaddr, size);
	}
}

/* ---- translation time ---- */

/*
 * Can this RISC-V instruction access data memory? (Loads, stores, FP/vector
 * loads and stores, AMOs, cbo.*.) An instruction whose length is neither 2
 * nor 4: yes.
 */
static bool riscv_may_access_memory(const uint8_t *b, size_t size)
{
	unsigned int f3;

	if (size == 2) {
		f3 = b[1] >> 5;
		switch (b[0] & 3) {
		case 0: /* c.fld c.lw c.ld/c.flw c.fsd c.sw c.sd/c.fsw (4: Zcb) */
			return f3 != 0;
		case 1: /* arithmetic, c.j, c.beqz, c.bnez */
			return false;
		default: /* c.fldsp c.lwsp c.ldsp/c.flwsp c.fsdsp c.swsp c.sdsp/c.fswsp */
			return f3 != 0 && f3 != 4;
		}
	}
	if (size == 4) {
		f3 = (b[1] >> 4) & 7;
		switch (b[0] & 0x7f) {
		case 0x03: /* LOAD */
		case 0x07: /* LOAD-FP: also vector loads */
		case 0x23: /* STORE */
		case 0x27: /* STORE-FP: also vector stores */
		case 0x2f: /* AMO, LR, SC */
			return true;
		case 0x0f: /* MISC-MEM: fence (no), fence.i (no), cbo.* (yes) */
			return f3 == 2;
		default:
			return false;
		}
	}
	return true;
}

/*
 * Can this A64 instruction access data memory? Decided by op0, bits [28:25]
 * of the (always little-endian) word. The "loads and stores" class x1x0 holds
 * every scalar, SIMD&FP, pair, exclusive, atomic, tag and unprivileged
 * (ldtr/sttr) access; SVE (0010) and SME (0000) hold loads and stores too, not
 * decoded finer. No: data processing (100x, x101), SIMD&FP arithmetic (x111)
 * and branches, exceptions and system (101x), except SYS #3, C7 (the EL0 cache
 * maintenance group, whose DC ZVA/GVA/GZVA write a block). Unallocated: yes.
 */
static bool aarch64_may_access_memory(const uint8_t *b, size_t size)
{
	uint32_t w;
	unsigned int op0;

	if (size != 4)
		return true;
	w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	op0 = (w >> 25) & 0xf;
	if ((op0 & 0xe) == 0x8 || (op0 & 0x7) == 0x5 || (op0 & 0x7) == 0x7)
		return false;
	if ((op0 & 0xe) == 0xa) /* SYS #3, C7, Cm, #op2, Xt is 0xd50b7xxx */
		return (w & 0xfffff000u) == 0xd50b7000u;
	return true;
}

/*
 * Can this A32 (ARM state) instruction access data memory? Decided by the
 * encoding classes of the (little-endian) word: op1, bits [27:25].
 *   010, 011 with bit 4 clear: load/store word and byte (ldr, strbt, ...): yes;
 *     011 with bit 4 set is the media group: no.
 *   100: load/store multiple (ldm, stm, push, pop): yes.
 *   000 with bits 7 and 4 set: the extra loads and stores (ldrh, ldrsb, ldrd,
 *     strht, ...) and, with bits 6:5 clear, the synchronization primitives
 *     (ldrex, strex, lda, stl, swp) when bit 24 is set: yes; multiplies
 *     (bit 24 clear): no. Other data processing, and 001: no.
 *   110: coprocessor and VFP loads and stores (ldc, vldr, vldm, vpush): yes,
 *     but the two-register transfers (mcrr, mrrc, vmov of a pair) 1100010.
 *   101 (b, bl) and 111 (svc, mcr, mrc, vmrs, VFP arithmetic): no.
 * The unconditional space (cond 1111): Advanced SIMD element and structure
 * loads and stores (0100xxx0 in bits 27:20), srs and rfe (100), ldc2/stc2
 * (110, but mcrr2/mrrc2): yes; blx (immediate) (101), Advanced SIMD data
 * processing (001), cps and setend, clrex and the barriers, the pld/pli hints
 * (they never access data), cdp2/mcr2/mrc2: no; the rest, in doubt: yes.
 * Four bytes are taken as ARM state (copyfuzz builds routines -marm); a
 * two-byte (Thumb) instruction: yes. A load into pc (pop {..., pc}) ends its
 * TB with callbacks (see below), which it needs for its stack accesses: the
 * ARM harness has no helper-made accesses (exclusives, atomics) to misreport.
 */
static bool a32_may_access_memory(const uint8_t *b, size_t size)
{
	uint32_t w;
	unsigned int op1, hi;

	if (size != 4)
		return true;
	w = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	op1 = (w >> 25) & 7;
	hi = (w >> 20) & 0xff; /* bits [27:20] */
	if (w >> 28 == 0xf) {
		switch (op1) {
		case 0: /* cps, setend; else unallocated */
			return hi != 0x10;
		case 1: /* Advanced SIMD data processing */
			return false;
		case 2: /* element/structure loads and stores; pld/pli (immediate)
			 * and the nop hints (bits 21:20 = 01); clrex and barriers */
			if ((hi & 0xf1) == 0x40)
				return true;
			return (hi & 3) != 1 && hi != 0x57;
		case 3: /* pld/pli (register); else unallocated */
			return (hi & 3) != 1 || (w & 0x10) != 0;
		case 5: /* blx (immediate) */
			return false;
		case 6: /* ldc2/stc2, but mcrr2/mrrc2 */
			return (hi & 0xfe) != 0xc4;
		case 7: /* cdp2, mcr2, mrc2; unallocated */
			return (hi & 0xf0) == 0xf0;
		default: /* srs, rfe */
			return true;
		}
	}
	switch (op1) {
	case 0: /* extra loads/stores and synchronization primitives */
		if ((w & 0x90) != 0x90)
			return false;
		return (w & 0x60) != 0 || (w & (1u << 24)) != 0;
	case 2:
	case 4:
		return true;
	case 3:
		return (w & 0x10) == 0;
	case 6:
		return (hi & 0xfe) != 0xc4;
	default: /* 1: data processing (immediate); 5: b, bl; 7: svc, coprocessor */
		return false;
	}
}

/*
 * Is this a RISC-V vector instruction (RVV 1.0)? OP-V (0x57) is every vector arithmetic,
 * move and vset{i}vl{i}; LOAD-FP/STORE-FP (0x07/0x27) with width 0, 5, 6 or 7 is a
 * vector load or store of 8-, 16-, 32- or 64-bit elements (widths 1-4 are the scalar
 * flh/flw/fld/flq). Every addressing mode counts (unit-stride, strided, indexed,
 * segment, whole-register, fault-only-first): their bytes come from QEMU's per-element
 * memory callbacks, not from decoding vl or the stride. Not decoded: the vector
 * crypto and other OP-VE (0x77) instructions, which QEMU 7.2 does not implement.
 */
static unsigned riscv_vector_class(const uint8_t *b, size_t size)
{
	unsigned int width;

	if (size != 4)
		return 0;
	width = (b[1] >> 4) & 7;
	switch (b[0] & 0x7f) {
	case 0x57:
		return CF_VEC_OP;
	case 0x07:
	case 0x27:
		return width == 0 || width >= 5 ? CF_VEC_MEM : 0;
	default:
		return 0;
	}
}

/*
 * The targets decoded, by the exact name QEMU gives them (qemu-riscv64's is
 * "riscv64"): a row for each user-mode QEMU an architecture's executors run
 * under (harness/arch/<arch>/target.mk's QEMU; tests/test_targets.py checks
 * that each has one). AArch64's SIMD is not counted as vector.
 */
static const struct cf_target cf_targets[] = {
	{"riscv64", riscv_may_access_memory, riscv_vector_class},
	{"riscv32", riscv_may_access_memory, riscv_vector_class},
	{"aarch64", aarch64_may_access_memory, NULL},
	{"aarch64_be", aarch64_may_access_memory, NULL}, /* A64 words are LE here too */
	{"arm", a32_may_access_memory, NULL}, /* not armeb: its code may be big-endian */
};

/*
 * Can this instruction access data memory? Only those get a memory callback.
 * Besides saving work, this avoids a QEMU 7.2 bug (fixed in 8.0, "plugin: fix
 * clearing of plugin_mem_cbs before TB exit"): an instruction with memory
 * callbacks that ends its TB (a branch, jal, ret) leaves them armed, and the
 * next helper-made access of uninstrumented code (an AMO, a vector element,
 * e.g. glibc's locks in printf) is then reported as that instruction's. When
 * in doubt (no bytes, a target not decoded), say yes.
 */
static bool may_access_memory(const struct qemu_plugin_insn *insn, size_t size)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);

	return !b || !target || target->may_access_memory(b, size);
}

/* The instruction's CF_VEC_* class: 0 where its target has none. */
static unsigned vector_class(const struct qemu_plugin_insn *insn, size_t size)
{
	const uint8_t *b = qemu_plugin_insn_data(insn);

	return b && target && target->vector_class ? target->vector_class(b, size) : 0;
}

/* The udata for the instruction at pc, or NULL if it is not the routine's. */
static struct cf_insn *describe(uint64_t pc, uint64_t size, uint64_t code_lo, uint64_t code_hi,
				uint64_t fixup_lo, uint64_t fixup_hi)
{
	uint64_t slot;
	struct cf_insn *in;

	if (pc >= code_lo && pc < code_hi)
		slot = (pc - code_lo) / 2;
	else if (pc >= fixup_lo && pc < fixup_hi)
		slot = (code_hi - code_lo) / 2 + (pc - fixup_lo) / 2;
	else
		return NULL;
	if (slot < CF_INSN_SLOTS) {
		/* One entry per slot, rewritten with the same values when the
		 * code is translated again: no allocation per translation. */
		in = &slot_insn[slot];
		in->count = &shm->insn_count[slot];
		in->flow = &shm->insn_flow[slot];
	} else {
		/* Past the slots (a routine over 16 KiB): still counted and
		 * checked, without a per-instruction count. Rare enough that a
		 * retranslation leaking 24 bytes does not matter. */
		in = malloc(sizeof(*in));
		if (!in)
			return NULL;
		in->count = &sink;
		in->flow = &flow_sink;
	}
	in->pc = pc;
	in->size = size;
	return in;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct cf_plugin_shm *s = shm;
	uint64_t code_lo = s->code_lo, code_hi = s->code_hi;
	uint64_t fixup_lo = s->fixup_lo, fixup_hi = s->fixup_hi;
	size_t n = qemu_plugin_tb_n_insns(tb);

	(void)id;
	/* The executor writes code_lo last: until then this is harness code. */
	if (code_lo == 0 || code_hi <= code_lo)
		return;
	if (s->magic != CF_PLUGIN_MAGIC || s->version != CF_PLUGIN_VERSION) {
		if (!warned_abi) {
			warned_abi = 1;
			fprintf(stderr,
				"cfplugin: shared memory says magic %#x version %u, expected "
				"%#x version %u: not instrumenting\n",
				s->magic, s->version, CF_PLUGIN_MAGIC, CF_PLUGIN_VERSION);
		}
		return;
	}
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		uint64_t pc = qemu_plugin_insn_vaddr(insn);
		size_t size = qemu_plugin_insn_size(insn);
		struct cf_insn *in = describe(pc, size, code_lo, code_hi, fixup_lo, fixup_hi);

		if (!in)
			continue;
		in->vec = vector_class(insn, size);
		qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec, QEMU_PLUGIN_CB_NO_REGS, in);
		if (may_access_memory(insn, size))
			qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
							 QEMU_PLUGIN_MEM_RW, in);
	}
}

/* ---- installation ---- */

static int usage(const char *why, const char *arg)
{
	fprintf(stderr, "cfplugin: %s%s%s\n", why, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr,
		"cfplugin: usage: -plugin cfplugin.so,fd=N  (N: an inherited memfd of "
		"%zu bytes, see harness/plugin_abi.h)\n",
		sizeof(struct cf_plugin_shm));
	return -1;
}

/* info is only valid during install: keep what the decoders need. */
static const struct cf_target *target_row(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < sizeof(cf_targets) / sizeof(cf_targets[0]); i++)
		if (strcmp(name, cf_targets[i].name) == 0)
			return &cf_targets[i];
	fprintf(stderr,
		"cfplugin: target %s is not decoded: every instruction gets a memory "
		"callback\n",
		name);
	return NULL;
}

CF_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
				  char **argv)
{
	long fd = -1;
	struct stat st;
	void *p;

	if (info && info->system_emulation)
		return usage("needs user-mode QEMU (qemu-riscv64, qemu-aarch64, ...)", NULL);
	target = target_row(info ? info->target_name : NULL);
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (strncmp(a, "fd=", 3) == 0) {
			char *end;

			errno = 0;
			fd = strtol(a + 3, &end, 10);
			if (errno || end == a + 3 || *end || fd < 0 || fd > INT32_MAX)
				return usage("bad fd", a);
		} else {
			return usage("unknown argument", a);
		}
	}
	if (fd < 0)
		return usage("missing fd=N", NULL);
	if (fstat((int)fd, &st) != 0)
		return usage("fd is not open", strerror(errno));
	if (st.st_size < (off_t)sizeof(struct cf_plugin_shm)) {
		fprintf(stderr, "cfplugin: fd %ld holds %lld bytes, need %zu\n", fd,
			(long long)st.st_size, sizeof(struct cf_plugin_shm));
		return -1;
	}
	p = mmap(NULL, sizeof(struct cf_plugin_shm), PROT_READ | PROT_WRITE, MAP_SHARED, (int)fd,
		 0);
	if (p == MAP_FAILED)
		return usage("cannot map fd", strerror(errno));
	shm = p;
	/* A stale or foreign memory: refuse rather than scribble on it. */
	if (shm->magic != 0 &&
	    (shm->magic != CF_PLUGIN_MAGIC || shm->version != CF_PLUGIN_VERSION)) {
		fprintf(stderr,
			"cfplugin: fd %ld holds magic %#x version %u, expected %#x "
			"version %u\n",
			fd, shm->magic, shm->version, CF_PLUGIN_MAGIC, CF_PLUGIN_VERSION);
		munmap(p, sizeof(struct cf_plugin_shm));
		shm = NULL;
		return -1;
	}
	/* Disarm: ranges left by an earlier run on a reused memfd must not get
	 * harness code instrumented before this executor publishes its own. */
	shm->code_lo = shm->code_hi = shm->fixup_lo = shm->fixup_hi = 0;
	clear_edges(shm); /* a reused memfd: the last run's edges */
	/* The fd stays open: the guest maps it too (--plugin-fd N). */
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	shm->plugin_ready = CF_PLUGIN_MAGIC;
	return 0;
}
