/* Capture: the registers and stack of each sample against what the code at
 * that offset must have done; crashes in generated code are contained. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/capture/capture.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "unwinders/uwarch.h"

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
	struct ju_err je;
	ck_assert_msg(hx_capture_one(&c, "t.case", dir, out, &je) == 0, "%s", je.msg);
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

/* fp's faithful check where push_fp is not the first push (a fuzz-cfi
 * finding, cases/x86_64/fuzz-0dd2a77f97b3.case): at +6 the frame record is
 * set up but FP + 8 holds the saved r12, which an FP walk reports: `wrong`,
 * and what the convention predicts.  Control: the flag read as "reported"
 * (the old prediction) makes fp unfaithful there. */
static void replay_fp(struct hx_group *g, uint32_t mach, struct hx_case_res *res)
{
	struct hx_opts o = { .unwinders = { "fp" }, .nuw = 1 };
	char err[512];
	ck_assert_msg(hx_replay_group(g, mach, &o, res, err, sizeof(err)) == 0, "%s", err);
}

static const struct hx_sample_res *at_offset(const struct hx_case_res *res, int off)
{
	for (size_t i = 0; i < res->nsamples; i++)
		if (res->samples[i].offset == off)
			return &res->samples[i];
	ck_abort_msg("no sample at +%d", off);
	return NULL;
}

START_TEST(fp_record_not_ra)
{
	struct hx_samples s;
	capture("[case]\nname=t\narch=x86_64\nabout=a\n[code]\nsave_reg %r12\npush_fp\nset_fp\npop_fp\n"
		"restore_reg %r12\nret\n[sample]\nat=every-insn\n[expect]\nfp=ok\n", &s);
	struct hx_group *g = &s.groups[0];
	int not_ra = 0;
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *x = &g->samples[i];
		/* truth[1]: the return address the trampoline's record would hold */
		ck_assert_uint_eq(x->fpflag[1], x->offset == 6 ? HX_FP_NOT_RA : HX_FP_SKIPPED);
		not_ra += x->fpflag[1] == HX_FP_NOT_RA;
	}
	ck_assert_int_eq(not_ra, 1);
	struct hx_case_res res;
	replay_fp(g, s.elf_mach, &res);
	const struct hx_sample_res *r = at_offset(&res, 6);
	ck_assert_int_eq(r->uw[0].j.v, HX_WRONG);
	ck_assert(r->uw[0].has_faithful && r->uw[0].faithful);
	ck_assert(at_offset(&res, 3)->uw[0].faithful);
	hx_case_res_free(&res);
	for (size_t i = 0; i < g->nsamples; i++)
		for (uint32_t t = 0; t < g->samples[i].ntruth; t++)
			if (g->samples[i].fpflag[t] == HX_FP_NOT_RA)
				g->samples[i].fpflag[t] = HX_FP_REPORTED;
	replay_fp(g, s.elf_mach, &res);
	ck_assert(!at_offset(&res, 6)->uw[0].faithful);
	hx_case_res_free(&res);
	hx_samples_free(&s);
}
END_TEST
#endif

/* ---- batch capture: one child, many cases (capture.h) ---- */

#define NB_MAX 4
struct batch {
	struct hx_case c[NB_MAX];
	struct hx_batch_case b[NB_MAX];
	size_t n;
	struct hx_samples s;
	struct hx_batch_run st;
};

