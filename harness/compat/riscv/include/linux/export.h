/* SPDX-License-Identifier: MIT */
/* copyfuzz compat: module exports mean nothing in a userspace harness. */
#ifndef CF_COMPAT_LINUX_EXPORT_H
#define CF_COMPAT_LINUX_EXPORT_H
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define EXPORT_SYMBOL_NS(sym, ns)
#define EXPORT_SYMBOL_NS_GPL(sym, ns)
#define EXPORT_SYMBOL_NOKASAN(sym)
#define _ASM_NOKPROBE(sym)
#define ASM_NOKPROBE(sym)
#endif
