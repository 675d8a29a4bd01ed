/* The unwinder registry (unwinders/registry.c): every unwinder and stop
 * reason it knows is the one the manual documents (docs/unwinders.md names
 * each in backquotes), names resolve to their unwinder and near misses to
 * none, default arches are arches of arches.def, the lists are the table's
 * names in order, and uw_why_hex writes what libc's printf writes. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arches.h"
#include "unwinders/unwind.h"

static char *manual;

static void setup(void)
{
	FILE *f = fopen("docs/unwinders.md", "r");
	ck_assert_msg(f, "docs/unwinders.md: run the tests from the repository root");
	manual = calloc(1, 1 << 20);
	ck_assert_ptr_nonnull(manual);
	size_t n = fread(manual, 1, (1 << 20) - 1, f);
	ck_assert_uint_gt(n, 0);
	fclose(f);
}

static void teardown(void)
{
	free(manual);
	manual = NULL;
}

static bool documented(const char *name)
{
	char q[80];
	snprintf(q, sizeof(q), "`%s`", name);
	return strstr(manual, q) != NULL;
}

START_TEST(names_documented_and_found)
{
	size_t n;
	const struct uw_unwinder *const *t = uw_unwinders(&n);
	ck_assert_uint_ge(n, 5);
	for (size_t i = 0; i < n; i++) {
		ck_assert_msg(documented(t[i]->name), "unwinder %s is not in docs/unwinders.md", t[i]->name);
		ck_assert_ptr_eq(uw_unwinder_by_name(t[i]->name), t[i]);
		ck_assert_msg(t[i]->about && t[i]->about[0], "%s: no about line", t[i]->name);
		ck_assert_msg(t[i]->unwind, "%s: no unwind function", t[i]->name);
		for (size_t j = 0; j < i; j++)
			ck_assert_str_ne(t[i]->name, t[j]->name);
		for (const char *const *a = t[i]->default_arches; a && *a; a++)
			ck_assert_msg(arch_facts_by_name(*a), "%s: default arch %s is not in arches.def", t[i]->name, *a);
		if (t[i]->expect_as)
			ck_assert_msg(uw_unwinder_by_name(t[i]->expect_as), "%s: expect_as %s unknown", t[i]->name,
				      t[i]->expect_as);
	}
	/* near misses name nothing */
	static const char *const miss[] = { "", "FP", "fp ", " fp", "libunwin", "libdw2", "oracle,fp", "perf" };
	for (size_t i = 0; i < sizeof(miss) / sizeof(miss[0]); i++)
		ck_assert_msg(!uw_unwinder_by_name(miss[i]), "'%s' found", miss[i]);
}
END_TEST

START_TEST(stop_names_documented)
{
	for (int s = UW_STOP_END; s <= UW_STOP_ERROR; s++) {
		const char *name = uw_stop_name((enum uw_stop)s);
		ck_assert_msg(strcmp(name, "?") && documented(name), "stop %d: '%s' not in docs/unwinders.md", s, name);
		for (int o = UW_STOP_END; o < s; o++)
			ck_assert_str_ne(name, uw_stop_name((enum uw_stop)o));
	}
	ck_assert_str_eq(uw_stop_name((enum uw_stop)(UW_STOP_ERROR + 1)), "?");
	ck_assert_str_eq(uw_stop_name((enum uw_stop)-1), "?");
}
END_TEST

/* the lists: every name in table order; per arch, those on by default there */
START_TEST(lists_follow_the_table)
{
	size_t n;
	const struct uw_unwinder *const *t = uw_unwinders(&n);
	char all[512], want[512] = "";
	uw_unwinder_list(NULL, all, sizeof(all));
	for (size_t i = 0; i < n; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want), "%s%s", i ? "," : "", t[i]->name);
	ck_assert_str_eq(all, want);
	for (const struct arch_facts *a = arch_facts_by_name("x86_64"); a; a = NULL) {
		char on[512];
		uw_unwinder_list(a->name, on, sizeof(on));
		/* docs: lr-step is the arm64 leaf record's emulation, off elsewhere */
		ck_assert_msg(!strstr(on, "lr-step"), "x86_64 defaults: %s", on);
		ck_assert_msg(strstr(on, "fp") && strstr(on, "oracle"), "x86_64 defaults: %s", on);
	}
	char a64[512];
	uw_unwinder_list("aarch64", a64, sizeof(a64));
	ck_assert_msg(strstr(a64, "lr-step"), "aarch64 defaults: %s", a64);
	/* a buffer too small for the list: cut at a name, still a string */
	char small[6];
	uw_unwinder_list(NULL, small, sizeof(small));
	ck_assert_uint_lt(strlen(small), sizeof(small));
	ck_assert(!strncmp(all, small, strlen(small)));
}
END_TEST

START_TEST(why_hex_is_printf)
{
	static const uint64_t v[] = { 0, 1, 0xf, 0x10, 0x7f0000001234ull, UINT64_MAX, 1ull << 63 };
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char got[64], want[64];
		uw_why_hex(got, sizeof(got), "pc ", v[i], " unmapped");
		snprintf(want, sizeof(want), "pc 0x%" PRIx64 " unmapped", v[i]);
		ck_assert_str_eq(got, want);
		char cut[8];
		uw_why_hex(cut, sizeof(cut), "pc ", v[i], " unmapped");
		want[7] = 0;
		ck_assert_str_eq(cut, want);
	}
}
END_TEST

Suite *suite_registry(void);
Suite *suite_registry(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("registry");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, names_documented_and_found);
	tcase_add_test(tc, stop_names_documented);
	tcase_add_test(tc, lists_follow_the_table);
	tcase_add_test(tc, why_hex_is_printf);
	suite_add_tcase(s, tc);
	return s;
}
