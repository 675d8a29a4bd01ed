/* Check suite for unwinders/model/ehframe.c.  Sections are built by hand (CPython's
 * trampoline FDE byte for byte) and every row is checked twice: against the
 * expectations written here, and against an independent decoder, libdw's CFI
 * reader, on an ELF written with libelf holding the same bytes. */
#include "tests/ehframe.h"

static const struct {
	uint16_t cfa_reg;
	int64_t cfa_off;
	uint8_t rbp_kind;
	int64_t rbp_off;
	uint64_t loc, end;
} cpy_rows[8] = {
	{ 7, 8, EHF_INITIAL, 0, 0, 1 },      /* push %rbp */
	{ 7, 16, EHF_OFFSET, -16, 1, 4 },    /* mov %rsp,%rbp */
	{ 7, 16, EHF_OFFSET, -16, 1, 4 },
	{ 7, 16, EHF_OFFSET, -16, 1, 4 },
	{ 6, 16, EHF_OFFSET, -16, 4, 7 },    /* call *%rcx */
	{ 6, 16, EHF_OFFSET, -16, 4, 7 },
	{ 6, 16, EHF_OFFSET, -16, 4, 7 },    /* pop %rbp */
	{ 7, 8, EHF_OFFSET, -16, 7, 8 },     /* ret */
};

void parse_ok(struct ehf_table *t, const uint8_t *data, size_t size,
		     const struct ehf_bases *b)
{
	struct ju_err err = { 0 };
	int rc = ehf_parse(t, data, size, b, &err);
	ck_assert_msg(rc == 0, "parse failed at 0x%" PRIx64 ": %s", err.offset, err.msg);
}

