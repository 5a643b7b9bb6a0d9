/* SPDX-License-Identifier: MIT
 *
 * wrong-shift.S - seeded bug: wrong-shift.
 *
 * copyfuzz: symbol=memcpy
 * copyfuzz: kind=memcpy
 * copyfuzz: profile=exact
 * copyfuzz: about=memcpy whose misaligned path shifts left by one byte too few
 * copyfuzz: expect=wrong-data
 *
 * The left shift of the misaligned path is 24 - 8*m bits instead of 32 - 8*m,
 * so every merged word takes a wrong byte from the next src word. Hook:
 * .Lcopy_shift in include/copy_template.S.
 */

#define CF_MUTANT_WRONG_SHIFT 1
#include "../memcpy.S"
