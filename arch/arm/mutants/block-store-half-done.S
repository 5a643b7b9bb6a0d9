/* SPDX-License-Identifier: MIT
 *
 * block-store-half-done.S - seeded bug: block-store-half-done.
 *
 * copyfuzz: symbol=arm_copy_to_user
 * copyfuzz: kind=copy_to_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_to_user whose fixup for a block's last four strt counts the block's first half as not stored
 * copyfuzz: expect=store-beyond-reported
 *
 * A user block store is eight strt; when one of the last four faults, the first
 * four have landed, but the fixup reports the whole block as not copied: bytes
 * the caller is told were not written were written. Hook: ST8 in
 * include/copy_template.S.
 */

#define CF_MUTANT_BLOCK_STORE_HALF_DONE 1
#include "../copy_to_user.S"
