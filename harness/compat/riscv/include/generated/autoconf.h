/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the configuration every RISC-V kernel of the width being built has.
 * arch/riscv/Kconfig makes RISCV always y and the base-ISA choice ARCH_RV64I (which
 * selects 64BIT) or ARCH_RV32I (which selects 32BIT); nothing else is on in every build,
 * so every other CONFIG_* stays off unless given with -D. The tool includes this file
 * before the file being checked, as the kernel's `-include linux/kconfig.h` includes
 * generated/autoconf.h; the width comes from the compiler (-march), so RV32 builds see
 * CONFIG_32BIT and never CONFIG_64BIT.
 */
#ifndef CF_COMPAT_GENERATED_AUTOCONF_H
#define CF_COMPAT_GENERATED_AUTOCONF_H

#ifndef CONFIG_RISCV
#define CONFIG_RISCV 1
#endif

#if __riscv_xlen == 64
#ifndef CONFIG_64BIT
#define CONFIG_64BIT 1
#endif
#ifndef CONFIG_ARCH_RV64I
#define CONFIG_ARCH_RV64I 1
#endif
#elif __riscv_xlen == 32
#ifndef CONFIG_32BIT
#define CONFIG_32BIT 1
#endif
#ifndef CONFIG_ARCH_RV32I
#define CONFIG_ARCH_RV32I 1
#endif
#else
#error "copyfuzz compat: __riscv_xlen is neither 32 nor 64"
#endif

#endif
