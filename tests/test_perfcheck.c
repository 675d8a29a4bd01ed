/* perf-check: perf script's output read back to addresses (both ways perf
 * prints a frame), and the command end to end with its negative controls:
 * a broken CFI case shows perf wrong exactly where the emulation says so; a
 * wrong emulation profile (perf 6.1 is not what `v6.1` models) fails; a perf
 * that cannot record fails; no perf is a visible skip.  Where perf or
 * perf_event_open is missing, the end-to-end tests print why and skip. */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness/run/perfrun.h"

#include "tests/hostarch.h"

#define PC_CASES (host_cases()->dir)

static char bin[1024];
static char tmp[256];
static char out[1 << 16];

static void setup(void)
{
	const char *b = getenv("JU_BIN");
	snprintf(bin, sizeof(bin), "%s", b ? b : "./jitunwind");
	snprintf(tmp, sizeof(tmp), "/tmp/jupc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static int sh(char *o, size_t ol, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int sh(char *o, size_t ol, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(o, 1, ol - 1, p);
	o[n] = 0;
	char drain[4096];
	while (fread(drain, 1, sizeof(drain), p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* perf 6.1 prints a frame in a DSO as its file offset, 6.12 and later as its
 * address; a map that came later than the sample does not place it; a DSO no
 * map holds leaves the frame out, said once; -1 is a zero return address */
START_TEST(script_frames_placed)
{
	char text[] =
		"   42 100.000000100: PERF_RECORD_MMAP2 42/42: [0x7f0000000000(0x1000) @ 0x80 00:00 0 0]: --xs /tmp/jitted-42-0.so\n"
		"   42 100.000000200: PERF_RECORD_MMAP2 42/42: [0x555500000000(0x3d000) @ 0x8000 fe:00 1 2]: r-xp /bin/x\n"
		"   42 100.000000300: \n"
		"\t              81 (/tmp/jitted-42-0.so)\n"
		"\t            9a6d (/bin/x)\n"
		"\tffffffffffffffff ([unknown])\n"
		"\n"
		"   42 100.000000400: \n"
		"\t    7f0000000001 (/tmp/jitted-42-0.so)\n"
		"\t    555500001a6d (/bin/x)\n"
		"\t            1234 (/lib/none.so)\n"
		"\n"
		"   42 100.000000500: PERF_RECORD_MMAP2 42/42: [0x600000000000(0x1000) @ 0 00:00 0 0]: r-xp /late.so\n"
		"   43 100.000000450: \n"
		"\t             100 (/late.so)\n";
	struct hx_ps ps;
	ck_assert_int_eq(hx_ps_parse(&ps, text), 0);
	ck_assert_uint_eq(ps.nmaps, 3);
	ck_assert_uint_eq(ps.n, 3);
	ck_assert_uint_eq(ps.s[0].pid, 42);
	ck_assert_uint_eq(ps.s[0].time, 100000000300ull);
	ck_assert_int_eq(ps.s[0].n, 3);
	ck_assert_uint_eq(ps.s[0].addr[0], 0x7f0000000001ull);
	ck_assert_uint_eq(ps.s[0].addr[1], 0x555500000000ull + 0x9a6d - 0x8000);
	ck_assert_uint_eq(ps.s[0].addr[2], UINT64_MAX);
	ck_assert(!ps.s[0].unplaced);
	ck_assert_int_eq(ps.s[1].n, 2);
	ck_assert_uint_eq(ps.s[1].addr[0], 0x7f0000000001ull);
	ck_assert_uint_eq(ps.s[1].addr[1], 0x555500001a6dull);
	ck_assert(ps.s[1].unplaced);
	ck_assert_msg(strstr(ps.why, "/lib/none.so") && strstr(ps.why, "0x1234"), "%s", ps.why);
	/* the map is stamped after the sample (times, not file order) */
	ck_assert_int_eq(ps.s[2].n, 0);
	ck_assert(ps.s[2].unplaced);
	hx_ps_free(&ps);
}
END_TEST

START_TEST(usage_and_missing_perf)
{
	ck_assert_int_eq(sh(out, sizeof(out), "%s perf-check --modes sideways %s", bin, PC_CASES), 2);
	ck_assert_msg(strstr(out, "--modes: ") && strstr(out, "'sideways'"), "%s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s perf-check --spin-us 5 %s", bin, PC_CASES), 2);
	ck_assert_int_eq(sh(out, sizeof(out), "%s perf-check %s/none.case", bin, tmp), 2);
	ck_assert_msg(strstr(out, "none.case"), "%s", out);
	ck_assert_int_eq(sh(out, sizeof(out), "%s perf-check --perf %s/no-such-perf %s", bin, tmp, PC_CASES), 77);
	ck_assert_msg(strstr(out, "skip:") && strstr(out, "no-such-perf"), "%s", out);
}
END_TEST

#if defined(__x86_64__)
/* 77 with the reason printed: the test is a visible skip */
static bool skipped(int rc, const char *test)
{
	if (rc != 77)
		return false;
	const char *why = strstr(out, "skip:");
	printf("perfcheck: %s skipped: %.200s", test, why ? why : out);
	return true;
}

/* the object of case `name` in mode `mode` of a perf-check JSON */
static const char *case_json(const char *json, const char *mode, const char *name, char *buf, size_t bl)
{
	char key[96];
	snprintf(key, sizeof(key), "{\"mode\":\"%s\"", mode);
	const char *m = strstr(json, key);
	ck_assert_ptr_nonnull(m);
	snprintf(key, sizeof(key), "{\"name\":\"%s\"", name);
	const char *c = strstr(m, key);
	ck_assert_ptr_nonnull(c);
	const char *e = strstr(c, "]}");
	ck_assert_ptr_nonnull(e);
	snprintf(buf, bl, "%.*s", (int)(e + 2 - c), c);
	return buf;
}

/* Broken CFI (neg-cfa-off-by-8): perf's chains are not the truth (wrong, or
 * cut short), and exactly the emulation's, at every point, in both modes */
START_TEST(broken_cfi_as_emulated)
{
	char json[512];
	snprintf(json, sizeof(json), "%s/p.json", tmp);
	int rc = sh(out, sizeof(out), "%s perf-check --json %s cases/x86_64/neg-cfa-off-by-8.case", bin, json);
	if (skipped(rc, "broken_cfi_as_emulated"))
		return;
	ck_assert_msg(rc == 0, "exit %d: %s", rc, out);
	size_t n;
	char *t = hx_slurp(json, &n), c[8192];
	ck_assert_ptr_nonnull(t);
	case_json(t, "dwarf", "neg-cfa-off-by-8", c, sizeof(c));
	/* perf over libunwind goes wrong; perf over libdw (perf >= 6.13 built the
	 * default way, e.g. sid's 7.2) ends the chains (error, truncated): either
	 * way not ok everywhere, and the emulation's chain (checked below) */
	const char *pv = strstr(c, "\"perf_verdicts\":{"), *pe = pv ? strchr(pv, '}') : NULL;
	bool bad = false;
	static const char *const nok[] = { "\"wrong\":", "\"truncated\":", "\"error\":" };
	for (size_t k = 0; pe && k < sizeof(nok) / sizeof(nok[0]); k++) {
		const char *w = strstr(pv, nok[k]);
		bad |= w && w < pe;
	}
	ck_assert_msg(bad, "perf is never wrong nor cut short: %s", c);
	ck_assert_msg(strstr(c, "\"points\":6,\"sampled\":6,\"points_agree\":6,"), "%s", c);
	ck_assert_msg(strstr(c, "\"disagreements\":[]"), "%s", c);
	case_json(t, "fp", "neg-cfa-off-by-8", c, sizeof(c));
	ck_assert_msg(strstr(c, "\"points\":6,\"sampled\":6,\"points_agree\":6,"), "%s", c);
	free(t);
}
END_TEST

/* The emulation told a wrong perf generation (v6.1: libunwind's base
 * without -pgoff, every JIT frame's caller lost): perf 6.1.y keeps them, so
 * perf-check fails and names each point and frame */
START_TEST(wrong_profile_fails)
{
	int rc = sh(out, sizeof(out), "%s perf-check --modes dwarf --perf-profile v6.1 cases/x86_64/cpython-3.13-fp.case",
		    bin);
	if (skipped(rc, "wrong_profile_fails"))
		return;
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "cpython-3.13-fp tramp+0x0 (push %rbp)") && strstr(out, "perf ok, emulation error") &&
		      strstr(out, "perf's chain has") && strstr(out, "FAIL"), "%s", out);
}
END_TEST

/* A perf that answers its version but cannot record: a failure with its words */
START_TEST(broken_perf_fails)
{
	char fake[512], text[512];
	snprintf(fake, sizeof(fake), "%s/fakeperf", tmp);
	snprintf(text, sizeof(text), "#!/bin/sh\n"
		 "case \"$*\" in *version*) printf 'perf version 6.1.0\\n  libunwind: [ on  ]\\n'; exit 0;; esac\n"
		 "echo 'fake perf: no recording today' >&2; exit 3\n");
	FILE *f = fopen(fake, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	ck_assert_int_eq(chmod(fake, 0755), 0);
	int rc = sh(out, sizeof(out), "%s perf-check --perf %s cases/x86_64/cpython-3.13-fp.case", bin, fake);
	if (skipped(rc, "broken_perf_fails"))
		return;
	ck_assert_msg(rc == 1, "exit %d: %s", rc, out);
	ck_assert_msg(strstr(out, "perf record: exit 3: fake perf: no recording today"), "%s", out);
}
END_TEST
#endif

Suite *suite_perfcheck(void);
Suite *suite_perfcheck(void)
{
	Suite *s = suite_create("perfcheck");
	TCase *tc = tcase_create("perfcheck");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, script_frames_placed);
	tcase_add_test(tc, usage_and_missing_perf);
#if defined(__x86_64__)
	tcase_add_test(tc, broken_cfi_as_emulated);
	tcase_add_test(tc, wrong_profile_fails);
	tcase_add_test(tc, broken_perf_fails);
#endif
	suite_add_tcase(s, tc);
	return s;
}
