/* Generations of a case's code ([code 2]..): parsed and refused with
 * file:line; captured in one process, each in its turn (GEN records, the
 * jitdump's loads read back by the model's reader); replayed with perf's
 * libunwind memory, and without it (the negative control). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "harness/capture/capture.h"
#include "harness/capture/samples.h"
#include "harness/case/casegen.h"
#include "harness/run/runner.h"
#include "unwinders/model/jitdump.h"

#define HEAD "[case]\nname = t\narch = x86_64\nabout = a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
/* lines 1-10 are HEAD; [code 2] is line 11 */
#define GEN2(body) HEAD "[code 2]\n" body
#define TAIL "[sample]\nat = every-insn, in-callee\n[expect]\nfp = ok\n"

START_TEST(gen_parse_good)
{
	static const char text[] = GEN2("how = reload\nalloc 0x18\ncall_target\nfree 0x18\nret\n") TAIL
		"libunwind = ok; skipped at 4@g2,callee@g2; wrong at 0-1@g1\nlibdw@perf7.0+ = skipped\n";
	struct hx_case c;
	char err[512];
	ck_assert_msg(hx_case_parse(&c, "g.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ngens, 1);
	ck_assert_int_eq(c.gens[0].how, HX_GEN_RELOAD);
	ck_assert(c.gens[0].every_insn && c.gens[0].in_callee);   /* [sample] at, by default */
	size_t n;
	ck_assert_ptr_eq(hx_case_gen_ops(&c, 2, &n), c.gens[0].ops);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(c.nexpect, 3);
	ck_assert(c.expect[2].by_perf && c.expect[2].min_version == 7000);   /* the perf that runs */
	ck_assert(!c.expect[1].by_perf);
	const struct hx_expect *x = &c.expect[1];
	ck_assert_str_eq(x->uw, "libunwind");
	ck_assert_str_eq(hx_case_verdict_gen(x, 0, 4, 2), "skipped");
	ck_assert_str_eq(hx_case_verdict_gen(x, 0, 4, 1), "ok");           /* @g2 only */
	ck_assert_str_eq(hx_case_verdict_gen(x, HX_FN_CALLEE, -1, 2), "skipped");
	ck_assert_str_eq(hx_case_verdict_gen(x, HX_FN_CALLEE, -1, 1), "ok");
	ck_assert_str_eq(hx_case_verdict_gen(x, 0, 1, 1), "wrong");        /* a range's @g1 */
	ck_assert_str_eq(hx_case_verdict_gen(x, 0, 1, 2), "ok");
	hx_case_free(&c);
}
END_TEST

/* A move: no ops of its own (the code it moves is the one before it). */
START_TEST(gen_parse_move)
{
	static const char text[] = GEN2("how = move\nto = +0x100\n") TAIL "libunwind = ok; error at 0@g2\n";
	struct hx_case c;
	char err[512];
	ck_assert_msg(hx_case_parse(&c, "m.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	ck_assert_int_eq(c.ngens, 1);
	ck_assert_int_eq(c.gens[0].how, HX_GEN_MOVE);
	ck_assert_int_eq(c.gens[0].to, 0x100);
	size_t n;
	ck_assert_ptr_eq(hx_case_gen_ops(&c, 2, &n), c.ops);
	ck_assert_uint_eq(n, c.nops);
	hx_case_free(&c);
}
END_TEST

static const struct {
	const char *text;
	const char *want;      /* substring of the message after "bad.case:LINE: " */
	int line;
} bad[] = {
	/* a generation whose code does not fit the first's region (8 bytes, a 16-byte block) */
	{ GEN2("how = reload\nalloc 0x18\ncall_target\nfree 0x18\nret\nnop\nnop\nnop\nnop\nnop\nnop\n") TAIL,
	  "[code 2] is 17 bytes: it does not fit the first's region (16 bytes", 11 },
	/* a patch past the code */
	{ GEN2("how = patch\nalloc 0x18\ncall_target\nfree 0x18\nret\n") TAIL,
	  "a patch past the code: [code 2] is 11 bytes, the code it patches 8", 11 },
	/* a move to an overlapping address */
	{ GEN2("how = move\nto = +4\n") TAIL, "move to +4 overlaps the code it moves (8 bytes at +0x0)", 13 },
	/* a move to an unmapped address, either side */
	{ GEN2("how = move\nto = +0x2000\n") TAIL, "outside the case's code area (+0..+4096 from the first's address): unmapped", 13 },
	{ GEN2("how = move\nto = -0x40\n") TAIL, "puts the code at -64..-56, outside the case's code area", 13 },
	{ GEN2("how = move\nto = +0x100\nret\n") TAIL, "moves the code as it is: no ops", 14 },
	{ GEN2("how = move\n") TAIL, "a move needs 'to = +0xN'", 12 },
	{ GEN2("how = reload\nto = +0x100\nret\n") TAIL, "'to' is for how = move only", 13 },
	{ GEN2("how = sometimes\n") TAIL, "how: expected reload, patch, late or move, got 'sometimes'", 12 },
	{ GEN2("ret\n") TAIL, "[code 2] needs 'how = '", 11 },
	{ GEN2("how = reload\n") TAIL, "[code 2] has no ops", 11 },
	{ GEN2("how = reload\nto = 0x100\n"), "to: expected a signed byte distance", 13 },
	{ HEAD "[code 3]\nhow = reload\nret\n" TAIL, "'[code 3]': expected [code 2]", 11 },
	{ GEN2("how = reload\nret\n") "[code 2]\n", "'[code 2]': expected [code 3]", 14 },
	{ GEN2("how = reload\nret\nbogus = 1\n"), "unknown [code 2] key 'bogus'", 14 },
	{ GEN2("how = reload\nalloc 0x18\ncall_target\nfree 0x18\nret\n") TAIL "libunwind = ok; skipped at 1@g2\n",
	  "offset 1@g2 is no instruction start of generation 2", 21 },
	{ GEN2("how = reload\nret\n") TAIL "libunwind = ok; skipped at 0@g3\n", "'@g3': the case has 2 generation(s)", 18 },
	{ GEN2("how = reload\nret\n") TAIL "libunwind = ok; skipped at 0@g0\n", "expected a generation after '@g'", 18 },
	{ GEN2("how = reload\nret\n") "[sample]\ndepth = 2\n[expect]\nfp = ok\n", "generations need depth = 1", 11 },
	{ GEN2("how = reload\nret\n") TAIL "libdw@perf7+ = ok\n", "is no library version", 18 },
};

START_TEST(gen_parse_bad)
{
	struct hx_case c;
	char err[512], want[64];
	int rc = hx_case_parse(&c, "bad.case", bad[_i].text, strlen(bad[_i].text), err, sizeof(err));
	ck_assert_msg(rc != 0, "case %d parsed", _i);
	snprintf(want, sizeof(want), "bad.case:%d: ", bad[_i].line);
	ck_assert_msg(!strncmp(err, want, strlen(want)), "case %d: '%s' does not start with '%s'", _i, err, want);
	ck_assert_msg(strstr(err, bad[_i].want), "case %d: '%s' lacks '%s'", _i, err, bad[_i].want);
	hx_case_free(&c);
}
END_TEST

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jugen-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	unsetenv("JU_NO_PERF_MEMORY");
	unsetenv("JU_NO_PERF_MOVE");
}

/* The repository's case NAME of this host's arch, captured. */
static void capture_named(const char *name, struct hx_case *c, struct hx_samples *s)
{
	char path[128], err[512], out[256];
	snprintf(path, sizeof(path), "cases/%s/%s.case", tr_arch_host()->facts->name, name);
	struct ju_err je;
	ck_assert_msg(hx_case_load(c, path, &je) == 0, "%s", je.msg);
	snprintf(out, sizeof(out), "%s/t.samples", dir);
	ck_assert_msg(hx_capture_one(c, path, dir, out, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_samples_read(s, out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s->ngroups, 1);
}

static void capture_reuse(struct hx_case *c, struct hx_samples *s)
{
	capture_named("gen-reuse-frame-shape", c, s);
}

/* One process, generations in order: the dump (read by the model's own
 * reader, not the writer) has two loads at one address, the second stamped
 * between the generations' GEN records; every sample of generation 2 comes
 * after every sample of generation 1. */
START_TEST(gen_capture_order)
{
	struct hx_case c;
	struct hx_samples s;
	capture_reuse(&c, &s);
	const struct hx_group *g = &s.groups[0];
	ck_assert_msg(g->ended && !g->error, "%s", g->error ? g->error : "no END");
	ck_assert_uint_eq(g->ngens, 2);
	ck_assert_uint_lt(g->gen_time[1], g->gen_time[2]);
	ck_assert_uint_eq(g->gen_how[2], HX_GEN_RELOAD);
	uint32_t last = 1;
	size_t per[3] = { 0 };
	for (size_t i = 0; i < g->nsamples; i++) {
		ck_assert_uint_ge(g->samples[i].gen, last);
		last = g->samples[i].gen;
		per[last]++;
	}
	ck_assert_uint_gt(per[1], 0);
	ck_assert_uint_gt(per[2], 0);
	struct jd_file jd;
	struct ju_err je;
	ck_assert_msg(jd_open(&jd, g->dump_path, &je) == 0, "%s", je.msg);
	ck_assert_uint_eq(jd.nloads, 2);
	ck_assert_uint_eq(jd.loads[0].code_addr, jd.loads[1].code_addr);
	ck_assert(jd.loads[0].has_unwind && jd.loads[1].has_unwind);
	ck_assert_uint_lt(jd.loads[1].timestamp, g->gen_time[2]);
	ck_assert_uint_gt(jd.loads[1].timestamp, g->gen_time[1]);
	ck_assert_uint_lt(jd.loads[0].timestamp, g->gen_time[1]);
	jd_close(&jd);
	hx_samples_free(&s);
	hx_case_free(&c);
}
END_TEST

static const struct hx_sample_res *at(const struct hx_case_res *res, const char *where)
{
	for (size_t i = 0; i < res->nsamples; i++)
		if (!strcmp(res->samples[i].where, where))
			return &res->samples[i];
	ck_abort_msg("no sample at %s", where);
	return NULL;
}

/* With perf's libunwind memory, the second generation's sample in the C
 * target is unwound with the first's rules (skipped, the cache's story in
 * earlier_why) as real perf 6.x unwinds it; without it (the negative
 * control), the emulation finds the caller perf does not: ok, and the
 * case's [expect] fails. */
START_TEST(gen_memory_and_control)
{
	struct hx_case c;
	struct hx_samples s;
	capture_reuse(&c, &s);
	struct hx_opts o = { .unwinders = { "libunwind" }, .nuw = 1, .jitted_dir = dir };
	struct hx_case_res res;
	char err[512];
	for (int control = 0; control < 2; control++) {
		if (control)
			setenv("JU_NO_PERF_MEMORY", "1", 1);
		ck_assert_msg(hx_replay_group(&s.groups[0], s.elf_mach, &o, &res, err, sizeof(err)) == 0, "%s", err);
		const struct hx_sample_res *g1 = at(&res, "callee@g1"), *g2 = at(&res, "callee@g2");
		ck_assert_int_eq(g1->uw[0].j.v, HX_OK);
		ck_assert_int_eq(g2->uw[0].j.v, control ? HX_OK : HX_SKIPPED);
		ck_assert_int_eq(g2->uw[0].r.earlier_why[0] != 0, !control);
		ck_assert_int_eq(res.pass, !control);
		hx_case_res_free(&res);
	}
	hx_samples_free(&s);
	hx_case_free(&c);
}
END_TEST

/* The move case of this host's arch: the dump (read by the model's reader)
 * has one CODE_MOVE of the load, 0x100 on, stamped between the generations,
 * with nothing pending (mapped_size 0: perf's moved map ends with the code).
 * Replayed, it meets its [expect]; with the move left out of perf's view
 * (JU_NO_PERF_MOVE, the negative control) the moved code has no map there,
 * samples of the moved generation unwind otherwise and the case fails. */
START_TEST(gen_move_and_control)
{
	struct hx_case c;
	struct hx_samples s;
	capture_named("gen-move", &c, &s);
	const struct hx_group *g = &s.groups[0];
	ck_assert_msg(g->ended && !g->error, "%s", g->error ? g->error : "no END");
	ck_assert_uint_eq(g->gen_how[2], HX_GEN_MOVE);
	struct jd_file jd;
	struct ju_err je;
	ck_assert_msg(jd_open(&jd, g->dump_path, &je) == 0, "%s", je.msg);
	ck_assert_uint_eq(jd.nloads, 1);
	ck_assert_uint_eq(jd.nmoves, 1);
	const struct jd_move *m = &jd.moves[0];
	ck_assert_uint_eq(m->old_code_addr, jd.loads[0].code_addr);
	ck_assert_uint_eq(m->new_code_addr, jd.loads[0].code_addr + 0x100);
	ck_assert_uint_eq(m->code_size, jd.loads[0].code_size);
	ck_assert_uint_eq(m->code_index, jd.loads[0].code_index);
	ck_assert_uint_eq(m->mapped_size, 0);
	ck_assert_uint_eq(m->nloads_before, 1);
	ck_assert_uint_gt(m->timestamp, g->gen_time[1]);
	ck_assert_uint_lt(m->timestamp, g->gen_time[2]);
	jd_close(&jd);
	/* libdw: the moved map holds the file its CFI is read from (without it, no
	 * module); libunwind: a map without its unwinding data, or none (riscv64's
	 * libunwind falls back alike either way) */
	struct hx_opts o = { .unwinders = { "libunwind", "libdw" }, .nuw = 2, .jitted_dir = dir };
	struct hx_case_res res;
	char err[512];
	int v[2][2][64] = { { { 0 } } };
	size_t n = 0;
	for (int control = 0; control < 2; control++) {
		if (control)
			setenv("JU_NO_PERF_MOVE", "1", 1);
		ck_assert_msg(hx_replay_group(g, s.elf_mach, &o, &res, err, sizeof(err)) == 0, "%s", err);
		n = res.nsamples < 64 ? res.nsamples : 64;
		for (size_t i = 0; i < n; i++)
			for (int u = 0; u < 2; u++)
				v[control][u][i] = res.samples[i].uw[u].j.v;
		ck_assert_int_eq(res.pass, !control);
		hx_case_res_free(&res);
	}
	/* the first generation's samples unwind alike; some of the moved one's do not */
	size_t differ = 0;
	for (size_t i = 0; i < n; i++)
		differ += v[0][0][i] != v[1][0][i] || v[0][1][i] != v[1][1][i];
	ck_assert_uint_gt(differ, 0);
	hx_samples_free(&s);
	hx_case_free(&c);
}
END_TEST

Suite *suite_casegen(void);
Suite *suite_casegen(void)
{
	Suite *s = suite_create("casegen");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, gen_parse_good);
	tcase_add_test(tc, gen_parse_move);
	tcase_add_loop_test(tc, gen_parse_bad, 0, sizeof(bad) / sizeof(bad[0]));
	suite_add_tcase(s, tc);
	tc = tcase_create("capture");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, gen_capture_order);
	tcase_add_test(tc, gen_memory_and_control);
	tcase_add_test(tc, gen_move_and_control);
	suite_add_tcase(s, tc);
	return s;
}
