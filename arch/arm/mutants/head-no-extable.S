/* SPDX-License-Identifier: MIT
 *
 * head-no-extable.S - seeded bug: head-no-extable.
 *
 * copyfuzz: symbol=arm_copy_from_user
 * copyfuzz: kind=copy_from_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_from_user whose dst-alignment byte loop loads with no exception-table entry
 * copyfuzz: expect=unhandled-fault
 *
 * The head loop that aligns dst reads user memory without a table entry: a
 * fault there is an oops in the kernel, here an unhandled fault. Hook:
 * .Lcopy_align in include/copy_template.S.
 */

#define CF_MUTANT_HEAD_NO_EXTABLE 1
#include "../copy_from_user.S"
