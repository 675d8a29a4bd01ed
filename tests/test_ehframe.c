/* Check suite for unwinders/model/ehframe.c.  Sections are built by hand (CPython's
 * trampoline FDE byte for byte) and every row is checked twice: against the
 * expectations written here, and against an independent decoder, libdw's CFI
 * reader, on an ELF written with libelf holding the same bytes. */
#include "unwinders/model/ehframe.h"
#include "unwinders/model/leb.h"
#include "trampolines/buf.h"
#include "unwinders/uwarch.h"
#include "harness/run/cfarow.h"

#include <check.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* ---- CPython 3.12+ x86_64 trampoline, at genelf's layout ---- */

#define CPY_TEXT 0x80
#define CPY_EH 0x88   /* ALIGN_8(0x80 + 8) */

/* Python/asm_trampoline.S */
static const uint8_t cpy_code[] = {
	0x55,                   /* 0: push %rbp */
	0x48, 0x89, 0xe5,       /* 1: mov %rsp,%rbp */
	0xff, 0xd1,             /* 4: call *%rcx */
	0x5d,                   /* 6: pop %rbp */
	0xc3,                   /* 7: ret */
};

/* The CIE as Python/perf_jit_trampoline.c writes it */
#define CPY_CIE \
	0x14, 0x00, 0x00, 0x00,  /* 0x00 length 20 */ \
	0x00, 0x00, 0x00, 0x00,  /* 0x04 CIE id */ \
	0x01,                    /* 0x08 version 1 */ \
	'z', 'R', 0x00,          /* 0x09 augmentation */ \
	0x01,                    /* 0x0c code_align 1 */ \
	0x78,                    /* 0x0d data_align -8 */ \
	0x10,                    /* 0x0e RA column 16 */ \
	0x01,                    /* 0x0f augmentation data length */ \
	0x1b,                    /* 0x10 R: pcrel|sdata4 */ \
	0x0c, 0x07, 0x08,        /* 0x11 def_cfa r7+8 */ \
	0x90, 0x01,              /* 0x14 offset r16 at cfa-8 */ \
	0x00, 0x00               /* 0x16 nop; nop */

static const uint8_t cpy_eh[] = {
	CPY_CIE,
	0x1c, 0x00, 0x00, 0x00,  /* 0x18 FDE length 28 */
	0x1c, 0x00, 0x00, 0x00,  /* 0x1c CIE pointer: 0x1c - 0x1c = CIE at 0 */
	0xd8, 0xff, 0xff, 0xff,  /* 0x20 pc_begin: 0x88 + 0x20 - 0x28 = 0x80 */
	0x08, 0x00, 0x00, 0x00,  /* 0x24 pc_range 8 */
	0x00,                    /* 0x28 augmentation data length */
	0x41,                    /* 0x29 advance_loc 1 */
	0x0e, 0x10,              /* 0x2a def_cfa_offset 16 */
	0x86, 0x02,              /* 0x2c offset r6 at cfa-16 */
	0x43,                    /* 0x2e advance_loc 3 */
	0x0d, 0x06,              /* 0x2f def_cfa_register r6 */
	0x43,                    /* 0x31 advance_loc 3 */
	0x0c, 0x07, 0x08,        /* 0x32 def_cfa r7+8 */
	0x00, 0x00, 0x00,        /* 0x35 nops */
	0x00, 0x00, 0x00, 0x00,  /* 0x38 terminator */
};

static const struct ehf_bases cpy_bases = { CPY_EH, CPY_TEXT, 0, 8 };

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

