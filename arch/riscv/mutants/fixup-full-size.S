/* SPDX-License-Identifier: MIT
 *
 * fixup-full-size.S - seeded bug: fixup-full-size.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=bytewise copy whose fixup returns n instead of the bytes left (mv a0, a2)
 * copyfuzz: expect=no-progress,store-beyond-reported
 *
 * The bytewise baseline's fixup returns the original n after a partial copy:
 * callers are told nothing was copied although the accessible prefix was
 * stored. The shape of the 4.x-era RISC-V fixup. Hook: copy_user_bytewise.S.
 */

#define CF_MUTANT_FIXUP_FULL_SIZE 1
#include "../copy_user_bytewise.S"
