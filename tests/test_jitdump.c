/* jitdump reader: round trip with the writer, perf's attach rules, and
 * malformed files rejected with an offset (never a read outside the buffer:
 * this suite also runs under ASan). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elf.h>
#include "trampolines/tramp.h"
#include "unwinders/model/jitdump.h"

static void p32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void p64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Where the JIT-side writer (trampolines/jitdump.c) meets the profiler-side
 * reader (unwinders/model/jdwalk.c + jitdump.c): the two share no code and no
 * constants on purpose, each written from the spec, so a field the writer puts
 * at the wrong offset is caught here instead of being read back the same
 * wrong way. */
START_TEST(roundtrip)
{
	char dir[] = "/tmp/jujd-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct jdw w;
	ck_assert_int_eq(jdw_open(&w, dir, EM_X86_64), 0);
	static const uint8_t code1[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
	static const uint8_t code2[] = { 0x90, 0xc3, 0xcc };
	uint8_t unw[40];
	for (int i = 0; i < 40; i++)
		unw[i] = (uint8_t)i;
	ck_assert_int_eq(jdw_unwinding_info(&w, unw, 40, 20, 48), 0);
	uint64_t idx;
	ck_assert_int_eq(jdw_code_load(&w, "tramp", 0x7f0000001000, code1, sizeof(code1), &idx), 0);
	ck_assert_int_eq(jdw_code_load(&w, "second", 0x7f0000002000, code2, sizeof(code2), &idx), 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s", w.path);
	ck_assert_int_eq(jdw_close(&w), 0);

	struct jd_file f;
	struct ju_err e;
	ck_assert_msg(jd_open(&f, path, &e) == 0, "0x%llx: %s", (unsigned long long)e.offset, e.msg);
	ck_assert_uint_eq(f.elf_mach, EM_X86_64);
	ck_assert_uint_eq(f.pid, (uint32_t)getpid());
	ck_assert_uint_eq(f.nloads, 2);
	ck_assert_uint_eq(f.nrecs, 4);                   /* unwind, load, load, close */
	ck_assert_uint_eq(f.recs[3].id, JD_CODE_CLOSE);
	ck_assert_str_eq(f.loads[0].name, "tramp");
	ck_assert_uint_eq(f.loads[0].code_addr, 0x7f0000001000);
	ck_assert_mem_eq(f.loads[0].code, code1, sizeof(code1));
	ck_assert(f.loads[0].has_unwind);
	ck_assert_uint_eq(f.loads[0].unwinding_size, 40);
	ck_assert_uint_eq(f.loads[0].eh_frame_hdr_size, 20);
	ck_assert_uint_eq(f.loads[0].mapped_size, 48);
	ck_assert_mem_eq(f.loads[0].unwind, unw, 40);
	/* cleared after its load because eh_frame_hdr_size != 0 */
	ck_assert(!f.loads[1].has_unwind);
	ck_assert_mem_eq(f.loads[1].code, code2, sizeof(code2));
	for (size_t i = 0; i < f.nrecs; i++)
		ck_assert_uint_eq(f.recs[i].total_size % 8, 0);
	jd_close(&f);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* a hand-built dump: header + UNWIND(hdr 0) + LOAD + LOAD */
static size_t build(uint8_t *b, uint64_t hdrsize)
{
	memset(b, 0, 512);
	p32(b, JD_MAGIC); p32(b + 4, 1); p32(b + 8, 40); p32(b + 12, EM_X86_64);
	size_t o = 40;
	p32(b + o, JD_CODE_UNWINDING_INFO); p32(b + o + 4, 56);
	p64(b + o + 16, 16); p64(b + o + 24, hdrsize); p64(b + o + 32, 16);
	o += 56;
	for (int k = 0; k < 2; k++) {
		p32(b + o, JD_CODE_LOAD); p32(b + o + 4, 64);
		p64(b + o + 32, 0x1000 * (k + 1)); p64(b + o + 40, 4); p64(b + o + 48, (uint64_t)k);
		memcpy(b + o + 56, "f", 2);
		o += 64;
	}
	return o;
}

START_TEST(unwind_kept_when_hdr_zero)
{
	uint8_t b[512];
	size_t n = build(b, 0);
	struct jd_file f = { 0 };
	struct ju_err e;
	ck_assert_int_eq(jd_parse_mem(&f, b, n, &e), 0);
	ck_assert(f.loads[0].has_unwind && f.loads[1].has_unwind);   /* perf keeps it */
	/* code is the LAST code_size bytes of the record, not right after the name */
	ck_assert_ptr_eq(f.loads[0].code, b + 96 + 64 - 4);
	jd_close(&f);
}
END_TEST

static const struct { const char *what; size_t off; uint32_t val; size_t trunc; const char *msg; } bad[] = {
	{ "bad magic", 0, 0x12345678, 0, "bad magic" },
	{ "version 2", 4, 2, 0, "version 2" },
	{ "header total_size beyond file", 8, 100000, 0, "total_size" },
	{ "record total_size past the end", 44, 0x7fffffff, 0, "runs past the end" },
	{ "record total_size below prefix", 44, 8, 0, "smaller than the 16-byte prefix" },
	{ "unwinding_size past record", 56, 1000, 0, "unwinding_size" },
	{ "hdr larger than unwind", 64, 17, 0, "eh_frame_hdr_size" },
	{ "load code_size too big", 96 + 40, 1000, 0, "code_size" },
	{ "truncated prefix", 0, 0, 96 + 8, "truncated record prefix" },
	{ "truncated inside a record", 0, 0, 96 + 30, "runs past the end" },
	{ "short header", 0, 0, 20, "shorter than the 40-byte" },
};

START_TEST(malformed)
{
	uint8_t b[512];
	size_t n = build(b, 8);
	if (bad[_i].trunc)
		n = bad[_i].trunc;
	else
		p32(b + bad[_i].off, bad[_i].val);
	/* copy into an exact-size heap buffer so ASan catches any overread */
	uint8_t *h = malloc(n);
	memcpy(h, b, n);
	struct jd_file f = { 0 };
	struct ju_err e = { 0 };
	ck_assert_msg(jd_parse_mem(&f, h, n, &e) == -EINVAL, "%s: accepted", bad[_i].what);
	ck_assert_msg(strstr(e.msg, bad[_i].msg), "%s: message '%s'", bad[_i].what, e.msg);
	ck_assert_uint_le(e.offset, n);
	jd_close(&f);
	free(h);
}
END_TEST

/* A dump whose last record (a re-load of the first load's address) is cut
 * short: jd_open refuses it, jd_open_whole_records keeps the whole records
 * before it, as perf inject's reader does, and names the rest; a dump that
 * ends on a record boundary has no tail, and a bad one is still refused. */
START_TEST(whole_records)
{
	char dir[] = "/tmp/jujd-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct jdw w;
	ck_assert_int_eq(jdw_open(&w, dir, EM_X86_64), 0);
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
	uint64_t idx;
	ck_assert_int_eq(jdw_code_load(&w, "A", 0x7f0000001000, code, sizeof(code), &idx), 0);
	ck_assert_int_eq(jdw_code_load(&w, "B", 0x7f0000001000, code, sizeof(code), &idx), 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s", w.path);
	ck_assert_int_eq(jdw_close(&w), 0);
	struct jd_file f;
	struct ju_err e, tail;
	ck_assert_int_eq(jd_open_whole_records(&f, path, &e, &tail), 0);
	ck_assert_str_eq(tail.msg, "");
	ck_assert_uint_eq(f.nloads, 2);
	uint64_t second = f.recs[1].file_off;
	jd_close(&f);
	ck_assert_int_eq(truncate(path, (off_t)second + 30), 0);
	ck_assert_int_eq(jd_open(&f, path, &e), -EINVAL);
	ck_assert_msg(strstr(e.msg, "runs past the end"), "%s", e.msg);
	ck_assert_int_eq(jd_open_whole_records(&f, path, &e, &tail), 0);
	ck_assert_uint_eq(f.nloads, 1);
	ck_assert_str_eq(f.loads[0].name, "A");
	ck_assert_msg(strstr(tail.msg, "runs past the end of the file (30 bytes left)"), "%s", tail.msg);
	ck_assert_uint_ge(tail.offset, second);
	ck_assert_uint_lt(tail.offset, second + 30);
	jd_close(&f);
	/* a broken header is no tail */
	FILE *fp = fopen(path, "r+b");
	ck_assert_ptr_nonnull(fp);
	ck_assert_int_eq(fwrite("XXXX", 1, 4, fp), 4);
	fclose(fp);
	ck_assert_int_eq(jd_open_whole_records(&f, path, &e, &tail), -EINVAL);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);   /* the dump and the writer's perf map */
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(name_not_terminated)
{
	uint8_t b[512];
	size_t n = build(b, 8);
	memset(b + 96 + 56, 'x', 8);
	uint8_t *h = malloc(n);
	memcpy(h, b, n);
	struct jd_file f = { 0 };
	struct ju_err e;
	ck_assert_int_eq(jd_parse_mem(&f, h, n, &e), -EINVAL);
	ck_assert_ptr_nonnull(strstr(e.msg, "NUL"));
	jd_close(&f);
	free(h);
}
END_TEST

Suite *suite_jitdump(void);
Suite *suite_jitdump(void)
{
	Suite *s = suite_create("jitdump");
	TCase *tc = tcase_create("reader");
	tcase_add_test(tc, roundtrip);
	tcase_add_test(tc, unwind_kept_when_hdr_zero);
	tcase_add_loop_test(tc, malformed, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, name_not_terminated);
	tcase_add_test(tc, whole_records);
	suite_add_tcase(s, tc);
	return s;
}