static void parse_ok(struct ehf_table *t, const uint8_t *data, size_t size,
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

struct rows_seen {
	uint64_t loc[16], end[16];
	uint16_t cfa_reg[16];
	int n;
};

static int rows_cb(const struct ehf_row *row, void *arg)
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

/* ---- a small section writer for the other programs ---- */

struct tb {
	uint8_t b[1024];
	size_t n;
};

static void tb_u8(struct tb *t, uint8_t v)
{
	ck_assert_uint_lt(t->n, sizeof(t->b));
	t->b[t->n++] = v;
}

static void tb_le(struct tb *t, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		tb_u8(t, (uint8_t)(v >> (8 * i)));
}

static void tb_uleb(struct tb *t, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;
		v >>= 7;
		tb_u8(t, b | (v ? 0x80 : 0));
	} while (v);
}

static void tb_sleb(struct tb *t, int64_t v)
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

static void tb_raw(struct tb *t, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tb_u8(t, p[i]);
}

static void tb_patch_len(struct tb *t, size_t len_at)
{
	uint64_t len = t->n - len_at - 4;
	for (int i = 0; i < 4; i++)
		t->b[len_at + i] = (uint8_t)(len >> (8 * i));
}

/* Pad the record with DW_CFA_nop to a multiple of 4, then patch its length. */
static void tb_close(struct tb *t, size_t len_at)
{
	while ((t->n - len_at) % 4)
		tb_u8(t, DW_CFA_nop);
	tb_patch_len(t, len_at);
}

struct cie_spec {
	uint8_t version;
	const char *aug;          /* only z and R are written by tb_cie */
	uint64_t code_align;
	int64_t data_align;
	unsigned ra;
	uint8_t fde_enc;
	const uint8_t *insns;
	size_t ninsns;
};

