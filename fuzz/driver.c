/* SPDX-License-Identifier: MIT */
/*
 * driver.c - the native fuzz driver (LLVMFuzzerTestOneInput) for libFuzzer
 * and AFL++ (libAFLDriver): bytes -> case -> a persistent riscv executor under
 * qemu with the coverage plugin -> result, coverage and observation back ->
 * the oracle (ref/, natively, under the build's sanitizers: ASan+UBSan from the
 * Makefile, the engine's on a fuzzing service) -> abort on a finding, so the
 * engine saves the input; with COPYFUZZ_SEEN only on the first of each (class,
 * fault pc) in the campaign, the others are counted and pass (keep going). This file decodes inputs and judges results; the
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
 * Inputs are decoded by fuzz/input.c (its layout in input.h), the tool's decoder too.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cases.h"
#include "driver.h"
#include "input.h"
#include "place.h"
#include "ref.h"

/* AFL++ build only (fuzz/afl_cov.c): RISC-V edges into AFL's map. */
void cf_afl_feed(const uint8_t *edges) __attribute__((weak));

/* libFuzzer reads these as extra coverage (zeroed before each input). */
__attribute__((section("__libfuzzer_extra_counters"), aligned(64),
	       used)) static uint8_t extra_counters[CF_COV_MAP_SIZE];

static uint64_t case_id;

/* What a finding costs the driver (counting, claiming, writing, printing) has no
 * coverage of its own: libFuzzer's corpus is to follow the routine's paths (the plugin's
 * edges) and the input's decoding, not which classes and pcs an input showed (on
 * riscv/mutants/fixup-full-size, 10-15 % of a campaign's inputs were findings with
 * it, 4 % without: docs/perf.md). noinline: coverage is added after inlining. */
#define CF_UNCOVERED __attribute__((noinline, no_sanitize("coverage")))

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

static void decode(const uint8_t *d, size_t size, struct cf_case *c)
{
	cf_input_decode(d, size, cf_cfg.kind, cf_cfg.max_len, cf_cfg.granule, c);
	c->profile = cf_cfg.profile;
	c->id = ++case_id;
}

static CF_UNCOVERED void print_spec(FILE *f, const struct cf_case *c)
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
	if (c->granule)
		fprintf(f, ",granule=%u", (unsigned)c->granule);
}

static CF_UNCOVERED void print_classes(FILE *f, uint32_t mask)
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

/*
 * Keep going after a finding (COPYFUZZ_SEEN=DIR, one directory for every driver of a
 * campaign: libFuzzer's -jobs workers, AFL++'s -M/-S instances and their forkserver
 * children). A finding is keyed by (class, fault pc): the executor's first (or ending)
 * fault, 0 when the case did not fault, for an executor that died and for a hang.
 *   DIR/<class>@0x<pc>        the claim: made with O_CREAT|O_EXCL (atomic, one winner
 *                             across processes) by the driver that reports the pair;
 *   DIR/<class>@0x<pc>.count  the inputs that showed it, a u64 at offset 0 of a page
 *                             every driver maps shared and adds to atomically (exact
 *                             across jobs, nothing to flush, kept if a driver is killed).
 * An input whose pairs are all claimed is counted and returns normally, so the engine
 * neither restarts (libFuzzer) nor sees a crash (AFL++); one with an unclaimed pair is
 * written to disk first, then claimed, then reported (abort; with COPYFUZZ_ON_FINDING=
 * go-on it passes too, and the engine never stops). After the first sight of a pair in a
 * process, a repeat costs no system call.
 */
#define SEEN_MAX 256
static struct seen_pair {
	uint32_t bit;
	uint64_t pc;
	uint64_t *count; /* the shared counter, NULL if it could not be mapped */
	int claimed; /* the claim exists (this driver's or another's) */
} seen_pairs[SEEN_MAX];
static size_t seen_used;

static CF_UNCOVERED void seen_path(char *buf, size_t size, uint32_t bit, uint64_t pc,
				   const char *suffix)
{
	snprintf(buf, size, "%s/%s@0x%llx%s", cf_cfg.seen, cf_class_name(1u << bit),
		 (unsigned long long)pc, suffix);
}

