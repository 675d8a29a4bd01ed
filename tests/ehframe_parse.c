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
static const uint8_t bad_indirect[] = { 0x10, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0,
					1, 0x78, 0x10, 1, 0x9b, 0, 0, 0 };
static const uint8_t bad_no_z[] = { 0x0c, 0, 0, 0, 0, 0, 0, 0, 1, 'R', 0, 1, 0x78, 0x10, 0x1b, 0 };
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
	B("indirect FDE pointers", bad_indirect, 0x10, "DW_EH_PE_indirect"),
	B("R without z", bad_no_z, 9, "augmentation 'R' in \"R\" without 'z' first"),
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
		else if (a == DW_OP_const1u || a == DW_OP_const2u || a == DW_OP_const4u ||
			 a == DW_OP_const8u || a == DW_OP_constu || a == DW_OP_const1s ||
			 a == DW_OP_const2s || a == DW_OP_const4s || a == DW_OP_const8s ||
			 a == DW_OP_consts)
			st[sp++] = ops[i].number;
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

/* ---- mutations: every damaged variant of valid sections, judged by libdw ----
 *
 * At every pc, ours (ehf_parse + ehf_row_at) against libdw's CFI reader
 * (dwarf_cfi_addrframe) over the same bytes in an ELF file.  Ours reads a
 * section whole and refuses it for any bad record, libdw reads the FDE of the
 * pc lazily: a row only libdw gives is that documented difference.  A CFA
 * expression either reader cannot use ("unusable") counts as no CFA on both
 * sides.  The disagreements left are the listed classes below, each judged
 * against the DWARF 5 / LSB .eh_frame rules; each must stay that small (measured:
 * 132 and 119 pcs). */

enum mut_class {
	MUT_ULEB_PAST_EXPR,   /* both give a row, CFA rules differ */
	MUT_RESTORE_IN_CIE,   /* libdw refuses, ours gives a row */
	MUT_NCLASS,
};

/* A CFA expression whose last operand (a ULEB) is missing or runs past the
 * expression's block: libdw's get_uleb128 reads it as UINT64_MAX and
 * evaluates; ours refuses the expression (DWARF 5 6.4.2: the block's length
 * bounds the expression) -- ours right.
 * DW_CFA_restore in a CIE's initial instructions: libdw refuses the CIE
 * (libdw/cfi.c: "can't be used in the CIE's own initial instructions"); ours,
 * like libgcc's execute_cfa_program, resets the register to its initial
 * rule, as binutils readelf --debug-dump=frames-interp shows it ("u") -- DWARF 5
 * 6.4.2.3 does not forbid it: both defensible, libdw stricter. */
static const struct { const char *what; int max; } mut_classes[MUT_NCLASS] = {
	[MUT_ULEB_PAST_EXPR] = { "CFA expression operand runs past its block: libdw reads"
				 " UINT64_MAX", 140 },
	[MUT_RESTORE_IN_CIE] = { "DW_CFA_restore in the CIE's initial instructions: libdw"
				 " refuses the CIE", 130 },
};

struct judged {
	int both, differ, dw_only, ours_only, neither;
	int cls[MUT_NCLASS];
	char first[200];   /* the first disagreement outside the classes */
};

/* The CFA rule of a row as text, the same way for both readers. */
static void cfa_text_us(const struct ehf_row *row, char *buf, size_t n, struct ju_err *err)
{
	uint64_t v = 0;
	if (row->cfa_kind == EHF_CFA_REG_OFF)
		snprintf(buf, n, "r%u%+" PRId64, row->cfa_reg, row->cfa_off);
	else if (ehf_eval_expr(row->cfa_expr, row->cfa_expr_len, &fake_ctx, false, 0, &v, err) == 0)
		snprintf(buf, n, "value 0x%" PRIx64, v);
	else
		snprintf(buf, n, "unusable");
}

/* *trunc: an operand of libdw's CFA expression is UINT64_MAX, what libdw's
 * get_uleb128 returns when the ULEB runs past the block (libdw) */
