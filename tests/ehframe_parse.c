/* Suite ehframe: malformed sections, mutations, and every row against libdw's
 * CFI reader on an ELF written with libelf (tests/ehframe.h). */
#include "tests/ehframe.h"

/* ---- malformed sections ---- */

static const uint8_t bad_len_past[] = { 0x20, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0x78, 0x10 };
static const uint8_t bad_len_trunc[] = { 0x08, 0x00 };
static const uint8_t bad_len64[] = { 0xff, 0xff, 0xff, 0xff, 0x10, 0, 0, 0, 0, 0, 0, 0,
				     0, 0, 0, 0, 1, 0, 1, 0x78, 0x10, 0, 0, 0 };
static const uint8_t bad_len_small[] = { 0x02, 0, 0, 0, 0, 0 };
static const uint8_t bad_version[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 2, 0, 1, 0x78, 0x10, 0, 0, 0 };
static const uint8_t bad_eh[] = { 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 'e', 'h', 0,
				  0, 0, 0, 0, 0, 0, 0, 0 };
static const uint8_t bad_aug_nul[] = { 0x08, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 'R' };
static const uint8_t bad_aug_letter[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'X', 0,
					  1, 0x78, 0x10, 0 };
static const uint8_t bad_uleb_long[] = { 0x14, 0, 0, 0, 0, 0, 0, 0, 1, 0,
					 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					 0x80, 0x80, 0x01, 0x78, 0x10 };
