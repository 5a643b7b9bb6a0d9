/* SPDX-License-Identifier: MIT */
#include "extable.h"

struct rel_entry {
	int32_t insn, fixup;
	int16_t type, data;
};

struct rel8_entry {
	int32_t insn, fixup;
};

struct abs_entry {
	uintptr_t insn, fixup;
};

static size_t entry_size(enum cf_extable_format f)
{
	switch (f) {
	case CF_EXTABLE_ABS:
		return sizeof(struct abs_entry);
	case CF_EXTABLE_REL:
		return sizeof(struct rel_entry);
	case CF_EXTABLE_REL8:
		return sizeof(struct rel8_entry);
	default:
		return 0;
	}
}

size_t cf_extable_entries(const struct cf_extable *t)
{
	size_t sz = entry_size(t->format);
	return sz && t->stop > t->start ? (size_t)(t->stop - t->start) / sz : 0;
}

void cf_extable_entry(const struct cf_extable *t, size_t i, uintptr_t *insn, uintptr_t *fixup)
{
	if (t->format == CF_EXTABLE_ABS) {
		const struct abs_entry *e = (const struct abs_entry *)t->start + i;
		*insn = e->insn;
		*fixup = e->fixup;
	} else {
		/* Both relative layouts start { int insn, fixup; }: offsets from each field. */
		const int32_t *e = (const int32_t *)(t->start + i * entry_size(t->format));
		*insn = (uintptr_t)&e[0] + (intptr_t)e[0];
		*fixup = (uintptr_t)&e[1] + (intptr_t)e[1];
	}
}

/*
 * A linear scan: tables hold tens of entries, a fault costs far more than
 * the scan, and unsorted tables (several .S files, .fixup sections) work.
 */
uintptr_t cf_extable_lookup(const struct cf_extable *t, uintptr_t pc, size_t *index)
{
	size_t n = cf_extable_entries(t);
	for (size_t i = 0; i < n; i++) {
		uintptr_t insn, fixup;
		cf_extable_entry(t, i, &insn, &fixup);
		if (insn == pc) {
			if (index)
				*index = i;
			return fixup;
		}
	}
	return 0;
}
