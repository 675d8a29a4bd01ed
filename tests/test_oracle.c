/* The oracle on synthetic samples: a hand-built jitdump whose .eh_frame is
 * CPython's FDE, laid out as perf lays it, and hand-built stack snapshots. */
#include <check.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include "unwinders/view.h"

#define CODE 0x10000ull
#define SP0  0x7ffe0000ull

static void p32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void p64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* CIE zR: code 1, data -8, RA 16, pcrel|sdata4; def_cfa r7+8; offset r16 at cfa-8 */
static const uint8_t cie[] = { 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
			       0x0c, 7, 8, 0x90, 1, 0, 0 };
/* FDE body after length and CIE pointer: pc_begin, pc_range, aug len 0, CPython's program */
static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08 };

static uint8_t dump[1024];
static size_t dump_len;

/* corrupt: 1 = CIE pointer out of range; mapped: mapped_size field */
static void build(int corrupt, uint64_t mapped)
{
	uint8_t eh[128] = { 0 };
	size_t n = 0;
	memcpy(eh, cie, sizeof(cie));
	n = sizeof(cie);
	size_t fde = n;
	uint32_t flen = 4 + 4 + 4 + 1 + sizeof(prog);
	flen = (flen + 3) & ~3u;
	p32(eh + n, flen);
	p32(eh + n + 4, corrupt == 1 ? 0x400 : (uint32_t)(n + 4));
	/* pc_begin is pcrel from the field, .eh_frame at CODE + ALIGN_8(8) */
	uint64_t field = CODE + 8 + n + 8;
	p32(eh + n + 8, (uint32_t)(int32_t)(CODE - field));
	p32(eh + n + 12, 8);
	eh[n + 16] = 0;
	memcpy(eh + n + 17, prog, sizeof(prog));
	n += 4 + flen;
	(void)fde;
	memset(dump, 0, sizeof(dump));
	p32(dump, 0x4A695444); p32(dump + 4, 1); p32(dump + 8, 40); p32(dump + 12, EM_X86_64);
	size_t o = 40;
	uint32_t ul = (uint32_t)((40 + n + 7) & ~7ul);
	p32(dump + o, 4); p32(dump + o + 4, ul);
	p64(dump + o + 16, n); p64(dump + o + 24, 0); p64(dump + o + 32, mapped);
	memcpy(dump + o + 40, eh, n);
	o += ul;
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
	p32(dump + o, 0); p32(dump + o + 4, 56 + 8 + 8);
	p64(dump + o + 24, CODE); p64(dump + o + 32, CODE); p64(dump + o + 40, 8);
	memcpy(dump + o + 56, "t", 2);
	memcpy(dump + o + 64, code, 8);
	o += 72;
	dump_len = o;
}

static uint8_t stack[64];

static struct uw_result run(uint64_t off, uint64_t sp, uint64_t bp)
{
	struct jd_file f = { 0 };
	struct ju_err e;
	ck_assert_msg(jd_parse_mem(&f, dump, dump_len, &e) == 0, "%s", e.msg);
	struct uw_view v;
	struct ju_err err;
	const struct uw_arch *a = uw_arch_by_mach(EM_X86_64);
	ck_assert_int_eq(uw_view_init(&v, a, NULL, 0, &f, &err), 0);
	struct uw_sample s = { .arch = a, .mask = a->facts->perf_mask, .stack_addr = sp,
			       .stack = stack + (sp - SP0), .stack_size = sizeof(stack) - (sp - SP0) };
	s.regs[8] = CODE + off;
	s.regs[7] = sp;
	s.regs[6] = bp;
	struct uw_result r;
	uw_oracle.unwind(NULL, &v, &s, &r);
	uw_view_fini(&v);
	jd_close(&f);
	return r;
}

START_TEST(cpython_rows)
{
	build(0, 48);
	/* stack: [SP0+8] saved rbp, [SP0+16] return address 0x5000 */
	memset(stack, 0, sizeof(stack));
	p64(stack + 8, 0xbbbb);
	p64(stack + 16, 0x5000);
	struct uw_result r;
	r = run(0, SP0 + 16, 0xbbbb);           /* entry: RA at [sp] */
	ck_assert_int_ge(r.n, 2);
	ck_assert_uint_eq(r.addr[1], 0x5000);
	ck_assert_int_eq(r.stop, UW_STOP_NO_INFO);   /* 0x5000 is not mapped */
	r = run(1, SP0 + 8, 0xbbbb);            /* after push */
	ck_assert_uint_eq(r.addr[1], 0x5000);
	r = run(4, SP0 + 8, SP0 + 8);           /* rbp-based */
	ck_assert_uint_eq(r.addr[1], 0x5000);
	r = run(4, SP0 + 8, SP0);               /* a wrong rbp gives a wrong chain: the oracle uses it */
	ck_assert_uint_ne(r.addr[1], 0x5000);
}
END_TEST

/* mapped_size 0 changes how perf maps the data, not what it says: the
 * oracle still reads the emitted CFI (libunwind, which reaches it through
 * the mapping, is then unfaithful; libdw reads the ELF and is not) */
START_TEST(mapped_zero_still_read)
{
	build(0, 0);
	memset(stack, 0, sizeof(stack));
	p64(stack + 16, 0x5000);
	struct uw_result r = run(0, SP0 + 16, 0);
	ck_assert_int_eq(r.n, 2);
	ck_assert_uint_eq(r.addr[1], 0x5000);
}
END_TEST

START_TEST(bad_cie_pointer)
{
	build(1, 48);
	struct uw_result r = run(0, SP0 + 16, 0);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.stop, UW_STOP_BAD_INFO);
	ck_assert_msg(strstr(r.why, "jitdump+0x28"), "why: %s", r.why);
}
END_TEST

START_TEST(ra_outside_snapshot)
{
	build(0, 48);
	/* the snapshot ends before the return address slot */
	struct jd_file f = { 0 };
	struct ju_err e;
	ck_assert_int_eq(jd_parse_mem(&f, dump, dump_len, &e), 0);
	struct uw_view v;
	struct ju_err err;
	const struct uw_arch *a = uw_arch_by_mach(EM_X86_64);
	uw_view_init(&v, a, NULL, 0, &f, &err);
	struct uw_sample s = { .arch = a, .mask = a->facts->perf_mask, .stack_addr = SP0, .stack = stack, .stack_size = 8 };
	s.regs[8] = CODE + 1;
	s.regs[7] = SP0;
	struct uw_result r;
	uw_oracle.unwind(NULL, &v, &s, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.stop, UW_STOP_MEM);
	uw_view_fini(&v);
	jd_close(&f);
}
END_TEST

Suite *suite_oracle(void);
Suite *suite_oracle(void)
{
	Suite *s = suite_create("oracle");
	TCase *tc = tcase_create("oracle");
	tcase_add_test(tc, cpython_rows);
	tcase_add_test(tc, mapped_zero_still_read);
	tcase_add_test(tc, bad_cie_pointer);
	tcase_add_test(tc, ra_outside_snapshot);
	suite_add_tcase(s, tc);
	return s;
}
