/* SPDX-License-Identifier: MIT */
/*
 * call.h - calling the routine under test through a checking trampoline.
 *
 * cf_call_target() (harness/arch/<arch>/call.S) saves the harness's callee-saved
 * registers, loads known values into the routine's callee-saved set (s_in[]: s0-s11 on
 * RISC-V, x19-x29 and x18 on arm64), calls c->fn(c->args[0..2]), and records that set,
 * sp, gp, tp and the return address as the routine left them (an architecture without
 * gp or tp records the same value in and out). It also clears the architecture's
 * stand-in for user-access state before the call and records it after
 * (uaccess_out; CF_UACCESS_ON in arch_sys.h): kernel files built against the compat
 * headers (harness/compat) switch user access on it, so a routine that returns with it
 * still on is visible. The signal handlers can abandon a call (unhandled fault, crash,
 * hang) by resuming at cf_call_unwind with any register state: the unwind path restores
 * the harness's own stack and registers from this structure.
 */
#ifndef CF_CALL_H
#define CF_CALL_H

/* Field offsets in SZREG units, shared with call.S. */
#define CF_CALL_FN 0
#define CF_CALL_ARGS 1 /* 3 words */
#define CF_CALL_RET 4
#define CF_CALL_SAVED_SP 5
#define CF_CALL_GP_IN 6
#define CF_CALL_TP_IN 7
#define CF_CALL_S_IN 8 /* 12 words */
#define CF_CALL_S_OUT 20 /* 12 words */
#define CF_CALL_SP_OUT 32
#define CF_CALL_GP_OUT 33
#define CF_CALL_TP_OUT 34
#define CF_CALL_RA_OUT 35
#define CF_CALL_STATUS 36 /* one word: enum cf_call_status */
#define CF_CALL_UACCESS_OUT 37 /* the user-access stand-in on return (CF_UACCESS_ON) */
#define CF_CALL_WORDS 38

/* c->status */
#define CF_CALL_RUNNING 0
#define CF_CALL_RETURNED 1
#define CF_CALL_UNHANDLED 2 /* fault at a pc the table does not know */
#define CF_CALL_CRASHED 3 /* any other synchronous signal */
#define CF_CALL_HUNG 4 /* watchdog, or a fault loop through a fixup */

#ifndef __ASSEMBLER__
#include <stdint.h>

#include "records.h" /* CF_FAULT_TRAIL */

struct cf_call {
	uintptr_t fn;
	uintptr_t args[3];
	uintptr_t ret;
	uintptr_t saved_sp, gp_in, tp_in;
	uintptr_t s_in[12], s_out[12];
	uintptr_t sp_out, gp_out, tp_out, ra_out;
	volatile uintptr_t status;
	uintptr_t uaccess_out;
	/* C-only from here: filled by the signal handlers */
	uint64_t seq; /* bumped per call: the watchdog's notion of progress */
	uint32_t faults;
	uint32_t signal;
	int32_t si_code; /* of `signal`: the kernel's siginfo code */
	uintptr_t fault_pc, fault_addr, fixup_pc;
	/* every fault in order: the first CF_FAULT_TRAIL - 1, the last in the final slot */
	uintptr_t trail_pc[CF_FAULT_TRAIL], trail_addr[CF_FAULT_TRAIL], trail_fixup[CF_FAULT_TRAIL];
};

_Static_assert(__builtin_offsetof(struct cf_call, status) == CF_CALL_STATUS * sizeof(uintptr_t),
	       "call.S offsets match struct cf_call");

/* The active call, or NULL: set and cleared by call.S itself. */
extern struct cf_call *volatile cf_active_call;

void cf_call_target(struct cf_call *c);

/* Labels in call.S: the return point the routine must come back to, the
 * unwind entry for signal handlers, and the trampoline's own extent. */
extern char cf_call_return[], cf_call_unwind[], cf_call_begin[], cf_call_end[];

#endif
#endif /* CF_CALL_H */
