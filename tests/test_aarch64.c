/* aarch64: every encoder word against an independent disassembler (any
 * host with aarch64 binutils), the [leaf] section, and on aarch64 (native
 * or qemu-aarch64) the brk/SIGTRAP capture in perf's arm64 layout, the leaf
 * truth, and lr-step over the oracle end to end. */
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/capture/capture.h"
#include "harness/case/case.h"
#include "harness/case/judge.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "trampolines/tramp.h"
#include "unwinders/lrstep.h"
#include "unwinders/view.h"

/* Every op kind, several registers and both immediate forms. */
static const char *const all_ops[] = {
	"paciasp", "bti", "push_fp", "set_fp", "alloc 0", "alloc 32", "alloc 4095", "alloc 0x1000",
	"alloc 0xfff000", "save_reg x0", "save_reg x19", "save_reg x28", "save_reg x30",
	"restore_reg x30", "restore_reg x19", "call_target", "free 32", "free 0x1000", "nop",
	"pop_fp", "autiasp", "ret", "tail_jump",
};

static struct tr_func *emit(const char *const *lines, size_t n)
{
	static struct tr_op ops[64];
	struct ju_err err;
	ck_assert_uint_le(n, 64);
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0, "%s: %s", lines[i], err.msg);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(tr_emit(&tr_arch_aarch64, ops, n, f, &err) == 0, "%s", err.msg);
	return f;
}

/* objdump's text in the emitter's form: tabs to spaces, "#0x2, lsl #12" to
 * "#0x2000", "mov sp, sp" (add sp, sp, #0's alias) back to the add. */
static void normalize(char *t)
{
	for (char *p = t; *p; p++)
		if (*p == '\t')
			*p = ' ';
	unsigned long v;
	char *imm = strstr(t, "#0x");
	if (imm && strstr(t, ", lsl #12") && sscanf(imm, "#0x%lx", &v) == 1)
		snprintf(imm, 40, "#0x%lx", v << 12);
	if (!strcmp(t, "mov sp, sp"))
		snprintf(t, 48, "add sp, sp, #0x0");
	size_t n = strlen(t);
	while (n && t[n - 1] == ' ')
		t[--n] = 0;
}

/* The objdump that reads aarch64 (an x86-only one rejects -maarch64), or
 * NULL: probed once, when the suite is built. */
static const char *a64_objdump(void)
{
	static const char *const tools[] = { "aarch64-linux-gnu-objdump", "objdump" };
	static int found = -1;          /* the test's fork inherits the suite's probe */
	if (found >= 0)
		return found < 2 ? tools[found] : NULL;
	found = 2;
	for (size_t i = 0; i < 2; i++) {
		char probe[256];
		snprintf(probe, sizeof(probe), "printf '\\037\\040\\003\\325' >/tmp/ju-a64-probe-%d && "
			 "%s -D -b binary -maarch64 /tmp/ju-a64-probe-%d >/dev/null 2>&1; r=$?; rm -f /tmp/ju-a64-probe-%d; exit $r",
			 (int)getpid(), tools[i], (int)getpid(), (int)getpid());
		if (system(probe) == 0) {
			found = (int)i;
			break;
		}
	}
	return found < 2 ? tools[found] : NULL;
}

static FILE *run_objdump(const char *bin, char *used, size_t usedlen)
{
	const char *tool = a64_objdump();
	ck_assert_msg(tool, "the aarch64 objdump the suite found is gone");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s -D -b binary -maarch64 %s 2>/dev/null", tool, bin);
	snprintf(used, usedlen, "%s", tool);
	return popen(cmd, "r");
}

