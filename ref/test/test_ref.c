/* SPDX-License-Identifier: MIT */
/*
 * test_ref.c - native unit tests (clang, ASan+UBSan) for the reference, the
 * oracle, the case generator, the arena placement and the table lookup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "cases.h"
#include "extable.h"
#include "records.h"
#include "ref.h"

static int failures, checks;

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		checks++;                                                          \
		if (!(cond)) {                                                     \
			failures++;                                                \
			fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                              \
			fputc('\n', stderr);                                       \
		}                                                                  \
	} while (0)

/* A simulated call: buffers with W canary bytes either side of dst. */
#define W 64
#define MAXN 300
struct sim {
	struct cf_case c;
	uint8_t src[MAXN + W];
	uint8_t before[MAXN + 2 * W];
	uint8_t dst[MAXN + 2 * W];
	struct cf_observed o;
	struct cf_result r;
};

static struct cf_case mkcase(uint16_t kind, uint16_t profile, uint64_t n, uint64_t sf, uint64_t df)
{
	struct cf_case c = {0};
	c.magic = CF_CASE_MAGIC;
	c.kind = kind;
	c.profile = profile;
	c.n = n;
	c.src_fault = sf;
	c.dst_fault = df;
	c.src_off = (sf == CF_NO_FAULT || sf == 0)
			    ? 0
			    : (uint32_t)((CF_PAGE_SIZE - sf % CF_PAGE_SIZE) % CF_PAGE_SIZE);
	c.dst_off = (df == CF_NO_FAULT || df == 0)
			    ? 0
			    : (uint32_t)((CF_PAGE_SIZE - df % CF_PAGE_SIZE) % CF_PAGE_SIZE);
	return c;
}

/* Set up a sim whose dst already holds the exact expectation and N = n - A. */
static void sim_exact(struct sim *s, struct cf_case c)
{
	s->c = c;
	for (int i = 0; i < MAXN + W; i++)
		s->src[i] = (uint8_t)(i * 37 + 11);
	for (int i = 0; i < MAXN + 2 * W; i++)
		s->before[i] = (uint8_t)(i * 91 + 200);
	uint64_t a = cf_ref_accessible(&c);
	int64_t hi = (int64_t)c.n + W;
	if (c.dst_fault != CF_NO_FAULT && (int64_t)c.dst_fault < hi)
		hi = (int64_t)c.dst_fault;
	cf_ref_expect(&c, s->src, s->before + W, -W, hi, s->dst);
	memset(&s->o, 0, sizeof(s->o));
	s->o.outcome = CF_OUT_RETURNED;
	s->o.ret = cf_kind_returns_dst(c.kind) ? (uint64_t)(uintptr_t)(s->dst + W) : c.n - a;
	s->o.dst = s->dst + W;
	s->o.before = s->before + W;
	s->o.src = s->src;
	s->o.lo = -W;
	s->o.hi = hi;
}

static uint32_t run(struct sim *s)
{
	memset(&s->r, 0, sizeof(s->r));
	cf_oracle(&s->c, &s->o, &s->r);
	return s->r.classes;
}

static void test_accessible(void)
{
	struct cf_case c = mkcase(CF_KIND_COPY, 0, 100, 40, CF_NO_FAULT);
	CHECK(cf_ref_accessible(&c) == 40, "src fault bounds A");
	c = mkcase(CF_KIND_COPY, 0, 100, 40, 17);
	CHECK(cf_ref_accessible(&c) == 17, "the nearer fault wins");
	c = mkcase(CF_KIND_COPY, 0, 10, 40, 17);
	CHECK(cf_ref_accessible(&c) == 10, "faults past n do not matter");
	c = mkcase(CF_KIND_CLEAR, 0, 100, 5, CF_NO_FAULT);
	CHECK(cf_ref_accessible(&c) == 100, "clear has no source");
	c = mkcase(CF_KIND_COPY, 0, 0, 0, 0);
	CHECK(cf_ref_accessible(&c) == 0, "n = 0");
	c = mkcase(CF_KIND_MEMSET, 0, 100, 5, CF_NO_FAULT);
	CHECK(cf_ref_accessible(&c) == 100, "memset has no source");
	/* memmove: src = dst - disp in dst's mapping */
	c = mkcase(CF_KIND_MEMMOVE, 0, 100, CF_NO_FAULT, 120);
	c.disp = -30; /* src 30 bytes above dst: 90 bytes before the guard */
	CHECK(cf_ref_accessible(&c) == 90, "memmove: src nearer the guard: %lu",
	      (unsigned long)cf_ref_accessible(&c));
	c.disp = 30; /* src below dst: dst is nearer */
	CHECK(cf_ref_accessible(&c) == 100, "memmove: dst nearer the guard");
	c.disp = -200;
	CHECK(cf_ref_accessible(&c) == 0, "memmove: src past the guard");
	c.dst_fault = CF_NO_FAULT;
	CHECK(cf_ref_accessible(&c) == 100, "memmove without a guard");
}

