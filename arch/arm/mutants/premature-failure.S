/* SPDX-License-Identifier: MIT
 *
 * premature-failure.S - seeded bug: premature-failure.
 *
 * copyfuzz: symbol=arm_copy_from_user
 * copyfuzz: kind=copy_from_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_from_user whose word and block fixups return end - r0 with no byte retry
 * copyfuzz: expect=no-progress,imprecise
 *
 * A fault on a word access returns what is left from the iteration's start,
 * without trying the bytes before the fault: a first word that straddles the
 * fault boundary stores nothing and returns n although bytes were readable.
 * Hook: FIX_WIDE in include/copy_template.S.
 */

#define CF_MUTANT_PREMATURE_FAILURE 1
#include "../copy_from_user.S"
