/* lint's -g rules (JD084-JD086, unwinders/lint/lint_fp.c): crafted x86_64
 * loads without unwinding info, the assembly beside the bytes (as objdump -D
 * -b binary -mi386:x86-64 reads them), the boundaries each rule must name
 * computed by hand from that assembly and the kernel's walk: fp still the
 * caller's (skipped), fp at {saved rbp, return address} (right), else garbage. */
#include "tests/lint.h"

/* push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret: CPython 3.13's trampoline */
static const uint8_t fp_tramp[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
/* endbr64; push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret: CPython 3.15's in memory */
static const uint8_t fp_cet[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
/* sub $8,%rsp; call *%rcx; add $8,%rsp; ret: CPython 3.12's, no frame */
static const uint8_t nofp_tramp[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x08, 0xc3 };
/* push %rbp; sub $0x10,%rsp; mov %rsi,%rbp; call *%rcx; add $0x10,%rsp; pop %rbp; ret:
 * rbp saved, then an ordinary register (HotSpot's C2) */
static const uint8_t clobber[] = { 0x55, 0x48, 0x83, 0xec, 0x10, 0x48, 0x89, 0xf5, 0xff, 0xd1, 0x48, 0x83, 0xc4, 0x10,
				   0x5d, 0xc3 };
/* mov %rdi,%rax; push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; mov %rax,%rdx; ret:
 * work before the frame (+0x0, +0x3, +0x4 skip) and after it (+0x9, +0xc) */
static const uint8_t window[] = { 0x48, 0x89, 0xf8, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0x48, 0x89, 0xc2, 0xc3 };
/* push %r12; push %rbp; mov %rsp,%rbp; ...: rbp points at {saved rbp, saved r12}, not the return address */
static const uint8_t r12_first[] = { 0x41, 0x54, 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0x41, 0x5c, 0xc3 };
/* push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; cmp $0x2,%rcx; jg 0xe; ret;
 * 0xe: pop %r10; push %r10; ret: V8's two return sequences, the second reached
 * by the jg with the caller's rbp (+0x7, +0xb, +0xd, then +0xe, +0x10, +0x12) */
static const uint8_t v8ret[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0x48, 0x83, 0xf9, 0x02, 0x7f, 0x01, 0xc3,
				 0x41, 0x5a, 0x41, 0x52, 0xc3 };
/* mov 0x18(%rbp),%rax; call *%rcx; ret: a frame its code never builds (V8's baseline code, QEMU's env in rbp) */
static const uint8_t foreign[] = { 0x48, 0x8b, 0x45, 0x18, 0xff, 0xd1, 0xc3 };

/* an x86_64 dump (whatever the host) */
static void jb_x86_hdr(struct jb *b)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, 0);
}

static void jb_x86(struct jb *b, const char *name, const uint8_t *code, size_t n, uint64_t addr, uint64_t index)
{
	jb_x86_hdr(b);
	jb_load(b, name, addr, code, n, index);
}

void mk_fp_noframe(struct jb *b, bool bad, struct ctx *c)
{
	jb_x86(b, "jit_f", bad ? nofp_tramp : fp_tramp, bad ? sizeof(nofp_tramp) : sizeof(fp_tramp), ADDR + 0x1000, 1);
}

void mk_fp_clobbered(struct jb *b, bool bad, struct ctx *c)
{
	jb_x86(b, "jit_f", bad ? clobber : fp_tramp, bad ? sizeof(clobber) : sizeof(fp_tramp), ADDR + 0x1000, 1);
}

void mk_fp_window(struct jb *b, bool bad, struct ctx *c)
{
	jb_x86(b, "jit_f", bad ? window : fp_cet, bad ? sizeof(window) : sizeof(fp_cet), ADDR + 0x1000, 1);
}

/* the findings of rule id about the load named name (the load's file offset) */
static size_t fp_about(const char *id, uint64_t load, size_t *at)
{
	size_t n = 0;
	for (size_t i = 0; i < lt_G.n; i++)
		if (!strcmp(lt_G.r[i]->id, id) && lt_G.where[i].load == load) {
			*at = i;
			n++;
		}
	return n;
}

static bool fp_pcs(size_t i, const uint64_t *want, unsigned n)
{
	const struct lint_where *w = &lt_G.where[i];
	if (w->whole || w->npc != n)
		return false;
	for (unsigned k = 0; k < n; k++)
		if (w->pc[k] != want[k])
			return false;
	return true;
}

/* one dump, one function of each shape: each rule names its function (by
 * the load, and its name in the text), at the boundaries worked out above,
 * and the frame-pointer functions get nothing */
