/* fuzz-cfi: the FDE's CFA program for a generated trampoline, each row
 * change written in a form drawn from the tape (choice 0 is always the
 * smallest form, what trampolines/cfi.c derives): advance_loc / 1 / 2 / 4
 * and split advances, def_cfa vs def_cfa_register + def_cfa_offset and the
 * _sf forms, CFA and register expressions, remember/restore_state (around the
 * skipped early exit, and where a row returns to a remembered one),
 * restore / restore_extended / same_value, val_offset and val_expression of
 * SP, DW_CFA_nop padding.  Every form states the same rows (the truth's). */
#include <dwarf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "harness/fuzz/fuzzcfi.h"
#include "trampolines/buf.h"
#include "juerr.h"

#define ENC_STATE_MAX 8
#define ENC_PROG_MAX 320     /* a case line holds the hex of the program */

enum col_kind { COL_SAME, COL_OFFSET };

/* What a reader's row holds after the program so far. */
struct cstate {
	bool expr;                    /* CFA by expression: no def_cfa_offset/register next */
	int cfa_reg;
	int64_t cfa_off;
	uint8_t kind[TR_NREGS];
	int64_t v[TR_NREGS];
	/* a register rule written as DW_OP_breg of the CFA register: valid only
	 * while the CFA stays what it was (then the rule is written again) */
	bool breg[TR_NREGS];
	int breg_cfa_reg[TR_NREGS];
	int64_t breg_cfa_off[TR_NREGS];
};

struct enc {
	struct tr_row rows[TR_MAX_INSNS];   /* the truth's rows (hx_fz_cfi_rows) */
	bool dead[TR_MAX_INSNS];            /* which of them are dead code */
	const struct tr_arch *a;
	struct hx_fz_tape *t;
	struct hx_fz_prog *p;
	struct cstate cur, init;
	struct cstate stack[ENC_STATE_MAX];
	bool stack_pad[ENC_STATE_MAX];
	int depth;
	uint32_t loc;
	int row;                      /* the op whose row is being stated */
	uint16_t row_k;               /* instructions written for it so far */
	bool plant, planted;
	bool overflow;
};

struct ib {                           /* one instruction being built */
	uint8_t b[24];
	size_t len;
	bool overflow;
};

static void ib_u8(struct ib *x, uint8_t v)
{
	if (x->len < sizeof(x->b))
		x->b[x->len++] = v;
	else
		x->overflow = true;
}

/* LEB128 through the JIT side's one writer (trampolines/buf.h) */
static void ib_leb(struct ib *x, uint64_t v, bool sign)
{
	uint8_t t[TR_LEB_MAX];
	size_t n = tr_leb_put(t, v, sign);
	for (size_t i = 0; i < n; i++)
		ib_u8(x, t[i]);
}

static void ib_uleb(struct ib *x, uint64_t v)
{
	ib_leb(x, v, false);
}

static void ib_sleb(struct ib *x, int64_t v)
{
	ib_leb(x, (uint64_t)v, true);
}

static void ib_le(struct ib *x, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		ib_u8(x, (uint8_t)(v >> (8 * i)));
}

__attribute__((format(printf, 4, 5)))
static void put(struct enc *e, const struct ib *x, enum hx_fz_feature f, const char *fmt, ...)
{
	if (e->p->n >= HX_FZ_MAX_INSNS || x->overflow) {
		e->overflow = true;
		return;
	}
	struct hx_fz_insn *in = &e->p->insn[e->p->n++];
	memcpy(in->bytes, x->b, x->len);
	in->len = (uint8_t)x->len;
	in->ref = (struct hx_fz_ref){ (int16_t)e->row, e->row_k++ };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(in->text, sizeof(in->text), fmt, ap);
	va_end(ap);
	e->p->features |= 1ull << f;
}

static uint32_t ch(struct enc *e, uint32_t n)
{
	return hx_fz_choose(e->t, n);
}

static bool rare(struct enc *e, uint32_t n)
{
	return hx_fz_rare(e->t, n);
}

/* ---- locations ---- */

