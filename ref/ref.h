/* SPDX-License-Identifier: MIT */
/*
 * ref.h - the C reference and the oracle.
 *
 * The reference says what a byte-by-byte routine does with a case: it
 * copies (or clears) the A leading bytes accessible on both sides and stops.
 * The oracle compares what the routine under test did with that and names
 * every difference with a finding class (records.h). Pure C with no system
 * calls: it runs inside the riscv executor and natively under ASan+UBSan.
 */
#ifndef CF_REF_H
#define CF_REF_H

#include <stdint.h>

#include "records.h"

/* A: the leading bytes accessible on both sides (clear, memset: dst only; memmove: both
 * sides in one mapping, src = dst - disp). */
uint64_t cf_ref_accessible(const struct cf_case *c);

/*
 * The exact expected destination window [lo, hi) (offsets relative to dst,
 * lo <= 0 <= hi): before[] holds what dst held before the call, src[] the
 * source (unused for clear). out[i - lo] receives the expectation.
 */
void cf_ref_expect(const struct cf_case *c, const uint8_t *src, const uint8_t *before, int64_t lo,
		   int64_t hi, uint8_t *out);

/* How the call ended (the executor's view). */
enum cf_outcome {
	CF_OUT_RETURNED = 0,
	CF_OUT_UNHANDLED_FAULT,
	CF_OUT_CRASHED,
	CF_OUT_HUNG,
};

struct cf_observed {
	enum cf_outcome outcome;
	uint64_t ret; /* a0 as returned */
	uint16_t regs_bad; /* enum cf_reg_bit mask from the trampoline */
	uint64_t reg_got;
	int uaccess_left_on; /* returned with user access (compat SR_SUM) enabled */
	const uint8_t *dst; /* the destination as the routine left it */
	const uint8_t *before; /* what dst held before: before[i] pairs with dst[i] */
	const uint8_t *src; /* the source (readable for the first A bytes); memmove: a copy of
			     * it as it was before the call (the call may overwrite it) */
	int64_t lo; /* readable window around dst: [lo, hi), lo <= 0 */
	int64_t hi;
};

/* Classify; fills classes, errors, ret, accessible, claimed, diff_* and regs. */
void cf_oracle(const struct cf_case *c, const struct cf_observed *o, struct cf_result *r);

/* The classes that are errors under a profile. */
uint32_t cf_profile_errors(uint16_t profile);

/* Class name for one class bit ("bad-return", ...), or "?" */
const char *cf_class_name(uint32_t class_bit);

#endif /* CF_REF_H */
