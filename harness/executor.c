/* SPDX-License-Identifier: MIT */
/*
 * executor.c - runs cases against the one linked routine (docs/executor.md).
 *
 * Per case: place src and dst in their arenas (moving buffers, not guard
 * pages), call the routine through the checking trampoline, let the oracle
 * classify what it did, and put back the destination bytes it touched. No
 * system call per case: the arenas stay mapped, the watchdog is a periodic
 * timer, and output is buffered.
 */
#include "arena.h"
#include "call.h"
#include "cases.h"
#include "channel_abi.h"
#include "exec_options.h"
#include "records.h"
#include "observe_abi.h"
#include "plugin_abi.h"
#include "ref.h"
#include "sys.h"
#include "target.h"
#include "trap.h"
#include "util.h"

#define PROGRESS_EVERY 8192

static struct cf_arena src_arena;
/* The destination's arena, and the pristine copy of its window: what this executor's
 * oracle compares with and puts back. Not static: tests/fixtures/hostile/hostile.S plays a
 * routine that finds them and writes to both alike, which only the fuzz driver's oracle
 * (computing the window from the case, place.h) or the plugin's memory audit can see. */
struct cf_arena cf_dst_arena;
uint8_t *cf_dst_image;
static struct cf_call call;
static struct cf_plugin_shm *plugin; /* --plugin-fd: shared with the QEMU plugin */
static int plugin_memcheck = 1; /* 0: --plugin-coverage-only (counts, no memory audit) */
static struct cf_observe_shm *observe; /* --observe-fd: for an oracle elsewhere */
static struct cf_control *control; /* --control-fd: which case is running, for the tool */
static int cases_fd; /* --cases-fd: the seal key, then (serve) case records */
/* --channel-fd: serve through this block instead of the pipes (channel_abi.h). Not static:
 * tests/fixtures/hostile/hostile.S plays a routine that finds it and scribbles on it. */
struct cf_channel_shm *cf_serve_channel;
static uint64_t seal_key[2], seal_seq;

/* "copyfuzz executor: <what><why>" and the usage; exit 2. */
static __attribute__((noreturn)) void usage_of(const char *what, const char *why)
{
	cf_err("copyfuzz executor: ");
	cf_err(what);
	cf_err(why);
	cf_err("\nusage: executor info | serve [--timeout-ms T] | sweep --max-len L [--min-len M]"
	       " [--profile linux|exact] [--random N --seed S [--random-max-len R]]"
	       " [--shard I/K] [--start ID] [--end ID] [--stop-mask MASK] [--max-hangs H]"
	       " [--timeout-ms T] [--bare] [--granule 16]\n"
	       "       serve, sweep: [--cases-fd N] [--records-fd N] [--control-fd N]\n"
	       "       serve: [--channel-fd N] (after the key on --cases-fd)\n"
	       "       any mode: [--plugin-fd N [--plugin-coverage-only]] (under qemu -plugin "
	       "cfplugin.so,fd=N) [--observe-fd N]\n");
	cf_exit(2);
}

static __attribute__((noreturn)) void usage(const char *why)
{
	usage_of("", why);
}

static __attribute__((noreturn)) void fail(const char *why)
{
	cf_err("copyfuzz executor: ");
	cf_err(why);
	cf_err("\n");
	cf_exit(3);
}

/* Map the plugin's memory and tell it where the routine's code is. */
static void attach_plugin(uint64_t fd)
{
	plugin = cf_mmap_shared_fd((int)fd, sizeof(*plugin));
	if (!plugin)
		fail("--plugin-fd: cannot map the plugin's shared memory");
	if (plugin->plugin_ready != CF_PLUGIN_MAGIC)
		fail("--plugin-fd: the QEMU plugin is not loaded on that fd "
		     "(run under qemu -plugin cfplugin.so,fd=N)");
	plugin->magic = CF_PLUGIN_MAGIC;
	plugin->version = CF_PLUGIN_VERSION;
	plugin->fixup_lo = (uintptr_t)cf_target.fixup_start;
	plugin->fixup_hi = (uintptr_t)cf_target.fixup_end;
	plugin->code_hi = (uintptr_t)cf_target.text_end;
	plugin->data_lo = (uintptr_t)cf_target.data_start;
	plugin->data_hi = (uintptr_t)cf_target.data_end;
	plugin->code_lo = (uintptr_t)cf_target.text_start; /* last: arms the plugin */
	/* The plugin mapped it when QEMU loaded it: as for the other fds, the mapping stays
	 * and a routine writing to every fd cannot reach it (nor a rerun's plugin). */
	cf_close((int)fd);
}

