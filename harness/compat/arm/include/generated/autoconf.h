/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: the configuration every 32-bit ARM kernel has (arch/arm/Kconfig: ARM);
 * every other CONFIG_* stays off unless given with -D. Included before the file being
 * checked, as the kernel's `-include linux/kconfig.h` includes generated/autoconf.h. ARM
 * kernels also assemble every file with `-include asm/unified.h` and
 * -D__LINUX_ARM_ARCH__=N (arch/arm/Makefile): both come from here, N = 7 as the harness
 * builds for ARMv7-A.
 */
#ifndef CF_COMPAT_GENERATED_AUTOCONF_H
#define CF_COMPAT_GENERATED_AUTOCONF_H

#ifndef CONFIG_ARM
#define CONFIG_ARM 1
#endif
#ifndef __LINUX_ARM_ARCH__
#define __LINUX_ARM_ARCH__ 7
#endif

#include <asm/unified.h>

#endif
