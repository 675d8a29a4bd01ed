/* Capture: the registers and stack of each sample against what the code at
 * that offset must have done; crashes in generated code are contained. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/capture.h"
#include "harness/runner.h"
#include "harness/samples.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jucap-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

__attribute__((unused)) static void capture(const char *text, struct hx_samples *s)
{
	struct hx_case c;
	char err[512], out[256];
	ck_assert_msg(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	snprintf(out, sizeof(out), "%s/t.samples", dir);
	ck_assert_msg(hx_capture_one(&c, "t.case", dir, out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_msg(hx_samples_read(s, out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s->ngroups, 1);
	hx_case_free(&c);
}

__attribute__((unused)) static uint64_t stack_word(const struct hx_sample *x, uint64_t addr)
{
	uint64_t v;
	ck_assert(addr >= x->stack_addr && addr + 8 <= x->stack_addr + x->stack_size);
	memcpy(&v, x->stack + (addr - x->stack_addr), 8);
	return v;
}

#ifdef __x86_64__
enum { AX, BX, CX, DX, SI, DI, BP, SP, IP };

START_TEST(regs_at_each_offset)
{
	struct hx_samples s;
	capture("[case]\nname=t\narch=x86_64\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
		"[sample]\nat=every-insn,in-callee\n[expect]\nfp=ok\n", &s);
	struct hx_group *g = &s.groups[0];
	ck_assert(g->ended && !g->crashed && !g->error);
	ck_assert_uint_eq(g->nfuncs, 1);
	ck_assert_uint_eq(g->nsamples, 6);
	uint64_t base = g->funcs[0].addr, sp0 = 0, bp0 = 0;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		ck_assert_uint_eq(x->abi, 2);
		ck_assert_uint_eq(x->mask, 0xff0fff);
		ck_assert_uint_eq(x->stack_addr, x->regs[SP]);
		ck_assert_uint_eq(x->truth[0], x->regs[IP]);
		ck_assert_uint_eq(x->truth[1], x->func == HX_FUNC_CALLEE ? base + 6 : (uint64_t)(uintptr_t)hx_call_ret);
		if (x->func == HX_FUNC_CALLEE)
			continue;
		ck_assert_uint_eq(x->regs[IP], base + x->offset);
		switch (x->offset) {
		case 0:      /* entry: RA on top of the stack */
			sp0 = x->regs[SP];
			bp0 = x->regs[BP];
			ck_assert_uint_eq(stack_word(x, sp0), (uint64_t)(uintptr_t)hx_call_ret);
			break;
		case 1:      /* after push %rbp */
			ck_assert_uint_eq(x->regs[SP], sp0 - 8);
			ck_assert_uint_eq(stack_word(x, sp0 - 8), bp0);
			break;
		case 4:      /* after mov %rsp,%rbp */
			ck_assert_uint_eq(x->regs[BP], sp0 - 8);
			ck_assert_uint_eq(x->regs[SP], sp0 - 8);
			ck_assert_uint_ne(x->regs[CX], 0);   /* the target, CPython's 4th argument */
			break;
		case 6:      /* back from the call, before pop */
			ck_assert_uint_eq(x->regs[SP], sp0 - 8);
			break;
		case 7:      /* after pop %rbp, at ret */
			ck_assert_uint_eq(x->regs[SP], sp0);
			ck_assert_uint_eq(x->regs[BP], bp0);
			break;
		default:
			ck_abort_msg("sample at offset %u is not an instruction boundary", x->offset);
		}
	}
	hx_samples_free(&s);
}
END_TEST

START_TEST(crash_contained)
{
	struct hx_samples s;
	/* ud2 at offset 1 */
	capture("[case]\nname=t\narch=x86_64\nabout=a\n[code]\npush_fp\nraw 0f 0b ; nop\npop_fp\nret\n"
		"[sample]\nat=every-insn\n[expect]\nfp=ok\n", &s);
	struct hx_group *g = &s.groups[0];
	ck_assert(g->crashed);
	ck_assert_uint_eq(g->crash.signo, 4);   /* SIGILL */
	ck_assert_uint_eq(g->crash.func, 0);
	ck_assert_uint_eq(g->crash.offset, 1);
	ck_assert_uint_eq(g->crash.pc, g->funcs[0].addr + 1);
	ck_assert_uint_eq(g->nsamples, 2);      /* offsets 0 and 1 were sampled first */
	hx_samples_free(&s);
}
END_TEST

START_TEST(nested_truth)
{
	struct hx_samples s;
	capture("[case]\nname=t\narch=x86_64\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
		"[sample]\nat=in-callee\ndepth=3\n[expect]\nfp=ok\n", &s);
	struct hx_group *g = &s.groups[0];
	ck_assert_uint_eq(g->nsamples, 1);
	const struct hx_sample *x = &g->samples[0];
	/* pc, tramp3+6, hx_call_ret, C, tramp2+6, hx_call_ret, C, tramp1+6, hx_call_ret, anchor */
	ck_assert_uint_eq(x->ntruth, 10);
	ck_assert_uint_eq(x->truth[1], g->funcs[2].addr + 6);
	ck_assert_uint_eq(x->truth[4], g->funcs[1].addr + 6);
	ck_assert_uint_eq(x->truth[7], g->funcs[0].addr + 6);
	ck_assert_uint_eq(x->truth[2], (uint64_t)(uintptr_t)hx_call_ret);
	ck_assert_uint_eq(x->truth[3], x->truth[6]);   /* the same call site in the C target */
	for (int i = 0; i < 10; i++)
		ck_assert_uint_eq(x->fpflag[i], 1);
	hx_samples_free(&s);
}
END_TEST
#endif

Suite *suite_capture(void);
Suite *suite_capture(void)
{
	Suite *s = suite_create("capture");
	TCase *tc = tcase_create("capture");
	tcase_add_checked_fixture(tc, setup, teardown);
#ifdef __x86_64__
	tcase_add_test(tc, regs_at_each_offset);
	tcase_add_test(tc, crash_contained);
	tcase_add_test(tc, nested_truth);
#endif
	suite_add_tcase(s, tc);
	return s;
}
