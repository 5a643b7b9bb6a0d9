/* SPDX-License-Identifier: MIT */
#include "ref.h"

#include <stdbool.h>
#include <stddef.h>

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t cf_ref_accessible(const struct cf_case *c)
{
	uint64_t a = c->n;
	if (cf_kind_has_src(c->kind) && c->src_fault != CF_NO_FAULT)
		a = min_u64(a, c->src_fault);
	if (c->dst_fault != CF_NO_FAULT)
		a = min_u64(a, c->dst_fault);
	/* memmove: src = dst - disp in the same mapping, so with disp < 0 it is -disp
	 * bytes nearer to the guard than dst (disp > 0: further, dst decides). */
	if (c->kind == CF_KIND_MEMMOVE && c->dst_fault != CF_NO_FAULT && c->disp < 0) {
		uint64_t up = (uint64_t)(-(int64_t)c->disp);
		a = c->dst_fault > up ? min_u64(a, c->dst_fault - up) : 0;
	}
	return a;
}

/* What byte i of the destination must become: clear stores zero, memset the low byte of
 * its int argument, the others the source byte (memmove: as it was before the call). */
static uint8_t source_byte(const struct cf_case *c, const uint8_t *src, int64_t i)
{
	if (c->kind == CF_KIND_CLEAR)
		return 0;
	if (c->kind == CF_KIND_MEMSET)
		return (uint8_t)c->fill;
	return src[i];
}

void cf_ref_expect(const struct cf_case *c, const uint8_t *src, const uint8_t *before, int64_t lo,
		   int64_t hi, uint8_t *out)
{
	int64_t a = (int64_t)cf_ref_accessible(c);
	for (int64_t i = lo; i < hi; i++)
		out[i - lo] = (i >= 0 && i < a) ? source_byte(c, src, i) : before[i];
}

uint32_t cf_profile_errors(uint16_t profile)
{
	return profile == CF_PROFILE_EXACT ? CF_ERRORS_EXACT : CF_ERRORS_LINUX;
}

const char *cf_class_name(uint32_t class_bit)
{
#define CF_X_NAME(e, b, s, about) \
	if (class_bit == (e))     \
		return s;
	CF_CLASSES(CF_X_NAME)
#undef CF_X_NAME
	return "?";
}

/* The first difference seen anywhere, and how many bytes differ in all. */
struct diff {
	bool any;
	int64_t off;
	uint8_t want, got;
	uint32_t count;
};

/*
 * Compare dst[from, to) with an expectation (the source, zero, or what was
 * there before). Returns true when they differ. Ranges are checked in
 * address order, so the first recorded difference is the lowest one.
 */
enum expect { EXPECT_SOURCE, EXPECT_BEFORE };

static bool check(const struct cf_case *c, const struct cf_observed *o, int64_t from, int64_t to,
		  enum expect e, struct diff *d)
{
	/* Nearly every range matches: one memcmp of it first, far cheaper per byte than the
	 * loop below (natively under ASan, one check of the range instead of one per byte).
	 * The builtin needs no libc header: this file is also built freestanding (RV32 and
	 * RV64 executors, whose memcmp is harness/libc.c's). */
	const uint8_t *want_at = o->before;
	if (e == EXPECT_SOURCE) /* clear and memset expect a constant: no range to compare */
		want_at = c->kind == CF_KIND_CLEAR || c->kind == CF_KIND_MEMSET ? NULL : o->src;
	if (to <= from ||
	    (want_at && !__builtin_memcmp(want_at + from, o->dst + from, (size_t)(to - from))))
		return false;
	bool bad = false;
	for (int64_t i = from; i < to; i++) {
		uint8_t want = e == EXPECT_SOURCE ? source_byte(c, o->src, i) : o->before[i];
		uint8_t got = o->dst[i];
		if (want == got)
			continue;
		bad = true;
		if (!d->any) {
			d->any = true;
			d->off = i;
			d->want = want;
			d->got = got;
		}
		d->count++;
	}
	return bad;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

void cf_oracle(const struct cf_case *c, const struct cf_observed *o, struct cf_result *r)
{
	uint64_t n = c->n;
	uint64_t a = cf_ref_accessible(c);
	uint32_t cls = 0;
	struct diff d = {0};

	r->ret = o->ret;
	r->accessible = a;
	r->claimed = 0;
	r->regs_bad = o->regs_bad;
	r->reg_got = o->regs_bad ? o->reg_got : 0;
	if (o->regs_bad)
		cls |= CF_REGISTER_CLOBBER;
	if (o->uaccess_left_on)
		cls |= CF_UACCESS_LEFT_ENABLED;

	switch (o->outcome) {
	case CF_OUT_UNHANDLED_FAULT:
		cls |= CF_UNHANDLED_FAULT;
		break;
	case CF_OUT_CRASHED:
		cls |= CF_CRASH;
		break;
	case CF_OUT_HUNG:
		cls |= CF_HANG;
		break;
	case CF_OUT_RETURNED:
		break;
	}

	/*
	 * What the routine claims: C = n - N. Only a routine that returned
	 * with a meaningful N makes a claim the data can be held to.
	 */
	bool claim = false;
	uint64_t claimed = 0;
	if (o->outcome == CF_OUT_RETURNED) {
		if (cf_kind_returns_dst(c->kind)) {
			if (o->ret != (uint64_t)(uintptr_t)o->dst)
				cls |= CF_BAD_RETURN;
			claim = true;
			claimed = n;
		} else if (o->ret > n) {
			cls |= CF_BAD_RETURN;
		} else {
			claim = true;
			claimed = n - o->ret;
			if (a == n && o->ret != 0)
				cls |= CF_SPURIOUS_FAULT;
			if (claimed > a)
				cls |= CF_OVER_REPORT;
			if (a > 0 && claimed == 0)
				cls |= CF_NO_PROGRESS;
			if (claimed < a)
				cls |= CF_IMPRECISE;
		}
	}
	r->claimed = claimed;

	/* Before dst: nothing may change. */
	int64_t lo = o->lo, hi = o->hi;
	if (check(c, o, lo, clamp(0, lo, hi), EXPECT_BEFORE, &d))
		cls |= CF_STORE_OUT_OF_BOUNDS;
	if (claim) {
		/* [0, min(C, A)) must be the source; past C nothing may change.
		 * [A, C) is claimed but could not have been copied: over-report
		 * already says so, the bytes there prove nothing more. */
		int64_t good = (int64_t)min_u64(claimed, a);
		if (check(c, o, 0, clamp(good, 0, hi), EXPECT_SOURCE, &d))
			cls |= CF_WRONG_DATA;
		if (check(c, o, clamp((int64_t)claimed, 0, hi), clamp((int64_t)n, 0, hi),
			  EXPECT_BEFORE, &d))
			cls |= CF_STORE_BEYOND_REPORTED;
	}
	/* Past the end: nothing may change. */
	if (check(c, o, clamp((int64_t)n, 0, hi), hi, EXPECT_BEFORE, &d))
		cls |= CF_STORE_OUT_OF_BOUNDS;

	r->classes = cls;
	r->errors = cls & cf_profile_errors(c->profile);
	r->diff_off = d.any ? d.off : 0;
	r->diff_count = d.count;
	r->diff_want = d.want;
	r->diff_got = d.got;
}