/* A case of this host's arch: code lines, then sample points. */
static void batch_add(struct batch *bt, const char *name, const char *code, const char *at)
{
	char text[1024], err[512];
	snprintf(text, sizeof(text), "[case]\nname=%s\narch=%s\nabout=a\n[code]\n%s[sample]\nat=%s\n[expect]\nfp=ok\n",
		 name, tr_arch_host()->facts->name, code, at);
	size_t i = bt->n++;
	ck_assert_msg(hx_case_parse(&bt->c[i], name, text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	bt->b[i] = (struct hx_batch_case){ .c = &bt->c[i], .path = bt->c[i].name };
}

static void batch_run(struct batch *bt)
{
	struct ju_err je;
	ck_assert_msg(hx_batch_dirs(bt->b, bt->n, dir, bt->st.per_child, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_capture_samples(bt->b, bt->n, &bt->s, &bt->st, &je) == 0, "%s", je.msg);
}

static void batch_free(struct batch *bt)
{
	hx_batch_dirs_free(bt->b, bt->n);
	for (size_t i = 0; i < bt->n; i++)
		hx_case_free(&bt->c[i]);
	hx_samples_free(&bt->s);
}

#define FP_CODE "push_fp\nset_fp\ncall_target\npop_fp\nret\n"
/* no frame record, a valid trampoline on both arches (arm64 keeps x30 in the pair) */
#define NOFP_CODE "push_fp\ncall_target\npop_fp\nret\n"

/* The rows (instructions, sample points) the JIT side emits for code on
 * this arch: riscv64's ops of several instructions have one per instruction */
static size_t nrows_of(const char *code)
{
	struct tr_op ops[16];
	size_t n = 0;
	struct ju_err err;
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", code);
	for (char *sv, *l = strtok_r(buf, "\n", &sv); l && n < 16; l = strtok_r(NULL, "\n", &sv)) {
		memset(&ops[n], 0, sizeof(ops[n]));
		ck_assert_msg(tr_op_parse(l, &ops[n], &err) == 0, "%s: %s", l, err.msg);
		n++;
	}
	static struct tr_func f;
	ck_assert_msg(tr_emit(tr_arch_host(), ops, n, &f, &err) == 0, "%s", err.msg);
	return f.nrows;
}

/* An instruction that raises SIGILL, as a raw op of this arch */
static const char *ill_code(void)
{
	return !strcmp(tr_arch_host()->facts->name, "x86_64") ? "push_fp\nraw 0f 0b ; nop\npop_fp\nret\n"   /* ud2 */
						       : "push_fp\nraw 00 00 00 00 ; nop\npop_fp\nret\n";  /* udf #0 */
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Three cases in one child, each with its own dump directory, the same pid. */
START_TEST(batch_one_child)
{
	struct batch bt = { 0 };
	batch_add(&bt, "a", FP_CODE, "every-insn, in-callee");
	batch_add(&bt, "b", NOFP_CODE, "every-insn");
	batch_add(&bt, "c", FP_CODE, "in-callee");
	batch_run(&bt);
	ck_assert_uint_eq(bt.st.children, 1);
	ck_assert_uint_eq(bt.st.ended, 0);
	ck_assert_uint_eq(bt.s.ngroups, 3);
	size_t want[3] = { nrows_of(FP_CODE) + 1, nrows_of(NOFP_CODE), 1 };
	for (size_t i = 0; i < 3; i++) {
		const struct hx_group *g = &bt.s.groups[i];
		ck_assert_str_eq(g->case_path, bt.c[i].name);
		ck_assert(g->ended && !g->crashed && !g->error);
		ck_assert_uint_eq(g->nsamples, want[i]);
		char d[256];
		snprintf(d, sizeof(d), "%s/%s/", dir, bt.c[i].name);
		ck_assert_msg(!strncmp(g->dump_path, d, strlen(d)), "%s not in %s", g->dump_path, d);
		ck_assert_str_eq(base_name(g->dump_path), base_name(bt.s.groups[0].dump_path));
		ck_assert(access(g->dump_path, R_OK) == 0);
		/* the maps perf is told of name no other case's files */
		for (size_t j = 0; j < 3; j++) {
			snprintf(d, sizeof(d), "%s/%s/", dir, bt.c[j].name);
			ck_assert(j == i || !memmem(g->maps, g->maps_len, d, strlen(d)));
		}
	}
	batch_free(&bt);
}
END_TEST

/* per_child 1 (record): a process per case, each dump in the one directory
 * under its own pid, as separate programs write them. */
START_TEST(batch_per_case)
{
	struct batch bt = { 0 };
	batch_add(&bt, "a", FP_CODE, "in-callee");
	batch_add(&bt, "b", NOFP_CODE, "every-insn");
	bt.st.per_child = 1;
	batch_run(&bt);
	ck_assert_uint_eq(bt.st.children, 2);
	ck_assert_uint_eq(bt.s.ngroups, 2);
	const struct hx_group *g = bt.s.groups;
	ck_assert_msg(g[0].ended && g[1].ended, "%s | %s (signal %u func %u offset %llu; %zu samples)",
		      g[0].error ? g[0].error : (g[0].crashed ? "crash" : "-"),
		      g[1].error ? g[1].error : (g[1].crashed ? "crash" : "-"), g[1].crash.signo, g[1].crash.func,
		      (unsigned long long)g[1].crash.offset, g[0].nsamples);
	ck_assert_str_ne(g[0].dump_path, g[1].dump_path);
	char d[256];
	snprintf(d, sizeof(d), "%s/jit-", dir);
	ck_assert(!strncmp(g[0].dump_path, d, strlen(d)) && !strncmp(g[1].dump_path, d, strlen(d)));
	batch_free(&bt);
}
END_TEST

/* Two captures of one case: the same pc and sp, stack size and truth at
 * every sample. */
static void same_samples(const struct hx_group *x, const struct hx_group *y, const struct uw_arch *a)
{
	ck_assert_uint_eq(x->nsamples, y->nsamples);
	for (size_t i = 0; i < x->nsamples; i++) {
		const struct hx_sample *p = &x->samples[i], *q = &y->samples[i];
		ck_assert_uint_eq(p->regs[a->perf_ip], q->regs[a->perf_ip]);
		ck_assert_uint_eq(p->regs[a->perf_sp], q->regs[a->perf_sp]);
		ck_assert_uint_eq(p->stack_size, q->stack_size);
		ck_assert_uint_eq(p->ntruth, q->ntruth);
		ck_assert_mem_eq(p->truth, q->truth, 8 * p->ntruth);
	}
}

/* A case after others in a batch sees what it sees alone in a fresh child:
 * the arena at the same place, the same stack depth, the same truth. */
START_TEST(batch_as_fresh)
{
	static struct batch alone, after;   /* off the stack, as batch_kept_samples' */
	memset(&alone, 0, sizeof(alone));
	memset(&after, 0, sizeof(after));
	batch_add(&alone, "b", FP_CODE, "every-insn, in-callee");
	batch_add(&after, "a", NOFP_CODE, "every-insn");
	batch_add(&after, "c", FP_CODE, "in-callee");
	batch_add(&after, "b", FP_CODE, "every-insn, in-callee");
	batch_run(&alone);
	batch_free(&alone);   /* its directory is reused by the batch */
	memset(&alone, 0, sizeof(alone));
	batch_add(&alone, "b", FP_CODE, "every-insn, in-callee");
	batch_run(&alone);
	batch_run(&after);
	ck_assert_uint_eq(after.st.children, 1);
	const struct hx_group *x = &alone.s.groups[0], *y = &after.s.groups[2];
	ck_assert_uint_eq(x->funcs[0].addr, y->funcs[0].addr);
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)alone.s.elf_mach);
	ck_assert_ptr_nonnull(a);
	same_samples(x, y, a);
	batch_free(&alone);
	batch_free(&after);
}
END_TEST

/* The arena a batch's child keeps for a case of the same size holds nothing
 * of the case before: JU_ARENA_CHECK has the child compare it with a fresh
 * mapping past the code.  Its control (=nozero, the old bytes left) must be
 * caught, which also shows the arena was kept. */
START_TEST(batch_kept_arena_clean)
{
	const char *nop = "nop\n";    /* the arch's one-instruction nop */
	char big[2048] = "push_fp\nset_fp\n";
	for (int i = 0; i < 40; i++)
		strcat(big, nop);
	strcat(big, "call_target\npop_fp\nret\n");
	for (int control = 0; control < 2; control++) {
		struct batch bt = { 0 };
		batch_add(&bt, "big", big, "every-insn");
		batch_add(&bt, "small", FP_CODE, "every-insn");
		setenv("JU_ARENA_CHECK", control ? "nozero" : "1", 1);
		batch_run(&bt);
		unsetenv("JU_ARENA_CHECK");
		ck_assert_uint_eq(bt.s.ngroups, 2);
		const struct hx_group *g = bt.s.groups;
		ck_assert_msg(g[0].ended, "%s", g[0].error ? g[0].error : "-");
		ck_assert_uint_eq(g[0].funcs[0].addr, g[1].funcs[0].addr);   /* the same place */
		if (!control) {
			ck_assert_msg(g[1].ended && !g[1].error, "%s", g[1].error ? g[1].error : "-");
			ck_assert_uint_eq(g[1].nsamples, nrows_of(FP_CODE));
		} else {
			ck_assert_msg(g[1].error && strstr(g[1].error, "left by an earlier case"),
				      "the control was not caught: %s", g[1].error ? g[1].error : "no error");
		}
		batch_free(&bt);
	}
}
END_TEST

/* hx_capture_samples keeps its memfd and mapping from one batch to the next
 * (batch.c, kept_memfd): a smaller batch after a bigger one sees only its
 * own records, as a fresh memfd (JU_SAMPLES_FRESH=1) gives them; while a
 * struct hx_samples holds the kept one, the next capture makes its own and
 * leaves the held records as they were. */
START_TEST(batch_kept_samples)
{
	/* four batches of up to NB_MAX cases (half a megabyte each) are more
	 * than a default 8 MB stack holds: static, zeroed here */
	static struct batch big, small, fresh, other;
	memset(&big, 0, sizeof(big));
	memset(&small, 0, sizeof(small));
	memset(&fresh, 0, sizeof(fresh));
	memset(&other, 0, sizeof(other));
	batch_add(&big, "a", FP_CODE, "every-insn, in-callee");
	batch_add(&big, "b", NOFP_CODE, "every-insn");
	batch_add(&big, "c", FP_CODE, "every-insn, in-callee");
	batch_run(&big);
	ck_assert_uint_eq(big.s.ngroups, 3);
	size_t big_size = big.s.size;
	batch_free(&big);
	setenv("JU_SAMPLES_FRESH", "1", 1);
	batch_add(&fresh, "b", NOFP_CODE, "every-insn");
	batch_run(&fresh);
	unsetenv("JU_SAMPLES_FRESH");
	ck_assert_ptr_null(fresh.s.release);          /* its own memfd */
	batch_add(&small, "b", NOFP_CODE, "every-insn");
	batch_run(&small);
	bool keeps = hx_capture_keeps_samples();      /* not under qemu-user (capture_<arch>.h) */
	ck_assert(keeps == (small.s.release != NULL)); /* the kept one, after the bigger batch */
	ck_assert_uint_eq(small.s.ngroups, 1);
	/* the held samples' mapping is not the child's business (MADV_DONTFORK,
	 * which qemu-user ignores) */
	ck_assert(!keeps || !memmem(small.s.groups[0].maps, small.s.groups[0].maps_len, "jitunwind-samples", 17));
	ck_assert_uint_lt(small.s.size, big_size);
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)small.s.elf_mach);
	ck_assert_ptr_nonnull(a);
	same_samples(&fresh.s.groups[0], &small.s.groups[0], a);
	/* held: the next capture does not write over it */
	const struct hx_sample *x = &small.s.groups[0].samples[0];
	size_t n = x->stack_size < 4096 ? x->stack_size : 4096;
	uint8_t *copy = malloc(n);
	memcpy(copy, x->stack, n);
	batch_add(&other, "c", FP_CODE, "every-insn, in-callee");
	batch_run(&other);
	ck_assert_ptr_null(other.s.release);
	ck_assert_uint_eq(other.s.ngroups, 1);
	ck_assert_mem_eq(copy, x->stack, n);
	free(copy);
	batch_free(&other);
	batch_free(&small);
	batch_free(&fresh);
}
END_TEST