static const uint8_t bad_uleb_end[] = { 0x07, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0x80 };
static const uint8_t bad_cie_ptr[] = {
	CPY_CIE,
	0x14, 0, 0, 0, 0x40, 0, 0, 0, 0xd8, 0xff, 0xff, 0xff, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
static const uint8_t bad_cie_ptr_mid[] = {
	CPY_CIE,
	0x14, 0, 0, 0, 0x18, 0, 0, 0, 0xd8, 0xff, 0xff, 0xff, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};
static const uint8_t bad_fde_trunc[] = { CPY_CIE, 0x06, 0, 0, 0, 0x1c, 0, 0, 0, 0xd8, 0xff };
static const uint8_t bad_fde_aug[] = {
	CPY_CIE,
	0x10, 0, 0, 0, 0x1c, 0, 0, 0, 0xd8, 0xff, 0xff, 0xff, 8, 0, 0, 0, 0x09, 0, 0, 0,
};
static const uint8_t bad_funcrel[] = { 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0,
				       1, 0x78, 0x10, 1, 0x40, 0, 0, 0 };
static const uint8_t bad_aligned[] = { 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0,
				       1, 0x78, 0x10, 1, 0x50, 0, 0, 0 };
static const uint8_t bad_ra[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 3, 0, 1, 0x78, 0xc8, 0x01, 0, 0 };
static const uint8_t bad_aug_len[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 0, 1, 0x78, 0x10,
				       0x09, 0 };
static const uint8_t bad_trailing[] = { CPY_CIE, 0x00, 0x00 };
static const uint8_t bad_v4_asize[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 4, 0, 4, 0, 1, 0x78, 0x10, 0 };

static const struct bad_case {
	const char *name;
	const uint8_t *data;
	size_t size;
	uint64_t off;
	const char *msg;
} bad_cases[] = {
#define B(n, d, off, msg) { n, d, sizeof(d), off, msg }
	B("length past end", bad_len_past, 0, "runs past the end of .eh_frame"),
	B("truncated length", bad_len_trunc, 0, "truncated length field"),
	B("64-bit length", bad_len64, 0, "64-bit DWARF length"),
	B("length < 4", bad_len_small, 0, "too small"),
	B("CIE version 2", bad_version, 8, "CIE version 2 is not supported"),
	B("eh augmentation", bad_eh, 9, "\"eh\" augmentation"),
	B("augmentation without NUL", bad_aug_nul, 9, "no NUL"),
	B("unknown augmentation", bad_aug_letter, 10, "augmentation 'X'"),
	B("ULEB longer than 10 bytes", bad_uleb_long, 10, "longer than 10 bytes"),
	B("ULEB past the record", bad_uleb_end, 10, "runs past 0xb"),
	B("CIE pointer outside", bad_cie_ptr, 0x1c,
	  "FDE at 0x18: CIE pointer 0x40 points outside .eh_frame (size 0x30)"),
	B("CIE pointer not at a CIE", bad_cie_ptr_mid, 0x1c, "not the start of a CIE"),
	B("truncated pc_begin", bad_fde_trunc, 0x20, "truncated pc_begin"),
	B("FDE augmentation too long", bad_fde_aug, 0x28, "augmentation data length 0x9"),
	B("funcrel", bad_funcrel, 0x10, "DW_EH_PE_funcrel"),
	B("aligned", bad_aligned, 0x10, "DW_EH_PE_aligned"),
	B("RA register 200", bad_ra, 0x0c, "return address register 200"),
	B("CIE augmentation too long", bad_aug_len, 0x0e, "augmentation data length 0x9"),
	B("trailing bytes", bad_trailing, 0x18, "truncated length field"),
	B("version 4 address_size", bad_v4_asize, 0x0a, "address_size 4, expected 8"),
#undef B
};

START_TEST(test_bad_section)
{
	const struct bad_case *x = &bad_cases[_i];
	/* an exact-size heap copy: ASan sees any read past the end */
	uint8_t *d = malloc(x->size);
	memcpy(d, x->data, x->size);
	struct ehf_table t;
	struct ju_err err = { 0 };
	ck_assert_msg(ehf_parse(&t, d, x->size, &cpy_bases, &err) == -EINVAL, "%s: accepted", x->name);
	ck_assert_msg(strstr(err.msg, x->msg), "%s: \"%s\" lacks \"%s\"", x->name, err.msg, x->msg);
	ck_assert_msg(err.offset == x->off, "%s: offset 0x%" PRIx64 ", want 0x%" PRIx64 " (%s)",
		      x->name, err.offset, x->off, err.msg);
	ck_assert_ptr_null(t.cies);
	ck_assert_ptr_null(t.fdes);
	free(d);
}
END_TEST


/* ---- robustness: every damaged variant of valid sections, under ASan ---- */

static int count_cb(const struct ehf_row *row, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

static void exercise(const uint8_t *src, size_t size, const struct ehf_bases *b)
{
	uint8_t *d = malloc(size ? size : 1);
	memcpy(d, src, size);
	struct ehf_table t;
	struct ju_err err = { .offset = UINT64_MAX };
	if (ehf_parse(&t, d, size, b, &err) != 0) {
		ck_assert_msg(err.msg[0] && err.offset <= size, "bad error: 0x%" PRIx64 " %s",
			      err.offset, err.msg);
		free(d);
		return;
	}
	for (size_t i = 0; i < t.nfdes; i++) {
		const struct ehf_fde *f = &t.fdes[i];
		struct ehf_row row;
		int n = 0;
		ehf_rows(f, count_cb, &n, &err);
		for (uint64_t pc = f->pc_begin; pc < f->pc_end && pc - f->pc_begin < 64; pc++)
			if (ehf_row_at(f, pc, &row, &err) == 0 && row.cfa_kind == EHF_CFA_EXPR) {
				uint64_t v;
				ehf_eval_expr(row.cfa_expr, row.cfa_expr_len, &fake_ctx, false, 0, &v,
					      &err);
			}
		char line[64];
		for (size_t pos = 0; pos < f->insns_len;)
			if (ehf_disasm_insn(f->insns, f->insns_len, &pos, f->cie, line, sizeof(line),
					    &err))
				break;
	}
	ehf_table_free(&t);
	free(d);
}

START_TEST(test_mutations)
{
	static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x0f, 0x2d, 0x3f, 0x40, 0x7f, 0x80,
					0x9b, 0xc0, 0xfe, 0xff };
	struct tb a64;
	size_t na = build_a64(&a64);
	struct ehf_bases ab = { A64_EH, 0, 0, 8 };
	const struct { const uint8_t *p; size_t n; const struct ehf_bases *b; } src[] = {
		{ cpy_eh, sizeof(cpy_eh), &cpy_bases }, { a64.b, na, &ab },
	};
	uint8_t buf[sizeof(a64.b)];
	for (int s = 0; s < 2; s++) {
		for (size_t n = 0; n <= src[s].n; n++)
			exercise(src[s].p, n, src[s].b);
		for (size_t i = 0; i < src[s].n; i++) {
			for (size_t k = 0; k < sizeof(vals) + 8; k++) {
				memcpy(buf, src[s].p, src[s].n);
				buf[i] = k < sizeof(vals) ? vals[k] : buf[i] ^ (uint8_t)(1u << (k - sizeof(vals)));
				exercise(buf, src[s].n, src[s].b);
			}
		}
	}
	/* random multi-byte damage, reproducible */
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (int it = 0; it < 3000; it++) {
		int s = it & 1;
		memcpy(buf, src[s].p, src[s].n);
		for (int k = 0; k < 3; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[x % src[s].n] = (uint8_t)(x >> 32);
		}
		exercise(buf, src[s].n, src[s].b);
	}
}
END_TEST

/* ---- the independent decoder: libdw on an ELF written with libelf ---- */

struct elfsec {
	const char *name;
	uint16_t machine;
	uint64_t text, eh;
	uint8_t eh_bytes[1024];
	size_t eh_size;
	const uint8_t *code;      /* NULL: zeros */
	size_t text_size;
	/* libdw's DW_CFA_restore_state pops its whole frame state, row start
	 * included (libdw/cfi.c): the row beginning at quirk_loc is reported
	 * by libdw as starting at quirk_start */
	uint64_t quirk_loc, quirk_start;
};

static void build_elfsec(int which, struct elfsec *s)
{
	struct tb t;
	size_t prog;
	memset(s, 0, sizeof(*s));
	switch (which) {
	case 0:
		s->name = "cpython";
		s->machine = EM_X86_64;
		s->text = CPY_TEXT;
		s->code = cpy_code;
		s->text_size = sizeof(cpy_code);
		s->eh = CPY_EH;
		memcpy(s->eh_bytes, cpy_eh, sizeof(cpy_eh));
		s->eh_size = sizeof(cpy_eh);
		return;
	case 1:
		s->name = "arm64 program";
		s->machine = EM_AARCH64;
		s->text = A64_TEXT;
		s->text_size = A64_SIZE;
		s->eh = A64_EH;
		s->eh_size = build_a64(&t);
		s->quirk_loc = A64_TEXT + 24;     /* restore_state */
		s->quirk_start = A64_TEXT + 12;   /* the remember_state row */
		break;
	case 2:
		s->name = "zPLR";
		s->machine = EM_X86_64;
		s->text = PLR_TEXT;
		s->text_size = 16;
		s->eh = PLR_EH;
		s->eh_size = build_plr(&t, &prog);
		break;
	default:
		s->name = "set_loc";
		s->machine = EM_X86_64;
		s->text = SL_TEXT;
		s->text_size = 0x20;
		s->eh = SL_EH;
		s->eh_size = build_setloc(&t);
		break;
	}
	memcpy(s->eh_bytes, t.b, s->eh_size);
}

#define NELFSECS 4

/* ET_DYN with .text at s->text and .eh_frame at s->eh, in a memfd. */
static Elf *write_elf(const struct elfsec *s, int *fdp)
{
	static const char shstr[] = "\0.text\0.eh_frame\0.shstrtab";
	static const uint8_t zeros[256];
	int fd = memfd_create("ehf-test", 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_uint_ne(elf_version(EV_CURRENT), EV_NONE);
	Elf *e = elf_begin(fd, ELF_C_WRITE, NULL);
	ck_assert_ptr_nonnull(e);
	Elf64_Ehdr *eh = elf64_newehdr(e);
	ck_assert_ptr_nonnull(eh);
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = s->machine;
	eh->e_version = EV_CURRENT;
	const struct { const char *name; unsigned nameoff; uint32_t type; uint64_t flags, addr;
		       const void *buf; size_t size; } secs[] = {
		{ ".text", 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, s->text,
		  s->code ? s->code : zeros, s->text_size },
		{ ".eh_frame", 7, SHT_PROGBITS, SHF_ALLOC, s->eh, s->eh_bytes, s->eh_size },
		{ ".shstrtab", 17, SHT_STRTAB, 0, 0, shstr, sizeof(shstr) },
	};
	for (size_t i = 0; i < 3; i++) {
		Elf_Scn *scn = elf_newscn(e);
		Elf_Data *d = elf_newdata(scn);
		ck_assert_ptr_nonnull(d);
		d->d_buf = (void *)secs[i].buf;
		d->d_size = secs[i].size;
		d->d_type = ELF_T_BYTE;
		d->d_align = 1;
		d->d_version = EV_CURRENT;
		Elf64_Shdr *sh = elf64_getshdr(scn);
		sh->sh_name = secs[i].nameoff;
		sh->sh_type = secs[i].type;
		sh->sh_flags = secs[i].flags;
		sh->sh_addr = secs[i].addr;
		sh->sh_addralign = 1;
		if (i == 2)
			eh->e_shstrndx = (Elf64_Half)elf_ndxscn(scn);
	}
	ck_assert_msg(elf_update(e, ELF_C_WRITE) > 0, "elf_update: %s", elf_errmsg(-1));
	elf_end(e);
	Elf *r = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_msg(r != NULL, "elf_begin: %s", elf_errmsg(-1));
	*fdp = fd;
	return r;
}

/* libdw gives rules as DWARF expressions: evaluate the few forms it emits. */
static int dw_eval(const Dwarf_Op *ops, size_t n, uint64_t cfa, bool *is_val, uint64_t *out)
{
	uint64_t st[16];
	size_t sp = 0;
	*is_val = false;
	for (size_t i = 0; i < n; i++) {
		unsigned a = ops[i].atom;
		if (sp >= 15)
			return -1;
		if (a >= DW_OP_breg0 && a <= DW_OP_breg31)
			st[sp++] = REGVAL(a - DW_OP_breg0) + ops[i].number;
		else if (a >= DW_OP_lit0 && a <= DW_OP_lit31)
			st[sp++] = a - DW_OP_lit0;
		else if (a == DW_OP_bregx)
			st[sp++] = REGVAL(ops[i].number) + ops[i].number2;
		else if (a == DW_OP_call_frame_cfa)
			st[sp++] = cfa;
		else if (a == DW_OP_plus_uconst && sp >= 1)
			st[sp - 1] += ops[i].number;
		else if (a == DW_OP_minus && sp >= 2) {
			sp--;
			st[sp - 1] -= st[sp];
		}
		else if (a == DW_OP_stack_value)
			*is_val = true;
		else
			return -1;
	}
	if (sp == 0)
		return -1;
	*out = st[sp - 1];
	return 0;
}

/* A rule as text, the same way for both decoders. */
static void rule_text(char *buf, size_t n, bool is_val, uint64_t v)
{
	snprintf(buf, n, "%s 0x%" PRIx64, is_val ? "value" : "saved at", v);
}

/* Every register row sets: libdw's rule at pc equals ours; returns how many. */
static int compare_rules(const struct elfsec *s, uint64_t pc, Dwarf_Frame *fr, const struct ehf_row *row,
			 uint64_t cfa_dw, uint64_t cfa_us)
{
	int n = 0;
	bool is_val;
	struct ju_err err = { 0 };
	for (unsigned r = 0; r < EHF_NREGS; r++) {
		const struct ehf_rule *ru = &row->reg[r];
		if (ru->kind == EHF_INITIAL)
			continue;
		Dwarf_Op mem[3], *rops;
		size_t nr;
		ck_assert_int_eq(dwarf_frame_register(fr, (int)r, mem, &rops, &nr), 0);
		char dw[64], us[64];
		if (nr == 0)
			snprintf(dw, sizeof(dw), rops ? "undefined" : "same value");
		else if (nr == 1 && rops[0].atom == DW_OP_regx)
			snprintf(dw, sizeof(dw), "register %" PRIu64, (uint64_t)rops[0].number);
		else if (nr == 2 && rops[0].atom == DW_OP_bregx && rops[0].number2 == 0 &&
			 rops[1].atom == DW_OP_stack_value)
			snprintf(dw, sizeof(dw), "register %" PRIu64, (uint64_t)rops[0].number);
		else {
			uint64_t v;
			ck_assert_msg(dw_eval(rops, nr, cfa_dw, &is_val, &v) == 0,
				      "%s r%u: op 0x%x", s->name, r, rops[0].atom);
			rule_text(dw, sizeof(dw), is_val, v);
		}
		uint64_t v;
		switch (ru->kind) {
		case EHF_UNDEF: snprintf(us, sizeof(us), "undefined"); break;
		case EHF_SAME: snprintf(us, sizeof(us), "same value"); break;
		case EHF_REGISTER: snprintf(us, sizeof(us), "register %u", ru->reg); break;
		case EHF_OFFSET: case EHF_VAL_OFFSET:
			rule_text(us, sizeof(us), ru->kind == EHF_VAL_OFFSET,
				  cfa_us + (uint64_t)ru->off);
			break;
		default:
			ck_assert_int_eq(ehf_eval_expr(ru->expr, ru->expr_len, &fake_ctx, true,
						       cfa_us, &v, &err), 0);
			rule_text(us, sizeof(us), ru->kind == EHF_VAL_EXPRESSION, v);
			break;
		}
		ck_assert_msg(!strcmp(dw, us), "%s pc 0x%" PRIx64 " r%u: libdw \"%s\", ours"
			      " \"%s\"", s->name, pc, r, dw, us);
		n++;
	}
	return n;
}

START_TEST(test_libdw_crosscheck)
{
	struct elfsec s;
	build_elfsec(_i, &s);
	int fd;
	Elf *elf = write_elf(&s, &fd);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
	ck_assert_msg(cfi != NULL, "%s: dwarf_getcfi_elf: %s", s.name, dwarf_errmsg(-1));
	struct ehf_bases b = { s.eh, s.text, 0, 8 };
	struct ehf_table tab;
	parse_ok(&tab, s.eh_bytes, s.eh_size, &b);
	int compared = 0;
	for (uint64_t pc = s.text; pc < s.text + s.text_size; pc++) {
		const struct ehf_fde *f = ehf_find_fde(&tab, pc);
		ck_assert_msg(f != NULL, "%s: no FDE for 0x%" PRIx64, s.name, pc);
		struct ehf_row row;
		struct ju_err err = { 0 };
		ck_assert_msg(ehf_row_at(f, pc, &row, &err) == 0, "%s: %s", s.name, err.msg);
		Dwarf_Frame *fr = NULL;
		ck_assert_msg(dwarf_cfi_addrframe(cfi, pc, &fr) == 0, "%s pc 0x%" PRIx64 ": libdw: %s",
			      s.name, pc, dwarf_errmsg(-1));
		Dwarf_Addr start, end;
		bool signalp;
		int ra = dwarf_frame_info(fr, &start, &end, &signalp);
		ck_assert_int_eq(ra, (int)f->cie->ra_reg);
		uint64_t want_start = row.loc == s.quirk_loc && s.quirk_loc ? s.quirk_start : row.loc;
		ck_assert_msg(start == want_start && end == row.end, "%s pc 0x%" PRIx64 ": libdw row"
			      " [0x%" PRIx64 ",0x%" PRIx64 "), ours [0x%" PRIx64 ",0x%" PRIx64 ")",
			      s.name, pc, (uint64_t)start, (uint64_t)end, row.loc, row.end);

		/* the CFA: same register and offset, or the same value */
		Dwarf_Op *ops;
		size_t nops;
		ck_assert_int_eq(dwarf_frame_cfa(fr, &ops, &nops), 0);
		ck_assert_uint_gt(nops, 0);
		uint64_t cfa_dw, cfa_us;
		bool is_val;
		ck_assert_msg(dw_eval(ops, nops, 0, &is_val, &cfa_dw) == 0, "%s: CFA op 0x%x",
			      s.name, ops[0].atom);
		if (row.cfa_kind == EHF_CFA_REG_OFF) {
			ck_assert_msg(nops == 1 && ops[0].atom == DW_OP_bregx &&
				      ops[0].number == row.cfa_reg &&
				      (int64_t)ops[0].number2 == row.cfa_off,
				      "%s pc 0x%" PRIx64 ": libdw CFA op 0x%x r%" PRIu64 "%+" PRId64
				      ", ours r%u%+" PRId64, s.name, pc, ops[0].atom,
				      (uint64_t)ops[0].number, (int64_t)ops[0].number2,
				      row.cfa_reg, row.cfa_off);
			cfa_us = REGVAL(row.cfa_reg) + (uint64_t)row.cfa_off;
		} else {
			ck_assert_int_eq(ehf_eval_expr(row.cfa_expr, row.cfa_expr_len, &fake_ctx,
						       false, 0, &cfa_us, &err), 0);
		}
		ck_assert_uint_eq(cfa_dw, cfa_us);

		/* every register our row sets: the same rule */
		compared += compare_rules(&s, pc, fr, &row, cfa_dw, cfa_us);
		free(fr);
	}
	ck_assert_int_gt(compared, 0);
	ehf_table_free(&tab);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
}
END_TEST

void ehframe_add_malformed(TCase *tc)
{
	tcase_add_loop_test(tc, test_bad_section, 0, sizeof(bad_cases) / sizeof(bad_cases[0]));
	tcase_add_test(tc, test_mutations);
}

void ehframe_add_libdw(TCase *tc)
{
	tcase_add_loop_test(tc, test_libdw_crosscheck, 0, NELFSECS);
}
