/* SPDX-License-Identifier: MIT */
/*
 * cases.c - the case model: spec parse and print, a case's constraints, the option lists,
 * and the enumeration in global index order (syscall, n, acc, koff, segs, prot, gap).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prober.h"

#define CF_SYSCALL(name, dir, obj, iov, koff) {#name, CF_##dir, CF_##obj, iov, koff},
const struct cf_sysinfo cf_sys[CF_NSYS] = {
#include "case.def"
};

#define CF_AXIS(name, def, meaning) #name,
const char *const cf_axis_names[CF_NAXIS] = {
#include "case.def"
};
#define CF_AXIS(name, def, meaning) def,
const char *const cf_axis_defaults[CF_NAXIS] = {
#include "case.def"
};

#define CF_PROT(name, meaning) #name,
const char *const cf_prot_names[CF_NPROT] = {
#include "case.def"
};

#define CF_CLASS(ident, name, meaning) name,
const char *const cf_class_names[CF_NCLASS] = {
#include "case.def"
};

struct field_info {
	const char *name;
	int is_prot;
	uint32_t def, lo, hi;
};
#define num 0
#define prot 1
#define CF_FIELD(name, type, def, lo, hi, meaning) {#name, type, def, lo, hi},
static const struct field_info fields[CF_NFIELD] = {
#include "case.def"
};
#undef num
#undef prot

static int fail(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -1;
}

int cf_sys_lookup(const char *name)
{
	for (int s = 0; s < CF_NSYS; s++)
		if (!strcmp(cf_sys[s].name, name))
			return s;
	return -1;
}

int cf_class_lookup(const char *name)
{
	for (int k = 0; k < CF_NCLASS; k++)
		if (!strcmp(cf_class_names[k], name))
			return k;
	return -1;
}

/* A decimal number, digits only; 0 or -1. */
static int parse_u32(const char *s, size_t len, uint32_t *out)
{
	uint64_t v = 0;
	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

int cf_case_check(const struct cf_case *c, char *err, size_t errlen)
{
	const struct cf_sysinfo *s = &cf_sys[c->sys];
	for (int f = 0; f < CF_NFIELD; f++)
		if (c->v[f] < fields[f].lo || c->v[f] > fields[f].hi)
			return fail(err, errlen, "%s=%u is out of range %u..%u", fields[f].name,
				    c->v[f], fields[f].lo, fields[f].hi);
	if (CF_ACC(c) > CF_N(c))
		return fail(err, errlen, "acc=%u is more than n=%u", CF_ACC(c), CF_N(c));
	if (CF_GAP(c) && CF_ACC(c) != CF_N(c))
		return fail(err, errlen, "gap=%u needs acc == n", CF_GAP(c));
	if (!s->koff && CF_KOFF(c))
		return fail(err, errlen, "koff must be 0 for %s", s->name);
	if (s->obj == CF_udp && CF_N(c) > CF_UDP_MAX)
		return fail(err, errlen, "n=%u is more than a UDP datagram holds (%u)", CF_N(c),
			    CF_UDP_MAX);
	if (!s->iov && CF_SEGS(c) != 1)
		return fail(err, errlen, "segs must be 1 for %s (it takes no iovecs)", s->name);
	if (s->dir == CF_to_kernel && CF_PROTV(c) != CF_PROT_none)
		return fail(err, errlen, "prot=%s needs a call that writes user memory, not %s",
			    cf_prot_names[CF_PROTV(c)], s->name);
	return 0;
}

int cf_spec_parse(const char *text, struct cf_case *c, char *err, size_t errlen)
{
	char why[160];
	const char *colon = strchr(text, ':');
	size_t slen = colon ? (size_t)(colon - text) : strlen(text);
	int seen[CF_NFIELD] = {0};

	memset(c, 0, sizeof(*c));
	int sys = -1;
	for (int s = 0; s < CF_NSYS; s++)
		if (strlen(cf_sys[s].name) == slen && !strncmp(cf_sys[s].name, text, slen))
			sys = s;
	if (sys < 0)
		return fail(err, errlen, "bad case spec '%s': unknown syscall '%.*s'", text,
			    (int)slen, text);
	c->sys = (uint32_t)sys;
	for (int f = 0; f < CF_NFIELD; f++)
		c->v[f] = fields[f].def;
	const char *p = colon ? colon + 1 : text + slen;
	while (colon && *p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		const char *eq = memchr(p, '=', len);
		if (!eq)
			return fail(err, errlen, "bad case spec '%s': '%.*s' is not key=value",
				    text, (int)len, p);
		size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
		int f = -1;
		for (int i = 0; i < CF_NFIELD; i++)
			if (strlen(fields[i].name) == klen && !strncmp(fields[i].name, p, klen))
				f = i;
		if (f < 0)
			return fail(
				err, errlen,
				"bad case spec '%s': unknown key '%.*s' (keys: n, acc, koff, segs, "
				"prot, gap)",
				text, (int)klen, p);
		if (seen[f]++)
			return fail(err, errlen, "bad case spec '%s': %s given twice", text,
				    fields[f].name);
		uint32_t v = 0;
		if (fields[f].is_prot) {
			int found = 0;
			for (uint32_t k = 0; k < CF_NPROT; k++)
				if (strlen(cf_prot_names[k]) == vlen &&
				    !strncmp(cf_prot_names[k], eq + 1, vlen)) {
					v = k;
					found = 1;
				}
			if (!found)
				return fail(err, errlen,
					    "bad case spec '%s': prot=%.*s is not a prot", text,
					    (int)vlen, eq + 1);
		} else if (parse_u32(eq + 1, vlen, &v)) {
			return fail(err, errlen, "bad case spec '%s': %s=%.*s is not a number",
				    text, fields[f].name, (int)vlen, eq + 1);
		}
		c->v[f] = v;
		if (!end)
			break;
		p = end + 1;
		if (!*p)
			return fail(err, errlen, "bad case spec '%s': it ends in ','", text);
	}
	if (cf_case_check(c, why, sizeof(why)))
		return fail(err, errlen, "bad case spec '%s': %s", text, why);
	return 0;
}

char *cf_spec_print(const struct cf_case *c, char *buf, size_t len)
{
	size_t at = (size_t)snprintf(buf, len, "%s:", cf_sys[c->sys].name);
	for (int f = 0; f < CF_NFIELD && at < len; f++) {
		if (fields[f].is_prot)
			at += (size_t)snprintf(buf + at, len - at, "%s%s=%s", f ? "," : "",
					       fields[f].name, cf_prot_names[c->v[f]]);
		else
			at += (size_t)snprintf(buf + at, len - at, "%s%s=%u", f ? "," : "",
					       fields[f].name, c->v[f]);
	}
	return buf;
}

/* "0-7,4089-4095"; prot lists take names ("none,ro"): then lo..hi index cf_prot_names. */
int cf_list_parse(const char *text, uint32_t lo, uint32_t hi, struct cf_list *l, char *err,
		  size_t errlen)
{
	if (!*text)
		return fail(err, errlen, "an empty list");
	int names = (hi == CF_NPROT - 1 && lo == 0 && text[0] >= 'a' && text[0] <= 'z');
	memset(l, 0, sizeof(*l));
	l->given = 1;
	const char *p = text;
	for (;;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		uint32_t a, b;
		if (l->count == CF_MAX_LIST)
			return fail(err, errlen, "'%s': more than %d items", text, CF_MAX_LIST);
		if (names) {
			int k = -1;
			for (int i = 0; i < CF_NPROT; i++)
				if (strlen(cf_prot_names[i]) == len &&
				    !strncmp(cf_prot_names[i], p, len))
					k = i;
			if (k < 0)
				return fail(err, errlen, "'%s': '%.*s' is not none or ro", text,
					    (int)len, p);
			a = b = (uint32_t)k;
		} else {
			const char *dash = memchr(p, '-', len);
			size_t alen = dash ? (size_t)(dash - p) : len;
			if (parse_u32(p, alen, &a) ||
			    (dash ? parse_u32(dash + 1, len - alen - 1, &b) : (b = a, 0)))
				return fail(err, errlen, "'%s': '%.*s' is not N or N-M", text,
					    (int)len, p);
			if (a > b || a < lo || b > hi)
				return fail(err, errlen, "'%s': '%.*s' is out of range %u..%u",
					    text, (int)len, p, lo, hi);
		}
		l->lo[l->count] = a;
		l->hi[l->count] = b;
		l->count++;
		if (!end)
			return 0;
		p = end + 1;
	}
}

int cf_list_has(const struct cf_list *l, uint32_t v)
{
	for (unsigned i = 0; i < l->count; i++)
		if (v >= l->lo[i] && v <= l->hi[i])
			return 1;
	return 0;
}

void cf_opts_defaults(struct cf_opts *o)
{
	char err[200];
	memset(o, 0, sizeof(*o));
	o->sys_mask = (1u << CF_NSYS) - 1;
	o->max_len = 256;
	cf_list_parse(cf_axis_defaults[CF_AXIS_sizes], 0, CF_MAX_N, &o->sizes, err, sizeof(err));
	cf_list_parse(cf_axis_defaults[CF_AXIS_koffs], 0, CF_MAX_KOFF, &o->koffs, err, sizeof(err));
	cf_list_parse(cf_axis_defaults[CF_AXIS_segs], 1, CF_MAX_SEGS, &o->segs, err, sizeof(err));
	cf_list_parse(cf_axis_defaults[CF_AXIS_prots], 0, CF_NPROT - 1, &o->prots, err,
		      sizeof(err));
	cf_list_parse(cf_axis_defaults[CF_AXIS_gaps], 0, 7, &o->gaps, err, sizeof(err));
	o->sizes.given = o->koffs.given = o->segs.given = o->prots.given = o->gaps.given = 0;
	o->shard_n = 1;
	o->timeout = 2.0;
	o->hang_budget = 3;
	o->max_lines = 16;
	o->selftest_class = -1;
}

/* A list's values, sorted and unique, into a new array; returns the count. */
static unsigned expand(const struct cf_list *l, uint32_t **out)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < l->count; i++)
		total += (uint64_t)l->hi[i] - l->lo[i] + 1;
	uint8_t *seen = NULL;
	uint32_t max = 0;
	for (unsigned i = 0; i < l->count; i++)
		if (l->hi[i] > max)
			max = l->hi[i];
	seen = calloc((size_t)max + 1, 1);
	*out = malloc(sizeof(uint32_t) * (size_t)(total ? total : 1));
	if (!seen || !*out)
		abort();
	for (unsigned i = 0; i < l->count; i++)
		for (uint64_t v = l->lo[i]; v <= l->hi[i]; v++)
			seen[v] = 1;
	unsigned n = 0;
	for (uint64_t v = 0; v <= max; v++)
		if (seen[v])
			(*out)[n++] = (uint32_t)v;
	free(seen);
	return n;
}

