/* Samples file reader: every malformed file is rejected with the file name
 * and a byte offset, never a read outside the buffer (also run under ASan). */
#include <check.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include "harness/capture/samples.h"

static size_t put_rec(uint8_t *b, size_t o, uint32_t type, const void *p, uint64_t len)
{
	uint32_t z = 0;
	memcpy(b + o, &type, 4);
	memcpy(b + o + 4, &z, 4);
	memcpy(b + o + 8, &len, 8);
	if (p && len)
		memcpy(b + o + 16, p, len);
	return o + 16 + ((len + 7) & ~7ull);
}

static size_t good(uint8_t *b)
{
	memset(b, 0, 1024);
	memcpy(b, HX_SAMPLES_MAGIC, 8);
	uint32_t v = HX_SAMPLES_VERSION, m = 62;
	memcpy(b + 8, &v, 4);
	memcpy(b + 12, &m, 4);
	size_t o = 16;
	o = put_rec(b, o, HX_REC_CASE, "p.case\0[case]", 13);
	/* SAMPLE: mask with 2 registers, 1 truth frame, 8 bytes of stack */
	uint8_t s[48 + 16 + 8 + 8 + 8] = { 0 };
	uint64_t mask = 3, ssz = 8;
	uint32_t nregs = 2, nt = 1;
	memcpy(s + 16, &mask, 8);
	memcpy(s + 24, &nregs, 4);
	memcpy(s + 28, &nt, 4);
	memcpy(s + 40, &ssz, 8);
	o = put_rec(b, o, HX_REC_SAMPLE, s, sizeof(s));
	o = put_rec(b, o, HX_REC_END, NULL, 0);
	return o;
}

static int parse(uint8_t *b, size_t n, char *err, size_t errlen)
{
	uint8_t *h = malloc(n ? n : 1);
	memcpy(h, b, n);
	struct hx_samples s;
	int rc = hx_samples_parse(&s, h, n, "x.samples", err, errlen);
	hx_samples_free(&s);     /* frees h */
	return rc;
}

START_TEST(good_file)
{
	uint8_t b[1024];
	char err[256];
	size_t n = good(b);
	ck_assert_msg(parse(b, n, err, sizeof(err)) == 0, "%s", err);
}
END_TEST

static const struct { const char *what; size_t off; uint64_t val; int width; size_t cut; const char *msg; } bad[] = {
	{ "magic", 0, 0x41, 1, 0, "JUSAMPLE" },
	{ "version", 8, 9, 4, 0, "version 9" },
	{ "record length past the end", 24, 1 << 20, 8, 0, "runs past the end" },
	{ "unknown type", 16, 99, 4, 0, "record type 99" },
	{ "registers do not match the mask", 64 + 24, 5, 4, 0, "registers for mask" },
	{ "too many truth frames", 64 + 28, 1000, 4, 0, "truth frames" },
	{ "stack larger than the record", 64 + 40, 4096, 8, 0, "do not fit" },
	{ "FP flag out of range", 64 + 48 + 16 + 8, 3, 1, 0, "FP flag 3 of truth frame 0" },
	{ "truncated header", 0, 0, 0, 24, "truncated record header" },
	{ "short file", 0, 0, 0, 10, "JUSAMPLE" },
};

START_TEST(malformed)
{
	uint8_t b[1024];
	char err[256];
	size_t n = good(b);
	if (bad[_i].cut)
		n = bad[_i].cut;
	else
		memcpy(b + bad[_i].off, &bad[_i].val, (size_t)bad[_i].width);
	ck_assert_msg(parse(b, n, err, sizeof(err)) == -EINVAL, "%s accepted", bad[_i].what);
	ck_assert_msg(strstr(err, "x.samples: offset 0x"), "%s: '%s'", bad[_i].what, err);
	ck_assert_msg(strstr(err, bad[_i].msg), "%s: '%s'", bad[_i].what, err);
}
END_TEST

START_TEST(record_before_case)
{
	uint8_t b[256] = { 0 };
	char err[256];
	memcpy(b, HX_SAMPLES_MAGIC, 8);
	uint32_t v = HX_SAMPLES_VERSION;
	memcpy(b + 8, &v, 4);
	size_t n = put_rec(b, 16, HX_REC_END, NULL, 0);
	ck_assert_int_eq(parse(b, n, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "before the first CASE"));
}
END_TEST

Suite *suite_samples(void);
Suite *suite_samples(void)
{
	Suite *s = suite_create("samples");
	TCase *tc = tcase_create("reader");
	tcase_add_test(tc, good_file);
	tcase_add_loop_test(tc, malformed, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, record_before_case);
	suite_add_tcase(s, tc);
	return s;
}