static void test_exact_is_clean(void)
{
	static struct sim s;
	uint16_t kinds[] = {CF_KIND_COPY, CF_KIND_CLEAR, CF_KIND_MEMCPY};
	for (int k = 0; k < 3; k++)
		for (uint64_t n = 0; n <= 130; n += 13)
			for (uint64_t sf = 0; sf <= n + 20; sf += 7)
				for (uint64_t df = 0; df <= n + 20; df += 11) {
					uint64_t f1 = kinds[k] == CF_KIND_MEMCPY ? CF_NO_FAULT : sf;
					uint64_t f2 = kinds[k] == CF_KIND_MEMCPY ? CF_NO_FAULT : df;
					sim_exact(&s,
						  mkcase(kinds[k], CF_PROFILE_EXACT, n, f1, f2));
					uint32_t cls = run(&s);
					CHECK(cls == 0, "kind %d n %lu sf %lu df %lu: classes %#x",
					      k, (unsigned long)n, (unsigned long)sf,
					      (unsigned long)df, cls);
				}
}

static void test_each_class(void)
{
	static struct sim s;
	/* n = 50, src faults at 20: A = 20, exact N = 30 */
	struct cf_case c = mkcase(CF_KIND_COPY, CF_PROFILE_EXACT, 50, 20, CF_NO_FAULT);

	sim_exact(&s, c);
	s.o.ret = 51;
	CHECK(run(&s) & CF_BAD_RETURN, "N > n");

	sim_exact(&s, c);
	s.o.ret = 29; /* claims 21 > A */
	CHECK(run(&s) == CF_OVER_REPORT, "over-report alone: %#x", s.r.classes);

	sim_exact(&s, c);
	s.o.ret = 50; /* claims nothing, but 20 bytes were stored */
	uint32_t cls = run(&s);
	CHECK((cls & CF_NO_PROGRESS) && (cls & CF_STORE_BEYOND_REPORTED) && (cls & CF_IMPRECISE),
	      "full size after a partial copy: %#x", cls);
	CHECK(s.r.diff_off == 0 && s.r.diff_count == 20, "the stored prefix is the diff: %ld %u",
	      (long)s.r.diff_off, s.r.diff_count);

	sim_exact(&s, c);
	s.dst[W + 5] ^= 0xff;
	cls = run(&s);
	CHECK(cls == CF_WRONG_DATA && s.r.diff_off == 5 && s.r.diff_count == 1, "wrong-data: %#x",
	      cls);

	sim_exact(&s, c);
	s.dst[W + 35] ^= 1;
	CHECK(run(&s) == CF_STORE_BEYOND_REPORTED, "a store past C but below n");

	sim_exact(&s, c);
	s.dst[W + 50] ^= 1;
	CHECK(run(&s) == CF_STORE_OUT_OF_BOUNDS && s.r.diff_off == 50, "a store at dst+n");

	sim_exact(&s, c);
	s.dst[W - 1] ^= 1;
	CHECK(run(&s) == CF_STORE_OUT_OF_BOUNDS && s.r.diff_off == -1, "a store at dst-1");

	/* imprecise: copied 8 of 20 and said so */
	sim_exact(&s, c);
	for (int i = 8; i < 20; i++)
		s.dst[W + i] = s.before[W + i];
	s.o.ret = 42;
	cls = run(&s);
	CHECK(cls == CF_IMPRECISE, "imprecise alone: %#x", cls);
	CHECK(s.r.errors == CF_IMPRECISE, "an error under exact");
	s.c.profile = CF_PROFILE_LINUX;
	run(&s);
	CHECK(s.r.errors == 0, "allowed under linux");

	/* spurious-fault: nothing faults but N != 0 */
	sim_exact(&s, mkcase(CF_KIND_COPY, CF_PROFILE_LINUX, 50, CF_NO_FAULT, CF_NO_FAULT));
	for (int i = 48; i < 50; i++)
		s.dst[W + i] = s.before[W + i];
	s.o.ret = 2;
	cls = run(&s);
	CHECK((cls & CF_SPURIOUS_FAULT) && (s.r.errors & CF_SPURIOUS_FAULT), "spurious: %#x", cls);

	/* outcomes and registers */
	sim_exact(&s, c);
	s.o.outcome = CF_OUT_UNHANDLED_FAULT;
	CHECK(run(&s) == CF_UNHANDLED_FAULT, "unhandled");
	s.o.outcome = CF_OUT_HUNG;
	CHECK(run(&s) == CF_HANG, "hang");
	s.o.outcome = CF_OUT_CRASHED;
	CHECK(run(&s) == CF_CRASH, "crash");
	sim_exact(&s, c);
	s.o.regs_bad = 1u << 3;
	s.o.reg_got = 42;
	CHECK(run(&s) == CF_REGISTER_CLOBBER && s.r.reg_got == 42, "register-clobber");

	/* memcpy must return dst */
	sim_exact(&s, mkcase(CF_KIND_MEMCPY, CF_PROFILE_EXACT, 10, CF_NO_FAULT, CF_NO_FAULT));
	s.o.ret = 0;
	CHECK(run(&s) == CF_BAD_RETURN, "memcpy returning 0");

	/* memset and memmove return dst too */
	sim_exact(&s, mkcase(CF_KIND_MEMSET, CF_PROFILE_EXACT, 10, CF_NO_FAULT, CF_NO_FAULT));
	s.o.ret = 10;
	CHECK(run(&s) == CF_BAD_RETURN, "memset returning n");
	sim_exact(&s, mkcase(CF_KIND_MEMMOVE, CF_PROFILE_EXACT, 10, CF_NO_FAULT, CF_NO_FAULT));
	s.o.ret = 0;
	CHECK(run(&s) == CF_BAD_RETURN, "memmove returning 0");

	/* clear: dst[0, C) must be zero */
	sim_exact(&s, mkcase(CF_KIND_CLEAR, CF_PROFILE_EXACT, 30, CF_NO_FAULT, 16));
	CHECK(run(&s) == 0 && s.dst[W + 3] == 0, "clear exact");
	s.dst[W + 3] = 7;
	CHECK(run(&s) == CF_WRONG_DATA, "clear leaving a byte");
	s.dst[W + 3] = 0;
	s.o.ret = 0; /* says all cleared, but dst faults at 16 */
	CHECK(run(&s) == CF_OVER_REPORT, "clear over-report: %#x", s.r.classes);
}

