/* Judge classification, table-driven (DESIGN vocabulary). */
#include <check.h>
#include <string.h>
#include "harness/case/judge.h"

#define T0 0x1000
#define T1 0x2000
#define T2 0x3000
#define T3 0x4000
#define X  0xdead

static const struct {
	const char *name;
	uint64_t got[8];
	int ng;
	enum hx_verdict v;
	int div;
} rows[] = {
	{ "exact", { T0, T1, T2, T3 }, 4, HX_OK, -1 },
	{ "beyond the anchor is not compared", { T0, T1, T2, T3, X, X }, 6, HX_OK, -1 },
	{ "prefix then stop", { T0, T1 }, 2, HX_TRUNCATED, 2 },
	{ "one frame only", { T0 }, 1, HX_ERROR, 1 },
	{ "nothing", { 0 }, 0, HX_ERROR, 0 },
	{ "caller missing", { T0, T2, T3 }, 3, HX_SKIPPED, 1 },
	{ "two missing", { T0, T3 }, 2, HX_SKIPPED, 1 },
	{ "garbage frame", { T0, X, T2, T3 }, 4, HX_WRONG, 1 },
	{ "garbage at the end", { T0, T1, X }, 3, HX_WRONG, 2 },
	{ "repeat", { T0, T1, T1, T2, T3 }, 5, HX_DUPLICATE, 2 },
	{ "skip then garbage is wrong", { T0, T2, X }, 3, HX_WRONG, 1 },
	{ "wrong pc", { X, T1, T2, T3 }, 4, HX_WRONG, 0 },
	{ "skipped and truncated", { T0, T2 }, 2, HX_SKIPPED, 1 },
	{ "a zero return address ends the chain", { T0, T1, 0 }, 3, HX_TRUNCATED, 2 },
	{ "only the pc and a zero", { T0, 0 }, 2, HX_ERROR, 1 },
};

START_TEST(judge_table)
{
	static const uint64_t truth[] = { T0, T1, T2, T3 };
	struct hx_judgement j;
	hx_judge(truth, 4, rows[_i].got, rows[_i].ng, &j);
	ck_assert_msg(j.v == rows[_i].v, "%s: got %s, want %s", rows[_i].name, hx_verdict_name(j.v),
		      hx_verdict_name(rows[_i].v));
	ck_assert_msg(j.diverge_got == rows[_i].div, "%s: divergence at %d, want %d", rows[_i].name,
		      j.diverge_got, rows[_i].div);
}
END_TEST

START_TEST(judge_repeated_truth)
{
	/* nested chains repeat addresses (the same stub return address at every
	 * level): alignment is positional, not by set membership */
	static const uint64_t truth[] = { T0, T1, T2, T1, T3 };
	static const uint64_t ok[] = { T0, T1, T2, T1, T3 };
	static const uint64_t skip[] = { T0, T2, T1, T3 };
	struct hx_judgement j;
	hx_judge(truth, 5, ok, 5, &j);
	ck_assert_int_eq(j.v, HX_OK);
	hx_judge(truth, 5, skip, 4, &j);
	ck_assert_int_eq(j.v, HX_SKIPPED);
}
END_TEST

START_TEST(prefix_eq)
{
	static const uint64_t a[] = { 1, 2, 3 }, b[] = { 1, 2, 4 };
	ck_assert(hx_chain_prefix_eq(a, 3, b, 3, 2));
	ck_assert(!hx_chain_prefix_eq(a, 3, b, 3, 3));
	ck_assert(!hx_chain_prefix_eq(a, 1, b, 3, 2));
}
END_TEST

Suite *suite_judge(void);
Suite *suite_judge(void)
{
	Suite *s = suite_create("judge");
	TCase *tc = tcase_create("verdicts");
	tcase_add_loop_test(tc, judge_table, 0, sizeof(rows) / sizeof(rows[0]));
	tcase_add_test(tc, judge_repeated_truth);
	tcase_add_test(tc, prefix_eq);
	suite_add_tcase(s, tc);
	return s;
}
