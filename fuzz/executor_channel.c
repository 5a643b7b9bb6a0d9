/* SPDX-License-Identifier: MIT */
/*
 * executor_channel.c - the fuzz driver's persistent executor: started under qemu (with
 * the coverage plugin) as `executor serve`, one case record out and one result record
 * back per input, the observation and the plugin's coverage in shared memory
 * (harness/observe_abi.h, harness/plugin_abi.h). An exchange ends in an
 * enum cf_channel_status; the driver turns anything but OK into a finding.
 *
 * Two transports for the case and its result (COPYFUZZ_CHANNEL, fuzz/envs.def):
 *   shm   (default) a block of shared memory and a futex handshake on it
 *         (harness/channel_abi.h): no pipe, and no system call at all for a side that
 *         finds the other's answer already there. The executor's death reaches the
 *         driver as SIGCHLD, whose handler wakes the driver's wait; the wait then asks
 *         the kernel (waitid, without reaping) whether the executor has really ended.
 *   pipe  a pipe each way, as before: for measuring, and for a host where a futex does
 *         not reach across qemu-user (then every shm handoff would wait out a slice).
 * Both: the seal key first on the case pipe, sealed results (a forged or half-written
 * result is UNSEALED), the same timeouts, and every death reported with its wait status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "channel_abi.h"
#include "driver.h"
#include "exec_options.h"

struct cf_plugin_shm *cf_pshm;
struct cf_observe_shm *cf_oshm;
static int plugin_fd = -1, observe_fd = -1;
static pid_t child = -1;
/* Set in a process forked from the one that started the executor (pthread_atfork): the
 * executor and its pipes are that process's. A flag, not a getpid() per input. */
static int forked_away;
static int to_child = -1, from_child = -1;
static uint64_t seal_key[2], seal_seq; /* this executor's channel (records.h: cf_seal) */

/* The shm transport: the block (one per process, kept across restarts: a stopped
 * executor is reaped before the next starts, so none can post into its successor's turn;
 * a forked process makes its own), its memfd, and the last turn value seen. */
static int use_shm;
static struct cf_channel_shm *chan;
static int chan_fd = -1;
static uint32_t chan_turn;

/* Looks at the turn word before sleeping when the two processes can run at once. */
#define CF_SPIN_LOOKS 4000
/* A wait sleeps at most this long before it looks at the clock and the word again. */
#define CF_WAIT_SLICE_MS 100

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	return syscall(SYS_futex, word, op, val, timeout, NULL, 0);
}

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

static void in_forked_child(void)
{
	forked_away = 1;
}

void cf_channel_init(void)
{
	pthread_atfork(NULL, NULL, in_forked_child);
	const char *transport = cf_env(CF_ENV_CHANNEL);
	use_shm = !strcmp(transport, "shm");
	if (!use_shm && strcmp(transport, "pipe"))
		cf_die("COPYFUZZ_CHANNEL: shm or pipe");
	/* A write to an executor that died must fail with EPIPE, not kill the driver. */
	signal(SIGPIPE, SIG_IGN);
	if (*cf_cfg.plugin && *cf_cfg.qemu)
		cf_pshm = shared_memfd("copyfuzz-plugin", sizeof(*cf_pshm), &plugin_fd);
	cf_oshm = shared_memfd("copyfuzz-observe", sizeof(*cf_oshm), &observe_fd);
}

/* Whether the executor has ended (exited or killed), without reaping it. */
static int executor_ended(void)
{
	siginfo_t si;
	si.si_pid = 0;
	return child > 0 && !waitid(P_PID, (id_t)child, &si, WEXITED | WNOHANG | WNOWAIT) &&
	       si.si_pid == child;
}

/* SIGCHLD: if the executor has ended, wake the driver's wait on the turn word (the DEAD
 * bit changes the word, so a wait about to begin does not sleep either). Any thread may
 * run it; the wait itself checks executor_ended(), so a late or stray SIGCHLD costs a
 * look, never a false death. Another handler there before is called too. */
