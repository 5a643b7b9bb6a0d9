/* SPDX-License-Identifier: MIT */
/*
 * supervisor.c - the sweep: one long-lived worker runs the cases one after another (no
 * fork per case); this process, its parent, watches it through a MAP_SHARED page (the
 * current case, its start time, whether a call is in progress) and reads its findings
 * from a pipe. A call that does not return within --timeout is a hang: its kernel stack
 * is reported, the worker killed and reaped, and a fresh worker (fresh files, pipe and
 * sockets) goes on at the next index. Only this process writes to stdout.
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
#include <sys/klog.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prober.h"

struct shared {
	uint64_t index; /* the case in progress, or the last one run */
	int64_t start_ns; /* when it started */
	uint32_t busy; /* 1 while a call is in progress */
	uint64_t run; /* cases this worker ran */
	struct cf_case c;
};

enum msg_type { MSG_FINDING, MSG_SETUP, MSG_DONE, MSG_FATAL };
struct msg {
	uint32_t type;
	int32_t cls;
	uint64_t index;
	int64_t ret;
	int32_t err;
	struct cf_case c;
	char detail[160];
};

static volatile sig_atomic_t stop_signal;
static void on_signal(int sig)
{
	stop_signal = sig;
}

/* poll(2) as a sleep and a wait; falls back to the raw system call where the C library's
 * wrapper is refused (a kernel without the time64 variants) */
static int cf_poll(struct pollfd *p, nfds_t n, int ms)
{
	int r = poll(p, n, ms);
	if (r < 0 && errno == ENOSYS) {
#ifdef SYS_poll
		r = (int)syscall(SYS_poll, p, n, ms);
#else
		struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
		r = (int)syscall(SYS_ppoll, p, n, ms < 0 ? NULL : &ts, NULL, 0);
#endif
	}
	return r;
}

static int64_t now_ns(void)
{
	return (int64_t)(cf_now() * 1e9);
}

static void send_msg(int fd, const struct msg *m)
{
	/* smaller than PIPE_BUF: one atomic write */
	while (write(fd, m, sizeof(*m)) < 0 && errno == EINTR)
		;
}

static uint32_t max_n(const struct cf_opts *o, uint32_t *max_koff)
{
	uint32_t n = 0, k = 0;
	if (o->cases) {
		for (unsigned i = 0; i < o->ncases; i++) {
			n = CF_N(&o->cases[i]) > n ? CF_N(&o->cases[i]) : n;
			k = CF_KOFF(&o->cases[i]) > k ? CF_KOFF(&o->cases[i]) : k;
		}
	} else {
		n = o->nn ? o->nv[o->nn - 1] : 0;
		k = o->nkoff ? o->koffv[o->nkoff - 1] : 0;
	}
	*max_koff = k;
	return n;
}

static const char *errname(int err);

