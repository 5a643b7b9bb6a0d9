/* SPDX-License-Identifier: MIT */
/*
 * driver.c - the native fuzz driver (LLVMFuzzerTestOneInput) for libFuzzer
 * and AFL++ (libAFLDriver): bytes -> case -> a persistent riscv executor under
 * qemu with the coverage plugin -> result, coverage and observation back ->
 * the oracle (ref/, natively, under the build's sanitizers: ASan+UBSan from the
 * Makefile, the engine's on a fuzzing service) -> abort on a finding, so the
 * engine saves the input. This file decodes inputs and judges results; the
 * environment, the bundle and CPU pinning are driver_config.c's, the executor and
 * the pipes to it executor_channel.c's (driver.h between them).
 *
 * Environment: COPYFUZZ_EXECUTOR, COPYFUZZ_KIND, ... as listed, with their defaults and
 * meaning, in the registry fuzz/envs.def (fuzz/README.md shows it as a table). copyfuzz
 * fuzz sets them through tool/copyfuzz/envs.py. A bundled target (below) finds what is
 * not set beside itself.
 *
 * Bundle (.clusterfuzzlite/build.sh, docs/clusterfuzzlite.md): on a fuzzing
 * service only the output directory reaches the machine that runs the target,
 * and neither the working directory nor the environment is ours. So a target
 * built there carries its routine, kind and profile as -DCF_BUNDLE_ROUTINE=
 * "riscv/copy_user", -DCF_BUNDLE_KIND="copy", -DCF_BUNDLE_PROFILE="exact", and
 * finds the rest beside its own binary (/proc/self/exe, else argv[0]), in
 * <dir>/copyfuzz/: <routine>.elf, cfplugin.so, and qemu/ (qemu-riscv64, its
 * shared libraries in lib/ and their loader ld.so, run as
 * "ld.so --inhibit-cache --library-path lib qemu-riscv64 ..." so nothing of the
 * host's is needed). A variable that is set still wins over the bundle.
 *
 * Input layout (every byte string decodes to a valid case; missing bytes are 0):
 *   [0]    bits 0-1: src side, bits 2-3: dst side: 0/1 no fault, 2 the buffer's
 *          own page is gone (fault at 0), 3 a fault after k whole pages
 *   [1]    n's width in bits (mod 17); [2..3] n's bits (little-endian), so
 *          short lengths are as likely as long ones; n <= COPYFUZZ_MAX_LEN
 *   [4..5] src page offset (mod 4096), [6..7] dst page offset
 *   [8]    src k, [9] dst k: the fault is at k*4096 - offset, k in 1..pages+1
 *   [10..13] v (little-endian): memset's fill (the int argument, all 32 bits);
 *          memmove's displacement dst - src = v mod (2*max+1) - max, max =
 *          cf_memmove_max_disp(n) (n + 16 for short copies)
 * memcpy, memset and memmove routines only get faults at or past the end (any
 * fault inside is a bug by definition; memmove: past both buffers, which share
 * one mapping); clear, memset and memmove have no source side of their own.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "driver.h"
#include "ref.h"

/* AFL++ build only (fuzz/afl_cov.c): RISC-V edges into AFL's map. */
void cf_afl_feed(const uint8_t *edges) __attribute__((weak));

/* libFuzzer reads these as extra coverage (zeroed before each input). */
__attribute__((section("__libfuzzer_extra_counters"), aligned(64),
	       used)) static uint8_t extra_counters[CF_COV_MAP_SIZE];

static uint64_t case_id;

static void write_snapshot(void);

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int forkserver = getenv("__AFL_SHM_ID") != NULL; /* under afl-fuzz: see cf_channel_ensure */
	cf_config_load(argc && *argc > 0 ? (*argv)[0] : NULL);
	cf_processes_init(forkserver);
	cf_channel_init();
	signal(SIGPIPE, SIG_IGN);
	if (cf_is_libfuzzer_parent(*argc, *argv))
		return 0; /* the workers start their own executors */
	atexit(write_snapshot);
	cf_pin_to_one_cpu();
	if (!forkserver)
		cf_channel_start();
	return 0;
}

static uint64_t byte_at(const uint8_t *d, size_t size, size_t i)
{
	return i < size ? d[i] : 0;
}