static void attach_control(uint64_t fd)
{
	control = cf_mmap_shared_fd((int)fd, sizeof(*control));
	if (!control)
		fail("--control-fd: cannot map the control block");
	cf_close((int)fd); /* the mapping stays; a routine writing to every fd cannot reach it */
	control->version = CF_CONTROL_VERSION;
	control->magic = CF_CONTROL_MAGIC;
}

/* The 16-byte seal key comes first on the case channel (never on the command line). */
static void read_key(void)
{
	uint8_t *p = (uint8_t *)seal_key;
	size_t have = 0;
	while (have < sizeof(seal_key)) {
		long got = cf_read(cases_fd, p + have, sizeof(seal_key) - have);
		if (got == -4 /* EINTR */)
			continue;
		if (got <= 0)
			fail("--cases-fd: the channel ended before the seal key");
		have += (size_t)got;
	}
}

/* Every record leaves sealed with its place in the stream (records.h). */
static void seal(void *rec, unsigned size)
{
	uint64_t s = cf_seal(seal_key, seal_seq++, rec, size);
	__builtin_memcpy((uint8_t *)rec + size - sizeof(s), &s, sizeof(s));
}

static void emit(void *rec, unsigned size)
{
	seal(rec, size);
	cf_out(rec, size);
}

static void attach_channel(uint64_t fd)
{
	cf_serve_channel = cf_mmap_shared_fd((int)fd, sizeof(*cf_serve_channel));
	if (!cf_serve_channel)
		fail("--channel-fd: cannot map the channel block");
	cf_close((int)fd); /* the mapping stays; a routine writing to every fd cannot reach it */
	__atomic_store_n(&cf_serve_channel->magic, CF_CHANNEL_MAGIC, __ATOMIC_RELEASE);
}

static void attach_observer(uint64_t fd)
{
	observe = cf_mmap_shared_fd((int)fd, sizeof(*observe));
	if (!observe)
		fail("--observe-fd: cannot map the observation block");
	observe->magic = CF_OBSERVE_MAGIC;
}

/* Copy out what the routine did, so another process can judge it too. */
static void publish(const struct cf_case *c, const struct cf_observed *o, const uint8_t *dst)
{
	observe->c = *c;
	observe->seq32 = (uint32_t)c->id;
	observe->outcome = o->outcome;
	observe->ret = o->ret;
	observe->regs_bad = o->regs_bad;
	observe->reg_got = o->reg_got;
	observe->uaccess_left_on = (uint64_t)o->uaccess_left_on;
	observe->lo = o->lo;
	observe->hi = o->hi;
	observe->dst_addr = (uintptr_t)dst;
	if (o->hi > o->lo) /* harness/libc.c's memcpy: a word at a time */
		__builtin_memcpy(observe->after, o->dst + o->lo, (size_t)(o->hi - o->lo));
}

/* --granule 16: MTE tag granules as fault boundaries (arch_sys.h); call.S reads it. */
uint32_t cf_mte_on;

static void setup(uint32_t timeout_ms)
{
	int extra = 0;
	if (cf_mte_on) {
		if (!CF_ARCH_HAS_MTE || cf_mte_enable() != 0)
			fail("--granule 16: this executor cannot tag memory (MTE: arm64, a CPU "
			     "with it)");
		extra = CF_PROT_MTE;
	}
	cf_dst_image = cf_mmap_anon(CF_ARENA_WINDOW, CF_PROT_RW);
	if (!cf_dst_image)
		fail("cannot map the canary image");
	if (cf_arena_init(&src_arena, CF_SRC_SEED, extra, 0) ||
	    cf_arena_init(&cf_dst_arena, CF_CANARY_SEED, extra, cf_dst_image))
		fail("cannot map the guard-page arenas");
	/* Tagged windows are filled whole now: a fill later could meet a granule a case
	 * tagged (tag_side), and a store through an untagged pointer would fault there. */
	if (cf_mte_on && (cf_arena_fill(&src_arena, 0, CF_ARENA_WINDOW) ||
			  cf_arena_fill(&cf_dst_arena, 0, CF_ARENA_WINDOW)))
		fail("cannot fill the arenas");
	if (cf_arena_seal(&src_arena))
		fail("cannot make the source read-only");
	for (int i = 0; i < 12; i++)
		call.s_in[i] = (uintptr_t)(0xc0ffee005eed0000ull | (uint64_t)(i + 1) * 0x0101u);
	if (cf_trap_init(&cf_target.table, timeout_ms, plugin ? plugin->extable_hits : 0,
			 plugin ? CF_EXTABLE_SLOTS : 0))
		fail("cannot install signal handlers");
}

