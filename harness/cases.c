/* SPDX-License-Identifier: MIT */
#include "cases.h"

bool cf_fault_reachable(uint32_t off, uint64_t fault, uint32_t granule)
{
	return fault == CF_NO_FAULT || fault == 0 || (off + fault) % cf_fault_unit(granule) == 0;
}

static uint64_t abs_disp(int32_t disp)
{
	return disp < 0 ? (uint64_t)(-(int64_t)disp) : (uint64_t)disp;
}

enum cf_case_error cf_case_check(const struct cf_case *c)
{
	if (c->magic != CF_CASE_MAGIC)
		return CF_CASE_BAD_MAGIC;
	if (c->kind >= CF_NUM_KINDS)
		return CF_CASE_BAD_KIND;
	if (c->profile > CF_PROFILE_EXACT)
		return CF_CASE_BAD_PROFILE;
	if (c->granule != 0 && c->granule != CF_GRANULE_MTE)
		return CF_CASE_BAD_GRANULE;
	if (c->n > CF_MAX_LEN)
		return CF_CASE_TOO_LONG;
	if (c->src_off >= CF_PAGE_SIZE || c->dst_off >= CF_PAGE_SIZE)
		return CF_CASE_BAD_OFFSET;
	/* A fault far past the end is the same as none; keep positions bounded. */
	if (cf_kind_has_src(c->kind) &&
	    (!cf_fault_reachable(c->src_off, c->src_fault, c->granule) ||
	     (c->src_fault != CF_NO_FAULT && c->src_fault > CF_MAX_FAULT)))
		return CF_CASE_SRC_UNREACHABLE;
	if (!cf_fault_reachable(c->dst_off, c->dst_fault, c->granule) ||
	    (c->dst_fault != CF_NO_FAULT && c->dst_fault > CF_MAX_FAULT))
		return CF_CASE_DST_UNREACHABLE;
	if ((cf_kind_has_src(c->kind) && !cf_kind_src_faults(c->kind) &&
	     c->src_fault != CF_NO_FAULT) ||
	    (!cf_kind_dst_faults(c->kind) && c->dst_fault != CF_NO_FAULT))
		return CF_CASE_KERNEL_SIDE_FAULT;
	if (c->fill != 0 && c->kind != CF_KIND_MEMSET)
		return CF_CASE_BAD_FILL;
	if (c->disp != 0 && c->kind != CF_KIND_MEMMOVE)
		return CF_CASE_BAD_DISP;
	/* memmove: both buffers inside the one arena, src no further below the guard
	 * than a fault position may be. */
	if (c->kind == CF_KIND_MEMMOVE && (abs_disp(c->disp) > cf_memmove_max_disp(c->n) ||
					   (c->dst_fault != CF_NO_FAULT && c->disp > 0 &&
					    c->dst_fault + (uint64_t)c->disp > CF_MAX_FAULT)))
		return CF_CASE_BAD_DISP;
	return CF_CASE_OK;
}

enum cf_case_error cf_case_check_for(const struct cf_case *c, uint16_t kind)
{
	enum cf_case_error err = cf_case_check(c);
	if (err == CF_CASE_OK && c->kind != kind)
		err = CF_CASE_KIND_MISMATCH;
	return err;
}

/* Positions f > 0 with f = -m (mod 2*szreg), below limit. */
static uint64_t aligned_positions_below(uint64_t limit, uint32_t m, uint32_t period)
{
	uint64_t r = (period - m % period) % period; /* smallest f >= 0 with f = -m */
	if (r == 0)
		r = period;
	return limit > r ? (limit - r + period - 1) / period : 0;
}

static uint64_t first_position(uint32_t m, uint32_t period)
{
	uint64_t r = (period - m % period) % period;
	return r == 0 ? period : r;
}

uint32_t cf_fault_count(const struct cf_sweep_cfg *cfg, uint64_t n, uint32_t m)
{
	uint32_t period = 2 * cfg->szreg;
	if (cf_kind_returns_dst(cfg->kind))
		return 2; /* none, and the guard right past the end */
	/* none, 0, then f in (0, n + period) */
	return 2 + (uint32_t)aligned_positions_below(n + period, m, period);
}

