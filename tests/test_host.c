/* Host builds (harness/capture/host.h): each variant is what its name says.  The
 * nofp build must not keep frame pointers and must hold the interpreter's
 * state in rbp/x29; the nofp-leaf build must keep them except in the leaf.
 * Checked twice: on a captured sample (the frame-pointer chain as the stack
 * holds it, against the truth) and on the machine code (capstone). */
#include <capstone/capstone.h>
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "harness/capture/capture.h"
#include "harness/capture/host.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"

#include "tests/hostarch.h"
#include "unwinders/uwarch.h"
#include HX_CAPTURE_ARCH_H   /* HX_ARCH_STATE_IN_FP: the arch's nofp build keeps its state in the FP register */

#define ARCH (host_facts()->name)
#define CODE "push_fp\nset_fp\ncall_target\npop_fp\nret\n"
#define FPREG (host_facts()->dw_fp)
#define SPREG (host_facts()->dw_sp)
#define LRREG (host_facts()->dw_lr)

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/juhost-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* the in-callee sample of a depth-2 case under `host` */
static void capture_leaf(const char *host, struct hx_samples *s, const struct hx_sample **leaf)
{
	char text[512], err[512], out[256];
	snprintf(text, sizeof(text), "[case]\nname=t\narch=%s\nabout=a\n[code]\n" CODE
		 "[sample]\nat=in-callee\ndepth=2\nhost=%s\n[expect]\nfp=ok\n", ARCH, host);
	struct hx_case c;
	ck_assert_msg(hx_case_parse(&c, "t.case", text, strlen(text), err, sizeof(err)) == 0, "%s", err);
	snprintf(out, sizeof(out), "%s/t.samples", dir);
	struct ju_err je;
	ck_assert_msg(hx_capture_one(&c, "t.case", dir, out, &je) == 0, "%s", je.msg);
	ck_assert_msg(hx_samples_read(s, out, err, sizeof(err)) == 0, "%s", err);
	hx_case_free(&c);
	ck_assert_uint_eq(s->ngroups, 1);
	const struct hx_group *g = &s->groups[0];
	ck_assert_msg(g->ended && !g->crashed && !g->error, "%s", g->error ? g->error : "crash");
	ck_assert_uint_eq(g->nsamples, 1);
	*leaf = &g->samples[0];
	ck_assert_uint_eq((*leaf)->func, HX_FUNC_CALLEE);
	/* pc, leaf RA, tramp2+ret, call_ret, interpreter RA, tramp+ret, call_ret, anchor */
	ck_assert_uint_eq((*leaf)->ntruth, 8);
}

static bool word(const struct hx_sample *x, uint64_t addr, uint64_t *v)
{
	if (addr < x->stack_addr || addr + 8 > x->stack_addr + x->stack_size || addr + 8 < addr)
		return false;
	memcpy(v, x->stack + (addr - x->stack_addr), 8);
	return true;
}

/* The frame-pointer chain from the sample, as the stack copy holds it:
 * the "return address" of each record, up to max. */
static int fp_chain(const struct hx_sample *x, uint64_t *ra, int max)
{
	uint64_t fp = x->regs[FPREG];
	const struct uw_fp_layout *L = &uw_arch_host()->fp;   /* riscv64: the record below FP */
	int n = 0;
	while (n < max) {
		uint64_t next;
		if (!word(x, fp + (uint64_t)L->next_off, &next) || !word(x, fp + (uint64_t)L->ra_off, &ra[n]))
			break;
		n++;
		fp = next;
	}
	return n;
}

START_TEST(nofp_holds_state_not_frames)
{
	struct hx_samples s;
	const struct hx_sample *x;
	capture_leaf("nofp", &s, &x);
	uint64_t ra[4];
	int n = fp_chain(x, ra, 4);
	ck_assert_int_ge(n, 1);
	/* neither the leaf nor the interpreter built a frame record ... */
	for (int i = 0; i < n; i++) {
		ck_assert_uint_ne(ra[i], x->truth[1]);
		ck_assert_uint_ne(ra[i], x->truth[2]);
	}
	/* ... and the register leads to the interpreter's state, which is no
	 * record: its counter is not a stack address, its opcode no code */
	int st = -1;
	for (int i = 0; i < n && st < 0; i++)
		if (ra[i] == HX_HOST_STATE1)
			st = i;
	ck_assert_msg(st >= 0, "the frame-pointer chain never reaches the interpreter state");
#ifdef HX_ARCH_STATE_IN_FP
	/* the interpreter itself keeps the state in the frame-pointer register */
	ck_assert_int_eq(st, 0);
#endif
	hx_samples_free(&s);
}
END_TEST

