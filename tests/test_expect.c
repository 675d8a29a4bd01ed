/* [expect] compiled at load: offsets after FUNCTION+ in decimal and hex name one
 * point, ambiguous forms are refused with file:line, the table's lookup picks the
 * most specific key, and a directory without cases is refused. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "harness/case/case.h"
#include "harness/run/session.h"

/* code: push_fp 0, set_fp 1, call_target 4, pop_fp 6, ret 7; [expect] on line 14 */
#define EXP(x) "[case]\nname = t\narch = x86_64\nabout = a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n" \
	"[sample]\nat = every-insn\nprofiles = current, v6.1\nstack_size = 8192, 65528\n[expect]\n" x "\n"
#define XLINE 16

static const char *verdict(const char *text, const char *uw, const char *prof, int size, const char *where, int off)
{
	static struct hx_case c;
	static char v[32];
	char err[512];
	ck_assert_msg(hx_case_parse(&c, "x.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	const char *r = hx_case_expect(&c, uw, prof, size, where, off);
	snprintf(v, sizeof(v), "%s", r ? r : "(none)");
	hx_case_free(&c);
	return v;
}

/* tramp+7 and tramp+0x7 are one sample point; before, tramp+7 never matched */
START_TEST(decimal_and_hex_offsets)
{
	const char *forms[] = { "fp = ok; skipped at tramp+7", "fp = ok; skipped at tramp+0x7",
				"fp = ok; skipped at tramp+0X7", "fp = ok; skipped at 7", "fp = ok; skipped at 0x7" };
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char text[1024];
		snprintf(text, sizeof(text), EXP("%s\nlibunwind = ok\nlibdw = ok\noracle = consistent"), forms[i]);
		ck_assert_msg(!strcmp(verdict(text, "fp", "current", 8192, "tramp+0x7", 7), "skipped"), "%s", forms[i]);
		ck_assert_msg(!strcmp(verdict(text, "fp", "current", 8192, "tramp+0x6", 6), "ok"), "%s", forms[i]);
	}
	/* tramp+0x10 is 16, tramp+10 is 10: neither is an instruction start here */
	const char *text = EXP("fp = ok; skipped at tramp+0x10");
	struct hx_case c;
	char err[512];
	ck_assert_int_eq(hx_case_parse(&c, "x.case", text, strlen(text), err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "offset 16 is past the code"), "%s", err);
	hx_case_free(&c);
}
END_TEST

static const struct {
	const char *item;
	const char *want;
} bad[] = {
	{ "tramp+010", "'tramp+010': a leading 0 is ambiguous (octal or decimal?)" },
	{ "010", "'010': a leading 0 is ambiguous" },
	{ "07-9", "'07': a leading 0 is ambiguous" },
	{ "tramp+7h", "'tramp+7h': expected an offset, decimal (7) or 0x hex (0x7)" },
	{ "tramp+1e", "expected an offset, decimal (7) or 0x hex (0x7)" },
	{ "tramp+0x", "expected an offset" },
	{ "tramp+", "expected an offset" },
	{ "1e", "expected an offset" },
	{ "tramp9+0x0", "no function 'tramp9'" },
	{ "trampx+0x0", "no function 'trampx'" },
	{ "tramp+0x5", "offset 5 is inside an instruction" },
};

START_TEST(ambiguous_offsets_refused)
{
	char text[1024], err[512], prefix[32];
	snprintf(text, sizeof(text), EXP("fp = ok; skipped at %s"), bad[_i].item);
	struct hx_case c;
	int rc = hx_case_parse(&c, "bad.case", text, strlen(text), err, sizeof(err));
	hx_case_free(&c);
	ck_assert_msg(rc == -EINVAL, "'%s' parsed", bad[_i].item);
	snprintf(prefix, sizeof(prefix), "bad.case:%d: ", XLINE);
	ck_assert_msg(!strncmp(err, prefix, strlen(prefix)), "'%s' does not start with '%s'", err, prefix);
	ck_assert_msg(strstr(err, bad[_i].want), "'%s' lacks '%s'", err, bad[_i].want);
}
END_TEST

/* the table: profile and size beat profile beat size beat none, at every combination */
START_TEST(most_specific_key)
{
	const char *text = EXP("fp = ok\nfp@v6.1 = skipped\nfp@65528 = wrong\nfp@v6.1@65528 = duplicate\n"
			       "libunwind = ok\nlibdw = ok\noracle = consistent");
	ck_assert_str_eq(verdict(text, "fp", "current", 8192, "tramp+0x0", 0), "ok");
	ck_assert_str_eq(verdict(text, "fp", "v6.1", 8192, "tramp+0x0", 0), "skipped");
	ck_assert_str_eq(verdict(text, "fp", "current", 65528, "tramp+0x0", 0), "wrong");
	ck_assert_str_eq(verdict(text, "fp", "v6.1", 65528, "tramp+0x0", 0), "duplicate");
	ck_assert_str_eq(verdict(text, "libdw", "v6.1", 65528, "callee", -1), "ok");
	ck_assert_str_eq(verdict(text, "lr-step", "current", 8192, "tramp+0x0", 0), "(none)");
	/* hx_case_find by column index and profile number, as the runner asks */
	struct hx_case c;
	char err[512];
	ck_assert_int_eq(hx_case_parse(&c, "x.case", text, strlen(text), err, sizeof(err)), 0);
	size_t n;
	const struct uw_unwinder *const *all = hx_columns(&n);
	int fp = -1;
	for (size_t i = 0; i < n; i++)
		if (all[i] == hx_column_by_name("fp"))
			fp = (int)i;
	ck_assert_int_ge(fp, 0);
	const struct hx_expect *x = hx_case_find(&c, fp, PV_V61, 65528);
	ck_assert_ptr_nonnull(x);
	ck_assert_str_eq(x->unwinder, "fp@v6.1@65528");
	ck_assert_str_eq(hx_case_verdict_at(x, 0, 0), "duplicate");
	ck_assert_ptr_null(hx_case_find(&c, fp, HX_MAX_PROFILES, 8192));
	hx_case_free(&c);
}
END_TEST

/* a bare offset is any generated function's, never the C target's; an exact one only its own */
START_TEST(where_by_function)
{
	const char *text = EXP("fp = ok; skipped at 4; wrong at tramp+0x0\nlibunwind = ok\nlibdw = ok\noracle = consistent");
	ck_assert_str_eq(verdict(text, "fp", NULL, 8192, "tramp+0x4", 4), "skipped");
	ck_assert_str_eq(verdict(text, "fp", NULL, 8192, "tramp2+0x4", 4), "skipped");
	ck_assert_str_eq(verdict(text, "fp", NULL, 8192, "leaf+0x4", 4), "skipped");
	ck_assert_str_eq(verdict(text, "fp", NULL, 8192, "tramp+0x0", 0), "wrong");
	ck_assert_str_eq(verdict(text, "fp", NULL, 8192, "tramp2+0x0", 0), "ok");
	ck_assert_str_eq(verdict(text, "fp", NULL, 8192, "callee", -1), "ok");
	ck_assert_int_eq(hx_case_fn_id("tramp"), 0);
	ck_assert_int_eq(hx_case_fn_id("tramp3"), 2);
	ck_assert_int_eq(hx_case_fn_id("leaf"), HX_FN_LEAF);
	ck_assert_int_eq(hx_case_fn_id("callee"), HX_FN_CALLEE);
	ck_assert_int_eq(hx_case_fn_id("tramp02"), HX_FN_NONE);
	ck_assert_int_eq(hx_case_fn_id("tramp9"), HX_FN_NONE);
}
END_TEST

START_TEST(glob_empty_dir)
{
	char dir[] = "/tmp/jitunwind-glob-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	const char *paths[] = { dir };
	char **out;
	struct ju_err je;
	const char *err = je.msg;
	int n;
	int rc = hx_case_glob(paths, 1, &out, &n, &je);
	for (int i = 0; i < n; i++)
		free(out[i]);
	free(out);
	rmdir(dir);
	ck_assert_int_eq(rc, -ENOENT);
	ck_assert_msg(strstr(err, dir) && strstr(err, "no .case files"), "%s", err);
}
END_TEST

Suite *suite_expect(void);
Suite *suite_expect(void)
{
	Suite *s = suite_create("expect");
	TCase *tc = tcase_create("expect");
	tcase_add_test(tc, decimal_and_hex_offsets);
	tcase_add_loop_test(tc, ambiguous_offsets_refused, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, most_specific_key);
	tcase_add_test(tc, where_by_function);
	tcase_add_test(tc, glob_empty_dir);
	suite_add_tcase(s, tc);
	return s;
}
