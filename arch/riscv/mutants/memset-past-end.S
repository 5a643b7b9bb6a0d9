/* SPDX-License-Identifier: MIT
 *
 * memset-past-end.S - seeded bug: the byte tail stores one byte too many.
 *
 * copyfuzz: symbol=memset
 * copyfuzz: kind=memset
 * copyfuzz: profile=exact
 * copyfuzz: about=the tail loop runs while cursor <= end: it stores the fill byte at dst + n
 * copyfuzz: expect=store-out-of-bounds
 *
 * Whenever a tail is left (n < 2*SZREG, or dst + n not aligned) the byte at
 * dst + n is overwritten: a canary changes (store-out-of-bounds), and with
 * the guard page right past the end the store faults (unhandled-fault).
 * Hook: memset.S, .Lset_byte.
 */

#define CF_MUTANT_MEMSET_PAST_END 1
#include "../memset.S"
