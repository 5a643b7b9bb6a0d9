/* What a fuzz input's bytes mean: the one decoder of the fuzz drivers' inputs.
 *
 * fuzz/input.c is linked into the fuzz drivers (fuzz/driver.c calls it for every input)
 * and into libcfref.so, through which the tool's fuzzinput.decode() calls the same code:
 * a replayed or triaged engine input is the case the driver ran, by construction.
 *
 * Input layout, 15 bytes (every byte string decodes to a valid case; missing bytes are 0,
 * more are ignored):
 *   [0]    bits 0-1: src side, bits 2-3: dst side: 0/1 no fault, 2 the buffer's
 *          own page is gone (fault at 0), 3 a fault after k whole pages
 *   [1]    n's width in bits (mod 17); [2..3] n's bits (little-endian), so
 *          short lengths are as likely as long ones; n <= max_len
 *   [4..5] src page offset (mod 4096), [6..7] dst page offset
 *   [8]    src k, [9] dst k: the fault is at k*4096 - offset, k in 1..pages+1
 *   [10..13] v (little-endian): memset's fill (the int argument, all 32 bits);
 *          memmove's displacement dst - src = v mod (2*max+1) - max, max =
 *          cf_memmove_max_disp(n) (n + 16 for short copies)
 *   [14]   bit 0, when the campaign allows granules (granule 16) only: a granule case:
 *          the fault units above are 16-byte MTE tag granules, not pages (k granules,
 *          the offset's place in its granule)
 * memcpy, memset and memmove routines only get faults at or past the end (any
 * fault inside is a bug by definition; memmove: past both buffers, which share
 * one mapping); clear, memset and memmove have no source side of their own;
 * copy_from_user's destination and copy_to_user's source (the kernel's) never fault.
 */
#ifndef CF_FUZZ_INPUT_H
#define CF_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "records.h"

/* The case of kind `kind` that the input d[0..size) asks for, n at most max_len, its
 * faults at tag granules where granule (0 or CF_GRANULE_MTE) allows them. Sets every
 * field but the profile and the id, which are the caller's. */
void cf_input_decode(const uint8_t *d, size_t size, uint16_t kind, uint64_t max_len,
		     uint32_t granule, struct cf_case *c);

#endif
