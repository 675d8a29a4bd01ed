/* The replay session (harness/run/session.h): open over a captured case, every
 * sample through the session's one unwind loop, judged; each verdict is
 * checked against the capture's truth chain by address, and a case whose
 * emitted CFI is wrong must give non-ok verdicts through it. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/capture/capture.h"
#include "harness/case/case.h"
#include "harness/capture/samples.h"
#include "harness/run/session.h"
#include "tests/uwt.h"

/* Per host arch: a case whose emitted CFI is right at every sample, and a
 * shipped negative control (CFI that puts the return address elsewhere). */
static const struct { const char *arch, *good, *bad; } fixtures[] = {
	{ "x86_64", "nested-depth3", "neg-cfa-off-by-8" },
	{ "aarch64", "nested-depth3", "neg-ra-column" },
	{ "riscv64", "nested-depth3", "neg-ra-offset" },
};

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jusess-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static const char *fixture(bool good)
{
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		if (!strcmp(fixtures[i].arch, uwt_arch()->facts->name))
			return good ? fixtures[i].good : fixtures[i].bad;
	ck_abort_msg("no session fixture for arch %s", uwt_arch()->facts->name);
	return NULL;
}

/* cases/<arch>/<name>.case captured into one group of s */
static void capture(const char *name, struct hx_samples *s)
{
	char path[256], out[256], err[512];
	snprintf(path, sizeof(path), "cases/%s/%s.case", uwt_arch()->facts->name, name);
	FILE *f = fopen(path, "r");
	ck_assert_msg(f != NULL, "%s: cannot open", path);
	static char text[1 << 16];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	struct hx_case c;
	struct ju_err je;
	ck_assert_msg(hx_case_parse_ex(&c, path, text, n, HX_CASE_NO_EXPECT, &je) == 0, "%s", je.msg);
	snprintf(out, sizeof(out), "%s/t.samples", dir);
	ck_assert_msg(hx_capture_one(&c, path, dir, out, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_samples_read(s, out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s->ngroups, 1);
	ck_assert_uint_gt(s->groups[0].nsamples, 0);
	hx_case_free(&c);
}

/* the chain equals the truth frame by frame, by address */
static bool same_as_truth(const struct uw_result *r, const struct hx_sample *x)
{
	if (r->n < (int)x->ntruth)
		return false;
	for (uint32_t f = 0; f < x->ntruth; f++)
		if (r->addr[f] != x->truth[f])
			return false;
	return true;
}

struct counts { int ok, not_ok; };

/* Open a session on the group with fp and the oracle, replay every sample
 * judged, close.  Each verdict is held to the truth by address: `ok` iff
 * the chain is the truth (the judge may also say ok to a longer chain that
 * starts with it, which same_as_truth accepts). */
static struct counts replay(const struct hx_samples *smp)
{
	const struct hx_group *g = &smp->groups[0];
	struct jd_file jd;
	struct ju_err je;
	struct uw_map *maps = NULL;
	size_t nmaps = 0;
	struct ju_err err;
	ck_assert_msg(jd_open(&jd, g->dump_path, &je) == 0, "%s", je.msg);
	ck_assert_msg(uw_maps_parse(g->maps, g->maps_len, &maps, &nmaps, &err) == 0, "%s", err.msg);
	struct hx_sess_cfg cfg = { .arch = uw_arch_by_mach((uint16_t)smp->elf_mach), .maps = maps, .nmaps = nmaps,
				   .jd = &jd, .profile = PV_CURRENT, .dump_dir = dir,
				   .uws = { &uw_fp, &uw_oracle }, .nuw = 2 };
	static struct hx_sess s;
	struct ju_err e;
	ck_assert_msg(hx_sess_open(&s, &cfg, &e) == 0, "%s", e.msg);
	ck_assert_msg(s.have_pv, "perf view: %s", s.pv_err);
	struct counts c = { 0, 0 };
	static struct hx_uw_res out[HX_SESS_MAX_UW];
	static struct hx_sess_ref ref;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		struct uw_sample full = { .arch = cfg.arch, .abi = x->abi, .mask = x->mask, .stack_addr = x->stack_addr,
					  .stack = x->stack, .stack_size = x->stack_size };
		memcpy(full.regs, x->regs, sizeof(full.regs));
		struct hx_sess_sample in = { .full = &full, .dump = &full, .judge = true, .only = -1,
					     .truth = { x->truth, x->fpflag, (int)x->ntruth } };
		hx_sess_emitted(&s, &full, &in.truth, &ref);
		hx_sess_sample(&s, &in, &ref, out);
		ck_assert_str_eq(out[0].name, "fp");
		ck_assert_str_eq(out[1].name, "oracle");
		for (int u = 0; u < 2; u++) {
			bool truth = same_as_truth(&out[u].r, x);
			ck_assert_msg((out[u].j.v == HX_OK) == truth, "sample %zu: %s says %s, chain %s the truth", i,
				      out[u].name, hx_verdict_name(out[u].j.v), truth ? "is" : "is not");
		}
		/* the oracle is the truth reference: its chain is `emitted`'s */
		ck_assert_int_eq(out[1].r.n, ref.oracle_full.n);
		ck_assert_int_eq(out[1].consistent, ref.emitted.v == HX_OK);
		if (ref.emitted.v == HX_OK)
			c.ok++;
		else
			c.not_ok++;
	}
	hx_sess_close(&s);
	uw_maps_free(maps, nmaps);
	jd_close(&jd);
	return c;
}

START_TEST(replay_by_address)
{
	struct hx_samples s;
	capture(fixture(true), &s);
	struct counts c = replay(&s);
	ck_assert_int_gt(c.ok, 0);
	ck_assert_int_eq(c.not_ok, 0);
	hx_samples_free(&s);
}
END_TEST

/* Negative control: the emitted CFI is wrong at some samples; the session
 * must say so there (and the by-address check above holds it to the truth). */
START_TEST(broken_cfi_not_ok)
{
	struct hx_samples s;
	capture(fixture(false), &s);
	struct counts c = replay(&s);
	ck_assert_int_gt(c.not_ok, 0);
	hx_samples_free(&s);
}
END_TEST

START_TEST(open_errors)
{
	struct hx_sess s;
	struct ju_err e;
	struct hx_sess_cfg cfg = { .arch = NULL };
	ck_assert_int_eq(hx_sess_open(&s, &cfg, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "architecture"));
	cfg.arch = uwt_arch();
	cfg.nuw = HX_SESS_MAX_UW + 1;
	ck_assert_int_eq(hx_sess_open(&s, &cfg, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "unwinders"));
}
END_TEST

/* The real-perf columns are the run layer's: the unwinders' registry does
 * not know them, the column table does, and opens them over the capture. */
START_TEST(columns_table)
{
	size_t nl, nc;
	uw_unwinders(&nl);
	hx_columns(&nc);
	ck_assert_uint_eq(nc, nl + 2);
	ck_assert_ptr_null(uw_unwinder_by_name("perf"));
	const struct uw_unwinder *p = hx_column_by_name("perf");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(hx_column_opener(p));
	ck_assert_ptr_eq(hx_column_by_name("fp"), &uw_fp);
	ck_assert_ptr_null(hx_column_opener(&uw_fp));
	char list[256];
	hx_column_list(NULL, list, sizeof(list));
	ck_assert_ptr_nonnull(strstr(list, ",perf,perf-fp"));
}
END_TEST

Suite *suite_session(void);
Suite *suite_session(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("session");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, replay_by_address);
	tcase_add_test(tc, broken_cfi_not_ok);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, columns_table);
	suite_add_tcase(s, tc);
	return s;
}
