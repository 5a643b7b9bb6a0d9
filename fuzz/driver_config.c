/* SPDX-License-Identifier: MIT */
/*
 * driver_config.c - the fuzz driver's configuration and place among processes: the
 * environment (the registry, envs.def), the bundle a fuzzing service's build leaves
 * beside the binary (driver.c's header comment), the CPU the driver and its executor
 * run on, and the parent each of its processes dies with.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "driver.h"

struct cf_driver_cfg cf_cfg;

void cf_die(const char *what)
{
	fprintf(stderr, "copyfuzz driver: %s\n", what);
	exit(2);
}

/* A variable that must be a whole number of milliseconds, at most a day: anything else
 * stops the driver (a typo would otherwise turn into 0 ms, and every case into a hang). */
#define CF_MS_MAX 86400000ull
static uint64_t env_ms(enum cf_env_id id);

#define CF_UNSET NULL
static const struct {
	const char *name, *dflt;
} envs[CF_ENV_COUNT] = {
#define CF_ENV(name, dflt, help) [CF_ENV_##name] = {"COPYFUZZ_" #name, dflt},
#define CF_ENV_OTHER(name, dflt, help, reader)
#include "envs.def"
#undef CF_ENV
#undef CF_ENV_OTHER
};

const char *cf_env(enum cf_env_id id)
{
	const char *v = getenv(envs[id].name);
	return v ? v : envs[id].dflt;
}

int cf_env_given(enum cf_env_id id)
{
	return getenv(envs[id].name) != NULL;
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

/* Where the variables are not set: the bundle beside the binary (driver.c's header
 * comment). A bundled target's routine, kind, profile and emulator come with its build
 * (CF_BUNDLE_ROUTINE, CF_BUNDLE_KIND, CF_BUNDLE_PROFILE, CF_BUNDLE_QEMU). */
#ifndef CF_BUNDLE_QEMU
#define CF_BUNDLE_QEMU "qemu-riscv64"
#endif
static void find_bundle(const char *argv0)
{
	const char *v;
#ifdef CF_BUNDLE_ROUTINE
	if (!cf_cfg.executor || !*cf_cfg.executor) {
		cf_cfg.executor = beside_self(argv0, "copyfuzz/" CF_BUNDLE_ROUTINE ".elf", 0);
		if (!cf_cfg.executor)
			cf_die("no copyfuzz/" CF_BUNDLE_ROUTINE ".elf beside this fuzz target, and "
			       "COPYFUZZ_EXECUTOR is not set");
	}
#endif
#ifdef CF_BUNDLE_KIND
	if (!cf_env_given(CF_ENV_KIND))
		cf_cfg.kind_name = CF_BUNDLE_KIND;
#endif
#ifdef CF_BUNDLE_PROFILE
	if (!cf_env_given(CF_ENV_PROFILE))
		cf_cfg.profile_name = CF_BUNDLE_PROFILE;
#endif
	if (!cf_env_given(CF_ENV_QEMU)) {
		const char *loader = beside_self(argv0, "copyfuzz/qemu/ld.so", 1);
		const char *qemu = beside_self(argv0, "copyfuzz/qemu/" CF_BUNDLE_QEMU, 0);
		const char *libdir = beside_self(argv0, "copyfuzz/qemu/lib", 1);
		if (loader && qemu && libdir) {
			cf_cfg.loader = loader;
			cf_cfg.libdir = libdir;
			cf_cfg.qemu = qemu;
		}
	}
	if (!cf_env_given(CF_ENV_PLUGIN) && (v = beside_self(argv0, "copyfuzz/cfplugin.so", 0)))
		cf_cfg.plugin = v;
}

/* Every registered name, the driver's and the others' (envs.def). */
static const char *const all_names[] = {
#define CF_ENV(name, dflt, help) "COPYFUZZ_" #name,
#define CF_ENV_OTHER(name, dflt, help, reader) "COPYFUZZ_" #name,
#include "envs.def"
#undef CF_ENV
#undef CF_ENV_OTHER
};

/* Edit distance of two short names (insert, delete, substitute), case aside, capped at 9
 * (envs.py's _edits, NEAR_EDITS). */
static unsigned name_distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b);
	if (la > 63 || lb > 63)
		return 9;
	unsigned row[64];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (toupper((unsigned char)a[i - 1]) !=
						toupper((unsigned char)b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb] > 9 ? 9 : row[lb];
}

