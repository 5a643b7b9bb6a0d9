/* SPDX-License-Identifier: MIT */
/*
 * extable.h - looking a faulting PC up in the routine's exception table.
 *
 * Three layouts exist in kernels (docs/formats.md):
 *  - absolute: { unsigned long insn, fixup; } (RISC-V through about 5.17, ARM,
 *    arm64 through 4.5);
 *  - relative: { int insn, fixup; short type, data; }, each offset relative
 *    to the address of its own field (RISC-V 5.18 onward, arm64 5.16 onward);
 *  - relative pairs: { int insn, fixup; } (arm64 4.6 to 5.15).
 * The build tells them apart from the routine's object file (the relocations
 * against __ex_table) and records the answer in the target descriptor.
 */
#ifndef CF_EXTABLE_H
#define CF_EXTABLE_H

#include <stddef.h>
#include <stdint.h>

enum cf_extable_format {
	CF_EXTABLE_NONE = 0,
	CF_EXTABLE_ABS = 1,
	CF_EXTABLE_REL = 2,
	CF_EXTABLE_REL8 = 3,
};

struct cf_extable {
	enum cf_extable_format format;
	const uint8_t *start, *stop; /* the __ex_table section */
};

/* Entries in the table (its byte size divided by the entry size). */
size_t cf_extable_entries(const struct cf_extable *t);
/* Entry i's instruction and fixup addresses. */
void cf_extable_entry(const struct cf_extable *t, size_t i, uintptr_t *insn, uintptr_t *fixup);
/* The fixup for a faulting pc, or 0 when the table has no entry for it;
 * *index (if not NULL) receives the entry's index. */
uintptr_t cf_extable_lookup(const struct cf_extable *t, uintptr_t pc, size_t *index);

#endif /* CF_EXTABLE_H */
