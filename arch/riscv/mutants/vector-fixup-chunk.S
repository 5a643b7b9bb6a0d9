/* SPDX-License-Identifier: MIT
 *
 * vector-fixup-chunk.S - seeded bug: a vector fixup that gives up on the whole chunk.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: isa=rv64gcv
 * copyfuzz: max-len=80
 * copyfuzz: about=vector copy whose fixup returns the rest from the faulting chunk's start
 * copyfuzz: expect=store-beyond-reported,imprecise
 *
 * On a fault in vle8.v/vse8.v the fixup returns everything from the chunk's start as
 * not copied instead of finishing byte by byte: the accessible bytes of the chunk
 * before the faulting one are not counted (imprecise under exact). And QEMU 7.2
 * stores the elements of a vse8.v before the faulting one (docs/semantics.md,
 * "Vector accesses"): those bytes are stored but not reported, store-beyond-reported
 * under any profile.
 * Hook: copy_user_vector.S.
 */

#define CF_MUTANT_VEC_FIXUP_CHUNK 1
#include "../copy_user_vector.S"