static void worker(const struct cf_opts *o, uint64_t from, uint32_t skip_mask,
		   volatile struct shared *sh, int out)
{
	char err[sizeof(((struct msg *)0)->detail)];
	struct msg m;
	uint32_t mk, mn = max_n(o, &mk);
	struct cf_env *e = cf_env_new(o->dir, mn, mk, err, sizeof(err));
	memset(&m, 0, sizeof(m));
	if (!e) {
		m.type = MSG_FATAL;
		snprintf(m.detail, sizeof(m.detail), "%s", err);
		send_msg(out, &m);
		_exit(3);
	}
	struct cf_iter it;
	struct cf_obs obs;
	struct cf_finding f[CF_NCLASS];
	for (cf_iter_start(&it, o, from); !it.done; cf_iter_next(&it)) {
		if ((skip_mask & (1u << it.c.sys)) && !o->cases) {
			/* a skipped syscall's cases are jumped over, not walked one by one */
			uint64_t end = cf_sys_end(o, it.c.sys);
			cf_iter_free(&it);
			cf_iter_start(&it, o, end);
			if (it.done)
				break;
		}
		if (it.index % o->shard_n != o->shard_j || (skip_mask & (1u << it.c.sys)))
			continue;
		char spec[CF_SPEC_MAX];
		if (o->trace) /* written before the call: if the kernel dies in it, this names it */
			cf_line("run", "index=%llu case=%s", (unsigned long long)it.index,
				cf_spec_print(&it.c, spec, sizeof(spec)));
		sh->c = it.c;
		sh->index = it.index;
		sh->start_ns = now_ns();
		__atomic_store_n(&sh->busy, 1, __ATOMIC_RELEASE);
		if (o->selftest == CF_ST_HANG && it.index == o->selftest_index)
			cf_selftest_sleep();
		if (o->selftest == CF_ST_CRASH && it.index == o->selftest_index)
			kill(getpid(), SIGKILL); /* a signal no sanitizer catches */
		int r = cf_call_run(e, &it.c, &obs);
		__atomic_store_n(&sh->busy, 0, __ATOMIC_RELEASE);
		sh->run++;
		m.index = it.index;
		m.c = it.c;
		m.ret = obs.ret;
		m.err = obs.err;
		if (r < 0) {
			m.type = MSG_SETUP;
			snprintf(m.detail, sizeof(m.detail), "%s", obs.detail);
			send_msg(out, &m);
			continue;
		}
		if (o->selftest == CF_ST_BREAK)
			cf_selftest_break(e, &it.c, &obs, o->selftest_class);
		if (o->ncases) /* --case: what each call did, findings or not (copyfuzz confirm) */
			cf_line("result", "index=%llu case=%s ret=%ld errno=%s",
				(unsigned long long)it.index,
				cf_spec_print(&it.c, spec, sizeof(spec)), obs.ret,
				errname(obs.err));
		int nf = cf_check(e, &it.c, &obs, f);
		for (int i = 0; i < nf; i++) {
			m.type = MSG_FINDING;
			m.cls = f[i].cls;
			memcpy(m.detail, f[i].detail, sizeof(m.detail));
			send_msg(out, &m);
		}
	}
	cf_iter_free(&it);
	cf_env_free(e);
	m.type = MSG_DONE;
	send_msg(out, &m);
	_exit(0);
}

/* ---- the supervisor's accounting ---- */
struct tally {
	uint64_t count[CF_NSYS][CF_NCLASS];
	uint64_t first_index[CF_NSYS][CF_NCLASS];
	struct cf_case first[CF_NSYS][CF_NCLASS];
	unsigned hangs[CF_NSYS];
	uint64_t findings, hang_total, run;
};

static const char *errname(int err)
{
	static char buf[16];
	const char *s = err ? strerrorname_np(err) : "0";
	if (s)
		return s;
	snprintf(buf, sizeof(buf), "%d", err);
	return buf;
}

static void finding(const struct cf_opts *o, struct tally *t, int cls, uint64_t index,
		    const struct cf_case *c, long ret, int err, const char *detail)
{
	char spec[CF_SPEC_MAX];
	uint64_t k = ++t->count[c->sys][cls];
	t->findings++;
	if (k == 1) {
		t->first_index[c->sys][cls] = index;
		t->first[c->sys][cls] = *c;
	}
	if (k > o->max_lines)
		return;
	char rets[32];
	int called = cls != CF_CL_HANG && cls != CF_CL_CRASH; /* else the call never returned */
	snprintf(rets, sizeof(rets), "%ld", ret);
	cf_line("finding", "class=%s case=%s index=%llu ret=%s errno=%s %s", cf_class_names[cls],
		cf_spec_print(c, spec, sizeof(spec)), (unsigned long long)index,
		called ? rets : "none", called ? errname(err) : "none", detail);
}

/* A worker that did not end by itself leaves its files (calls.c names them) */
static void remove_files(const char *dir, pid_t pid)
{
	char path[600];
	snprintf(path, sizeof(path), "%s/cf-w-%d", dir, (int)pid);
	unlink(path);
	snprintf(path, sizeof(path), "%s/cf-r-%d", dir, (int)pid);
	unlink(path);
}

/* /proc/PID/stack, a line each, and /proc/PID/wchan (root and CONFIG_STACKTRACE) */
/*
 * The hung task's kernel stack, from the kernel's log after sysrq-l ("backtrace of all
 * active CPUs"): /proc/PID/stack has nothing for a task running on another CPU where the
 * architecture cannot walk it (32-bit ARM with SMP). A marker written to /dev/kmsg first
 * tells this trigger's output from older log lines; the block that names PID is kept,
 * its frames ("sym+0xoff/0xsize"). A spinning task is caught wherever it is (in a fault
 * handler, whose trace may stop at the exception: 32-bit ARM's unwinder does): samples
 * are taken until one reaches the system call (a frame named *sys_*, which shows the
 * caller), at most CF_SYSRQ_SAMPLES; that one is reported, else the longest. 0 when one
 * gave at least one frame.
 */
