/* SPDX-License-Identifier: MIT */
#include "target.h"

#include "records.h"

#define CF_STR_(x) #x
#define CF_STR(x) CF_STR_(x)

extern void CF_TARGET_SYMBOL(void);
/* Linker-made bounds; weak because a routine may have no table or no .fixup.
 * The build renames the routine's .text/.fixup so they have C-identifier names. */
extern const uint8_t __start___ex_table[] __attribute__((weak));
extern const uint8_t __stop___ex_table[] __attribute__((weak));
extern const uint8_t __start_cf_target_text[] __attribute__((weak));
extern const uint8_t __stop_cf_target_text[] __attribute__((weak));
extern const uint8_t __start_cf_target_fixup[] __attribute__((weak));
extern const uint8_t __stop_cf_target_fixup[] __attribute__((weak));
extern const uint8_t __start_cf_target_data[] __attribute__((weak));
extern const uint8_t __stop_cf_target_data[] __attribute__((weak));

const struct cf_target cf_target = {
	.name = CF_TARGET_NAME,
	.symbol = CF_STR(CF_TARGET_SYMBOL),
	.kind = CF_TARGET_KIND,
	.entry = CF_TARGET_SYMBOL,
	.table = {CF_TARGET_EXTABLE, __start___ex_table, __stop___ex_table},
	.text_start = __start_cf_target_text,
	.text_end = __stop_cf_target_text,
	.fixup_start = __start_cf_target_fixup,
	.fixup_end = __stop_cf_target_fixup,
	.data_start = __start_cf_target_data,
	.data_end = __stop_cf_target_data,
};
