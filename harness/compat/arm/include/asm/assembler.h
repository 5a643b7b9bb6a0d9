/* SPDX-License-Identifier: MIT */
/*
 * copyfuzz compat: what ARM copy routines of every vintage take from the kernel's
 * asm/assembler.h, with a userspace meaning. Exception-table entries are absolute
 * { .long insn, fixup } pairs, the only layout ARM kernels have had (the harness reads
 * them as extable=abs).
 */
#ifndef CF_COMPAT_ASM_ASSEMBLER_H
#define CF_COMPAT_ASM_ASSEMBLER_H

#include <asm/cache.h>
#include <asm/domain.h>
#include <asm/uaccess-asm.h>
#include <asm/unified.h>
#include <linux/linkage.h>

#ifdef __ASSEMBLER__
/* PLD(x): prefetch hints, kept on ARMv5+ (here: ARMv7); they never fault. */
#if __LINUX_ARM_ARCH__ >= 5
#define PLD(code...) code
#else
#define PLD(code...)
#endif

/* CALGN(x): cache-line alignment of the destination, only on Feroceon. */
#ifdef CONFIG_CPU_FEROCEON
#define CALGN(code...) code
#else
#define CALGN(code...)
#endif

/*
 * Shifts that move bytes towards lower addresses (pull) and higher (push), little
 * endian. lspull/lspush since 3.12; pull/push before (those names also rename the
 * template's own macro arguments alike, which is harmless, but a `push {...}`
 * instruction in a file becomes invalid, as it did in kernels of that time).
 */
#define lspull lsr
#define lspush lsl
#define pull lsr
#define push lsl

/* 2.6: LOADREGS(fd, sp!, {r4, pc}) is ldmfd sp!, {r4, pc}. */
#define LOADREGS(cond, base, reglist...) ldm##cond base, reglist

/* USERL(fixup, insn): insn with a table entry sending its fault to fixup (5.x+); USER(insn)
 * sends it to the local label 9001 ahead. */
#define USERL(l, x...) \
9999:	x; \
	.pushsection __ex_table, "a"; \
	.balign 4; \
	.long 9999b, l; \
	.popsection
#define USER(x...) USERL(9001f, x)

/* SMP/UP alternatives: a uniprocessor build unless -D CONFIG_SMP (then the SMP side,
 * never patched: the CPU is taken to be SMP). */
#ifdef CONFIG_SMP
#define ALT_SMP(instr...) instr
#define ALT_UP(instr...)
#define ALT_UP_B(label)
#else
#define ALT_SMP(instr...)
#define ALT_UP(instr...) instr
#define ALT_UP_B(label) b label
#endif

	/* Speculation and instruction barriers: nothing a copy computes depends on them. */
	.macro csdb
	.endm
	.macro instr_sync
	isb
	.endm

	/* ret{cond} reg: return through reg. */
	.irp c,,eq,ne,cs,cc,mi,pl,vs,vc,hi,ls,ge,lt,gt,le,hs,lo
	.macro ret\c, reg
	bx\c \reg
	.endm
	.endr

	/*
	 * ldrusr/strusr reg, ptr, inc[, cond][, rept][, abort]: rept user accesses of inc
	 * (1 or 4) bytes, post-indexed, each with a table entry to abort (default 9001f).
	 * Unprivileged (ldrt/strt) with CONFIG_CPU_USE_DOMAINS, plain otherwise (TUSER).
	 */
	.macro cf_usracc, instr, reg, ptr, inc, cond, rept, abort, t = TUSER()
	.rept \rept
9999:
	.if \inc == 1
	\instr\()b\t\()\cond \reg, [\ptr], #\inc
	.elseif \inc == 4
	\instr\t\()\cond \reg, [\ptr], #\inc
	.else
	.error "ldrusr/strusr: inc must be 1 or 4"
	.endif
	.pushsection __ex_table, "a"
	.balign 4
	.long 9999b, \abort
	.popsection
	.endr
	.endm

	.macro strusr, reg, ptr, inc, cond = al, rept = 1, abort = 9001f
	cf_usracc str, \reg, \ptr, \inc, \cond, \rept, \abort
	.endm

	.macro ldrusr, reg, ptr, inc, cond = al, rept = 1, abort = 9001f
	cf_usracc ldr, \reg, \ptr, \inc, \cond, \rept, \abort
	.endm
#endif

#endif