START_TEST(nofpleaf_keeps_all_but_the_leaf)
{
	struct hx_samples s;
	const struct hx_sample *x;
	capture_leaf("nofp-leaf", &s, &x);
	uint64_t ra[8];
	int n = fp_chain(x, ra, 8);
	/* the first record is the interpreter's (its RA into tramp2): the leaf
	 * built none, the interpreter did */
	ck_assert_int_ge(n, 3);
	ck_assert_uint_eq(ra[0], x->truth[2]);
	ck_assert_uint_eq(ra[1], x->truth[3]);
	/* the leaf's RA is where a frameless leaf has it */
	if (host_facts()->ra_at_cfa) {   /* at CFA + ra_cfa_off, and CFA = sp + entry_cfa_off */
		uint64_t top;
		ck_assert(word(x, x->regs[SPREG] + (uint64_t)(host_facts()->entry_cfa_off + host_facts()->ra_cfa_off),
			       &top));
		ck_assert_uint_eq(top, x->truth[1]);
	} else {
		ck_assert_uint_eq(x->regs[LRREG], x->truth[1]);
	}
	hx_samples_free(&s);
}
END_TEST

/* The function's instructions up to its first return (bounded): does any
 * name the frame-pointer register, and does it build a frame record? */
struct scan { bool names_fp, builds_record; int n; };

static struct scan scan_fn(const void *fn)
{
	struct scan r = { 0 };
	csh cs;
	/* capstone's Intel syntax on x86, so names without the '%' */
	const struct uw_arch *a = uw_arch_host();
	ck_assert(a && a->has_cs);
	ck_assert_int_eq(cs_open((cs_arch)a->cs_arch, (cs_mode)a->cs_mode, &cs), CS_ERR_OK);
	char fpname[16], spname[16], record[48], addi[48];
	arch_dw_name(a->facts, (unsigned)a->facts->dw_fp, false, fpname, sizeof(fpname));
	arch_dw_name(a->facts, (unsigned)a->facts->dw_sp, false, spname, sizeof(spname));
	/* x86_64 and arm64 copy SP to FP; riscv64 adds the frame size (addi, or c.addi4spn) */
	snprintf(record, sizeof(record), "mov %s, %s", fpname, spname);
	snprintf(addi, sizeof(addi), "%s, %s, ", fpname, spname);
	const uint8_t *p = fn;
	uint64_t addr = (uint64_t)(uintptr_t)fn;
	size_t left = 256;
	cs_insn *in = cs_malloc(cs);
	while (r.n < 64 && cs_disasm_iter(cs, &p, &left, &addr, in)) {
		char text[192];
		snprintf(text, sizeof(text), "%s %s", in->mnemonic, in->op_str);
		r.n++;
		r.names_fp |= strstr(text, fpname) != NULL;
		r.builds_record |= strstr(text, record) != NULL ||
				   (strstr(in->mnemonic, "addi") && !strncmp(in->op_str, addi, strlen(addi)));
		if (!strcmp(in->mnemonic, "ret") || (!strcmp(in->mnemonic, "c.jr") && !strcmp(in->op_str, "ra")))
			break;                 /* riscv64's compressed return is c.jr ra */
	}
	cs_free(in, 1);
	cs_close(&cs);
	ck_assert_int_gt(r.n, 0);
	return r;
}

START_TEST(machine_code)
{
	/* leaves of both builds leave the frame-pointer register alone */
	ck_assert(!scan_fn((const void *)hx_host_nofp_leaf).names_fp);
	ck_assert(!scan_fn((const void *)hx_host_nofpleaf_leaf).names_fp);
	/* the nofp-leaf interpreter builds its record: the scan can see one */
	ck_assert(scan_fn((const void *)hx_host_nofpleaf_target).builds_record);
	ck_assert(scan_fn((const void *)hx_call).builds_record);
	/* the nofp interpreter builds none (x86_64: rbp is its state pointer) */
	struct scan t = scan_fn((const void *)hx_host_nofp_target);
#ifndef HX_ARCH_STATE_FP_OFF
	/* (riscv64 points s0 at sp + an offset for its state: no pattern tells that from a record) */
	ck_assert(!t.builds_record);
#endif
#ifdef HX_ARCH_STATE_IN_FP
	ck_assert(t.names_fp);
#endif
}
END_TEST

START_TEST(host_key_parse)
{
	struct hx_case c;
	char err[512];
	char t[256];
	snprintf(t, sizeof(t), "[case]\nname=t\narch=%s\nabout=a\n[code]\n" CODE
		 "[sample]\nhost=fastest\n[expect]\nfp=ok\n", ARCH);
	ck_assert_int_eq(hx_case_parse(&c, "t.case", t, strlen(t), err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, "t.case:12: host: expected one of fp, nofp, nofp-leaf"), "%s", err);
	hx_case_free(&c);
}
END_TEST

Suite *suite_host(void);
Suite *suite_host(void)
{
	Suite *s = suite_create("host");
	TCase *tc = tcase_create("host");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nofp_holds_state_not_frames);
	tcase_add_test(tc, nofpleaf_keeps_all_but_the_leaf);
	tcase_add_test(tc, machine_code);
	tcase_add_test(tc, host_key_parse);
	suite_add_tcase(s, tc);
	return s;
}