/* n: the side's length (memmove: how far above dst both buffers end). */
static void decode_side(unsigned mode, uint64_t k, uint64_t n, uint32_t off, int memcpy_kind,
			uint64_t *fault)
{
	uint64_t pages = (off + n + CF_PAGE_SIZE - 1) / CF_PAGE_SIZE;
	if (pages == 0)
		pages = 1;
	if (memcpy_kind) {
		*fault = mode >= 2 ? pages * CF_PAGE_SIZE - off : CF_NO_FAULT;
		return;
	}
	if (mode < 2)
		*fault = CF_NO_FAULT;
	else if (mode == 2)
		*fault = 0;
	else
		*fault = (1 + k % (pages + 1)) * CF_PAGE_SIZE - off;
}

static void decode(const uint8_t *d, size_t size, struct cf_case *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = CF_CASE_MAGIC;
	c->kind = cf_cfg.kind;
	c->profile = cf_cfg.profile;
	c->id = ++case_id;
	unsigned sides = (unsigned)byte_at(d, size, 0);
	unsigned bits = (unsigned)(byte_at(d, size, 1) % 17);
	uint64_t raw = byte_at(d, size, 2) | byte_at(d, size, 3) << 8;
	c->n = (bits ? raw & ((1ull << bits) - 1) : 0) % (cf_cfg.max_len + 1);
	c->src_off = (uint32_t)((byte_at(d, size, 4) | byte_at(d, size, 5) << 8) % CF_PAGE_SIZE);
	c->dst_off = (uint32_t)((byte_at(d, size, 6) | byte_at(d, size, 7) << 8) % CF_PAGE_SIZE);
	uint64_t v = byte_at(d, size, 10) | byte_at(d, size, 11) << 8 | byte_at(d, size, 12) << 16 |
		     byte_at(d, size, 13) << 24;
	if (cf_cfg.kind == CF_KIND_MEMSET) {
		c->fill = (uint32_t)v;
	} else if (cf_cfg.kind == CF_KIND_MEMMOVE) {
		uint64_t max = cf_memmove_max_disp(c->n);
		c->disp = (int32_t)((int64_t)(v % (2 * max + 1)) - (int64_t)max);
	}
	int mc = cf_kind_returns_dst(cf_cfg.kind);
	decode_side(sides & 3, byte_at(d, size, 8), c->n, c->src_off, mc, &c->src_fault);
	decode_side((sides >> 2) & 3, byte_at(d, size, 9), cf_memmove_top(c->n, c->disp),
		    c->dst_off, mc, &c->dst_fault);
	if (!cf_kind_has_src(cf_cfg.kind)) {
		c->src_off = 0;
		c->src_fault = CF_NO_FAULT;
	}
}

static void print_spec(FILE *f, const struct cf_case *c)
{
	fprintf(f, "n=%llu", (unsigned long long)c->n);
	if (c->kind == CF_KIND_MEMSET)
		fprintf(f, ",fill=0x%x", (unsigned)c->fill);
	if (c->kind == CF_KIND_MEMMOVE)
		fprintf(f, ",disp=%d", (int)c->disp);
	if (cf_kind_has_src(c->kind)) {
		fprintf(f, ",src_off=%u", c->src_off);
		if (c->src_fault != CF_NO_FAULT)
			fprintf(f, ",src_fault=%llu", (unsigned long long)c->src_fault);
	}
	fprintf(f, ",dst_off=%u", c->dst_off);
	if (c->dst_fault != CF_NO_FAULT)
		fprintf(f, ",dst_fault=%llu", (unsigned long long)c->dst_fault);
}

static void print_classes(FILE *f, uint32_t mask)
{
	const char *sep = "";
	for (unsigned b = 0; b < CF_NUM_CLASSES; b++)
		if (mask & (1u << b)) {
			fprintf(f, "%s%s", sep, cf_class_name(1u << b));
			sep = ",";
		}
}

/* The routine's coverage so far, to COPYFUZZ_COVERAGE/cov-<pid>: written aside, then
 * renamed, so a reader never sees half a file. */
static void write_snapshot(void)
{
	if (!cf_pshm || !*cf_cfg.coverage || cf_pshm->code_lo == 0)
		return;
	static struct cf_cov_snapshot snap;
	snap.magic = CF_SNAPSHOT_MAGIC;
	snap.version = CF_PLUGIN_VERSION;
	snap.code_lo = cf_pshm->code_lo;
	snap.code_hi = cf_pshm->code_hi;
	snap.fixup_lo = cf_pshm->fixup_lo;
	snap.fixup_hi = cf_pshm->fixup_hi;
	snap.cases = cf_pshm->cases;
	for (size_t i = 0; i < CF_INSN_SLOTS; i++)
		snap.slot[i] = (uint8_t)((cf_pshm->insn_count[i] ? CF_SLOT_RAN : 0) |
					 cf_pshm->insn_flow[i]);
	for (size_t i = 0; i < CF_EXTABLE_SLOTS; i++)
		snap.entry[i] = cf_pshm->extable_hits[i] != 0;
	char path[4096], tmp[4120];
	snprintf(path, sizeof path, "%s/cov-%d", cf_cfg.coverage, (int)getpid());
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "wb");
	if (!f)
		return;
	int ok = fwrite(&snap, sizeof snap, 1, f) == 1;
	ok &= fclose(f) == 0;
	if (ok)
		rename(tmp, path);
	else
		unlink(tmp);
}