/* memset: every byte of [dst, dst + n) is the low byte of the int, nothing else. */
static void test_memset(void)
{
	static struct sim s;
	uint32_t fills[] = {0, 0xff, 0xa5, 0x1234565a, 0xffffff81};
	for (int k = 0; k < 5; k++) {
		struct cf_case c = mkcase(CF_KIND_MEMSET, CF_PROFILE_EXACT, 37, CF_NO_FAULT, 40);
		c.fill = fills[k];
		sim_exact(&s, c);
		CHECK(run(&s) == 0, "memset fill %#x exact", fills[k]);
		CHECK(s.dst[W] == (uint8_t)fills[k] && s.dst[W + 36] == (uint8_t)fills[k] &&
			      s.dst[W + 37] == s.before[W + 37],
		      "the low byte, n times");
		/* a memset that stored the int's second byte instead */
		s.dst[W + 20] = (uint8_t)(fills[k] >> 8) ^ (fills[k] == 0 ? 1 : 0);
		uint32_t cls = run(&s);
		CHECK(cls == CF_WRONG_DATA && s.r.diff_off == 20, "memset wrong byte %#x: %#x",
		      fills[k], cls);
		/* one byte too many */
		sim_exact(&s, c);
		s.dst[W + 37] = (uint8_t)fills[k] ^ 0x5a;
		CHECK(run(&s) == CF_STORE_OUT_OF_BOUNDS && s.r.diff_off == 37, "memset past n");
		sim_exact(&s, c);
		s.dst[W - 1] ^= 1;
		CHECK(run(&s) == CF_STORE_OUT_OF_BOUNDS, "memset before dst");
	}
}

/*
 * memmove in one buffer: the expectation is the source as it was, the window covers
 * both buffers, and a forward-only copy is wrong exactly when dst overlaps src from
 * above.
 */
static void test_memmove(void)
{
	enum { N = 40, SLACK = 56, SPAN = N + 2 * SLACK + 2 * W };
	static uint8_t image[SPAN], mem[SPAN];
	static struct cf_observed o;
	static struct cf_result r;
	for (int i = 0; i < SPAN; i++)
		image[i] = (uint8_t)(i * 73 + 5);
	for (int disp = -(N + 16); disp <= N + 16; disp++) {
		for (int forward_only = 0; forward_only < 2; forward_only++) {
			struct cf_case c = mkcase(CF_KIND_MEMMOVE, CF_PROFILE_EXACT, N, CF_NO_FAULT,
						  CF_NO_FAULT);
			c.disp = disp;
			CHECK(cf_case_check(&c) == CF_CASE_OK, "disp %d is in range", disp);
			memcpy(mem, image, SPAN);
			uint8_t *dst = mem + W + (disp > 0 ? disp : 0);
			uint8_t *src = dst - disp;
			const uint8_t *before = image + (dst - mem);
			if (forward_only)
				for (int i = 0; i < N; i++)
					dst[i] = src[i];
			else
				memmove(dst, src, N);
			memset(&o, 0, sizeof(o));
			o.outcome = CF_OUT_RETURNED;
			o.ret = (uint64_t)(uintptr_t)dst;
			o.dst = dst;
			o.before = before;
			o.src = image + (src - mem);
			o.lo = -(disp > 0 ? disp : 0) - W;
			o.hi = (int64_t)cf_memmove_top(N, disp) + W;
			CHECK(dst + o.lo >= mem && dst + o.hi <= mem + SPAN,
			      "window in the buffer");
			memset(&r, 0, sizeof(r));
			cf_oracle(&c, &o, &r);
			int overlap_up = disp > 0 && disp < N;
			uint32_t want = forward_only && overlap_up ? CF_WRONG_DATA : 0;
			CHECK(r.classes == want, "disp %d forward_only %d: classes %#x", disp,
			      forward_only, r.classes);
			if (want)
				CHECK(r.diff_off == disp, "the first byte copied twice: %ld",
				      (long)r.diff_off);
			/* a store into the source where it is not the destination */
			if (disp >= N || disp <= -N) {
				src[0] ^= 1;
				memset(&r, 0, sizeof(r));
				cf_oracle(&c, &o, &r);
				CHECK(r.classes & CF_STORE_OUT_OF_BOUNDS, "disp %d: src changed",
				      disp);
			}
		}
	}
}

static void test_names(void)
{
	CHECK(strcmp(cf_class_name(CF_BAD_RETURN), "bad-return") == 0, "name");
	CHECK(strcmp(cf_class_name(CF_CRASH), "crash") == 0, "name");
	CHECK(cf_profile_errors(CF_PROFILE_LINUX) == (CF_ERRORS_EXACT & ~(uint32_t)CF_IMPRECISE),
	      "linux set");
}