START_TEST(test_cpython_parse)
{
	struct ehf_table t;
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	ck_assert(t.terminated);
	ck_assert_uint_eq(t.ncies, 1);
	ck_assert_uint_eq(t.nfdes, 1);
	const struct ehf_cie *cie = &t.cies[0];
	ck_assert_uint_eq(cie->version, 1);
	ck_assert_str_eq(cie->aug, "zR");
	ck_assert_uint_eq(cie->code_align, 1);
	ck_assert_int_eq(cie->data_align, -8);
	ck_assert_uint_eq(cie->ra_reg, 16);
	ck_assert_uint_eq(cie->fde_enc, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	ck_assert_uint_eq(cie->lsda_enc, DW_EH_PE_omit);
	ck_assert(cie->has_aug_data);
	ck_assert_uint_eq(cie->insns_off, 0x11);
	ck_assert_uint_eq(cie->insns_len, 7);
	const struct ehf_fde *f = &t.fdes[0];
	ck_assert_uint_eq(f->offset, 0x18);
	ck_assert_ptr_eq(f->cie, cie);
	ck_assert_uint_eq(f->pc_begin, CPY_TEXT);
	ck_assert_uint_eq(f->pc_end, CPY_TEXT + sizeof(cpy_code));
	ck_assert_uint_eq(f->insns_off, 0x29);
	ck_assert_uint_eq(f->insns_len, 15);
	ck_assert_ptr_eq(ehf_find_fde(&t, CPY_TEXT), f);
	ck_assert_ptr_eq(ehf_find_fde(&t, CPY_TEXT + 7), f);
	ck_assert_ptr_null(ehf_find_fde(&t, CPY_TEXT - 1));
	ck_assert_ptr_null(ehf_find_fde(&t, CPY_TEXT + 8));
	ehf_table_free(&t);
}
END_TEST

/* The row at every instruction offset of the trampoline. */
START_TEST(test_cpython_rows)
{
	struct ehf_table t;
	struct ehf_row row;
	struct ju_err err = { 0 };
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	int off = _i;
	ck_assert_msg(ehf_row_at(&t.fdes[0], CPY_TEXT + off, &row, &err) == 0, "%s", err.msg);
	ck_assert(row.cfa_defined);
	ck_assert_uint_eq(row.cfa_kind, EHF_CFA_REG_OFF);
	ck_assert_uint_eq(row.cfa_reg, cpy_rows[off].cfa_reg);
	ck_assert_int_eq(row.cfa_off, cpy_rows[off].cfa_off);
	ck_assert_uint_eq(row.reg[6].kind, cpy_rows[off].rbp_kind);
	if (cpy_rows[off].rbp_kind == EHF_OFFSET)
		ck_assert_int_eq(row.reg[6].off, cpy_rows[off].rbp_off);
	ck_assert_uint_eq(row.reg[16].kind, EHF_OFFSET);
	ck_assert_int_eq(row.reg[16].off, -8);
	ck_assert_uint_eq(row.loc, CPY_TEXT + cpy_rows[off].loc);
	ck_assert_uint_eq(row.end, CPY_TEXT + cpy_rows[off].end);
	ck_assert(!row.ra_signed);
	for (unsigned r = 0; r < EHF_NREGS; r++)
		if (r != 6 && r != 16)
			ck_assert_uint_eq(row.reg[r].kind, EHF_INITIAL);
	ehf_table_free(&t);
}
END_TEST

int rows_cb(const struct ehf_row *row, void *arg)
{
	struct rows_seen *s = arg;
	if (s->n < 16) {
		s->loc[s->n] = row->loc;
		s->end[s->n] = row->end;
		s->cfa_reg[s->n] = row->cfa_reg;
	}
	s->n++;
	return 0;
}

static int rows_stop_cb(const struct ehf_row *row, void *arg)
{
	(*(int *)arg)++;
	return 42;
}

START_TEST(test_cpython_rows_iter)
{
	struct ehf_table t;
	struct ju_err err = { 0 };
	struct rows_seen s = { .n = 0 };
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	ck_assert_msg(ehf_rows(&t.fdes[0], rows_cb, &s, &err) == 0, "%s", err.msg);
	static const uint64_t loc[] = { 0, 1, 4, 7 }, end[] = { 1, 4, 7, 8 };
	static const uint16_t reg[] = { 7, 7, 6, 7 };
	ck_assert_int_eq(s.n, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(s.loc[i], CPY_TEXT + loc[i]);
		ck_assert_uint_eq(s.end[i], CPY_TEXT + end[i]);
		ck_assert_uint_eq(s.cfa_reg[i], reg[i]);
	}
	int calls = 0;
	ck_assert_int_eq(ehf_rows(&t.fdes[0], rows_stop_cb, &calls, &err), 42);
	ck_assert_int_eq(calls, 1);
	ehf_table_free(&t);
}
END_TEST

/* Golden dump of both programs, compared line by line. */
START_TEST(test_cpython_disasm)
{
	static const char *const want[] = {
		"DW_CFA_def_cfa r7+8", "DW_CFA_offset r16 at cfa-8", "DW_CFA_nop", "DW_CFA_nop",
		"DW_CFA_advance_loc 1", "DW_CFA_def_cfa_offset 16", "DW_CFA_offset r6 at cfa-16",
		"DW_CFA_advance_loc 3", "DW_CFA_def_cfa_register r6", "DW_CFA_advance_loc 3",
		"DW_CFA_def_cfa r7+8", "DW_CFA_nop", "DW_CFA_nop", "DW_CFA_nop",
	};
	struct ehf_table t;
	struct ju_err err = { 0 };
	char line[128];
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	size_t k = 0;
	const struct { const uint8_t *p; size_t n; } prog[2] = {
		{ t.cies[0].insns, t.cies[0].insns_len }, { t.fdes[0].insns, t.fdes[0].insns_len },
	};
	for (int p = 0; p < 2; p++) {
		size_t pos = 0;
		while (pos < prog[p].n) {
			ck_assert_msg(ehf_disasm_insn(prog[p].p, prog[p].n, &pos, &t.cies[0], line,
						      sizeof(line), &err) == 0, "%s", err.msg);
			ck_assert_uint_lt(k, sizeof(want) / sizeof(want[0]));
			ck_assert_str_eq(line, want[k]);
			k++;
		}
	}
	ck_assert_uint_eq(k, sizeof(want) / sizeof(want[0]));
	ehf_table_free(&t);
}
END_TEST

void tb_u8(struct tb *t, uint8_t v)
{
	ck_assert_uint_lt(t->n, sizeof(t->b));
	t->b[t->n++] = v;
}

void tb_le(struct tb *t, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		tb_u8(t, (uint8_t)(v >> (8 * i)));
}

void tb_uleb(struct tb *t, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		tb_u8(t, b | (v ? 0x80 : 0));
	} while (v);
}

