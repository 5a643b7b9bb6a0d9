/* SPDX-License-Identifier: MIT */
/*
 * main.c - the prober's options, and its PID-1 mode: as /init of a small VM it mounts
 * /proc, /tmp (tmpfs) and /dev, brings up lo, reads its options from /cf-args (one a line),
 * sweeps, syncs and powers off (init must never exit: the kernel would panic).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "prober.h"

double cf_now(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts)) {
		/* nothing can be timed without it: say so and stop */
		cf_line("error", "kind=clock errno=%d", errno);
		_exit(3);
	}
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char usage[] =
	"usage: prober [options]\n"
	"  --syscalls LIST     default: all (write,pwrite64,writev,read,pread64,readv,\n"
	"                      pipe_write,pipe_read,sendto,recvfrom)\n"
	"  --max-len L         every n in 0..L, every acc 0..n (default 256)\n"
	"  --sizes, --koffs, --segs, --prots, --gaps LIST: the axes (defaults below; '' for none)\n"
	"  --case SPEC         just this case (repeatable)\n"
	"  --count             print the number of cases and exit\n"
	"  --trace             a `run` line before each case (the host pins a case the kernel died "
	"in)\n"
	"  --list              print 'INDEX SPEC' for every case run, and exit\n"
	"  --shard J/N         the cases with index % N == J\n"
	"  --start I           begin at index I\n"
	"  --timeout S         a call that takes longer is a hang (default 2)\n"
	"  --hang-budget H     skip a syscall after H hangs (default 3)\n"
	"  --max-lines M       finding lines per (syscall, class) (default 16)\n"
	"  --dir DIR           where the files go (default /tmp)\n"
	"  --selftest-break CLASS | --selftest-hang INDEX | --selftest-crash INDEX\n"
	"                      negative controls: prove a check, the watchdog, crash detection\n";

static int bad(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "prober: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n");
	return 2;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;
	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno)
		return -1;
	*out = v;
	return 0;
}

static int list_opt(const char *name, const char *val, uint32_t lo, uint32_t hi, struct cf_list *l,
		    char *text)
{
	char err[200];
	snprintf(text, 256, "%s", *val ? val : "none");
	if (!*val) {
		memset(l, 0, sizeof(*l));
		l->given = 1;
		return 0;
	}
	if (cf_list_parse(val, lo, hi, l, err, sizeof(err)))
		return bad("%s %s", name, err);
	return 0;
}

static int parse_args(int argc, char **argv, struct cf_opts *o, int *list_only)
{
	char err[240];
	cf_opts_defaults(o);
	o->dir = "/tmp";
	strcpy(o->list_text[0], "all");
	for (int k = 0; k < CF_NAXIS; k++) /* list_text[1..]: the axes in case.def's order */
		snprintf(o->list_text[k + 1], sizeof(o->list_text[k + 1]), "%s",
			 cf_axis_defaults[k]);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int flag = !strcmp(a, "--count") || !strcmp(a, "--list") || !strcmp(a, "--help") ||
			   !strcmp(a, "--trace");
		const char *v = flag ? NULL : i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t u;
		int r = 0;
		if (!flag && !v)
			return bad("%s needs a value%s", a, "");
		if (!flag)
			i++;
		if (!strcmp(a, "--help")) {
			fputs(usage, stdout);
			for (int k = 0; k < CF_NAXIS; k++)
				printf("  --%-6s default %s\n", cf_axis_names[k],
				       cf_axis_defaults[k]);
			exit(0);
		} else if (!strcmp(a, "--trace")) {
			o->trace = 1;
		} else if (!strcmp(a, "--count")) {
			o->count_only = 1;
		} else if (!strcmp(a, "--list")) {
			*list_only = 1;
		} else if (!strcmp(a, "--syscalls")) {
			char copy[256];
			snprintf(copy, sizeof(copy), "%s", v);
			snprintf(o->list_text[0], 256, "%s", v);
			o->sys_mask = 0;
			for (char *s = strtok(copy, ","); s; s = strtok(NULL, ",")) {
				int k = cf_sys_lookup(s);
				if (k < 0)
					return bad("--syscalls: unknown syscall '%s'%s", s, "");
				o->sys_mask |= 1u << k;
			}
		} else if (!strcmp(a, "--max-len")) {
			if (parse_u64(v, &u) || u > CF_MAX_N)
				return bad("--max-len %s: expected 0..1048576%s", v, "");
			o->max_len = (uint32_t)u;
		} else if (!strcmp(a, "--sizes")) {
			r = list_opt(a, v, 0, CF_MAX_N, &o->sizes, o->list_text[1]);
		} else if (!strcmp(a, "--koffs")) {
			r = list_opt(a, v, 0, CF_MAX_KOFF, &o->koffs, o->list_text[2]);
		} else if (!strcmp(a, "--segs")) {
			r = list_opt(a, v, 1, CF_MAX_SEGS, &o->segs, o->list_text[3]);
		} else if (!strcmp(a, "--prots")) {
			r = list_opt(a, v, 0, CF_NPROT - 1, &o->prots, o->list_text[4]);
		} else if (!strcmp(a, "--gaps")) {
			r = list_opt(a, v, 0, 7, &o->gaps, o->list_text[5]);
		} else if (!strcmp(a, "--case")) {
			o->cases = realloc(o->cases, sizeof(*o->cases) * (o->ncases + 1));
			if (!o->cases)
				abort();
			if (cf_spec_parse(v, &o->cases[o->ncases], err, sizeof(err)))
				return bad("%s%s", err, "");
			o->ncases++;
		} else if (!strcmp(a, "--shard")) {
			unsigned long long j, n;
			char extra;
			if (sscanf(v, "%llu/%llu%c", &j, &n, &extra) != 2 || n == 0 || j >= n)
				return bad("--shard %s: expected J/N with 0 <= J < N%s", v, "");
			o->shard_j = j;
			o->shard_n = n;
		} else if (!strcmp(a, "--start")) {
			if (parse_u64(v, &o->start))
				return bad("--start %s: expected a case index%s", v, "");
		} else if (!strcmp(a, "--timeout")) {
			char *end;
			o->timeout = strtod(v, &end);
			if (*end || !(o->timeout > 0 && o->timeout < 3600))
				return bad("--timeout %s: expected seconds, e.g. 2 or 0.5%s", v,
					   "");
		} else if (!strcmp(a, "--hang-budget") || !strcmp(a, "--max-lines")) {
			if (parse_u64(v, &u) || u > 1000000000)
				return bad("%s %s: expected a count", a, v);
			*(!strcmp(a, "--max-lines") ? &o->max_lines : &o->hang_budget) =
				(unsigned)u;
		} else if (!strcmp(a, "--dir")) {
			o->dir = v;
		} else if (!strcmp(a, "--selftest-break")) {
			o->selftest = CF_ST_BREAK;
			o->selftest_class = cf_class_lookup(v);
			if (o->selftest_class < 0 || o->selftest_class == CF_CL_HANG ||
			    o->selftest_class == CF_CL_CRASH)
				return bad("--selftest-break %s: a class checked after the call "
					   "(hang and crash: --selftest-hang, --selftest-crash)%s",
					   v, "");
		} else if (!strcmp(a, "--selftest-hang") || !strcmp(a, "--selftest-crash")) {
			o->selftest = !strcmp(a, "--selftest-hang") ? CF_ST_HANG : CF_ST_CRASH;
			if (parse_u64(v, &o->selftest_index))
				return bad("%s %s: expected a case index", a, v);
		} else {
			return bad("unknown option '%s' (--help lists them)%s", a, "");
		}
		if (r)
			return r;
	}
	if (cf_opts_finish(o, err, sizeof(err)))
		return bad("%s%s", err, "");
	return 0;
}

