/* lr-step (perf's arm64 LR plus one DWARF step) on synthetic chains: the
 * leaf sample perf builds in FP mode, the "exactly 2 entries" rule, and the
 * splice of machine.c, with a scripted engine standing in for libunwind or
 * libdw so every branch is reached on any host. */
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>
#include "harness/case/judge.h"
#include "unwinders/lrstep.h"
#include "trampolines/arch.h"

enum { LR = 30, SP = 31, PC = 32, FP = 29 };

#define STACK 0x7ff000ull

/* The scripted engine: records what it was given, answers `script`. */
static struct uw_sample seen;
static int calls;
static struct uw_result script;

static int fake_unwind(void *st, const struct uw_view *v, const struct uw_sample *s, struct uw_result *r)
{
	seen = *s;
	calls++;
	*r = script;
	return 0;
}

static const struct uw_unwinder fake = { .name = "fake", .unwind = fake_unwind };

static uint8_t stack[64];

/* An arm64 sample at pc 0x1000 with lr 0x2004, x29 -> {0, 0x3008} on the stack. */
static void sample(struct uw_sample *s, uint64_t fp)
{
	memset(s, 0, sizeof(*s));
	s->arch = uw_arch_by_mach(EM_AARCH64);
	s->abi = 2;
	s->mask = (UINT64_C(1) << 33) - 1;
	s->regs[PC] = 0x1000;
	s->regs[LR] = 0x2004;
	s->regs[SP] = STACK;
	s->regs[FP] = fp;
	memset(stack, 0, sizeof(stack));
	uint64_t rec[2] = { 0, 0x3008 };
	memcpy(stack + 16, rec, sizeof(rec));
	s->stack_addr = STACK;
	s->stack = stack;
	s->stack_size = sizeof(stack);
	memset(&script, 0, sizeof(script));
	calls = 0;
}

static void answer(int n, uint64_t a0, uint64_t a1, enum uw_stop stop)
{
	script.n = n;
	script.addr[0] = a0;
	script.addr[1] = a1;
	script.stop = stop;
}

START_TEST(leaf_sample_is_perfs)
{
	struct uw_sample s, l;
	sample(&s, STACK + 16);
	uw_lrstep_leaf_sample(&s, 0x1000, &l);
	/* LR only, PC from the chain, SP = 0 (perf's cache_mask), no stack */
	ck_assert_uint_eq(l.mask, UINT64_C(1) << LR | UINT64_C(1) << PC | UINT64_C(1) << SP);
	ck_assert_uint_eq(l.regs[LR], 0x2004);
	ck_assert_uint_eq(l.regs[PC], 0x1000);
	ck_assert_uint_eq(l.regs[SP], 0);
	ck_assert_uint_eq(l.regs[FP], 0);
	ck_assert_uint_eq(l.stack_size, 0);
	ck_assert_ptr_null(l.stack);
	/* x86_64 has no LR: nothing to step */
	s.arch = uw_arch_by_mach(EM_X86_64);
	uw_lrstep_leaf_sample(&s, 0x1000, &l);
	ck_assert_uint_eq(l.mask, 0);
}
END_TEST

START_TEST(leaf_needs_two_entries)
{
	struct uw_result r = { 0 };
	char why[160] = "";
	r.n = 1;
	r.addr[0] = 0x1000;
	r.stop = UW_STOP_MEM;
	ck_assert_uint_eq(uw_lrstep_leaf(&r, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "1 entry"), "%s", why);
	r.n = 2;
	r.addr[1] = 0x2004;
	ck_assert_uint_eq(uw_lrstep_leaf(&r, why, sizeof(why)), 0x2003);   /* perf's ip - 1 */
	r.n = 5;   /* an engine that went further: entry 1 is the same */
	ck_assert_uint_eq(uw_lrstep_leaf(&r, why, sizeof(why)), 0x2003);
}
END_TEST

/* Splice cases: fp chain, leaf (perf value), expected result. */
static const struct {
	const char *name;
	int nfp;
	uint64_t fp[3];
	uint64_t leaf;
	int nr;
	uint64_t want[4];
} splices[] = {
	{ "inserted before the first FP entry", 3, { 0x1000, 0x3008, 0x4010 }, 0x2003, 4,
	  { 0x1000, 0x2004, 0x3008, 0x4010 } },
	{ "no leaf caller", 3, { 0x1000, 0x3008, 0x4010 }, 0, 3, { 0x1000, 0x3008, 0x4010 } },
	/* perf compares ip - 1 with a raw return address: the same frame twice */
	{ "same caller kept twice", 2, { 0x1000, 0x2004 }, 0x2003, 3, { 0x1000, 0x2004, 0x2004 } },
	{ "equal values dropped", 2, { 0x1000, 0x2004 }, 0x2004, 2, { 0x1000, 0x2004 } },
	/* x29 = 0: the kernel chain has the pc only, perf never reaches the splice */
	{ "no FP entry, no splice", 1, { 0x1000 }, 0x2003, 1, { 0x1000 } },
};

