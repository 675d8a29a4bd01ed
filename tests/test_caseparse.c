/* Case parser: good cases parse, every error names file:line and what was expected. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "harness/case/case.h"

#define GOOD \
	"[case]\nname = t\narch = x86_64\nabout = a test\n" \
	"[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n" \
	"[unwind]\ncfi = derived\n" \
	"[sample]\nat = every-insn, in-callee\n" \
	"[expect]\nfp = ok; skipped at 0,1,7; wrong at callee\noracle = consistent; inconsistent at 1-4\n"

START_TEST(parse_good)
{
	struct hx_case c;
	char err[512];
	int rc = hx_case_parse(&c, "good.case", GOOD, strlen(GOOD), err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert_str_eq(c.name, "t");
	ck_assert_uint_eq(c.nops, 5);
	ck_assert(c.every_insn && c.in_callee);
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "tramp+0x0", 0), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "tramp+0x4", 4), "ok");
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "tramp2+0x7", 7), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "fp", "current", 8192, "callee", -1), "wrong");
	ck_assert_str_eq(hx_case_expect(&c, "oracle", "current", 8192, "tramp+0x1", 1), "inconsistent");
	ck_assert_str_eq(hx_case_expect(&c, "oracle", "current", 8192, "tramp+0x4", 4), "inconsistent");
	ck_assert_str_eq(hx_case_expect(&c, "oracle", "current", 8192, "tramp+0x6", 6), "consistent");
	ck_assert_ptr_null(hx_case_expect(&c, "libdw", "current", 8192, "tramp+0x5", 5));
	hx_case_free(&c);
}
END_TEST

/* a good case up to its [expect] (line 13), then one expectation (line 14) */
#define EXP(x) "[case]\nname = t\narch = x86_64\nabout = a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n" \
	"[sample]\nat = every-insn\n[expect]\n" x "\n"

static const struct {
	const char *text;
	const char *want;      /* substring of the message, which starts with "bad.case:LINE:" */
	int line;
} bad[] = {
	{ "name = x\n", "text before the first section", 1 },
	{ "[case]\nname = t\n[bogus]\n", "unknown section '[bogus]'", 3 },
	{ "[case]\nname = t\narch = sparc\n", "arch: expected one of x86_64, aarch64, riscv64, got 'sparc'", 3 },
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
	/* [expect] must name only what exists for the case's arch and code
	 * (code: push_fp 0, set_fp 1, call_target 4, pop_fp 6, ret 7) */
	{ EXP("libdwarf = ok"), "no unwinder 'libdwarf' (expected one of fp,libunwind,libdw,oracle", 14 },
	{ EXP("libdw@v6.2 = error"), "no perf profile 'v6.2' (expected current, v6.1, 5.x-0x40, 5.10.y or v6.12", 14 },
	{ EXP("fp@1.8+ = ok"), "'fp@1.8+': fp unwinds with no library a version could key", 14 },
	{ EXP("libunwind@1.x+ = ok"), "'libunwind@1.x+': '1.x+' is no library version (expected MAJOR.MINOR+", 14 },
	{ EXP("libunwind@v6.2@1.8+ = ok"), "no perf profile 'v6.2'", 14 },
	{ EXP("libunwind@8191 = error"), "invalid stack size 8191 (perf's dump size is a multiple of 8 in 8..65528)", 14 },
	{ EXP("libdw@v6.1@v6.1 = ok"), "no perf profile 'v6.1'", 14 },
	{ EXP("fp = ok; skipped at 2"), "offset 2 is inside an instruction (instructions start at tramp: 0,1,4,6,7)", 14 },
	{ EXP("fp = ok; skipped at 99"), "offset 99 is past the code", 14 },
	{ EXP("fp = ok; skipped at 2-6"), "offset 2 is inside an instruction", 14 },
	{ EXP("fp = ok; skipped at tramp+0x5"), "offset 5 is inside an instruction", 14 },
	{ EXP("fp = ok; skipped at tramp3+0x0"), "no function 'tramp3' (depth 1: tramp)", 14 },
	{ EXP("fp = ok; skipped at leaf+0x0"), "the case has no [leaf]", 14 },
	{ EXP("fp = ok; wrong at callee"), "does not sample the C target", 14 },
	{ EXP("fp = consistent"), "only the oracle", 14 },
	{ EXP("fp = ok; inconsistent at 0"), "only the oracle", 14 },
	{ EXP("lr-step = ok"), "lr-step does not run on x86_64 by default (there: fp,libunwind,libdw,oracle); write '?lr-step'", 14 },
	{ EXP("libdw@v6.1 = ok"), "never replays under profile v6.1", 14 },
	{ EXP("libdw@65528 = ok"), "never replays with stack size 65528", 14 },
	/* a sample point cut at 31 characters lost its '+': a crash (fuzz/regress/fuzz_case/) */
	{ EXP("fp = ok; skipped at trampaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa+0x1"), "is longer than 31 characters", 14 },
	{ EXP(""), "[expect] is empty: give each unwinder that runs on x86_64 a verdict (fp,libunwind,libdw,oracle)", 13 },
};