static void test_sweep_enumeration(void)
{
	uint16_t kinds[] = {CF_KIND_COPY, CF_KIND_CLEAR, CF_KIND_MEMCPY, CF_KIND_MEMSET,
			    CF_KIND_MEMMOVE};
	for (int k = 0; k < 5; k++) {
		struct cf_sweep_cfg cfg = {.kind = kinds[k],
					   .szreg = 8,
					   .min_len = 0,
					   .max_len = 40,
					   .random_count = 500,
					   .random_seed = 7,
					   .random_max_len = 20000};
		uint64_t total = cf_sweep_total(&cfg), seen = 0, last = 0;
		struct cf_sweep_iter it;
		struct cf_case c;
		/* (n, misalignment, fault) triples a side reached, for n <= 40 */
		static uint8_t reached[41][16][57];
		/* memset: (n, misalignment, fill index); memmove: (n, misalignment, disp + 56) */
		static uint8_t variant[41][16][113];
		memset(reached, 0, sizeof(reached));
		memset(variant, 0, sizeof(variant));
		cf_sweep_begin(&it, &cfg, 0, 1);
		while (cf_sweep_next(&it, &c)) {
			CHECK(cf_case_check(&c) == CF_CASE_OK, "kind %d id %lu invalid: %d", k,
			      (unsigned long)c.id, cf_case_check(&c));
			CHECK(c.id == seen, "ids are dense and ordered");
			CHECK(c.n >= last || c.id >= total - cfg.random_count, "n ascending");
			last = c.n;
			if (c.id < total - cfg.random_count) {
				if (c.dst_fault != CF_NO_FAULT && c.dst_fault < 57)
					reached[c.n][c.dst_off % 16][c.dst_fault] = 1;
				if (kinds[k] == CF_KIND_MEMSET)
					for (uint32_t f = 0; f < 5; f++)
						if (c.fill == cf_memset_fill_at(f))
							variant[c.n][c.dst_off % 16][f] = 1;
				if (kinds[k] == CF_KIND_MEMMOVE) {
					CHECK(c.disp >= -(int64_t)c.n - 16 &&
						      c.disp <= (int64_t)c.n + 16,
					      "disp within n + 16");
					variant[c.n][c.dst_off % 16][c.disp + 56] = 1;
					CHECK(c.dst_fault == CF_NO_FAULT ||
						      c.dst_fault >= cf_memmove_top(c.n, c.disp),
					      "memmove: the guard is past both buffers");
					CHECK(c.src_fault == CF_NO_FAULT && c.src_off == 0,
					      "memmove: no source side of its own");
				}
				if (kinds[k] == CF_KIND_MEMSET)
					CHECK(c.src_fault == CF_NO_FAULT && c.src_off == 0,
					      "memset has no source side");
				if (cf_kind_returns_dst(kinds[k])) {
					CHECK(c.dst_fault == CF_NO_FAULT || c.dst_fault >= c.n,
					      "memcpy never faults inside");
					CHECK(c.src_fault == CF_NO_FAULT || c.src_fault >= c.n,
					      "memcpy never faults inside");
				}
				if (kinds[k] == CF_KIND_CLEAR)
					CHECK(c.src_fault == CF_NO_FAULT,
					      "clear has no source side");
			}
			seen++;
		}
		CHECK(seen == total, "kind %d: %lu cases, total says %lu", k, (unsigned long)seen,
		      (unsigned long)total);
		if (kinds[k] == CF_KIND_MEMSET || kinds[k] == CF_KIND_MEMMOVE) {
			/* every variant at every length and misalignment */
			for (uint64_t n = 0; n <= 40; n++)
				for (uint32_t m = 0; m < 16; m++) {
					uint32_t lo =
						kinds[k] == CF_KIND_MEMSET ? 0 : (uint32_t)(40 - n);
					uint32_t hi =
						kinds[k] == CF_KIND_MEMSET ? 5 : (uint32_t)(72 + n);
					for (uint32_t v = 0; v < 113; v++)
						CHECK(variant[n][m][v] ==
							      (v >= lo &&
							       v <= hi - (kinds[k] ==
									  CF_KIND_MEMSET)),
						      "kind %d n %lu m %u variant %u", k,
						      (unsigned long)n, m, v);
				}
		}
		if (!cf_kind_returns_dst(kinds[k])) {
			/* every page-granular (misalignment, position) pair below n + 16 */
			for (uint64_t n = 0; n <= 40; n++)
				for (uint32_t m = 0; m < 16; m++)
					for (uint64_t f = 0; f < n + 16; f++)
						if (f == 0 || (m + f) % 16 == 0)
							CHECK(reached[n][m][f],
							      "kind %d n %lu m %u f %lu not "
							      "reached",
							      k, (unsigned long)n, m,
							      (unsigned long)f);
		}
		/* shards partition the ids */
		uint64_t sum = 0;
		for (uint64_t sh = 0; sh < 3; sh++) {
			uint64_t cnt = 0;
			cf_sweep_begin(&it, &cfg, sh, 3);
			while (cf_sweep_next(&it, &c)) {
				CHECK(c.id % 3 == sh, "shard %lu got id %lu", (unsigned long)sh,
				      (unsigned long)c.id);
				cnt++;
			}
			CHECK(cnt == cf_sweep_shard_total(&cfg, sh, 3), "shard total");
			sum += cnt;
		}
		CHECK(sum == total, "shards cover the sweep");
		/* A shard resumed at any id runs exactly the rest of its cases, and
		 * cf_sweep_case_at names each id's case. */
		for (uint64_t start = 0; start <= total + 2; start += total / 7 + 1) {
			for (uint64_t sh = 0; sh < 3; sh++) {
				uint64_t cnt = 0, first = UINT64_MAX;
				cf_sweep_begin(&it, &cfg, sh, 3);
				cf_sweep_seek(&it, start);
				while (cf_sweep_next(&it, &c)) {
					struct cf_case alone;
					if (first == UINT64_MAX)
						first = c.id;
					CHECK(c.id >= start && c.id % 3 == sh,
					      "resumed shard's ids");
					if (c.id % 101 == 0 || c.id == first)
						CHECK(cf_sweep_case_at(&cfg, c.id, &alone) &&
							      memcmp(&alone, &c, sizeof(c)) == 0,
						      "case_at %lu", (unsigned long)c.id);
					cnt++;
				}
				CHECK(cnt == cf_sweep_count(&cfg, sh, 3, start, UINT64_MAX),
				      "kind %d start %lu shard %lu: "
				      "%lu cases, count says %lu",
				      k, (unsigned long)start, (unsigned long)sh,
				      (unsigned long)cnt,
				      (unsigned long)cf_sweep_count(&cfg, sh, 3, start,
								    UINT64_MAX));
				CHECK(first == UINT64_MAX || first < start + 3,
				      "resumes at the next id of its shard");
			}
		}
		CHECK(!cf_sweep_case_at(&cfg, total, &c), "no case past the end");
		CHECK(cf_sweep_count(&cfg, 1, 3, 10, 20) == 4, "ids 10, 13, 16, 19");
	}
}