/* Which of s0-s11, sp, gp, tp, ra the routine failed to preserve (enum
 * cf_reg_bit order), and the value the lowest bad one held. */
static uint16_t check_registers(uint64_t *got)
{
	uintptr_t want[16], have[16];
	for (int i = 0; i < 12; i++)
		want[i] = call.s_in[i], have[i] = call.s_out[i];
	want[CF_REG_SP] = call.saved_sp, have[CF_REG_SP] = call.sp_out;
	want[CF_REG_GP] = call.gp_in, have[CF_REG_GP] = call.gp_out;
	want[CF_REG_TP] = call.tp_in, have[CF_REG_TP] = call.tp_out;
	want[CF_REG_RA] = (uintptr_t)cf_call_return, have[CF_REG_RA] = call.ra_out;
	uint16_t bad = 0;
	for (int i = 15; i >= 0; i--)
		if (have[i] != want[i])
			bad |= (uint16_t)(1u << i), *got = have[i];
	return bad;
}

static enum cf_outcome outcome_of(uintptr_t status)
{
	switch (status) {
	case CF_CALL_RETURNED:
		return CF_OUT_RETURNED;
	case CF_CALL_UNHANDLED:
		return CF_OUT_UNHANDLED_FAULT;
	case CF_CALL_HUNG:
		return CF_OUT_HUNG;
	default:
		return CF_OUT_CRASHED;
	}
}

/* --bare: place, call, nothing else (the benchmark's baseline for checking cost). */
static int bare;

/*
 * A granule case's fault boundary on one side: every granule from byte [fault] of the
 * buffer on, to 64 bytes past its end, has tag 1 (the routine's pointers carry 0); all
 * others 0. The tagged range stays from case to case while it is the same (the sweep
 * varies the destination's fault fastest): retagging the read-only source means making
 * it writable for the moment (a tag store needs write permission), two system calls.
 * A routine can set tags itself where it may write (stg, stzg, dc gzva: none of them
 * checked), so the destination's granules around the case's buffers (from `below` bytes
 * under the buffer, 64 bytes more each side) are read back first (ldg) and retagged when
 * they are not what this case needs: no case runs on tags an earlier case left. The
 * source is read-only to the routine, its tags too.
 */
struct tagged {
	uintptr_t lo, hi; /* granules with tag 1 (lo == hi: none) */
};
static struct tagged src_tagged, dst_tagged;

