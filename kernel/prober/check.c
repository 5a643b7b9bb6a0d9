/* SPDX-License-Identifier: MIT */
/*
 * check.c - the syscall-level contract, written once: an observed call -> finding classes.
 * docs/formats.md ("Prober cases and lines", "The contract") says the same, rule by rule.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "prober.h"

uint8_t cf_src_byte(const struct cf_case *c, uint64_t i)
{
	if (cf_sys[c->sys].dir == CF_to_kernel)
		return cf_user_byte(i);
	return cf_kern_byte(CF_KOFF(c) + i);
}

/* Files make progress from the first accessible byte. Pipes commit whole pipe-page
 * chunks (Linux drops a chunk whose copy faults), so only once a full page is accessible
 * (or the whole buffer) must one of them complete. A datagram is all or nothing. */
uint32_t cf_progress_threshold(const struct cf_case *c)
{
	uint32_t n = CF_N(c);
	switch (cf_sys[c->sys].obj) {
	case CF_file:
		return 1;
	case CF_pipe:
		return n < CF_PIPE_CHUNK ? n : CF_PIPE_CHUNK;
	case CF_udp:
		break;
	}
	return n;
}

static int add(struct cf_finding *f, int nf, int cls, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int add(struct cf_finding *f, int nf, int cls, const char *fmt, ...)
{
	for (int i = 0; i < nf; i++)
		if (f[i].cls == cls)
			return nf; /* the first reason is the one reported */
	va_list ap;
	va_start(ap, fmt);
	f[nf].cls = cls;
	vsnprintf(f[nf].detail, sizeof(f[nf].detail), fmt, ap);
	va_end(ap);
	return nf + 1;
}

int cf_check(struct cf_env *e, const struct cf_case *c, const struct cf_obs *o,
	     struct cf_finding *f)
{
	const struct cf_sysinfo *s = &cf_sys[c->sys];
	long n = CF_N(c), acc = CF_ACC(c), koff = CF_KOFF(c), ret = o->ret;
	int nf = 0, bad = 0;

	/* the return value */
	if (ret < -1 || ret > n || (ret == -1 && o->err != EFAULT)) {
		nf = add(f, nf, CF_CL_BAD_RETURN, "n=%ld", n);
		bad = 1;
	} else if (s->obj == CF_udp && ret >= 0 && ret != n) {
		nf = add(f, nf, CF_CL_BAD_RETURN, "datagram=partial");
		bad = 1;
	}
	long k = ret < 0 ? 0 : ret > n ? n : ret; /* what the call claims */
	long good = k < acc ? k : acc; /* what can be right of it */
	if (!bad && n >= 1 && acc == n && ret != n)
		nf = add(f, nf, CF_CL_SPURIOUS_FAULT, "want=%ld", n);
	if (!bad && k > acc)
		nf = add(f, nf, CF_CL_OVER_REPORT, "acc=%ld", acc);
	if (n >= 1 && acc >= (long)cf_progress_threshold(c) && (ret == 0 || ret == -1))
		nf = add(f, nf, CF_CL_NO_PROGRESS, "threshold=%u", cf_progress_threshold(c));

	/* the destination */
	if (s->dir == CF_to_kernel && s->obj == CF_file) {
		long want = koff + n + 16;
		if (o->file_size != want)
			nf = add(f, nf, CF_CL_STORE_BEYOND_REPORTED, "size=%lld want=%ld",
				 o->file_size, want);
		for (long j = 0; j < (long)o->dst_len; j++) {
			if (j >= koff + good && j < koff + k)
				continue; /* over-reported: already a finding */
			int in = j >= koff && j < koff + good;
			uint8_t w =
				in ? cf_user_byte((uint64_t)(j - koff)) : cf_kern_byte((uint64_t)j);
			if (o->dst[j] != w) {
				nf = add(f, nf, in ? CF_CL_WRONG_DATA : CF_CL_STORE_BEYOND_REPORTED,
					 "file_off=%ld want=0x%02x got=0x%02x", j, w, o->dst[j]);
			}
		}
	} else if (s->dir == CF_to_kernel && s->obj == CF_pipe) {
		/* the pipe holds koff old bytes, then the k written */
		long len = (long)o->dst_len;
		for (long j = 0; j < len && j < koff + good; j++) {
			uint8_t w = j < koff ? cf_kern_byte((uint64_t)j)
					     : cf_user_byte((uint64_t)(j - koff));
			if (o->dst[j] != w) {
				nf = add(f, nf, CF_CL_WRONG_DATA,
					 "pipe_off=%ld want=0x%02x got=0x%02x", j, w, o->dst[j]);
				break;
			}
		}
		if (len < koff + k)
			nf = add(f, nf, CF_CL_WRONG_DATA, "pipe_len=%ld want=%ld", len, koff + k);
		else if (len > koff + k)
			nf = add(f, nf, CF_CL_STORE_BEYOND_REPORTED, "pipe_len=%ld want=%ld", len,
				 koff + k);
	} else if (s->dir == CF_to_kernel) { /* udp */
		if (ret == -1 && o->dst)
			nf = add(f, nf, CF_CL_STORE_BEYOND_REPORTED, "delivered=%zu", o->dst_len);
		if (ret == n && !o->dst)
			nf = add(f, nf, CF_CL_WRONG_DATA, "delivered=none");
		if (ret == n && o->dst && (long)o->dst_len != n)
			nf = add(f, nf, CF_CL_WRONG_DATA, "delivered=%zu want=%ld", o->dst_len, n);
		if (ret == n && o->dst && (long)o->dst_len == n)
			for (long j = 0; j < good; j++)
				if (o->dst[j] != cf_user_byte((uint64_t)j)) {
					nf = add(f, nf, CF_CL_WRONG_DATA,
						 "at=%ld want=0x%02x got=0x%02x", j,
						 cf_user_byte((uint64_t)j), o->dst[j]);
					break;
				}
		if (o->extra)
			nf = add(f, nf, CF_CL_STORE_BEYOND_REPORTED, "extra_datagrams=%d",
				 o->extra);
	} else {
		/* to_user: the user buffer */
		for (long i = 0; i < n; i++) {
			uint8_t got, src = cf_src_byte(c, (uint64_t)i);
			if (!cf_user_get(e, c, (uint32_t)i, &got))
				continue; /* inaccessible */
			if (i < good) {
				if (got != src)
					nf = add(f, nf, CF_CL_WRONG_DATA,
						 "at=%ld want=0x%02x got=0x%02x", i, src, got);
			} else if (i >= k) {
				uint8_t old = cf_user_byte((uint64_t)i);
				/* pipes and datagrams may leave a failed chunk's right bytes */
				int ok = got == old || (s->obj != CF_file && got == src);
				if (!ok)
					nf = add(f, nf, CF_CL_STORE_BEYOND_REPORTED,
						 "at=%ld want=0x%02x got=0x%02x", i, old, got);
			}
		}
		long out = cf_user_outside_changed(e, c);
		if (out)
			nf = add(f, nf, CF_CL_STORE_BEYOND_REPORTED, "past_n=%ld", out - 1);
		if (c->sys == CF_SYS_pipe_read) {
			long want = n - k;
			int lost = (long)o->rest_len != want;
			for (long j = 0; !lost && j < want; j++)
				lost = o->rest[j] != cf_kern_byte((uint64_t)(koff + k + j));
			if (lost)
				nf = add(f, nf, CF_CL_LOST_DATA, "left=%zu want=%ld", o->rest_len,
					 want);
		}
	}
	return nf;
}