int cf_opts_finish(struct cf_opts *o, char *err, size_t errlen)
{
	struct cf_list nl = o->sizes;
	if (nl.count == CF_MAX_LIST)
		return fail(err, errlen, "--sizes: too many items");
	nl.lo[nl.count] = 0;
	nl.hi[nl.count] = o->max_len;
	nl.count++;
	o->nn = expand(&nl, &o->nv);
	o->nkoff = expand(&o->koffs, &o->koffv);
	o->nseg = expand(&o->segs, &o->segv);
	o->nprot = expand(&o->prots, &o->protv);
	o->ngap = expand(&o->gaps, &o->gapv);
	if (o->shard_n == 0 || o->shard_j >= o->shard_n)
		return fail(err, errlen, "--shard J/N needs 0 <= J < N");
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* The acc values for n: every one up to --max-len, else the sampled set. Caller frees. */
static unsigned acc_values(const struct cf_opts *o, uint32_t n, uint32_t **out)
{
	size_t cap = n <= o->max_len ? (size_t)n + 1 : 16 + 3 * ((size_t)n / 64 + 1);
	uint32_t *v = malloc(sizeof(uint32_t) * cap);
	unsigned k = 0;
	if (!v)
		abort();
	if (n <= o->max_len) {
		for (uint32_t a = 0; a <= n; a++)
			v[k++] = a;
	} else {
		for (uint32_t a = 0; a <= 9 && a <= n; a++)
			v[k++] = a;
		for (uint64_t m = 64; m - 1 <= n; m += 64)
			for (uint64_t a = m - 1; a <= m + 1 && a <= n; a++)
				v[k++] = (uint32_t)a;
		v[k++] = n - 1;
		v[k++] = n;
		qsort(v, k, sizeof(*v), cmp_u32);
		unsigned u = 0;
		for (unsigned i = 0; i < k; i++)
			if (!u || v[i] != v[u - 1])
				v[u++] = v[i];
		k = u;
	}
	*out = v;
	return k;
}

/* The inner dimensions of a syscall: koffs, segs, prots it takes. */
static unsigned dim_koff(const struct cf_opts *o, unsigned s)
{
	return cf_sys[s].koff ? o->nkoff : 1;
}
static unsigned dim_seg(const struct cf_opts *o, unsigned s)
{
	return cf_sys[s].iov ? o->nseg : 1;
}
static unsigned dim_prot(const struct cf_opts *o, unsigned s)
{
	if (cf_sys[s].dir == CF_to_user)
		return o->nprot;
	return o->nprot && o->protv[0] == CF_PROT_none; /* to_kernel: none only */
}
static int n_allowed(unsigned s, uint32_t n)
{
	return cf_sys[s].obj != CF_udp || n <= CF_UDP_MAX;
}

/* Cases in the (syscall, n) block. */
static uint64_t block_count(const struct cf_opts *o, unsigned s, uint32_t n)
{
	if (!(o->sys_mask & (1u << s)) || !n_allowed(s, n))
		return 0;
	uint64_t inner = (uint64_t)dim_koff(o, s) * dim_seg(o, s) * dim_prot(o, s);
	uint64_t nacc;
	if (n <= o->max_len) {
		nacc = (uint64_t)n + 1;
	} else {
		uint32_t *v;
		nacc = acc_values(o, n, &v);
		free(v);
	}
	return inner * (nacc - 1 + o->ngap);
}

static uint64_t sys_count(const struct cf_opts *o, unsigned s)
{
	uint64_t t = 0;
	if (o->cases) {
		for (unsigned i = 0; i < o->ncases; i++)
			t += o->cases[i].sys == s;
		return t;
	}
	for (unsigned i = 0; i < o->nn; i++)
		t += block_count(o, s, o->nv[i]);
	return t;
}

uint64_t cf_total(const struct cf_opts *o)
{
	if (o->cases)
		return o->ncases;
	uint64_t t = 0;
	for (unsigned s = 0; s < CF_NSYS; s++)
		t += sys_count(o, s);
	return t;
}

uint64_t cf_shard_count(const struct cf_opts *o, uint64_t a, uint64_t b)
{
	if (a < o->start)
		a = o->start;
	if (b <= a)
		return 0;
	uint64_t n = o->shard_n, j = o->shard_j;
	return (b + n - 1 - j) / n - (a + n - 1 - j) / n;
}

uint64_t cf_sys_end(const struct cf_opts *o, unsigned s)
{
	uint64_t end = 0;
	for (unsigned i = 0; i <= s; i++)
		end += sys_count(o, i);
	return end;
}

uint64_t cf_remaining(const struct cf_opts *o, unsigned s, uint64_t from)
{
	if (o->cases) {
		uint64_t t = 0;
		for (uint64_t i = from; i < o->ncases; i++)
			t += o->cases[i].sys == s && cf_shard_count(o, i, i + 1);
		return t;
	}
	uint64_t first = 0;
	for (unsigned i = 0; i < s; i++)
		first += sys_count(o, i);
	uint64_t end = first + sys_count(o, s);
	return cf_shard_count(o, from > first ? from : first, end);
}

/* Fill it->c from the position; the block (si, ni) is valid and it->acc is set. */
static void fill(struct cf_iter *it)
{
	const struct cf_opts *o = it->o;
	unsigned s = it->si;
	struct cf_case *c = &it->c;
	memset(c, 0, sizeof(*c));
	c->sys = s;
	CF_N(c) = o->nv[it->ni];
	CF_ACC(c) = it->acc[it->ai];
	CF_KOFF(c) = cf_sys[s].koff ? o->koffv[it->ki] : 0;
	CF_SEGS(c) = cf_sys[s].iov ? o->segv[it->ci] : 1;
	CF_PROTV(c) = cf_sys[s].dir == CF_to_user ? o->protv[it->pi] : CF_PROT_none;
	CF_GAP(c) = CF_ACC(c) == CF_N(c) ? o->gapv[it->gj] : 0;
}

/* Move to the first case of the next non-empty block at or after (si, ni). */
static void settle(struct cf_iter *it)
{
	const struct cf_opts *o = it->o;
	for (;;) {
		if (it->si >= CF_NSYS) {
			it->done = 1;
			return;
		}
		if (it->ni >= o->nn) {
			it->si++;
			it->ni = 0;
			continue;
		}
		if (block_count(o, it->si, o->nv[it->ni]))
			break;
		it->ni++;
	}
	free(it->acc);
	it->nacc = acc_values(o, o->nv[it->ni], &it->acc);
	it->ai = it->ki = it->ci = it->pi = it->gj = 0;
	fill(it);
}

void cf_iter_next(struct cf_iter *it)
{
	const struct cf_opts *o = it->o;
	it->index++;
	if (o->cases) {
		if (it->index >= o->ncases)
			it->done = 1;
		else
			it->c = o->cases[it->index];
		return;
	}
	unsigned s = it->si;
	unsigned ng = CF_ACC(&it->c) == CF_N(&it->c) ? o->ngap : 1;
	if (++it->gj < ng)
		goto out;
	it->gj = 0;
	if (++it->pi < dim_prot(o, s))
		goto out;
	it->pi = 0;
	if (++it->ci < dim_seg(o, s))
		goto out;
	it->ci = 0;
	if (++it->ki < dim_koff(o, s))
		goto out;
	it->ki = 0;
	if (++it->ai < it->nacc)
		goto out;
	it->ni++;
	settle(it);
	return;
out:
	fill(it);
}

void cf_iter_start(struct cf_iter *it, const struct cf_opts *o, uint64_t index)
{
	memset(it, 0, sizeof(*it));
	it->o = o;
	if (o->cases) {
		it->index = index;
		it->done = index >= o->ncases;
		if (!it->done)
			it->c = o->cases[index];
		return;
	}
	/* skip whole (syscall, n) blocks, then step inside the block */
	uint64_t base = 0;
	for (it->si = 0; it->si < CF_NSYS; it->si++) {
		for (it->ni = 0; it->ni < o->nn; it->ni++) {
			uint64_t b = block_count(o, it->si, o->nv[it->ni]);
			if (b && index < base + b)
				goto found;
			base += b;
		}
	}
	it->done = 1;
	it->index = base;
	return;
found:
	it->index = base;
	settle(it);
	while (!it->done && it->index < index)
		cf_iter_next(it);
}

void cf_iter_free(struct cf_iter *it)
{
	free(it->acc);
	it->acc = NULL;
}

void cf_opts_free(struct cf_opts *o)
{
	free(o->nv);
	free(o->koffv);
	free(o->segv);
	free(o->protv);
	free(o->gapv);
	free(o->cases);
	o->nv = o->koffv = o->segv = o->protv = o->gapv = NULL;
	o->cases = NULL;
}