START_TEST(words_match_objdump)
{
	size_t n = sizeof(all_ops) / sizeof(all_ops[0]);
	/* each op encoded alone: only the words are checked, not the stack effects */
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	{
		struct ju_err err;
		static struct tr_op ops[64];
		for (size_t i = 0; i < n; i++) {
			memset(&ops[i], 0, sizeof(ops[i]));
			ck_assert_int_eq(tr_op_parse(all_ops[i], &ops[i], &err), 0);
			uint8_t w[4];
			char t[48];
			struct tr_eff eff[TR_MAX_EFF];
			int ne;
			int len = tr_arch_aarch64.encode(&ops[i], w, sizeof(w), t, sizeof(t), eff, &ne, &err);
			ck_assert_msg(len == 4, "%s: %s", all_ops[i], err.msg);
			memcpy(f->code + f->code_size, w, 4);
			snprintf(f->rows[f->nrows].insn, sizeof(f->rows[0].insn), "%s", t);
			f->rows[f->nrows].offset = (uint32_t)f->code_size;
			f->rows[f->nrows++].len = 4;
			f->code_size += 4;
		}
	}
	char bin[] = "/tmp/ju-a64-XXXXXX";
	int fd = mkstemp(bin);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, f->code, f->code_size), (ssize_t)f->code_size);
	close(fd);
	char used[64];
	FILE *p = run_objdump(bin, used, sizeof(used));
	ck_assert_ptr_nonnull(p);
	char line[256];
	size_t k = 0;
	while (fgets(line, sizeof(line), p)) {
		unsigned off, word;
		char text[128];
		/* "   c:\td10003ff \tsub\tsp, sp, #0x0" */
		if (sscanf(line, " %x: %x %127[^\n]", &off, &word, text) != 3)
			continue;
		ck_assert_uint_lt(k, f->nrows);
		ck_assert_uint_eq(off, f->rows[k].offset);
		char *t = text;
		while (*t == ' ' || *t == '\t')
			t++;
		char norm[128];
		snprintf(norm, sizeof(norm), "%s", t);
		normalize(norm);
		ck_assert_msg(!strcmp(norm, f->rows[k].insn), "%s: at 0x%x (%08x) says '%s', emitter '%s'",
			      used, off, word, norm, f->rows[k].insn);
		k++;
	}
	pclose(p);
	unlink(bin);
	ck_assert_uint_eq(k, f->nrows);
	free(f);
}
END_TEST

START_TEST(leaf_rows)
{
	static const char *const l[] = { "save_reg x30", "nop", "restore_reg x30", "ret" };
	struct tr_func *f = emit(l, 4);
	/* entry: RA in x30; after str: at CFA-16 with CFA = sp+16; after ldr: x30 again */
	ck_assert_int_eq(f->rows[0].ra_where, TR_RA_IN_REG);
	ck_assert_int_eq(f->rows[1].ra_where, TR_RA_AT_CFA);
	ck_assert_int_eq(f->rows[1].ra_off, -16);
	ck_assert_int_eq(f->rows[1].cfa_off, 16);
	ck_assert(!f->rows[1].fp_frame);
	ck_assert_int_eq(f->rows[3].ra_where, TR_RA_IN_REG);
	ck_assert_int_eq(f->rows[3].ra_reg, 30);
	ck_assert_int_eq(f->ret_off, -1);
	free(f);
}
END_TEST

static const struct {
	const char *text;
	const char *msg;
} leaf_bad[] = {
	{ "[leaf]\ncall_target\nret\n", "not allowed" },
	{ "[leaf]\n", "[leaf] has no ops" },
	{ "[leaf]\nnop\nret\n[sample]\nat = every-insn, in-callee\n", "no in-callee" },
	{ "[leaf]\nnop\nret\n[sample]\nat = every-insn\ndepth = 2\n", "depth = 1" },
	{ "[leaf]\nnop\n.cfi_def_cfa_offset 16\nret\n", "no .cfi_* lines" },
};

START_TEST(leaf_parse_errors)
{
	char text[1024], err[512];
	snprintf(text, sizeof(text), "[case]\nname=t\narch=aarch64\nabout=a\n[code]\npush_fp\nset_fp\n"
		 "call_target\npop_fp\nret\n[expect]\nfp=ok\n%s", leaf_bad[_i].text);
	struct hx_case c;
	ck_assert_int_eq(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, leaf_bad[_i].msg), "%s", err);
	hx_case_free(&c);
}
END_TEST

