/* SPDX-License-Identifier: MIT
 *
 * clobber-s-register.S - seeded bug: clobber-s-register.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=keeps the dst end pointer in callee-saved s1 without saving it
 * copyfuzz: expect=register-clobber
 *
 * The dst-end pointer is kept in s1, a callee-saved register, which is never
 * saved or restored: every call returns with s1 changed.
 * Hook: include/copy_template.S, the DEND definition.
 */

#define CF_MUTANT_CLOBBER_S_REGISTER 1
#include "../copy_user.S"
