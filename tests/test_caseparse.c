/* Case parser: good cases parse, every error names file:line and what was expected. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "harness/case.h"

#define GOOD \
	"[case]\nname = t\narch = x86_64\nabout = a test\n" \
	"[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n" \
	"[unwind]\ncfi = derived\n" \
	"[sample]\nat = every-insn\n" \
	"[expect]\nfp = ok; skipped at 0,1,7; wrong at callee\noracle = consistent; inconsistent at 2-4\n"

START_TEST(parse_good)
{
	struct hx_case c;
	char err[512];
	int rc = hx_case_parse(&c, "good.case", GOOD, strlen(GOOD), err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(c.name, "t");
	ck_assert_uint_eq(c.nops, 5);
	ck_assert(c.every_insn && !c.in_callee);
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "tramp+0x0", 0), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "tramp+0x4", 4), "ok");
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "tramp2+0x7", 7), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "callee", -1), "wrong");
	ck_assert_str_eq(hx_case_expect(&c, "oracle", "current", 8192, "tramp+0x3", 3), "inconsistent");
	ck_assert_str_eq(hx_case_expect(&c, "oracle", "current", 8192, "tramp+0x5", 5), "consistent");
	ck_assert_ptr_null(hx_case_expect(&c, "libdw", "current", 8192, "tramp+0x5", 5));
	hx_case_free(&c);
}
END_TEST

static const struct {
	const char *text;
	const char *want;      /* substring of the message, which starts with "bad.case:LINE:" */
	int line;
} bad[] = {
	{ "name = x\n", "text before the first section", 1 },
	{ "[case]\nname = t\n[bogus]\n", "unknown section '[bogus]'", 3 },
	{ "[case]\nname = t\narch = sparc\n", "arch: expected x86_64 or aarch64", 3 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\npushfp\n", "unknown op", 6 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[unwind]\ncfi = bytes zz\n", "hex bytes", 8 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[unwind]\nfde_enc = pcrel|foo\n", "fde_enc", 8 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[expect]\nfp = great\n", "unknown verdict 'great'", 8 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[expect]\nfp = ok; skipped 1\n", "VERDICT at LIST", 8 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[expect]\nfp = ok\nfp = ok\n", "second expectation", 9 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[sample]\ndepth = 99\n", "depth", 8 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[sample]\nat = sometimes\n", "at: expected", 8 },
	{ "[case]\nname = t\narch = x86_64\n[code]\nret\n[expect]\nfp = ok\n", "missing 'about'", 7 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n", "missing [expect]", 6 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[case]\n", "appears twice", 5 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[expect]\nfp = ok; skipped at 9-2\n", "bad offset range", 8 },
	{ "[case]\nname = t\narch = x86_64\nabout = a\n[code]\nret\n[unwind]\ncfi = directives\n[expect]\nfp = ok\n", "no .cfi_* lines", 10 },
	{ "[case]\nname = bad name!\n", "name: expected", 2 },
};

START_TEST(parse_bad)
{
	struct hx_case c;
	char err[512], prefix[64];
	int rc = hx_case_parse(&c, "bad.case", bad[_i].text, strlen(bad[_i].text), err, sizeof(err));
	hx_case_free(&c);
	ck_assert_msg(rc == -1, "case %d parsed but should not", _i);
	snprintf(prefix, sizeof(prefix), "bad.case:%d: ", bad[_i].line);
	ck_assert_msg(!strncmp(err, prefix, strlen(prefix)), "case %d: '%s' does not start with '%s'", _i, err, prefix);
	ck_assert_msg(strstr(err, bad[_i].want), "case %d: '%s' lacks '%s'", _i, err, bad[_i].want);
}
END_TEST

START_TEST(repo_cases_parse)
{
	const char *dirs[] = { "cases/x86_64" };
	char **paths;
	int n;
	char err[512];
	ck_assert_int_eq(hx_case_glob(dirs, 1, &paths, &n, err, sizeof(err)), 0);
	ck_assert_int_ge(n, 8);
	for (int i = 0; i < n; i++) {
		struct hx_case c;
		ck_assert_msg(hx_case_load(&c, paths[i], err, sizeof(err)) == 0, "%s", err);
		hx_case_free(&c);
		free(paths[i]);
	}
	free(paths);
}
END_TEST

Suite *suite_caseparse(void);
Suite *suite_caseparse(void)
{
	Suite *s = suite_create("caseparse");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, parse_good);
	tcase_add_loop_test(tc, parse_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, repo_cases_parse);
	suite_add_tcase(s, tc);
	return s;
}