static void tag_side(struct cf_arena *a, struct tagged *t, const uint8_t *start, uint64_t below,
		     uint64_t fault, uint64_t n, int sealed)
{
	uintptr_t lo = 0, hi = 0;
	if (start && fault != CF_NO_FAULT) {
		lo = ((uintptr_t)start + fault) & ~(uintptr_t)15;
		uintptr_t end = (uintptr_t)start + (fault > n ? fault : n);
		hi = ((end + 15) & ~(uintptr_t)15) + CF_CANARY_LEN;
		if (hi > (uintptr_t)a->acc_end)
			hi = (uintptr_t)a->acc_end;
	}
	uintptr_t slo = 0, shi = 0; /* the neighbourhood read back (slo == shi: none) */
	if (start && !sealed) {
		slo = (((uintptr_t)start - below) & ~(uintptr_t)15) - CF_CANARY_LEN;
		shi = (((uintptr_t)start + n + 15) & ~(uintptr_t)15) + CF_CANARY_LEN;
		shi = shi > hi ? shi : hi;
		slo = slo < (uintptr_t)a->acc ? (uintptr_t)a->acc : slo;
		shi = shi > (uintptr_t)a->acc_end ? (uintptr_t)a->acc_end : shi;
		if (cf_mte_tags_are(slo, shi, lo, hi))
			slo = shi = 0;
	}
	if (lo == t->lo && hi == t->hi && slo == shi)
		return;
	/* The pages of both ranges, old and new, the empty one left out (each spans a few). */
	uintptr_t plo = lo, phi = hi;
	if (t->lo != t->hi) {
		plo = lo == hi || t->lo < lo ? t->lo : lo;
		phi = lo == hi || t->hi > hi ? t->hi : hi;
	}
	if (sealed && cf_arena_seal_range(a, plo, phi, 0) != 0)
		fail("cannot make the source writable to tag it");
	cf_mte_set_tags((uint8_t *)slo, (uint8_t *)shi, 0);
	cf_mte_set_tags((uint8_t *)t->lo, (uint8_t *)t->hi, 0);
	cf_mte_set_tags((uint8_t *)lo, (uint8_t *)hi, 1);
	if (sealed && cf_arena_seal_range(a, plo, phi, 1) != 0)
		fail("cannot make the source read-only again");
	t->lo = lo, t->hi = hi;
}

/* Tag the case's boundaries (a page-granular case under --granule 16: none). */
static void tag_case(const struct cf_case *c, const struct cf_case_place *pl, const uint8_t *dst,
		     const uint8_t *src)
{
	int g = c->granule != 0;
	tag_side(&cf_dst_arena, &dst_tagged, dst, (uint64_t)pl->below,
		 g ? c->dst_fault : CF_NO_FAULT, cf_memmove_top(c->n, c->disp), 0);
	int own_src = src && c->kind != CF_KIND_MEMMOVE && g;
	tag_side(&src_arena, &src_tagged, own_src ? src : 0, 0,
		 own_src ? c->src_fault : CF_NO_FAULT, c->n, 1);
}

