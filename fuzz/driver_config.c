/* SPDX-License-Identifier: MIT */
/*
 * driver_config.c - the fuzz driver's configuration: the environment, the bundle a
 * fuzzing service's build leaves beside the binary (driver.c's header comment), and
 * the CPU the driver and its executor run on.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "driver.h"

/* A bundled target's routine comes with the build (driver.c's header comment); the kind
 * and profile default to the routine's, else to what they always were. */
#ifndef CF_BUNDLE_KIND
#define CF_BUNDLE_KIND "copy"
#endif
#ifndef CF_BUNDLE_PROFILE
#define CF_BUNDLE_PROFILE "linux"
#endif

struct cf_driver_cfg cf_cfg;

void cf_die(const char *what)
{
	fprintf(stderr, "copyfuzz driver: %s\n", what);
	exit(2);
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);
	return v ? v : dflt;
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
		cf_cfg.executor = beside_self(argv0, "copyfuzz/" CF_BUNDLE_ROUTINE ".elf", 0);
		if (!cf_cfg.executor)
			cf_die("no copyfuzz/" CF_BUNDLE_ROUTINE ".elf beside this fuzz target, and "
			       "COPYFUZZ_EXECUTOR is not set");
	}
#endif
	if (!getenv("COPYFUZZ_QEMU")) {
		const char *loader = beside_self(argv0, "copyfuzz/qemu/ld.so", 1);
		const char *qemu = beside_self(argv0, "copyfuzz/qemu/qemu-riscv64", 0);
		const char *libdir = beside_self(argv0, "copyfuzz/qemu/lib", 1);
		if (loader && qemu && libdir) {
			cf_cfg.loader = loader;
			cf_cfg.libdir = libdir;
			cf_cfg.qemu = qemu;
		}
	}
	if (!getenv("COPYFUZZ_PLUGIN") && (v = beside_self(argv0, "copyfuzz/cfplugin.so", 0)))
		cf_cfg.plugin = v;
}

void cf_config_load(const char *argv0)
{
	cf_cfg.executor = getenv("COPYFUZZ_EXECUTOR");
	cf_cfg.qemu = env_or("COPYFUZZ_QEMU", "qemu-riscv64");
	cf_cfg.plugin = env_or("COPYFUZZ_PLUGIN", "");
	find_bundle(argv0);
	if (!cf_cfg.executor || !*cf_cfg.executor)
		cf_die("set COPYFUZZ_EXECUTOR to a routine's executor (build/riscv64/<routine>.elf)");
	const char *kind = env_or("COPYFUZZ_KIND", CF_BUNDLE_KIND);
	cf_cfg.kind = !strcmp(kind, "clear")    ? CF_KIND_CLEAR
		      : !strcmp(kind, "memcpy") ? CF_KIND_MEMCPY
						: CF_KIND_COPY;
	cf_cfg.profile = !strcmp(env_or("COPYFUZZ_PROFILE", CF_BUNDLE_PROFILE), "exact") ? CF_PROFILE_EXACT
											   : CF_PROFILE_LINUX;
	cf_cfg.findings = env_or("COPYFUZZ_FINDINGS", "");
	cf_cfg.coverage = env_or("COPYFUZZ_COVERAGE", "");
	cf_cfg.print_case = getenv("COPYFUZZ_PRINT_CASE") != NULL;
	cf_cfg.max_len = strtoull(env_or("COPYFUZZ_MAX_LEN", "65536"), NULL, 0);
	if (cf_cfg.max_len > CF_MAX_LEN)
		cf_cfg.max_len = CF_MAX_LEN;
	cf_cfg.timeout_ms = strtoull(env_or("COPYFUZZ_TIMEOUT_MS", "1000"), NULL, 0);
}

/*
 * Every input is a round trip driver -> executor -> driver through pipes: with the two
 * on different CPUs each handoff is a cross-CPU wakeup, which in a VM costs more than
 * the case itself (measured 2.2x slower, docs/perf.md). So the driver claims one CPU
 * (a lock file per CPU in /tmp, held until it exits, so -jobs workers and parallel
 * campaigns spread out) and pins itself there; the executor inherits it. A mask that
 * is already one CPU (taskset, afl-fuzz's binding) is left as it is.
 */
void cf_pin_to_one_cpu(void)
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