/* The side's page offset: its misalignment m where any offset will do (no fault, or
 * granules: the buffer stays at the start of its page, the boundary falls inside it),
 * else what puts byte [fault] on a page boundary. */
static uint32_t off_for(uint64_t fault, uint32_t m, uint32_t granule)
{
	if (fault == CF_NO_FAULT || fault == 0 || granule)
		return m;
	return (uint32_t)((CF_PAGE_SIZE - fault % CF_PAGE_SIZE) % CF_PAGE_SIZE);
}

void cf_fault_at(const struct cf_sweep_cfg *cfg, uint32_t m, uint32_t idx, uint64_t top,
		 uint64_t *fault, uint32_t *off)
{
	uint32_t period = 2 * cfg->szreg;
	uint64_t f;
	if (idx == 0) {
		f = CF_NO_FAULT;
	} else if (cf_kind_returns_dst(cfg->kind)) {
		/* The first reachable position at or past the end (memmove: of both
		 * buffers): no access may fault. */
		uint64_t r = (period - m % period) % period;
		f = top == 0 ? 0 : top + (r + period - top % period) % period;
	} else if (idx == 1) {
		f = 0;
	} else {
		f = first_position(m, period) + (uint64_t)(idx - 2) * period;
	}
	*fault = f;
	*off = off_for(f, m, (uint32_t)cfg->granule);
}

/* The fault positions a side runs: cf_fault_count's list, or only "none" on the kernel's
 * side of a one-way user copy. */
static uint32_t src_faults(const struct cf_sweep_cfg *cfg, uint64_t n, uint32_t m)
{
	return cf_kind_src_faults(cfg->kind) ? cf_fault_count(cfg, n, m) : 1;
}

static uint32_t dst_faults(const struct cf_sweep_cfg *cfg, uint64_t n, uint32_t m)
{
	return cf_kind_dst_faults(cfg->kind) ? cf_fault_count(cfg, n, m) : 1;
}

static uint32_t misalignments(const struct cf_sweep_cfg *cfg)
{
	return 2 * cfg->szreg;
}

static bool has_src(const struct cf_sweep_cfg *cfg)
{
	return cf_kind_has_src(cfg->kind);
}

/* The fill values every memset sweep runs (memset stores only the low byte of its
 * int argument): zero, all ones, the high bit set, bits above the low byte set (low
 * byte with the high bit clear), and a negative int (sign-extended in the register). */
static const uint32_t memset_fills[] = {0x00, 0xff, 0xa5, 0x1234565a, 0xffffff81};
#define MEMSET_FILLS (sizeof(memset_fills) / sizeof(memset_fills[0]))

uint32_t cf_memset_fill_at(uint32_t idx)
{
	return memset_fills[idx % MEMSET_FILLS];
}

uint64_t cf_variant_count(const struct cf_sweep_cfg *cfg, uint64_t n)
{
	if (cfg->kind == CF_KIND_MEMSET)
		return MEMSET_FILLS;
	if (cfg->kind == CF_KIND_MEMMOVE)
		return 2 * cf_memmove_max_disp(n) + 1; /* -max .. +max */
	return 1;
}

static void variant_at(const struct cf_sweep_cfg *cfg, uint64_t n, uint64_t idx, struct cf_case *c)
{
	if (cfg->kind == CF_KIND_MEMSET)
		c->fill = cf_memset_fill_at((uint32_t)idx);
	else if (cfg->kind == CF_KIND_MEMMOVE)
		c->disp = (int32_t)((int64_t)idx - (int64_t)cf_memmove_max_disp(n));
}

static uint64_t cases_for_len(const struct cf_sweep_cfg *cfg, uint64_t n)
{
	uint32_t mis = misalignments(cfg);
	uint64_t dst = 0, src = 0;
	for (uint32_t m = 0; m < mis; m++) {
		dst += dst_faults(cfg, n, m);
		src += src_faults(cfg, n, m);
	}
	return (has_src(cfg) ? src * dst : dst) * cf_variant_count(cfg, n);
}

static uint64_t exhaustive_total(const struct cf_sweep_cfg *cfg)
{
	uint64_t t = 0;
	for (uint64_t n = cfg->min_len; n <= cfg->max_len; n++)
		t += cases_for_len(cfg, n);
	return t;
}

