/* SPDX-License-Identifier: MIT */
/*
 * no_mte.h - the memory-tagging hooks of an architecture without tags (arch_sys.h
 * includes it): --granule is arm64's (MTE); the executor refuses it elsewhere.
 */
#ifndef CF_NO_MTE_H
#define CF_NO_MTE_H

#define CF_ARCH_HAS_MTE 0
#define CF_PROT_MTE 0

static inline int cf_mte_enable(void)
{
	return -1;
}

static inline void cf_mte_set_tags(uint8_t *lo, uint8_t *hi, unsigned tag)
{
	(void)lo, (void)hi, (void)tag;
}

static inline int cf_mte_tags_are(uintptr_t lo, uintptr_t hi, uintptr_t one_lo, uintptr_t one_hi)
{
	(void)lo, (void)hi, (void)one_lo, (void)one_hi;
	return 1;
}

#endif /* CF_NO_MTE_H */
