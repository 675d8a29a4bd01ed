/* Suite ehframe: DWARF expressions and pointer encodings (tests/ehframe.h). */
#include "tests/ehframe.h"

/* ---- expressions ---- */

static const struct expr_case {
	const char *name;
	uint8_t code[24];
	size_t len;
	bool push_cfa;
	uint64_t want;            /* when msg is NULL */
	const char *msg;          /* expected error substring */
	uint64_t off;
} expr_cases[] = {
	{ "lit", { 0x35 }, 1, false, 5, NULL, 0 },
	{ "push_cfa plus_uconst", { 0x23, 0x08 }, 2, true, 0x2008, NULL, 0 },
	{ "breg7 -8 deref", { 0x77, 0x78, 0x06 }, 3, false, (REGVAL(7) - 8) ^ 0x5555, NULL, 0 },
	{ "bregx 16 +4", { 0x92, 0x10, 0x04 }, 3, false, REGVAL(16) + 4, NULL, 0 },
	{ "deref_size 1", { 0x0a, 0x34, 0x12, 0x94, 0x01 }, 5, false, (0x1234 ^ 0x5555) & 0xff,
	  NULL, 0 },
	{ "const1s", { 0x09, 0xff }, 2, false, UINT64_MAX, NULL, 0 },
	{ "const2s", { 0x0b, 0x00, 0x80 }, 3, false, (uint64_t)-32768, NULL, 0 },
	{ "const4u", { 0x0c, 0xff, 0xff, 0xff, 0xff }, 5, false, 0xffffffffu, NULL, 0 },
	{ "const8s", { 0x0f, 1, 0, 0, 0, 0, 0, 0, 0x80 }, 9, false, 0x8000000000000001u, NULL, 0 },
	{ "consts", { 0x11, 0x7f }, 2, false, UINT64_MAX, NULL, 0 },
	{ "addr", { 0x03, 0x88, 0x77, 0, 0, 0, 0, 0, 0 }, 9, false, 0x7788, NULL, 0 },
	{ "minus", { 0x3a, 0x33, 0x1c }, 3, false, 7, NULL, 0 },
	{ "dup mul", { 0x37, 0x12, 0x1e }, 3, false, 49, NULL, 0 },
	{ "over", { 0x31, 0x32, 0x14 }, 3, false, 1, NULL, 0 },
	{ "pick 2", { 0x31, 0x32, 0x33, 0x15, 0x02 }, 5, false, 1, NULL, 0 },
	{ "swap minus", { 0x33, 0x3a, 0x16, 0x1c }, 4, false, 7, NULL, 0 },
	{ "rot", { 0x31, 0x32, 0x33, 0x17 }, 4, false, 2, NULL, 0 },
	{ "rot third", { 0x31, 0x32, 0x33, 0x17, 0x13, 0x13 }, 6, false, 3, NULL, 0 },
	{ "drop", { 0x31, 0x32, 0x13 }, 3, false, 1, NULL, 0 },
	{ "abs", { 0x11, 0x7b, 0x19 }, 3, false, 5, NULL, 0 },
	{ "neg", { 0x35, 0x1f }, 2, false, (uint64_t)-5, NULL, 0 },
	{ "not", { 0x30, 0x20 }, 2, false, UINT64_MAX, NULL, 0 },
	{ "and or xor", { 0x3c, 0x3a, 0x1a, 0x31, 0x21, 0x3f, 0x27 }, 7, false, 6, NULL, 0 },
	{ "div signed", { 0x11, 0x79, 0x32, 0x1b }, 4, false, (uint64_t)-3, NULL, 0 },
	{ "mod", { 0x37, 0x33, 0x1d }, 3, false, 1, NULL, 0 },
	{ "shl shr", { 0x31, 0x34, 0x24, 0x32, 0x25 }, 5, false, 4, NULL, 0 },
	{ "shra", { 0x11, 0x70, 0x32, 0x26 }, 4, false, (uint64_t)-4, NULL, 0 },
	{ "lt signed", { 0x11, 0x7f, 0x30, 0x2d }, 4, false, 1, NULL, 0 },
	/* 2 2 eq -> 1; 1 ne -> 0; 0 ge -> 1; 0 gt -> 1; 1 le -> 1; 2 lt -> 1 */
	{ "eq ne ge gt le lt", { 0x32, 0x32, 0x29, 0x31, 0x2e, 0x30, 0x2a, 0x30, 0x2b, 0x31,
				 0x2c, 0x32, 0x2d }, 13, false, 1, NULL, 0 },
	/* 1 2 gt -> 0; 0 eq -> 1; -1 le -> 0 (signed) */
	{ "gt eq le signed", { 0x31, 0x32, 0x2b, 0x30, 0x29, 0x11, 0x7f, 0x2c }, 8, false, 0,
	  NULL, 0 },
	{ "bra taken", { 0x31, 0x28, 0x01, 0x00, 0x3f, 0x35 }, 6, false, 5, NULL, 0 },
	{ "bra not taken", { 0x30, 0x28, 0x01, 0x00, 0x3f }, 5, false, 0x0f, NULL, 0 },
	{ "skip", { 0x2f, 0x01, 0x00, 0x3f, 0x36 }, 5, false, 6, NULL, 0 },
	{ "nop", { 0x96, 0x37 }, 2, false, 7, NULL, 0 },
	{ "skip loop", { 0x2f, 0xfd, 0xff }, 3, false, 0, "steps", 0 },
	{ "reg5", { 0x55 }, 1, false, 0, "register location", 0 },
	{ "regx", { 0x31, 0x90, 0x05 }, 3, false, 0, "register location", 1 },
	{ "div by zero", { 0x31, 0x30, 0x1b }, 3, false, 0, "division by zero", 2 },
	{ "underflow", { 0x31, 0x22 }, 2, false, 0, "needs 2 stack entries", 1 },
	{ "empty", { 0x96 }, 1, false, 0, "empty stack", 1 },
	{ "deref fault", { 0x30, 0x06 }, 2, false, 0, "cannot read memory", 1 },
	{ "bra out", { 0x31, 0x28, 0x10, 0x00 }, 4, false, 0, "outside the expression", 1 },
	{ "truncated const4u", { 0x0c, 0x01 }, 2, false, 0, "truncated", 1 },
	{ "deref_size 9", { 0x30, 0x94, 0x09 }, 3, false, 0, "size 9", 1 },
	{ "call_frame_cfa", { 0x9c }, 1, false, 0, "unsupported DWARF op 0x9c", 0 },
	{ "pick too deep", { 0x31, 0x15, 0x01 }, 3, false, 0, "needs 2", 1 },
};

