/* SPDX-License-Identifier: MIT */
/*
 * prober.h - the prober's shared types: a case, the sweep's options, the observation of
 * one call, and the functions each file provides (one concern per file):
 *
 *   cases.c       the enumeration (global index order), spec parse/print, option lists
 *   calls.c       the objects (files, pipe, sockets), the user buffer, one call observed
 *   check.c       the contract: an observation -> finding classes
 *   supervisor.c  the worker, the watchdog, the sweep's accounting
 *   out.c         the line protocol: CF <type> key=value... #crc32
 *   main.c        options, PID-1 set-up, power-off
 */
#ifndef CF_PROBER_H
#define CF_PROBER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CF_PROBER_VERSION 1
#define CF_PAGE 4096u
#define CF_MAX_N 1048576u
#define CF_MAX_KOFF 65535u
#define CF_MAX_SEGS 4u
#define CF_UDP_MAX 65507u /* the largest IPv4 UDP payload */
/* Pipes must make progress once this many bytes are accessible (docs/formats.md). */
#define CF_PIPE_CHUNK 4096u

enum cf_dir { CF_to_kernel, CF_to_user };
enum cf_obj { CF_file, CF_pipe, CF_udp };

#define CF_SYSCALL(name, dir, obj, iov, koff) CF_SYS_##name,
enum cf_sys {
#include "case.def"
	CF_NSYS
};

#define CF_PROT(name, meaning) CF_PROT_##name,
enum cf_prot {
#include "case.def"
	CF_NPROT
};

#define CF_CLASS(ident, name, meaning) CF_CL_##ident,
enum cf_class {
#include "case.def"
	CF_NCLASS
};

#define CF_AXIS(name, def, meaning) CF_AXIS_##name,
enum cf_axis {
#include "case.def"
	CF_NAXIS
};
extern const char *const cf_axis_names[CF_NAXIS];
extern const char *const cf_axis_defaults[CF_NAXIS];

#define CF_FIELD(name, type, def, lo, hi, meaning) CF_FLD_##name,
enum cf_field {
#include "case.def"
	CF_NFIELD
};

struct cf_sysinfo {
	const char *name;
	enum cf_dir dir;
	enum cf_obj obj;
	int iov;
	int koff;
};
extern const struct cf_sysinfo cf_sys[CF_NSYS];
extern const char *const cf_prot_names[CF_NPROT];
extern const char *const cf_class_names[CF_NCLASS];

/* A case: the fields of case.def, in its order. */
struct cf_case {
	uint32_t sys; /* enum cf_sys */
	uint32_t v[CF_NFIELD];
};
#define CF_N(c) ((c)->v[CF_FLD_n])
#define CF_ACC(c) ((c)->v[CF_FLD_acc])
#define CF_KOFF(c) ((c)->v[CF_FLD_koff])
#define CF_SEGS(c) ((c)->v[CF_FLD_segs])
#define CF_PROTV(c) ((c)->v[CF_FLD_prot])
#define CF_GAP(c) ((c)->v[CF_FLD_gap])

#define CF_SPEC_MAX 128
#define CF_MAX_LIST 64

/* A list option: up to CF_MAX_LIST inclusive ranges, as given ("0-7,4089-4095"). */
struct cf_list {
	unsigned count;
	uint32_t lo[CF_MAX_LIST], hi[CF_MAX_LIST];
	int given;
};

enum cf_selftest_kind { CF_ST_NONE, CF_ST_BREAK, CF_ST_HANG, CF_ST_CRASH };

struct cf_opts {
	uint32_t sys_mask; /* bit per enum cf_sys */
	uint32_t max_len;
	struct cf_list sizes, koffs, segs, prots, gaps;
	char list_text[1 + CF_NAXIS]
		      [256]; /* the option texts, for hello: syscalls sizes koffs segs prots gaps */
	uint64_t shard_j, shard_n, start;
	struct cf_case *cases; /* --case: just these */
	unsigned ncases;
	double timeout;
	unsigned hang_budget, max_lines;
	const char *dir;
	int count_only;
	int trace; /* --trace: a `run` line before each case (to pin the case a kernel died in) */
	enum cf_selftest_kind selftest;
	int selftest_class; /* CF_ST_BREAK: enum cf_class */
	uint64_t selftest_index; /* CF_ST_HANG/CRASH: the global index that hangs or crashes */
	/* expanded by cf_opts_finish: the n values, and the lists as sorted values */
	uint32_t *nv, *koffv, *segv, *protv, *gapv;
	unsigned nn, nkoff, nseg, nprot, ngap;
};

/* ---- cases.c ---- */
/* Parse a spec; 0, or -1 with a one-line reason in err. */
int cf_spec_parse(const char *text, struct cf_case *c, char *err, size_t errlen);
/* The canonical spec; returns buf. */
char *cf_spec_print(const struct cf_case *c, char *buf, size_t len);
/* A case's own constraints (every spec and every enumerated case); 0 or -1 + reason. */
int cf_case_check(const struct cf_case *c, char *err, size_t errlen);
int cf_list_parse(const char *text, uint32_t lo, uint32_t hi, struct cf_list *l, char *err,
		  size_t errlen);