#define CF_SYSRQ_SAMPLES 6
#define CF_SYSRQ_LINES 48
struct sysrq_sample {
	int frames;
	char line[CF_SYSRQ_LINES][160];
};

static int sysrq_sample(pid_t pid, struct sysrq_sample *s)
{
	static char log[1 << 17];
	static unsigned seq;
	char marker[64], want[32];
	snprintf(marker, sizeof(marker), "copyfuzz-sysrq-%d-%u", (int)getpid(), ++seq);
	snprintf(want, sizeof(want), "PID: %d ", (int)pid);
	s->frames = 0;
	int fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	int tf = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
	int ok = fd >= 0 && tf >= 0 && write(fd, marker, strlen(marker)) > 0 &&
		 write(tf, "l", 1) == 1;
	if (fd >= 0)
		close(fd);
	if (tf >= 0)
		close(tf);
	if (!ok)
		return -1;
	/* The other CPUs print from their IPI handlers: read the log until the block has a
	 * call trace ("X from Y+0x../0x..") or a second has passed. */
	for (int tries = 0; tries < 5; tries++) {
		struct pollfd none;
		cf_poll(&none, 0, 200);
		int len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);
		if (len <= 0)
			return -1;
		log[len] = 0;
		char *from = strstr(log, marker);
		if (!from)
			return -1;
		char *block = strstr(from, want);
		if ((!block || !strstr(block, " from ")) && tries < 4)
			continue;
		int in_block = 0;
		for (char *line = strtok(from, "\n"); line; line = strtok(NULL, "\n")) {
			if (line[0] == '<' && line[1] && line[2] == '>')
				line += 3; /* the log level */
			if (strstr(line, "CPU: ") && strstr(line, "PID: "))
				in_block = strstr(line, want) != NULL;
			else if (in_block && strstr(line, "+0x") && strchr(line, '/') &&
				 s->frames < CF_SYSRQ_LINES)
				snprintf(s->line[s->frames++], sizeof(s->line[0]), "%s", line);
		}
		break;
	}
	return s->frames ? 0 : -1;
}

static int reaches_syscall(const struct sysrq_sample *s)
{
	for (int i = 0; i < s->frames; i++)
		if (strstr(s->line[i], "sys_"))
			return 1;
	return 0;
}

static int sysrq_stack(pid_t pid, uint64_t index)
{
	static struct sysrq_sample best, now;
	char enc[1024];
	best.frames = 0;
	for (int k = 0; k < CF_SYSRQ_SAMPLES && !reaches_syscall(&best); k++)
		if (sysrq_sample(pid, &now) == 0 &&
		    (reaches_syscall(&now) || (now.frames > best.frames)))
			best = now;
	for (int i = 0; i < best.frames; i++)
		cf_line("stack", "index=%llu pid=%d source=sysrq line=%s",
			(unsigned long long)index, (int)pid,
			cf_pct(best.line[i], enc, sizeof(enc)));
	return best.frames ? 0 : -1;
}

/* The kernel log's last lines, as kmsg lines: what the kernel said when a worker died
 * outside a call (an oops kills the task it happened in). */
static void report_kmsg(int lines)
{
	static char log[1 << 16];
	char enc[1024];
	int len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, sizeof(log) - 1);
	if (len <= 0)
		return;
	log[len] = 0;
	char *from = log + len;
	for (int k = 0; k <= lines && from > log; from--)
		if (from[-1] == '\n')
			k++;
	for (char *line = strtok(from, "\n"); line; line = strtok(NULL, "\n"))
		cf_line("kmsg", "line=%s", cf_pct(line, enc, sizeof(enc)));
}

static void report_stack(pid_t pid, uint64_t index)
{
	char path[64], buf[4096], enc[1024];
	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t len = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	int e = errno;
	if (fd >= 0)
		close(fd);
	int frames = 0; /* symbolized ones: "name+0xoff/0xsize" */
	if (len > 0) {
		buf[len] = 0;
		for (char *s = buf; (s = strstr(s, "+0x")); s += 3)
			frames++;
	}
	/* A task running on another CPU may give nothing, or a raw address or two: the
	 * kernel log after sysrq-l does better then */
	if (frames < 2 && sysrq_stack(pid, index) == 0) {
		len = 0; /* the log had it */
	} else if (len < 0) {
		cf_line("stack", "index=%llu pid=%d error=%s", (unsigned long long)index, (int)pid,
			errname(e));
	} else {
		buf[len] = 0;
		for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
			cf_line("stack", "index=%llu pid=%d line=%s", (unsigned long long)index,
				(int)pid, cf_pct(line, enc, sizeof(enc)));
	}
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	len = fd < 0 ? -1 : read(fd, buf, 256);
	if (fd >= 0)
		close(fd);
	if (len > 0) {
		buf[len] = 0;
		cf_line("stack", "index=%llu pid=%d wchan=%s", (unsigned long long)index, (int)pid,
			cf_pct(buf, enc, sizeof(enc)));
	}
}

