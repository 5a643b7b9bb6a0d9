/* SPDX-License-Identifier: MIT */
/*
 * trap.h - what happens when the routine faults, crashes or never returns.
 *
 * SIGSEGV/SIGBUS: the faulting pc is looked up in the routine's exception
 * table; with an entry, the routine resumes at its fixup (as the kernel's
 * fixup_exception would); without one the call is abandoned as an unhandled
 * fault. More than CF_FAULT_LOOP_LIMIT faults in one call is a fixup that
 * keeps faulting: a hang. SIGILL/SIGFPE/SIGTRAP abandon the call as a crash.
 * A periodic SIGALRM is the watchdog: a call that spans several ticks with
 * no new call started is abandoned as a hang. Handlers run on their own
 * stack, so a routine that wrecked sp is still handled.
 */
#ifndef CF_TRAP_H
#define CF_TRAP_H

#include <stdint.h>

#include "extable.h"

#define CF_FAULT_LOOP_LIMIT 256

/* Install the handlers and start the watchdog (timeout_ms per call). 0 or -1.
 * With extable_hits, each fixup taken through entry i adds 1 to extable_hits[i]
 * (for i < hit_slots): the plugin's shared memory, read by copyfuzz cov. */
int cf_trap_init(const struct cf_extable *table, uint32_t timeout_ms, uint64_t *extable_hits,
		 size_t hit_slots);

#endif /* CF_TRAP_H */
