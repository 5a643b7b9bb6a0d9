/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: user mode cannot touch sstatus. The status CSR is mapped
 * onto fflags and SR_SUM (user access enable) onto its NX bit, so a routine's
 * `csrs CSR_STATUS, SR_SUM` still runs and still leaves a trace: the harness
 * clears fflags before each call and reports `uaccess-left-enabled` if NX is set
 * when the routine returns (a fixup that sets the bit instead of clearing it).
 */
#ifndef CF_COMPAT_ASM_CSR_H
#define CF_COMPAT_ASM_CSR_H

#define CF_SUM_BIT 0x1 /* fflags.NX */

#define SR_SUM CF_SUM_BIT
#define SR_PUM CF_SUM_BIT /* pre-1.10 name of the same switch */
#define SR_FS 0
#define SR_VS 0

#define CSR_SSTATUS 0x001 /* fflags */
#define CSR_STATUS CSR_SSTATUS
#define CSR_MSTATUS CSR_SSTATUS
/* The vector CSRs are user CSRs: the real numbers (uaccess_vector.S reads vstart). */
#define CSR_VSTART 0x008
#define CSR_VCSR 0x00f
#define CSR_VL 0xc20
#define CSR_VTYPE 0xc21
#define CSR_VLENB 0xc22

/* Files that spell the CSR by name. */
#define sstatus fflags

#endif