static void run_case(const struct cf_case *c, struct cf_result *r)
{
	*r = (struct cf_result){0};
	r->magic = CF_RESULT_MAGIC;
	r->id = c->id;
	enum cf_case_error err = cf_case_check_for(c, cf_target.kind);
	if (err == CF_CASE_OK && c->granule && !cf_mte_on)
		err = CF_CASE_NO_MTE;
	if (err != CF_CASE_OK) {
		r->type = CF_RESULT_ERROR;
		r->aux = err;
		return;
	}
	r->type = CF_RESULT_CASE;

	struct cf_case_place pl = cf_case_place(c); /* place.h: the driver computes it too */
	uint8_t *dst = cf_dst_arena.acc + pl.dst, *src = 0;
	if (pl.src_arena != CF_PLACE_NONE)
		src = (pl.src_arena == CF_PLACE_DST_ARENA ? cf_dst_arena.acc : src_arena.acc) +
		      pl.src;
	const uint8_t *before = cf_dst_image + pl.dst;
	/* The bytes this case may see: its buffers, the canaries around them. */
	if (cf_arena_fill(&cf_dst_arena, pl.dst - pl.below - CF_CANARY_LEN,
			  pl.dst + (int64_t)cf_memmove_top(c->n, c->disp) + CF_CANARY_LEN) ||
	    (pl.src_arena == CF_PLACE_SRC_ARENA &&
	     cf_arena_fill(&src_arena, pl.src, pl.src + (int64_t)c->n)))
		fail("cannot fill the arenas");

	call.fn = (uintptr_t)cf_target.entry;
	call.args[0] = (uintptr_t)dst;
	if (c->kind == CF_KIND_CLEAR) {
		call.args[1] = (uintptr_t)c->n;
		call.args[2] = 0;
	} else if (c->kind == CF_KIND_MEMSET) {
		/* int c, as the calling convention passes it: sign-extended to a register */
		call.args[1] = (uintptr_t)(intptr_t)(int32_t)c->fill;
		call.args[2] = (uintptr_t)c->n;
	} else {
		call.args[1] = (uintptr_t)src;
		call.args[2] = (uintptr_t)c->n;
	}
	uint8_t stack_mark;
	if (plugin) {
		/* The windows the routine may touch; the counters start at zero. */
		plugin->src_lo = (uintptr_t)src;
		plugin->src_hi = src ? (uintptr_t)src + c->n : 0;
		plugin->dst_lo = (uintptr_t)dst;
		plugin->dst_hi = (uintptr_t)dst + c->n;
		plugin->stack_hi = (uintptr_t)&stack_mark;
		plugin->stack_lo = (uintptr_t)&stack_mark - 65536;
		plugin->now = (struct cf_plugin_case){0};
		plugin->seq++; /* the plugin clears the edge map, natively (plugin_abi.h) */
	}
	if (control) { /* if the routine ends the process, the tool knows in which case */
		control->current = c->id;
		control->started++;
	}
	call.status = CF_CALL_RUNNING;
	call.seq++;
	call.faults = call.signal = 0;
	call.si_code = 0;
	call.fault_pc = call.fault_addr = call.fixup_pc = 0;
	if (cf_mte_on)
		tag_case(c, &pl, dst, src);
	cf_call_target(&call);
	if (bare) {
		r->ret = call.ret;
		r->faults = call.faults;
		return;
	}

	struct cf_observed o = {0};
	o.outcome = outcome_of(call.status);
	o.ret = call.ret;
	if (o.outcome == CF_OUT_RETURNED) {
		o.regs_bad = check_registers(&o.reg_got);
		o.uaccess_left_on = CF_UACCESS_ON(call.uaccess_out) != 0;
	}
	o.dst = dst;
	o.before = before;
	o.src = src;
	/* The readable window around dst (memmove: both buffers; the source may change
	 * only where it is the destination, its bytes as they were come from the image). */
	o.lo = pl.lo;
	o.hi = pl.hi;
	if (pl.src_arena == CF_PLACE_DST_ARENA)
		o.src = cf_dst_image + pl.src;
	cf_oracle(c, &o, r);
	if (observe)
		publish(c, &o, dst);
	if (plugin)
		plugin->cases++;
	if (plugin && plugin_memcheck) {
		uint64_t viol = plugin->now.viol;
		r->classes |= (viol & CF_VIOL_STORE_OOB ? CF_STORE_OUT_OF_BOUNDS : 0) |
			      (viol & CF_VIOL_LOAD_OOB ? CF_LOAD_OUT_OF_BOUNDS : 0) |
			      (viol & CF_VIOL_OVERREAD ? CF_ALIGNED_OVERREAD : 0);
		r->errors = r->classes & cf_profile_errors(c->profile);
	}

	r->signal = (uint16_t)call.signal;
	r->aux = (uint32_t)call.si_code;
	r->faults = call.faults;
	r->fault_pc = call.fault_pc;
	r->fault_addr = call.fault_addr;
	r->fixup_pc = call.fixup_pc;
	r->trail_len = call.faults < CF_FAULT_TRAIL ? call.faults : CF_FAULT_TRAIL;
	for (uint32_t i = 0; i < r->trail_len; i++) {
		r->trail_pc[i] = call.trail_pc[i];
		r->trail_addr[i] = call.trail_addr[i];
		r->trail_fixup[i] = call.trail_fixup[i];
	}
	/* A call that returned after faults came back through the last one's fixup. */
	if (o.outcome == CF_OUT_RETURNED && r->trail_len)
		r->returned_via = r->trail_len;
	r->dst = (uintptr_t)dst;
	r->src = (uintptr_t)src;

	/* Put back what the routine may have changed, so the next case starts clean. */
	int64_t from = r->diff_count ? o.lo : 0;
	int64_t to = r->diff_count ? o.hi : ((int64_t)c->n < o.hi ? (int64_t)c->n : o.hi);
	if (to > from)
		__builtin_memcpy(dst + from, before + from, (size_t)(to - from));
}

