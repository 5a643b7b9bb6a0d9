/* SPDX-License-Identifier: MIT
 *
 * copy_to_user.S - copy_to_user for 32-bit ARM with exact fault semantics.
 *
 * copyfuzz: symbol=arm_copy_to_user
 * copyfuzz: kind=copy_to_user
 * copyfuzz: profile=exact
 * copyfuzz: about=32-byte blocks, a shifting misaligned path, the user destination through strt; faults retried bytewise
 *
 * unsigned long arm_copy_to_user(void *to, const void *from, unsigned long n)
 * Returns the number of bytes not copied: exactly the bytes from the first
 * inaccessible destination byte to the end. Only the destination is user memory.
 *
 * The algorithm, its register plan and the fault scheme are in
 * include/copy_template.S; this file instantiates it with user destination accesses.
 */

#define CF_DST_USER 1
#include "include/cf_asm.h"

	.text
CF_FUNC_START(arm_copy_to_user)
#include "include/copy_template.S"
CF_FUNC_END(arm_copy_to_user)
