/* The fuzz input decoder (the layout is in input.h). Compiled into the fuzz drivers with
 * their SanitizerCoverage, so libFuzzer sees the decoding's branches, and into libcfref.so
 * for the tool. */
#include <string.h>

#include "cases.h"
#include "input.h"

static uint64_t byte_at(const uint8_t *d, size_t size, size_t i)
{
	return i < size ? d[i] : 0;
}

/* n: the side's length (memmove: how far above dst both buffers end); unit: the page,
 * or a tag granule (the offset then counts from its granule's start). */
static uint64_t decode_side(unsigned mode, uint64_t k, uint64_t n, uint32_t off, int memcpy_kind,
			    uint64_t unit)
{
	off %= (uint32_t)unit;
	uint64_t units = (off + n + unit - 1) / unit;
	if (units == 0)
		units = 1;
	if (memcpy_kind)
		return mode >= 2 ? units * unit - off : CF_NO_FAULT;
	if (mode < 2)
		return CF_NO_FAULT;
	if (mode == 2)
		return 0;
	return (1 + k % (units + 1)) * unit - off;
}

void cf_input_decode(const uint8_t *d, size_t size, uint16_t kind, uint64_t max_len,
		     uint32_t granule, struct cf_case *c)
{
	memset(c, 0, sizeof(*c));
	c->magic = CF_CASE_MAGIC;
	c->kind = kind;
	if (max_len > CF_MAX_LEN)
		max_len = CF_MAX_LEN;
	unsigned sides = (unsigned)byte_at(d, size, 0);
	unsigned bits = (unsigned)(byte_at(d, size, 1) % 17);
	uint64_t raw = byte_at(d, size, 2) | byte_at(d, size, 3) << 8;
	c->n = (bits ? raw & ((1ull << bits) - 1) : 0) % (max_len + 1);
	c->src_off = (uint32_t)((byte_at(d, size, 4) | byte_at(d, size, 5) << 8) % CF_PAGE_SIZE);
	c->dst_off = (uint32_t)((byte_at(d, size, 6) | byte_at(d, size, 7) << 8) % CF_PAGE_SIZE);
	uint64_t v = byte_at(d, size, 10) | byte_at(d, size, 11) << 8 | byte_at(d, size, 12) << 16 |
		     byte_at(d, size, 13) << 24;
	if (kind == CF_KIND_MEMSET) {
		c->fill = (uint32_t)v;
	} else if (kind == CF_KIND_MEMMOVE) {
		uint64_t max = cf_memmove_max_disp(c->n);
		c->disp = (int32_t)((int64_t)(v % (2 * max + 1)) - (int64_t)max);
	}
	int mc = cf_kind_returns_dst(kind);
	if (granule && (byte_at(d, size, 14) & 1))
		c->granule = (uint8_t)granule;
	uint64_t unit = cf_fault_unit(c->granule);
	c->src_fault = decode_side(sides & 3, byte_at(d, size, 8), c->n, c->src_off, mc, unit);
	c->dst_fault = decode_side((sides >> 2) & 3, byte_at(d, size, 9),
				   cf_memmove_top(c->n, c->disp), c->dst_off, mc, unit);
	if (!cf_kind_has_src(kind))
		c->src_off = 0;
	if (!cf_kind_src_faults(kind)) /* no source, or the kernel's */
		c->src_fault = CF_NO_FAULT;
	if (!cf_kind_dst_faults(kind))
		c->dst_fault = CF_NO_FAULT;
}
