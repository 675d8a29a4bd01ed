/* Spin points and the kernel sampler: the state at a spin equals the
 * breakpoint's (checked by the child at every release; a tampered register
 * or stack byte is caught), and a kernel sample's CALLCHAIN is the `fp`
 * emulation's walk over the same point's stack.  perf_event_open refused
 * here (qemu-user: ENOSYS; paranoid: EACCES) is printed as a skip. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "harness/capture/capture.h"
#include "harness/capture/ksampler.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "unwinders/unwind.h"
#include "tests/hostarch.h"

static char dir[64];
static struct hx_kcfg kcfg = HX_KCFG_INIT;   /* the capture settings of the next capture() */

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/juspin-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	kcfg = (struct hx_kcfg)HX_KCFG_INIT;
}

/* a 1-byte push (x86_64): its spin's 2 bytes cover the next instruction */
static const char case_fmt[] =
	"[case]\nname=t\narch=%s\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
	"[sample]\nat=every-insn,in-callee\ndepth=2\n[expect]\nfp=ok\n";

static void capture(struct hx_samples *s)
{
	struct hx_case c;
	char err[512], out[256], case_text[512];
	snprintf(case_text, sizeof(case_text), case_fmt, host_facts()->name);
	ck_assert_msg(hx_case_parse(&c, "t.case", case_text, strlen(case_text), err, sizeof(err)) == 0, "%s", err);
	snprintf(out, sizeof(out), "%s/t.samples", dir);
	struct hx_batch_case one = { &c, "t.case", dir };
	struct hx_batch_run run = { .kcfg = &kcfg };
	struct ju_err je;
	ck_assert_msg(hx_capture_to_file(&one, 1, out, &run, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_samples_read(s, out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s->ngroups, 1);
	hx_case_free(&c);
}

/* every point spun and released with its state unchanged: the same samples
 * as a run without spins, and no error */
START_TEST(spin_state_is_the_breakpoints)
{
	struct hx_samples a, b;
	capture(&a);
	kcfg.spin = true;
	capture(&b);
	const struct hx_group *ga = &a.groups[0], *gb = &b.groups[0];
	ck_assert_msg(gb->ended && !gb->error && !gb->crashed, "%s", gb->error ? gb->error : "no END");
	ck_assert_uint_eq(ga->nsamples, gb->nsamples);
	ck_assert_uint_eq(gb->nkernel, 0);
	for (size_t i = 0; i < gb->nsamples; i++) {
		ck_assert_uint_eq(ga->samples[i].func, gb->samples[i].func);
		ck_assert_uint_eq(ga->samples[i].offset, gb->samples[i].offset);
	}
	hx_samples_free(&a);
	hx_samples_free(&b);
}
END_TEST

/* negative controls: a register or a stack byte changed during the spin */
START_TEST(spin_tamper_caught)
{
	static const char *const want[] = { "perf register", "stack byte" };
	kcfg.spin = true;
	kcfg.spin_tamper = _i + 1;
	struct hx_samples s;
	capture(&s);
	const struct hx_group *g = &s.groups[0];
	ck_assert_ptr_nonnull(g->error);
	ck_assert_msg(strstr(g->error, "spin point") && strstr(g->error, want[_i]), "%s", g->error);
	ck_assert(!g->ended);
	hx_samples_free(&s);
}
END_TEST

static double child_cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* JU_SPIN_CPU_US (perf-check): each point spins until it has used that much
 * of the child's CPU time, and still releases with the breakpoint's state;
 * a value out of range is an error of the capture */
START_TEST(spin_cpu_budget)
{
	struct hx_samples s;
	kcfg.spin = true;
	setenv("JU_SPIN_CPU_US", "10000", 1);
	double t0 = child_cpu_s();
	capture(&s);
	double used = child_cpu_s() - t0;
	const struct hx_group *g = &s.groups[0];
	ck_assert_msg(g->ended && !g->error, "%s", g->error ? g->error : "no END");
	ck_assert_msg(used >= 0.010 * (double)g->nsamples, "%zu points spun %.4f s of CPU", g->nsamples, used);
	hx_samples_free(&s);
	setenv("JU_SPIN_CPU_US", "0", 1);
	capture(&s);
	ck_assert_msg(s.groups[0].error && strstr(s.groups[0].error, "spin points"), "%s",
		      s.groups[0].error ? s.groups[0].error : "no error");
	hx_samples_free(&s);
	unsetenv("JU_SPIN_CPU_US");
}
END_TEST

START_TEST(diff_payloads)
{
	/* header 48, 2 registers (mask 0b101), 1 truth frame + 8 flag bytes, 16 stack bytes */
	uint8_t a[48 + 16 + 8 + 8 + 16], b[sizeof(a)];
	char msg[200];
	memset(a, 0x11, sizeof(a));
	uint64_t mask = 5;
	uint32_t nregs = 2, nt = 1;
	memcpy(a + 16, &mask, 8);
	memcpy(a + 24, &nregs, 4);
	memcpy(a + 28, &nt, 4);
	memcpy(b, a, sizeof(a));
	ck_assert_int_eq(hx_spin_diff(a, sizeof(a), b, sizeof(b), msg, sizeof(msg)), 0);
	b[48 + 8] ^= 1;                          /* second register: perf id 2 */
	ck_assert_int_eq(hx_spin_diff(a, sizeof(a), b, sizeof(b), msg, sizeof(msg)), 1);
	ck_assert_msg(strstr(msg, "perf register 2"), "%s", msg);
	b[48 + 8] ^= 1;
	b[sizeof(b) - 3] ^= 0x80;                /* stack byte 13 */
	ck_assert_int_eq(hx_spin_diff(a, sizeof(a), b, sizeof(b), msg, sizeof(msg)), 1);
	ck_assert_msg(strstr(msg, "SP+0xd"), "%s", msg);
	ck_assert_int_eq(hx_spin_diff(a, sizeof(a), b, sizeof(b) - 8, msg, sizeof(msg)), 1);
}
END_TEST

/* kernel samples: N at every point, their CALLCHAIN = fp's emulation over
 * the breakpoint sample's whole stack, their registers the breakpoint's */
START_TEST(kernel_chain_is_fp_emulation)
{
	kcfg.nsamples = 2;
	struct hx_samples s;
	capture(&s);
	const struct hx_group *g = &s.groups[0];
	if (g->kskip) {
		printf("spin: kernel_chain_is_fp_emulation skipped: %s\n", g->kskip);
		ck_assert_uint_eq(g->nkernel, 0);
		hx_samples_free(&s);
		return;
	}
	ck_assert_msg(!g->error, "%s", g->error);
	size_t points = g->nsamples - g->nkernel;
	ck_assert_uint_eq(g->nkernel, 2 * points);
	const struct uw_arch *arch = uw_arch_by_mach((uint16_t)s.elf_mach);
	const struct hx_sample *bp = NULL;
	int compared = 0, beyond = 0;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		if (!x->kernel) {
			bp = x;
			continue;
		}
		ck_assert_ptr_nonnull(bp);
		ck_assert_uint_eq(x->offset, bp->offset);
		ck_assert_uint_eq(x->regs[arch->perf_ip], bp->regs[arch->perf_ip]);
		ck_assert_uint_eq(x->regs[arch->perf_sp], bp->regs[arch->perf_sp]);
		ck_assert_uint_eq(x->truth[0], x->regs[arch->perf_ip]);
		struct uw_sample u = { .arch = arch, .abi = bp->abi, .mask = bp->mask,
				       .stack_addr = bp->stack_addr, .stack = bp->stack,
				       .stack_size = bp->stack_size };
		memcpy(u.regs, bp->regs, sizeof(u.regs));
		static struct uw_result r;
		uw_fp.unwind(NULL, NULL, &u, &r);
		/* the kernel reads on past a record outside the stack (libcheck's
		 * code keeps no frame pointer: its rbp points into data) */
		if (r.stop == UW_STOP_MEM && (int)x->nchain > r.n)
			beyond++;
		else
			ck_assert_int_eq(r.n, (int)x->nchain);
		for (int f = 0; f < r.n; f++)
			ck_assert_uint_eq(r.addr[f], x->chain[f]);
		compared++;
	}
	ck_assert_int_gt(compared, 0);
	printf("spin: %d kernel chains equal to fp's, %d of them longer past a record outside the stack\n",
	       compared, beyond);
	hx_samples_free(&s);
}
END_TEST

/* replay: kernel-fp faithful when its chain is fp's; a corrupted kernel
 * chain frame is unfaithful and wrong (negative control) */
START_TEST(kernel_fp_replay)
{
	kcfg.nsamples = 1;
	struct hx_samples s;
	capture(&s);
	struct hx_group *g = &s.groups[0];
	if (g->kskip) {
		printf("spin: kernel_fp_replay skipped: %s\n", g->kskip);
		hx_samples_free(&s);
		return;
	}
	struct hx_opts o = { .unwinders = { "fp", "kernel-fp" }, .nuw = 2 };
	struct hx_case_res res;
	char err[512];
	ck_assert_msg(hx_replay_group(g, s.elf_mach, &o, &res, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(res.nsamples, g->nkernel);
	for (size_t i = 0; i < res.nsamples; i++) {
		ck_assert_str_eq(res.samples[i].uw[1].name, "kernel-fp");
		ck_assert(res.samples[i].uw[1].has_faithful && res.samples[i].uw[1].faithful);
		ck_assert_int_eq(res.samples[i].uw[1].j.v, res.samples[i].uw[0].j.v);
	}
	hx_case_res_free(&res);
	/* frame 1 of the first kernel sample's chain off by 8 */
	for (size_t i = 0; i < g->nsamples; i++)
		if (g->samples[i].kernel && g->samples[i].nchain > 1) {
			((uint64_t *)(uintptr_t)g->samples[i].chain)[1] += 8;
			break;
		}
	ck_assert_msg(hx_replay_group(g, s.elf_mach, &o, &res, err, sizeof(err)) == 0, "%s", err);
	ck_assert(!res.samples[0].uw[1].faithful);
	ck_assert_int_ne(res.samples[0].uw[1].j.v, res.samples[0].uw[0].j.v);
	hx_case_res_free(&res);
	hx_samples_free(&s);
}
END_TEST

/* a point that gets no kernel sample in time is reported, not dropped */
START_TEST(kernel_point_missed)
{
	kcfg.nsamples = 3;
	kcfg.timeout_ms = 0;
	struct hx_samples s;
	capture(&s);
	const struct hx_group *g = &s.groups[0];
	if (g->kskip) {
		printf("spin: kernel_point_missed skipped: %s\n", g->kskip);
	} else {
		ck_assert_ptr_nonnull(g->error);
		ck_assert_msg(strstr(g->error, "fewer than 3 kernel samples"), "%s", g->error);
		ck_assert_uint_eq(g->nkernel, 0);
	}
	hx_samples_free(&s);
}
END_TEST

/* a kernel SAMPLE's CALLCHAIN is bounds-checked: a count past the record is
 * refused with the record's offset; a fitting one is read */
START_TEST(kernel_record_bounds)
{
	static uint8_t f[16 + 24 + 16 + 48 + 16];
	memset(f, 0, sizeof(f));
	memcpy(f, HX_SAMPLES_MAGIC, 8);
	uint32_t v = HX_SAMPLES_VERSION, t = HX_REC_CASE, fl = HX_REC_F_KERNEL;
	uint64_t len = 8, chain = 2, a = 0x1234;
	memcpy(f + 8, &v, 4);
	memcpy(f + 16, &t, 4);
	memcpy(f + 24, &len, 8);
	memcpy(f + 32, "t.case\0", 7);
	t = HX_REC_SAMPLE;
	len = 48 + 16;
	memcpy(f + 40, &t, 4);
	memcpy(f + 44, &fl, 4);
	memcpy(f + 48, &len, 8);
	memcpy(f + 56 + 48, &chain, 8);          /* 2 frames, room for 1 */
	memcpy(f + 56 + 56, &a, 8);
	struct hx_samples s;
	char err[256];
	uint8_t *d = malloc(sizeof(f));
	memcpy(d, f, sizeof(f));
	ck_assert_int_ne(hx_samples_parse(&s, d, sizeof(f), "k.samples", err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, "k.samples: offset 0x38") && strstr(err, "CALLCHAIN"), "%s", err);
	hx_samples_free(&s);
	chain = 1;
	memcpy(f + 56 + 48, &chain, 8);
	d = malloc(sizeof(f));
	memcpy(d, f, sizeof(f));
	ck_assert_msg(hx_samples_parse(&s, d, sizeof(f), "k.samples", err, sizeof(err)) == 0, "%s", err);
	ck_assert(s.groups[0].samples[0].kernel);
	ck_assert_uint_eq(s.groups[0].nkernel, 1);
	ck_assert_uint_eq(s.groups[0].samples[0].nchain, 1);
	ck_assert_uint_eq(s.groups[0].samples[0].chain[0], 0x1234);
	hx_samples_free(&s);
}
END_TEST

Suite *suite_spin(void)
{
	Suite *s = suite_create("spin");
	TCase *tc = tcase_create("spin");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, spin_state_is_the_breakpoints);
	tcase_add_loop_test(tc, spin_tamper_caught, 0, 2);
	tcase_add_test(tc, spin_cpu_budget);
	tcase_add_test(tc, diff_payloads);
	tcase_add_test(tc, kernel_chain_is_fp_emulation);
	tcase_add_test(tc, kernel_fp_replay);
	tcase_add_test(tc, kernel_point_missed);
	tcase_add_test(tc, kernel_record_bounds);
	suite_add_tcase(s, tc);
	return s;
}