/* SIGKILL and reap within ~3 s; 0, or -1 when the worker cannot be reaped */
static int kill_and_reap(pid_t pid, int *status)
{
	kill(pid, SIGKILL);
	int64_t until = now_ns() + 3000000000LL;
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return 0;
		if (now_ns() > until)
			return -1;
		cf_poll(NULL, 0, 20);
	}
}

static const char *fs_name(const char *dir)
{
	static char buf[24];
	struct statfs s;
	if (statfs(dir, &s))
		return "unknown";
	switch ((unsigned long)s.f_type) {
	case 0x01021994UL:
		return "tmpfs";
	case 0x858458f6UL:
		return "ramfs";
	case 0xef53UL:
		return "ext4";
	case 0x9123683eUL:
		return "btrfs";
	case 0x58465342UL:
		return "xfs";
	case 0x794c7630UL:
		return "overlayfs";
	}
	snprintf(buf, sizeof(buf), "0x%lx", (unsigned long)s.f_type);
	return buf;
}

int cf_sweep(const struct cf_opts *o)
{
	struct tally *t = calloc(1, sizeof(*t));
	char enc[600], spec[CF_SPEC_MAX];
	struct utsname u;
	uint64_t total = cf_total(o), next = o->start;
	uint32_t skip_mask = 0;
	const char *status = "complete";
	if (!t)
		abort();
	if (uname(&u))
		memset(&u, 0, sizeof(u));
	cf_line("hello",
		"version=%d cases=%llu to_run=%llu shard=%llu/%llu start=%llu timeout=%g "
		"hang_budget=%u max_lines=%u syscalls=%s max_len=%u sizes=%s koffs=%s segs=%s "
		"prots=%s gaps=%s given_cases=%u dir=%s fs=%s pid1=%d kernel=%s machine=%s",
		CF_PROBER_VERSION, (unsigned long long)total,
		(unsigned long long)cf_shard_count(o, 0, total), (unsigned long long)o->shard_j,
		(unsigned long long)o->shard_n, (unsigned long long)o->start, o->timeout,
		o->hang_budget, o->max_lines, o->list_text[0], o->max_len, o->list_text[1],
		o->list_text[2], o->list_text[3], o->list_text[4], o->list_text[5], o->ncases,
		cf_pct(o->dir, enc, sizeof(enc)), fs_name(o->dir), getpid() == 1, u.release,
		u.machine);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	volatile struct shared *sh =
		mmap(NULL, CF_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		cf_line("error", "kind=setup what=mmap errno=%s", errname(errno));
		return 3;
	}
	int64_t last_progress = now_ns();
	while (next < total && !stop_signal) {
		int p[2];
		if (pipe2(p, O_CLOEXEC)) {
			cf_line("error", "kind=setup what=pipe errno=%s", errname(errno));
			status = "error";
			break;
		}
		memset((void *)sh, 0, sizeof(*sh));
		sh->index = next;
		pid_t parent = getpid();
		pid_t pid = fork();
		if (pid < 0) {
			cf_line("error", "kind=setup what=fork errno=%s", errname(errno));
			status = "error";
			break;
		}
		if (pid == 0) {
			/* never outlive the supervisor */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(4);
			close(p[0]);
			signal(SIGTERM, SIG_DFL);
			signal(SIGINT, SIG_DFL);
			worker(o, next, skip_mask, sh, p[1]);
		}
		close(p[1]);
		struct msg m;
		size_t have = 0;
		int done = 0, eof = 0, wstatus = 0, fatal = 0, hung = 0;
		while (!eof && !stop_signal) {
			struct pollfd pf = {.fd = p[0], .events = POLLIN};
			int pr = cf_poll(&pf, 1, 50);
			if (pr > 0) {
				ssize_t r = read(p[0], (char *)&m + have, sizeof(m) - have);
				if (r == 0)
					eof = 1;
				else if (r > 0)
					have += (size_t)r;
				if (have == sizeof(m)) {
					have = 0;
					if (m.type == MSG_FINDING) {
						finding(o, t, m.cls, m.index, &m.c, (long)m.ret,
							m.err, m.detail);
					} else if (m.type == MSG_SETUP) {
						cf_line("error",
							"kind=setup case=%s index=%llu what=%s",
							cf_spec_print(&m.c, spec, sizeof(spec)),
							(unsigned long long)m.index,
							cf_pct(m.detail, enc, sizeof(enc)));
					} else if (m.type == MSG_DONE) {
						done = 1;
					} else {
						cf_line("error", "kind=setup what=%s",
							cf_pct(m.detail, enc, sizeof(enc)));
						fatal = 1;
					}
				}
			}
			int64_t now = now_ns();
			if (now - last_progress >= 500000000LL) {
				last_progress = now;
				cf_line("progress", "next=%llu run=%llu findings=%llu",
					(unsigned long long)sh->index,
					(unsigned long long)(t->run + sh->run),
					(unsigned long long)t->findings);
			}
			if (__atomic_load_n(&sh->busy, __ATOMIC_ACQUIRE) &&
			    (double)(now - sh->start_ns) > o->timeout * 1e9) {
				struct cf_case c = sh->c;
				uint64_t index = sh->index;
				char detail[64];
				snprintf(detail, sizeof(detail), "elapsed=%.3f pid=%d",
					 (double)(now - sh->start_ns) / 1e9, (int)pid);
				finding(o, t, CF_CL_HANG, index, &c, 0, 0, detail);
				report_stack(pid, index);
				t->hang_total++;
				t->run += sh->run + 1;
				next = index + 1;
				hung = 1;
				if (kill_and_reap(pid, &wstatus)) {
					cf_line("error",
						"kind=unkillable index=%llu pid=%d next=%llu",
						(unsigned long long)index, (int)pid,
						(unsigned long long)next);
					close(p[0]);
					status = "unkillable";
					goto out;
				}
				remove_files(o->dir, pid);
				if (++t->hangs[c.sys] == o->hang_budget) {
					skip_mask |= 1u << c.sys;
					cf_line("skip", "syscall=%s hangs=%u cases=%llu next=%llu",
						cf_sys[c.sys].name, t->hangs[c.sys],
						(unsigned long long)cf_remaining(o, c.sys, next),
						(unsigned long long)next);
				}
				break;
			}
		}
		close(p[0]);
		if (hung)
			continue;
		if (stop_signal) {
			kill_and_reap(pid, &wstatus);
			remove_files(o->dir, pid);
			break;
		}
		while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
			;
		remove_files(o->dir, pid);
		if (fatal) {
			status = "error";
			break;
		}
		if (done) {
			t->run += sh->run;
			break;
		}
		/* the worker ended without finishing: a crash if it was in a call */
		uint64_t index = sh->index;
		if (__atomic_load_n(&sh->busy, __ATOMIC_ACQUIRE)) {
			char detail[64];
			struct cf_case c = sh->c;
			snprintf(detail, sizeof(detail), "signal=%d status=0x%x",
				 WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : 0, wstatus);
			finding(o, t, CF_CL_CRASH, index, &c, 0, 0, detail);
			t->run += sh->run + 1;
		} else {
			cf_line("error", "kind=worker index=%llu status=0x%x",
				(unsigned long long)index, wstatus);
			report_kmsg(24);
			t->run += sh->run;
		}
		next = index + 1;
	}
	if (stop_signal)
		status = "interrupted";
out:
	for (unsigned s = 0; s < CF_NSYS; s++)
		for (int k = 0; k < CF_NCLASS; k++)
			if (t->count[s][k])
				cf_line("summary",
					"syscall=%s class=%s count=%llu first=%s index=%llu",
					cf_sys[s].name, cf_class_names[k],
					(unsigned long long)t->count[s][k],
					cf_spec_print(&t->first[s][k], spec, sizeof(spec)),
					(unsigned long long)t->first_index[s][k]);
	cf_line("end", "run=%llu findings=%llu hangs=%llu status=%s", (unsigned long long)t->run,
		(unsigned long long)t->findings, (unsigned long long)t->hang_total, status);
	int rc = strcmp(status, "complete") ? 3 : t->findings ? 1 : 0;
	free(t);
	return rc;
}