static void adv_one(struct enc *e, uint64_t d)
{
	/* the forms that hold d, smallest first */
	uint8_t forms[4];
	int n = 0;
	if (d < 0x40)
		forms[n++] = DW_CFA_advance_loc;
	if (d <= 0xff)
		forms[n++] = DW_CFA_advance_loc1;
	if (d <= 0xffff)
		forms[n++] = DW_CFA_advance_loc2;
	forms[n++] = DW_CFA_advance_loc4;
	uint8_t f = forms[ch(e, (uint32_t)n)];
	struct ib x = { .len = 0 };
	uint64_t bytes = d * e->a->code_align;
	switch (f) {
	case DW_CFA_advance_loc:
		ib_u8(&x, (uint8_t)(DW_CFA_advance_loc | d));
		put(e, &x, FZF_ADV, "advance_loc %llu", (unsigned long long)bytes);
		break;
	case DW_CFA_advance_loc1:
		ib_u8(&x, f);
		ib_le(&x, d, 1);
		put(e, &x, FZF_ADV1, "advance_loc1 %llu", (unsigned long long)bytes);
		break;
	case DW_CFA_advance_loc2:
		ib_u8(&x, f);
		ib_le(&x, d, 2);
		put(e, &x, FZF_ADV2, "advance_loc2 %llu", (unsigned long long)bytes);
		break;
	default:
		ib_u8(&x, f);
		ib_le(&x, d, 4);
		put(e, &x, FZF_ADV4, "advance_loc4 %llu", (unsigned long long)bytes);
	}
}

static void advance_to(struct enc *e, uint32_t off)
{
	uint64_t d = (off - e->loc) / e->a->code_align;
	e->loc = off;
	if (!d)
		return;
	if (d >= 2 && rare(e, 6)) {
		uint64_t first = 1 + ch(e, (uint32_t)(d - 1 < 0xffff ? d - 1 : 0xffff));
		e->p->features |= 1ull << FZF_ADV_SPLIT;
		adv_one(e, first);
		adv_one(e, d - first);
		return;
	}
	adv_one(e, d);
}

/* ---- the CFA ---- */

static bool factored(int64_t off, int da, int64_t *f)
{
	if (off % da)
		return false;
	*f = off / da;
	return true;
}

static void def_cfa(struct enc *e, int reg, int64_t off, bool sf)
{
	struct ib x = { .len = 0 };
	int64_t f;
	if (sf && factored(off, e->a->data_align, &f)) {
		ib_u8(&x, DW_CFA_def_cfa_sf);
		ib_uleb(&x, (uint64_t)reg);
		ib_sleb(&x, f);
		put(e, &x, FZF_DEF_CFA_SF, "def_cfa_sf r%d, %lld", reg, (long long)off);
		return;
	}
	ib_u8(&x, DW_CFA_def_cfa);
	ib_uleb(&x, (uint64_t)reg);
	ib_uleb(&x, (uint64_t)off);
	put(e, &x, FZF_DEF_CFA, "def_cfa r%d, %lld", reg, (long long)off);
}

static void def_cfa_register(struct enc *e, int reg)
{
	struct ib x = { .len = 0 };
	ib_u8(&x, DW_CFA_def_cfa_register);
	ib_uleb(&x, (uint64_t)reg);
	put(e, &x, FZF_DEF_CFA_REG, "def_cfa_register r%d", reg);
}

static void def_cfa_offset(struct enc *e, int64_t off, bool sf)
{
	struct ib x = { .len = 0 };
	int64_t f;
	if (sf && factored(off, e->a->data_align, &f)) {
		ib_u8(&x, DW_CFA_def_cfa_offset_sf);
		ib_sleb(&x, f);
		put(e, &x, FZF_DEF_CFA_OFF_SF, "def_cfa_offset_sf %lld", (long long)off);
		return;
	}
	ib_u8(&x, DW_CFA_def_cfa_offset);
	ib_uleb(&x, (uint64_t)off);
	put(e, &x, FZF_DEF_CFA_OFF, "def_cfa_offset %lld", (long long)off);
}

