/* SPDX-License-Identifier: MIT */
#include "trap.h"

#include "call.h"
#include "sys.h"
#include "util.h"

/* The kernel's signal ABI that every architecture shares (arch_frame.h has the rest). */
struct k_siginfo {
	int signo, err, code; /* code: si_code (why: ILL_ILLOPC, TRAP_BRKPT, BUS_ADRALN...) */
	union {
		void *addr; /* SIGSEGV/SIGBUS: first faulting byte */
		long align;
	} u;
};

struct k_stack {
	void *sp;
	int flags;
	unsigned long size;
};

#include "arch_frame.h"
#ifndef CF_UC_TO_HARNESS
#define CF_UC_TO_HARNESS(uc) ((void)(uc)) /* the trampoline runs in the routine's own state */
#endif

#define K_SA_SIGINFO 0x4ul
#define K_SA_ONSTACK 0x08000000ul
#define K_SA_RESTART 0x10000000ul

struct cf_call *volatile cf_active_call;

static const struct cf_extable *trap_table;
static uint64_t *trap_hits;
static size_t trap_hit_slots;
static uint8_t alt_stack[64 * 1024] __attribute__((aligned(16)));

static int in_trampoline(uintptr_t pc)
{
	return pc >= (uintptr_t)cf_call_begin && pc < (uintptr_t)cf_call_end;
}

static void abandon(struct k_ucontext *uc, struct cf_call *c, uintptr_t status)
{
	c->status = status;
	CF_UC_PC(uc) = (unsigned long)cf_call_unwind;
	CF_UC_TO_HARNESS(uc);
}

/*
 * The signal that ends the call (a crash, or a fault no entry covers) is what a report
 * must show: it replaces the first fault's pc, address and signal (a fault handled
 * before it led, through its fixup, to where the call ended).
 */
static void ended_by(struct cf_call *c, int sig, int code, uintptr_t pc, uintptr_t addr)
{
	c->signal = (uint32_t)sig;
	c->si_code = code;
	c->fault_pc = pc;
	c->fault_addr = addr;
	c->fixup_pc = 0;
}

/* The fault the call just took (c->faults counts it already), in the trail. */
static void trail(struct cf_call *c, uintptr_t pc, uintptr_t addr, uintptr_t fixup)
{
	uint32_t i = c->faults - 1;
	if (i >= CF_FAULT_TRAIL)
		i = CF_FAULT_TRAIL - 1; /* the last slot follows the latest */
	c->trail_pc[i] = pc;
	c->trail_addr[i] = addr;
	c->trail_fixup[i] = fixup;
}

static void die(const char *what, uintptr_t pc, uintptr_t addr)
{
	cf_err("copyfuzz executor: internal ");
	cf_err(what);
	cf_err(" at pc ");
	cf_err_hex(pc);
	cf_err(" addr ");
	cf_err_hex(addr);
	cf_err("\n");
	cf_exit(3);
}

static void on_sync_signal(int sig, void *si_, void *uc_)
{
	struct k_siginfo *si = si_;
	struct k_ucontext *uc = uc_;
	struct cf_call *c = cf_active_call;
	uintptr_t pc = CF_UC_PC(uc);
	uintptr_t addr = (uintptr_t)si->u.addr;

	if (!c || in_trampoline(pc))
		die(sig == CF_SIGSEGV || sig == CF_SIGBUS ? "fault" : "signal", pc, addr);
	if (c->faults++ == 0) {
		c->fault_pc = pc;
		c->fault_addr = addr;
		c->signal = (uint32_t)sig;
		c->si_code = si->code;
	}
	if (sig != CF_SIGSEGV && sig != CF_SIGBUS) {
		trail(c, pc, addr, 0);
		ended_by(c, sig, si->code, pc, addr);
		abandon(uc, c, CF_CALL_CRASHED);
		return;
	}
	size_t entry = 0;
	uintptr_t fixup = cf_extable_lookup(trap_table, pc, &entry);
	trail(c, pc, addr, fixup);
	if (!fixup) {
		ended_by(c, sig, si->code, pc, addr);
		abandon(uc, c, CF_CALL_UNHANDLED);
		return;
	}
	if (c->faults == 1)
		c->fixup_pc = fixup;
	if (trap_hits && entry < trap_hit_slots)
		trap_hits[entry]++;
	if (c->faults > CF_FAULT_LOOP_LIMIT) {
		abandon(uc, c, CF_CALL_HUNG);
		return;
	}
	CF_UC_PC(uc) = fixup;
}

static uint64_t watched_seq;
static uint32_t watched_ticks;
#define CF_WATCHDOG_TICKS 4

static void on_alarm(int sig, void *si, void *uc_)
{
	(void)sig, (void)si;
	struct k_ucontext *uc = uc_;
	struct cf_call *c = cf_active_call;
	if (!c || c->seq != watched_seq) {
		watched_seq = c ? c->seq : 0;
		watched_ticks = 0;
		return;
	}
	if (++watched_ticks < CF_WATCHDOG_TICKS || in_trampoline(CF_UC_PC(uc)))
		return;
	watched_ticks = 0;
	abandon(uc, c, CF_CALL_HUNG);
}

static int set_handler(int sig, void (*fn)(int, void *, void *), unsigned long flags, uint64_t mask)
{
	return cf_sigaction(sig, fn, flags | K_SA_SIGINFO | K_SA_ONSTACK, mask);
}

int cf_trap_init(const struct cf_extable *table, uint32_t timeout_ms, uint64_t *extable_hits,
		 size_t hit_slots)
{
	trap_table = table;
	trap_hits = extable_hits;
	trap_hit_slots = hit_slots;
	struct k_stack ss = {alt_stack, 0, sizeof(alt_stack)};
	if (cf_syscall3(CF_NR_sigaltstack, &ss, 0, 0) != 0)
		return -1;
	/* The watchdog must not interrupt a fault handler half-way. */
	uint64_t no_alarm = 1ull << (CF_SIGALRM - 1);
	static const int sync[] = {CF_SIGSEGV, CF_SIGBUS, CF_SIGILL, CF_SIGFPE, CF_SIGTRAP};
	for (unsigned i = 0; i < sizeof(sync) / sizeof(sync[0]); i++)
		if (set_handler(sync[i], on_sync_signal, 0, no_alarm) != 0)
			return -1;
	if (set_handler(CF_SIGALRM, on_alarm, K_SA_RESTART, 0) != 0)
		return -1;
	uint32_t tick_us = timeout_ms * 1000u / CF_WATCHDOG_TICKS;
	if (tick_us == 0)
		tick_us = 1000;
	long itv[4] = {(long)(tick_us / 1000000u), (long)(tick_us % 1000000u),
		       (long)(tick_us / 1000000u), (long)(tick_us % 1000000u)};
	return cf_syscall3(CF_NR_setitimer, 0 /* ITIMER_REAL */, itv, 0) == 0 ? 0 : -1;
}
