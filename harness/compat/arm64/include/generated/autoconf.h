/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the configuration every arm64 kernel has (arch/arm64/Kconfig: ARM64,
 * which selects 64BIT); every other CONFIG_* stays off unless given with -D. Included
 * before the file being checked, as the kernel's `-include linux/kconfig.h` includes
 * generated/autoconf.h.
 */
#ifndef CF_COMPAT_GENERATED_AUTOCONF_H
#define CF_COMPAT_GENERATED_AUTOCONF_H

#ifndef CONFIG_ARM64
#define CONFIG_ARM64 1
#endif
#ifndef CONFIG_64BIT
#define CONFIG_64BIT 1
#endif

#endif