/* breg<reg>+off written as one of several equivalent DWARF expressions */
static void expr_breg(struct enc *e, struct ib *x, int reg, int64_t off, enum hx_fz_feature *f,
		      char *txt, size_t tl)
{
	uint32_t v = ch(e, 5);
	if (reg > 31 && v == 0)
		v = 1;
	switch (v) {
	case 0:
		ib_u8(x, (uint8_t)(DW_OP_breg0 + reg));
		ib_sleb(x, off);
		*f = FZF_CFA_EXPR_BREG;
		snprintf(txt, tl, "breg%d %+lld", reg, (long long)off);
		break;
	case 1:
		ib_u8(x, DW_OP_bregx);
		ib_uleb(x, (uint64_t)reg);
		ib_sleb(x, off);
		*f = FZF_CFA_EXPR_BREGX;
		snprintf(txt, tl, "bregx %d %+lld", reg, (long long)off);
		break;
	case 2:
		if (off >= 0 && reg <= 31) {
			ib_u8(x, (uint8_t)(DW_OP_breg0 + reg));
			ib_sleb(x, 0);
			ib_u8(x, DW_OP_plus_uconst);
			ib_uleb(x, (uint64_t)off);
			*f = FZF_CFA_EXPR_UCONST;
			snprintf(txt, tl, "breg%d 0; plus_uconst %lld", reg, (long long)off);
			break;
		}
		/* fall through */
	case 3:
		ib_u8(x, DW_OP_bregx);
		ib_uleb(x, (uint64_t)reg);
		ib_sleb(x, 0);
		ib_u8(x, DW_OP_consts);
		ib_sleb(x, off);
		ib_u8(x, DW_OP_plus);
		*f = FZF_CFA_EXPR_CONST;
		snprintf(txt, tl, "bregx %d 0; consts %lld; plus", reg, (long long)off);
		break;
	default:
		ib_u8(x, DW_OP_bregx);
		ib_uleb(x, (uint64_t)reg);
		ib_sleb(x, off + 8);
		ib_u8(x, DW_OP_lit8);
		ib_u8(x, DW_OP_minus);
		*f = FZF_CFA_EXPR_MINUS;
		snprintf(txt, tl, "bregx %d %+lld; lit8; minus", reg, (long long)(off + 8));
	}
}

static void def_cfa_expression(struct enc *e, int reg, int64_t off)
{
	struct ib body = { .len = 0 }, x = { .len = 0 };
	enum hx_fz_feature f;
	char txt[48];
	expr_breg(e, &body, reg, off, &f, txt, sizeof(txt));
	ib_u8(&x, DW_CFA_def_cfa_expression);
	ib_uleb(&x, body.len);
	for (size_t i = 0; i < body.len; i++)
		ib_u8(&x, body.b[i]);
	x.overflow |= body.overflow;
	put(e, &x, f, "def_cfa_expression {%s}", txt);
}

/* The CFA as want says, in a form the current rule allows. */
static void emit_cfa(struct enc *e, int reg, int64_t off)
{
	/* the planted lie: the fuzzer believes the CFI encodes the truth.  Every CFA
	 * it writes is 8 too high, not just the first: where the first change (an
	 * sp adjustment) comes while the return address is still in the link
	 * register, a wrong CFA alone changes no chain */
	if (e->plant) {
		off += 8;
		e->planted = true;
	}
	bool rch = reg != e->cur.cfa_reg, och = off != e->cur.cfa_off;
	if (!rch && !och)
		return;
	uint32_t form = ch(e, 6);
	if (e->cur.expr && (form == 0 || form == 3 || form == 4))
		form = 1;
	switch (form) {
	case 0:                                  /* smallest: what changed */
		if (rch && och)
			def_cfa(e, reg, off, false);
		else if (rch)
			def_cfa_register(e, reg);
		else
			def_cfa_offset(e, off, false);
		break;
	case 1:
		def_cfa(e, reg, off, false);
		break;
	case 2:
		def_cfa(e, reg, off, true);
		break;
	case 3:                                  /* register, then offset, or the reverse */
	case 4:
		if (ch(e, 2)) {
			if (och || rare(e, 4))
				def_cfa_offset(e, off, form == 4);
			if (rch || rare(e, 4))
				def_cfa_register(e, reg);
		} else {
			if (rch || rare(e, 4))
				def_cfa_register(e, reg);
			if (och || rare(e, 4))
				def_cfa_offset(e, off, form == 4);
		}
		break;
	default:
		def_cfa_expression(e, reg, off);
		e->cur.expr = true;
		e->cur.cfa_reg = reg;
		e->cur.cfa_off = off;
		return;
	}
	e->cur.expr = false;
	e->cur.cfa_reg = reg;
	e->cur.cfa_off = off;
}

/* ---- register columns ---- */

