/* SPDX-License-Identifier: MIT */
/*
 * records.h - the one definition of copyfuzz's wire formats.
 *
 * A *case* says what to run: which kind of routine, how many bytes, where the
 * source and destination start inside their pages and where each side's first
 * inaccessible byte is. A *result* says what happened and how the oracle
 * classified it. The executor reads case records and writes result records
 * on private pipes the tool hands it (--cases-fd, --records-fd: never stdin or
 * stdout, which the routine under test can reach as easily as the executor);
 * the sweep mode writes the same result records for its findings and
 * progress. Every record the executor writes ends in a seal (cf_seal below),
 * and a control block (struct cf_control) shared with the tool says which
 * case is running, so a routine that kills its executor is caught in the act.
 * All fields are little-endian, fixed width, no padding the compiler could
 * choose: sizes are asserted below.
 *
 * tool/copyfuzz/records.py reads the layouts from the X-macros below (and
 * mirrors the constants; a test compares them); documented in docs/formats.md.
 */
#ifndef CF_RECORDS_H
#define CF_RECORDS_H

#include <stdint.h>

#define CF_PAGE_SIZE 4096u
/* Longest copy a case may ask for; the arenas are sized from it. */
#define CF_MAX_LEN (1u << 20)
/* Fault positions past this are refused (far past the end is the same as none). */
#define CF_MAX_FAULT (CF_MAX_LEN + CF_PAGE_SIZE)
/* memmove: |disp| <= n + CF_MEMMOVE_SLACK (and n + |disp| <= CF_MAX_LEN): past that
 * the buffers are apart and further displacement changes nothing. */
#define CF_MEMMOVE_SLACK 16u
/* Canary bytes checked on each side of the destination window. */
#define CF_CANARY_LEN 64u
/* A side whose fault field holds this never faults within the case. */
#define CF_NO_FAULT UINT64_MAX

/*
 * The kinds, one row each, by value: the one definition the C side and the tool
 * (tool/copyfuzz/records.py reads this macro) take a kind's facts from.
 *   X(ENUM, name, user_copy, has_src, src_faults, dst_faults, returns_dst, args, signature)
 * name: COPYFUZZ_KIND's and a routine's kind= word. user_copy: N = f(dst, src, n), the
 * bytes not copied. has_src: a source side of its own in the record (memmove's source
 * is dst - disp in dst's mapping, so it has none). src_faults, dst_faults: can that side
 * fault at all (user memory, or a buffer's end)? The kernel's side of a one-way user
 * copy cannot. returns_dst: returns dst (no fixups: every fault is unhandled), else N,
 * the bytes not done. args and signature: how the routine is called, for people.
 */
#define CF_KINDS(X)                                                                               \
	X(COPY, "copy", 1, 1, 1, 1, 0, "dst, src, n",                                             \
	  "unsigned long f(void *dst, const void *src, unsigned long n)")                         \
	X(CLEAR, "clear", 0, 0, 0, 1, 0, "dst, n", "unsigned long f(void *dst, unsigned long n)") \
	X(MEMCPY, "memcpy", 0, 1, 1, 1, 1, "dst, src, n",                                         \
	  "void *memcpy(void *dst, const void *src, size_t n)")                                   \
	X(MEMSET, "memset", 0, 0, 0, 1, 1, "dst, c, n",                                           \
	  "void *memset(void *dst, int c, size_t n)")                                             \
	X(MEMMOVE, "memmove", 0, 0, 0, 1, 1, "dst, src, n",                                       \
	  "void *memmove(void *dst, const void *src, size_t n)")                                  \
	X(COPY_FROM_USER, "copy_from_user", 1, 1, 1, 0, 0, "dst, src, n",                         \
	  "unsigned long f(void *dst, const void __user *src, unsigned long n)")                  \
	X(COPY_TO_USER, "copy_to_user", 1, 1, 0, 1, 0, "dst, src, n",                             \
	  "unsigned long f(void __user *dst, const void *src, unsigned long n)")

#define CF_X_KIND_ENUM(e, name, u, h, s, d, r, args, sig) CF_KIND_##e,
enum cf_kind { CF_KINDS(CF_X_KIND_ENUM) CF_NUM_KINDS };
/* Their names, by value (COPYFUZZ_KIND, routines' kind= lines). */
#define CF_X_KIND_NAME(e, name, u, h, s, d, r, args, sig) name,
#define CF_KIND_NAMES CF_KINDS(CF_X_KIND_NAME)