static void test_case_check(void)
{
	struct cf_case c = mkcase(CF_KIND_COPY, 0, 10, 100, CF_NO_FAULT);
	CHECK(cf_case_check(&c) == CF_CASE_OK, "derived offset");
	c.src_off = 5;
	CHECK(cf_case_check(&c) == CF_CASE_SRC_UNREACHABLE, "no page boundary lands there");
	c = mkcase(CF_KIND_COPY, 0, CF_MAX_LEN + 1, CF_NO_FAULT, CF_NO_FAULT);
	CHECK(cf_case_check(&c) == CF_CASE_TOO_LONG, "too long");
	c = mkcase(CF_KIND_COPY, 0, 1, CF_NO_FAULT, 0);
	c.dst_off = 4095;
	CHECK(cf_case_check(&c) == CF_CASE_OK, "fault 0 at any offset");
	c.dst_off = 4096;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_OFFSET, "offset past a page");
	c = mkcase(7, 0, 1, CF_NO_FAULT, CF_NO_FAULT);
	CHECK(cf_case_check(&c) == CF_CASE_BAD_KIND, "kind");
	c = mkcase(CF_KIND_COPY, 0, 1, CF_NO_FAULT, CF_NO_FAULT);
	c.magic = 0;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_MAGIC, "magic");
	c = mkcase(CF_KIND_COPY, 0, 1, CF_NO_FAULT, CF_NO_FAULT);
	c.fill = 1;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_FILL, "fill is memset's");
	c.kind = CF_KIND_MEMSET;
	CHECK(cf_case_check(&c) == CF_CASE_OK, "memset fill");
	c.disp = 1;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_FILL || cf_case_check(&c) == CF_CASE_BAD_DISP,
	      "disp is memmove's");
	c = mkcase(CF_KIND_MEMMOVE, 0, 10, CF_NO_FAULT, CF_NO_FAULT);
	c.disp = -26;
	CHECK(cf_case_check(&c) == CF_CASE_OK, "memmove at -(n + 16)");
	c.disp = 27;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_DISP, "memmove past n + 16");
	c = mkcase(CF_KIND_MEMMOVE, 0, CF_MAX_LEN - 10, CF_NO_FAULT, CF_NO_FAULT);
	c.disp = 10;
	CHECK(cf_case_check(&c) == CF_CASE_OK, "n + |disp| = CF_MAX_LEN");
	c.disp = -11;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_DISP, "n + |disp| past CF_MAX_LEN");
	c = mkcase(CF_KIND_MEMMOVE, 0, 100, CF_NO_FAULT, CF_MAX_FAULT);
	c.disp = 1;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_DISP, "src further below the guard than a fault");
	c.disp = -1;
	CHECK(cf_case_check(&c) == CF_CASE_OK, "src nearer the guard");
}

/* Bytes readable from p before the arena's high guard (0 if p is in it). */
static uint64_t readable(const struct cf_arena *a, const uint8_t *p)
{
	return p < a->acc_end ? (uint64_t)(a->acc_end - p) : 0;
}

