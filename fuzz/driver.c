/* SPDX-License-Identifier: MIT */
/*
 * driver.c - the native fuzz driver (LLVMFuzzerTestOneInput) for libFuzzer
 * and AFL++ (libAFLDriver): bytes -> case -> a persistent riscv executor under
 * qemu with the coverage plugin -> result, coverage and observation back ->
 * the oracle (ref/, natively, under the build's sanitizers: ASan+UBSan from the
 * Makefile, the engine's on a fuzzing service) -> abort on a finding, so the
 * engine saves the input.
 *
 * Environment (copyfuzz fuzz sets it; defaults in brackets, "bundle" below):
 *   COPYFUZZ_EXECUTOR   the routine's executor ELF (required unless bundled)
 *   COPYFUZZ_KIND       copy | clear | memcpy [bundled routine's, else copy]
 *   COPYFUZZ_PROFILE    linux | exact [bundled routine's, else linux]
 *   COPYFUZZ_QEMU       qemu-riscv64, or "" to run the executor directly
 *                       [the bundled qemu, else qemu-riscv64 from PATH]
 *   COPYFUZZ_PLUGIN     cfplugin.so for coverage and the memory audit, "" for none
 *                       [the bundled plugin, else none]
 *   COPYFUZZ_MAX_LEN    the longest n an input can ask for [65536]
 *   COPYFUZZ_TIMEOUT_MS the executor's per-case watchdog [1000]
 *   COPYFUZZ_FINDINGS   a directory: each finding is written there first
 *   COPYFUZZ_COVERAGE   a directory: the routine's coverage so far goes to
 *                       cov-<pid> there about once a second and at exit
 *                       (struct cf_cov_snapshot, harness/plugin_abi.h)
 *   COPYFUZZ_PIN        0: leave CPU placement to the scheduler [1: see pin_to_one_cpu]
 *   COPYFUZZ_PRINT_CASE set: print every decoded case as "case: <spec>" on stderr
 *                       (tests check the Python mirror of the decoding against it)
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
 * memcpy routines only get faults at or past the end (any fault inside is a
 * bug by definition); clear routines have no source side.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "observe_abi.h"
#include "plugin_abi.h"
#include "records.h"
#include "ref.h"

/* A bundled target's routine comes with the build (header comment); the kind and
 * profile default to the routine's, else to what they always were. */
#ifndef CF_BUNDLE_KIND
#define CF_BUNDLE_KIND "copy"
#endif
#ifndef CF_BUNDLE_PROFILE
#define CF_BUNDLE_PROFILE "linux"
#endif

/* AFL++ build only (fuzz/afl_cov.c): RISC-V edges into AFL's map. */
void cf_afl_feed(const uint8_t *edges) __attribute__((weak));

/* libFuzzer reads these as extra coverage (zeroed before each input). */
__attribute__((section("__libfuzzer_extra_counters"), aligned(64), used))
static uint8_t extra_counters[CF_COV_MAP_SIZE];

static struct {
	const char *executor, *qemu, *plugin, *findings, *coverage;
	const char *loader, *libdir; /* the bundled qemu's own ld.so and libraries, else NULL */
	int print_case;
	uint16_t kind, profile;
	uint64_t max_len, timeout_ms;
} cfg;

static struct cf_plugin_shm *pshm; /* NULL without the plugin */
static struct cf_observe_shm *oshm;
static int plugin_fd = -1, observe_fd = -1;
static pid_t child = -1;
static pid_t owner; /* the process that started the executor: its pipes are that process's */
static int to_child = -1, from_child = -1;
static uint64_t case_id;
static uint64_t seal_key[2], seal_seq; /* this executor's channel (records.h: cf_seal) */

static __attribute__((noreturn)) void die(const char *what)
{
	fprintf(stderr, "copyfuzz driver: %s\n", what);
	exit(2);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v ? v : dflt;
}

static void *shared_memfd(const char *name, size_t size, int *fd)
{
	*fd = memfd_create(name, 0); /* inherited by the executor: no CLOEXEC */
	if (*fd < 0 || ftruncate(*fd, (off_t)size) != 0)
		die("cannot create shared memory (memfd)");
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		die("cannot map shared memory");
	return p;
}

static void write_snapshot(void);

