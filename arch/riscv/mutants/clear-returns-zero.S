/* SPDX-License-Identifier: MIT
 *
 * clear-returns-zero.S - seeded bug: clear-returns-zero.
 *
 * copyfuzz: symbol=__clear_user
 * copyfuzz: kind=clear
 * copyfuzz: profile=exact
 * copyfuzz: about=clear_user's byte fixup returns 0 after a fault
 * copyfuzz: expect=over-report
 *
 * Every fault ends in the byte fixup, which returns 0: the caller is told
 * the whole range was cleared although the bytes from the fault on were not.
 * Hook: clear_user.S, .Lfix_byte.
 */

#define CF_MUTANT_CLEAR_RETURNS_ZERO 1
#include "../clear_user.S"
