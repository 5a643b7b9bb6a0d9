/* SPDX-License-Identifier: MIT
 *
 * fixup-full-size.S - seeded bug: fixup-full-size.
 *
 * copyfuzz: symbol=arm_copy_to_user
 * copyfuzz: kind=copy_to_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_to_user whose byte fixup returns n instead of the bytes left
 * copyfuzz: expect=no-progress,store-beyond-reported
 *
 * The fixup returns the original n after a partial copy: callers are told
 * nothing was copied although the accessible prefix was stored. Hook:
 * .Lfix_byte in include/copy_template.S.
 */

#define CF_MUTANT_FIXUP_FULL_SIZE 1
#include "../copy_to_user.S"