/* ---- PID 1 ---- */
static void init_setup(void)
{
	mkdir("/proc", 0555);
	mkdir("/tmp", 01777);
	mkdir("/dev", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("tmpfs", "/tmp", "tmpfs", 0, "mode=1777");
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL); /* if the kernel has it */
	if (fcntl(1, F_GETFD) < 0) {
		/* no /dev/console in the initramfs: the kernel gave us no stdout */
		int fd = open("/dev/console", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
	}
	/* Kernel messages off the console (our lines share it), but for alerts and emergencies
	 * (an oops, a panic: the console is all that is left of them): the log keeps them all */
	klogctl(8 /* SYSLOG_ACTION_CONSOLE_LEVEL */, NULL, 2);
	/* lo up: the kernel gives it 127.0.0.1 */
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		cf_line("error", "kind=setup what=lo-flags errno=%d", errno);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (s >= 0 && ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		cf_line("error", "kind=setup what=lo-up errno=%d", errno);
	if (s >= 0)
		close(s);
}

/* /cf-args: one argument a line, each line exactly (an empty line is an empty argument,
 * e.g. `--sizes` with none); the host writes a newline after the last one. */
static int read_args(char ***argv)
{
	static char text[65536];
	size_t len = 0;
	int n = 1, fd = open("/cf-args", O_RDONLY);
	while (fd >= 0 && len < sizeof(text) - 1) {
		ssize_t r = read(fd, text + len, sizeof(text) - 1 - len);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	if (len == sizeof(text) - 1) {
		cf_line("error", "kind=args why=/cf-args-is-larger-than-%zu-bytes",
			sizeof(text) - 2);
		return -1;
	}
	text[len] = 0;
	*argv = calloc(sizeof(char *), 4096);
	if (!*argv)
		abort();
	(*argv)[0] = "prober";
	for (char *line = text; *line && n < 4095; n++) {
		char *nl = strchr(line, '\n');
		(*argv)[n] = line;
		if (!nl)
			return n + 1;
		*nl = 0;
		line = nl + 1;
	}
	return n;
}

static void power_off(void)
{
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause(); /* never exit: init exiting panics the kernel */
}

int main(int argc, char **argv)
{
	struct cf_opts o;
	int list_only = 0, pid1 = getpid() == 1;
	if (pid1) {
		init_setup();
		argc = read_args(&argv);
		if (argc < 0)
			power_off();
	}
	int rc = parse_args(argc, argv, &o, &list_only);
	if (rc) {
		if (pid1) {
			cf_line("error", "kind=args");
			power_off();
		}
		return rc;
	}
	if (o.count_only) {
		printf("%llu\n", (unsigned long long)cf_shard_count(&o, 0, cf_total(&o)));
		cf_opts_free(&o);
		return 0;
	}
	if (list_only) {
		struct cf_iter it;
		char spec[CF_SPEC_MAX];
		for (cf_iter_start(&it, &o, o.start); !it.done; cf_iter_next(&it))
			if (it.index % o.shard_n == o.shard_j)
				printf("%llu %s\n", (unsigned long long)it.index,
				       cf_spec_print(&it.c, spec, sizeof(spec)));
		cf_iter_free(&it);
		cf_opts_free(&o);
		return 0;
	}
	rc = cf_sweep(&o);
	cf_opts_free(&o);
	if (pid1)
		power_off();
	return rc;
}
