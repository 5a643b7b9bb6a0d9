/* SPDX-License-Identifier: MIT
 *
 * copy_user_vector.S - a vector (RVV 1.0) user copy, exact to the byte.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: isa=rv64gcv
 * copyfuzz: max-len=80
 * copyfuzz: about=vsetvli/vle8.v/vse8.v loop (LMUL 1); a faulting vector access finishes byte by byte
 *
 * unsigned long __asm_copy_to_user(void *to, const void *from, unsigned long n)
 * Returns the bytes not copied.
 *
 * Each round copies vl = min(remaining, VLEN/8) bytes with one unit-stride load and
 * one unit-stride store, both in the exception table. A fault in either says only
 * that some element of the chunk is inaccessible: the V spec lets the implementation
 * report it with vstart at the faulting element (the earlier ones done) or, as QEMU
 * 7.2 does for unit-stride accesses, before any element (docs/semantics.md, "Vector
 * accesses"). So the fixup does not read vstart: it copies the chunk, and whatever
 * follows, one byte at a time from the chunk's start (the cursors have not moved),
 * each byte access in the table too, and the first byte fault gives the exact count.
 * Bytes a partial vse8.v already stored are stored again with the same values.
 *
 * LMUL 1 keeps chunks small (16 bytes at VLEN 128), so short sweeps run several rounds.
 * The loop repeats every chunk: max-len=80 (five chunks at VLEN 128: every fault position
 * in a first, middle and last chunk, on either side) is its default sweep, which keeps
 * `sweep --mutants` quick; give --max-len for more, and for a larger --vlen.
 *
 * Mutation hooks: CF_MUTANT_VEC_FIXUP_CHUNK, CF_MUTANT_VEC_NO_SRC_ADVANCE
 * (mutants/vector-*.S).
 *
 * Register plan (caller-saved only; v8 is the only vector register used):
 *   a0  dst cursor: first byte of the chunk    a1  src cursor
 *   a2  bytes left from the cursors            t0  vl of this chunk
 *   t6  dst end = dst + n (the fixups measure from it)
 *   t1  the byte in flight (byte-wise finish)
 */

#include "include/cf_asm.h"

	.text
CF_FUNC_START(__asm_copy_to_user)
	add	t6, a0, a2		/* the fixups measure from the end */
	beqz	a2, .Ldone
.Lvloop:
	vsetvli	t0, a2, e8, m1, ta, ma	/* t0 = vl = min(a2, VLEN/8) */
	UA(.Lvfault, vle8.v v8, (a1))
	UA(.Lvfault, vse8.v v8, (a0))
#ifndef CF_MUTANT_VEC_NO_SRC_ADVANCE
	add	a1, a1, t0
#endif
	add	a0, a0, t0
	sub	a2, a2, t0
	bnez	a2, .Lvloop
.Ldone:
	li	a0, 0			/* everything copied */
	ret

	/* A vector access faulted: some byte of [a0, a0 + t0) (or of the source
	 * chunk at a1) is inaccessible; nothing of this chunk is counted yet. */
.Lvfault:
#ifdef CF_MUTANT_VEC_FIXUP_CHUNK
	/* BUG vector-fixup-chunk: gives up on the whole rest at the chunk's start,
	 * although the bytes before the faulting one were accessible. */
	sub	a0, t6, a0
	ret
#endif
.Lbloop:
	UA(.Lbfault, lbu t1, 0(a1))
	UA(.Lbfault, sb t1, 0(a0))
	addi	a0, a0, 1
	addi	a1, a1, 1
	bltu	a0, t6, .Lbloop
	li	a0, 0			/* the fault did not recur: all copied */
	ret

	/* A byte access faulted: a0 is the first byte not copied. */
.Lbfault:
	sub	a0, t6, a0
	ret
CF_FUNC_END(__asm_copy_to_user)
CF_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)
