/* SPDX-License-Identifier: MIT
 *
 * fixup-loops.S - seeded bug: fixup-loops.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=byte fixup jumps back to retry the faulting byte forever
 * copyfuzz: expect=hang
 *
 * The byte fixup jumps back into the byte loop at the same a0/a1, so the
 * faulting access is retried, faults again, and so on forever.
 * Hook: include/copy_template.S, .Lfix_byte.
 */

#define CF_MUTANT_FIXUP_LOOPS 1
#include "../copy_user.S"