START_TEST(leaf_parses)
{
	static const char text[] = "[case]\nname=t\narch=aarch64\nabout=a\n[code]\npush_fp\nset_fp\n"
				   "call_target\npop_fp\nret\n[leaf]\nnop\nret\n[sample]\nat = every-insn\n"
				   "[expect]\nfp = ok; skipped at leaf+0x0,leaf+0x4\n";
	char err[512];
	struct hx_case c;
	ck_assert_msg(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	ck_assert(c.has_leaf);
	ck_assert_uint_eq(c.nleaf, 2);
	ck_assert_str_eq(hx_case_expect(&c, "fp", NULL, 8192, "leaf+0x4", 4), "skipped");
	ck_assert_str_eq(hx_case_expect(&c, "fp", NULL, 8192, "tramp+0x4", 4), "ok");
	hx_case_free(&c);
}
END_TEST

#ifdef __aarch64__
static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jua64-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void capture(const char *text, struct hx_samples *s)
{
	struct hx_case c;
	char err[512], out[256];
	ck_assert_msg(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	snprintf(out, sizeof(out), "%s/t.samples", dir);
	struct ju_err je;
	ck_assert_msg(hx_capture_one(&c, "t.case", dir, out, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_samples_read(s, out, err, sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(s->ngroups, 1);
	hx_case_free(&c);
}

static uint64_t stack_word(const struct hx_sample *x, uint64_t addr)
{
	uint64_t v;
	ck_assert(addr >= x->stack_addr && addr + 8 <= x->stack_addr + x->stack_size);
	memcpy(&v, x->stack + (addr - x->stack_addr), 8);
	return v;
}

extern const char hx_callee_trap[];

enum { X3 = 3, X29 = 29, X30 = 30, SP = 31, PC = 32 };

START_TEST(regs_at_each_offset)
{
	struct hx_samples s;
	capture("[case]\nname=t\narch=aarch64\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
		"[sample]\nat=every-insn,in-callee\n[expect]\nfp=ok\n", &s);
	struct hx_group *g = &s.groups[0];
	ck_assert_msg(g->ended && !g->crashed && !g->error, "%s", g->error ? g->error : "crash");
	ck_assert_uint_eq(g->nsamples, 6);
	uint64_t base = g->funcs[0].addr, sp0 = 0, fp0 = 0;
	uint64_t ret = (uint64_t)(uintptr_t)hx_call_ret;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		ck_assert_uint_eq(x->abi, 2);
		ck_assert_uint_eq(x->mask, (UINT64_C(1) << 33) - 1);
		ck_assert_uint_eq(x->stack_addr, x->regs[SP]);
		ck_assert_uint_eq(x->truth[0], x->regs[PC]);
		ck_assert_uint_eq(x->truth[1], x->func == HX_FUNC_CALLEE ? base + 12 : ret);
		if (x->func == HX_FUNC_CALLEE) {
			/* past the callee's own brk: pc advanced by one instruction */
			ck_assert_uint_eq(x->regs[PC], (uint64_t)(uintptr_t)hx_callee_trap + 4);
			continue;
		}
		/* brk leaves the pc on itself: the sample's pc is the instruction's */
		ck_assert_uint_eq(x->regs[PC], base + x->offset);
		switch (x->offset) {
		case 0:      /* entry: RA in x30, nothing pushed */
			sp0 = x->regs[SP];
			fp0 = x->regs[X29];
			ck_assert_uint_eq(x->regs[X30], ret);
			ck_assert_uint_ne(x->regs[X3], 0);   /* the target, CPython's 4th argument */
			break;
		case 4:      /* after stp: the record {x29, x30} at the new sp */
			ck_assert_uint_eq(x->regs[SP], sp0 - 16);
			ck_assert_uint_eq(stack_word(x, sp0 - 16), fp0);
			ck_assert_uint_eq(stack_word(x, sp0 - 8), ret);
			break;
		case 8:      /* after mov x29, sp */
			ck_assert_uint_eq(x->regs[X29], sp0 - 16);
			break;
		case 12:     /* back from blr: x30 is the trampoline's own return point */
			ck_assert_uint_eq(x->regs[X30], base + 12);
			ck_assert_uint_eq(x->regs[SP], sp0 - 16);
			break;
		case 16:     /* after ldp, at ret */
			ck_assert_uint_eq(x->regs[SP], sp0);
			ck_assert_uint_eq(x->regs[X29], fp0);
			ck_assert_uint_eq(x->regs[X30], ret);
			break;
		default:
			ck_abort_msg("sample at offset %u is not an instruction boundary", x->offset);
		}
	}
	hx_samples_free(&s);
}
END_TEST

static const char leaf_case[] =
	"[case]\nname=t\narch=aarch64\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\npop_fp\nret\n"
	"[leaf]\nnop\nnop\nret\n[sample]\nat=every-insn\n[expect]\nfp=ok\n";

START_TEST(leaf_truth)
{
	struct hx_samples s;
	capture(leaf_case, &s);
	struct hx_group *g = &s.groups[0];
	ck_assert_msg(g->ended && !g->crashed && !g->error, "%s", g->error ? g->error : "crash");
	ck_assert_uint_eq(g->nfuncs, 2);
	ck_assert_str_eq(g->funcs[1].name, "leaf");
	ck_assert_uint_eq(g->nsamples, 5 + 3);
	int nleaf = 0;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		if (x->func != 1)
			continue;
		nleaf++;
		/* pc, tramp+12 (the leaf's RA, in x30 only), hx_call_ret, anchor */
		ck_assert_uint_eq(x->ntruth, 4);
		ck_assert_uint_eq(x->truth[0], g->funcs[1].addr + x->offset);
		ck_assert_uint_eq(x->truth[1], g->funcs[0].addr + 12);
		ck_assert_uint_eq(x->regs[X30], g->funcs[0].addr + 12);
		ck_assert_uint_eq(x->truth[2], (uint64_t)(uintptr_t)hx_call_ret);
		ck_assert_uint_eq(x->fpflag[1], 0);   /* no frame record in the leaf */
		ck_assert_uint_eq(x->fpflag[2], 1);
	}
	ck_assert_int_eq(nleaf, 3);
	hx_samples_free(&s);
}
END_TEST

/* lr-step's glue with the oracle as its DWARF engine: FP skips the
 * trampoline from the leaf, the stack-less step puts it back. */
START_TEST(lrstep_over_oracle)
{
	struct hx_samples s;
	capture(leaf_case, &s);
	struct hx_group *g = &s.groups[0];
	struct ju_err err;
	struct uw_map *maps = NULL;
	size_t nmaps = 0;
	ck_assert_msg(uw_maps_parse(g->maps, g->maps_len, &maps, &nmaps, &err) == 0, "%s", err.msg);
	struct jd_file jd;
	struct ju_err je;
	ck_assert_int_eq(jd_open(&jd, g->dump_path, &je), 0);
	const struct uw_arch *a = uw_arch_by_mach(EM_AARCH64);
	struct uw_view view;
	uw_view_init(&view, a, maps, nmaps, &jd, &err);
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		struct uw_sample us = { .arch = a, .abi = x->abi, .mask = x->mask, .stack_addr = x->stack_addr,
					.stack = x->stack, .stack_size = x->stack_size };
		memcpy(us.regs, x->regs, sizeof(us.regs));
		struct uw_result fp, lr;
		struct hx_judgement jf, jl;
		uw_fp.unwind(NULL, &view, &us, &fp);
		uw_lrstep_unwind_with(&uw_oracle, NULL, &view, &us, &lr);
		hx_judge(x->truth, (int)x->ntruth, fp.addr, fp.n, &jf);
		hx_judge(x->truth, (int)x->ntruth, lr.addr, lr.n, &jl);
		const char *fv = hx_verdict_name(jf.v), *lv = hx_verdict_name(jl.v);
		if (x->func == 1) {
			ck_assert_msg(!strcmp(fv, "skipped"), "leaf+%u: fp %s", x->offset, fv);
			ck_assert_msg(!strcmp(lv, "ok"), "leaf+%u: lr-step %s (%s)", x->offset, lv, lr.why);
		} else if (x->offset == 0 || x->offset == 16) {
			/* RA in x30 at entry and at the ret */
			ck_assert_msg(!strcmp(fv, "skipped"), "tramp+%u: fp %s", x->offset, fv);
			ck_assert_msg(!strcmp(lv, "ok"), "tramp+%u: lr-step %s (%s)", x->offset, lv, lr.why);
		} else if (x->offset == 4) {
			/* RA in the new record, x29 not moved: the stack-less step fails */
			ck_assert_msg(!strcmp(lv, "skipped"), "tramp+4: lr-step %s", lv);
			ck_assert_msg(strstr(lr.why, "no leaf caller"), "%s", lr.why);
		} else {
			/* x29 at the record: FP is right and the splice repeats the caller */
			ck_assert_msg(!strcmp(fv, "ok"), "tramp+%u: fp %s", x->offset, fv);
			ck_assert_msg(!strcmp(lv, "ok") || !strcmp(lv, "duplicate"), "tramp+%u: lr-step %s",
				      x->offset, lv);
		}
	}
	uw_view_fini(&view);
	uw_maps_free(maps, nmaps);
	jd_close(&jd);
	hx_samples_free(&s);
}
END_TEST
#endif

Suite *suite_aarch64(void);
Suite *suite_aarch64(void)
{
	Suite *s = suite_create("aarch64");
	TCase *tc = tcase_create("encode");
	/* without an objdump that reads aarch64 the comparison is not run, and
	 * not counted as passed: said here, once, with the fix */
	if (a64_objdump())
		tcase_add_test(tc, words_match_objdump);
	else
		printf("aarch64: words_match_objdump SKIPPED, not run: no objdump reads aarch64 "
		       "(apt-get install binutils-aarch64-linux-gnu)\n");
	tcase_add_test(tc, leaf_rows);
	tcase_add_loop_test(tc, leaf_parse_errors, 0, (int)(sizeof(leaf_bad) / sizeof(leaf_bad[0])));
	tcase_add_test(tc, leaf_parses);
	suite_add_tcase(s, tc);
#ifdef __aarch64__
	TCase *tcap = tcase_create("capture");
	tcase_add_checked_fixture(tcap, setup, teardown);
	tcase_add_test(tcap, regs_at_each_offset);
	tcase_add_test(tcap, leaf_truth);
	tcase_add_test(tcap, lrstep_over_oracle);
	suite_add_tcase(s, tcap);
#endif
	return s;
}
