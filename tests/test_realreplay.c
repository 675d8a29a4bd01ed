/* `jitunwind replay FILE.data` on a perf.data jitunwind writes itself
 * (record --perf-data, on this build's arch), checked against the samples
 * file the same run wrote: every sample counted, the JIT ones found from
 * the functions' own addresses; exit codes; malformed files (exit 2, file
 * and offset). */
#include <check.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness/samples.h"
#include "unwinders/uwarch.h"

#if defined(__aarch64__)
#define RR_CASES "cases/aarch64"
#define RR_ONE "cpython-aarch64.case"
#define RR_ARCH "aarch64"
#define RR_PC 32               /* perf's PERF_REG_ARM64_PC */
#else
#define RR_CASES "cases/x86_64"
#define RR_ONE "cpython-3.13-fp.case"
#define RR_ARCH "x86_64"
#define RR_PC 8                /* perf's PERF_REG_X86_IP */
#endif

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	static char buf[1 << 20];
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	return buf;
}

static long json_num(const char *j, const char *key)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = strstr(j, k);
	ck_assert_msg(p, "no %s in the JSON", key);
	return strtol(p + strlen(k), NULL, 10);
}

/* sum of one column's outcome over every pc of the JSON */
static long json_outcome(const char *j, const char *col, const char *out)
{
	char k[64];
	long sum = 0;
	snprintf(k, sizeof(k), "\"%s\":{", col);
	for (const char *p = strstr(j, k); p; p = strstr(p + 1, k)) {
		char o[64];
		snprintf(o, sizeof(o), "\"%s\":", out);
		const char *q = strstr(p, o), *end = strchr(p, '}');
		if (q && end && q < end)
			sum += strtol(q + strlen(o), NULL, 10);
	}
	return sum;
}

static const char *bin(void)
{
	const char *b = getenv("JU_BIN");
	return b ? b : "./jitunwind";
}

static char tmp[64];

static void record(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/jutest-rr-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
	ck_assert_int_eq(sh("%s record -o %s/s.bin --jitdump-dir %s --perf-data %s/p.data %s/%s %s/nested-depth3.case "
			    ">%s/log 2>&1", bin(), tmp, tmp, tmp, RR_CASES, RR_ONE, RR_CASES, tmp), 0);
}

START_TEST(replays_own_recording)
{
	record();
	char path[128], err[512];
	snprintf(path, sizeof(path), "%s/s.bin", tmp);
	struct hx_samples s;
	ck_assert_msg(hx_samples_read(&s, path, err, sizeof(err)) == 0, "%s", err);
	long want = 0, jit = 0, under = 0;
	for (size_t g = 0; g < s.ngroups; g++)
		for (size_t i = 0; i < s.groups[g].nsamples; i++) {
			const struct hx_sample *x = &s.groups[g].samples[i];
			want++;
			/* the truth chain: the pc, then return addresses */
			for (uint32_t t = 0; t < x->ntruth; t++) {
				uint64_t a = x->truth[t] - (t ? 1 : 0);
				bool in = false;
				for (uint32_t f = 0; f < s.groups[g].nfuncs; f++)
					in |= a >= s.groups[g].funcs[f].addr && a < s.groups[g].funcs[f].addr + s.groups[g].funcs[f].size;
				if (in) {
					*(t ? &under : &jit) += 1;
					break;
				}
			}
		}
	hx_samples_free(&s);
	ck_assert_int_gt(jit, 0);
	int rc = sh("%s replay --json %s/r.json %s/p.data >%s/out 2>&1", bin(), tmp, tmp, tmp);
	snprintf(path, sizeof(path), "%s/r.json", tmp);
	const char *j = slurp(path);
	ck_assert_msg(j, "no JSON (exit %d)", rc);
	ck_assert_ptr_nonnull(strstr(j, "\"arch\":\"" RR_ARCH "\""));
	ck_assert_int_eq(json_num(j, "samples"), want);
	ck_assert_int_eq(json_num(j, "jit_samples"), jit);
	/* a pc in C under a trampoline frame (the truth says so) */
	ck_assert_int_eq(json_num(j, "under_jit_samples"), under);
	/* per pc, every JIT sample once in every column */
	const char *cols[] = { "fp", "libunwind", "libdw", "oracle" };
	for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
		ck_assert_int_eq(json_outcome(j, cols[c], "full") + json_outcome(j, cols[c], "truncated") +
				 json_outcome(j, cols[c], "fallback") + json_outcome(j, cols[c], "name-lost"), jit + under);
	/* the run of these cases finds every oracle chain consistent with the
	 * truth into the C caller: the replay must reach it from every JIT pc */
	ck_assert_int_eq(json_outcome(j, "oracle", "full"), jit + under);
	/* 1 exactly when some chains differ */
	ck_assert_int_eq(rc, json_num(j, "diverging") ? 1 : 0);
	/* one column cannot disagree with itself: 0 */
	ck_assert_int_eq(sh("%s replay --unwinders oracle %s/p.data >/dev/null 2>&1", bin(), tmp), 0);
	sh("rm -rf %s", tmp);
}
END_TEST

/* a file cut short, a byte-swapped magic, a data section past the end and a
 * missing --jitdump: exit 2, the file named, the offset given */
START_TEST(malformed)
{
	record();
	char log[128];
	snprintf(log, sizeof(log), "%s/err", tmp);
	static const char *const want[] = { "offset 0x", "offset 0x0", "offset 0x" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		int mk = i == 0 ? sh("head -c 100 %s/p.data > %s/b.data", tmp, tmp)
		       : i == 1 ? sh("cp %s/p.data %s/b.data && printf 2ELIFREP | dd of=%s/b.data conv=notrunc 2>/dev/null",
				     tmp, tmp, tmp)
		       : sh("f=%s/p.data; head -c $(($(stat -c %%s $f) - 3000)) $f > %s/b.data", tmp, tmp);
		ck_assert_int_eq(mk, 0);
		int rc = sh("%s replay %s/b.data >/dev/null 2>%s", bin(), tmp, log);
		const char *e = slurp(log);
		ck_assert_msg(rc == 2, "case %zu: exit %d: %s", i, rc, e);
		ck_assert_msg(strstr(e, "b.data") && strstr(e, want[i]), "case %zu: %s", i, e);
	}
	ck_assert_int_eq(sh("%s replay --jitdump %s/none.dump %s/p.data >/dev/null 2>%s", bin(), tmp, tmp, log), 2);
	ck_assert_ptr_nonnull(strstr(slurp(log), "none.dump"));
	ck_assert_int_eq(sh("%s replay --unwinders nosuch %s/p.data >/dev/null 2>/dev/null", bin(), tmp), 2);
	sh("rm -rf %s", tmp);
}
END_TEST

Suite *suite_realreplay(void);
Suite *suite_realreplay(void)
{
	Suite *s = suite_create("realreplay");
	TCase *tc = tcase_create("perfdata");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, replays_own_recording);
	tcase_add_test(tc, malformed);
	suite_add_tcase(s, tc);
	return s;
}