static size_t tb_cie(struct tb *t, const struct cie_spec *c)
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
static size_t tb_fde_open(struct tb *t, size_t cie_at, uint64_t sec, uint64_t pc, uint32_t range,
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
static size_t tb_fde(struct tb *t, size_t cie_at, uint64_t sec, uint64_t pc, uint32_t range,
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

/* ---- arm64-style program: advance_loc1/2/4, remember/restore, expressions ---- */

#define A64_TEXT 0x80
#define A64_SIZE 40
#define A64_EH 0xa8   /* ALIGN_8(0x80 + 40) */

static const uint8_t a64_cie_insns[] = {
	0x0c, 0x1f, 0x00,             /* def_cfa r31+0 */
};
static const uint8_t a64_fde_insns[] = {
	0x02, 0x01,                   /* advance_loc1 1 (x4): 4 */
	0x0e, 0x10,                   /* def_cfa_offset 16 */
	0x9d, 0x02,                   /* offset r29 at cfa-16 */
	0x9e, 0x01,                   /* offset r30 at cfa-8 */
	0x03, 0x02, 0x00,             /* advance_loc2 2: 12 */
	0x0a,                         /* remember_state */
	0x0d, 0x1d,                   /* def_cfa_register r29 */
	0x14, 0x13, 0x04,             /* val_offset r19 is cfa-32 */
	0x04, 0x03, 0x00, 0x00, 0x00, /* advance_loc4 3: 24 */
	0x0b,                         /* restore_state */
	0x2d,                         /* AARCH64_negate_ra_state */
	0x41,                         /* advance_loc 1: 28 */
	0x0f, 0x04, 0x8f, 0x10, 0x23, 0x10, /* def_cfa_expression [breg31 16; plus_uconst 16] */
	0xdd,                         /* restore r29 */
	0x41,                         /* advance_loc 1: 32 */
	0x12, 0x1f, 0x7c,             /* def_cfa_sf r31, -4 (x-8 = 32) */
	0x11, 0x13, 0x7d,             /* offset_extended_sf r19, -3 (x-8: cfa+24) */
	0x09, 0x14, 0x15,             /* register r20 in r21 */
	0x07, 0x1e,                   /* undefined r30 */
	0x08, 0x1d,                   /* same_value r29 */
	0x2e, 0x10,                   /* GNU_args_size 16 */
	0x41,                         /* advance_loc 1: 36 */
	0x10, 0x13, 0x02, 0x38, 0x1c, /* expression r19 [lit8; minus] */
	0x16, 0x14, 0x02, 0x23, 0x08, /* val_expression r20 [plus_uconst 8] */
};

static const struct cie_spec a64_cie = {
	1, "zR", 4, -8, 30, DW_EH_PE_pcrel | DW_EH_PE_sdata4, a64_cie_insns, sizeof(a64_cie_insns),
};

static size_t build_a64(struct tb *t)
{
	t->n = 0;
	size_t cie = tb_cie(t, &a64_cie);
	tb_fde(t, cie, A64_EH, A64_TEXT, A64_SIZE, true, a64_fde_insns, sizeof(a64_fde_insns), NULL);
	tb_le(t, 0, 4);
	return t->n;
}

#define SP 31
#define REGVAL(r) (UINT64_C(0x10000) + (uint64_t)(r) * 0x100)

static int fake_read_reg(void *arg, unsigned r, uint64_t *v)
{
	if (r >= EHF_NREGS)
		return -1;
	*v = REGVAL(r);
	return 0;
}

static int fake_read_mem(void *arg, uint64_t addr, uint64_t *v)
{
	if (addr < 0x1000)
		return -1;  /* the null page faults */
	*v = addr ^ UINT64_C(0x5555);
	return 0;
}

static const struct ehf_expr_ctx fake_ctx = { fake_read_reg, fake_read_mem, NULL };

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

#define PLR_TEXT 0x80
#define PLR_EH 0x88
#define PLR_PERS 0x2000   /* a GOT slot holding the personality routine */
#define PLR_LSDA 0x3000

static size_t build_plr(struct tb *t, size_t *prog_at)
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

#define SL_TEXT 0x80
#define SL_EH 0xa0

static size_t build_setloc(struct tb *t)
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

/* ---- .eh_frame_hdr ---- */

struct hdr_ent {
	uint64_t loc, fde;
};

static const struct hdr_ent hdr_tab[] = {
	{ 0x1000, 0x5000 }, { 0x1100, 0x5020 }, { 0x1200, 0x5040 },
};

/* version 1, eh_frame_ptr pcrel|sdata4, fde_count udata4, then the table. */
static size_t build_hdr(struct tb *t, uint8_t table_enc, uint64_t hdr_addr, uint64_t eh_addr,
			uint64_t count, const struct hdr_ent *e, size_t n)
{
	t->n = 0;
	tb_u8(t, 1);
	tb_u8(t, DW_EH_PE_pcrel | DW_EH_PE_sdata4);
	tb_u8(t, DW_EH_PE_udata4);
	tb_u8(t, table_enc);
	tb_le(t, eh_addr - (hdr_addr + 4), 4);
	tb_le(t, count, 4);
	int size = (table_enc & 0x0f) == DW_EH_PE_sdata8 || (table_enc & 0x0f) == DW_EH_PE_udata8
		   ? 8 : 4;
	for (size_t i = 0; i < n; i++) {
		tb_le(t, e[i].loc - hdr_addr, size);
		tb_le(t, e[i].fde - hdr_addr, size);
	}
	return t->n;
}

static const struct {
	uint8_t enc;
	uint64_t hdr_addr;        /* 0x6000: every entry is negative datarel */
} hdr_encs[] = {
	{ DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000 },
	{ DW_EH_PE_datarel | DW_EH_PE_sdata8, 0x6000 },
	{ DW_EH_PE_datarel | DW_EH_PE_udata4, 0x800 },
	{ DW_EH_PE_datarel | DW_EH_PE_udata8, 0x800 },
	{ DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x800 },
};

static const struct {
	uint64_t pc;
	int64_t fde;              /* -1: no entry */
} hdr_lookups[] = {
	{ 0xfff, -1 }, { 0, -1 }, { 0x1000, 0x5000 }, { 0x10ff, 0x5000 }, { 0x1100, 0x5020 },
	{ 0x11ff, 0x5020 }, { 0x1200, 0x5040 }, { UINT64_MAX, 0x5040 },
};

#define NLOOKUPS (int)(sizeof(hdr_lookups) / sizeof(hdr_lookups[0]))

START_TEST(test_hdr_lookup)
{
	int e = _i / NLOOKUPS, k = _i % NLOOKUPS;
	struct tb t;
	struct ehf_hdr h;
	struct ju_err err = { 0 };
	uint64_t ha = hdr_encs[e].hdr_addr;
	size_t n = build_hdr(&t, hdr_encs[e].enc, ha, 0x4000, 3, hdr_tab, 3);
	uint8_t *d = malloc(n);
	memcpy(d, t.b, n);
	ck_assert_msg(ehf_parse_hdr(d, n, ha, &h, &err) == 0, "%s", err.msg);
	ck_assert(h.has_table);
	ck_assert_uint_eq(h.eh_frame_ptr, 0x4000);
	ck_assert_uint_eq(h.fde_count, 3);
	ck_assert_uint_eq(h.table_off, 12);
	unsigned vf = hdr_encs[e].enc & 0x0f;
	ck_assert_uint_eq(h.entry_size, vf == DW_EH_PE_udata8 || vf == DW_EH_PE_sdata8 ? 16 : 8);
	uint64_t fde = 0;
	int rc = ehf_hdr_lookup(d, n, ha, &h, hdr_lookups[k].pc, &fde, &err);
	if (hdr_lookups[k].fde < 0) {
		ck_assert_int_eq(rc, -ENOENT);
		ck_assert_ptr_nonnull(strstr(err.msg, "before the first table entry"));
	} else {
		ck_assert_msg(rc == 0, "%s", err.msg);
		ck_assert_uint_eq(fde, (uint64_t)hdr_lookups[k].fde);
	}
	free(d);
}
END_TEST

START_TEST(test_hdr_errors)
{
	struct tb t;
	struct ehf_hdr h;
	struct ju_err err = { 0 };
	uint64_t fde;
	/* fde_count says 4, the table holds 3 */
	size_t n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000, 0x4000, 4, hdr_tab, 3);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	ck_assert_uint_eq(err.offset, 12);
	ck_assert_msg(strstr(err.msg, "fde_count 4"), "%s", err.msg);
	/* a huge count must not overflow the size check */
	n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata8, 0x6000, 0x4000, 0xffffffff, hdr_tab, 3);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	/* lookup re-checks a header that does not match the bytes */
	n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000, 0x4000, 3, hdr_tab, 3);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), 0);
	ck_assert_int_eq(ehf_hdr_lookup(t.b, n - 1, 0x6000, &h, 0x1200, &fde, &err), -EINVAL);
	/* version 2 */
	t.b[0] = 2;
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "version 2"));
	t.b[0] = 1;
	/* truncated before the table encodings */
	ck_assert_int_eq(ehf_parse_hdr(t.b, 3, 0x6000, &h, &err), -EINVAL);
	ck_assert_uint_eq(err.offset, 3);
	/* a LEB128 table cannot be searched */
	t.b[3] = DW_EH_PE_datarel | DW_EH_PE_uleb128;
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no fixed-size"));
	/* omitted table or count: parsed, but no table to search */
	t.b[3] = DW_EH_PE_omit;
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), 0);
	ck_assert(!h.has_table);
	ck_assert_uint_eq(h.fde_count, 3);
	ck_assert_int_eq(ehf_hdr_lookup(t.b, n, 0x6000, &h, 0x1200, &fde, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "no search table"));
	t.b[3] = DW_EH_PE_datarel | DW_EH_PE_sdata4;
	t.b[2] = DW_EH_PE_omit;
	ck_assert_int_eq(ehf_parse_hdr(t.b, 8, 0x6000, &h, &err), 0);
	ck_assert(!h.has_table);
	ck_assert_uint_eq(h.fde_count, 0);
	/* an empty table: parsed, every lookup fails */
	n = build_hdr(&t, DW_EH_PE_datarel | DW_EH_PE_sdata4, 0x6000, 0x4000, 0, NULL, 0);
	ck_assert_int_eq(ehf_parse_hdr(t.b, n, 0x6000, &h, &err), 0);
	ck_assert_int_eq(ehf_hdr_lookup(t.b, n, 0x6000, &h, 0x1200, &fde, &err), -ENOENT);
}
END_TEST