static void stop_executor(void)
{
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (to_child >= 0)
		close(to_child);
	if (from_child >= 0)
		close(from_child);
	child = -1;
	to_child = from_child = -1;
}

/*
 * AFL++'s forkserver forks the process that ran LLVMFuzzerInitialize: a child that used
 * its parent's executor would share one pipe with every later child, and a child killed
 * mid-exchange (afl-fuzz's timeout) would leave its answer for the next one to read. So
 * a forked process lets the parent's executor be (closing only its own copies of the
 * pipes) and starts one of its own, which dies with it (PR_SET_PDEATHSIG).
 */
static void forget_inherited_executor(void)
{
	if (child >= 0 && owner != getpid()) {
		close(to_child);
		close(from_child);
		child = -1;
		to_child = from_child = -1;
	}
}

/* A free descriptor in [64, 1024) picked at random: the executor's channel sits where a
 * routine writing to stdout, or to a guessed number, does not reach it (docs/executor.md). */
static int random_free_fd(void)
{
	for (;;) {
		uint32_t r;
		if (getentropy(&r, sizeof r))
			r = (uint32_t)rand();
		int fd = 64 + (int)(r % 960);
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF)
			return fd;
	}
}

static void start_executor(void)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		die("pipe");
	if (getentropy(seal_key, sizeof seal_key))
		die("getentropy");
	seal_seq = 0;
	if (pshm)
		pshm->plugin_ready = 0;
	owner = getpid();
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		/* The executor dies with the driver, whatever kills the driver. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int cases_fd = random_free_fd();
		dup2(in[0], cases_fd);
		int records_fd = random_free_fd();
		dup2(out[1], records_fd);
		char cfd[24], rfd[24], pfd[24], ofd[24], tmo[24], plug[4200];
		snprintf(cfd, sizeof cfd, "%d", cases_fd);
		snprintf(rfd, sizeof rfd, "%d", records_fd);
		snprintf(pfd, sizeof pfd, "%d", plugin_fd);
		snprintf(ofd, sizeof ofd, "%d", observe_fd);
		snprintf(tmo, sizeof tmo, "%llu", (unsigned long long)cfg.timeout_ms);
		snprintf(plug, sizeof plug, "%s,fd=%d", cfg.plugin, plugin_fd);
		const char *argv[24];
		int k = 0;
		if (*cfg.qemu) {
			if (cfg.loader) { /* the bundled qemu, with its own libraries only */
				argv[k++] = cfg.loader;
				argv[k++] = "--inhibit-cache";
				argv[k++] = "--library-path";
				argv[k++] = cfg.libdir;
			}
			argv[k++] = cfg.qemu;
			if (pshm) {
				argv[k++] = "-plugin";
				argv[k++] = plug;
			}
		}
		argv[k++] = cfg.executor;
		argv[k++] = "serve";
		argv[k++] = "--timeout-ms";
		argv[k++] = tmo;
		argv[k++] = "--observe-fd";
		argv[k++] = ofd;
		argv[k++] = "--cases-fd";
		argv[k++] = cfd;
		argv[k++] = "--records-fd";
		argv[k++] = rfd;
		if (pshm) {
			argv[k++] = "--plugin-fd";
			argv[k++] = pfd;
		}
		argv[k] = NULL;
		execvp(argv[0], (char **)argv);
		fprintf(stderr, "copyfuzz driver: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	to_child = in[1];
	from_child = out[0];
	if (write(to_child, seal_key, sizeof seal_key) != (ssize_t)sizeof seal_key)
		die("cannot send the executor its seal key");
}

/*
 * Every input is a round trip driver -> executor -> driver through pipes: with the two
 * on different CPUs each handoff is a cross-CPU wakeup, which in a VM costs more than
 * the case itself (measured 2.2x slower, docs/perf.md). So the driver claims one CPU
 * (a lock file per CPU in /tmp, held until it exits, so -jobs workers and parallel
 * campaigns spread out) and pins itself there; the executor inherits it. A mask that
 * is already one CPU (taskset, afl-fuzz's binding) is left as it is.
 */