static void test_arena(void)
{
	struct cf_arena a;
	CHECK(cf_arena_init(&a, 1, 0, NULL) == 0, "arena maps");
	uint8_t *p = a.acc + cf_place_index(0, 4000, 0);
	CHECK(readable(&a, p) == 4000 && ((uintptr_t)p % CF_PAGE_SIZE) == 96, "fault after 4000");
	CHECK(p[3999] == p[3999], "the last accessible byte reads");
	p = a.acc + cf_place_index(77, 0, 0);
	CHECK(readable(&a, p) == 0 && (uintptr_t)p % CF_PAGE_SIZE == 77, "in the guard");
	p = a.acc + cf_place_index(5, CF_NO_FAULT, 0);
	CHECK((uintptr_t)p % CF_PAGE_SIZE == 5 && readable(&a, p) >= CF_MAX_LEN + CF_CANARY_LEN,
	      "clear of guards");
	CHECK(p - a.acc >= (long)CF_CANARY_LEN, "room for canaries before");
	p = a.acc + cf_place_index(0, CF_MAX_LEN + CF_PAGE_SIZE, 0);
	CHECK(p - a.acc >= (long)CF_CANARY_LEN, "the longest fault still has canaries before");
	cf_arena_fini(&a);

	/* The source byte a case sees, computed from the case alone, is what the arena holds. */
	CHECK(cf_arena_init(&a, CF_SRC_SEED, 0, NULL) == 0, "source arena maps");
	struct cf_case c = {.magic = CF_CASE_MAGIC, .kind = CF_KIND_COPY, .n = 64, .src_off = 13};
	c.src_fault = CF_NO_FAULT;
	p = a.acc + cf_place_index(c.src_off, c.src_fault, 0);
	CHECK(cf_arena_fill(&a, p - a.acc, p - a.acc + 64) == 0, "filled as the executor fills");
	int same = 1;
	for (int64_t i = 0; i < 64; i++)
		same &= cf_case_src_byte(&c, i) == p[i];
	CHECK(same && cf_case_src_byte(&c, -1) == -1, "source bytes clear of the guards");
	c.src_off = 4000, c.src_fault = 96;
	p = a.acc + cf_place_index(c.src_off, c.src_fault, 0);
	CHECK(cf_arena_fill(&a, p - a.acc, p - a.acc + 96) == 0, "the high part filled");
	same = 1;
	for (int64_t i = 0; i < 96; i++)
		same &= cf_case_src_byte(&c, i) == p[i];
	CHECK(same && cf_case_src_byte(&c, 96) == -1, "source bytes up to the fault, none past it");
	c.src_fault = 0;
	CHECK(cf_case_src_byte(&c, 0) == -1, "no source byte in the guard");
	c.kind = CF_KIND_CLEAR, c.src_fault = CF_NO_FAULT;
	CHECK(cf_case_src_byte(&c, 0) == -1, "clear has no source");
	cf_arena_fini(&a);
}

/* The executor fills its windows as cases need them: what a case asks for holds the
 * pattern (and its image too), what was filled before stays as it is, and the rest of
 * the window is not touched. */
/* Where a case's buffers sit and the window the oracles compare (place.h), which the
 * fuzz driver computes without the executor; and the fill from any byte of the stream. */
static void test_case_place(void)
{
	uint8_t buf[40];
	int same = 1;
	for (uint64_t from = 0; from < 17; from++)
		for (size_t at = 0; at < 8; at++) {
			cf_fill_pattern(buf + at, from, 25, 3);
			for (size_t i = 0; i < 25; i++)
				same &= buf[at + i] == cf_pattern_byte(3, from + i);
		}
	CHECK(same, "the fill from any stream byte into any alignment");

	const int64_t win = CF_ARENA_WINDOW, can = CF_CANARY_LEN, page = CF_PAGE_SIZE;
	struct cf_case c = {.kind = CF_KIND_COPY,
			    .n = 100,
			    .src_off = 3,
			    .src_fault = CF_NO_FAULT,
			    .dst_off = 5,
			    .dst_fault = CF_NO_FAULT};
	struct cf_case_place p = cf_case_place(&c);
	CHECK(p.dst == page + 5 && p.src == page + 3 && p.src_arena == CF_PLACE_SRC_ARENA &&
		      p.lo == -can && p.hi == 100 + can,
	      "copy clear of the guards: canaries each side");
	c.dst_fault = 40;
	p = cf_case_place(&c);
	CHECK(p.dst == win - 40 && p.lo == -can && p.hi == 40,
	      "dst faulting at 40: the window ends at the guard");
	c.dst_fault = 0;
	p = cf_case_place(&c);
	CHECK(p.dst > win && p.lo == 0 && p.hi == 0, "dst in the guard: nothing to compare");
	c.kind = CF_KIND_CLEAR;
	c.dst_fault = CF_NO_FAULT;
	p = cf_case_place(&c);
	CHECK(p.src_arena == CF_PLACE_NONE && p.src == 0, "clear: no source");

	c = (struct cf_case){.kind = CF_KIND_MEMMOVE,
			     .n = 50,
			     .dst_off = 10,
			     .dst_fault = CF_NO_FAULT,
			     .src_fault = CF_NO_FAULT,
			     .disp = 20};
	p = cf_case_place(&c);
	CHECK(p.src_arena == CF_PLACE_DST_ARENA && p.src == page + (10 - 20 + page) % page &&
		      p.dst == p.src + 20 && p.lo == -20 - can && p.hi == 50 + can,
	      "memmove upwards: the lower buffer a page in, the window from below it");
	c.disp = -30;
	c.dst_fault = 60;
	p = cf_case_place(&c);
	CHECK(p.dst == win - 60 && p.src == p.dst + 30 && p.lo == -can && p.hi == 60,
	      "memmove downwards to a fault: src above dst, the guard bounds the window");
}

/* Every valid case's buffers and compared window inside the arena's window (arena.h's
 * picture): random cases of every kind, page and granule faults, cf_case_check's say. */