static void save_rule(struct enc *e, int c, int64_t v)
{
	struct ib x = { .len = 0 };
	int64_t f = 0;
	bool fact = factored(v, e->a->data_align, &f);
	uint32_t form = ch(e, 6);
	if (!fact && form < 3)
		form = 3;
	e->cur.breg[c] = false;
	switch (form) {
	case 0:
		if (c < 64 && f >= 0) {
			ib_u8(&x, (uint8_t)(DW_CFA_offset | c));
			ib_uleb(&x, (uint64_t)f);
			put(e, &x, FZF_OFFSET, "offset r%d, cfa%+lld", c, (long long)v);
			return;
		}
		/* fall through */
	case 1:
		if (f >= 0) {
			ib_u8(&x, DW_CFA_offset_extended);
			ib_uleb(&x, (uint64_t)c);
			ib_uleb(&x, (uint64_t)f);
			put(e, &x, FZF_OFFSET_EXT, "offset_extended r%d, cfa%+lld", c, (long long)v);
			return;
		}
		/* fall through */
	case 2:
		ib_u8(&x, DW_CFA_offset_extended_sf);
		ib_uleb(&x, (uint64_t)c);
		ib_sleb(&x, f);
		put(e, &x, FZF_OFFSET_EXT_SF, "offset_extended_sf r%d, cfa%+lld", c, (long long)v);
		return;
	case 3:
	case 4: {                                /* the address from the pushed CFA */
		struct ib b = { .len = 0 };
		char txt[40];
		if (v < 0 && v >= -31 && form == 3) {
			ib_u8(&b, (uint8_t)(DW_OP_lit0 - v));
			ib_u8(&b, DW_OP_minus);
			snprintf(txt, sizeof(txt), "lit%lld; minus", (long long)-v);
		} else {
			ib_u8(&b, DW_OP_consts);
			ib_sleb(&b, v);
			ib_u8(&b, DW_OP_plus);
			snprintf(txt, sizeof(txt), "consts %lld; plus", (long long)v);
		}
		ib_u8(&x, DW_CFA_expression);
		ib_uleb(&x, (uint64_t)c);
		ib_uleb(&x, b.len);
		for (size_t i = 0; i < b.len; i++)
			ib_u8(&x, b.b[i]);
		put(e, &x, FZF_EXPR_RULE, "expression r%d {cfa; %s}", c, txt);
		return;
	}
	default: {                               /* the address from the CFA's register */
		struct ib b = { .len = 0 };
		int64_t o = e->cur.cfa_off + v;
		if (e->cur.cfa_reg > 31) {
			ib_u8(&b, DW_OP_bregx);
			ib_uleb(&b, (uint64_t)e->cur.cfa_reg);
		} else {
			ib_u8(&b, (uint8_t)(DW_OP_breg0 + e->cur.cfa_reg));
		}
		ib_sleb(&b, o);
		ib_u8(&x, DW_CFA_expression);
		ib_uleb(&x, (uint64_t)c);
		ib_uleb(&x, b.len);
		for (size_t i = 0; i < b.len; i++)
			ib_u8(&x, b.b[i]);
		put(e, &x, FZF_EXPR_RULE_BREG, "expression r%d {breg%d %+lld}", c, e->cur.cfa_reg, (long long)o);
		e->cur.breg[c] = true;
		e->cur.breg_cfa_reg[c] = e->cur.cfa_reg;
		e->cur.breg_cfa_off[c] = e->cur.cfa_off;
	}
	}
}

/* back to the CIE's rule */
static void restore_rule(struct enc *e, int c)
{
	struct ib x = { .len = 0 };
	uint32_t form = ch(e, 3);
	e->cur.breg[c] = false;
	if (form == 2 && e->init.kind[c] == COL_SAME) {
		ib_u8(&x, DW_CFA_same_value);
		ib_uleb(&x, (uint64_t)c);
		put(e, &x, FZF_SAME_VALUE, "same_value r%d", c);
	} else if (form == 0 && c < 64) {
		ib_u8(&x, (uint8_t)(DW_CFA_restore | c));
		put(e, &x, FZF_RESTORE, "restore r%d", c);
	} else {
		ib_u8(&x, DW_CFA_restore_extended);
		ib_uleb(&x, (uint64_t)c);
		put(e, &x, FZF_RESTORE_EXT, "restore_extended r%d", c);
	}
}