static void cfa_text_dw(Dwarf_Frame *fr, char *buf, size_t n, bool *trunc)
{
	Dwarf_Op *ops;
	size_t nops;
	uint64_t v;
	bool is_val;
	*trunc = false;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops == 0) {
		snprintf(buf, n, "unusable");   /* libdw refuses the expression */
		return;
	}
	for (size_t i = 0; i < nops; i++)
		*trunc |= ops[i].number == UINT64_MAX;
	if (nops == 1 && ops[0].atom == DW_OP_bregx)
		snprintf(buf, n, "r%" PRIu64 "%+" PRId64, (uint64_t)ops[0].number, (int64_t)ops[0].number2);
	else if (dw_eval(ops, nops, 0, &is_val, &v) == 0)
		snprintf(buf, n, "value 0x%" PRIx64, v);
	else
		snprintf(buf, n, "unusable");
}

/* Does the CIE's initial program hold a DW_CFA_restore or restore_extended? */
static bool cie_has_restore(const struct ehf_cie *cie)
{
	for (size_t i = 0; i < cie->insns_len; i++) {
		struct ju_err err;
		char line[64];
		size_t pos = i;
		if (ehf_disasm_insn(cie->insns, cie->insns_len, &pos, cie, line, sizeof(line), &err))
			break;
		if (strstr(line, "DW_CFA_restore") && !strstr(line, "restore_state"))
			return true;
		i = pos - 1;
	}
	return false;
}

/* One pc's verdict; returns the listed class, -1 for none, or MUT_NCLASS for
 * an unlisted disagreement. */
static int judge_pc(const struct ehf_fde *f, const char *us, const char *dw, const char *why,
		    bool dw_trunc, struct judged *j)
{
	bool ours = strcmp(us, "none") != 0, has_dw = strcmp(dw, "none") != 0;
	if (!ours) {
		if (has_dw)
			j->dw_only++;
		else
			j->neither++;
		return -1;
	}
	if (has_dw && !strcmp(dw, us)) {
		j->both++;
		return -1;
	}
	if (has_dw) {
		j->differ++;
		if (!strcmp(us, "unusable") && dw_trunc)
			return MUT_ULEB_PAST_EXPR;
		return MUT_NCLASS;
	}
	j->ours_only++;
	if (why && !strcmp(why, "invalid CFI section") && cie_has_restore(f->cie))
		return MUT_RESTORE_IN_CIE;
	return MUT_NCLASS;
}

static void mutant(const struct elfsec *s, const struct ehf_bases *b, struct judged *j)
{
	exercise(s->eh_bytes, s->eh_size, b);   /* every entry point, under ASan */
	int fd;
	Elf *elf = write_elf(s, &fd);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
	struct ehf_table tab;
	struct ju_err err;
	bool parsed = ehf_parse(&tab, s->eh_bytes, s->eh_size, b, &err) == 0;
	for (uint64_t pc = s->text; pc < s->text + s->text_size; pc++) {
		const struct ehf_fde *f = parsed ? ehf_find_fde(&tab, pc) : NULL;
		struct ehf_row row;
		Dwarf_Frame *fr = NULL;
		char dw[64] = "none", us[64] = "none";
		const char *why = cfi ? NULL : "no CFI";
		bool dw_trunc = false;
		if (cfi && dwarf_cfi_addrframe(cfi, pc, &fr) == 0)
			cfa_text_dw(fr, dw, sizeof(dw), &dw_trunc);
		else if (cfi)
			why = dwarf_errmsg(-1);
		free(fr);
		if (f && ehf_row_at(f, pc, &row, &err) == 0 && row.cfa_defined)
			cfa_text_us(&row, us, sizeof(us), &err);
		int c = judge_pc(f, us, dw, why, dw_trunc, j);
		if (c >= 0 && getenv("EHF_MUT_DEBUG")) {
			fprintf(stderr, "MUT %s|pc 0x%" PRIx64 "|%s|%s|%s|%d|", s->name, pc, dw, us,
				why ? why : "", c);
			for (size_t i = 0; i < s->eh_size; i++)
				fprintf(stderr, "%02x", s->eh_bytes[i]);
			fprintf(stderr, "\n");
		}
		if (c >= 0 && c < MUT_NCLASS)
			j->cls[c]++;
		else if (c == MUT_NCLASS && !j->first[0])
			snprintf(j->first, sizeof(j->first), "%s pc 0x%" PRIx64 ": libdw CFA %s (%s),"
				 " ours %s", s->name, pc, dw, why ? why : "a row", us);
	}
	if (parsed)
		ehf_table_free(&tab);
	if (cfi)
		dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
}