START_TEST(parse_bad)
{
	struct hx_case c;
	char err[512], prefix[64];
	int rc = hx_case_parse(&c, "bad.case", bad[_i].text, strlen(bad[_i].text), err, sizeof(err));
	hx_case_free(&c);
	ck_assert_msg(rc == -EINVAL, "case %d parsed but should not", _i);
	snprintf(prefix, sizeof(prefix), "bad.case:%d: ", bad[_i].line);
	ck_assert_msg(!strncmp(err, prefix, strlen(prefix)), "case %d: '%s' does not start with '%s'", _i, err, prefix);
	ck_assert_msg(strstr(err, bad[_i].want), "case %d: '%s' lacks '%s'", _i, err, bad[_i].want);
}
END_TEST

/* '?': an expectation for what need not run; real names still required */
START_TEST(parse_optional)
{
	static const char *const text =
		EXP("fp = ok\n?lr-step = ok; skipped at 0\n?libdw@v6.1 = error\n?libunwind@65528 = ok");
	struct hx_case c;
	char err[512];
	int rc = hx_case_parse(&c, "opt.case", text, strlen(text), err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	ck_assert(c.expect[1].optional && !c.expect[0].optional);
	ck_assert_str_eq(hx_case_expect(&c, "lr-step", "current", 8192, "tramp+0x0", 0), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "libdw", "v6.1", 8192, "tramp+0x0", 0), "error");
	ck_assert_str_eq(hx_case_expect(&c, "libunwind", "current", 65528, "tramp+0x0", 0), "ok");
	ck_assert_ptr_null(hx_case_expect(&c, "libdw", "current", 8192, "tramp+0x0", 0));
	hx_case_free(&c);
	static const char *const bad_opt = EXP("?libdwarf = ok");
	ck_assert_int_eq(hx_case_parse(&c, "opt.case", bad_opt, strlen(bad_opt), err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "opt.case:14: no unwinder 'libdwarf'"), "%s", err);
	hx_case_free(&c);
}
END_TEST

/* "@1.8+": the key holds from that version of the unwinder's library on;
 * the highest version reached wins over the key without one */
START_TEST(parse_version_key)
{
	static const char *const text = EXP("fp = ok\nlibunwind = ok; wrong at 1\nlibunwind@0.1+ = skipped\n"
					    "libunwind@99.0+ = error\nlibdw = ok\nlibdw@99.0+ = error\n"
					    "oracle = consistent");
	struct hx_case c;
	char err[512];
	int rc = hx_case_parse(&c, "ver.case", text, strlen(text), err, sizeof(err));
	ck_assert_msg(rc == 0, "%s", err);
	/* every libunwind is >= 0.1 and < 99.0; libdw (elfutils 0.x) never reaches 99.0 */
	ck_assert_str_eq(hx_case_expect(&c, "libunwind", "current", 8192, "tramp+0x1", 1), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "libdw", "current", 8192, "tramp+0x1", 1), "ok");
	ck_assert_int_eq(hx_case_version_code("1.8.1"), 1008);
	ck_assert_int_eq(hx_case_version_code("0.188"), 188);
	ck_assert_int_eq(hx_case_version_code("x"), -EINVAL);
	hx_case_free(&c);
}
END_TEST

START_TEST(repo_cases_parse)
{
	const char *dirs[] = { "cases/x86_64", "cases/aarch64" };
	char **paths;
	int n;
	struct ju_err err;
	ck_assert_int_eq(hx_case_glob(dirs, 2, &paths, &n, &err), 0);
	ck_assert_int_ge(n, 16);
	for (int i = 0; i < n; i++) {
		struct hx_case c;
		ck_assert_msg(hx_case_load(&c, paths[i], &err) == 0, "%s", err.msg);
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
	tcase_add_test(tc, parse_optional);
	tcase_add_test(tc, parse_version_key);
	tcase_add_test(tc, repo_cases_parse);
	suite_add_tcase(s, tc);
	return s;
}
