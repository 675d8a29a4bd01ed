/* Suite ehframe: the CFI interpreter -- the arm64-style program's rows, bad
 * programs, several FDEs, personality/LSDA and set_loc (tests/ehframe.h). */
#include "tests/ehframe.h"

struct xrule {
	uint8_t reg, kind;
	int64_t off;              /* OFFSET/VAL_OFFSET: offset; REGISTER: source; EXPR: value */
};

static const struct xrow {
	uint64_t pc, loc, end;
	uint8_t cfa_kind;
	uint16_t cfa_reg;
	int64_t cfa_off;          /* EXPR: the expected CFA value */
	bool ra_signed;
	struct xrule r[4];        /* r19, r20, r29, r30 */
} a64_rows[] = {
	{ 0, 0, 4, EHF_CFA_REG_OFF, SP, 0, false,
	  { { 19, EHF_INITIAL, 0 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_INITIAL, 0 },
	    { 30, EHF_INITIAL, 0 } } },
	{ 4, 4, 12, EHF_CFA_REG_OFF, SP, 16, false,
	  { { 19, EHF_INITIAL, 0 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_OFFSET, -16 },
	    { 30, EHF_OFFSET, -8 } } },
	{ 11, 4, 12, EHF_CFA_REG_OFF, SP, 16, false,
	  { { 19, EHF_INITIAL, 0 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_OFFSET, -16 },
	    { 30, EHF_OFFSET, -8 } } },
	{ 12, 12, 24, EHF_CFA_REG_OFF, 29, 16, false,
	  { { 19, EHF_VAL_OFFSET, -32 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_OFFSET, -16 },
	    { 30, EHF_OFFSET, -8 } } },
	{ 23, 12, 24, EHF_CFA_REG_OFF, 29, 16, false,
	  { { 19, EHF_VAL_OFFSET, -32 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_OFFSET, -16 },
	    { 30, EHF_OFFSET, -8 } } },
	{ 24, 24, 28, EHF_CFA_REG_OFF, SP, 16, true,
	  { { 19, EHF_INITIAL, 0 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_OFFSET, -16 },
	    { 30, EHF_OFFSET, -8 } } },
	{ 28, 28, 32, EHF_CFA_EXPR, 0, (int64_t)REGVAL(SP) + 32, true,
	  { { 19, EHF_INITIAL, 0 }, { 20, EHF_INITIAL, 0 }, { 29, EHF_INITIAL, 0 },
	    { 30, EHF_OFFSET, -8 } } },
	{ 32, 32, 36, EHF_CFA_REG_OFF, SP, 32, true,
	  { { 19, EHF_OFFSET, 24 }, { 20, EHF_REGISTER, 21 }, { 29, EHF_SAME, 0 },
	    { 30, EHF_UNDEF, 0 } } },
	{ 39, 36, 40, EHF_CFA_REG_OFF, SP, 32, true,
	  { { 19, EHF_EXPRESSION, (int64_t)REGVAL(SP) + 32 - 8 },
	    { 20, EHF_VAL_EXPRESSION, (int64_t)REGVAL(SP) + 32 + 8 }, { 29, EHF_SAME, 0 },
	    { 30, EHF_UNDEF, 0 } } },
};