static void pin_to_one_cpu(void)
{
	cpu_set_t set;
	if (!strcmp(env_or("COPYFUZZ_PIN", "1"), "0") || sched_getaffinity(0, sizeof set, &set) ||
	    CPU_COUNT(&set) <= 1)
		return;
	int chosen = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE && chosen < 0; cpu++) {
		if (!CPU_ISSET(cpu, &set))
			continue;
		char path[64];
		snprintf(path, sizeof path, "/tmp/copyfuzz-cpu%d.lock", cpu);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			chosen = cpu; /* the fd stays open: the claim lasts as long as this process */
		else
			close(fd);
	}
	if (chosen < 0)
		chosen = sched_getcpu(); /* every CPU is claimed: stay where the scheduler put us */
	if (chosen < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(chosen, &set);
	sched_setaffinity(0, sizeof set, &set);
}

/* libFuzzer's -jobs/-workers/-fork parent only starts workers (each a fresh process
 * with those flags removed): it must neither pin them all to its CPU nor run an executor.
 * The same holds for the outer process of -merge=1 (corpus pruning on a fuzzing service)
 * and -minimize_crash=1, whose inner runs carry -merge_inner/-minimize_crash_internal_step.
 * Should a parent run an input after all, LLVMFuzzerTestOneInput starts an executor. */
static int is_libfuzzer_parent(int argc, char **argv)
{
	int outer = 0, inner = 0;
	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "-jobs=", 6) || !strncmp(argv[i], "-workers=", 9) ||
		    !strncmp(argv[i], "-fork=", 6))
			return 1;
		if (!strcmp(argv[i], "-merge=1") || !strcmp(argv[i], "-set_cover_merge=1") ||
		    !strcmp(argv[i], "-minimize_crash=1"))
			outer = 1;
		if (!strncmp(argv[i], "-merge_inner=", 13) ||
		    !strncmp(argv[i], "-minimize_crash_internal_step=", 30))
			inner = 1;
	}
	return outer && !inner;
}

/* "<dir of this binary>/<rel>" if that exists (and is executable when exec is set). */
static const char *beside_self(const char *argv0, const char *rel, int exec)
{
	static char dir[4096];
	if (!dir[0]) {
		ssize_t k = readlink("/proc/self/exe", dir, sizeof dir - 1);
		if (k > 0)
			dir[k] = 0;
		else if (!argv0 || !realpath(argv0, dir))
			return NULL;
		char *slash = strrchr(dir, '/');
		if (!slash)
			return NULL;
		*slash = 0;
	}
	char path[8192];
	snprintf(path, sizeof path, "%s/%s", dir, rel);
	if (access(path, exec ? X_OK : R_OK) != 0)
		return NULL;
	return strdup(path);
}

/* Where the variables are not set: the bundle beside the binary (header comment). */
static void find_bundle(const char *argv0)
{
	const char *v;
#ifdef CF_BUNDLE_ROUTINE
	if (!(v = getenv("COPYFUZZ_EXECUTOR")) || !*v) {
		cfg.executor = beside_self(argv0, "copyfuzz/" CF_BUNDLE_ROUTINE ".elf", 0);
		if (!cfg.executor)
			die("no copyfuzz/" CF_BUNDLE_ROUTINE ".elf beside this fuzz target, and "
			    "COPYFUZZ_EXECUTOR is not set");
	}
#endif
	if (!getenv("COPYFUZZ_QEMU")) {
		const char *loader = beside_self(argv0, "copyfuzz/qemu/ld.so", 1);
		const char *qemu = beside_self(argv0, "copyfuzz/qemu/qemu-riscv64", 0);
		const char *libdir = beside_self(argv0, "copyfuzz/qemu/lib", 1);
		if (loader && qemu && libdir) {
			cfg.loader = loader;
			cfg.libdir = libdir;
			cfg.qemu = qemu;
		}
	}
	if (!getenv("COPYFUZZ_PLUGIN") && (v = beside_self(argv0, "copyfuzz/cfplugin.so", 0)))
		cfg.plugin = v;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	cfg.executor = getenv("COPYFUZZ_EXECUTOR");
	cfg.qemu = env_or("COPYFUZZ_QEMU", "qemu-riscv64");
	cfg.plugin = env_or("COPYFUZZ_PLUGIN", "");
	find_bundle(argc && *argc > 0 ? (*argv)[0] : NULL);
	if (!cfg.executor || !*cfg.executor)
		die("set COPYFUZZ_EXECUTOR to a routine's executor (build/riscv64/<routine>.elf)");
	const char *kind = env_or("COPYFUZZ_KIND", CF_BUNDLE_KIND);
	cfg.kind = !strcmp(kind, "clear") ? CF_KIND_CLEAR : !strcmp(kind, "memcpy") ? CF_KIND_MEMCPY : CF_KIND_COPY;
	cfg.profile = !strcmp(env_or("COPYFUZZ_PROFILE", CF_BUNDLE_PROFILE), "exact") ? CF_PROFILE_EXACT
										      : CF_PROFILE_LINUX;
	cfg.findings = env_or("COPYFUZZ_FINDINGS", "");
	cfg.coverage = env_or("COPYFUZZ_COVERAGE", "");
	cfg.print_case = getenv("COPYFUZZ_PRINT_CASE") != NULL;
	cfg.max_len = strtoull(env_or("COPYFUZZ_MAX_LEN", "65536"), NULL, 0);
	if (cfg.max_len > CF_MAX_LEN)
		cfg.max_len = CF_MAX_LEN;
	cfg.timeout_ms = strtoull(env_or("COPYFUZZ_TIMEOUT_MS", "1000"), NULL, 0);
	if (*cfg.plugin && *cfg.qemu)
		pshm = shared_memfd("copyfuzz-plugin", sizeof(*pshm), &plugin_fd);
	oshm = shared_memfd("copyfuzz-observe", sizeof(*oshm), &observe_fd);
	signal(SIGPIPE, SIG_IGN);
	if (is_libfuzzer_parent(*argc, *argv))
		return 0; /* the workers start their own executors */
	atexit(write_snapshot);
	pin_to_one_cpu();
	if (!getenv("__AFL_SHM_ID")) /* under afl-fuzz this is the forkserver: see above */
		start_executor();
	return 0;
}

