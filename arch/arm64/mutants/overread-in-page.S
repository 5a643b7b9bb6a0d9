/* SPDX-License-Identifier: MIT
 *
 * overread-in-page.S - seeded bug: overread-in-page.
 *
 * copyfuzz: symbol=__arch_copy_from_user
 * copyfuzz: kind=copy_from_user
 * copyfuzz: profile=exact
 * copyfuzz: about=copy_from_user whose byte tail loads 8 user bytes at once when they stay in the page: reads past the source
 * copyfuzz: expect=load-out-of-bounds
 * copyfuzz: needs=memcheck
 *
 * The tail loads the word at the src cursor (unaligned, as arm64 allows) and
 * stores its bytes one by one, so the data and the fault semantics stay right.
 * The load never crosses into another page, so it never faults and guard
 * pages cannot see it; with fewer than 8 bytes left it reads user memory past
 * the buffer. Only an emulator that sees every access (the QEMU plugin,
 * --memcheck) reports it. Hook: .Lcopy_bytes in include/copy_template.S.
 */

#define CF_MUTANT_OVERREAD_IN_PAGE 1
#include "../copy_from_user.S"
