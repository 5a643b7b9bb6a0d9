/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the configuration every 32-bit ARM kernel has (arch/arm/Kconfig: ARM);
 * every other CONFIG_* stays off unless given with -D.
 */
#ifndef CF_COMPAT_GENERATED_AUTOCONF_H
#define CF_COMPAT_GENERATED_AUTOCONF_H

#ifndef CONFIG_ARM
#define CONFIG_ARM 1
#endif

#endif