static void mode_info(void)
{
	static const char *const kinds[CF_NUM_KINDS] = {CF_KIND_NAMES};
	static const char *formats[] = {"none", "abs", "rel", "rel8"};
	cf_out_str("name=");
	cf_out_str(cf_target.name);
	cf_out_str("\nkind=");
	cf_out_str(kinds[cf_target.kind]);
	cf_out_str("\nsymbol=");
	cf_out_str(cf_target.symbol);
	cf_out_str("\narch=");
	cf_out_str(CF_ARCH_NAME);
	cf_out_str("\nxlen=");
	cf_out_dec(sizeof(void *) * 8);
	cf_out_str("\nextable=");
	cf_out_str(formats[cf_target.table.format]);
	cf_out_str("\nextable_entries=");
	cf_out_dec(cf_extable_entries(&cf_target.table));
	cf_out_str("\nentry=");
	cf_out_hex((uintptr_t)cf_target.entry);
	cf_out_str("\ntext_start=");
	cf_out_hex((uintptr_t)cf_target.text_start);
	cf_out_str("\ntext_end=");
	cf_out_hex((uintptr_t)cf_target.text_end);
	cf_out_str("\n");
	cf_out_flush();
}

static void mode_serve(void)
{
	static uint8_t in[64 * sizeof(struct cf_case)];
	size_t have = 0;
	for (;;) {
		long got = cf_read(cases_fd, in + have, sizeof(in) - have);
		if (got == -4 /* EINTR */)
			continue;
		if (got < 0)
			fail("cannot read case records");
		if (got == 0)
			break;
		have += (size_t)got;
		size_t used = 0;
		while (have - used >= sizeof(struct cf_case)) {
			struct cf_case c;
			struct cf_result r;
			__builtin_memcpy(&c, in + used, sizeof(c));
			run_case(&c, &r);
			emit(&r, sizeof(r));
			used += sizeof(struct cf_case);
		}
		for (size_t i = 0; used && i < have - used; i++)
			in[i] = in[used + i];
		have -= used;
		cf_out_flush();
	}
	if (have)
		fail("input ended inside a case record");
}

/* Wait until the channel's turn moves off `mine` (channel_abi.h): a few looks, then
 * FUTEX_WAIT in slices (a wake that did not arrive costs a slice, not the run). */
static uint32_t await_turn(uint32_t mine)
{
	struct cf_channel_shm *ch = cf_serve_channel;
	uint32_t spin = ch->spin;
	for (uint32_t looks = 0;; looks++) {
		/* The DEAD bit is the driver's own business (a late SIGCHLD there may set it). */
		uint32_t t = __atomic_load_n(&ch->turn, __ATOMIC_ACQUIRE);
		if ((t & CF_TURN_MASK) != mine)
			return t & CF_TURN_MASK;
		if (looks < spin)
			continue;
		__atomic_store_n(&ch->exec_waiting, 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&ch->turn, __ATOMIC_ACQUIRE) == t)
			cf_futex_wait(&ch->turn, t, 1000);
		__atomic_store_n(&ch->exec_waiting, 0, __ATOMIC_RELAXED);
	}
}

/* serve --channel-fd: cases and results through the shared block, no system call per
 * case unless a side sleeps. Ends when the driver kills the executor. */
static __attribute__((noreturn)) void mode_serve_channel(void)
{
	struct cf_channel_shm *ch = cf_serve_channel;
	uint32_t mine = 0;
	for (;;) {
		uint32_t t = await_turn(mine);
		if (t != cf_turn_next(mine))
			fail("--channel-fd: the turn word holds a value the driver never posts");
		struct cf_case c;
		struct cf_result r;
		__builtin_memcpy(&c, &ch->c, sizeof(c));
		run_case(&c, &r);
		seal(&r, sizeof(r));
		__builtin_memcpy(&ch->r, &r, sizeof(r));
		mine = cf_turn_next(t);
		__atomic_store_n(&ch->turn, mine, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__atomic_load_n(&ch->driver_waiting, __ATOMIC_RELAXED))
			cf_futex_wake(&ch->turn);
	}
}

struct sweep_opts {
	struct cf_sweep_cfg cfg;
	uint64_t shard, shards, stop_mask, max_hangs;
	uint64_t start, end; /* case ids [start, end): a resumed or narrowed run */
};

static void emit_marker(uint16_t type, uint64_t id, uint64_t ret, uint32_t aux)
{
	struct cf_result r = {0};
	r.magic = CF_RESULT_MAGIC;
	r.type = type;
	r.id = id;
	r.ret = ret;
	r.aux = aux;
	emit(&r, sizeof(r));
}