/* A COPYFUZZ_ variable no one reads is most likely a misspelt one that was meant to
 * change something: said, with the nearest registered name (as AFL++ does for AFL_*). */
static void warn_unknown_variables(void)
{
	extern char **environ;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "COPYFUZZ_", 9))
			continue;
		const char *eq = strchr(*e, '=');
		size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
		const char *near = NULL;
		unsigned best = 3; /* further than 2 edits away: no suggestion */
		int known = 0;
		for (size_t k = 0; k < sizeof all_names / sizeof all_names[0]; k++) {
			if (strlen(all_names[k]) == len && !strncmp(*e, all_names[k], len))
				known = 1;
			unsigned d = name_distance(*e, len, all_names[k]);
			if (d < best) {
				best = d;
				near = all_names[k];
			}
		}
		if (known)
			continue;
		/* the name is the environment's: at most 200 characters, control ones as '?' */
		fprintf(stderr, "copyfuzz driver: warning: ");
		for (size_t i = 0; i < len && i < 200; i++)
			fputc(isprint((unsigned char)(*e)[i]) ? (*e)[i] : '?', stderr);
		fprintf(stderr, " is not a copyfuzz variable: ignored");
		if (near)
			fprintf(stderr, " (did you mean %s?)", near);
		fprintf(stderr, "\n");
	}
}

/* The index of value among names; any other value stops the driver in one line naming
 * them all (a kind or profile that is none would otherwise run as another). */