START_TEST(test_expr)
{
	const struct expr_case *x = &expr_cases[_i];
	struct ju_err err = { 0 };
	uint64_t v = 0;
	int rc = ehf_eval_expr(x->code, x->len, &fake_ctx, x->push_cfa, 0x2000, &v, &err);
	if (!x->msg) {
		ck_assert_msg(rc == 0, "%s: %s", x->name, err.msg);
		ck_assert_msg(v == x->want, "%s: 0x%" PRIx64 ", want 0x%" PRIx64, x->name, v, x->want);
	} else {
		/* malformed is -EINVAL; memory the view cannot read is -EFAULT */
		int want = strstr(x->msg, "cannot read memory") ? -EFAULT : -EINVAL;
		ck_assert_msg(rc == want, "%s: %d, want %d", x->name, rc, want);
		ck_assert_msg(strstr(err.msg, x->msg), "%s: \"%s\" lacks \"%s\"", x->name, err.msg,
			      x->msg);
		ck_assert_msg(err.offset == x->off, "%s: offset %" PRIu64 ", want %" PRIu64, x->name,
			      err.offset, x->off);
	}
}
END_TEST

START_TEST(test_expr_stack_overflow)
{
	uint8_t code[70];
	struct ju_err err = { 0 };
	uint64_t v;
	memset(code, 0x30, sizeof(code));  /* 70 x DW_OP_lit0 */
	ck_assert_int_eq(ehf_eval_expr(code, 64, &fake_ctx, false, 0, &v, &err), 0);
	ck_assert_int_eq(ehf_eval_expr(code, 65, &fake_ctx, false, 0, &v, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "stack overflow"));
	ck_assert_int_eq(ehf_eval_expr(code, 64, &fake_ctx, true, 0, &v, &err), -EINVAL);
	ck_assert_uint_eq(err.offset, 63);
	/* no callbacks: breg and deref fail cleanly */
	static const uint8_t breg[] = { 0x77, 0x00 };
	ck_assert_int_eq(ehf_eval_expr(breg, 2, NULL, false, 0, &v, &err), -EINVAL);
}
END_TEST

/* ---- encoded pointers ---- */

