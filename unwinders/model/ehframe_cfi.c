/* The CFI interpreter (DWARF 5 section 6.4): CFA instructions decoded, run
 * into rows, and written as .cfi_* text and as the one CFA-row formatter. */
#include "unwinders/model/ehframe_int.h"
#include "unwinders/model/leb.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- CFA instructions ---- */

static const char *const ehf_cfa_names[0x30] = {
	[DW_CFA_nop] = "DW_CFA_nop",
	[DW_CFA_set_loc] = "DW_CFA_set_loc",
	[DW_CFA_advance_loc1] = "DW_CFA_advance_loc1",
	[DW_CFA_advance_loc2] = "DW_CFA_advance_loc2",
	[DW_CFA_advance_loc4] = "DW_CFA_advance_loc4",
	[DW_CFA_offset_extended] = "DW_CFA_offset_extended",
	[DW_CFA_restore_extended] = "DW_CFA_restore_extended",
	[DW_CFA_undefined] = "DW_CFA_undefined",
	[DW_CFA_same_value] = "DW_CFA_same_value",
	[DW_CFA_register] = "DW_CFA_register",
	[DW_CFA_remember_state] = "DW_CFA_remember_state",
	[DW_CFA_restore_state] = "DW_CFA_restore_state",
	[DW_CFA_def_cfa] = "DW_CFA_def_cfa",
	[DW_CFA_def_cfa_register] = "DW_CFA_def_cfa_register",
	[DW_CFA_def_cfa_offset] = "DW_CFA_def_cfa_offset",
	[DW_CFA_def_cfa_expression] = "DW_CFA_def_cfa_expression",
	[DW_CFA_expression] = "DW_CFA_expression",
	[DW_CFA_offset_extended_sf] = "DW_CFA_offset_extended_sf",
	[DW_CFA_def_cfa_sf] = "DW_CFA_def_cfa_sf",
	[DW_CFA_def_cfa_offset_sf] = "DW_CFA_def_cfa_offset_sf",
	[DW_CFA_val_offset] = "DW_CFA_val_offset",
	[DW_CFA_val_offset_sf] = "DW_CFA_val_offset_sf",
	[DW_CFA_val_expression] = "DW_CFA_val_expression",
	[DW_CFA_AARCH64_negate_ra_state] = "DW_CFA_AARCH64_negate_ra_state",
	[DW_CFA_GNU_args_size] = "DW_CFA_GNU_args_size",
	[DW_CFA_GNU_negative_offset_extended] = "DW_CFA_GNU_negative_offset_extended",
};

static const char *ehf_cfa_name(uint8_t op)
{
	switch (op) {
	case DW_CFA_advance_loc: return "DW_CFA_advance_loc";
	case DW_CFA_offset: return "DW_CFA_offset";
	case DW_CFA_restore: return "DW_CFA_restore";
	default: return op < 0x30 && ehf_cfa_names[op] ? ehf_cfa_names[op] : "DW_CFA_?";
	}
}

/* One decoded instruction; primary opcodes have their operand bits cleared. */
struct ehf_insn {
	uint8_t op;
	uint64_t reg, reg2;
	int64_t off;              /* data_align applied where the operand is factored */
	uint64_t delta;           /* advances: bytes (code_align applied); set_loc: the address */
	const uint8_t *expr;
	size_t expr_len;
};

static int ehf_factor(struct ehf_cur *c, size_t at, uint8_t op, int64_t v, int64_t align,
		      int64_t *out)
{
	if (__builtin_mul_overflow(v, align, out))
		return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64 ": offset %" PRId64
				 " * data alignment %" PRId64 " overflows", ehf_cfa_name(op),
				 c->base + at, v, align);
	return 0;
}

static int ehf_ufactor(struct ehf_cur *c, size_t at, uint8_t op, uint64_t u, int64_t align,
		       int64_t *out)
{
	if (u > INT64_MAX)
		return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64 ": offset 0x%" PRIx64
				 " is too large", ehf_cfa_name(op), c->base + at, u);
	return ehf_factor(c, at, op, (int64_t)u, align, out);
}

