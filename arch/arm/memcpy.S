/* SPDX-License-Identifier: MIT
 *
 * memcpy.S - memcpy for 32-bit ARM: the copy template with no user access.
 *
 * copyfuzz: symbol=memcpy
 * copyfuzz: kind=memcpy
 * copyfuzz: profile=exact
 * copyfuzz: about=the copy template as memcpy: ldm/stm blocks, shifting misaligned path, no fixups
 *
 * void *memcpy(void *dst, const void *src, size_t n); returns dst.
 * include/copy_template.S with CF_TEMPLATE_MEMCPY: the same code as the user copies,
 * with plain loads and stores and no exception-table entries.
 */

#define CF_TEMPLATE_MEMCPY 1
#define CF_NO_EXTABLE 1
#include "include/cf_asm.h"

	.text
CF_FUNC_START(memcpy)
#include "include/copy_template.S"
CF_FUNC_END(memcpy)
