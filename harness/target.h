/* SPDX-License-Identifier: MIT */
/*
 * target.h - the one routine this executor was linked with.
 * target.c is compiled per routine with -DCF_TARGET_* from the Makefile.
 */
#ifndef CF_TARGET_H
#define CF_TARGET_H

#include <stdint.h>

#include "extable.h"

struct cf_target {
	const char *name; /* "riscv/copy_user" */
	const char *symbol; /* "__asm_copy_to_user" */
	uint16_t kind; /* enum cf_kind */
	void (*entry)(void);
	struct cf_extable table;
	const uint8_t *text_start, *text_end; /* the routine object's code */
	const uint8_t *fixup_start, *fixup_end; /* its .fixup section, if any */
	const uint8_t *data_start, *data_end; /* its own data (cf_target_data), if any */
};

extern const struct cf_target cf_target;

#endif /* CF_TARGET_H */