START_TEST(fp_rules_by_function)
{
	struct jb b = { 0 };
	jb_x86_hdr(&b);
	static const struct { const char *name; const uint8_t *code; size_t n; } f[] = {
		{ "jit_framed", fp_tramp, sizeof(fp_tramp) }, { "jit_cet", fp_cet, sizeof(fp_cet) },
		{ "jit_noframe", nofp_tramp, sizeof(nofp_tramp) }, { "jit_clobber", clobber, sizeof(clobber) },
		{ "jit_window", window, sizeof(window) }, { "jit_r12", r12_first, sizeof(r12_first) },
		{ "jit_foreign", foreign, sizeof(foreign) }, { "jit_v8ret", v8ret, sizeof(v8ret) },
	};
	uint64_t off[8];
	for (size_t i = 0; i < 8; i++)
		off[i] = jb_load(&b, f[i].name, ADDR + 0x1000 * (i + 1), f[i].code, f[i].n, i);
	lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
	free(b.p);
	char buf[16384];
	lt_show(buf, sizeof(buf));
	static const char *const ids[] = { "JD084", "JD085", "JD086" };
	/* JD084, JD085, JD086 per function: how many */
	/* (JD084 is about samples where the walk reads the caller's record: not
	 * where it reads garbage, JD085's) */
	static const size_t want[8][3] = { { 0, 0, 0 }, { 0, 0, 0 }, { 1, 0, 0 }, { 0, 1, 0 }, { 0, 0, 1 }, { 0, 1, 0 },
					   { 0, 0, 0 }, { 0, 0, 1 } };
	for (size_t i = 0; i < 8; i++)
		for (size_t r = 0; r < 3; r++) {
			size_t at = 0;
			ck_assert_msg(fp_about(ids[r], off[i], &at) == want[i][r], "%s about %s: want %zu\n%s", ids[r], f[i].name,
				      want[i][r], buf);
			if (want[i][r])
				ck_assert_msg(strstr(lt_G.msg[at], f[i].name), "%s does not name %s\n%s", ids[r], f[i].name, buf);
		}
	size_t at = 0;
	fp_about("JD084", off[2], &at);
	ck_assert(lt_G.where[at].whole);
	/* clobber: rbp is the caller's until `mov %rsi,%rbp` at +0x5, garbage at +0x8 (call), +0xa, +0xe (pop) */
	static const uint64_t clob[] = { 0x8, 0xa, 0xe };
	fp_about("JD085", off[3], &at);
	ck_assert_msg(fp_pcs(at, clob, 3) && strstr(lt_G.msg[at], "+0x5 writes rbp"), "%s", buf);
	/* window: the caller's rbp at +0x0, +0x3, +0x4 (mov %rdi,%rax first), +0xa, +0xd (mov %rax,%rdx after the pop) */
	static const uint64_t win[] = { 0x0, 0x3, 0x4, 0xa, 0xd };
	fp_about("JD086", off[4], &at);
	ck_assert_msg(fp_pcs(at, win, 5) && strstr(lt_G.msg[at], "built late and torn down early"), "%s", buf);
	/* r12 first: rbp points at {saved rbp, saved r12} from +0x6 to the pop at +0x8 */
	static const uint64_t r12[] = { 0x6, 0x8 };
	fp_about("JD085", off[5], &at);
	ck_assert_msg(fp_pcs(at, r12, 2), "%s", buf);
	static const uint64_t ret2[] = { 0x7, 0xb, 0xd, 0xe, 0x10, 0x12 };
	fp_about("JD086", off[7], &at);
	ck_assert_msg(fp_pcs(at, ret2, 6) && strstr(lt_G.msg[at], "torn down early"), "%s", buf);
}
END_TEST

/* findings name their loads (issue 36): mk_overlap's 'tramp2' lies over the
 * unwinding data of 'tramp', whose name is a prefix of its own; JD051 names both */
START_TEST(findings_name_loads)
{
	struct jb b = { 0 };
	mk_overlap(&b, true, NULL);
	lt_lint_buf(b.p, b.n, PV_CURRENT, NULL);
	free(b.p);
	char buf[8192];
	lt_show(buf, sizeof(buf));
	bool found = false;
	for (size_t i = 0; i < lt_G.n; i++)
		found |= !strcmp(lt_G.r[i]->id, "JD051") && strstr(lt_G.msg[i], "'tramp' (the CODE_LOAD at 0x") &&
			 strstr(lt_G.msg[i], "'tramp2'");
	ck_assert_msg(found, "no JD051 naming 'tramp' (the CODE_LOAD at ...) and 'tramp2':\n%s", buf);
}
END_TEST

void lint_add_fp_tests(TCase *rules)
{
	tcase_add_test(rules, fp_rules_by_function);
	tcase_add_test(rules, findings_name_loads);
}