/* About once a second (a clock read every 256 inputs): the coverage snapshot, and an end
 * to the run if the process it works for (COPYFUZZ_WATCH_PID) has ended. */
static void every_second(void)
{
	static uint64_t calls;
	static time_t last;
	if (++calls % 256)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec == last)
		return;
	last = now.tv_sec;
	write_snapshot();
	if (cf_watched_has_ended()) {
		cf_channel_stop();
		cf_watched_stop();
	}
}

/* The finding goes to disk first (COPYFUZZ_FINDINGS), then to stderr, then abort(). */
static __attribute__((noreturn)) void report(const struct cf_case *c, uint32_t errors,
					     const char *why)
{
	if (*cf_cfg.findings) {
		char path[4096];
		snprintf(path, sizeof path, "%s/driver-%d-%llu.finding", cf_cfg.findings,
			 (int)getpid(), (unsigned long long)time(NULL));
		FILE *f = fopen(path, "w");
		if (f) {
			fprintf(f, "classes=");
			print_classes(f, errors);
			fprintf(f, "\nspec=");
			print_spec(f, c);
			fprintf(f, "\nwhy=%s\n", why);
			fflush(f);
			fsync(fileno(f));
			fclose(f);
		}
	}
	fprintf(stderr, "==copyfuzz== FINDING: ");
	print_classes(stderr, errors);
	fprintf(stderr, " (%s)\n==copyfuzz== case: ", why);
	print_spec(stderr, c);
	fprintf(stderr, "\n");
	write_snapshot(); /* after the finding: the coverage up to it is worth keeping too */
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cf_case c;
	struct cf_result r;
	decode(data, size, &c);
	if (cf_cfg.print_case) {
		fprintf(stderr, "case: ");
		print_spec(stderr, &c);
		fprintf(stderr, "\n");
	}
	cf_channel_ensure();
	enum cf_channel_status st = cf_channel_exchange(&c, &r);
	if (st != CF_CHANNEL_OK) {
		char why[160];
		cf_channel_describe(st, cf_channel_stop(), why, sizeof why);
		cf_channel_start(); /* for the engine's next input, after this one is saved */
		report(&c, st == CF_CHANNEL_HUNG ? CF_HANG : CF_CRASH, why);
	}
	if (cf_pshm) {
		memcpy(extra_counters, cf_pshm->edges, sizeof(extra_counters));
		if (cf_afl_feed)
			cf_afl_feed(cf_pshm->edges);
	}
	every_second();

	/* The oracle, here, natively: it must agree with the executor's. */
	struct cf_observed o = {0};
	o.outcome = (enum cf_outcome)cf_oshm->outcome;
	o.ret = cf_oshm->ret;
	o.regs_bad = (uint16_t)cf_oshm->regs_bad;
	o.reg_got = cf_oshm->reg_got;
	o.sum_left_on = (int)cf_oshm->sum_left_on;
	o.lo = cf_oshm->lo;
	o.hi = cf_oshm->hi;
	o.dst = cf_oshm->after - cf_oshm->lo;
	o.before = cf_oshm->before - cf_oshm->lo;
	o.src = cf_oshm->src;
	if (cf_kind_returns_dst(c.kind) && o.ret == cf_oshm->dst_addr)
		o.ret = (uint64_t)(uintptr_t)o.dst; /* "returns dst", in this address space */
	struct cf_result mine = {0};
	cf_oracle(&c, &o, &mine);
	uint32_t plugin_only = CF_LOAD_OUT_OF_BOUNDS | CF_ALIGNED_OVERREAD | CF_STORE_OUT_OF_BOUNDS;
	if ((mine.classes & ~r.classes) || ((r.classes & ~mine.classes) & ~plugin_only))
		report(&c, mine.classes ^ r.classes,
		       "the native oracle and the executor's disagree");
	uint32_t errors = (mine.classes | r.classes) & cf_profile_errors(c.profile);
	if (errors)
		report(&c, errors, "oracle");
	return 0;
}