static struct sigaction sigchld_before;

static void on_sigchld(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;
	struct cf_channel_shm *b = __atomic_load_n(&chan, __ATOMIC_ACQUIRE);
	if (b && executor_ended()) {
		__atomic_fetch_or(&b->turn, CF_TURN_DEAD, __ATOMIC_SEQ_CST);
		futex(&b->turn, FUTEX_WAKE, INT_MAX, NULL);
	}
	errno = saved;
	if (sigchld_before.sa_flags & SA_SIGINFO)
		sigchld_before.sa_sigaction(sig, info, uc);
	else if (sigchld_before.sa_handler != SIG_DFL && sigchld_before.sa_handler != SIG_IGN)
		sigchld_before.sa_handler(sig);
}

static void catch_sigchld(void)
{
	struct sigaction sa, now;
	if (sigaction(SIGCHLD, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
	    now.sa_sigaction == on_sigchld)
		return; /* already ours (a forked process inherits it) */
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigchld;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_NOCLDSTOP;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, &sigchld_before))
		cf_die("cannot catch SIGCHLD");
}

/* The block for the executor about to start: a fresh one in a process that has none
 * (or only its parent's), else the same one reset. */
static void ready_block(void)
{
	if (!chan) {
		chan = shared_memfd("copyfuzz-channel", sizeof(*chan), &chan_fd);
		fcntl(chan_fd, F_SETFD, FD_CLOEXEC); /* exec_executor dup2()s it for the executor */
	}
	memset(chan, 0, sizeof(*chan));
	chan_turn = 0;
	/* Driver and executor on one CPU (cf_pin_to_one_cpu, taskset): the other side cannot
	 * run while this one looks, so it sleeps at once. */
	cpu_set_t set;
	int one_cpu = !sched_getaffinity(0, sizeof set, &set) && CPU_COUNT(&set) == 1;
	chan->spin = one_cpu ? 0 : CF_SPIN_LOOKS;
	catch_sigchld();
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
	char cfd[24], rfd[24], pfd[24], ofd[24], hfd[24], tmo[24], plug[4200];
	snprintf(cfd, sizeof cfd, "%d", cases_fd);
	snprintf(rfd, sizeof rfd, "%d", records_fd);
	snprintf(pfd, sizeof pfd, "%d", plugin_fd);
	snprintf(ofd, sizeof ofd, "%d", observe_fd);
	int block_fd = -1;
	if (use_shm) {
		block_fd = random_free_fd();
		dup2(chan_fd, block_fd); /* without CLOEXEC, unlike chan_fd */
	}
	snprintf(hfd, sizeof hfd, "%d", block_fd);
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
	argv[k++] = cf_exec_option_names[CF_OPT_TIMEOUT_MS];
	argv[k++] = tmo;
	argv[k++] = cf_exec_option_names[CF_OPT_OBSERVE_FD];
	argv[k++] = ofd;
	argv[k++] = cf_exec_option_names[CF_OPT_CASES_FD];
	argv[k++] = cfd;
	argv[k++] = cf_exec_option_names[CF_OPT_RECORDS_FD];
	argv[k++] = rfd;
	if (cf_pshm) {
		argv[k++] = cf_exec_option_names[CF_OPT_PLUGIN_FD];
		argv[k++] = pfd;
	}
	if (use_shm) {
		argv[k++] = cf_exec_option_names[CF_OPT_CHANNEL_FD];
		argv[k++] = hfd;
	}
	char gran[12];
	if (cf_cfg.granule) {
		snprintf(gran, sizeof gran, "%u", (unsigned)cf_cfg.granule);
		argv[k++] = cf_exec_option_names[CF_OPT_GRANULE];
		argv[k++] = gran;
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
	if (use_shm)
		ready_block();
	forked_away = 0;
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
	if (child >= 0 && forked_away) {
		close(to_child);
		close(from_child);
		child = -1;
		to_child = from_child = -1;
		if (chan) { /* the parent's block: this process needs one of its own */
			struct cf_channel_shm *parents = chan;
			__atomic_store_n(&chan, NULL, __ATOMIC_RELEASE);
			munmap(parents, sizeof(*parents));
			close(chan_fd);
			chan_fd = -1;
		}
	}
	if (child < 0)
		cf_channel_start();
}

/* How long the driver waits for an answer: past the executor's own watchdog. */
static uint64_t answer_wait_ms(void)
{
	return 3 * cf_cfg.timeout_ms + cf_cfg.answer_slack_ms;
}

static uint64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* The shm transport: post the case, then wait for the turn word to say its result is
 * there (channel_abi.h), the executor to be gone, or the time to run out. */
static enum cf_channel_status shm_exchange(const struct cf_case *c, struct cf_result *r)
{
	uint32_t posted = cf_turn_next(chan_turn), want = cf_turn_next(posted);
	memcpy(&chan->c, c, sizeof(*c));
	__atomic_store_n(&chan->turn, posted, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&chan->exec_waiting, __ATOMIC_RELAXED))
		futex(&chan->turn, FUTEX_WAKE, 1, NULL);
	uint64_t start = 0, limit = answer_wait_ms();
	for (uint32_t looks = 0;; looks++) {
		uint32_t t = __atomic_load_n(&chan->turn, __ATOMIC_ACQUIRE);
		if (t == want)
			break;
		if (t & CF_TURN_DEAD) { /* SIGCHLD said so (or the routine wrote it): ask */
			if (executor_ended())
				return CF_CHANNEL_DIED;
			if (!start) /* a routine that keeps writing the bit runs into the limit */
				start = now_ms();
			else if (now_ms() - start >= limit)
				return CF_CHANNEL_HUNG;
			__atomic_compare_exchange_n(&chan->turn, &t, t & ~CF_TURN_DEAD, 0,
						    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			continue;
		}
		if (t != posted) /* neither side wrote that: the routine did */
			return CF_CHANNEL_OUT_OF_STEP;
		if (looks < chan->spin) {
			cpu_relax();
			continue;
		}
		__atomic_store_n(&chan->driver_waiting, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&chan->turn, __ATOMIC_ACQUIRE) == posted) {
			struct timespec slice = {0, CF_WAIT_SLICE_MS * 1000000L};
			if (!start)
				start = now_ms();
			if (futex(&chan->turn, FUTEX_WAIT, posted, &slice) < 0 &&
			    errno == ETIMEDOUT) {
				/* a SIGCHLD lost (blocked, or its disposition changed): seen here */
				if (executor_ended())
					return CF_CHANNEL_DIED;
				if (now_ms() - start >= limit)
					return CF_CHANNEL_HUNG;
			}
		}
		__atomic_store_n(&chan->driver_waiting, 0, __ATOMIC_RELAXED);
	}
	chan_turn = want;
	memcpy(r, &chan->r, sizeof(*r));
	return CF_CHANNEL_OK;
}

/* The pipe transport: the case down one pipe, the result up the other. */
static enum cf_channel_status pipe_exchange(const struct cf_case *c, struct cf_result *r)
{
	if (write(to_child, c, sizeof(*c)) != (ssize_t)sizeof(*c))
		return CF_CHANNEL_DIED;
	size_t got = 0;
	int wait_ms = (int)answer_wait_ms();
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
	return CF_CHANNEL_OK;
}

enum cf_channel_status cf_channel_exchange(const struct cf_case *c, struct cf_result *r)
{
	enum cf_channel_status st = chan ? shm_exchange(c, r) : pipe_exchange(c, r);
	if (st != CF_CHANNEL_OK)
		return st;
	if (r->seal != cf_seal(seal_key, seal_seq++, r, sizeof(*r)))
		return CF_CHANNEL_UNSEALED;
	if (r->magic != CF_RESULT_MAGIC || r->type != CF_RESULT_CASE || r->id != c->id ||
	    cf_oshm->magic != CF_OBSERVE_MAGIC || cf_oshm->c.id != c->id)
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