static CF_UNCOVERED uint64_t *map_counter(uint32_t bit, uint64_t pc)
{
	char path[4200];
	seen_path(path, sizeof path, bit, pc, ".count");
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	struct stat st;
	void *m = MAP_FAILED;
	/* Only ever grown (to one page), never shrunk: a concurrent driver's count stays. */
	if (fstat(fd, &st) == 0 && (st.st_size >= 4096 || ftruncate(fd, 4096) == 0))
		m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : (uint64_t *)m;
}

/* The pair's entry in this process (made, with its counter, at its first sight); NULL
 * when the table is full. */
static CF_UNCOVERED struct seen_pair *seen_pair(uint32_t bit, uint64_t pc)
{
	for (size_t i = 0; i < seen_used; i++)
		if (seen_pairs[i].bit == bit && seen_pairs[i].pc == pc)
			return &seen_pairs[i];
	if (seen_used == SEEN_MAX)
		return NULL;
	struct seen_pair *p = &seen_pairs[seen_used++];
	p->bit = bit;
	p->pc = pc;
	p->count = map_counter(bit, pc);
	return p;
}

static CF_UNCOVERED int claim_exists(uint32_t bit, uint64_t pc)
{
	char path[4200];
	seen_path(path, sizeof path, bit, pc, "");
	return access(path, F_OK) == 0;
}

/* Counts the input under each of its pairs; the pairs nobody has claimed yet (every one
 * without COPYFUZZ_SEEN). */
static CF_UNCOVERED uint32_t count_and_filter(uint32_t errors, uint64_t pc)
{
	if (!*cf_cfg.seen)
		return errors;
	uint32_t fresh = 0;
	for (uint32_t b = 0; b < CF_NUM_CLASSES; b++) {
		if (!(errors & (1u << b)))
			continue;
		struct seen_pair *p = seen_pair(b, pc);
		if (p && p->count)
			__atomic_fetch_add(p->count, 1, __ATOMIC_RELAXED);
		if (p && p->claimed)
			continue;
		if (claim_exists(b, pc)) {
			if (p)
				p->claimed = 1;
			continue;
		}
		fresh |= 1u << b;
	}
	return fresh;
}

/* Claims each fresh pair; the ones this driver won (another may have claimed one since
 * count_and_filter looked). */
static CF_UNCOVERED uint32_t claim(uint32_t fresh, uint64_t pc)
{
	if (!*cf_cfg.seen)
		return fresh;
	uint32_t won = 0;
	for (uint32_t b = 0; b < CF_NUM_CLASSES; b++) {
		if (!(fresh & (1u << b)))
			continue;
		char path[4200];
		seen_path(path, sizeof path, b, pc, "");
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0) {
			close(fd);
			won |= 1u << b;
		} else if (errno != EEXIST) {
			won |= 1u << b; /* cannot tell: report it, as without COPYFUZZ_SEEN */
		}
		struct seen_pair *p = seen_pair(b, pc);
		if (p)
			p->claimed = 1;
	}
	return won;
}

/* The finding to COPYFUZZ_FINDINGS/driver-<pid>-<time>.finding, whole (written aside,
 * synced, renamed); its path in path ("" without COPYFUZZ_FINDINGS or on failure). */
static CF_UNCOVERED void write_finding(const struct cf_case *c, uint32_t errors, const char *why,
				       const uint8_t *data, size_t data_size, char *path,
				       size_t size)
{
	static unsigned written; /* go-on writes several a second */
	path[0] = 0;
	if (!*cf_cfg.findings)
		return;
	char tmp[4200];
	snprintf(path, size, "%s/driver-%d-%llu-%u.finding", cf_cfg.findings, (int)getpid(),
		 (unsigned long long)time(NULL), written++);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f) {
		path[0] = 0;
		return;
	}
	fprintf(f, "classes=");
	print_classes(f, errors);
	fprintf(f, "\nspec=");
	print_spec(f, c);
	fprintf(f, "\nwhy=%s\ninput=", why);
	for (size_t i = 0; i < data_size; i++)
		fprintf(f, "%02x", data[i]);
	fprintf(f, "\n");
	int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
	ok &= fclose(f) == 0;
	if (!ok || rename(tmp, path) != 0) {
		unlink(tmp);
		path[0] = 0;
	}
}

/* Bytes [from, from + len) of the arenas' fill seeded by seed, into buf (len + 8 bytes)
 * at from's place in a word: the stream's words land on aligned words, a store each. */