void tb_sleb(struct tb *t, int64_t v)
{
	for (;;) {
		uint8_t b = v & 0x7f;
		v >>= 7;
		if ((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40))) {
			tb_u8(t, b);
			return;
		}
		tb_u8(t, b | 0x80);
	}
}

void tb_raw(struct tb *t, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tb_u8(t, p[i]);
}

void tb_patch_len(struct tb *t, size_t len_at)
{
	uint64_t len = t->n - len_at - 4;
	for (int i = 0; i < 4; i++)
		t->b[len_at + i] = (uint8_t)(len >> (8 * i));
}

/* Pad the record with DW_CFA_nop to a multiple of 4, then patch its length. */
void tb_close(struct tb *t, size_t len_at)
{
	while ((t->n - len_at) % 4)
		tb_u8(t, DW_CFA_nop);
	tb_patch_len(t, len_at);
}
size_t tb_cie(struct tb *t, const struct cie_spec *c)
{
	size_t at = t->n;
	tb_le(t, 0, 4);
	tb_le(t, 0, 4);
	tb_u8(t, c->version);
	tb_raw(t, (const uint8_t *)c->aug, strlen(c->aug) + 1);
	if (c->version == 4) {
		tb_u8(t, 8);  /* address_size */
		tb_u8(t, 0);  /* segment_selector_size */
	}
	tb_uleb(t, c->code_align);
	tb_sleb(t, c->data_align);
	if (c->version == 1)
		tb_u8(t, (uint8_t)c->ra);
	else
		tb_uleb(t, c->ra);
	if (strchr(c->aug, 'z')) {
		tb_uleb(t, strchr(c->aug, 'R') ? 1 : 0);
		if (strchr(c->aug, 'R'))
			tb_u8(t, c->fde_enc);
	}
	tb_raw(t, c->insns, c->ninsns);
	tb_close(t, at);
	return at;
}

/* FDE header with pcrel|sdata4 pointers; returns the record's offset (for tb_close). */
size_t tb_fde_open(struct tb *t, size_t cie_at, uint64_t sec, uint64_t pc, uint32_t range,
			  bool z)
{
	size_t at = t->n;
	tb_le(t, 0, 4);
	tb_le(t, t->n - cie_at, 4);
	tb_le(t, pc - (sec + t->n), 4);
	tb_le(t, range, 4);
	if (z)
		tb_uleb(t, 0);
	return at;
}

/* A whole FDE; returns the offset of its program. */
size_t tb_fde(struct tb *t, size_t cie_at, uint64_t sec, uint64_t pc, uint32_t range,
		     bool z, const uint8_t *insns, size_t ninsns, size_t *fde_at)
{
	size_t at = tb_fde_open(t, cie_at, sec, pc, range, z);
	if (fde_at)
		*fde_at = at;
	size_t prog = t->n;
	tb_raw(t, insns, ninsns);
	tb_close(t, at);
	return prog;
}

size_t build_a64(struct tb *t)
{
	t->n = 0;
	size_t cie = tb_cie(t, &a64_cie);
	tb_fde(t, cie, A64_EH, A64_TEXT, A64_SIZE, true, a64_fde_insns, sizeof(a64_fde_insns), NULL);
	tb_le(t, 0, 4);
	return t->n;
}


/* ---- cost: the oracle runs ehf_row_at for every frame of every sample ---- */

START_TEST(test_row_at_speed)
{
	struct ehf_table t;
	struct ehf_row row;
	struct ju_err err;
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	enum { N = 100000 };
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	int bad = 0;  /* one assertion after the loop: each ck_assert writes to a pipe */
	for (int i = 0; i < N; i++)
		bad |= ehf_row_at(&t.fdes[0], CPY_TEXT + (i & 7), &row, &err);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ck_assert_int_eq(bad, 0);
	double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / N;
	printf("ehframe: ehf_row_at %.0f ns per call\n", ns);
	/* ~1 us is the target in an optimized build; sanitizers and Check's
	 * assertions cost a lot more, so only gross regressions fail here */
	ck_assert_msg(ns < 50000, "ehf_row_at takes %.0f ns", ns);
	ehf_table_free(&t);
}
END_TEST

/* The profiler's LEB128 reader against the JIT side's writer and DWARF 4's
 * examples (section 7.6, figures 22 and 23), and its bounds. */
