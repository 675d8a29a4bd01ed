/* FP unwinder on synthetic snapshots: kernel semantics, reads only the copy. */
#include <check.h>
#include <elf.h>
#include <string.h>
#include "unwinders/view.h"

#define BASE 0x7ffd0000ull

static uint8_t stack[256];

static void put(uint64_t addr, uint64_t v)
{
	memcpy(stack + (addr - BASE), &v, 8);
}

static void mk(struct uw_sample *s, uint16_t mach, uint64_t fp, uint64_t size)
{
	memset(s, 0, sizeof(*s));
	s->arch = uw_arch_by_mach(mach);
	s->mask = s->arch->facts->perf_mask;
	s->regs[s->arch->perf_ip] = 0x401000;
	s->regs[s->arch->perf_sp] = BASE;
	s->regs[s->arch->perf_fp] = fp;
	s->stack_addr = BASE;
	s->stack = stack;
	s->stack_size = size;
}

START_TEST(x86_chain)
{
	struct uw_sample s;
	struct uw_result r;
	memset(stack, 0, sizeof(stack));
	put(BASE + 0x10, BASE + 0x40);  put(BASE + 0x18, 0x402000);
	put(BASE + 0x40, BASE + 0x80);  put(BASE + 0x48, 0x403000);
	put(BASE + 0x80, 0);            put(BASE + 0x88, 0x404000);
	mk(&s, EM_X86_64, BASE + 0x10, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 4);
	ck_assert_uint_eq(r.addr[0], 0x401000);
	ck_assert_uint_eq(r.addr[1], 0x402000);
	ck_assert_uint_eq(r.addr[3], 0x404000);
	ck_assert_int_eq(r.stop, UW_STOP_END);
}
END_TEST

START_TEST(x86_cycle_bounded)
{
	/* a record pointing at itself: the kernel has no monotonicity check on
	 * x86_64, so the walk runs to the frame limit, never forever */
	struct uw_sample s;
	struct uw_result r;
	memset(stack, 0, sizeof(stack));
	put(BASE + 0x20, BASE + 0x20);
	put(BASE + 0x28, 0x402000);
	mk(&s, EM_X86_64, BASE + 0x20, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.stop, UW_STOP_MAX);
	ck_assert_int_le(r.n, UW_MAX_FRAMES);
}
END_TEST

START_TEST(x86_outside_snapshot)
{
	struct uw_sample s;
	struct uw_result r;
	memset(stack, 0, sizeof(stack));
	/* record straddling the end of the copy: fp+8 readable only partly */
	put(BASE + 0x10, BASE + sizeof(stack) - 12);
	put(BASE + 0x18, 0x402000);
	mk(&s, EM_X86_64, BASE + 0x10, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.stop, UW_STOP_MEM);
	/* fp below the copy */
	mk(&s, EM_X86_64, BASE - 0x100, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.stop, UW_STOP_MEM);
	/* an address that wraps around */
	mk(&s, EM_X86_64, UINT64_MAX - 4, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 1);
}
END_TEST

START_TEST(x86_unaligned_fp_followed)
{
	/* x86_64's walk does not check alignment */
	struct uw_sample s;
	struct uw_result r;
	memset(stack, 0, sizeof(stack));
	put(BASE + 0x13, 0);
	put(BASE + 0x1b, 0x402000);
	mk(&s, EM_X86_64, BASE + 0x13, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_uint_eq(r.addr[1], 0x402000);
}
END_TEST

START_TEST(arm64_rules)
{
	struct uw_sample s;
	struct uw_result r;
	memset(stack, 0, sizeof(stack));
	/* unaligned x29: nothing beyond the pc */
	mk(&s, EM_AARCH64, BASE + 0x14, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 1);
	/* a record that does not move up: stored, then the walk stops */
	put(BASE + 0x20, BASE + 0x10);
	put(BASE + 0x28, 0x0012000000402000ull);   /* PAC bits set */
	mk(&s, EM_AARCH64, BASE + 0x20, sizeof(stack));
	uw_fp.unwind(NULL, NULL, &s, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_uint_eq(r.addr[1], 0x402000);
	ck_assert_int_eq(r.stop, UW_STOP_END);
}
END_TEST

Suite *suite_fp(void);
Suite *suite_fp(void)
{
	Suite *s = suite_create("fp");
	TCase *tc = tcase_create("kernel");
	tcase_add_test(tc, x86_chain);
	tcase_add_test(tc, x86_cycle_bounded);
	tcase_add_test(tc, x86_outside_snapshot);
	tcase_add_test(tc, x86_unaligned_fp_followed);
	tcase_add_test(tc, arm64_rules);
	suite_add_tcase(s, tc);
	return s;
}
