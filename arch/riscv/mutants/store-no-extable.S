/* SPDX-License-Identifier: MIT
 *
 * store-no-extable.S - seeded bug: store-no-extable.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=byte-loop store without an exception-table entry
 * copyfuzz: expect=unhandled-fault
 *
 * The store of the byte loop (small copies, tail, and the retry after a
 * word fault) has no table entry: any dst fault becomes an unhandled SIGSEGV.
 * Hook: include/copy_template.S, .Lcopy_byte.
 */

#define CF_MUTANT_STORE_NO_EXTABLE 1
#include "../copy_user.S"
