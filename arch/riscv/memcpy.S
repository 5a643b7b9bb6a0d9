/* SPDX-License-Identifier: MIT
 *
 * memcpy.S - memcpy from the same core as copy_user.S, without fixups.
 *
 * copyfuzz: symbol=memcpy
 * copyfuzz: kind=memcpy
 * copyfuzz: profile=exact
 * copyfuzz: about=the copy_user core built as memcpy: no exception-table entries, returns dst
 *
 * void *memcpy(void *dst, const void *src, size_t n); __memcpy is an alias.
 * Any fault in here is a bug (the harness reports it as unhandled): the
 * core must never touch a byte outside [src, src+n) / [dst, dst+n) on
 * another page. Algorithm and register plan: include/copy_template.S.
 */

/* memcpy: UA() emits bare instructions and the core returns the dst. */
#define CF_NO_EXTABLE 1
#define CF_TEMPLATE_MEMCPY 1
#include "include/cf_asm.h"

	.text
CF_FUNC_START(memcpy)
#include "include/copy_template.S"
CF_FUNC_END(memcpy)
CF_FUNC_ALIAS(__memcpy, memcpy)
