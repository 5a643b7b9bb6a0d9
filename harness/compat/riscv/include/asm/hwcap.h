/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: ISA-extension ids used as ALTERNATIVE() arguments. The
 * values only need to be distinct numbers: alternatives are resolved at
 * build time here (asm/alternative-macros.h).
 */
#ifndef CF_COMPAT_ASM_HWCAP_H
#define CF_COMPAT_ASM_HWCAP_H
#define RISCV_ISA_EXT_a ('a' - 'a')
#define RISCV_ISA_EXT_c ('c' - 'a')
#define RISCV_ISA_EXT_d ('d' - 'a')
#define RISCV_ISA_EXT_f ('f' - 'a')
#define RISCV_ISA_EXT_h ('h' - 'a')
#define RISCV_ISA_EXT_i ('i' - 'a')
#define RISCV_ISA_EXT_m ('m' - 'a')
#define RISCV_ISA_EXT_q ('q' - 'a')
#define RISCV_ISA_EXT_v ('v' - 'a')
#define RISCV_ISA_EXT_SSCOFPMF 26
#define RISCV_ISA_EXT_SSTC 27
#define RISCV_ISA_EXT_SVINVAL 28
#define RISCV_ISA_EXT_SVPBMT 29
#define RISCV_ISA_EXT_ZBB 30
#define RISCV_ISA_EXT_ZICBOM 31
#define RISCV_ISA_EXT_ZIHINTPAUSE 32
#define RISCV_ISA_EXT_SVNAPOT 33
#define RISCV_ISA_EXT_ZICBOZ 34
#define RISCV_ISA_EXT_SMAIA 35
#define RISCV_ISA_EXT_SSAIA 36
#define RISCV_ISA_EXT_ZBA 37
#define RISCV_ISA_EXT_ZBS 38
#define RISCV_ISA_EXT_ZICNTR 39
#define RISCV_ISA_EXT_ZICSR 40
#define RISCV_ISA_EXT_ZIFENCEI 41
#define RISCV_ISA_EXT_ZIHPM 42
#define RISCV_ISA_EXT_ZVE32X 60
#define RISCV_ISA_EXT_ZVE32F 61
#define RISCV_ISA_EXT_ZVE64X 62
#define RISCV_ISA_EXT_ZVE64F 63
#define RISCV_ISA_EXT_ZVE64D 64
#define RISCV_ISA_EXT_ZICBOP 65
#define RISCV_ISA_EXT_MAX 128
#endif