static void state_of(const struct tr_arch *a, const struct tr_row *r, struct cstate *s)
{
	memset(s, 0, sizeof(*s));
	s->cfa_reg = r->cfa_reg;
	s->cfa_off = r->cfa_off;
	for (int c = 0; c < TR_NREGS; c++) {
		if (c == a->facts->dw_ra) {
			if (r->ra_where == TR_RA_AT_CFA) {
				s->kind[c] = COL_OFFSET;
				s->v[c] = r->ra_off;
			}
			continue;
		}
		if (r->saved_mask >> c & 1) {
			s->kind[c] = COL_OFFSET;
			s->v[c] = r->saved_off[c];
		}
	}
}

static bool col_eq(const struct cstate *x, const struct cstate *y, int c)
{
	if (x->kind[c] != y->kind[c] || x->v[c] != y->v[c])
		return false;
	/* a CFA-register expression is stale once the CFA moved */
	if (x->breg[c] && (x->breg_cfa_reg[c] != x->cfa_reg || x->breg_cfa_off[c] != x->cfa_off))
		return false;
	return true;
}

static bool state_eq(const struct cstate *x, const struct cstate *y)
{
	if (x->cfa_reg != y->cfa_reg || x->cfa_off != y->cfa_off)
		return false;
	for (int c = 0; c < TR_NREGS; c++)
		if (!col_eq(x, y, c))
			return false;
	return true;
}

/* SP's own rule, stated (its value is the CFA): no row needs it */
static void sp_rule(struct enc *e)
{
	struct ib x = { .len = 0 };
	int sp = e->a->facts->dw_sp;
	switch (ch(e, 3)) {
	case 0:
		ib_u8(&x, DW_CFA_val_offset);
		ib_uleb(&x, (uint64_t)sp);
		ib_uleb(&x, 0);
		put(e, &x, FZF_VAL_OFFSET, "val_offset r%d, 0", sp);
		break;
	case 1:
		ib_u8(&x, DW_CFA_val_offset_sf);
		ib_uleb(&x, (uint64_t)sp);
		ib_sleb(&x, 0);
		put(e, &x, FZF_VAL_OFFSET_SF, "val_offset_sf r%d, 0", sp);
		break;
	default:
		ib_u8(&x, DW_CFA_val_expression);
		ib_uleb(&x, (uint64_t)sp);
		ib_uleb(&x, 2);
		ib_u8(&x, DW_OP_lit0);
		ib_u8(&x, DW_OP_plus);
		put(e, &x, FZF_VAL_EXPR, "val_expression r%d {cfa; lit0; plus}", sp);
	}
}

/* A register the code never touches, with a rule saying so: the ABI's
 * numbers past the general registers (x86_64 xmm0-15, rflags, segment
 * registers; arm64 v0-v31), restored to the CIE's rule or same_value. */
static void other_reg_rule(struct enc *e)
{
	int r = e->a->fuzz.other_regs[ch(e, (uint32_t)e->a->fuzz.nother_regs)];
	struct ib b = { .len = 0 };
	switch (ch(e, 3)) {
	case 0:
		ib_u8(&b, DW_CFA_same_value);
		ib_uleb(&b, (uint64_t)r);
		put(e, &b, FZF_OTHER_REG, "same_value r%d", r);
		break;
	case 1:
		ib_u8(&b, DW_CFA_restore_extended);
		ib_uleb(&b, (uint64_t)r);
		put(e, &b, FZF_OTHER_REG, "restore_extended r%d", r);
		break;
	default:
		if (r < 64) {
			ib_u8(&b, (uint8_t)(DW_CFA_restore | r));
			put(e, &b, FZF_OTHER_REG, "restore r%d", r);
		} else {
			ib_u8(&b, DW_CFA_same_value);
			ib_uleb(&b, (uint64_t)r);
			put(e, &b, FZF_OTHER_REG, "same_value r%d", r);
		}
	}
}

static void extras(struct enc *e)
{
	if (rare(e, 12))
		sp_rule(e);
	if (rare(e, 30))
		other_reg_rule(e);
	if (rare(e, 24)) {
		struct ib x = { .len = 0 };
		ib_u8(&x, DW_CFA_GNU_args_size);
		ib_uleb(&x, 0);
		put(e, &x, FZF_ARGS_SIZE, "GNU_args_size 0");
	}
	for (uint32_t k = rare(e, 10) ? 1 + ch(e, 3) : 0; k > 0; k--) {
		struct ib x = { .len = 0 };
		ib_u8(&x, DW_CFA_nop);
		put(e, &x, FZF_NOP_PAD, "nop");
	}
}

