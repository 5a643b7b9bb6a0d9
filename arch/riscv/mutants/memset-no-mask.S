/* SPDX-License-Identifier: MIT
 *
 * memset-no-mask.S - seeded bug: the int is not cut down to its low byte.
 *
 * copyfuzz: symbol=memset
 * copyfuzz: kind=memset
 * copyfuzz: profile=exact
 * copyfuzz: about=replicates c without andi 0xff: bits above the low byte leak into the words
 * copyfuzz: expect=wrong-data
 *
 * The byte loops still store the low byte (sb), so short fills and fills
 * whose upper bits are zero come out right; the word loop stores the OR of
 * shifted copies of the whole int. Only a fill value with bits set above its
 * low byte (the sweep's 0x1234565a and -127) shows it, as wrong-data.
 * Hook: memset.S, entry.
 */

#define CF_MUTANT_MEMSET_NO_MASK 1
#include "../memset.S"