/* A kind's facts, from its row; a value past the table has none. */
struct cf_kind_facts {
	unsigned char user_copy, has_src, src_faults, dst_faults, returns_dst;
};
#define CF_X_KIND_FACTS(e, name, u, h, s, d, r, args, sig) {u, h, s, d, r},
__attribute__((unused)) static const struct cf_kind_facts cf_kind_facts[CF_NUM_KINDS] = {
	CF_KINDS(CF_X_KIND_FACTS)};
static inline struct cf_kind_facts cf_kind_facts_of(unsigned kind)
{
	static const struct cf_kind_facts none;
	return kind < CF_NUM_KINDS ? cf_kind_facts[kind] : none;
}
static inline int cf_kind_is_user_copy(unsigned kind) /* N = f(dst, src, n) */
{
	return cf_kind_facts_of(kind).user_copy;
}
static inline int cf_kind_has_src(unsigned kind) /* a source side of its own in the record */
{
	return cf_kind_facts_of(kind).has_src;
}
static inline int cf_kind_src_faults(unsigned kind)
{
	return cf_kind_facts_of(kind).src_faults;
}
static inline int cf_kind_dst_faults(unsigned kind)
{
	return cf_kind_facts_of(kind).dst_faults;
}
static inline int cf_kind_returns_dst(unsigned kind) /* else: N, the bytes not done */
{
	return cf_kind_facts_of(kind).returns_dst;
}

enum cf_profile {
	CF_PROFILE_LINUX = 0, /* raw_copy_{to,from}_user contract: imprecise allowed */
	CF_PROFILE_EXACT = 1, /* the byte-by-byte reference, to the byte */
};
#define CF_NUM_PROFILES 2
/* Their names, by value (records.py's PROFILES; COPYFUZZ_PROFILE, routines' profile=). */
#define CF_PROFILE_NAMES "linux", "exact"

/*
 * Finding classes, in report order. X(enum name, bit, "name used in output", "what it
 * means, for people"). Bits are stable: they travel in result records and JSON readers
 * rely on them. tool/copyfuzz/records.py reads this list (cheader.py).
 */
#define CF_CLASSES(X)                                                                              \
	X(CF_BAD_RETURN, 0, "bad-return",                                                          \
	  "return value outside [0, n] (memcpy, memset, memmove: not dst)")                        \
	X(CF_SPURIOUS_FAULT, 1, "spurious-fault",                                                  \
	  "reported a fault although every byte was accessible")                                   \
	X(CF_OVER_REPORT, 2, "over-report", "claims more bytes copied than were accessible")       \
	X(CF_WRONG_DATA, 3, "wrong-data",                                                          \
	  "a byte the routine claims done is not what it must store there (the source byte; zero " \
	  "for clear; the fill byte for memset)")                                                  \
	X(CF_STORE_BEYOND_REPORTED, 4, "store-beyond-reported",                                    \
	  "stored past dst + C (beyond what it reports)")                                          \
	X(CF_STORE_OUT_OF_BOUNDS, 5, "store-out-of-bounds", "stored outside [dst, dst + n)")       \
	X(CF_NO_PROGRESS, 6, "no-progress",                                                        \
	  "returned N = n although at least one byte was accessible")                              \
	X(CF_IMPRECISE, 7, "imprecise",                                                            \
	  "copied fewer bytes than were accessible (allowed by linux)")                            \
	X(CF_UNHANDLED_FAULT, 8, "unhandled-fault", "a fault with no exception-table fixup")       \
	X(CF_HANG, 9, "hang", "did not return before the watchdog fired")                          \
	X(CF_REGISTER_CLOBBER, 10, "register-clobber",                                             \
	  "a callee-saved register or sp/gp/tp/ra was not preserved")                              \
	X(CF_CRASH, 11, "crash",                                                                   \
	  "died of a signal that was not a user-access fault, or ended its executor")              \
	X(CF_UACCESS_LEFT_ENABLED, 12, "uaccess-left-enabled",                                     \
	  "returned with user access still enabled (RISC-V: SR_SUM)")                              \
	X(CF_LOAD_OUT_OF_BOUNDS, 13, "load-out-of-bounds",                                         \
	  "loaded a byte outside [src, src + n) that no aligned word shares (--memcheck)")         \
	X(CF_ALIGNED_OVERREAD, 14, "aligned-overread",                                             \
	  "an aligned word load reached past the source; it cannot fault (a note, --memcheck)")

