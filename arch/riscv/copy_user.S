/* SPDX-License-Identifier: MIT
 *
 * copy_user.S - word-at-a-time user copy with exact fault semantics.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=unrolled word copy with a shifting misaligned path; faults retried bytewise for an exact count
 *
 * unsigned long __asm_copy_to_user(void *to, const void *from, unsigned long n)
 * unsigned long __asm_copy_from_user(...)   (the same code)
 * Returns the number of bytes not copied: exactly the bytes from the first
 * one that is inaccessible on either side to the end.
 *
 * The algorithm, its register plan and the fault scheme are described in
 * include/copy_template.S; this file only instantiates it with
 * exception-table entries in the relative (5.18+) format.
 */

#include "include/cf_asm.h"

	.text
CF_FUNC_START(__asm_copy_to_user)
#include "include/copy_template.S"
CF_FUNC_END(__asm_copy_to_user)
CF_FUNC_ALIAS(__asm_copy_from_user, __asm_copy_to_user)