/* An advance's delta in bytes. */
static int ehf_scale(struct ehf_cur *c, size_t at, uint8_t op, uint64_t delta,
		     uint64_t code_align, uint64_t *out)
{
	if (__builtin_mul_overflow(delta, code_align, out))
		return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64 ": delta 0x%" PRIx64
				 " * code alignment %" PRIu64 " overflows", ehf_cfa_name(op),
				 c->base + at, delta, code_align);
	return 0;
}

static int ehf_block(struct ehf_cur *c, struct ehf_insn *in)
{
	uint64_t len = 0;
	if (ehf_get_uleb(c, &len, "expression length"))
		return -EINVAL;
	if (len > c->end - c->pos)
		return ehf_cfail(c, ehf_here(c), "expression of %" PRIu64 " bytes at 0x%" PRIx64
				 " runs past the program's end 0x%" PRIx64, len, ehf_here(c),
				 c->base + c->end);
	in->expr = c->p + c->pos;
	in->expr_len = (size_t)len;
	c->pos += (size_t)len;
	return 0;
}

/* The primary opcodes: the operand in the opcode's low six bits. */
static int ehf_decode_primary(struct ehf_cur *c, size_t at, uint8_t op, uint64_t code_align,
			      int64_t data_align, struct ehf_insn *in)
{
	uint64_t u;
	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		in->op = DW_CFA_advance_loc;
		return ehf_scale(c, at, in->op, op & 0x3f, code_align, &in->delta);
	case DW_CFA_offset:
		in->op = DW_CFA_offset;
		in->reg = op & 0x3f;
		if (ehf_get_uleb(c, &u, "DW_CFA_offset operand"))
			return -EINVAL;
		return ehf_ufactor(c, at, in->op, u, data_align, &in->off);
	default:
		in->op = DW_CFA_restore;
		in->reg = op & 0x3f;
		return 0;
	}
}

/* offset_extended, val_offset, GNU_negative_offset_extended: register, unsigned factored offset. */
static int ehf_decode_offset_ext(struct ehf_cur *c, size_t at, uint8_t op, int64_t data_align,
				 struct ehf_insn *in)
{
	const char *name = ehf_cfa_name(op);
	uint64_t u;
	if (ehf_get_uleb(c, &in->reg, name) || ehf_get_uleb(c, &u, name) ||
	    ehf_ufactor(c, at, op, u, data_align, &in->off))
		return -EINVAL;
	if (op == DW_CFA_GNU_negative_offset_extended) {
		if (in->off == INT64_MIN)
			return ehf_cfail(c, c->base + at, "%s at offset 0x%" PRIx64
					 ": offset overflows", name, c->base + at);
		in->off = -in->off;
	}
	return 0;
}

/* Decode the instruction at c->pos.  bases NULL: set_loc is read without its
 * application (dumps do not know where the section is). */