#define CF_X_BIT(e, b, s, about) e = 1u << (b),
enum cf_class { CF_CLASSES(CF_X_BIT) };
#undef CF_X_BIT
#define CF_X_COUNT(e, b, s, about) +1
#define CF_NUM_CLASSES (0 CF_CLASSES(CF_X_COUNT))

/* Classes that are errors under each profile. An aligned over-read (a load of
 * a naturally aligned word sharing bytes with the source: it cannot fault) is
 * a note everywhere; load-out-of-bounds and aligned-overread come from the
 * QEMU plugin's memory audit (--memcheck). */
#define CF_ERRORS_EXACT (((1u << CF_NUM_CLASSES) - 1) & ~(uint32_t)CF_ALIGNED_OVERREAD)
#define CF_ERRORS_LINUX (CF_ERRORS_EXACT & ~(uint32_t)CF_IMPRECISE)

/*
 * Record layouts: one X(type, name, dims, "meaning") per field, in wire order;
 * dims is empty or an array bound. The structs below are built from these
 * lists, tool/copyfuzz/records.py reads them (records.c_layout: keep one X(...) a
 * field, the bound a number or a #define of this file), tests/c/layout_dump.c prints
 * them, and tests/test_records.py checks what Python made of them against that dump.
 */
#define CF_X_FIELD(type, name, dims, about) type name dims;

/* ---- case record: 64 bytes ---- */
#define CF_CASE_MAGIC 0x31434643u /* "CFC1" */

#define CF_CASE_FIELDS(X)                                                                          \
	X(uint32_t, magic, , "CF_CASE_MAGIC")                                                      \
	X(uint16_t, kind, , "enum cf_kind")                                                        \
	X(uint8_t, profile, , "enum cf_profile")                                                   \
	X(uint8_t, granule, , "0: faults at page boundaries; CF_GRANULE_MTE: at MTE tag granules") \
	X(uint64_t, id, , "echoed in the result; the sweep's case index")                          \
	X(uint64_t, n, , "bytes to copy or clear, <= CF_MAX_LEN")                                  \
	X(uint32_t, src_off, , "page offset of src (ignored for clear, memset, memmove)")          \
	X(uint32_t, dst_off, , "page offset of dst")                                               \
	X(uint64_t, src_fault, , "bytes from src to its first inaccessible byte, or CF_NO_FAULT")  \
	X(uint64_t, dst_fault, , "likewise for dst (memmove: for the one mapping)")                \
	X(uint32_t, fill, , "memset: the int c argument as passed (zero for other kinds)")         \
	X(int32_t, disp, , "memmove: dst - src, in one mapping (zero for other kinds)")            \
	X(uint64_t, seal, , "in the sweep's stream: cf_seal(); ignored in cases sent to serve")

struct cf_case {
	CF_CASE_FIELDS(CF_X_FIELD)
};

/* memmove: the widest displacement for n (|disp| <= n + slack, n + |disp| <= CF_MAX_LEN). */
static inline uint64_t cf_memmove_max_disp(uint64_t n)
{
	if (n >= CF_MAX_LEN)
		return 0;
	uint64_t d = n + CF_MEMMOVE_SLACK;
	return d < CF_MAX_LEN - n ? d : CF_MAX_LEN - n;
}

/* memmove: how far above dst the two buffers end (n, or n - disp when src is higher). */
static inline uint64_t cf_memmove_top(uint64_t n, int32_t disp)
{
	return disp < 0 ? n + (uint64_t)(-(int64_t)disp) : n;
}

/*
 * A fault position is page-granular: a side with off + fault not a multiple
 * of the page size cannot exist, except fault == 0 (the buffer's own page is
 * inaccessible, whatever the offset). A case with granule CF_GRANULE_MTE has its
 * fault boundaries at 16-byte MTE tag granules instead (off + fault a multiple of
 * 16, the buffer anywhere in its page): only an arm64 executor run with
 * --granule 16 makes those (synchronous tag-check faults). cf_case_check() in
 * harness/cases.c says why a case is malformed.
 */
#define CF_GRANULE_MTE 16

/* ---- result record: 256 bytes ---- */
#define CF_RESULT_MAGIC 0x31524643u /* "CFR1" */
/* The faults of a case in order (issue 25: on a vector path the first fault's fixup can be
 * right and a later one's, in the scalar fallback, make the wrong return): the first
 * CF_FAULT_TRAIL - 1 of them, then the last (a fault loop shows its start and its end). */