/* A crash ends its case only: reported with its offset, the batch goes on
 * in a new child; a setup error (another arch's case) likewise. */
START_TEST(batch_crash_goes_on)
{
	struct batch bt = { 0 };
	char text[512], err[512];
	batch_add(&bt, "a", FP_CODE, "every-insn");
	batch_add(&bt, "ill", ill_code(), "every-insn");
	snprintf(text, sizeof(text), "[case]\nname=other\narch=%s\nabout=a\n[code]\nret\n[expect]\nfp=ok\n",
		 strcmp(tr_arch_host()->facts->name, "x86_64") ? "x86_64" : "aarch64");
	ck_assert_msg(hx_case_parse(&bt.c[2], "other", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	bt.b[2] = (struct hx_batch_case){ .c = &bt.c[2], .path = "other" };
	bt.n = 3;
	batch_add(&bt, "d", NOFP_CODE, "every-insn");
	batch_run(&bt);
	ck_assert_uint_eq(bt.st.children, 3);
	ck_assert_uint_eq(bt.st.ended, 2);
	ck_assert_uint_eq(bt.s.ngroups, 4);
	const struct hx_group *g = bt.s.groups;
	ck_assert(g[0].ended && g[0].nsamples == nrows_of(FP_CODE));
	ck_assert(g[1].crashed && !g[1].ended);
	ck_assert_uint_eq(g[1].crash.signo, SIGILL);
	ck_assert_uint_eq(g[1].crash.func, 0);
	ck_assert_uint_eq(g[1].crash.offset, g[1].funcs[0].rows[nrows_of("push_fp\n")].offset);
	ck_assert_uint_eq(g[1].crash.pc, g[1].funcs[0].addr + g[1].crash.offset);
	ck_assert_uint_eq(g[1].nsamples, nrows_of("push_fp\n") + 1);   /* push_fp's instructions and the raw one */
	ck_assert(g[2].error && strstr(g[2].error, "cannot run on this host") && !g[2].ended);
	ck_assert(g[3].ended && !g[3].crashed && g[3].nsamples == nrows_of(NOFP_CODE));
	batch_free(&bt);
}
END_TEST

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
	tcase_add_test(tc, fp_record_not_ra);
#endif
	suite_add_tcase(s, tc);
	TCase *tb = tcase_create("batch");
	tcase_add_checked_fixture(tb, setup, teardown);
	tcase_add_test(tb, batch_one_child);
	tcase_add_test(tb, batch_per_case);
	tcase_add_test(tb, batch_as_fresh);
	tcase_add_test(tb, batch_kept_arena_clean);
	tcase_add_test(tb, batch_kept_samples);
	tcase_add_test(tb, batch_crash_goes_on);
	suite_add_tcase(s, tb);
	return s;
}