static int ehf_decode(struct ehf_cur *c, uint64_t code_align, int64_t data_align, uint8_t fde_enc,
		      const struct ehf_bases *bases, struct ehf_insn *in)
{
	size_t at = c->pos;
	uint8_t op;
	uint64_t u;
	int64_t s;
	memset(in, 0, sizeof(*in));
	if (ehf_get_u8(c, &op, "CFA opcode"))
		return -EINVAL;
	if (op & 0xc0)
		return ehf_decode_primary(c, at, op, code_align, data_align, in);
	in->op = op;
	const char *name = ehf_cfa_name(op);
	switch (op) {
	case DW_CFA_nop:
	case DW_CFA_remember_state:
	case DW_CFA_restore_state:
	case DW_CFA_AARCH64_negate_ra_state:
		return 0;
	case DW_CFA_set_loc:
		if (bases)
			return ehf_get_enc(c, fde_enc, bases, &in->delta, name);
		return ehf_get_enc(c, fde_enc & 0x0f, &ehf_no_bases, &in->delta, name);
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		if (ehf_get_le(c, op == DW_CFA_advance_loc1 ? 1 : op == DW_CFA_advance_loc2 ? 2 : 4,
			       &u, name))
			return -EINVAL;
		return ehf_scale(c, at, op, u, code_align, &in->delta);
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
	case DW_CFA_GNU_negative_offset_extended:
		return ehf_decode_offset_ext(c, at, op, data_align, in);
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
	case DW_CFA_def_cfa_sf:
		if (ehf_get_uleb(c, &in->reg, name) || ehf_get_sleb(c, &s, name))
			return -EINVAL;
		return ehf_factor(c, at, op, s, data_align, &in->off);
	case DW_CFA_restore_extended:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_def_cfa_register:
		return ehf_get_uleb(c, &in->reg, name);
	case DW_CFA_register:
		return ehf_get_uleb(c, &in->reg, name) || ehf_get_uleb(c, &in->reg2, name) ? -1 : 0;
	case DW_CFA_def_cfa:
		if (ehf_get_uleb(c, &in->reg, name) || ehf_get_uleb(c, &u, name))
			return -EINVAL;
		return ehf_ufactor(c, at, op, u, 1, &in->off);  /* not factored */
	case DW_CFA_def_cfa_offset:
		if (ehf_get_uleb(c, &u, name))
			return -EINVAL;
		return ehf_ufactor(c, at, op, u, 1, &in->off);
	case DW_CFA_def_cfa_offset_sf:
		if (ehf_get_sleb(c, &s, name))
			return -EINVAL;
		return ehf_factor(c, at, op, s, data_align, &in->off);
	case DW_CFA_def_cfa_expression:
		return ehf_block(c, in);
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (ehf_get_uleb(c, &in->reg, name))
			return -EINVAL;
		return ehf_block(c, in);
	case DW_CFA_GNU_args_size:
		return ehf_get_uleb(c, &in->delta, name);
	default:
		return ehf_cfail(c, c->base + at, "unsupported CFA opcode 0x%02x at offset 0x%" PRIx64,
				 op, c->base + at);
	}
}

/* ---- the interpreter ---- */

/* remember_state copies: compact rules keep 16 levels at ~25 KiB of stack.
 * expr_len fits 32 bits because a record's length field does. */
struct ehf_saved_rule {
	uint8_t kind;
	uint16_t reg;
	uint32_t expr_len;
	union {
		int64_t off;
		const uint8_t *expr;
	};
};

struct ehf_saved {
	uint8_t cfa_kind;
	bool cfa_defined, ra_signed;
	uint16_t cfa_reg;
	uint32_t cfa_expr_len;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	struct ehf_saved_rule reg[EHF_NREGS];
};

struct ehf_interp {
	const struct ehf_fde *fde;
	const struct ehf_cie *cie;
	struct ehf_row *row;
	const struct ehf_row *init;   /* the CIE's row, for DW_CFA_restore; NULL in the CIE */
	uint64_t loc;
	uint64_t stop;                /* ehf_row_at: the pc whose row is wanted */
	int (*cb)(const struct ehf_row *row, void *arg);  /* ehf_rows */
	void *arg;
	int cb_rc;
	unsigned depth;
	struct ehf_saved stack[EHF_STACK_MAX];
};

static void ehf_row_reset(struct ehf_row *r)
{
	memset(r, 0, sizeof(*r));
	r->cfa_kind = EHF_CFA_REG_OFF;
	for (unsigned i = 0; i < EHF_NREGS; i++)
		r->reg[i].kind = EHF_INITIAL;
}

static void ehf_save(struct ehf_saved *s, const struct ehf_row *r)
{
	s->cfa_kind = r->cfa_kind;
	s->cfa_defined = r->cfa_defined;
	s->ra_signed = r->ra_signed;
	s->cfa_reg = r->cfa_reg;
	s->cfa_off = r->cfa_off;
	s->cfa_expr = r->cfa_expr;
	s->cfa_expr_len = (uint32_t)r->cfa_expr_len;
	for (unsigned i = 0; i < EHF_NREGS; i++) {
		const struct ehf_rule *ru = &r->reg[i];
		struct ehf_saved_rule *sr = &s->reg[i];
		sr->kind = ru->kind;
		sr->reg = ru->reg;
		sr->expr_len = (uint32_t)ru->expr_len;
		if (ru->kind == EHF_EXPRESSION || ru->kind == EHF_VAL_EXPRESSION)
			sr->expr = ru->expr;
		else
			sr->off = ru->off;
	}
}