#define CF_FAULT_TRAIL 5

enum cf_result_type {
	CF_RESULT_CASE = 0, /* the outcome of one case; aux = si_code of `signal` */
	CF_RESULT_PROGRESS = 1, /* sweep: id = cases done, ret = cases in this run */
	CF_RESULT_DONE = 2, /* sweep: last record; id = cases run, aux = why it
				 * ended: enum cf_sweep_stop */
	CF_RESULT_ERROR = 3, /* case rejected: aux = enum cf_case_error */
	CF_RESULT_COUNT = 4, /* sweep: id = cases showing class bit aux */
};

/*
 * The sweep's output stream: for each case that shows a class not seen
 * before, its case record then its result record (type CASE); PROGRESS
 * records now and then; at the end one COUNT record per class seen, then
 * DONE. Readers tell records apart by their magic.
 */

enum cf_case_error {
	CF_CASE_OK = 0,
	CF_CASE_BAD_MAGIC,
	CF_CASE_BAD_KIND,
	CF_CASE_BAD_PROFILE,
	CF_CASE_TOO_LONG,
	CF_CASE_BAD_OFFSET,
	CF_CASE_SRC_UNREACHABLE, /* src fault position no page boundary can produce */
	CF_CASE_DST_UNREACHABLE,
	CF_CASE_KIND_MISMATCH, /* case kind differs from the executor's routine */
	CF_CASE_BAD_FILL, /* fill given to a kind other than memset */
	CF_CASE_BAD_DISP, /* disp given to a kind other than memmove, or out of range */
	CF_CASE_KERNEL_SIDE_FAULT, /* a fault on a side that is the kernel's (copy_from_user's
				    * destination, copy_to_user's source) */
	CF_CASE_BAD_GRANULE, /* granule neither 0 (pages) nor CF_GRANULE_MTE */
	CF_CASE_NO_MTE, /* a granule case sent to an executor not run with --granule 16 */
};

/* Why a sweep ended: the DONE record's aux. */
enum cf_sweep_stop {
	CF_SWEEP_ALL_RUN = 0, /* every case ran */
	CF_SWEEP_STOP_MASK = 1, /* every class of --stop-mask was seen */
	CF_SWEEP_MAX_HANGS = 2, /* --max-hangs cases hung */
};

/* The executor's option defaults and limits (the tool checks its own against them). */
enum cf_executor_option {
	CF_EXEC_TIMEOUT_MS_DEFAULT = 500, /* --timeout-ms: the per-case watchdog */
	CF_EXEC_TIMEOUT_MS_MAX = 600000,
	CF_EXEC_MAX_HANGS_DEFAULT = 16, /* --max-hangs (sweep) */
};

/* Registers the call trampoline checks, as bits of cf_result.regs_bad. */
enum cf_reg_bit {
	CF_REG_S0 = 0, /* s0..s11 are bits 0..11 */
	CF_REG_SP = 12,
	CF_REG_GP = 13,
	CF_REG_TP = 14,
	CF_REG_RA = 15, /* returned somewhere other than the return address */
};