static void emit_changes(struct enc *e, const struct cstate *want)
{
	emit_cfa(e, want->cfa_reg, want->cfa_off);
	for (int c = 0; c < TR_NREGS; c++) {
		if (col_eq(&e->cur, want, c)) {
			if (c == e->a->facts->dw_ra && want->kind[c] == COL_OFFSET && rare(e, 40)) {
				e->p->features |= 1ull << FZF_RESTATE;
				save_rule(e, c, want->v[c]);   /* restated, same rule */
			}
			continue;
		}
		if (want->kind[c] == e->init.kind[c] && want->v[c] == e->init.v[c])
			restore_rule(e, c);
		else
			save_rule(e, c, want->v[c]);
		e->cur.kind[c] = want->kind[c];
		e->cur.v[c] = want->v[c];
	}
}

static void remember(struct enc *e, bool pad)
{
	struct ib x = { .len = 0 };
	ib_u8(&x, DW_CFA_remember_state);
	put(e, &x, FZF_REMEMBER, "remember_state");
	e->stack[e->depth] = e->cur;
	e->stack_pad[e->depth++] = pad;
}

/* One row: nothing when the reader's row already is it. */
static void encode_row(struct enc *e, const struct tr_row *r, bool first_dead, bool first_pad)
{
	struct cstate want;
	state_of(e->a, r, &want);
	if (state_eq(&e->cur, &want) && !first_dead)
		return;
	advance_to(e, r->offset);
	if (first_dead && e->depth < ENC_STATE_MAX && ch(e, 3))
		remember(e, true);
	if (e->depth && state_eq(&e->stack[e->depth - 1], &want) &&
	    !rare(e, first_pad && e->stack_pad[e->depth - 1] ? 8 : 2)) {
		struct ib x = { .len = 0 };
		ib_u8(&x, DW_CFA_restore_state);
		put(e, &x, FZF_RESTORE_STATE, "restore_state");
		if (first_pad)
			e->p->features |= 1ull << FZF_PAD_RESTORE_STATE;
		e->cur = e->stack[--e->depth];
		extras(e);
		return;
	}
	if (!first_dead && e->depth < ENC_STATE_MAX && rare(e, 8))
		remember(e, false);
	emit_changes(e, &want);
	extras(e);
}

/* ---- deletion and mutation ---- */

static void drop_insn(struct hx_fz_prog *p, size_t k)
{
	if (k >= p->n)
		return;
	memmove(&p->insn[k], &p->insn[k + 1], (p->n - k - 1) * sizeof(p->insn[0]));
	p->n--;
}

static void insert_random(struct hx_fz_prog *p, size_t k, uint32_t a)
{
	if (p->n >= HX_FZ_MAX_INSNS || k > p->n)
		return;
	memmove(&p->insn[k + 1], &p->insn[k], (p->n - k) * sizeof(p->insn[0]));
	p->n++;
	struct hx_fz_insn *in = &p->insn[k];
	memset(in, 0, sizeof(*in));
	uint8_t v = (uint8_t)(a >> 8);
	switch (a % 8) {
	case 0: in->bytes[0] = DW_CFA_remember_state; in->len = 1; break;
	case 1: in->bytes[0] = DW_CFA_restore_state; in->len = 1; break;
	case 2: in->bytes[0] = DW_CFA_def_cfa_offset; in->bytes[1] = v & 0x7f; in->len = 2; break;
	case 3: in->bytes[0] = (uint8_t)(DW_CFA_offset | (v & 0x1f)); in->bytes[1] = v >> 5; in->len = 2; break;
	case 4: in->bytes[0] = DW_CFA_undefined; in->bytes[1] = v & 0x1f; in->len = 2; break;
	case 5: in->bytes[0] = (uint8_t)(DW_CFA_advance_loc | (v & 0x3f)); in->len = 1; break;
	case 6: in->bytes[0] = DW_CFA_def_cfa_register; in->bytes[1] = v & 0x1f; in->len = 2; break;
	default: in->bytes[0] = DW_CFA_same_value; in->bytes[1] = v & 0x1f; in->len = 2; break;
	}
	in->ref = (struct hx_fz_ref){ -1, 0 };
	snprintf(in->text, sizeof(in->text), "(inserted)");
}

static ssize_t find_ref(const struct hx_fz_prog *p, struct hx_fz_ref r)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->insn[i].ref.row == r.row && p->insn[i].ref.k == r.k)
			return (ssize_t)i;
	return -ENOENT;
}

