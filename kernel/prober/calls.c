/* SPDX-License-Identifier: MIT */
/*
 * calls.c - one worker's objects and memory, and one case: set-up, the call, observation.
 *
 * User memory (docs/formats.md, "Prober cases and lines"): the main region is
 *   [guard page][accessible pages][boundary page P][guard page]
 * and the buffer's accessible part ends at P (the faulting iovec segment's, for writev and
 * readv; the other segments lie in a second region, with guard pages at both ends, segment
 * i at offset start_i + 65 * i of its accessible part). P is PROT_NONE (prot=none, mapped,
 * not unmapped) or PROT_READ holding the user pattern u(0..4095) (prot=ro).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "prober.h"

struct cf_env {
	char wpath[512], rpath[512];
	int wfd, rfd, pipe_r, pipe_w, rx, tx;
	struct sockaddr_in rx_addr;
	uint8_t *region, *boundary, *other;
	size_t region_len, other_len;
	uint32_t max_n, max_koff;
	int cur_prot;
	uint8_t *kpat, *upat, *scratch;
	size_t scratch_len;
	long long wsize;
	/* the current case's segments */
	uint8_t *base[CF_MAX_SEGS];
	uint32_t start[CF_MAX_SEGS], len[CF_MAX_SEGS];
	unsigned nseg, fseg;
};

static size_t page_up(size_t x)
{
	return (x + CF_PAGE - 1) / CF_PAGE * CF_PAGE;
}

static int ioerr(char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "%s: %s", what, strerror(errno));
	return -1;
}

/* write/read all of it (set-up and observation, never the call under test) */
static int put_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}
static int get_all(int fd, uint8_t *p, size_t len)
{
	while (len) {
		ssize_t r = read(fd, p, len);
		if (r <= 0)
			return -1;
		p += r;
		len -= (size_t)r;
	}
	return 0;
}

static int make_pipe(struct cf_env *e, char *err, size_t errlen)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC))
		return ioerr(err, errlen, "pipe2");
	e->pipe_r = p[0];
	e->pipe_w = p[1];
	/* room for koff + n bytes, so no write of a case ever blocks */
	long want = (long)page_up((size_t)e->max_koff + e->max_n + 2 * CF_PAGE);
	if (want > 65536 && fcntl(p[1], F_SETPIPE_SZ, want) < 0)
		return ioerr(err, errlen, "F_SETPIPE_SZ");
	return 0;
}

static int make_udp(struct cf_env *e, char *err, size_t errlen)
{
	socklen_t len = sizeof(e->rx_addr);
	int big = 1 << 20;
	e->rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	e->tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (e->rx < 0 || e->tx < 0)
		return ioerr(err, errlen, "socket");
	memset(&e->rx_addr, 0, sizeof(e->rx_addr));
	e->rx_addr.sin_family = AF_INET;
	e->rx_addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(e->rx, (struct sockaddr *)&e->rx_addr, sizeof(e->rx_addr)))
		return ioerr(err, errlen, "bind 127.0.0.1 (is lo up?)");
	if (getsockname(e->rx, (struct sockaddr *)&e->rx_addr, &len))
		return ioerr(err, errlen, "getsockname");
	setsockopt(e->rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)); /* best effort */
	return 0;
}