static void ehf_load(struct ehf_row *r, const struct ehf_saved *s)
{
	r->cfa_kind = s->cfa_kind;
	r->cfa_defined = s->cfa_defined;
	r->ra_signed = s->ra_signed;
	r->cfa_reg = s->cfa_reg;
	r->cfa_off = s->cfa_off;
	r->cfa_expr = s->cfa_expr;
	r->cfa_expr_len = s->cfa_expr_len;
	for (unsigned i = 0; i < EHF_NREGS; i++) {
		const struct ehf_saved_rule *sr = &s->reg[i];
		struct ehf_rule *ru = &r->reg[i];
		ru->kind = sr->kind;
		ru->reg = sr->reg;
		ru->expr_len = sr->expr_len;
		if (sr->kind == EHF_EXPRESSION || sr->kind == EHF_VAL_EXPRESSION) {
			ru->expr = sr->expr;
			ru->off = 0;
		} else {
			ru->expr = NULL;
			ru->off = sr->off;
		}
	}
}

/* Move to new_loc: 0 keep going, 1 the wanted row (or the last) is done. */
static int ehf_advance(struct ehf_interp *ip, uint64_t new_loc)
{
	if (new_loc == ip->loc)
		return 0;
	uint64_t end = new_loc < ip->fde->pc_end ? new_loc : ip->fde->pc_end;
	if (ip->cb) {
		if (ip->loc < end) {
			ip->row->loc = ip->loc;
			ip->row->end = end;
			ip->cb_rc = ip->cb(ip->row, ip->arg);
			if (ip->cb_rc)
				return 1;
		}
		ip->loc = new_loc;
		return new_loc >= ip->fde->pc_end;
	}
	if (new_loc > ip->stop) {
		ip->row->loc = ip->loc;
		ip->row->end = end;
		return 1;
	}
	ip->loc = new_loc;
	return 0;
}