uint64_t cf_sweep_total(const struct cf_sweep_cfg *cfg)
{
	return exhaustive_total(cfg) + cfg->random_count;
}

/* Ids below x that are = shard (mod shards). */
static uint64_t shard_ids_below(uint64_t x, uint64_t shard, uint64_t shards)
{
	return x > shard ? (x - shard + shards - 1) / shards : 0;
}

uint64_t cf_sweep_shard_total(const struct cf_sweep_cfg *cfg, uint64_t shard, uint64_t shards)
{
	return cf_sweep_count(cfg, shard, shards, 0, UINT64_MAX);
}

uint64_t cf_sweep_count(const struct cf_sweep_cfg *cfg, uint64_t shard, uint64_t shards,
			uint64_t start, uint64_t end)
{
	uint64_t t = cf_sweep_total(cfg);
	if (end > t)
		end = t;
	if (start >= end)
		return 0;
	return shard_ids_below(end, shard, shards) - shard_ids_below(start, shard, shards);
}

void cf_sweep_begin(struct cf_sweep_iter *it, const struct cf_sweep_cfg *cfg, uint64_t shard,
		    uint64_t shards)
{
	it->cfg = *cfg;
	it->shard = shard;
	it->shards = shards ? shards : 1;
	it->next_id = 0;
	it->n = cfg->min_len;
	it->sm = it->dm = 0;
	it->si = it->di = 0;
	it->vi = 0;
	it->exhaustive_done = cfg->min_len > cfg->max_len;
	it->random_done = 0;
}

static void advance(struct cf_sweep_iter *it);

void cf_sweep_seek(struct cf_sweep_iter *it, uint64_t id)
{
	while (it->next_id < id && !it->exhaustive_done) {
		/* At the start of a length: skip it whole if it ends before id. */
		if (!it->sm && !it->dm && !it->si && !it->di && !it->vi) {
			uint64_t len_cases = cases_for_len(&it->cfg, it->n);
			if (id - it->next_id >= len_cases) {
				it->next_id += len_cases;
				if (++it->n > it->cfg.max_len)
					it->exhaustive_done = true;
				continue;
			}
		}
		advance(it);
		it->next_id++;
	}
	if (it->next_id < id) {
		uint64_t left = it->cfg.random_count - it->random_done;
		uint64_t skip = id - it->next_id < left ? id - it->next_id : left;
		it->random_done += skip;
		it->next_id += skip;
	}
}

bool cf_sweep_case_at(const struct cf_sweep_cfg *cfg, uint64_t id, struct cf_case *c)
{
	struct cf_sweep_iter it;
	cf_sweep_begin(&it, cfg, 0, 1);
	cf_sweep_seek(&it, id);
	return it.next_id == id && cf_sweep_next(&it, c);
}

/* Step the exhaustive odometer: variant (fill, disp), dst fault, src fault, dst mis,
 * src mis, n. */
static void advance(struct cf_sweep_iter *it)
{
	const struct cf_sweep_cfg *cfg = &it->cfg;
	uint32_t mis = misalignments(cfg);
	if (++it->vi < cf_variant_count(cfg, it->n))
		return;
	it->vi = 0;
	if (++it->di < dst_faults(cfg, it->n, it->dm))
		return;
	it->di = 0;
	if (has_src(cfg) && ++it->si < src_faults(cfg, it->n, it->sm))
		return;
	it->si = 0;
	if (++it->dm < mis)
		return;
	it->dm = 0;
	if (has_src(cfg) && ++it->sm < mis)
		return;
	it->sm = 0;
	if (++it->n > cfg->max_len)
		it->exhaustive_done = true;
}

static void exhaustive_case(const struct cf_sweep_iter *it, struct cf_case *c)
{
	const struct cf_sweep_cfg *cfg = &it->cfg;
	c->n = it->n;
	variant_at(cfg, it->n, it->vi, c);
	cf_fault_at(cfg, it->dm, it->di, cf_memmove_top(it->n, c->disp), &c->dst_fault,
		    &c->dst_off);
	if (has_src(cfg)) {
		cf_fault_at(cfg, it->sm, it->si, it->n, &c->src_fault, &c->src_off);
	} else {
		c->src_fault = CF_NO_FAULT;
		c->src_off = 0;
	}
}

