/* SPDX-License-Identifier: MIT */
/*
 * executor_channel.c - the fuzz driver's persistent executor: started under qemu (with
 * the coverage plugin) as `executor serve`, one case record out and one result record
 * back per input through pipes, the observation and the plugin's coverage in shared
 * memory (harness/observe_abi.h, harness/plugin_abi.h). An exchange ends in an
 * enum cf_channel_status; the driver turns anything but OK into a finding.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "driver.h"

struct cf_plugin_shm *cf_pshm;
struct cf_observe_shm *cf_oshm;
static int plugin_fd = -1, observe_fd = -1;
static pid_t child = -1;
static pid_t owner; /* the process that started the executor: its pipes are that process's */
static int to_child = -1, from_child = -1;
static uint64_t seal_key[2], seal_seq; /* this executor's channel (records.h: cf_seal) */

static void *shared_memfd(const char *name, size_t size, int *fd)
{
	*fd = memfd_create(name, 0); /* inherited by the executor: no CLOEXEC */
	if (*fd < 0 || ftruncate(*fd, (off_t)size) != 0)
		cf_die("cannot create shared memory (memfd)");
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		cf_die("cannot map shared memory");
	return p;
}

void cf_channel_init(void)
{
	/* A write to an executor that died must fail with EPIPE, not kill the driver. */
	signal(SIGPIPE, SIG_IGN);
	if (*cf_cfg.plugin && *cf_cfg.qemu)
		cf_pshm = shared_memfd("copyfuzz-plugin", sizeof(*cf_pshm), &plugin_fd);
	cf_oshm = shared_memfd("copyfuzz-observe", sizeof(*cf_oshm), &observe_fd);
}