/* The instruction to corrupt: picked once, then found again by its row and
 * place (ops the minimizer removes do not move it).  -1: it is gone. */
static ssize_t mutation_site(struct hx_fz_prog *p, struct hx_fz_mut *m)
{
	if (!m->placed) {
		if (!p->n)
			return -ENOENT;
		m->at = p->insn[m->pick % p->n].ref;
		m->placed = true;
	}
	return find_ref(p, m->at);
}

/* 0, or -ENOENT when the instruction to corrupt is gone */
static int mutate(struct hx_fz_prog *p, struct hx_fz_mut *m)
{
	if (m->kind == HX_FZ_MUT_NONE)
		return 0;
	p->features |= 1ull << FZF_MUTATED;
	ssize_t at = mutation_site(p, m);
	if (at < 0 && !m->placed) {
		/* an empty program: only an insertion has something to do */
		if (m->kind == HX_FZ_MUT_INSERT)
			insert_random(p, 0, m->a);
		return 0;
	}
	if (at < 0)
		return -ENOENT;
	size_t k = (size_t)at;
	struct hx_fz_insn *in = &p->insn[k];
	char t[64];
	switch (m->kind) {
	case HX_FZ_MUT_OPERAND:
		/* the first instruction from k on with an operand: one bit of it */
		for (size_t i = 0; i < p->n; i++) {
			in = &p->insn[(k + i) % p->n];
			if (in->len > 1 || (in->bytes[0] & 0xc0))
				break;
		}
		if (in->len > 1)
			in->bytes[in->len - 1] ^= (uint8_t)(1u << (m->a % 7));
		else
			in->bytes[0] ^= (uint8_t)(1u << (m->a % 6));
		snprintf(t, sizeof(t), "%.40s [operand bit flipped]", in->text);
		snprintf(in->text, sizeof(in->text), "%s", t);
		break;
	case HX_FZ_MUT_DELETE:
		drop_insn(p, k);
		break;
	case HX_FZ_MUT_DUP:
		if (p->n < HX_FZ_MAX_INSNS) {
			memmove(&p->insn[k + 1], &p->insn[k], (p->n - k) * sizeof(p->insn[0]));
			p->n++;
		}
		break;
	case HX_FZ_MUT_SWAP:
		if (k + 1 < p->n) {
			struct hx_fz_insn tmp = p->insn[k];
			p->insn[k] = p->insn[k + 1];
			p->insn[k + 1] = tmp;
		}
		break;
	case HX_FZ_MUT_BYTE: {
		size_t b = m->a % in->len;
		in->bytes[b] = (uint8_t)m->b;
		snprintf(t, sizeof(t), "%.40s [byte %zu := 0x%02x]", in->text, b, (uint8_t)m->b);
		snprintf(in->text, sizeof(in->text), "%s", t);
		break;
	}
	case HX_FZ_MUT_INSERT:
		insert_random(p, k, m->a);
		break;
	case HX_FZ_MUT_TRUNCATE:
		p->n = k;
		break;
	default:
		break;
	}
	return 0;
}

int hx_fz_encode(struct hx_fz_gen *g, const struct tr_func *truth, struct hx_fz_prog *p,
		 struct ju_err *err)
{
	memset(p, 0, sizeof(*p));
	struct enc *e = calloc(1, sizeof(*e));
	if (!e) {
		return ju_errf(err, ENOMEM, 0, "out of memory");
	}
	struct tr_row *rows = e->rows;
	bool *dead = e->dead;
	if (hx_fz_cfi_rows(g, truth, rows, dead, err)) {
		free(e);
		return -EINVAL;
	}
	e->a = g->arch;
	e->t = &g->tape;
	e->p = p;
	e->plant = g->plant;
	/* the CIE's row: CFA = SP + entry offset, the return address where the arch has it */
	struct tr_row entry = { .cfa_reg = g->arch->facts->dw_sp, .cfa_off = g->arch->facts->entry_cfa_off,
				.ra_where = tr_entry_ra_where(g->arch), .ra_off = g->arch->facts->ra_cfa_off,
				.ra_reg = g->arch->facts->dw_lr };
	state_of(g->arch, &entry, &e->init);
	e->cur = e->init;
	for (size_t i = 0; i < truth->nrows; i++) {
		/* row i is the state op i - 1 left: its choices and instructions
		 * belong to that op, and go with it when the minimizer drops it */
		hx_fz_tape_at(e->t, i ? i - 1 : 0);
		e->row = i ? (int)i - 1 : 0;
		e->row_k = 0;
		encode_row(e, &rows[i], dead[i] && (!i || !dead[i - 1]), !dead[i] && i && dead[i - 1]);
	}
	bool overflow = e->overflow;
	free(e);
	if (overflow) {
		return ju_errf(err, EINVAL, 0, "CFA program: more than %d instructions", HX_FZ_MAX_INSNS);
	}
	for (size_t i = 0; i < g->ndel; i++) {
		ssize_t k = find_ref(p, g->del[i]);
		if (k >= 0)
			drop_insn(p, (size_t)k);
	}
	if (mutate(p, &g->mut)) {
		return ju_errf(err, EINVAL, 0, "the instruction the mutation corrupts is gone");
	}
	size_t total = 0;
	for (size_t i = 0; i < p->n; i++)
		total += p->insn[i].len;
	if (total > ENC_PROG_MAX) {
		return ju_errf(err, EINVAL, 0, "CFA program of %zu bytes (at most %d in a case line)", total, ENC_PROG_MAX);
	}
	return 0;
}

