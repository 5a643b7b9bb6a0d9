/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: __stringify(x) makes a string of x after expanding it, as ALTERNATIVE()
 * arguments of 4.x arm64 files are written. */
#ifndef CF_COMPAT_LINUX_STRINGIFY_H
#define CF_COMPAT_LINUX_STRINGIFY_H
#define __stringify_1(x...) #x
#define __stringify(x...) __stringify_1(x)
#endif