struct cf_env *cf_env_new(const char *dir, uint32_t max_n, uint32_t max_koff, char *err,
			  size_t errlen)
{
	struct cf_env *e = calloc(1, sizeof(*e));
	if (!e)
		abort();
	e->wfd = e->rfd = e->pipe_r = e->pipe_w = e->rx = e->tx = -1;
	e->max_n = max_n;
	e->max_koff = max_koff;
	e->cur_prot = -1;
	e->wsize = -1;
	size_t klen = (size_t)max_koff + max_n + 16;
	e->kpat = malloc(klen);
	e->upat = malloc((size_t)max_n + 8 + CF_PAGE);
	e->scratch_len = klen + CF_PAGE;
	e->scratch = malloc(e->scratch_len > 65536 ? e->scratch_len : 65536);
	if (e->scratch_len < 65536)
		e->scratch_len = 65536;
	if (!e->kpat || !e->upat || !e->scratch)
		abort();
	for (size_t j = 0; j < klen; j++)
		e->kpat[j] = cf_kern_byte(j);
	for (size_t i = 0; i < (size_t)max_n + 8 + CF_PAGE; i++)
		e->upat[i] = cf_user_byte(i);

	size_t acc_area = page_up((size_t)max_n + 8 + CF_PAGE);
	e->region_len = acc_area + 3 * CF_PAGE;
	e->region = mmap(NULL, e->region_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	e->other_len = page_up((size_t)max_n + 65 * CF_MAX_SEGS) + 2 * CF_PAGE;
	e->other = mmap(NULL, e->other_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->region == MAP_FAILED || e->other == MAP_FAILED) {
		ioerr(err, errlen, "mmap");
		e->region = e->other = NULL;
		goto bad;
	}
	e->boundary = e->region + CF_PAGE + acc_area;
	if (mprotect(e->region + CF_PAGE, acc_area, PROT_READ | PROT_WRITE) ||
	    mprotect(e->other + CF_PAGE, e->other_len - 2 * CF_PAGE, PROT_READ | PROT_WRITE)) {
		ioerr(err, errlen, "mprotect");
		goto bad;
	}

	/* fresh objects of this worker's own: a task stuck on an old one blocks nothing here */
	snprintf(e->wpath, sizeof(e->wpath), "%s/cf-w-%d", dir, (int)getpid());
	snprintf(e->rpath, sizeof(e->rpath), "%s/cf-r-%d", dir, (int)getpid());
	e->wfd = open(e->wpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	e->rfd = open(e->rpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (e->wfd < 0 || e->rfd < 0) {
		ioerr(err, errlen, "open in --dir");
		goto bad;
	}
	/* the read file: the kernel pattern, long enough for every case */
	if (pwrite(e->rfd, e->kpat, klen, 0) != (ssize_t)klen) {
		ioerr(err, errlen, "pwrite");
		goto bad;
	}
	if (make_pipe(e, err, errlen) || make_udp(e, err, errlen))
		goto bad;
	return e;
bad:
	cf_env_free(e);
	return NULL;
}

void cf_env_free(struct cf_env *e)
{
	int fds[] = {e->wfd, e->rfd, e->pipe_r, e->pipe_w, e->rx, e->tx};
	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (e->wpath[0])
		unlink(e->wpath);
	if (e->rpath[0])
		unlink(e->rpath);
	if (e->region)
		munmap(e->region, e->region_len);
	if (e->other)
		munmap(e->other, e->other_len);
	free(e->kpat);
	free(e->upat);
	free(e->scratch);
	free(e);
}

static int set_prot(struct cf_env *e, int prot)
{
	if (prot == e->cur_prot)
		return 0;
	if (prot == CF_PROT_ro) {
		if (mprotect(e->boundary, CF_PAGE, PROT_READ | PROT_WRITE))
			return -1;
		memcpy(e->boundary, e->upat, CF_PAGE);
		if (mprotect(e->boundary, CF_PAGE, PROT_READ))
			return -1;
	} else if (mprotect(e->boundary, CF_PAGE, PROT_NONE)) {
		return -1;
	}
	e->cur_prot = prot;
	return 0;
}

/* The segments' lengths and places (docs/formats.md), and the user pattern in them. */
static void place(struct cf_env *e, const struct cf_case *c)
{
	uint32_t n = CF_N(c), acc = CF_ACC(c), segs = CF_SEGS(c), each = n / segs;
	e->nseg = segs;
	e->fseg = segs - 1;
	for (uint32_t i = 0; i < segs; i++) {
		e->start[i] = each * i;
		e->len[i] = i + 1 < segs ? each : n - each * i;
	}
	if (acc < n)
		for (uint32_t i = 0; i < segs; i++)
			if (acc >= e->start[i] && acc < e->start[i] + e->len[i]) {
				e->fseg = i;
				break;
			}
	for (uint32_t i = 0; i < segs; i++) {
		uint32_t have = e->len[i];
		if (i != e->fseg) {
			e->base[i] = e->other + CF_PAGE + e->start[i] + 65 * i;
		} else if (acc < n) {
			have = acc - e->start[i];
			e->base[i] = e->boundary - have;
		} else {
			e->base[i] = e->boundary - e->len[i] - CF_GAP(c);
			/* the gap bytes after the buffer: the pattern goes on */
			memcpy(e->boundary - CF_GAP(c), e->upat + n, CF_GAP(c));
		}
		memcpy(e->base[i], e->upat + e->start[i], have);
	}
}

int cf_user_get(struct cf_env *e, const struct cf_case *c, uint32_t i, uint8_t *out)
{
	for (unsigned s = 0; s < e->nseg; s++)
		if (i >= e->start[s] && i < e->start[s] + e->len[s]) {
			if (s == e->fseg && CF_ACC(c) < CF_N(c) && i >= CF_ACC(c))
				return 0;
			*out = e->base[s][i - e->start[s]];
			return 1;
		}
	return 0;
}

long cf_user_outside_changed(struct cf_env *e, const struct cf_case *c)
{
	uint32_t n = CF_N(c);
	if (CF_ACC(c) == n)
		for (uint32_t j = 0; j < CF_GAP(c); j++)
			if (e->boundary[(long)j - (long)CF_GAP(c)] != e->upat[n + j])
				return (long)j + 1;
	if (CF_PROTV(c) == CF_PROT_ro)
		for (uint32_t j = 0; j < CF_PAGE; j++)
			if (e->boundary[j] != e->upat[j])
				return (long)CF_GAP(c) + j + 1;
	return 0;
}

static int setup_fail(struct cf_obs *o, const char *what)
{
	snprintf(o->detail, sizeof(o->detail), "%s: %s", what, strerror(errno));
	o->setup_failed = 1;
	return -1;
}

/* Empty the pipe and the receiving socket (set-up, and reading back). */
static long drain_pipe(struct cf_env *e, uint8_t *to, size_t cap)
{
	int avail = 0;
	if (ioctl(e->pipe_r, FIONREAD, &avail) || avail < 0)
		return -1;
	if ((size_t)avail > cap)
		return -1;
	if (get_all(e->pipe_r, to, (size_t)avail))
		return -1;
	return avail;
}

/* Datagrams waiting at rx: the first's length into *len (and bytes into to), the count. */
static int drain_udp(struct cf_env *e, uint8_t *to, size_t cap, size_t *len)
{
	int count = 0;
	for (;;) {
		ssize_t r = recv(e->rx, to, cap, MSG_DONTWAIT | MSG_TRUNC);
		if (r < 0)
			return count;
		if (count == 0 && len)
			*len = (size_t)r;
		if (count == 0)
			to = NULL, cap = 0; /* keep the first datagram's bytes */
		count++;
	}
}

void cf_selftest_sleep(void)
{
	/* block in the kernel (an empty pipe's read), so /proc/PID/stack has something */
	int p[2];
	char b;
	if (pipe(p) == 0)
		while (read(p[0], &b, 1) != 1)
			;
	for (;;)
		pause();
}

int cf_call_run(struct cf_env *e, const struct cf_case *c, struct cf_obs *o)
{
	uint32_t n = CF_N(c), koff = CF_KOFF(c);
	const struct cf_sysinfo *s = &cf_sys[c->sys];
	struct iovec iov[CF_MAX_SEGS];
	long ret = 0;

	memset(o, 0, sizeof(*o));
	if (set_prot(e, (int)CF_PROTV(c)))
		return setup_fail(o, "mprotect");
	place(e, c);
	for (unsigned i = 0; i < e->nseg; i++) {
		iov[i].iov_base = e->base[i];
		iov[i].iov_len = e->len[i];
	}
	uint8_t *buf = e->base[0];

	/* set-up of the kernel side */
	switch (s->obj) {
	case CF_file:
		if (s->dir == CF_to_kernel) {
			long long want = (long long)koff + n + 16;
			if (e->wsize > want && ftruncate(e->wfd, want))
				return setup_fail(o, "ftruncate");
			if (pwrite(e->wfd, e->kpat, (size_t)want, 0) != want)
				return setup_fail(o, "pwrite");
			e->wsize = want;
		}
		if (c->sys != CF_SYS_pwrite64 && c->sys != CF_SYS_pread64 &&
		    lseek(s->dir == CF_to_kernel ? e->wfd : e->rfd, koff, SEEK_SET) != (off_t)koff)
			return setup_fail(o, "lseek");
		break;
	case CF_pipe:
		if (put_all(e->pipe_w, e->kpat, s->dir == CF_to_kernel ? koff : (size_t)koff + n))
			return setup_fail(o, "pipe set-up write");
		if (s->dir == CF_to_user && get_all(e->pipe_r, e->scratch, koff))
			return setup_fail(o, "pipe set-up read");
		break;
	case CF_udp:
		drain_udp(e, e->scratch, e->scratch_len, NULL);
		if (s->dir == CF_to_user) {
			struct pollfd p = {.fd = e->rx, .events = POLLIN};
			if (sendto(e->tx, e->kpat, n, 0, (struct sockaddr *)&e->rx_addr,
				   sizeof(e->rx_addr)) != (ssize_t)n)
				return setup_fail(o, "udp set-up sendto");
			if (poll(&p, 1, 2000) != 1)
				return setup_fail(o, "udp set-up: no datagram");
		}
		break;
	}

	/* the call */
	errno = 0;
	struct sockaddr_in from;
	socklen_t fromlen = sizeof(from);
	switch (c->sys) {
	case CF_SYS_write:
		ret = write(e->wfd, buf, n);
		break;
	case CF_SYS_pwrite64:
		ret = pwrite(e->wfd, buf, n, koff);
		break;
	case CF_SYS_writev:
		ret = writev(e->wfd, iov, (int)e->nseg);
		break;
	case CF_SYS_read:
		ret = read(e->rfd, buf, n);
		break;
	case CF_SYS_pread64:
		ret = pread(e->rfd, buf, n, koff);
		break;
	case CF_SYS_readv:
		ret = readv(e->rfd, iov, (int)e->nseg);
		break;
	case CF_SYS_pipe_write:
		ret = write(e->pipe_w, buf, n);
		break;
	case CF_SYS_pipe_read:
		ret = read(e->pipe_r, buf, n);
		break;
	case CF_SYS_sendto:
		ret = sendto(e->tx, buf, n, 0, (struct sockaddr *)&e->rx_addr, sizeof(e->rx_addr));
		break;
	case CF_SYS_recvfrom:
		ret = recvfrom(e->rx, buf, n, 0, (struct sockaddr *)&from, &fromlen);
		break;
	}
	o->ret = ret;
	o->err = ret < 0 ? errno : 0;

	/* observation */
	switch (s->obj) {
	case CF_file:
		if (s->dir == CF_to_kernel) {
			struct stat st;
			if (fstat(e->wfd, &st))
				return setup_fail(o, "fstat");
			o->file_size = st.st_size;
			size_t cap = (size_t)koff + n + 16 + CF_PAGE;
			ssize_t r = pread(e->wfd, e->scratch, cap, 0);
			if (r < 0)
				return setup_fail(o, "pread back");
			o->dst = e->scratch;
			o->dst_len = (size_t)r;
		}
		break;
	case CF_pipe: {
		long got = drain_pipe(e, e->scratch, e->scratch_len);
		if (got < 0)
			return setup_fail(o, "pipe read back");
		if (s->dir == CF_to_kernel) {
			o->dst = e->scratch;
			o->dst_len = (size_t)got;
		} else {
			o->rest = e->scratch;
			o->rest_len = (size_t)got;
		}
		/* A call that faulted can leave an empty buffer in the pipe's ring, which the
		 * next write would fill from its start: every case gets the pipe a fresh one
		 * would be, as a reproducer's is. */
		if (o->ret != (long)n) {
			char err[96];
			close(e->pipe_r);
			close(e->pipe_w);
			if (make_pipe(e, err, sizeof(err)))
				return setup_fail(o, "pipe re-made");
		}
		break;
	}
	case CF_udp:
		if (s->dir == CF_to_kernel) {
			struct pollfd p = {.fd = e->rx, .events = POLLIN};
			/* a sent datagram is queued before sendto returns on loopback; wait a little
			 * in case it is not, never long */
			poll(&p, 1, ret >= 0 ? 1000 : 0);
			size_t len = 0;
			int count = drain_udp(e, e->scratch, e->scratch_len, &len);
			o->dst = count ? e->scratch : NULL;
			o->dst_len = count ? len : 0;
			o->extra = count > 1 ? count - 1 : 0;
		} else {
			drain_udp(e, e->scratch, e->scratch_len, NULL);
		}
		break;
	}
	return 0;
}

/* --selftest-break CLASS: corrupt the observation after the call so that CLASS's check
 * must fire (where the case allows it); proves every check can fail. */
void cf_selftest_break(struct cf_env *e, const struct cf_case *c, struct cf_obs *o, int cls)
{
	uint32_t n = CF_N(c), acc = CF_ACC(c), koff = CF_KOFF(c);
	const struct cf_sysinfo *s = &cf_sys[c->sys];
	long k = o->ret < 0 ? 0 : o->ret;
	switch (cls) {
	case CF_CL_BAD_RETURN:
		o->ret = (long)n + 1;
		break;
	case CF_CL_SPURIOUS_FAULT:
		if (acc == n && n >= 1)
			o->ret = (long)n - 1;
		break;
	case CF_CL_OVER_REPORT:
		if (acc < n)
			o->ret = (long)acc + 1;
		break;
	case CF_CL_NO_PROGRESS:
		if (n >= 1 && acc >= cf_progress_threshold(c)) {
			o->ret = -1;
			o->err = EFAULT;
		}
		break;
	case CF_CL_WRONG_DATA:
		if (k < 1 || acc < 1)
			break;
		if (s->dir == CF_to_user)
			e->base[0][0] ^= 0x80; /* the first byte is accessible: acc >= 1 */
		else if (o->dst && o->dst_len > (s->obj == CF_udp ? 0 : koff))
			o->dst[s->obj == CF_udp ? 0 : koff] ^= 0x80;
		break;
	case CF_CL_STORE_BEYOND_REPORTED:
		if (s->dir == CF_to_user) {
			if ((uint32_t)k < acc)
				e->base[e->fseg][acc - e->start[e->fseg] - 1] ^= 0x40;
			else if (acc == n && CF_GAP(c))
				e->boundary[-1] ^= 0x40; /* a gap byte, past n */
		} else if (s->obj == CF_file) {
			if (o->dst_len)
				o->dst[o->dst_len - 1] ^=
					0x40; /* the last of the 16 bytes past n */
		} else if (s->obj == CF_pipe) {
			o->dst_len++; /* one byte more in the pipe than written */
		} else {
			o->extra++; /* a second datagram */
		}
		break;
	case CF_CL_LOST_DATA:
		if (c->sys == CF_SYS_pipe_read && o->rest_len)
			o->rest_len--;
		break;
	}
}
