/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: register-width helpers of the kernel's asm/asm.h, for
 * both XLENs, under their kernel names (old PTR/SZPTR ones included).
 */
#ifndef CF_COMPAT_ASM_ASM_H
#define CF_COMPAT_ASM_ASM_H

#ifdef __ASSEMBLER__
#define __ASM_STR(x) x
#else
#define __ASM_STR(x) #x
#endif

#if __riscv_xlen == 64
#define __REG_SEL(a, b) __ASM_STR(a)
#else
#define __REG_SEL(a, b) __ASM_STR(b)
#endif

#define REG_L __REG_SEL(ld, lw)
#define REG_S __REG_SEL(sd, sw)
#define REG_SC __REG_SEL(sc.d, sc.w)
#define REG_AMOSWAP_AQ __REG_SEL(amoswap.d.aq, amoswap.w.aq)
#define REG_ASM __REG_SEL(.dword, .word)
#define SZREG __REG_SEL(8, 4)
#define LGREG __REG_SEL(3, 2)

#if __riscv_xlen == 64
#define RISCV_PTR .dword
#define RISCV_SZPTR 8
#define RISCV_LGPTR 3
#else
#define RISCV_PTR .word
#define RISCV_SZPTR 4
#define RISCV_LGPTR 2
#endif
#define PTR RISCV_PTR
#define SZPTR RISCV_SZPTR
#define LGPTR RISCV_LGPTR

#define RISCV_INT __ASM_STR(.word)
#define RISCV_SZINT __ASM_STR(4)
#define RISCV_LGINT __ASM_STR(2)
#define RISCV_SHORT __ASM_STR(.half)
#define RISCV_SZSHORT __ASM_STR(2)
#define RISCV_LGSHORT __ASM_STR(1)

#endif