static void mutate_all(struct judged *j)
{
	static const uint8_t vals[] = { 0x00, 0x01, 0x02, 0x0f, 0x2d, 0x3f, 0x40, 0x7f, 0x80,
					0x9b, 0xc0, 0xfe, 0xff };
	static struct elfsec src[2], m;
	build_elfsec(0, &src[0]);   /* the CPython section, x86_64 */
	build_elfsec(1, &src[1]);   /* the arm64 program */
	struct ehf_bases bases[2] = { { src[0].eh, src[0].text, 0, 8 }, { src[1].eh, src[1].text, 0, 8 } };
	for (int s = 0; s < 2; s++) {
		for (size_t n = 0; n <= src[s].eh_size; n++) {   /* every truncation */
			m = src[s];
			m.eh_size = n;
			mutant(&m, &bases[s], j);
		}
		for (size_t i = 0; i < src[s].eh_size; i++) {    /* every byte, 21 values */
			for (size_t k = 0; k < sizeof(vals) + 8; k++) {
				m = src[s];
				m.eh_bytes[i] = k < sizeof(vals) ? vals[k] : m.eh_bytes[i] ^ (uint8_t)(1u << (k - sizeof(vals)));
				mutant(&m, &bases[s], j);
			}
		}
	}
	/* random multi-byte damage: a fixed seed and count, reproducible */
	uint64_t x = 0x9e3779b97f4a7c15u;
	for (int it = 0; it < 3000; it++) {
		int s = it & 1;
		m = src[s];
		for (int k = 0; k < 3; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			m.eh_bytes[x % m.eh_size] = (uint8_t)(x >> 32);
		}
		mutant(&m, &bases[s], j);
	}
}

START_TEST(test_mutations)
{
	struct judged j = { 0 };
	mutate_all(&j);
	fprintf(stderr, "ehframe: mutations: %d pcs with a row from both readers (%d CFA rules"
		" differ), %d only libdw's, %d only ours, %d neither; listed: %d, %d (EHF_MUT_DEBUG=1"
		" prints each)\n", j.both, j.differ, j.dw_only, j.ours_only, j.neither,
		j.cls[MUT_ULEB_PAST_EXPR], j.cls[MUT_RESTORE_IN_CIE]);
	ck_assert_msg(j.differ == j.cls[MUT_ULEB_PAST_EXPR], "%d pcs where libdw and ours give"
		      " different CFA rules outside the listed classes (first: %s)",
		      j.differ - j.cls[MUT_ULEB_PAST_EXPR], j.first);
	ck_assert_msg(j.ours_only == j.cls[MUT_RESTORE_IN_CIE], "%d pcs where libdw refuses and"
		      " ours gives a row outside the listed classes (first: %s)",
		      j.ours_only - j.cls[MUT_RESTORE_IN_CIE], j.first);
	for (int c = 0; c < MUT_NCLASS; c++)
		ck_assert_msg(j.cls[c] <= mut_classes[c].max, "listed class \"%s\": %d pcs, at most"
			      " %d expected", mut_classes[c].what, j.cls[c], mut_classes[c].max);
	ck_assert_int_gt(j.both, 50000);   /* the comparison ran on rows, not only refusals */
	ck_assert_int_gt(j.dw_only + j.neither, 1000);   /* and on refusals */
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