#define CF_RESULT_FIELDS(X)                                                                  \
	X(uint32_t, magic, , "CF_RESULT_MAGIC")                                              \
	X(uint16_t, type, , "enum cf_result_type")                                           \
	X(uint16_t, signal, , "the ending (else first) fault's signal number")               \
	X(uint64_t, id, , "the case id (or a count, see cf_result_type)")                    \
	X(uint32_t, classes, , "every class observed (enum cf_class bits)")                  \
	X(uint32_t, errors, , "classes & the profile's error set")                           \
	X(uint64_t, ret, , "raw a0 on return (N; for memcpy, the pointer)")                  \
	X(uint64_t, accessible, , "A: leading bytes accessible on both sides")               \
	X(uint64_t, claimed, , "C = n - N, clamped to [0, n]")                               \
	X(int64_t, diff_off, , "first wrong byte, relative to dst (may be < 0)")             \
	X(uint32_t, diff_count, , "bytes that differ from expectation")                      \
	X(uint8_t, diff_want, , "expected byte at diff_off")                                 \
	X(uint8_t, diff_got, , "actual byte at diff_off")                                    \
	X(uint16_t, regs_bad, , "enum cf_reg_bit mask")                                      \
	X(uint64_t, reg_got, , "the first bad register's value")                             \
	X(uint32_t, faults, , "faults taken during the call")                                \
	X(uint32_t, aux, , "see cf_result_type")                                             \
	X(uint64_t, fault_pc, , "ending (else first) fault: instruction address")            \
	X(uint64_t, fault_addr, , "ending (else first) fault: data address")                 \
	X(uint64_t, fixup_pc, , "that fault: where the table sent it (0: none)")             \
	X(uint64_t, dst, , "where dst was placed, to turn addresses into offsets")           \
	X(uint64_t, src, , "where src was placed")                                           \
	X(uint64_t, trail_pc, [CF_FAULT_TRAIL], "the faults in order (CF_FAULT_TRAIL)")      \
	X(uint64_t, trail_addr, [CF_FAULT_TRAIL], "their data addresses")                    \
	X(uint64_t, trail_fixup, [CF_FAULT_TRAIL], "where the table sent each (0: nowhere)") \
	X(uint32_t, trail_len, , "trail entries in use: min(faults, CF_FAULT_TRAIL)")        \
	X(uint32_t, returned_via, , "1 + the trail index whose fixup led to the return")     \
	X(uint64_t, seal, , "cf_seal() of the record and its place in the stream")

struct cf_result {
	CF_RESULT_FIELDS(CF_X_FIELD)
};

/* ---- control block: shared memory between the tool and one executor ---- */
#define CF_CONTROL_MAGIC 0x314b4643u /* "CFK1" */
#define CF_CONTROL_VERSION 1
#define CF_CONTROL_COUNTS 16

/*
 * The tool creates a memfd of sizeof(struct cf_control) and passes its fd
 * (--control-fd N). The executor stores `current` and bumps `started` just
 * before each call of the routine (two stores, no system call) and, in a
 * sweep, keeps the class counts here too. When the executor dies or its
 * stream breaks, the tool reads which case was running and how far the
 * sweep got. The routine can write here too: the tool verifies the case it
 * names by running it alone in a fresh executor.
 */
#define CF_CONTROL_FIELDS(X)                                                        \
	X(uint32_t, magic, , "CF_CONTROL_MAGIC: the executor has mapped the block") \
	X(uint32_t, version, , "CF_CONTROL_VERSION")                                \
	X(uint64_t, started, , "calls of the routine begun so far")                 \
	X(uint64_t, current, , "the id of the case begun last")                     \
	X(uint64_t, counts, [CF_CONTROL_COUNTS], "sweep: cases showing each class bit")

struct cf_control {
	CF_CONTROL_FIELDS(CF_X_FIELD)
};

/*
 * The seal: the last 8 bytes of every record the executor writes hold a keyed
 * checksum of the record's other bytes and of its place in the stream (seq:
 * 0, 1, 2 ... per process, case and result records alike). The 16-byte key is
 * the first thing the tool writes on the executor's case channel; without one
 * (by hand, records on stdout) the key is zero. It tells records apart from
 * bytes a routine wrote by accident or guessed; it is no defence against a
 * routine that reads the executor's memory (docs/executor.md).
 */
static inline uint64_t cf_seal_mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e6c63d0676a9a99ull;
	x ^= x >> 29;
	x *= 0xd8e5c0b2e25a3c6bull;
	x ^= x >> 32;
	return x;
}

static inline uint64_t cf_seal(const uint64_t key[2], uint64_t seq, const void *rec, unsigned size)
{
	const unsigned char *p = (const unsigned char *)rec;
	uint64_t h = cf_seal_mix(key[0] ^ seq);
	for (unsigned i = 0; i + 8 < size; i += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p + i, 8); /* little-endian: the records' byte order */
		h = cf_seal_mix(h ^ w ^ key[1]);
	}
	return h;
}

_Static_assert(sizeof(struct cf_case) == 64, "case record is 64 bytes");
_Static_assert(sizeof(struct cf_result) == 256, "result record is 256 bytes");
_Static_assert(sizeof(struct cf_control) == 24 + 8 * CF_CONTROL_COUNTS,
	       "control block has no padding");
_Static_assert(CF_NUM_CLASSES <= CF_CONTROL_COUNTS, "a count per class");
_Static_assert(__builtin_offsetof(struct cf_case, seal) == 56 &&
		       __builtin_offsetof(struct cf_result, seal) == 248,
	       "the seal is a record's last word");

#endif /* CF_RECORDS_H */
