/* SPDX-License-Identifier: MIT */
/*
 * observe_abi.h - what the executor observed in a case, for an oracle that
 * runs elsewhere (the native fuzz driver, fuzz/driver.c: ref/ compiled with
 * clang and ASan+UBSan). One definition for both sides.
 *
 * The driver creates a memfd of sizeof(struct cf_observe_shm), hands its fd
 * to the executor (`serve --observe-fd N`), and after each result record reads
 * the block: how the call ended, and the bytes around dst as the routine left
 * them. What those bytes were before the call, and the source, the driver
 * computes itself from the case (place.h) instead of taking the executor's
 * copies, which a routine could write alike.
 * Fixed-width fields only: RV32 and RV64 guests share it with the x86-64 host.
 */
#ifndef CF_OBSERVE_ABI_H
#define CF_OBSERVE_ABI_H

#include <stdint.h>

#include "records.h"

#define CF_OBSERVE_MAGIC 0x324f4643u /* "CFO2" */
#define CF_OBSERVE_WINDOW (CF_MAX_LEN + 2 * CF_CANARY_LEN)

struct cf_observe_shm {
	uint32_t magic, seq32; /* executor sets magic; seq32 = low bits of the case id */
	struct cf_case c; /* the case as run */
	uint64_t outcome; /* enum cf_outcome */
	uint64_t ret; /* a0 as returned */
	uint64_t regs_bad, reg_got, uaccess_left_on;
	int64_t lo, hi; /* the window around dst below, relative to dst (place.h) */
	uint64_t dst_addr; /* where dst was in the guest (memcpy returns it) */
	uint8_t after[CF_OBSERVE_WINDOW]; /* dst[lo, hi) as the routine left it */
};

#endif /* CF_OBSERVE_ABI_H */
