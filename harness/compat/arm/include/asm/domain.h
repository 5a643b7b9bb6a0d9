/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: TUSER(insn) is the unprivileged form (ldrt, strt, ldrbt, strbt) with
 * -D CONFIG_CPU_USE_DOMAINS, the plain one without, as in the kernel; T(insn) is its older
 * name (2.6-3.x). Both forms run at user level as they are. The domains themselves
 * (DACR) are privileged: asm/uaccess-asm.h says how switching them is modelled.
 */
#ifndef CF_COMPAT_ASM_DOMAIN_H
#define CF_COMPAT_ASM_DOMAIN_H

#ifdef __ASSEMBLER__
#ifdef CONFIG_CPU_USE_DOMAINS
#define TUSER(instr) instr##t
#else
#define TUSER(instr) instr
#endif
#define T(instr) TUSER(instr)
#endif

#endif
