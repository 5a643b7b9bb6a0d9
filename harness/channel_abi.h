/* SPDX-License-Identifier: MIT */
/*
 * channel_abi.h - the shared-memory handshake between the fuzz driver (fuzz/
 * executor_channel.c, native) and `executor serve --channel-fd N` (harness/executor.c,
 * under qemu-user): one case there and one result back per input without a pipe.
 *
 * The driver creates a memfd of this block (one per process: a process forked from the
 * driver, as AFL++'s persistent children are, makes its own, so an executor left over
 * from another process never posts into this one's; within a process a stopped executor
 * is reaped before the next starts) and hands its fd over at a random number; the
 * executor maps it and closes the fd, so a routine writing to every descriptor cannot
 * reach it. The seal key still comes first on --cases-fd (never here,
 * never on the command line), and every result posted here carries its seal
 * (records.h: cf_seal, keyed by the stream position), so bytes the executor did not
 * write - a routine scribbling on the block, a half-written record - are never taken
 * for an answer.
 *
 * `turn` is the one word both sides wait on (a futex: qemu-user passes a guest's
 * FUTEX_WAIT/FUTEX_WAKE to the host on the same shared page, so the two processes meet
 * on one host futex keyed by that page whatever address each maps it at):
 *   0          the executor has started, no case yet
 *   2k + 1     the driver posted case k (in `c`)
 *   2k + 2     the executor posted case k's result (in `r`)
 * modulo 2^31; bit 31 (CF_TURN_DEAD) is set by the driver's SIGCHLD handler once the
 * executor's process has ended, to wake the driver's own wait (which then asks the
 * kernel, so the bit alone, a routine's doing say, is no death); the executor ignores it. Each side stores the case or result, then
 * `turn` with release order; the other loads `turn` with acquire order, then the record
 * (C11 __atomic built-ins on both sides: fences on RISC-V, kept by qemu's translation).
 * A side that goes to sleep first says so in its `*_waiting` word (then a full fence,
 * then a last look at `turn`), and the other side makes the FUTEX_WAKE system call only
 * when that word is set: a handoff where the other side is still awake costs no call.
 * Before sleeping, a side looks at `turn` up to `spin` times (the driver sets it: 0 when
 * both processes share one CPU, where spinning only delays the other).
 *
 * Fixed-width fields only: RV32 and RV64 guests share it with the x86-64 host.
 */
#ifndef CF_CHANNEL_ABI_H
#define CF_CHANNEL_ABI_H

#include <stdint.h>

#include "records.h"

#define CF_CHANNEL_MAGIC 0x31484643u /* "CFH1": the executor has mapped the block */
#define CF_TURN_MASK 0x7fffffffu
#define CF_TURN_DEAD 0x80000000u

struct cf_channel_shm {
	uint32_t turn; /* the futex word (above) */
	uint32_t exec_waiting; /* the executor sleeps (or is about to) on turn */
	uint32_t driver_waiting; /* the driver sleeps (or is about to) on turn */
	uint32_t magic; /* CF_CHANNEL_MAGIC, stored by the executor once mapped */
	uint32_t spin; /* looks at turn before a FUTEX_WAIT, set by the driver */
	uint32_t reserved[11]; /* the header fills one cache line */
	struct cf_case c; /* the case posted by the driver */
	struct cf_result r; /* its result, sealed, posted by the executor */
};

_Static_assert(sizeof(struct cf_channel_shm) == 64 + 64 + 256, "cf_channel_shm layout");

/* The next turn value after t, skipping the DEAD bit. */
static inline uint32_t cf_turn_next(uint32_t t)
{
	return (t + 1) & CF_TURN_MASK;
}

#endif /* CF_CHANNEL_ABI_H */