static void test_case_place_bounds(void)
{
	uint64_t x = 88172645463325252ull, tried = 0, bad = 0;
	const int64_t win = CF_ARENA_WINDOW;
	for (int i = 0; i < 400000; i++) {
		uint64_t r[8];
		for (int k = 0; k < 8; k++) { /* xorshift64 */
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			r[k] = x;
		}
		struct cf_case c = {.magic = CF_CASE_MAGIC,
				    .kind = (uint16_t)(r[0] % CF_NUM_KINDS)};
		c.granule = r[0] >> 8 & 1 ? CF_GRANULE_MTE : 0;
		c.n = r[1] % (r[1] >> 20 & 1 ? CF_MAX_LEN + 1 : 300);
		c.src_off = (uint32_t)(r[2] % CF_PAGE_SIZE);
		c.dst_off = (uint32_t)(r[3] % CF_PAGE_SIZE);
		uint64_t unit = c.granule ? c.granule : CF_PAGE_SIZE;
		uint64_t fs[2] = {r[4], r[5]};
		uint64_t *faults[2] = {&c.src_fault, &c.dst_fault};
		uint32_t offs[2] = {c.src_off, c.dst_off};
		for (int k = 0; k < 2; k++) /* none, or the first inaccessible byte on a boundary */
			*faults[k] = fs[k] % 3 == 0 ? CF_NO_FAULT
						    : unit * (1 + (fs[k] >> 4) % (c.n / unit + 2)) -
							      offs[k] % unit;
		if (c.kind == CF_KIND_MEMMOVE) {
			uint64_t most = cf_memmove_max_disp(c.n);
			c.disp = (int32_t)(r[6] % (2 * most + 1)) - (int32_t)most;
		}
		if (cf_case_check(&c) != CF_CASE_OK)
			continue;
		tried++;
		struct cf_case_place p = cf_case_place(&c);
		int64_t a = (int64_t)cf_ref_accessible(&c);
		int ok = p.hi - p.lo <= (int64_t)(CF_MAX_LEN + 2 * CF_CANARY_LEN);
		if (p.dst <= win)
			ok &= p.dst + p.lo >= 0 && p.dst + p.hi <= win;
		if (p.src_arena != CF_PLACE_NONE)
			ok &= a == 0 || (p.src >= 0 && p.src + a <= win); /* A = 0: never read */
		if (!ok && bad++ < 3)
			fprintf(stderr,
				"kind %u n %llu disp %d dst_off %u dst_fault %llu granule %u\n",
				c.kind, (unsigned long long)c.n, c.disp, c.dst_off,
				(unsigned long long)c.dst_fault, c.granule);
	}
	CHECK(tried > 50000 && bad == 0, "every valid case placed inside the window");
}

static void test_arena_fill(void)
{
	static uint8_t image[CF_ARENA_WINDOW];
	struct cf_arena a;
	CHECK(cf_arena_init(&a, 7, 0, image) == 0, "arena maps");
	const uint64_t w = CF_ARENA_WINDOW, page = CF_PAGE_SIZE;
	CHECK(cf_arena_fill(&a, 5000, 5100) == 0 && a.filled_lo == 3 * page && a.filled_hi == w,
	      "the low part: the pages of [5000, 5100) and one more each side");
	int same = 1;
	for (uint64_t i = 0; i < a.filled_lo; i++)
		same &= a.acc[i] == cf_pattern_byte(7, i) && image[i] == a.acc[i];
	CHECK(same && a.acc[a.filled_lo] == 0 && a.acc[w / 2] == 0 && a.acc[w - 1] == 0,
	      "filled: the pattern and its image; the rest untouched");
	a.acc[100] ^= 0xff; /* as a routine's store the executor has not put back */
	CHECK(cf_arena_fill(&a, 9 * page + 1, 9 * page + 2) == 0 && a.filled_lo == 11 * page,
	      "the low part grows");
	CHECK(a.acc[100] == (uint8_t)(cf_pattern_byte(7, 100) ^ 0xff) &&
		      a.acc[10 * page] == cf_pattern_byte(7, 10 * page),
	      "only what was not filled is filled");
	CHECK(cf_arena_fill(&a, w - 96, w) == 0 && a.filled_hi == w - 2 * page,
	      "the high part: from a page under the buffer's to the window's end");
	same = 1;
	for (uint64_t i = a.filled_hi; i < w; i++)
		same &= a.acc[i] == cf_pattern_byte(7, i) && image[i] == a.acc[i];
	CHECK(same && a.acc[a.filled_hi - 1] == 0, "the high part holds the pattern");
	CHECK(cf_arena_fill(&a, w + 10, w + 20) == 0 && cf_arena_fill(&a, 0, 0) == 0 &&
		      a.filled_lo == 11 * page && a.filled_hi == w - 2 * page,
	      "a range in the guard (its page below already filled), or empty: nothing more");
	CHECK(cf_arena_seal(&a) == 0 && cf_arena_fill(&a, 0, (int64_t)w) == 0,
	      "sealed, filled whole");
	same = 1;
	for (uint64_t i = 11 * page; i < w - 2 * page; i += 509)
		same &= a.acc[i] == cf_pattern_byte(7, i) && image[i] == a.acc[i];
	CHECK(same, "between the parts too, the source made writable for the moment");
	cf_arena_fini(&a);
}

