/* SPDX-License-Identifier: MIT
 *
 * fixup-off-by-one.S - seeded bug: fixup-off-by-one.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=byte fixup returns one less than the bytes not copied
 * copyfuzz: expect=over-report
 *
 * Every fault ends in the byte fixup, which reports one byte fewer than were
 * left uncopied: the caller believes one more byte arrived than did.
 * Hook: include/copy_template.S, .Lfix_byte.
 */

#define CF_MUTANT_FIXUP_OFF_BY_ONE 1
#include "../copy_user.S"
