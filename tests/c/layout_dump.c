/* SPDX-License-Identifier: MIT */
/*
 * layout_dump.c - prints the layout of harness/records.h as the C compiler sees
 * it, one fact per line, for tests/test_records.py to compare with records.py.
 */
#include <stddef.h>
#include <stdio.h>

#include "../../harness/records.h"

#define FIELD(s, f)                                                          \
	printf("field %s %s %zu %zu\n", #s, #f, offsetof(struct cf_##s, f), \
	       sizeof(((struct cf_##s *)0)->f))
#define CONST(c) printf("const %s %llu\n", #c, (unsigned long long)(c))
#define ENUM(e) printf("enum %s %d\n", #e, (int)(e))
#define CLASS(e, b, s) printf("class %s %d %s %u\n", s, b, #e, (unsigned)(e));

int main(void)
{
	printf("size case %zu\n", sizeof(struct cf_case));
	FIELD(case, magic);
	FIELD(case, kind);
	FIELD(case, profile);
	FIELD(case, id);
	FIELD(case, n);
	FIELD(case, src_off);
	FIELD(case, dst_off);
	FIELD(case, src_fault);
	FIELD(case, dst_fault);
	FIELD(case, reserved);

	printf("size result %zu\n", sizeof(struct cf_result));
	FIELD(result, magic);
	FIELD(result, type);
	FIELD(result, signal);
	FIELD(result, id);
	FIELD(result, classes);
	FIELD(result, errors);
	FIELD(result, ret);
	FIELD(result, accessible);
	FIELD(result, claimed);
	FIELD(result, diff_off);
	FIELD(result, diff_count);
	FIELD(result, diff_want);
	FIELD(result, diff_got);
	FIELD(result, regs_bad);
	FIELD(result, reg_got);
	FIELD(result, faults);
	FIELD(result, aux);
	FIELD(result, fault_pc);
	FIELD(result, fault_addr);
	FIELD(result, fixup_pc);
	FIELD(result, dst);
	FIELD(result, src);
	FIELD(result, reserved);

	CF_CLASSES(CLASS)

	CONST(CF_PAGE_SIZE);
	CONST(CF_MAX_LEN);
	CONST(CF_CANARY_LEN);
	CONST(CF_NO_FAULT);
	CONST(CF_CASE_MAGIC);
	CONST(CF_RESULT_MAGIC);
	CONST(CF_NUM_CLASSES);
	CONST(CF_ERRORS_EXACT);
	CONST(CF_ERRORS_LINUX);

	ENUM(CF_KIND_COPY);
	ENUM(CF_KIND_CLEAR);
	ENUM(CF_KIND_MEMCPY);
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
