/* SPDX-License-Identifier: MIT
 *
 * vector-no-src-advance.S - seeded bug: the vector loop does not advance the source by vl.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: isa=rv64gcv
 * copyfuzz: max-len=80
 * copyfuzz: about=vector copy that advances dst but not src by vl: every chunk copies the first
 * copyfuzz: expect=wrong-data
 *
 * The loop forgets `add a1, a1, t0`: past the first chunk (VLEN/8 bytes) every chunk
 * stores the source's first chunk again. Hook: copy_user_vector.S.
 */

#define CF_MUTANT_VEC_NO_SRC_ADVANCE 1
#include "../copy_user_vector.S"
