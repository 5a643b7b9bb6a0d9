/* SPDX-License-Identifier: MIT
 *
 * overread-in-page.S - seeded bug: overread-in-page.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=loads a whole word at the byte tail when it stays inside the page: reads past the source
 * copyfuzz: expect=load-out-of-bounds
 * copyfuzz: needs=memcheck
 *
 * The extra load never crosses into another page, so it can never fault and
 * guard pages cannot see it; the data copied is right. Only an emulator that
 * sees every access (the QEMU plugin, --memcheck) reports it. In a kernel it
 * reads user memory past the buffer: not a crash, but a side channel and a
 * hazard next to MMIO or guard mappings.
 * Hook: include/copy_template.S, .Lcopy_bytes.
 */
#define CF_MUTANT_OVERREAD_IN_PAGE 1
#include "../copy_user.S"