int cf_list_has(const struct cf_list *l, uint32_t v);
int cf_sys_lookup(const char *name);
int cf_class_lookup(const char *name);
void cf_opts_defaults(struct cf_opts *o);
/* Expand the lists (after parsing the options); 0, or -1 + reason. */
int cf_opts_finish(struct cf_opts *o, char *err, size_t errlen);
void cf_opts_free(struct cf_opts *o);

/* The enumeration: a cursor in global index order (cf_iter_seek jumps by whole blocks). */
struct cf_iter {
	const struct cf_opts *o;
	uint64_t index; /* of the current case */
	int done;
	struct cf_case c;
	/* position: syscall, n, acc (as indexes into their lists), then the inner dims */
	unsigned si, ni, ai, ki, ci, pi, gj;
	uint32_t *acc; /* acc values for the current n */
	unsigned nacc;
};
void cf_iter_start(struct cf_iter *it, const struct cf_opts *o, uint64_t index);
void cf_iter_next(struct cf_iter *it);
void cf_iter_free(struct cf_iter *it);
uint64_t cf_total(const struct cf_opts *o);
/* Cases of syscall s with global index in [from, end of s), counted in the shard. */
uint64_t cf_remaining(const struct cf_opts *o, unsigned s, uint64_t from);
/* The index after syscall s's last case (the whole enumeration, not --case lists). */
uint64_t cf_sys_end(const struct cf_opts *o, unsigned s);
/* How many indexes in [a, b) the shard runs. */
uint64_t cf_shard_count(const struct cf_opts *o, uint64_t a, uint64_t b);

/* ---- the byte patterns (docs/formats.md): user-side source, kernel-side old bytes ---- */
static inline uint8_t cf_user_byte(uint64_t i)
{
	return (uint8_t)((((uint32_t)i * 2654435761u) >> 24) | 1u); /* always odd */
}
static inline uint8_t cf_kern_byte(uint64_t j)
{
	return (uint8_t)((((uint32_t)j * 2246822519u) >> 24) & 0xfeu); /* always even */
}

/* ---- calls.c ---- */
struct cf_obs {
	long ret;
	int err;
	/* what the checks need, filled by cf_call_run */
	uint8_t *dst; /* to_kernel: the destination's bytes as read back (file, pipe, datagram) */
	size_t dst_len;
	long long file_size;
	int extra; /* sendto: datagrams beyond the first; pipe: none */
	uint8_t *rest; /* pipe_read: what the pipe still held after the call */
	size_t rest_len;
	int setup_failed;
	char detail[160];
};
struct cf_env; /* a worker's objects and memory */
struct cf_env *cf_env_new(const char *dir, uint32_t max_n, uint32_t max_koff, char *err,
			  size_t errlen);
void cf_env_free(struct cf_env *e);
/* Set up the case, make the call, observe: 0, or -1 (set-up failed, reason in o->detail). */
int cf_call_run(struct cf_env *e, const struct cf_case *c, struct cf_obs *o);
/* The negative controls (only when asked): corrupt the observation so that check cls must
 * fire; block in the kernel for good. */
void cf_selftest_break(struct cf_env *e, const struct cf_case *c, struct cf_obs *o, int cls);
void cf_selftest_sleep(void) __attribute__((noreturn));
/* The user byte at linear position i after the call, and whether it is accessible. */
int cf_user_get(struct cf_env *e, const struct cf_case *c, uint32_t i, uint8_t *out);
/* The gap bytes and the read-only page: 0 when unchanged, else the offset past n + 1. */
long cf_user_outside_changed(struct cf_env *e, const struct cf_case *c);

/* ---- check.c ---- */
struct cf_finding {
	int cls;
	char detail[160];
};
/* Apply the contract; fills f[] (at most CF_NCLASS) and returns how many. */
int cf_check(struct cf_env *e, const struct cf_case *c, const struct cf_obs *o,
	     struct cf_finding *f);
/* The source byte at linear position i of the case. */
uint8_t cf_src_byte(const struct cf_case *c, uint64_t i);
/* The smallest acc at which the call must make progress. */
uint32_t cf_progress_threshold(const struct cf_case *c);

/* ---- out.c ---- */
uint32_t cf_crc32(const void *p, size_t len);
/* Emit one line: type, then fields "key=value" given as a printf format (no spaces in
 * values: use cf_pct for free text). Written with one write(2) to fd 1. */
void cf_line(const char *type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Percent-encode text (space, controls, %, #, bytes >= 0x7f) into buf. */
char *cf_pct(const char *text, char *buf, size_t len);

/* ---- supervisor.c ---- */
int cf_sweep(const struct cf_opts *o);

/* ---- main.c: time ---- */
double cf_now(void); /* CLOCK_MONOTONIC seconds; aborts the sweep if the clock fails */

#endif
