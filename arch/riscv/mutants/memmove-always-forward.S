/* SPDX-License-Identifier: MIT
 *
 * memmove-always-forward.S - seeded bug: memmove that is a memcpy.
 *
 * copyfuzz: symbol=memmove
 * copyfuzz: kind=memmove
 * copyfuzz: profile=exact
 * copyfuzz: about=never takes the backward path: dst above src and overlapping gets overwritten source
 * copyfuzz: expect=wrong-data
 *
 * With dst in (src, src + n) the forward loops store into source bytes
 * before they are read, so the copy repeats its first dst - src bytes
 * (wrong-data). Every case with dst below src, apart, or equal is right: a
 * sweep without positive displacements would call it clean.
 * Hook: memmove.S, entry.
 */

#define CF_MUTANT_MEMMOVE_ALWAYS_FORWARD 1
#include "../memmove.S"