static const struct enc_case {
	uint8_t enc;
	uint8_t bytes[10];
	size_t len;
	uint64_t want;
	const char *msg;
} enc_cases[] = {
	{ DW_EH_PE_absptr, { 1, 2, 3, 4, 5, 6, 7, 8 }, 8, 0x0807060504030201u, NULL },
	{ DW_EH_PE_udata2, { 0xfe, 0xff }, 2, 0xfffe, NULL },
	{ DW_EH_PE_sdata2, { 0xfe, 0xff }, 2, (uint64_t)-2, NULL },
	{ DW_EH_PE_udata4, { 0xfc, 0xff, 0xff, 0xff }, 4, 0xfffffffcu, NULL },
	{ DW_EH_PE_sdata4, { 0xfc, 0xff, 0xff, 0xff }, 4, (uint64_t)-4, NULL },
	{ DW_EH_PE_udata8, { 8, 0, 0, 0, 0, 0, 0, 0x80 }, 8, 0x8000000000000008u, NULL },
	{ DW_EH_PE_sdata8, { 8, 0, 0, 0, 0, 0, 0, 0x80 }, 8, 0x8000000000000008u, NULL },
	{ DW_EH_PE_uleb128, { 0xe5, 0x8e, 0x26 }, 3, 624485, NULL },
	{ DW_EH_PE_sleb128, { 0xc0, 0xbb, 0x78 }, 3, (uint64_t)-123456, NULL },
	/* at position 2 of a section at 0x1000: pcrel base 0x1002 */
	{ DW_EH_PE_pcrel | DW_EH_PE_sdata4, { 0xfe, 0xff, 0xff, 0xff }, 4, 0x1000, NULL },
	{ DW_EH_PE_textrel | DW_EH_PE_udata2, { 0x10, 0x00 }, 2, 0x4010, NULL },
	{ DW_EH_PE_datarel | DW_EH_PE_sdata2, { 0xf0, 0xff }, 2, 0x7ff0, NULL },
	{ DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4, { 0x0e, 0, 0, 0 }, 4, 0x1010,
	  NULL },
	{ DW_EH_PE_omit, { 0 }, 0, 0, NULL },
	{ DW_EH_PE_funcrel | DW_EH_PE_sdata4, { 0, 0, 0, 0 }, 4, 0, "funcrel" },
	{ DW_EH_PE_aligned, { 0 }, 8, 0, "aligned" },
	{ 0x07, { 0 }, 8, 0, "unknown value format" },
	{ DW_EH_PE_udata8, { 1, 2, 3 }, 3, 0, "truncated" },
	{ DW_EH_PE_uleb128, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80 }, 10, 0,
	  "longer than 10 bytes" },
	{ DW_EH_PE_uleb128, { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02 }, 10, 0,
	  "overflows" },
	{ DW_EH_PE_uleb128, { 0x80, 0x80 }, 2, 0, "runs past" },
};

START_TEST(test_encoded)
{
	const struct enc_case *x = &enc_cases[_i];
	struct ehf_bases b = { 0x1000, 0x4000, 0x8000, 8 };
	uint8_t buf[12] = { 0xaa, 0xbb };
	struct ju_err err = { 0 };
	memcpy(buf + 2, x->bytes, x->len);
	size_t pos = 2;
	uint64_t v = 0;
	int rc = ehf_read_encoded(buf, 2 + x->len, &pos, x->enc, &b, &v, &err);
	if (!x->msg) {
		ck_assert_msg(rc == 0, "enc 0x%02x: %s", x->enc, err.msg);
		ck_assert_msg(v == x->want, "enc 0x%02x: 0x%" PRIx64 ", want 0x%" PRIx64, x->enc, v,
			      x->want);
		ck_assert_uint_eq(pos, 2 + x->len);
	} else {
		ck_assert_msg(rc == -EINVAL, "enc 0x%02x accepted", x->enc);
		ck_assert_msg(strstr(err.msg, x->msg), "\"%s\" lacks \"%s\"", err.msg, x->msg);
		ck_assert_uint_eq(err.offset, 2);
		ck_assert_uint_eq(pos, 2);
	}
}
END_TEST

START_TEST(test_encoded_ptr4)
{
	/* a 4-byte absptr, and pcrel arithmetic that wraps at 32 bits */
	static const uint8_t d[] = { 0x78, 0x56, 0x34, 0x12, 0xff, 0xff, 0xff, 0xff };
	struct ehf_bases b = { 0x10, 0, 0, 4 };
	size_t pos = 0;
	uint64_t v;
	struct ju_err err;
	ck_assert_int_eq(ehf_read_encoded(d, sizeof(d), &pos, DW_EH_PE_absptr, &b, &v, &err), 0);
	ck_assert_uint_eq(v, 0x12345678);
	ck_assert_int_eq(ehf_read_encoded(d, sizeof(d), &pos, DW_EH_PE_pcrel | DW_EH_PE_udata4, &b,
					  &v, &err), 0);
	ck_assert_uint_eq(v, 0x13);  /* 0x10 + 4 + 0xffffffff, mod 2^32 */
	pos = 9;
	ck_assert_int_eq(ehf_read_encoded(d, sizeof(d), &pos, DW_EH_PE_udata2, &b, &v, &err), -EINVAL);
}
END_TEST

void ehframe_add_expr(TCase *tc)
{
	tcase_add_loop_test(tc, test_expr, 0, sizeof(expr_cases) / sizeof(expr_cases[0]));
	tcase_add_test(tc, test_expr_stack_overflow);
	tcase_add_loop_test(tc, test_encoded, 0, sizeof(enc_cases) / sizeof(enc_cases[0]));
	tcase_add_test(tc, test_encoded_ptr4);
}