/* Run one program: 0 at its end, 1 when ehf_advance says done, -1 on error. */
static int ehf_exec(struct ehf_interp *ip, const uint8_t *insns, size_t len, uint64_t insns_off,
		    const char *what, uint64_t rec, struct ju_err *err)
{
	const struct ehf_cie *cie = ip->cie;
	struct ehf_row *row = ip->row;
	struct ehf_cur c = { insns, len, 0, insns_off, what, rec, err };
	while (c.pos < c.end) {  /* every instruction consumes at least its opcode */
		size_t at = c.pos;
		struct ehf_insn in;
		if (ehf_decode(&c, cie->code_align, cie->data_align, cie->fde_enc, &ip->fde->bases, &in))
			return -EINVAL;
		const char *name = ehf_cfa_name(in.op);
		uint64_t off_at = insns_off + at;
		if (in.reg >= EHF_NREGS || in.reg2 >= EHF_NREGS)
			return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 ": register %" PRIu64
					 " is out of range (max %d)", name, off_at,
					 in.reg >= EHF_NREGS ? in.reg : in.reg2, EHF_NREGS - 1);
		struct ehf_rule *ru = &row->reg[in.reg];
		if (in.reg > row->max_reg || in.reg2 > row->max_reg)
			row->max_reg = (uint16_t)(in.reg > in.reg2 ? in.reg : in.reg2);
		uint64_t new_loc;
		int rc;
		switch (in.op) {
		case DW_CFA_advance_loc:
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_set_loc:
			if (!ip->init)
				return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 " in a CIE's"
						 " initial instructions", name, off_at);
			if (in.op == DW_CFA_set_loc) {
				new_loc = in.delta;
				if (new_loc < ip->loc)
					return ehf_cfail(&c, off_at, "DW_CFA_set_loc at offset 0x%" PRIx64
							 ": 0x%" PRIx64 " is below the current location"
							 " 0x%" PRIx64, off_at, new_loc, ip->loc);
			} else if (__builtin_add_overflow(ip->loc, in.delta, &new_loc)) {
				return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 ": location"
						 " overflows", name, off_at);
			}
			rc = ehf_advance(ip, new_loc);
			if (rc)
				return rc;
			break;
		case DW_CFA_offset:
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_GNU_negative_offset_extended:
			*ru = (struct ehf_rule){ .kind = EHF_OFFSET, .off = in.off };
			break;
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
			*ru = (struct ehf_rule){ .kind = EHF_VAL_OFFSET, .off = in.off };
			break;
		case DW_CFA_restore:
		case DW_CFA_restore_extended:
			if (ip->init)
				*ru = ip->init->reg[in.reg];
			else
				*ru = (struct ehf_rule){ .kind = EHF_INITIAL };
			break;
		case DW_CFA_undefined:
			*ru = (struct ehf_rule){ .kind = EHF_UNDEF };
			break;
		case DW_CFA_same_value:
			*ru = (struct ehf_rule){ .kind = EHF_SAME };
			break;
		case DW_CFA_register:
			*ru = (struct ehf_rule){ .kind = EHF_REGISTER, .reg = (uint16_t)in.reg2 };
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			*ru = (struct ehf_rule){
				.kind = in.op == DW_CFA_expression ? EHF_EXPRESSION : EHF_VAL_EXPRESSION,
				.expr = in.expr, .expr_len = in.expr_len };
			break;
		case DW_CFA_remember_state:
			if (ip->depth >= EHF_STACK_MAX)
				return ehf_cfail(&c, off_at, "DW_CFA_remember_state at offset 0x%" PRIx64
						 ": more than %d states remembered", off_at,
						 EHF_STACK_MAX);
			ehf_save(&ip->stack[ip->depth++], row);
			break;
		case DW_CFA_restore_state:
			if (ip->depth == 0)
				return ehf_cfail(&c, off_at, "DW_CFA_restore_state at offset 0x%" PRIx64
						 ": no remembered state", off_at);
			ehf_load(row, &ip->stack[--ip->depth]);
			break;
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
			row->cfa_kind = EHF_CFA_REG_OFF;
			row->cfa_reg = (uint16_t)in.reg;
			row->cfa_off = in.off;
			row->cfa_expr = NULL;
			row->cfa_expr_len = 0;
			row->cfa_defined = true;
			break;
		case DW_CFA_def_cfa_register:
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
			/* DWARF 5 6.4.2.2: only valid on a register+offset CFA */
			if (!row->cfa_defined || row->cfa_kind != EHF_CFA_REG_OFF)
				return ehf_cfail(&c, off_at, "%s at offset 0x%" PRIx64 ": the CFA is"
						 " not register+offset here", name, off_at);
			if (in.op == DW_CFA_def_cfa_register)
				row->cfa_reg = (uint16_t)in.reg;
			else
				row->cfa_off = in.off;
			break;
		case DW_CFA_def_cfa_expression:
			row->cfa_kind = EHF_CFA_EXPR;
			row->cfa_expr = in.expr;
			row->cfa_expr_len = in.expr_len;
			row->cfa_reg = 0;
			row->cfa_off = 0;
			row->cfa_defined = true;
			break;
		case DW_CFA_AARCH64_negate_ra_state:
			row->ra_signed = !row->ra_signed;
			break;
		case DW_CFA_nop:
		case DW_CFA_GNU_args_size:
			break;
		default:  /* ehf_decode rejects everything else */
			return ehf_cfail(&c, off_at, "unsupported CFA opcode 0x%02x at offset 0x%" PRIx64,
					 in.op, off_at);
		}
	}
	return 0;
}

/* Sets up ip and runs the CIE's program into ip->row; init receives a copy. */
static int ehf_start(struct ehf_interp *ip, const struct ehf_fde *fde, struct ehf_row *row,
		     struct ehf_row *init, struct ju_err *err)
{
	if (!fde || !fde->cie)
		return ehf_fail(err, 0, "no FDE");
	ip->fde = fde;
	ip->cie = fde->cie;
	ip->row = row;
	ip->init = NULL;
	ip->loc = fde->pc_begin;
	ip->stop = 0;
	ip->cb = NULL;
	ip->arg = NULL;
	ip->cb_rc = 0;
	ip->depth = 0;
	ehf_row_reset(row);
	if (ehf_exec(ip, ip->cie->insns, ip->cie->insns_len, ip->cie->insns_off, "CIE",
		     ip->cie->offset, err) < 0)
		return -EINVAL;
	*init = *row;
	ip->init = init;
	return 0;
}

