/* SPDX-License-Identifier: MIT
 *
 * tail-extra-byte.S - seeded bug: tail-extra-byte.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=byte loop runs while a0 <= end: one byte past the end
 * copyfuzz: expect=store-out-of-bounds
 *
 * The byte loop's exit test is <= instead of <, so it loads and stores one
 * byte past the end (small copies and tails alike) and still returns 0.
 * Hook: include/copy_template.S, .Lcopy_byte.
 */

#define CF_MUTANT_TAIL_EXTRA_BYTE 1
#include "../copy_user.S"