static void mode_sweep(const struct sweep_opts *so)
{
	struct cf_sweep_iter it;
	struct cf_case c;
	struct cf_result r;
	uint64_t counts[CF_NUM_CLASSES] = {0};
	uint64_t done = 0, hangs = 0, total;
	uint32_t seen = 0, why = CF_SWEEP_ALL_RUN;

	total = cf_sweep_count(&so->cfg, so->shard, so->shards, so->start, so->end);
	emit_marker(CF_RESULT_PROGRESS, 0, total, 0);
	cf_out_flush();
	cf_sweep_begin(&it, &so->cfg, so->shard, so->shards);
	cf_sweep_seek(&it, so->start);
	while (cf_sweep_next(&it, &c) && c.id < so->end) {
		run_case(&c, &r);
		done++;
		if (r.type != CF_RESULT_CASE)
			fail("the sweep generated a malformed case");
		if (r.classes) {
			for (int b = 0; b < CF_NUM_CLASSES; b++)
				counts[b] += (r.classes >> b) & 1;
			if (control) /* what COUNT would have said, should the process die */
				for (int b = 0; b < CF_NUM_CLASSES; b++)
					control->counts[b] = counts[b];
			if (r.classes & ~seen) {
				emit(&c, sizeof(c));
				emit(&r, sizeof(r));
				cf_out_flush(); /* a finding reaches the reader at once */
				seen |= r.classes;
			}
			if ((r.classes & CF_HANG) && ++hangs >= so->max_hangs) {
				why = CF_SWEEP_MAX_HANGS;
				break;
			}
			if (so->stop_mask && (seen & so->stop_mask) == so->stop_mask) {
				why = CF_SWEEP_STOP_MASK;
				break;
			}
		}
		if (done % PROGRESS_EVERY == 0) {
			emit_marker(CF_RESULT_PROGRESS, done, total, 0);
			cf_out_flush();
		}
	}
	for (int b = 0; b < CF_NUM_CLASSES; b++)
		if (counts[b])
			emit_marker(CF_RESULT_COUNT, counts[b], 0, (uint32_t)b);
	emit_marker(CF_RESULT_DONE, done, total, why);
	cf_out_flush();
}

static uint64_t need_u64(const char *opt, const char *val)
{
	uint64_t v;
	if (!val || !cf_parse_u64(val, &v))
		usage_of(opt, " needs a number");
	return v;
}

/* The option's row in exec_options.h, or -1. */
static int option_id(const char *o)
{
	for (int id = 0; id < CF_NUM_EXEC_OPTIONS; id++)
		if (cf_streq(o, cf_exec_option_names[id]))
			return id;
	return -1;
}

static void parse_shard(const char *s, uint64_t *i, uint64_t *k)
{
	char a[24], b[24];
	size_t n = 0, m = 0;
	while (s && *s && *s != '/' && n < sizeof(a) - 1)
		a[n++] = *s++;
	a[n] = 0;
	if (!s || *s != '/')
		usage("--shard takes I/K");
	for (s++; *s && m < sizeof(b) - 1; s++)
		b[m++] = *s;
	b[m] = 0;
	if (!cf_parse_u64(a, i) || !cf_parse_u64(b, k) || *k == 0 || *i >= *k)
		usage("--shard takes I/K with 0 <= I < K");
}

int main(int argc, char **argv);