static CF_UNCOVERED const uint8_t *pattern(uint64_t *buf, uint64_t from, size_t len, uint64_t seed)
{
	uint8_t *p = (uint8_t *)buf + from % 8;
	cf_fill_pattern(p, from, len, seed);
	return p;
}

/* A finding: counted; if one of its (class, fault pc) pairs is new to the campaign, it
 * goes to disk first (COPYFUZZ_FINDINGS), is claimed, then goes to stderr, then abort()
 * so that the engine saves the input (go-on: the file on disk is all, and the input
 * passes). Returns (the input passes) when every pair of it was claimed already. */
static CF_UNCOVERED void report(const struct cf_case *c, const uint8_t *data, size_t size,
				uint32_t errors, uint64_t pc, const char *why)
{
	uint32_t fresh = count_and_filter(errors, pc);
	if (!fresh)
		return;
	char path[4096];
	write_finding(c, errors, why, data, size, path, sizeof path);
	if (!claim(fresh, pc)) { /* another driver claimed them in between */
		if (path[0])
			unlink(path);
		return;
	}
	fprintf(stderr, "==copyfuzz== FINDING: ");
	print_classes(stderr, errors);
	fprintf(stderr, " (%s)\n==copyfuzz== case: ", why);
	print_spec(stderr, c);
	fprintf(stderr, "\n");
	if (cf_cfg.go_on)
		return;
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
		report(&c, data, size, st == CF_CHANNEL_HUNG ? CF_HANG : CF_CRASH, 0, why);
		return 0; /* a repeat: counted */
	}
	if (cf_pshm) {
		memcpy(extra_counters, cf_pshm->edges, sizeof(extra_counters));
		if (cf_afl_feed)
			cf_afl_feed(cf_pshm->edges);
	}
	every_second();

	/* The oracle, here, natively: it must agree with the executor's. What the buffers
	 * held before the call comes from the case (place.h), not from the guest, whose
	 * image of them a routine can write. */
	struct cf_case_place pl = cf_case_place(&c);
	if (cf_oshm->lo != pl.lo || cf_oshm->hi != pl.hi) {
		report(&c, data, size, CF_CRASH, 0,
		       "the executor's window around dst is not the case's (a routine wrote its "
		       "state?)");
		return 0;
	}
	static uint64_t before[CF_OBSERVE_WINDOW / 8 + 1], src[CF_MAX_LEN / 8 + 1];
	struct cf_observed o = {0};
	o.outcome = (enum cf_outcome)cf_oshm->outcome;
	o.ret = cf_oshm->ret;
	o.regs_bad = (uint16_t)cf_oshm->regs_bad;
	o.reg_got = cf_oshm->reg_got;
	o.uaccess_left_on = (int)cf_oshm->uaccess_left_on;
	o.lo = pl.lo;
	o.hi = pl.hi;
	o.dst = cf_oshm->after - pl.lo;
	o.before = pattern(before, (uint64_t)(pl.dst + pl.lo), (size_t)(pl.hi - pl.lo),
			   CF_CANARY_SEED) -
		   pl.lo;
	if (pl.src_arena != CF_PLACE_NONE)
		o.src = pattern(src, (uint64_t)pl.src, (size_t)cf_ref_accessible(&c),
				pl.src_arena == CF_PLACE_SRC_ARENA ? CF_SRC_SEED : CF_CANARY_SEED);
	if (cf_kind_returns_dst(c.kind) && o.ret == cf_oshm->dst_addr)
		o.ret = (uint64_t)(uintptr_t)o.dst; /* "returns dst", in this address space */
	struct cf_result mine = {0};
	cf_oracle(&c, &o, &mine);
	uint32_t plugin_only = CF_LOAD_OUT_OF_BOUNDS | CF_ALIGNED_OVERREAD | CF_STORE_OUT_OF_BOUNDS;
	uint64_t pc = r.faults ? r.fault_pc : 0; /* the finding's key, with its classes */
	if ((mine.classes & ~r.classes) || ((r.classes & ~mine.classes) & ~plugin_only)) {
		report(&c, data, size, mine.classes ^ r.classes, pc,
		       "the native oracle and the executor's disagree");
		return 0;
	}
	uint32_t errors = (mine.classes | r.classes) & cf_profile_errors(c.profile);
	if (errors)
		report(&c, data, size, errors, pc, "oracle");
	return 0;
}
