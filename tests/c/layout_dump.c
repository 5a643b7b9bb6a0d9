/* SPDX-License-Identifier: MIT */
/*
 * layout_dump.c - prints the layout of harness/records.h as the C compiler sees
 * it, one fact per line, for tests/test_records.py to compare with records.py.
 */
#include <stddef.h>
#include <stdio.h>

#include "../../harness/records.h"
#include "../../harness/cases.h"

/* One line per field, straight from the X-macros: name, offset, size, C type. */
#define FIELD(s, type, name, dims, about)                                            \
	printf("field %s %s %zu %zu %s\n", #s, #name, offsetof(struct cf_##s, name), \
	       sizeof(((struct cf_##s *)0)->name), #type);
#define CASE_FIELD(t, n, d, a) FIELD(case, t, n, d, a)
#define RESULT_FIELD(t, n, d, a) FIELD(result, t, n, d, a)
#define CONTROL_FIELD(t, n, d, a) FIELD(control, t, n, d, a)
#define SWEEP_CFG_FIELD(t, n, d, a) FIELD(sweep_cfg, t, n, d, a)
#define CONST(c) printf("const %s %llu\n", #c, (unsigned long long)(c))
#define ENUM(e) printf("enum %s %d\n", #e, (int)(e))
#define CLASS(e, b, s, about) printf("class %s %d %s %u\n", s, b, #e, (unsigned)(e));

int main(void)
{
	printf("size case %zu\n", sizeof(struct cf_case));
	CF_CASE_FIELDS(CASE_FIELD)
	printf("size result %zu\n", sizeof(struct cf_result));
	CF_RESULT_FIELDS(RESULT_FIELD)
	printf("size control %zu\n", sizeof(struct cf_control));
	CF_CONTROL_FIELDS(CONTROL_FIELD)
	printf("size sweep_cfg %zu\n", sizeof(struct cf_sweep_cfg));
	CF_SWEEP_CFG_FIELDS(SWEEP_CFG_FIELD)

	/* The seal of a known record, for records.seal() to match. */
	struct cf_result r = {.magic = CF_RESULT_MAGIC,
			      .type = CF_RESULT_DONE,
			      .id = 12345,
			      .diff_off = -7,
			      .aux = 2,
			      .src = 0xfedcba9876543210ull};
	uint64_t key[2] = {0x0123456789abcdefull, 0xa5a5a5a55a5a5a5aull};
	printf("seal %llu %llu %d %llu\n", (unsigned long long)key[0], (unsigned long long)key[1],
	       42, (unsigned long long)cf_seal(key, 42, &r, sizeof(r)));

	CF_CLASSES(CLASS)

	CONST(CF_PAGE_SIZE);
	CONST(CF_MAX_LEN);
	CONST(CF_CANARY_LEN);
	CONST(CF_NO_FAULT);
	CONST(CF_MAX_FAULT);
	CONST(CF_CONTROL_MAGIC);
	CONST(CF_CONTROL_VERSION);
	CONST(CF_CONTROL_COUNTS);
	CONST(CF_CASE_MAGIC);
	CONST(CF_RESULT_MAGIC);
	CONST(CF_NUM_CLASSES);
	CONST(CF_ERRORS_EXACT);
	CONST(CF_ERRORS_LINUX);

#define DUMP_KIND_ENUM(e, name, u, h, s, d, r, args, sig) ENUM(CF_KIND_##e);
	CF_KINDS(DUMP_KIND_ENUM)
	CONST(CF_NUM_KINDS);
	CONST(CF_MEMMOVE_SLACK);
	CONST(CF_GRANULE_MTE);
	static const char *const kind_names[CF_NUM_KINDS] = {CF_KIND_NAMES};
	for (unsigned k = 0; k < CF_NUM_KINDS; k++)
		printf("kindinfo %u %s %d %d %d %d %d\n", k, kind_names[k], cf_kind_is_user_copy(k),
		       cf_kind_has_src(k), cf_kind_returns_dst(k), cf_kind_src_faults(k),
		       cf_kind_dst_faults(k));
	printf("kindinfo-past %d %d %d %d %d\n", cf_kind_is_user_copy(CF_NUM_KINDS),
	       cf_kind_has_src(CF_NUM_KINDS), cf_kind_returns_dst(CF_NUM_KINDS),
	       cf_kind_src_faults(CF_NUM_KINDS), cf_kind_dst_faults(CF_NUM_KINDS));
	uint64_t edges[] = {CF_MAX_LEN / 2 - 9, CF_MAX_LEN / 2 - 8, CF_MAX_LEN / 2 - 7,
			    CF_MAX_LEN - 1, CF_MAX_LEN};
	for (uint64_t n = 0; n < 40; n++)
		printf("maxdisp %llu %llu\n", (unsigned long long)n,
		       (unsigned long long)cf_memmove_max_disp(n));
	for (unsigned i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
		printf("maxdisp %llu %llu\n", (unsigned long long)edges[i],
		       (unsigned long long)cf_memmove_max_disp(edges[i]));
	ENUM(CF_PROFILE_LINUX);
	ENUM(CF_PROFILE_EXACT);
	ENUM(CF_RESULT_CASE);
	ENUM(CF_RESULT_PROGRESS);
	ENUM(CF_RESULT_DONE);
	ENUM(CF_RESULT_ERROR);
	ENUM(CF_RESULT_COUNT);
	ENUM(CF_CASE_OK);
	ENUM(CF_CASE_BAD_MAGIC);
	ENUM(CF_CASE_BAD_KIND);
	ENUM(CF_CASE_BAD_PROFILE);
	ENUM(CF_CASE_TOO_LONG);
	ENUM(CF_CASE_BAD_OFFSET);
	ENUM(CF_CASE_SRC_UNREACHABLE);
	ENUM(CF_CASE_DST_UNREACHABLE);
	ENUM(CF_CASE_KIND_MISMATCH);
	ENUM(CF_CASE_BAD_FILL);
	ENUM(CF_CASE_BAD_DISP);
	ENUM(CF_CASE_KERNEL_SIDE_FAULT);
	ENUM(CF_CASE_BAD_GRANULE);
	ENUM(CF_CASE_NO_MTE);
	ENUM(CF_SWEEP_ALL_RUN);
	ENUM(CF_SWEEP_STOP_MASK);
	ENUM(CF_SWEEP_MAX_HANGS);
	ENUM(CF_EXEC_TIMEOUT_MS_DEFAULT);
	ENUM(CF_EXEC_TIMEOUT_MS_MAX);
	ENUM(CF_EXEC_MAX_HANGS_DEFAULT);
	ENUM(CF_REG_S0);
	ENUM(CF_REG_SP);
	ENUM(CF_REG_GP);
	ENUM(CF_REG_TP);
	ENUM(CF_REG_RA);
	return 0;
}
