/* SPDX-License-Identifier: MIT
 *
 * uaccess-left-enabled.S - seeded bug: uaccess-left-enabled.
 *
 * copyfuzz: symbol=arm_copy_from_user
 * copyfuzz: kind=copy_from_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_from_user whose fault path returns with user access still enabled
 * copyfuzz: expect=uaccess-left-enabled
 *
 * The fixup returns without the uaccess_disable of the normal exit: after a
 * fault the kernel runs on with the user domain open, so any stray kernel
 * access to user memory goes unnoticed. Hook: .Lfix_byte in
 * include/copy_template.S.
 */

#define CF_MUTANT_UACCESS_LEFT_ENABLED 1
#include "../copy_from_user.S"
