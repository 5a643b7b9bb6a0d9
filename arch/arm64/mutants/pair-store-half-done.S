/* SPDX-License-Identifier: MIT
 *
 * pair-store-half-done.S - seeded bug: pair-store-half-done.
 *
 * copyfuzz: symbol=__arch_copy_to_user
 * copyfuzz: kind=copy_to_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_to_user whose fixup for a user pair's second half counts the first half as not stored
 * copyfuzz: expect=store-beyond-reported
 *
 * A user pair store is two sttr; when the second faults, the first has landed,
 * but the fixup reports the whole iteration as not copied: bytes the caller is
 * told were not written were written. The shape of 5.x user_stp fixups. Hook:
 * STP in include/copy_template.S.
 */

#define CF_MUTANT_PAIR_STORE_HALF_DONE 1
#include "../copy_to_user.S"
