/* SPDX-License-Identifier: MIT */
#include "trap.h"

#include "call.h"
#include "sys.h"
#include "util.h"

/* Kernel ABI structures for RISC-V (asm-generic signal ABI, no sa_restorer). */
struct k_sigaction {
	void (*handler)(int, void *, void *);
	unsigned long flags;
	uint64_t mask;
};

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

/* struct ucontext: mcontext starts 16-aligned after a 1024-bit sigmask area;
 * its first words are pc, then x1..x31. */
struct k_ucontext {
	unsigned long flags;
	void *link;
	struct k_stack stack;
	uint64_t sigmask;
	uint8_t unused[1024 / 8 - sizeof(uint64_t)];
	unsigned long gregs[32] __attribute__((aligned(16))); /* [0] = pc, [i] = xi */
};
_Static_assert(__builtin_offsetof(struct k_ucontext, gregs) == (sizeof(long) == 8 ? 176 : 160),
	       "riscv ucontext layout");

#define K_SA_SIGINFO 0x4ul
#define K_SA_ONSTACK 0x08000000ul
#define K_SA_RESTART 0x10000000ul
#define REG_PC 0
#define REG_SP 2

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
	uc->gregs[REG_PC] = (unsigned long)cf_call_unwind;
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
	uintptr_t pc = uc->gregs[REG_PC];
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
		ended_by(c, sig, si->code, pc, addr);
		abandon(uc, c, CF_CALL_CRASHED);
		return;
	}
	size_t entry = 0;
	uintptr_t fixup = cf_extable_lookup(trap_table, pc, &entry);
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
	uc->gregs[REG_PC] = fixup;
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
	if (++watched_ticks < CF_WATCHDOG_TICKS || in_trampoline(uc->gregs[REG_PC]))
		return;
	watched_ticks = 0;
	abandon(uc, c, CF_CALL_HUNG);
}

#if defined(__riscv) && !defined(CF_HOSTED)
static int set_handler(int sig, void (*fn)(int, void *, void *), unsigned long flags, uint64_t mask)
{
	struct k_sigaction sa = {fn, flags | K_SA_SIGINFO | K_SA_ONSTACK, mask};
	return (int)cf_syscall6(CF_NR_rt_sigaction, sig, (long)&sa, 0, 8, 0, 0);
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
#endif