static void check_xrow(const struct ehf_row *row, const struct xrow *x)
{
	struct ju_err err = { 0 };
	uint64_t v;
	ck_assert_uint_eq(row->loc, A64_TEXT + x->loc);
	ck_assert_uint_eq(row->end, A64_TEXT + x->end);
	ck_assert(row->cfa_defined);
	ck_assert_uint_eq(row->cfa_kind, x->cfa_kind);
	ck_assert_uint_eq(row->ra_signed, x->ra_signed);
	uint64_t cfa;
	if (x->cfa_kind == EHF_CFA_REG_OFF) {
		ck_assert_uint_eq(row->cfa_reg, x->cfa_reg);
		ck_assert_int_eq(row->cfa_off, x->cfa_off);
		cfa = REGVAL(row->cfa_reg) + (uint64_t)row->cfa_off;
	} else {
		ck_assert_msg(ehf_eval_expr(row->cfa_expr, row->cfa_expr_len, &fake_ctx, false, 0,
					    &cfa, &err) == 0, "%s", err.msg);
		ck_assert_uint_eq(cfa, (uint64_t)x->cfa_off);
	}
	for (int i = 0; i < 4; i++) {
		const struct ehf_rule *ru = &row->reg[x->r[i].reg];
		ck_assert_msg(ru->kind == x->r[i].kind, "pc %" PRIu64 " r%u: kind %u, want %u", x->pc,
			      x->r[i].reg, ru->kind, x->r[i].kind);
		switch (ru->kind) {
		case EHF_OFFSET: case EHF_VAL_OFFSET:
			ck_assert_int_eq(ru->off, x->r[i].off);
			break;
		case EHF_REGISTER:
			ck_assert_int_eq(ru->reg, x->r[i].off);
			break;
		case EHF_EXPRESSION: case EHF_VAL_EXPRESSION:
			ck_assert_msg(ehf_eval_expr(ru->expr, ru->expr_len, &fake_ctx, true, cfa, &v,
						    &err) == 0, "%s", err.msg);
			ck_assert_uint_eq(v, (uint64_t)x->r[i].off);
			break;
		default:
			break;
		}
	}
}

START_TEST(test_a64_rows)
{
	struct tb t;
	struct ehf_table tab;
	struct ehf_row row;
	struct ju_err err = { 0 };
	struct ehf_bases b = { A64_EH, 0, 0, 8 };
	parse_ok(&tab, t.b, build_a64(&t), &b);
	ck_assert_uint_eq(tab.nfdes, 1);
	ck_assert_uint_eq(tab.cies[0].ra_reg, 30);
	const struct xrow *x = &a64_rows[_i];
	ck_assert_msg(ehf_row_at(&tab.fdes[0], A64_TEXT + x->pc, &row, &err) == 0, "%s", err.msg);
	check_xrow(&row, x);
	ehf_table_free(&tab);
}
END_TEST

struct a64_iter {
	int n;
};

static int a64_rows_cb(const struct ehf_row *row, void *arg)
{
	struct a64_iter *it = arg;
	const struct xrow *x = NULL;
	for (size_t i = 0; i < sizeof(a64_rows) / sizeof(a64_rows[0]); i++)
		if (A64_TEXT + a64_rows[i].loc == row->loc)
			x = &a64_rows[i];
	ck_assert_msg(x != NULL, "unexpected row at 0x%" PRIx64, row->loc);
	check_xrow(row, x);
	it->n++;
	return 0;
}

