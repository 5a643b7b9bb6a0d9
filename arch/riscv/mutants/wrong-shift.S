/* SPDX-License-Identifier: MIT
 *
 * wrong-shift.S - seeded bug: wrong-shift.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=shifting loop uses a left shift one byte too large when (src - dst) % SZREG == 3
 * copyfuzz: expect=wrong-data
 *
 * Once dst is aligned, for a source 3 bytes past word alignment (that is,
 * (src - dst) % SZREG == 3) the left shift count is 8 bits too large, so
 * the high bytes of each merged word are wrong; every other misalignment is
 * right, as with the RV32-only shift bug in the real kernel history.
 * Hook: include/copy_template.S, .Lcopy_shift.
 */

#define CF_MUTANT_WRONG_SHIFT 1
#include "../copy_user.S"