static unsigned one_of(const char *var, const char *value, const char *what,
		       const char *const *names, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		if (!strcmp(value, names[i]))
			return i;
	fprintf(stderr, "copyfuzz driver: %s=%s is not a %s (", var, value, what);
	for (unsigned i = 0; i < count; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
	fprintf(stderr, ")\n");
	exit(2);
}

void cf_config_load(const char *argv0)
{
	warn_unknown_variables();
	cf_cfg.executor = cf_env(CF_ENV_EXECUTOR);
	cf_cfg.qemu = cf_env(CF_ENV_QEMU);
	cf_cfg.plugin = cf_env(CF_ENV_PLUGIN);
	cf_cfg.kind_name = cf_env(CF_ENV_KIND);
	cf_cfg.profile_name = cf_env(CF_ENV_PROFILE);
	find_bundle(argv0);
	if (!cf_cfg.executor || !*cf_cfg.executor)
		cf_die("set COPYFUZZ_EXECUTOR to a routine's executor "
		       "(build/riscv64/<routine>.elf)");
	static const char *const kinds[CF_NUM_KINDS] = {CF_KIND_NAMES};
	cf_cfg.kind =
		(uint16_t)one_of("COPYFUZZ_KIND", cf_cfg.kind_name, "kind", kinds, CF_NUM_KINDS);
	/* a profile that is no profile must not judge by the other contract */
	static const char *const profiles[CF_NUM_PROFILES] = {CF_PROFILE_NAMES};
	cf_cfg.profile = (uint16_t)one_of("COPYFUZZ_PROFILE", cf_cfg.profile_name, "profile",
					  profiles, CF_NUM_PROFILES);
	cf_cfg.findings = cf_env(CF_ENV_FINDINGS);
	cf_cfg.coverage = cf_env(CF_ENV_COVERAGE);
	cf_cfg.seen = cf_env(CF_ENV_SEEN);
	cf_cfg.print_case = cf_env_given(CF_ENV_PRINT_CASE);
	const char *on_finding = cf_env(CF_ENV_ON_FINDING);
	if (strcmp(on_finding, "abort") && strcmp(on_finding, "go-on"))
		cf_die("COPYFUZZ_ON_FINDING is abort or go-on");
	cf_cfg.go_on = !strcmp(on_finding, "go-on");
	/* go-on keeps no engine artifact: without both directories a finding would be lost,
	 * or written again for every input that shows it */
	if (cf_cfg.go_on && (!*cf_cfg.findings || !*cf_cfg.seen))
		cf_die("COPYFUZZ_ON_FINDING=go-on needs COPYFUZZ_FINDINGS and COPYFUZZ_SEEN");
	cf_cfg.max_len = strtoull(cf_env(CF_ENV_MAX_LEN), NULL, 0);
	if (cf_cfg.max_len > CF_MAX_LEN)
		cf_cfg.max_len = CF_MAX_LEN;
	cf_cfg.timeout_ms = env_ms(CF_ENV_TIMEOUT_MS);
	const char *granule = cf_env(CF_ENV_GRANULE);
	char *end;
	unsigned long g = strtoul(granule, &end, 10);
	if (*end || (g != 0 && g != CF_GRANULE_MTE)) {
		fprintf(stderr, "copyfuzz driver: COPYFUZZ_GRANULE=%s: expected 0 or %d\n", granule,
			CF_GRANULE_MTE);
		exit(2);
	}
	cf_cfg.granule = (uint32_t)g;
	cf_cfg.answer_slack_ms = env_ms(CF_ENV_ANSWER_SLACK_MS);
}

static uint64_t env_ms(enum cf_env_id id)
{
	const char *text = cf_env(id);
	char *end = NULL;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (!*text || *end || errno || text[0] == '-' || v > CF_MS_MAX) {
		fprintf(stderr, "copyfuzz driver: %s=%s: expected milliseconds, 0 to %llu\n",
			envs[id].name, text, CF_MS_MAX);
		exit(2);
	}
	return v;
}

/* ---- the CPU ---- */

static int claim_fd = -1; /* the CPU claim, held until this process exits */

/* The pid a claim file names (0: none, or unreadable). */
static pid_t claim_owner(int fd)
{
	char buf[32];
	ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
	if (k <= 0)
		return 0;
	buf[k] = 0;
	long v = strtol(buf, NULL, 10);
	return v > 0 && v <= INT32_MAX ? (pid_t)v : 0;
}

/* Whether a process is using no CPU and never will unless someone acts: gone, dead, or
 * stopped by job control (T). A tracing stop (t) is not idle: strace or gdb holds a
 * process there at each system call or signal and lets it go on (as executor.py's
 * _stopped). Pids are this pid namespace's: /tmp is not shared across them here. */
static int owner_is_idle(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	ssize_t k = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (k <= 0)
		return 1; /* gone since the open */
	buf[k] = 0;
	const char *paren = strrchr(buf, ')'); /* "pid (name) S ...": the name may hold anything */
	if (!paren || paren[1] != ' ')
		return 0;
	return strchr("TZX", paren[2]) != NULL && paren[2] != 0;
}

/*
 * Claim a CPU: its file in COPYFUZZ_LOCK_DIR, flock'ed and naming this process. The file
 * is the truth: a CPU whose file names a live, running process other than this one is
 * taken; else a free flock (its holder died: the kernel released it) makes it ours, and
 * so does a held flock whose named owner is stopped or gone (a driver stopped forever,
 * or one whose flock a child kept), which a flock alone would keep claimed for ever.
 * Two drivers taking over the same stopped owner's CPU at once may both get it: that
 * costs speed only, and needs a stopped driver to begin with.
 */
static int claim_cpu(int cpu)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/copyfuzz-cpu%d.lock", cf_env(CF_ENV_LOCK_DIR), cpu);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return 0;
	pid_t owner = claim_owner(fd);
	int taken = owner > 0 && owner != getpid() && !owner_is_idle(owner);
	if (taken || (flock(fd, LOCK_EX | LOCK_NB) != 0 && owner == 0)) {
		close(fd);
		return 0;
	}
	char pid[24];
	int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n)
		fprintf(stderr, "copyfuzz driver: cannot write %s: %s\n", path, strerror(errno));
	claim_fd = fd;
	return 1;
}

/*
 * Every input is a round trip driver -> executor -> driver through pipes: with the two
 * on different CPUs each handoff is a cross-CPU wakeup, which in a VM costs more than
 * the case itself (measured 2.2x slower, docs/perf.md). So the driver claims one CPU
 * (claim_cpu: so -jobs workers and parallel campaigns spread out) and pins itself there;
 * the executor inherits it. A mask that is already one CPU (taskset, afl-fuzz's
 * binding) is left as it is.
 */