START_TEST(test_leb_reader_writer)
{
	static const struct { bool sign; int64_t v; uint8_t b[3]; size_t n; } ex[] = {
		{ false, 2, { 0x02 }, 1 }, { false, 127, { 0x7f }, 1 }, { false, 128, { 0x80, 0x01 }, 2 },
		{ false, 129, { 0x81, 0x01 }, 2 }, { false, 130, { 0x82, 0x01 }, 2 },
		{ false, 12857, { 0xb9, 0x64 }, 2 },
		{ true, 2, { 0x02 }, 1 }, { true, -2, { 0x7e }, 1 }, { true, 127, { 0xff, 0x00 }, 2 },
		{ true, -127, { 0x81, 0x7f }, 2 }, { true, 128, { 0x80, 0x01 }, 2 },
		{ true, -128, { 0x80, 0x7f }, 2 }, { true, 129, { 0x81, 0x01 }, 2 },
		{ true, -129, { 0xff, 0x7e }, 2 },
	};
	for (size_t i = 0; i < sizeof(ex) / sizeof(ex[0]); i++) {
		uint8_t w[TR_LEB_MAX];
		size_t n = tr_leb_put(w, (uint64_t)ex[i].v, ex[i].sign), pos = 0;
		ck_assert_msg(n == ex[i].n && !memcmp(w, ex[i].b, n), "writer: %lld", (long long)ex[i].v);
		uint64_t v = 0;
		ck_assert_int_eq(uw_leb_read(ex[i].b, ex[i].n, &pos, ex[i].sign, &v), 0);
		ck_assert_msg(v == (uint64_t)ex[i].v && pos == ex[i].n, "reader: %lld", (long long)ex[i].v);
	}
	/* every width round-trips, with the bytes after it left unread */
	unsigned seed = 7;
	for (int i = 0; i < 20000; i++) {
		uint64_t x = ((uint64_t)rand_r(&seed) << 33) ^ ((uint64_t)rand_r(&seed) << 11) ^ (uint64_t)rand_r(&seed);
		x >>= rand_r(&seed) % 64;
		bool sign = i & 1;
		if (sign && (i & 2))
			x = (uint64_t)-(int64_t)x;
		uint8_t w[TR_LEB_MAX + 2] = { 0 };
		size_t n = tr_leb_put(w, x, sign), pos = 0;
		w[n] = 0x80;
		uint64_t v = ~x;
		ck_assert_int_eq(uw_leb_read(w, n + 2, &pos, sign, &v), 0);
		ck_assert_msg(v == x && pos == n, "%#llx (%s): read %#llx in %zu of %zu bytes",
			      (unsigned long long)x, sign ? "signed" : "unsigned", (unsigned long long)v, pos, n);
	}
	/* bad input: never a read past end, *v untouched */
	static const uint8_t run_past[] = { 0x80, 0x80, 0x05 };
	static const uint8_t eleven[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const uint8_t bit64[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02 };
	static const uint8_t sign64[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 };
	static const uint8_t max_u[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	uint64_t v = 42;
	size_t pos = 0;
	ck_assert_int_eq(uw_leb_read(run_past, 2, &pos, false, &v), -ENODATA);
	ck_assert_uint_eq(pos, 2);
	pos = 0;
	ck_assert_int_eq(uw_leb_read(eleven, sizeof(eleven), &pos, false, &v), -EOVERFLOW);
	pos = 0;
	ck_assert_int_eq(uw_leb_read(bit64, sizeof(bit64), &pos, false, &v), -ERANGE);
	pos = 0;
	ck_assert_int_eq(uw_leb_read(sign64, sizeof(sign64), &pos, true, &v), -ERANGE);
	pos = 5;
	ck_assert_int_eq(uw_leb_read(run_past, 3, &pos, false, &v), -ENODATA);
	ck_assert_uint_eq(v, 42);
	pos = 0;
	ck_assert_int_eq(uw_leb_read(max_u, sizeof(max_u), &pos, false, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
}
END_TEST

/* One row formatter, three styles: every rule kind once, as run's sample
 * details, replay and dump print them (the dump style is dumpcmd.c's). */
static const char *dw_number(const void *ctx, unsigned dw, char *tmp, size_t n)
{
	snprintf(tmp, n, "%s%u", (const char *)ctx, dw);
	return tmp;
}

START_TEST(test_row_text_styles)
{
	struct ehf_row row;
	memset(&row, 0, sizeof(row));
	for (unsigned d = 0; d < EHF_NREGS; d++)
		row.reg[d].kind = EHF_INITIAL;
	row.cfa_defined = true;
	row.cfa_kind = EHF_CFA_REG_OFF;
	row.cfa_reg = 6;
	row.cfa_off = 16;
	row.reg[3] = (struct ehf_rule){ .kind = EHF_REGISTER, .reg = 12 };
	row.reg[6] = (struct ehf_rule){ .kind = EHF_OFFSET, .off = -16 };
	row.reg[12] = (struct ehf_rule){ .kind = EHF_UNDEF };
	row.reg[13] = (struct ehf_rule){ .kind = EHF_SAME };
	row.reg[14] = (struct ehf_rule){ .kind = EHF_VAL_OFFSET, .off = 8 };
	row.reg[15] = (struct ehf_rule){ .kind = EHF_VAL_EXPRESSION, .expr_len = 3 };
	row.reg[16] = (struct ehf_rule){ .kind = EHF_OFFSET, .off = -8 };
	const struct uw_arch *a = uw_arch_by_mach(EM_X86_64);
	char b[256];
	hx_row_text(a, &row, HX_ROW_REPORT, b, sizeof(b));
	ck_assert_str_eq(b, "CFA=bp+16 bx=r12 bp=[CFA-16] r12=undefined r14=CFA+8 r15=expr ra=[CFA-8]");
	hx_row_text(a, &row, HX_ROW_REPLAY, b, sizeof(b));
	ck_assert_str_eq(b, "cfa=bp+16 bx=r12 bp=[cfa-16] r12=undef r14=cfa+8 r15=expr ip=[cfa-8]");
	const struct ehf_row_fmt dump = { .cfa = "cfa", .cfa_undefined = "cfa=undefined", .undef = "undef",
					  .name = dw_number, .ctx = "r", .nregs = EHF_NREGS, .val_paren = true,
					  .expr_len = true, .same = true, .ra_signed = true };
	row.ra_signed = true;
	size_t len = ehf_row_text(&row, &dump, b, sizeof(b));
	ck_assert_str_eq(b, "cfa=r6+16 r3=r12 r6=cfa-16 r12=undef r13=same r14=val(cfa+8) "
			    "r15=val_expr(3 bytes) r16=cfa-8 ra_signed");
	ck_assert_uint_eq(len, strlen(b));
	/* a row before any def_cfa, a CFA expression; a short buffer is cut, its length told */
	row.cfa_defined = false;
	hx_row_text(a, &row, HX_ROW_REPLAY, b, sizeof(b));
	ck_assert_str_eq(b, "cfa=undefined bx=r12 bp=[cfa-16] r12=undef r14=cfa+8 r15=expr ip=[cfa-8]");
	row.cfa_defined = true;
	row.cfa_kind = EHF_CFA_EXPR;
	row.cfa_expr_len = 5;
	ehf_row_text(&row, &dump, b, sizeof(b));
	ck_assert(!strncmp(b, "cfa=expr(5 bytes) r3=r12", 24));
	hx_row_text(a, &row, HX_ROW_REPORT, b, sizeof(b));
	ck_assert(!strncmp(b, "CFA=expr bx=r12", 15));
	char small[12];
	ck_assert_uint_gt(ehf_row_text(&row, &dump, small, sizeof(small)), sizeof(small));
	ck_assert_str_eq(small, "cfa=expr(5 ");
}
END_TEST

Suite *suite_ehframe(void)
{
	Suite *s = suite_create("ehframe");
	TCase *tc = tcase_create("cpython");
	tcase_add_test(tc, test_cpython_parse);
	tcase_add_test(tc, test_row_text_styles);
	tcase_add_test(tc, test_leb_reader_writer);
	tcase_add_loop_test(tc, test_cpython_rows, 0, 8);
	tcase_add_test(tc, test_cpython_rows_iter);
	tcase_add_test(tc, test_cpython_disasm);
	ehframe_add_hdr_cpython(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("interpreter");
	ehframe_add_cfi(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("expressions");
	ehframe_add_expr(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	ehframe_add_malformed(tc);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("eh_frame_hdr");
	ehframe_add_hdr(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("libdw");
	ehframe_add_libdw(tc);
	suite_add_tcase(s, tc);

	tc = tcase_create("speed");
	tcase_add_test(tc, test_row_at_speed);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