_Static_assert(FZF__COUNT <= 64, "features are bits of a uint64_t");

static const char *const feature_names[FZF__COUNT] = {
	[FZF_ADV] = "advance_loc", [FZF_ADV1] = "advance_loc1", [FZF_ADV2] = "advance_loc2",
	[FZF_ADV4] = "advance_loc4", [FZF_ADV_SPLIT] = "split advance",
	[FZF_DEF_CFA] = "def_cfa", [FZF_DEF_CFA_SF] = "def_cfa_sf", [FZF_DEF_CFA_REG] = "def_cfa_register",
	[FZF_DEF_CFA_OFF] = "def_cfa_offset", [FZF_DEF_CFA_OFF_SF] = "def_cfa_offset_sf",
	[FZF_CFA_EXPR_BREG] = "def_cfa_expression breg", [FZF_CFA_EXPR_BREGX] = "def_cfa_expression bregx",
	[FZF_CFA_EXPR_UCONST] = "def_cfa_expression plus_uconst", [FZF_CFA_EXPR_CONST] = "def_cfa_expression consts+plus",
	[FZF_CFA_EXPR_MINUS] = "def_cfa_expression lit+minus", [FZF_OFFSET] = "offset",
	[FZF_OFFSET_EXT] = "offset_extended", [FZF_OFFSET_EXT_SF] = "offset_extended_sf",
	[FZF_EXPR_RULE] = "expression (from the CFA)", [FZF_EXPR_RULE_BREG] = "expression (breg)",
	[FZF_RESTORE] = "restore", [FZF_RESTORE_EXT] = "restore_extended", [FZF_SAME_VALUE] = "same_value",
	[FZF_REMEMBER] = "remember_state", [FZF_RESTORE_STATE] = "restore_state",
	[FZF_VAL_OFFSET] = "val_offset", [FZF_VAL_OFFSET_SF] = "val_offset_sf", [FZF_VAL_EXPR] = "val_expression",
	[FZF_NOP_PAD] = "nop padding", [FZF_ARGS_SIZE] = "GNU_args_size", [FZF_RESTATE] = "restated rule",
	[FZF_FP] = "push_fp", [FZF_SET_FP] = "set_fp", [FZF_LEAVE] = "leave", [FZF_SAVE_REG] = "save_reg",
	[FZF_BIG_ALLOC] = "alloc >= 4 KiB", [FZF_NO_CALL] = "no call", [FZF_DEAD_RET] = "skipped exit: ret",
	[FZF_DEAD_TAIL] = "skipped exit: tail_jump", [FZF_PAD_RESTORE_STATE] = "landing pad by restore_state",
	[FZF_DEPTH2] = "depth 2", [FZF_CIE_V3] = "CIE version 3", [FZF_TERMINATOR] = "terminator",
	[FZF_LSDA] = "LSDA pointer", [FZF_OTHER_REG] = "rule for a register the code keeps (xmm, v)",
	[FZF_MUTATED] = "mutated",
};

const char *hx_fz_feature_name(enum hx_fz_feature f)
{
	return (unsigned)f < FZF__COUNT && feature_names[f] ? feature_names[f] : "?";
}
