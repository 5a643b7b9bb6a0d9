/* SPDX-License-Identifier: MIT
 *
 * no-progress-partial-word.S - seeded bug: no-progress-partial-word.
 *
 * copyfuzz: symbol=__asm_copy_to_user
 * copyfuzz: kind=copy
 * copyfuzz: profile=exact
 * copyfuzz: about=word/block fixups return end - a0 without the bytewise retry
 * copyfuzz: expect=no-progress,store-beyond-reported
 *
 * Word and block faults return end - a0 at the last boundary instead of
 * retrying bytewise. When the first word or block is only partly accessible
 * nothing is reported as copied (no progress, like arm64 in 2021), and bytes
 * stored by a block that faulted midway lie beyond the reported count.
 * Hook: include/copy_template.S, .Lfix_retry.
 */

#define CF_MUTANT_NO_PROGRESS_PARTIAL_WORD 1
#include "../copy_user.S"
