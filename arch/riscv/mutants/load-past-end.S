/* SPDX-License-Identifier: MIT
 *
 * load-past-end.S - seeded bug: load-past-end.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=misaligned path fetches the next src word before the tail; its fault is final
 * copyfuzz: expect=spurious-fault
 *
 * After the shifting loops the misaligned path loads the next aligned src
 * word whether or not the tail needs it, and its table entry points at the
 * non-retrying 'return end - a0' fixup (as in early kernels). When src ends
 * flush against an unmapped page the load faults and the routine reports the
 * tail as not copied although every byte was accessible.
 * Hook: include/copy_template.S, .Lshift_done.
 */

#define CF_MUTANT_LOAD_PAST_END 1
#include "../copy_user.S"
