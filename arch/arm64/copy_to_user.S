/* SPDX-License-Identifier: MIT
 *
 * copy_to_user.S - copy_to_user for arm64 with exact fault semantics.
 *
 * copyfuzz: symbol=__arch_copy_to_user
 * copyfuzz: kind=copy_to_user
 * copyfuzz: profile=exact
 * copyfuzz: about=64-byte blocks, a shifting misaligned path, user destination stored with sttr; faults retried bytewise
 *
 * unsigned long __arch_copy_to_user(void *to, const void *from, unsigned long n)
 * Returns the number of bytes not copied: exactly the bytes from the first
 * inaccessible destination byte to the end. Only the destination is user memory.
 *
 * The algorithm, its register plan and the fault scheme are in
 * include/copy_template.S; this file instantiates it with user destination accesses
 * and 5.16+ exception-table entries.
 */

#define CF_DST_USER 1
#include "include/cf_asm.h"

	.text
CF_FUNC_START(__arch_copy_to_user)
#include "include/copy_template.S"
CF_FUNC_END(__arch_copy_to_user)