void cf_pin_to_one_cpu(void)
{
	cpu_set_t set;
	if (!strcmp(cf_env(CF_ENV_PIN), "0") || sched_getaffinity(0, sizeof set, &set) ||
	    CPU_COUNT(&set) <= 1)
		return;
	int chosen = -1;
	for (int cpu = 0; cpu < CPU_SETSIZE && chosen < 0; cpu++)
		if (CPU_ISSET(cpu, &set) && claim_cpu(cpu))
			chosen = cpu;
	if (chosen < 0)
		chosen = sched_getcpu(); /* every CPU is claimed: stay where the scheduler put us */
	if (chosen < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(chosen, &set);
	sched_setaffinity(0, sizeof set, &set);
}

/* ---- the processes: every one that runs inputs dies with its parent ---- */

static pid_t fork_parent;
static pid_t watched;
static int watch_fd = -1;

static void before_fork(void)
{
	fork_parent = getpid();
}

/* In every child forked from the driver: AFL++'s forkserver children (persistent: they
 * sit stopped between inputs, and are in afl-fuzz's session for the target, which a kill
 * of the campaign's process group does not reach) and the executor before its exec. */
static void in_forked_child(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != fork_parent) /* the parent died before the prctl: no signal will come */
		raise(SIGKILL);
	if (claim_fd >= 0) { /* the CPU claim is the parent's: a child must not keep it alive */
		close(claim_fd);
		claim_fd = -1;
	}
}

int cf_watched_has_ended(void)
{
	if (watched <= 0)
		return 0;
	if (watch_fd >= 0) {
		struct pollfd p = {watch_fd, POLLIN, 0};
		return poll(&p, 1, 0) > 0;
	}
	return kill(watched, 0) != 0 && errno == ESRCH; /* no pidfds (Linux < 5.3) */
}

void cf_watched_stop(void)
{
	static const char msg[] = "copyfuzz driver: the process it works for (COPYFUZZ_WATCH_PID) "
				  "has ended: stopping\n";
	if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
		/* nothing more to say */
	}
	_exit(0);
}

/* The watcher: its own thread, so that nothing the engine does (a long input, a leak
 * check, a merge) delays the stop. A pidfd is readable once the process has ended, even
 * before it is reaped, and cannot mistake a new process with the same pid for it. The
 * executor, forked by the main thread, dies with it (PR_SET_PDEATHSIG). */
static void *watch_thread(void *arg)
{
	(void)arg;
	if (watch_fd >= 0) {
		struct pollfd p = {watch_fd, POLLIN, 0};
		while (poll(&p, 1, -1) <= 0)
			;
	} else { /* no pidfds (Linux < 5.3) */
		while (!(kill(watched, 0) != 0 && errno == ESRCH))
			sleep(1);
	}
	cf_watched_stop();
}

/* libFuzzer's -jobs/-workers/-fork parent only starts workers (each a fresh process
 * with those flags removed): it must neither pin them all to its CPU nor run an executor.
 * The same holds for the outer process of -merge=1 (corpus pruning on a fuzzing service)
 * and -minimize_crash=1, whose inner runs carry -merge_inner/-minimize_crash_internal_step.
 * Should a parent run an input after all, LLVMFuzzerTestOneInput starts an executor. */
int cf_is_libfuzzer_parent(int argc, char **argv)
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

void cf_processes_init(int forkserver)
{
	pthread_atfork(before_fork, NULL, in_forked_child);
	if (forkserver) /* its parent is afl-fuzz: when that dies, so does it, and its children */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
	const char *v = cf_env(CF_ENV_WATCH_PID);
	if (!v || !*v)
		return;
	char *end;
	long pid = strtol(v, &end, 10);
	if (*end || pid <= 0 || pid > INT32_MAX)
		cf_die("COPYFUZZ_WATCH_PID: not a process id");
	watched = (pid_t)pid;
	watch_fd = (int)syscall(SYS_pidfd_open, watched, 0);
	if (watch_fd < 0 && errno == ESRCH)
		cf_die("COPYFUZZ_WATCH_PID: that process has ended");
	pthread_t t;
	if (pthread_create(&t, NULL, watch_thread, NULL) != 0)
		cf_die("COPYFUZZ_WATCH_PID: cannot start the watcher thread");
	pthread_detach(t);
}