static void test_extable(void)
{
	/* relative entries: offsets from each field to two "instructions" */
	static uint8_t code[64];
	static struct { /* static, like code[]: relative offsets are 32-bit */
		int32_t insn, fixup;
		int16_t type, data;
	} rel[2];
	rel[0].insn = (int32_t)((intptr_t)&code[8] - (intptr_t)&rel[0].insn);
	rel[0].fixup = (int32_t)((intptr_t)&code[40] - (intptr_t)&rel[0].fixup);
	rel[1].insn = (int32_t)((intptr_t)&code[12] - (intptr_t)&rel[1].insn);
	rel[1].fixup = (int32_t)((intptr_t)&code[44] - (intptr_t)&rel[1].fixup);
	struct cf_extable t = {CF_EXTABLE_REL, (const uint8_t *)rel, (const uint8_t *)(rel + 2)};
	CHECK(cf_extable_entries(&t) == 2, "rel entries");
	CHECK(cf_extable_lookup(&t, (uintptr_t)&code[12], NULL) == (uintptr_t)&code[44],
	      "rel lookup");
	CHECK(cf_extable_lookup(&t, (uintptr_t)&code[10], NULL) == 0, "rel miss");
	uintptr_t abs[4] = {(uintptr_t)&code[4], (uintptr_t)&code[32], (uintptr_t)&code[16],
			    (uintptr_t)&code[48]};
	struct cf_extable u = {CF_EXTABLE_ABS, (const uint8_t *)abs, (const uint8_t *)(abs + 4)};
	CHECK(cf_extable_entries(&u) == 2, "abs entries");
	size_t idx = 99;
	CHECK(cf_extable_lookup(&u, (uintptr_t)&code[16], &idx) == (uintptr_t)&code[48] && idx == 1,
	      "abs lookup");
	struct cf_extable none = {CF_EXTABLE_NONE, 0, 0};
	CHECK(cf_extable_lookup(&none, (uintptr_t)&code[16], NULL) == 0, "no table");
}

/* MTE granules (--granule 16): fault boundaries at 16-byte granules anywhere in a page. */
static void test_granules(void)
{
	CHECK(cf_fault_reachable(9, 7, CF_GRANULE_MTE) && !cf_fault_reachable(9, 7, 0),
	      "9 + 7 is a granule boundary, not a page boundary");
	CHECK(!cf_fault_reachable(9, 8, CF_GRANULE_MTE), "9 + 8 is no granule boundary");
	struct cf_case c = {.magic = CF_CASE_MAGIC, .kind = CF_KIND_COPY_FROM_USER, .n = 16};
	c.src_off = 9, c.src_fault = 7, c.dst_fault = CF_NO_FAULT;
	CHECK(cf_case_check(&c) == CF_CASE_SRC_UNREACHABLE, "a granule fault needs granule 16");
	c.granule = CF_GRANULE_MTE;
	CHECK(cf_case_check(&c) == CF_CASE_OK, "granule 16 makes it reachable");
	c.granule = 8;
	CHECK(cf_case_check(&c) == CF_CASE_BAD_GRANULE, "only 0 and 16");

	/* Every case of a granule sweep is valid, its sides at their misalignment in the page
	 * (a boundary inside it), with the same cases as the page sweep but for offsets. */
	struct cf_sweep_cfg page = {.kind = CF_KIND_COPY, .szreg = 8, .max_len = 48};
	struct cf_sweep_cfg gran = page;
	gran.granule = CF_GRANULE_MTE;
	CHECK(cf_sweep_total(&page) == cf_sweep_total(&gran), "the same number of cases");
	struct cf_sweep_iter it;
	struct cf_case g;
	int ok = 1, mid_page = 0;
	cf_sweep_begin(&it, &gran, 0, 1);
	while (cf_sweep_next(&it, &g)) {
		ok &= cf_case_check(&g) == CF_CASE_OK && g.granule == CF_GRANULE_MTE &&
		      g.src_off < 16 && g.dst_off < 16;
		mid_page += g.src_fault != CF_NO_FAULT && g.src_fault > 0;
	}
	CHECK(ok && mid_page > 0, "granule cases valid, boundaries inside the page");

	/* Placement: a page clear of the low guard at the page offset; the source bytes past the
	 * boundary are the routine's to miss (tagged), not to read. */
	struct cf_arena a;
	CHECK(cf_arena_init(&a, CF_SRC_SEED, 0, NULL) == 0, "arena maps");
	uint8_t *p = a.acc + cf_place_index(9, 7, CF_GRANULE_MTE);
	CHECK(cf_arena_fill(&a, p - a.acc, p - a.acc + 16) == 0, "granule case filled");
	CHECK(p == a.acc + CF_PAGE_SIZE + 9, "granule placement");
	c.kind = CF_KIND_COPY, c.src_off = 9, c.src_fault = 7;
	CHECK(cf_case_src_byte(&c, 6) == p[6] && cf_case_src_byte(&c, 7) == -1,
	      "source bytes to the granule");
	cf_arena_fini(&a);
}

int main(void)
{
	test_accessible();
	test_exact_is_clean();
	test_each_class();
	test_memset();
	test_memmove();
	test_names();
	test_sweep_enumeration();
	test_case_check();
	test_arena();
	test_arena_fill();
	test_case_place();
	test_case_place_bounds();
	test_granules();
	test_extable();
	printf("test_ref: %d passed, %d failed\n", checks - failures, failures);
	return failures ? 1 : 0;
}