int main(int argc, char **argv)
{
	if (argc < 2)
		usage("no mode given");
	const char *mode = argv[1];
	uint64_t timeout_ms = CF_EXEC_TIMEOUT_MS_DEFAULT;
	int64_t plugin_fd = -1, observe_fd = -1, control_fd = -1, records_fd = -1, channel_fd = -1;
	int read_key_later = 0;
	cases_fd = 0;
	struct sweep_opts so = {0};
	so.cfg.kind = cf_target.kind;
	so.cfg.profile = CF_PROFILE_LINUX;
	so.cfg.szreg = sizeof(void *);
	so.cfg.max_len = UINT64_MAX;
	so.shards = 1;
	so.max_hangs = CF_EXEC_MAX_HANGS_DEFAULT;
	so.end = UINT64_MAX;
	for (int i = 2; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : 0;
		int id = option_id(o);
		if (id < 0)
			usage("unknown option");
		uint64_t num = 0;
		if (cf_exec_option_args[id] == CF_OPT_ARG_NUM)
			num = need_u64(o, v);
		if (cf_exec_option_args[id] != CF_OPT_ARG_FLAG)
			i++;
		switch ((enum cf_exec_option)id) {
		case CF_OPT_TIMEOUT_MS:
			timeout_ms = num;
			break;
		case CF_OPT_MAX_LEN:
			so.cfg.max_len = num;
			break;
		case CF_OPT_MIN_LEN:
			so.cfg.min_len = num;
			break;
		case CF_OPT_RANDOM:
			so.cfg.random_count = num;
			break;
		case CF_OPT_SEED:
			so.cfg.random_seed = num;
			break;
		case CF_OPT_RANDOM_MAX_LEN:
			so.cfg.random_max_len = num;
			break;
		case CF_OPT_STOP_MASK:
			so.stop_mask = num;
			break;
		case CF_OPT_MAX_HANGS:
			so.max_hangs = num;
			break;
		case CF_OPT_OBSERVE_FD:
			observe_fd = (int64_t)num;
			break;
		case CF_OPT_CASES_FD:
			cases_fd = (int)num, read_key_later = 1;
			break;
		case CF_OPT_RECORDS_FD:
			records_fd = (int64_t)num;
			break;
		case CF_OPT_CHANNEL_FD:
			channel_fd = (int64_t)num;
			break;
		case CF_OPT_CONTROL_FD:
			control_fd = (int64_t)num;
			break;
		case CF_OPT_START:
			so.start = num;
			break;
		case CF_OPT_END:
			so.end = num;
			break;
		case CF_OPT_PLUGIN_FD:
			plugin_fd = (int64_t)num;
			break;
		case CF_OPT_PLUGIN_COVERAGE_ONLY:
			plugin_memcheck = 0;
			break;
		case CF_OPT_BARE:
			bare = 1;
			break;
		case CF_OPT_GRANULE:
			if (!v || !cf_streq(v, "16"))
				usage("--granule takes 16");
			cf_mte_on = 1, so.cfg.granule = CF_GRANULE_MTE;
			break;
		case CF_OPT_SHARD:
			parse_shard(v, &so.shard, &so.shards);
			break;
		case CF_OPT_PROFILE:
			if (v && cf_streq(v, "linux"))
				so.cfg.profile = CF_PROFILE_LINUX;
			else if (v && cf_streq(v, "exact"))
				so.cfg.profile = CF_PROFILE_EXACT;
			else
				usage("--profile takes linux or exact");
			break;
		case CF_NUM_EXEC_OPTIONS:
			break;
		}
	}
	if (timeout_ms == 0 || timeout_ms > CF_EXEC_TIMEOUT_MS_MAX)
		usage("--timeout-ms must be 1..600000");

	if (cf_streq(mode, "info")) {
		mode_info();
		return 0;
	}
	cf_no_core_files();
	if (plugin_fd >= 0)
		attach_plugin((uint64_t)plugin_fd);
	if (observe_fd >= 0)
		attach_observer((uint64_t)observe_fd);
	if (control_fd >= 0)
		attach_control((uint64_t)control_fd);
	if (records_fd >= 0)
		cf_out_fd = (int)records_fd;
	if (read_key_later)
		read_key();
	if (cf_streq(mode, "serve")) {
		setup((uint32_t)timeout_ms);
		if (channel_fd >= 0) {
			attach_channel((uint64_t)channel_fd);
			mode_serve_channel();
		}
		mode_serve();
		return 0;
	}
	if (channel_fd >= 0)
		usage("--channel-fd is for serve");
	if (cf_streq(mode, "sweep")) {
		if (so.cfg.max_len == UINT64_MAX)
			usage("sweep needs --max-len");
		if (so.cfg.max_len > CF_MAX_LEN || so.cfg.random_max_len > CF_MAX_LEN)
			usage("lengths are limited to 1048576");
		if (so.max_hangs == 0)
			so.max_hangs = 1;
		setup((uint32_t)timeout_ms);
		mode_sweep(&so);
		return 0;
	}
	usage("unknown mode");
}

/* Called from _start (call.S) with the initial stack: argc, argv[]. */
void cf_start_c(long *sp);
void cf_start_c(long *sp)
{
	cf_exit(main((int)sp[0], (char **)(sp + 1)));
}
