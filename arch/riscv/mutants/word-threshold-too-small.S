/* SPDX-License-Identifier: MIT
 *
 * word-threshold-too-small.S - seeded bug: word-threshold-too-small.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=block loop entered on n >= 8*SZREG before dst alignment: overruns by up to SZREG-1 bytes, returns 0
 * copyfuzz: expect=store-out-of-bounds
 *
 * The unrolled-block loop is entered when n >= 8*SZREG instead of when a
 * whole block is left after aligning dst. For n in [8*SZREG, 9*SZREG) with a
 * misaligned dst (src equally misaligned) one block runs anyway: it reads and
 * writes up to SZREG-1 bytes past the end and still returns 0, like the 2021
 * rewrite's threshold bug. Hook: include/copy_template.S, section 3a.
 */

#define CF_MUTANT_WORD_THRESHOLD_TOO_SMALL 1
#include "../copy_user.S"