int ehf_row_at(const struct ehf_fde *fde, uint64_t pc, struct ehf_row *out,
	       struct ju_err *err)
{
	struct ehf_interp ip;
	struct ehf_row init;
	if (fde && (pc < fde->pc_begin || pc >= fde->pc_end))
		return ehf_fail(err, fde->offset, "FDE at 0x%" PRIx64 ": pc 0x%" PRIx64 " is outside"
				" [0x%" PRIx64 ", 0x%" PRIx64 ")", fde->offset, pc, fde->pc_begin,
				fde->pc_end);
	if (ehf_start(&ip, fde, out, &init, err))
		return -EINVAL;
	ip.stop = pc;
	int rc = ehf_exec(&ip, fde->insns, fde->insns_len, fde->insns_off, "FDE", fde->offset, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		out->loc = ip.loc;
		out->end = fde->pc_end;
	}
	return 0;
}

int ehf_rows(const struct ehf_fde *fde,
	     int (*cb)(const struct ehf_row *row, void *arg), void *arg,
	     struct ju_err *err)
{
	struct ehf_interp ip;
	struct ehf_row row, init;
	if (!cb)
		return ehf_fail(err, 0, "no callback");
	if (ehf_start(&ip, fde, &row, &init, err))
		return -EINVAL;
	ip.cb = cb;
	ip.arg = arg;
	int rc = ehf_exec(&ip, fde->insns, fde->insns_len, fde->insns_off, "FDE", fde->offset, err);
	if (rc < 0)
		return rc;
	if (rc > 0)
		return ip.cb_rc;
	if (ip.loc < fde->pc_end) {
		row.loc = ip.loc;
		row.end = fde->pc_end;
		return cb(&row, arg);
	}
	return 0;
}

/* ---- dumps ---- */

__attribute__((format(printf, 4, 5)))
static void ehf_put(char *out, size_t outlen, size_t *n, const char *fmt, ...)
{
	if (*n >= outlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(out + *n, outlen - *n, fmt, ap);
	va_end(ap);
	if (k > 0)
		*n = *n + (size_t)k < outlen ? *n + (size_t)k : outlen;
}

int ehf_disasm_insn(const uint8_t *data, size_t size, size_t *pos,
		    const struct ehf_cie *cie, char *out, size_t outlen,
		    struct ju_err *err)
{
	if (!data && size)
		return ehf_fail(err, 0, "no data");
	if (*pos > size)
		return ehf_fail(err, *pos, "position 0x%zx is past the end (size 0x%zx)", *pos, size);
	struct ehf_cur c = { data, size, *pos, 0, NULL, 0, err };
	struct ehf_insn in;
	/* without a CIE, factored operands are shown unfactored */
	if (ehf_decode(&c, cie ? cie->code_align : 1, cie ? cie->data_align : 1,
		       cie ? cie->fde_enc : DW_EH_PE_absptr, NULL, &in))
		return -EINVAL;
	*pos = c.pos;
	if (!out || !outlen)
		return 0;
	out[0] = 0;
	size_t n = 0;
	const char *name = ehf_cfa_name(in.op);
	switch (in.op) {
	case DW_CFA_advance_loc: case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2: case DW_CFA_advance_loc4:
		ehf_put(out, outlen, &n, "%s %" PRIu64, name, in.delta);
		break;
	case DW_CFA_set_loc:
		ehf_put(out, outlen, &n, "%s 0x%" PRIx64 "%s", name, in.delta,
			cie && (cie->fde_enc & 0x70) ? " (unrelocated)" : "");
		break;
	case DW_CFA_offset: case DW_CFA_offset_extended: case DW_CFA_offset_extended_sf:
	case DW_CFA_GNU_negative_offset_extended:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 " at cfa%+" PRId64, name, in.reg, in.off);
		break;
	case DW_CFA_val_offset: case DW_CFA_val_offset_sf:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 " is cfa%+" PRId64, name, in.reg, in.off);
		break;
	case DW_CFA_restore: case DW_CFA_restore_extended: case DW_CFA_undefined:
	case DW_CFA_same_value: case DW_CFA_def_cfa_register:
		ehf_put(out, outlen, &n, "%s r%" PRIu64, name, in.reg);
		break;
	case DW_CFA_register:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 " in r%" PRIu64, name, in.reg, in.reg2);
		break;
	case DW_CFA_def_cfa: case DW_CFA_def_cfa_sf:
		ehf_put(out, outlen, &n, "%s r%" PRIu64 "%+" PRId64, name, in.reg, in.off);
		break;
	case DW_CFA_def_cfa_offset: case DW_CFA_def_cfa_offset_sf:
		ehf_put(out, outlen, &n, "%s %" PRId64, name, in.off);
		break;
	case DW_CFA_expression: case DW_CFA_val_expression: case DW_CFA_def_cfa_expression:
		ehf_put(out, outlen, &n, "%s", name);
		if (in.op != DW_CFA_def_cfa_expression)
			ehf_put(out, outlen, &n, " r%" PRIu64, in.reg);
		ehf_put(out, outlen, &n, " [");
		for (size_t i = 0; i < in.expr_len; i++)
			ehf_put(out, outlen, &n, "%s%02x", i ? " " : "", in.expr[i]);
		ehf_put(out, outlen, &n, "]");
		break;
	case DW_CFA_GNU_args_size:
		ehf_put(out, outlen, &n, "%s %" PRIu64, name, in.delta);
		break;
	default:
		ehf_put(out, outlen, &n, "%s", name);
		break;
	}
	return 0;
}