static uint64_t byte_at(const uint8_t *d, size_t size, size_t i)
{
	return i < size ? d[i] : 0;
}

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
	c->kind = cfg.kind;
	c->profile = cfg.profile;
	c->id = ++case_id;
	unsigned sides = (unsigned)byte_at(d, size, 0);
	unsigned bits = (unsigned)(byte_at(d, size, 1) % 17);
	uint64_t raw = byte_at(d, size, 2) | byte_at(d, size, 3) << 8;
	c->n = (bits ? raw & ((1ull << bits) - 1) : 0) % (cfg.max_len + 1);
	c->src_off = (uint32_t)((byte_at(d, size, 4) | byte_at(d, size, 5) << 8) % CF_PAGE_SIZE);
	c->dst_off = (uint32_t)((byte_at(d, size, 6) | byte_at(d, size, 7) << 8) % CF_PAGE_SIZE);
	int mc = cfg.kind == CF_KIND_MEMCPY;
	decode_side(sides & 3, byte_at(d, size, 8), c->n, c->src_off, mc, &c->src_fault);
	decode_side((sides >> 2) & 3, byte_at(d, size, 9), c->n, c->dst_off, mc, &c->dst_fault);
	if (cfg.kind == CF_KIND_CLEAR) {
		c->src_off = 0;
		c->src_fault = CF_NO_FAULT;
	}
}