START_TEST(test_a64_rows_iter)
{
	struct tb t;
	struct ehf_table tab;
	struct ju_err err = { 0 };
	struct ehf_bases b = { A64_EH, 0, 0, 8 };
	struct a64_iter it = { 0 };
	parse_ok(&tab, t.b, build_a64(&t), &b);
	ck_assert_msg(ehf_rows(&tab.fdes[0], a64_rows_cb, &it, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(it.n, 7);
	ehf_table_free(&tab);
}
END_TEST

/* Golden dump of the arm64 program: factored operands shown in bytes. */
START_TEST(test_a64_disasm)
{
	static const char *const want[] = {
		"DW_CFA_advance_loc1 4", "DW_CFA_def_cfa_offset 16", "DW_CFA_offset r29 at cfa-16",
		"DW_CFA_offset r30 at cfa-8", "DW_CFA_advance_loc2 8", "DW_CFA_remember_state",
		"DW_CFA_def_cfa_register r29", "DW_CFA_val_offset r19 is cfa-32",
		"DW_CFA_advance_loc4 12", "DW_CFA_restore_state", "DW_CFA_AARCH64_negate_ra_state",
		"DW_CFA_advance_loc 4", "DW_CFA_def_cfa_expression [8f 10 23 10]",
		"DW_CFA_restore r29", "DW_CFA_advance_loc 4", "DW_CFA_def_cfa_sf r31+32",
		"DW_CFA_offset_extended_sf r19 at cfa+24", "DW_CFA_register r20 in r21",
		"DW_CFA_undefined r30", "DW_CFA_same_value r29", "DW_CFA_GNU_args_size 16",
		"DW_CFA_advance_loc 4", "DW_CFA_expression r19 [38 1c]",
		"DW_CFA_val_expression r20 [23 08]",
	};
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	struct tb t;
	struct ehf_table tab;
	struct ju_err err = { 0 };
	struct ehf_bases b = { A64_EH, 0, 0, 8 };
	char line[128];
	parse_ok(&tab, t.b, build_a64(&t), &b);
	const struct ehf_fde *f = &tab.fdes[0];
	size_t pos = 0, k = 0;
	while (pos < f->insns_len) {
		ck_assert_msg(ehf_disasm_insn(f->insns, f->insns_len, &pos, f->cie, line,
					      sizeof(line), &err) == 0, "%s", err.msg);
		ck_assert_str_eq(line, k < nwant ? want[k] : "DW_CFA_nop");
		k++;
	}
	ck_assert_uint_ge(k, nwant);
	/* without a CIE the operands stay factored; a short buffer is cut, not overrun */
	pos = 0;
	ck_assert_int_eq(ehf_disasm_insn(f->insns, f->insns_len, &pos, NULL, line, sizeof(line),
					 &err), 0);
	ck_assert_str_eq(line, "DW_CFA_advance_loc1 1");
	char small[8];
	pos = 4;
	ck_assert_int_eq(ehf_disasm_insn(f->insns, f->insns_len, &pos, f->cie, small, sizeof(small),
					 &err), 0);
	ck_assert_str_eq(small, "DW_CFA_");
	/* an operand cut by the end of the buffer */
	pos = 0;
	ck_assert_int_eq(ehf_disasm_insn(f->insns, 1, &pos, f->cie, line, sizeof(line), &err), -EINVAL);
	ck_assert_uint_eq(err.offset, 1);
	ck_assert_uint_eq(pos, 0);
	ehf_table_free(&tab);
}
END_TEST


/* ---- CFA programs that must be rejected at interpretation ---- */

static const struct bad_prog {
	const char *name;
	uint8_t cie[24];
	size_t ncie;
	uint8_t fde[24];
	size_t nfde;
	unsigned pc;
	bool in_cie;              /* the error is in the CIE's program */
	size_t rel;               /* offset of the bad op in its program */
	const char *msg;
	bool nopad;               /* the FDE ends right after its program */
} bad_progs[] = {
	{ "opcode 0x3f", { 0x0c, 7, 8 }, 3, { 0x41, 0x3f }, 2, 7, false, 1,
	  "unsupported CFA opcode 0x3f at offset 0x", false },
	{ "register 200", { 0x0c, 7, 8 }, 3, { 0x05, 0xc8, 0x01, 0x01 }, 4, 0, false, 0,
	  "DW_CFA_offset_extended at offset 0x", false },
	{ "def_cfa register 97", { 0x0c, 0x61, 8 }, 3, { 0 }, 0, 0, true, 0,
	  "register 97 is out of range", false },
	{ "register source 300", { 0x0c, 7, 8 }, 3, { 0x09, 0x06, 0xac, 0x02 }, 4, 0, false, 0,
	  "register 300", false },
	{ "restore_state empty", { 0x0c, 7, 8 }, 3, { 0x0b }, 1, 0, false, 0,
	  "no remembered state", false },
	{ "remember 17 deep", { 0x0c, 7, 8 }, 3,
	  { 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a,
	    0x0a, 0x0a, 0x0a }, 17, 0, false, 16, "more than 16 states", false },
	{ "def_cfa_register on expression", { 0x0f, 0x02, 0x77, 0x08 }, 4, { 0x0d, 0x06 }, 2, 0,
	  false, 0, "not register+offset", false },
	{ "def_cfa_offset without CFA", { 0 }, 0, { 0x0e, 0x10 }, 2, 0, false, 0,
	  "not register+offset", false },
	{ "truncated operand", { 0x0c, 7, 8 }, 3, { 0x0e }, 1, 0, false, 1, "truncated", true },
	{ "truncated advance_loc2", { 0x0c, 7, 8 }, 3, { 0x03, 0x01 }, 2, 0, false, 1,
	  "truncated DW_CFA_advance_loc2", true },
	{ "expression past the end", { 0x0c, 7, 8 }, 3, { 0x0f, 0x05, 0x77 }, 3, 0, false, 2,
	  "runs past the program's end", true },
	{ "advance in CIE", { 0x0c, 7, 8, 0x41 }, 4, { 0 }, 0, 0, true, 3, "CIE's initial", false },
	{ "offset too large", { 0x0c, 7, 8 }, 3,
	  { 0x0e, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 11, 0, false, 0,
	  "too large", false },
	{ "ULEB of 11 bytes", { 0x0c, 7, 8 }, 3,
	  { 0x0e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, 12, 0, false,
	  1, "longer than 10 bytes", false },
	{ "factored offset overflows", { 0x0c, 7, 8 }, 3,
	  { 0x11, 0x06, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f }, 12, 0, false,
	  0, "overflows", false },
	{ "MIPS_advance_loc8", { 0x0c, 7, 8 }, 3, { 0x1d, 1, 0, 0, 0, 0, 0, 0, 0 }, 9, 0, false, 0,
	  "unsupported CFA opcode 0x1d", false },
};

START_TEST(test_bad_prog)
{
	const struct bad_prog *x = &bad_progs[_i];
	struct cie_spec cs = { 1, "zR", 1, -8, 16, DW_EH_PE_pcrel | DW_EH_PE_sdata4, x->cie, x->ncie };
	struct tb t = { .n = 0 };
	struct ehf_table tab;
	struct ehf_row row;
	struct ju_err err = { 0 };
	size_t cie = tb_cie(&t, &cs);
	size_t fde = tb_fde_open(&t, cie, CPY_EH, CPY_TEXT, 8, true);
	size_t prog = t.n;
	tb_raw(&t, x->fde, x->nfde);
	if (x->nopad)
		tb_patch_len(&t, fde);
	else
		tb_close(&t, fde);
	parse_ok(&tab, t.b, t.n, &cpy_bases);
	ck_assert_msg(ehf_row_at(&tab.fdes[0], CPY_TEXT + x->pc, &row, &err) == -EINVAL, "%s: accepted",
		      x->name);
	uint64_t want = (x->in_cie ? tab.cies[0].insns_off : prog) + x->rel;
	ck_assert_msg(strstr(err.msg, x->msg), "%s: \"%s\" lacks \"%s\"", x->name, err.msg, x->msg);
	ck_assert_msg(err.offset == want, "%s: offset 0x%" PRIx64 ", want 0x%" PRIx64 " (%s)",
		      x->name, err.offset, want, err.msg);
	char hex[24];
	snprintf(hex, sizeof(hex), "0x%" PRIx64, want);
	ck_assert_msg(strstr(err.msg, hex) != NULL, "%s: \"%s\" does not name offset %s", x->name, err.msg, hex);
	/* the same program through ehf_rows fails the same way */
	struct rows_seen s = { .n = 0 };
	ck_assert_int_eq(ehf_rows(&tab.fdes[0], rows_cb, &s, &err), -EINVAL);
	ehf_table_free(&tab);
}
END_TEST

START_TEST(test_row_at_outside)
{
	struct ehf_table t;
	struct ehf_row row;
	struct ju_err err = { 0 };
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	ck_assert_int_eq(ehf_row_at(&t.fdes[0], CPY_TEXT + 8, &row, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "outside"));
	ck_assert_int_eq(ehf_row_at(&t.fdes[0], CPY_TEXT - 1, &row, &err), -EINVAL);
	ck_assert_int_eq(ehf_row_at(NULL, 0, &row, &err), -EINVAL);
	ehf_table_free(&t);
}
END_TEST

/* ---- several CIEs and FDEs: sorting, lookup, 'P'/'L', versions 3 and 4 ---- */

START_TEST(test_multi_sorted)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10 };
	struct cie_spec c1 = { 1, "zR", 1, -8, 16, DW_EH_PE_pcrel | DW_EH_PE_sdata4,
			       cpy_eh + 0x11, 5 };
	struct cie_spec c3 = { 3, "zR", 1, -8, 16, DW_EH_PE_udata4, cpy_eh + 0x11, 5 };
	struct cie_spec c4 = { 4, "z", 1, -8, 16, DW_EH_PE_absptr, cpy_eh + 0x11, 5 };
	struct tb t = { .n = 0 };
	size_t fo[4];
	size_t a = tb_cie(&t, &c1);
	tb_fde(&t, a, 0x1000, 0x300, 0x10, true, prog, sizeof(prog), &fo[0]);
	tb_fde(&t, a, 0x1000, 0x100, 0x10, true, prog, sizeof(prog), &fo[1]);
	size_t b = tb_cie(&t, &c3);
	/* udata4 absolute pc_begin: written by hand */
	fo[2] = t.n;
	tb_le(&t, 0, 4);
	tb_le(&t, t.n - b, 4);
	tb_le(&t, 0x200, 4);
	tb_le(&t, 0x10, 4);
	tb_uleb(&t, 0);
	tb_raw(&t, prog, sizeof(prog));
	tb_close(&t, fo[2]);
	size_t c = tb_cie(&t, &c4);
	fo[3] = t.n;
	tb_le(&t, 0, 4);
	tb_le(&t, t.n - c, 4);
	tb_le(&t, 0x100, 8);  /* same pc_begin as fo[1]: the stable sort keeps section order */
	tb_le(&t, 0x10, 8);
	tb_uleb(&t, 0);
	tb_raw(&t, prog, sizeof(prog));
	tb_close(&t, fo[3]);
	/* no terminator: the section simply ends */
	struct ehf_bases bases = { 0x1000, 0, 0, 8 };
	struct ehf_table tab;
	parse_ok(&tab, t.b, t.n, &bases);
	ck_assert(!tab.terminated);
	ck_assert_uint_eq(tab.ncies, 3);
	ck_assert_uint_eq(tab.nfdes, 4);
	ck_assert_uint_eq(tab.cies[1].version, 3);
	ck_assert_uint_eq(tab.cies[2].version, 4);
	static const uint64_t begin[] = { 0x100, 0x100, 0x200, 0x300 };
	const size_t off[] = { fo[1], fo[3], fo[2], fo[0] };
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(tab.fdes[i].pc_begin, begin[i]);
		ck_assert_uint_eq(tab.fdes[i].offset, off[i]);
	}
	ck_assert_ptr_eq(tab.fdes[2].cie, &tab.cies[1]);
	ck_assert_ptr_eq(ehf_find_fde(&tab, 0x100), &tab.fdes[1]);
	ck_assert_ptr_eq(ehf_find_fde(&tab, 0x10f), &tab.fdes[1]);
	ck_assert_ptr_null(ehf_find_fde(&tab, 0x110));
	ck_assert_ptr_eq(ehf_find_fde(&tab, 0x20f), &tab.fdes[2]);
	ck_assert_ptr_null(ehf_find_fde(&tab, 0x210));
	ck_assert_ptr_eq(ehf_find_fde(&tab, 0x300), &tab.fdes[3]);
	ck_assert_ptr_null(ehf_find_fde(&tab, 0xff));
	ck_assert_ptr_null(ehf_find_fde(&tab, UINT64_MAX));
	struct ehf_row row;
	struct ju_err err;
	ck_assert_int_eq(ehf_row_at(&tab.fdes[2], 0x201, &row, &err), 0);
	ck_assert_int_eq(row.cfa_off, 16);
	ehf_table_free(&tab);
}
END_TEST


size_t build_plr(struct tb *t, size_t *prog_at)
{
	static const uint8_t cie_insns[] = { 0x0c, 0x07, 0x08, 0x90, 0x01 };
	static const uint8_t fde_insns[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x44, 0x0d, 0x06 };
	t->n = 0;
	tb_le(t, 0, 4);
	tb_le(t, 0, 4);
	tb_u8(t, 1);
	tb_raw(t, (const uint8_t *)"zPLR", 5);
	tb_uleb(t, 1);
	tb_sleb(t, -8);
	tb_u8(t, 16);
	tb_uleb(t, 7);
	tb_u8(t, DW_EH_PE_indirect | DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	tb_le(t, PLR_PERS - (PLR_EH + t->n), 4);
	tb_u8(t, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	tb_u8(t, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	tb_raw(t, cie_insns, sizeof(cie_insns));
	tb_close(t, 0);
	size_t f = t->n;
	tb_le(t, 0, 4);
	tb_le(t, t->n, 4);
	tb_le(t, PLR_TEXT - (PLR_EH + t->n), 4);
	tb_le(t, 16, 4);
	tb_uleb(t, 4);
	tb_le(t, PLR_LSDA - (PLR_EH + t->n), 4);
	*prog_at = t->n;
	tb_raw(t, fde_insns, sizeof(fde_insns));
	tb_close(t, f);
	tb_le(t, 0, 4);
	return t->n;
}

START_TEST(test_plr)
{
	struct tb t;
	size_t prog;
	struct ehf_bases b = { PLR_EH, 0, 0, 8 };
	struct ehf_table tab;
	parse_ok(&tab, t.b, build_plr(&t, &prog), &b);
	const struct ehf_cie *c = &tab.cies[0];
	ck_assert_str_eq(c->aug, "zPLR");
	ck_assert_uint_eq(c->personality, PLR_PERS);  /* the slot's address, not dereferenced */
	ck_assert_uint_eq(c->lsda_enc, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	ck_assert_uint_eq(c->fde_enc, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	ck_assert_uint_eq(tab.fdes[0].insns_off, prog);
	ck_assert_uint_eq(tab.fdes[0].pc_begin, PLR_TEXT);
	struct ehf_row row;
	struct ju_err err;
	ck_assert_int_eq(ehf_row_at(&tab.fdes[0], PLR_TEXT + 5, &row, &err), 0);
	ck_assert_uint_eq(row.cfa_reg, 6);
	ck_assert_uint_eq(row.loc, PLR_TEXT + 5);
	ehf_table_free(&tab);
}
END_TEST

/* ---- DW_CFA_set_loc and the rarer register ops ---- */


size_t build_setloc(struct tb *t)
{
	static const uint8_t cie_insns[] = { 0x0c, 0x07, 0x08, 0x90, 0x01, 0x08, 0x03 };
	struct cie_spec cs = { 3, "zR", 1, -8, 16, DW_EH_PE_pcrel | DW_EH_PE_sdata4, cie_insns,
			       sizeof(cie_insns) };
	t->n = 0;
	size_t cie = tb_cie(t, &cs);
	size_t f = tb_fde_open(t, cie, SL_EH, SL_TEXT, 0x20, true);
	tb_u8(t, DW_CFA_set_loc);
	tb_le(t, SL_TEXT + 5 - (SL_EH + t->n), 4);
	tb_u8(t, DW_CFA_def_cfa_offset_sf);
	tb_sleb(t, -2);                                  /* r7+16 */
	tb_u8(t, DW_CFA_offset_extended);
	tb_uleb(t, 6);
	tb_uleb(t, 2);                                   /* r6 at cfa-16 */
	tb_u8(t, DW_CFA_GNU_negative_offset_extended);
	tb_uleb(t, 12);
	tb_uleb(t, 3);                                   /* r12 at cfa+24 */
	tb_u8(t, DW_CFA_val_offset_sf);
	tb_uleb(t, 13);
	tb_sleb(t, -1);                                  /* r13 is cfa+8 */
	tb_u8(t, DW_CFA_nop);
	tb_u8(t, DW_CFA_advance_loc1);
	tb_u8(t, 5);                                     /* 0x8a */
	tb_u8(t, DW_CFA_restore_extended);
	tb_uleb(t, 6);                                   /* r6: initial */
	tb_u8(t, DW_CFA_restore_extended);
	tb_uleb(t, 3);                                   /* r3: same_value from the CIE */
	tb_u8(t, DW_CFA_def_cfa);
	tb_uleb(t, 6);
	tb_uleb(t, 16);
	tb_u8(t, DW_CFA_set_loc);
	tb_le(t, SL_TEXT + 0x10 - (SL_EH + t->n), 4);
	tb_u8(t, DW_CFA_undefined);
	tb_uleb(t, 16);
	tb_close(t, f);
	tb_le(t, 0, 4);
	return t->n;
}

START_TEST(test_setloc)
{
	struct tb t;
	struct ehf_bases b = { SL_EH, 0, 0, 8 };
	struct ehf_table tab;
	struct ehf_row row;
	struct ju_err err = { 0 };
	parse_ok(&tab, t.b, build_setloc(&t), &b);
	const struct ehf_fde *f = &tab.fdes[0];
	ck_assert_int_eq(ehf_row_at(f, SL_TEXT + 4, &row, &err), 0);
	ck_assert_uint_eq(row.loc, SL_TEXT);
	ck_assert_uint_eq(row.end, SL_TEXT + 5);
	ck_assert_int_eq(row.cfa_off, 8);
	ck_assert_uint_eq(row.reg[3].kind, EHF_SAME);
	ck_assert_msg(ehf_row_at(f, SL_TEXT + 5, &row, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(row.loc, SL_TEXT + 5);
	ck_assert_uint_eq(row.end, SL_TEXT + 10);
	ck_assert_int_eq(row.cfa_off, 16);
	ck_assert_uint_eq(row.reg[6].kind, EHF_OFFSET);
	ck_assert_int_eq(row.reg[6].off, -16);
	ck_assert_uint_eq(row.reg[12].kind, EHF_OFFSET);
	ck_assert_int_eq(row.reg[12].off, 24);
	ck_assert_uint_eq(row.reg[13].kind, EHF_VAL_OFFSET);
	ck_assert_int_eq(row.reg[13].off, 8);
	ck_assert_int_eq(ehf_row_at(f, SL_TEXT + 10, &row, &err), 0);
	ck_assert_uint_eq(row.end, SL_TEXT + 0x10);
	ck_assert_uint_eq(row.cfa_reg, 6);
	ck_assert_uint_eq(row.reg[6].kind, EHF_INITIAL);
	ck_assert_uint_eq(row.reg[3].kind, EHF_SAME);
	ck_assert_int_eq(ehf_row_at(f, SL_TEXT + 0x1f, &row, &err), 0);
	ck_assert_uint_eq(row.loc, SL_TEXT + 0x10);
	ck_assert_uint_eq(row.end, SL_TEXT + 0x20);
	ck_assert_uint_eq(row.reg[16].kind, EHF_UNDEF);
	ehf_table_free(&tab);
}
END_TEST

void ehframe_add_cfi(TCase *tc)
{
	tcase_add_loop_test(tc, test_a64_rows, 0, sizeof(a64_rows) / sizeof(a64_rows[0]));
	tcase_add_test(tc, test_a64_rows_iter);
	tcase_add_test(tc, test_a64_disasm);
	tcase_add_test(tc, test_setloc);
	tcase_add_test(tc, test_plr);
	tcase_add_test(tc, test_multi_sorted);
	tcase_add_test(tc, test_row_at_outside);
	tcase_add_loop_test(tc, test_bad_prog, 0, sizeof(bad_progs) / sizeof(bad_progs[0]));
}