START_TEST(splice_table)
{
	struct uw_result fp = { 0 }, r;
	fp.n = splices[_i].nfp;
	memcpy(fp.addr, splices[_i].fp, sizeof(splices[_i].fp));
	uw_lrstep_splice(&fp, splices[_i].leaf, 0, &r);
	ck_assert_msg(r.n == splices[_i].nr, "%s: %d frames", splices[_i].name, r.n);
	for (int i = 0; i < r.n; i++)
		ck_assert_msg(r.addr[i] == splices[_i].want[i], "%s: frame %d 0x%llx", splices[_i].name, i,
			      (unsigned long long)r.addr[i]);
}
END_TEST

START_TEST(duplicate_verdict)
{
	/* prologue: the engine and the FP record both give the caller */
	uint64_t truth[] = { 0x1000, 0x2004, 0x3008 };
	struct uw_result fp = { 0 }, r;
	fp.n = 3;
	fp.addr[0] = 0x1000;
	fp.addr[1] = 0x2004;
	fp.addr[2] = 0x3008;
	uw_lrstep_splice(&fp, 0x2003, 0, &r);
	struct hx_judgement j;
	hx_judge(truth, 3, r.addr, r.n, &j);
	ck_assert_str_eq(hx_verdict_name(j.v), "duplicate");
}
END_TEST

START_TEST(whole_unwinder)
{
	struct uw_sample s;
	struct uw_result r;
	/* x29 -> record {0, 0x3008}: kernel chain 0x1000, 0x3008 */
	sample(&s, STACK + 16);
	answer(2, 0x1000, 0x2004, UW_STOP_END);
	script.flags[1] = UW_F_FALLBACK;
	ck_assert_int_eq(uw_lrstep_unwind_with(&fake, NULL, NULL, &s, &r), 0);
	ck_assert_int_eq(calls, 1);
	ck_assert_uint_eq(seen.stack_size, 0);
	ck_assert_uint_eq(seen.regs[PC], 0x1000);
	ck_assert_int_eq(r.n, 3);
	ck_assert_uint_eq(r.addr[1], 0x2004);
	ck_assert_uint_eq(r.addr[2], 0x3008);
	ck_assert_uint_eq(r.flags[1], UW_F_FALLBACK);   /* the engine's fallback shows */
	/* the step failed (the RA is in memory it cannot read): FP chain alone */
	sample(&s, STACK + 16);
	answer(1, 0x1000, 0, UW_STOP_MEM);
	uw_lrstep_unwind_with(&fake, NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_uint_eq(r.addr[1], 0x3008);
	ck_assert_msg(strstr(r.why, "no leaf caller"), "%s", r.why);
	/* an engine that cannot run gives an error, never the FP chain alone */
	sample(&s, STACK + 16);
	answer(0, 0, 0, UW_STOP_ERROR);
	snprintf(script.why, sizeof(script.why), "no glue");
	uw_lrstep_unwind_with(&fake, NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 0);
	ck_assert_int_eq(r.stop, UW_STOP_ERROR);
	ck_assert_msg(strstr(r.why, "fake: no glue"), "%s", r.why);
	/* no engine at all */
	uw_lrstep_unwind_with(NULL, NULL, NULL, &s, &r);
	ck_assert_int_eq(r.stop, UW_STOP_ERROR);
}
END_TEST

START_TEST(registered)
{
	ck_assert_ptr_eq(uw_unwinder_by_name("lr-step"), &uw_lrstep);
	ck_assert_ptr_eq(uw_unwinder_by_name("lr-step-dw"), &uw_lrstep_dw);
}
END_TEST

/* The policies' arch lists name arches of the table (a misspelt one would
 * silently turn an unwinder off), and by default lr-step runs where perf
 * splices LR (arm64) only; the build's own arch is in the table, the JIT
 * side's host arch. */
START_TEST(default_arches_are_the_tables)
{
	size_t n;
	const struct uw_unwinder *const *all = uw_unwinders(&n);
	int named = 0;
	for (size_t i = 0; i < n; i++)
		for (const char *const *a = all[i]->default_arches; a && *a; a++, named++) {
			const struct uw_arch *ua = uw_arch_by_name(*a);
			ck_assert_msg(ua && !strcmp(ua->facts->name, *a), "%s: default arch '%s' is no name of the arch table",
				      all[i]->name, *a);
		}
	ck_assert_int_gt(named, 0);
	ck_assert(uw_unwinder_default_on(&uw_lrstep, "aarch64"));
	ck_assert(!uw_unwinder_default_on(&uw_lrstep, "x86_64"));
	ck_assert(uw_unwinder_default_on(&uw_fp, "x86_64") && uw_unwinder_default_on(&uw_fp, "aarch64"));
	ck_assert_ptr_nonnull(uw_arch_host());
	ck_assert_ptr_nonnull(tr_arch_host());
	ck_assert_uint_eq(uw_arch_host()->facts->elf_mach, tr_arch_host()->facts->elf_mach);
}
END_TEST

Suite *suite_lrstep(void);
Suite *suite_lrstep(void)
{
	Suite *s = suite_create("lrstep");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, leaf_sample_is_perfs);
	tcase_add_test(tc, leaf_needs_two_entries);
	tcase_add_loop_test(tc, splice_table, 0, (int)(sizeof(splices) / sizeof(splices[0])));
	tcase_add_test(tc, duplicate_verdict);
	tcase_add_test(tc, whole_unwinder);
	tcase_add_test(tc, registered);
	tcase_add_test(tc, default_arches_are_the_tables);
	suite_add_tcase(s, tc);
	return s;
}