/* The 20-byte header CPython and V8 write right after .eh_frame, resolved
 * to the FDE the parser found. */
START_TEST(test_hdr_cpython)
{
	const uint64_t ha = CPY_EH + sizeof(cpy_eh);
	const int32_t fde_rel = (int32_t)(CPY_EH + 0x18 - ha);
	uint8_t hdr[20] = { 1, 0x1b, 0x03, 0x3b };
	int32_t v[4] = { -(int32_t)(sizeof(cpy_eh) + 4), 1, (int32_t)(CPY_TEXT - ha), fde_rel };
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			hdr[4 + 4 * i + j] = (uint8_t)((uint32_t)v[i] >> (8 * j));
	struct ehf_hdr h;
	struct ju_err err = { 0 };
	uint64_t fde;
	ck_assert_msg(ehf_parse_hdr(hdr, sizeof(hdr), ha, &h, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(h.eh_frame_ptr, CPY_EH);
	ck_assert_int_eq(ehf_hdr_lookup(hdr, sizeof(hdr), ha, &h, CPY_TEXT + 3, &fde, &err), 0);
	struct ehf_table t;
	parse_ok(&t, cpy_eh, sizeof(cpy_eh), &cpy_bases);
	ck_assert_uint_eq(fde - h.eh_frame_ptr, ehf_find_fde(&t, CPY_TEXT + 3)->offset);
	ehf_table_free(&t);
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
	tcase_add_test(tc, test_hdr_cpython);
	suite_add_tcase(s, tc);

	tc = tcase_create("interpreter");
	tcase_add_loop_test(tc, test_a64_rows, 0, sizeof(a64_rows) / sizeof(a64_rows[0]));
	tcase_add_test(tc, test_a64_rows_iter);
	tcase_add_test(tc, test_a64_disasm);
	tcase_add_test(tc, test_setloc);
	tcase_add_test(tc, test_plr);
	tcase_add_test(tc, test_multi_sorted);
	tcase_add_test(tc, test_row_at_outside);
	tcase_add_loop_test(tc, test_bad_prog, 0, sizeof(bad_progs) / sizeof(bad_progs[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("expressions");
	tcase_add_loop_test(tc, test_expr, 0, sizeof(expr_cases) / sizeof(expr_cases[0]));
	tcase_add_test(tc, test_expr_stack_overflow);
	tcase_add_loop_test(tc, test_encoded, 0, sizeof(enc_cases) / sizeof(enc_cases[0]));
	tcase_add_test(tc, test_encoded_ptr4);
	suite_add_tcase(s, tc);

	tc = tcase_create("malformed");
	tcase_add_loop_test(tc, test_bad_section, 0, sizeof(bad_cases) / sizeof(bad_cases[0]));
	tcase_add_test(tc, test_mutations);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("eh_frame_hdr");
	tcase_add_loop_test(tc, test_hdr_lookup, 0,
			    (int)(sizeof(hdr_encs) / sizeof(hdr_encs[0])) * NLOOKUPS);
	tcase_add_test(tc, test_hdr_errors);
	suite_add_tcase(s, tc);

	tc = tcase_create("libdw");
	tcase_add_loop_test(tc, test_libdw_crosscheck, 0, NELFSECS);
	suite_add_tcase(s, tc);

	tc = tcase_create("speed");
	tcase_add_test(tc, test_row_at_speed);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