static void print_spec(FILE *f, const struct cf_case *c)
{
	fprintf(f, "n=%llu", (unsigned long long)c->n);
	if (c->kind != CF_KIND_CLEAR) {
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
	if (!pshm || !*cfg.coverage || pshm->code_lo == 0)
		return;
	static struct cf_cov_snapshot snap;
	snap.magic = CF_SNAPSHOT_MAGIC;
	snap.version = CF_PLUGIN_VERSION;
	snap.code_lo = pshm->code_lo;
	snap.code_hi = pshm->code_hi;
	snap.fixup_lo = pshm->fixup_lo;
	snap.fixup_hi = pshm->fixup_hi;
	snap.cases = pshm->cases;
	for (size_t i = 0; i < CF_INSN_SLOTS; i++)
		snap.slot[i] = (uint8_t)((pshm->insn_count[i] ? CF_SLOT_RAN : 0) | pshm->insn_flow[i]);
	for (size_t i = 0; i < CF_EXTABLE_SLOTS; i++)
		snap.entry[i] = pshm->extable_hits[i] != 0;
	char path[4096], tmp[4120];
	snprintf(path, sizeof path, "%s/cov-%d", cfg.coverage, (int)getpid());
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

static void maybe_snapshot(void)
{
	static uint64_t calls;
	static time_t last;
	if (++calls % 256)
		return;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (now.tv_sec != last) {
		last = now.tv_sec;
		write_snapshot();
	}
}

/* The finding goes to disk first (COPYFUZZ_FINDINGS), then to stderr, then abort(). */
static __attribute__((noreturn)) void report(const struct cf_case *c, uint32_t errors, const char *why)
{
	if (*cfg.findings) {
		char path[4096];
		snprintf(path, sizeof path, "%s/driver-%d-%llu.finding", cfg.findings, (int)getpid(),
			 (unsigned long long)time(NULL));
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

/* Send one case; 1 with a result, 0 if the executor died (crash) or hung. */
static int exchange(const struct cf_case *c, struct cf_result *r, const char **why)
{
	if (write(to_child, c, sizeof(*c)) != (ssize_t)sizeof(*c)) {
		*why = "the executor died before reading the case";
		return 0;
	}
	size_t got = 0;
	int wait_ms = (int)(3 * cfg.timeout_ms + 5000); /* past the executor's own watchdog */
	while (got < sizeof(*r)) {
		struct pollfd p = {from_child, POLLIN, 0};
		int ready = poll(&p, 1, wait_ms);
		if (ready == 0) {
			*why = "the executor stopped answering (hang)";
			return 0;
		}
		if (ready < 0 && errno == EINTR)
			continue;
		ssize_t k = read(from_child, (uint8_t *)r + got, sizeof(*r) - got);
		if (k <= 0) {
			*why = "the executor died (crash)";
			return 0;
		}
		got += (size_t)k;
	}
	if (r->seal != cf_seal(seal_key, seal_seq++, r, sizeof(*r))) {
		*why = "the executor's channel carried a record it did not seal (crash)";
		return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cf_case c;
	struct cf_result r;
	const char *why = "";
	decode(data, size, &c);
	if (cfg.print_case) {
		fprintf(stderr, "case: ");
		print_spec(stderr, &c);
		fprintf(stderr, "\n");
	}
	forget_inherited_executor();
	if (child < 0)
		start_executor();
	if (!exchange(&c, &r, &why)) {
		uint32_t cls = strstr(why, "hang") ? CF_HANG : CF_CRASH;
		stop_executor();
		start_executor(); /* for the engine's next input, after this one is saved */
		report(&c, cls, why);
	}
	if (r.magic != CF_RESULT_MAGIC || r.type != CF_RESULT_CASE || r.id != c.id || oshm->c.id != c.id)
		report(&c, CF_CRASH, "the executor answered out of step");
	if (pshm) {
		memcpy(extra_counters, pshm->edges, sizeof(extra_counters));
		if (cf_afl_feed)
			cf_afl_feed(pshm->edges);
		maybe_snapshot();
	}

	/* The oracle, here, natively: it must agree with the executor's. */
	struct cf_observed o = {0};
	o.outcome = (enum cf_outcome)oshm->outcome;
	o.ret = oshm->ret;
	o.regs_bad = (uint16_t)oshm->regs_bad;
	o.reg_got = oshm->reg_got;
	o.sum_left_on = (int)oshm->sum_left_on;
	o.lo = oshm->lo;
	o.hi = oshm->hi;
	o.dst = oshm->after - oshm->lo;
	o.before = oshm->before - oshm->lo;
	o.src = oshm->src;
	if (c.kind == CF_KIND_MEMCPY && o.ret == oshm->dst_addr)
		o.ret = (uint64_t)(uintptr_t)o.dst; /* "returns dst", in this address space */
	struct cf_result mine = {0};
	cf_oracle(&c, &o, &mine);
	uint32_t plugin_only = CF_LOAD_OUT_OF_BOUNDS | CF_ALIGNED_OVERREAD | CF_STORE_OUT_OF_BOUNDS;
	if ((mine.classes & ~r.classes) || ((r.classes & ~mine.classes) & ~plugin_only))
		report(&c, mine.classes ^ r.classes, "the native oracle and the executor's disagree");
	uint32_t errors = (mine.classes | r.classes) & cf_profile_errors(c.profile);
	if (errors)
		report(&c, errors, "oracle");
	return 0;
}