static size_t rule_text(const struct ehf_rule *ru, const struct ehf_row_fmt *f, const char *col,
			char *buf, size_t n)
{
	char t[24];
	switch (ru->kind) {
	case EHF_OFFSET:
		return (size_t)snprintf(buf, n, f->brackets ? " %s=[%s%+" PRId64 "]" : " %s=%s%+" PRId64,
					col, f->cfa, ru->off);
	case EHF_VAL_OFFSET:
		return (size_t)snprintf(buf, n, f->val_paren ? " %s=val(%s%+" PRId64 ")" : " %s=%s%+" PRId64,
					col, f->cfa, ru->off);
	case EHF_REGISTER:
		return (size_t)snprintf(buf, n, " %s=%s", col, f->name(f->ctx, ru->reg, t, sizeof(t)));
	case EHF_UNDEF:
		return (size_t)snprintf(buf, n, " %s=%s", col, f->undef);
	case EHF_SAME:
		return f->same ? (size_t)snprintf(buf, n, " %s=same", col) : 0;
	case EHF_EXPRESSION:
	case EHF_VAL_EXPRESSION:
		if (!f->expr_len)
			return (size_t)snprintf(buf, n, " %s=expr", col);
		return (size_t)snprintf(buf, n, " %s=%sexpr(%zu bytes)", col,
					ru->kind == EHF_VAL_EXPRESSION ? "val_" : "", ru->expr_len);
	default:
		return 0;     /* the arch's initial rule: nothing the program said */
	}
}

size_t ehf_row_text(const struct ehf_row *row, const struct ehf_row_fmt *f, char *buf, size_t n)
{
	char t[24];
	size_t o;
	if (!row->cfa_defined)
		o = (size_t)snprintf(buf, n, "%s", f->cfa_undefined);
	else if (row->cfa_kind == EHF_CFA_EXPR && f->expr_len)
		o = (size_t)snprintf(buf, n, "%s=expr(%zu bytes)", f->cfa, row->cfa_expr_len);
	else if (row->cfa_kind == EHF_CFA_EXPR)
		o = (size_t)snprintf(buf, n, "%s=expr", f->cfa);
	else
		o = (size_t)snprintf(buf, n, "%s=%s%+" PRId64, f->cfa, f->name(f->ctx, row->cfa_reg, t, sizeof(t)),
				     row->cfa_off);
	unsigned nregs = f->nregs < EHF_NREGS ? f->nregs : EHF_NREGS;
	for (unsigned d = 0; d < nregs && o < n; d++) {
		const struct ehf_rule *ru = &row->reg[d];
		if (ru->kind != EHF_INITIAL && (ru->kind != EHF_SAME || f->same))
			o += rule_text(ru, f, f->name(f->ctx, d, t, sizeof(t)), buf + o, n - o);
	}
	if (f->ra_signed && row->ra_signed && o < n)
		o += (size_t)snprintf(buf + o, n - o, " ra_signed");
	return o;
}