bool cf_sweep_next(struct cf_sweep_iter *it, struct cf_case *c)
{
	for (;;) {
		uint64_t id = it->next_id;
		if (!it->exhaustive_done) {
			bool mine = id % it->shards == it->shard;
			if (mine) {
				*c = (struct cf_case){0};
				exhaustive_case(it, c);
			}
			advance(it);
			it->next_id++;
			if (!mine)
				continue;
		} else if (it->random_done < it->cfg.random_count) {
			uint64_t i = it->random_done++;
			it->next_id++;
			if (id % it->shards != it->shard)
				continue;
			cf_random_case(&it->cfg, i, c);
		} else {
			return false;
		}
		c->magic = CF_CASE_MAGIC;
		c->kind = it->cfg.kind;
		c->profile = (uint8_t)it->cfg.profile;
		c->granule = (uint8_t)it->cfg.granule;
		c->id = id;
		return true;
	}
}

/* A counter-based generator: value k of stream (seed, i). */
static uint64_t rnd(uint64_t seed, uint64_t i, uint64_t k)
{
	uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull) ^ (k * 0xd1b54a32d192ed03ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t log_uniform_len(uint64_t seed, uint64_t i, uint64_t max)
{
	uint32_t bits = 0;
	while (bits < 63 && (1ull << bits) <= max)
		bits++;
	uint32_t b = (uint32_t)(rnd(seed, i, 1) % (bits + 1));
	uint64_t n = b ? rnd(seed, i, 2) & ((1ull << b) - 1) : 0;
	return n > max ? max : n;
}

/* A fault position for a side of n bytes at offset off: some page (or granule)
 * boundary (memcpy, memset: n is the buffer's length; memmove: how far above dst both end). */
static uint64_t random_fault(const struct cf_sweep_cfg *cfg, uint64_t seed, uint64_t i, uint64_t k,
			     uint64_t n, uint32_t off)
{
	uint64_t unit = cf_fault_unit((uint32_t)cfg->granule);
	uint64_t units = (off + n + unit - 1) / unit;
	if (cf_kind_returns_dst(cfg->kind)) /* only just past the buffer */
		return units * unit > off ? units * unit - off : 0;
	uint64_t b = rnd(seed, i, k) % (units + 1);
	return b == 0 ? 0 : b * unit - off;
}

void cf_random_case(const struct cf_sweep_cfg *cfg, uint64_t i, struct cf_case *c)
{
	uint64_t seed = cfg->random_seed;
	uint64_t max = cfg->random_max_len ? cfg->random_max_len : 65536;
	if (max > CF_MAX_LEN)
		max = CF_MAX_LEN;
	*c = (struct cf_case){0};
	c->n = log_uniform_len(seed, i, max);
	c->src_off = (uint32_t)(rnd(seed, i, 3) % CF_PAGE_SIZE);
	c->dst_off = (uint32_t)(rnd(seed, i, 4) % CF_PAGE_SIZE);
	uint32_t sides = (uint32_t)(rnd(seed, i, 5) % 4); /* bit 0 src, bit 1 dst */
	if (!cf_kind_src_faults(cfg->kind))
		sides &= ~1u;
	if (!cf_kind_dst_faults(cfg->kind))
		sides &= ~2u;
	if (cfg->kind == CF_KIND_MEMSET) {
		c->fill = (uint32_t)rnd(seed, i, 8);
	} else if (cfg->kind == CF_KIND_MEMMOVE) {
		uint64_t most = cf_memmove_max_disp(c->n);
		c->disp = (int32_t)((int64_t)(rnd(seed, i, 8) % (2 * most + 1)) - (int64_t)most);
	}
	uint64_t top = cf_memmove_top(c->n, c->disp);
	c->src_fault = (sides & 1) ? random_fault(cfg, seed, i, 6, c->n, c->src_off) : CF_NO_FAULT;
	c->dst_fault = (sides & 2) ? random_fault(cfg, seed, i, 7, top, c->dst_off) : CF_NO_FAULT;
	if (!has_src(cfg))
		c->src_off = 0;
}