int cf_channel_stop(void)
{
	int status = -1;
	if (child > 0) {
		kill(child, SIGKILL);
		if (waitpid(child, &status, 0) != child)
			status = -1;
	}
	if (to_child >= 0)
		close(to_child);
	if (from_child >= 0)
		close(from_child);
	child = -1;
	to_child = from_child = -1;
	return status;
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

/* In the executor's process, between fork and exec: `[ld.so ...] [qemu -plugin ...]
 * executor serve ...` with the case and result pipes on random free descriptors that
 * --cases-fd and --records-fd name (stdout and stderr stay the driver's). */
static __attribute__((noreturn)) void exec_executor(int case_fd, int result_fd)
{
	int cases_fd = random_free_fd();
	dup2(case_fd, cases_fd);
	int records_fd = random_free_fd();
	dup2(result_fd, records_fd);
	char cfd[24], rfd[24], pfd[24], ofd[24], tmo[24], plug[4200];
	snprintf(cfd, sizeof cfd, "%d", cases_fd);
	snprintf(rfd, sizeof rfd, "%d", records_fd);
	snprintf(pfd, sizeof pfd, "%d", plugin_fd);
	snprintf(ofd, sizeof ofd, "%d", observe_fd);
	snprintf(tmo, sizeof tmo, "%llu", (unsigned long long)cf_cfg.timeout_ms);
	snprintf(plug, sizeof plug, "%s,fd=%d", cf_cfg.plugin, plugin_fd);
	const char *argv[24];
	int k = 0;
	if (*cf_cfg.qemu) {
		if (cf_cfg.loader) { /* the bundled qemu, with its own libraries only */
			argv[k++] = cf_cfg.loader;
			argv[k++] = "--inhibit-cache";
			argv[k++] = "--library-path";
			argv[k++] = cf_cfg.libdir;
		}
		argv[k++] = cf_cfg.qemu;
		if (cf_pshm) {
			argv[k++] = "-plugin";
			argv[k++] = plug;
		}
	}
	argv[k++] = cf_cfg.executor;
	argv[k++] = "serve";
	argv[k++] = "--timeout-ms";
	argv[k++] = tmo;
	argv[k++] = "--observe-fd";
	argv[k++] = ofd;
	argv[k++] = "--cases-fd";
	argv[k++] = cfd;
	argv[k++] = "--records-fd";
	argv[k++] = rfd;
	if (cf_pshm) {
		argv[k++] = "--plugin-fd";
		argv[k++] = pfd;
	}
	argv[k] = NULL;
	execvp(argv[0], (char **)argv);
	fprintf(stderr, "copyfuzz driver: cannot run %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

void cf_channel_start(void)
{
	int in[2], out[2];
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		cf_die("pipe");
	if (getentropy(seal_key, sizeof seal_key))
		cf_die("getentropy");
	seal_seq = 0;
	if (cf_pshm)
		cf_pshm->plugin_ready = 0;
	owner = getpid();
	child = fork();
	if (child < 0)
		cf_die("fork");
	if (child == 0) {
		/* The executor dies with the driver, whatever kills the driver. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		exec_executor(in[0], out[1]);
	}
	close(in[0]);
	close(out[1]);
	to_child = in[1];
	from_child = out[0];
	/* An executor that is already gone (it failed to start, say) makes this write fail
	 * with EPIPE (SIGPIPE is ignored: cf_channel_init); the exchange that follows then
	 * finds it dead and reports how it died. */
	if (write(to_child, seal_key, sizeof seal_key) != (ssize_t)sizeof seal_key)
		return;
}

/*
 * AFL++'s forkserver forks the process that ran LLVMFuzzerInitialize: a child that used
 * its parent's executor would share one pipe with every later child, and a child killed
 * mid-exchange (afl-fuzz's timeout) would leave its answer for the next one to read. So
 * a forked process lets the parent's executor be (closing only its own copies of the
 * pipes) and starts one of its own, which dies with it (PR_SET_PDEATHSIG).
 */
void cf_channel_ensure(void)
{
	if (child >= 0 && owner != getpid()) {
		close(to_child);
		close(from_child);
		child = -1;
		to_child = from_child = -1;
	}
	if (child < 0)
		cf_channel_start();
}

enum cf_channel_status cf_channel_exchange(const struct cf_case *c, struct cf_result *r)
{
	if (write(to_child, c, sizeof(*c)) != (ssize_t)sizeof(*c))
		return CF_CHANNEL_DIED;
	size_t got = 0;
	int wait_ms = (int)(3 * cf_cfg.timeout_ms + 5000); /* past the executor's own watchdog */
	while (got < sizeof(*r)) {
		struct pollfd p = {from_child, POLLIN, 0};
		int ready = poll(&p, 1, wait_ms);
		if (ready == 0)
			return CF_CHANNEL_HUNG;
		if (ready < 0 && errno == EINTR)
			continue;
		ssize_t k = read(from_child, (uint8_t *)r + got, sizeof(*r) - got);
		if (k <= 0)
			return CF_CHANNEL_DIED;
		got += (size_t)k;
	}
	if (r->seal != cf_seal(seal_key, seal_seq++, r, sizeof(*r)))
		return CF_CHANNEL_UNSEALED;
	if (r->magic != CF_RESULT_MAGIC || r->type != CF_RESULT_CASE || r->id != c->id ||
	    cf_oshm->c.id != c->id)
		return CF_CHANNEL_OUT_OF_STEP;
	return CF_CHANNEL_OK;
}

void cf_channel_describe(enum cf_channel_status st, int wait_status, char *buf, size_t size)
{
	switch (st) {
	case CF_CHANNEL_OK:
		snprintf(buf, size, "the executor answered");
		return;
	case CF_CHANNEL_HUNG:
		snprintf(buf, size, "the executor stopped answering (hang)");
		return;
	case CF_CHANNEL_OUT_OF_STEP:
		snprintf(buf, size, "the executor answered out of step");
		return;
	case CF_CHANNEL_UNSEALED:
		snprintf(buf, size,
			 "the executor's channel carried a record it did not seal (crash)");
		return;
	case CF_CHANNEL_DIED:
		break;
	}
	if (wait_status != -1 && WIFSIGNALED(wait_status))
		snprintf(buf, size, "the executor died: killed by signal %d (%s)",
			 WTERMSIG(wait_status), strsignal(WTERMSIG(wait_status)));
	else if (wait_status != -1 && WIFEXITED(wait_status))
		snprintf(buf, size, "the executor died: exited with status %d",
			 WEXITSTATUS(wait_status));
	else
		snprintf(buf, size, "the executor died");
}
