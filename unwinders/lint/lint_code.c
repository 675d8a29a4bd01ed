/* lint's code-vs-CFI check (JD052, JD053, JD055, JD057-JD059, JD080): the CFI rows
 * of an FDE against the stack effects of its code, decoded by the arch's
 * decoder (decode.h): the CFA, every register rule (where the code stored
 * the register, whether that slot is still above SP) and the return address,
 * at every instruction boundary.  Each rule's finding names every boundary
 * it fails at, as a sample can land on any of them. */
#include "unwinders/lint/lint_int.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwinders/decode.h"
#include "unwinders/model/leb.h"
#include "unwinders/uwarch.h"

static int collect_row(const struct ehf_row *row, void *arg)
{
	struct lint_ctx *c = arg;
	if (c->nrows >= LINT_MAX_ROWS) {
		c->rows_over = true;
		return 1;
	}
	struct crow *r = &c->rows[c->nrows++];
	/* every field is set below (no memset: this runs for every row of every FDE) */
	r->loc = row->loc - c->rows_base;
	r->end = row->end - c->rows_base;
	r->cfa_ok = false;
	r->cfa_reg = 0;
	r->cfa_off = 0;
	r->saved = 0;
	if (row->cfa_defined && row->cfa_kind == EHF_CFA_REG_OFF) {
		r->cfa_ok = true;
		r->cfa_reg = row->cfa_reg;
		r->cfa_off = row->cfa_off;
	} else if (row->cfa_defined && row->cfa_expr_len >= 2 && row->cfa_expr[0] >= DW_OP_breg0 &&
		   row->cfa_expr[0] <= DW_OP_breg31) {
		/* DW_OP_bregN off alone is register + offset */
		size_t pos = 1;
		uint64_t v = 0;
		if (!uw_leb_read(row->cfa_expr, row->cfa_expr_len, &pos, true, &v) && pos == row->cfa_expr_len) {
			r->cfa_ok = true;
			r->cfa_reg = (uint16_t)(row->cfa_expr[0] - DW_OP_breg0);
			r->cfa_off = (int64_t)v;
		}
	}
	r->max_reg = row->max_reg;
	r->ra_kind = row->reg[c->ra_col].kind;
	/* a register rule's register in ra_off (struct crow) */
	r->ra_off = r->ra_kind == EHF_REGISTER ? (int64_t)row->reg[c->ra_col].reg : row->reg[c->ra_col].off;
	for (unsigned k = 0; k < LINT_CODE_REGS && k < EHF_NREGS; k++) {
		r->kind[k] = row->reg[k].kind;
		if (r->kind[k] == EHF_OFFSET)
			r->saved |= 1u << k;
		r->off[k] = row->reg[k].off > INT32_MAX || row->reg[k].off < INT32_MIN ? INT32_MIN : (int32_t)row->reg[k].off;
	}
	return 0;
}

/* One rule's failures in one FDE: how many boundaries, which (the first
 * LINT_MAX_PCS), and what the first one was. */
struct cc_hits {
	bool quiet;               /* the rule's findings are only counted now: no message */
	size_t n;
	unsigned calls;           /* cc_hit calls by the last full compare (cc_again repeats them) */
	struct lint_where w;
	char first[240];
};

/* the rules of the code check, in the order their findings are reported */
enum { CC_CFA, CC_RA, CC_BELOW, CC_EARLY, CC_RAVC, CC_DEEP, CC_LUREG, CC_UNDEC, CC_NRULES };
static const enum lint_rule_id cc_rule[CC_NRULES] = {
	LR_CFA_VS_CODE, LR_RA_RULE, LR_REG_BELOW_SP, LR_REG_SAVED_EARLY, LR_RA_VS_CODE, LR_FRAME_BEYOND_STACK,
	LR_REG_PAST_LIBUNWIND, LR_CODE_UNDECODED,
};

struct cc_result {
	struct cc_hits h[CC_NRULES];
	uint32_t called;          /* bit i: h[i].calls is not 0 */
};

static void cc_hit(struct cc_hits *h, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Count a failure at boundary off; true for the rule's first one in the FDE. */
static bool cc_mark(struct cc_hits *h, uint64_t off)
{
	if (h->w.npc && h->w.pc[h->w.npc - 1] == off)
		return false;             /* one hit per boundary: the first register says it */
	bool first = !h->n++;
	if (h->w.npc < LINT_MAX_PCS)
		h->w.pc[h->w.npc++] = off;
	return first;
}

static void cc_hit(struct cc_hits *h, uint64_t off, const char *fmt, ...)
{
	h->calls++;
	if (cc_mark(h, off) && !h->quiet) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(h->first, sizeof(h->first), fmt, ap);
		va_end(ap);
	}
}

static void cc_cfa(const struct uw_decoder *dc, const struct crow *row, const struct uw_cfa_state *st,
		   uint64_t off, struct cc_result *res)
{
	if (!row->cfa_ok)
		return;
	bool on_sp = row->cfa_reg == dc->sp, on_fp = row->cfa_reg == dc->fp;
	bool known = on_sp ? st->sp_known : on_fp ? st->fp_known : false;
	int64_t want = on_sp ? st->sp_d : st->fp_d;
	if (on_fp && st->fp_popped)
		cc_hit(&res->h[CC_CFA], off, "the CFI says CFA = %s%+" PRId64 " but the frame pointer was restored to the "
		       "caller's value before it", dc->reg_name(row->cfa_reg), row->cfa_off);
	else if (on_fp && st->fp_entry)
		cc_hit(&res->h[CC_CFA], off, "the CFI says CFA = %s%+" PRId64 " but the frame pointer still holds the "
		       "caller's value (the code has not set it yet)", dc->reg_name(row->cfa_reg), row->cfa_off);
	else if (known && row->cfa_off != want)
		cc_hit(&res->h[CC_CFA], off, "the CFI says CFA = %s%+" PRId64 " but the instructions before it leave CFA = %s%+"
		       PRId64, dc->reg_name(row->cfa_reg), row->cfa_off, dc->reg_name(row->cfa_reg), want);
}

/* Does register r still hold its value from the function's entry? */
static bool cc_in_reg(const struct uw_decoder *dc, const struct uw_cfa_state *st, unsigned r)
{
	if (r == dc->fp)
		return st->fp_entry || st->fp_popped;
	return !(st->clobbered & (1u << r));
}

/* One register's rule against where the code put the register. */
static void cc_reg(struct lint_ctx *c, const struct uw_decoder *dc, const struct crow *row,
		   const struct uw_cfa_state *st, unsigned r, uint64_t off, struct cc_result *res)
{
	bool ra = r == dc->ra;
	uint32_t bit = 1u << r;
	if (row->kind[r] == EHF_OFFSET) {
		int64_t o = row->off[r];
		if (st->sp_known && st->sp_d + o < 0) {
			cc_hit(&res->h[CC_BELOW], off, "%s's rule says saved at cfa%+" PRId64 ", %" PRId64 " bytes below SP "
			       "(CFA = sp%+" PRId64 ")", dc->reg_name(r), o, -(st->sp_d + o), st->sp_d);
			return;
		}
		if (!st->regs_known || st->lost & bit || (ra && dc->ra_at_cfa))
			return;
		struct cc_hits *h = ra ? &res->h[CC_RAVC] : &res->h[CC_EARLY];
		if (!(st->stored & bit))
			cc_hit(h, off, "%s's rule says saved at cfa%+" PRId64 " but the code has not stored it yet", dc->reg_name(r), o);
		else if (st->slot[r] != o)
			cc_hit(h, off, "%s's rule says saved at cfa%+" PRId64 " but the code stored it at cfa%+" PRId64,
			       dc->reg_name(r), o, st->slot[r]);
		return;
	}
	/* the return address left "in the register" after the code overwrote it */
	if (ra && !dc->ra_at_cfa && st->regs_known && (row->kind[r] == EHF_SAME || row->kind[r] == EHF_INITIAL) &&
	    !cc_in_reg(dc, st, r)) {
		if (st->stored & bit)
			cc_hit(&res->h[CC_RAVC], off, "%s's rule says it still holds the return address, but a call overwrote it "
			       "and the code keeps it at cfa%+" PRId64, dc->reg_name(r), st->slot[r]);
		else
			cc_hit(&res->h[CC_RAVC], off, "%s's rule says it still holds the return address, but a call overwrote it",
			       dc->reg_name(r));
	}
	(void)c;
}

/* A resync takes where the return address is from the row, as it takes the CFA. */
static void cc_ra_resync(const struct uw_decoder *dc, const struct crow *row, struct uw_cfa_state *st)
{
	if (!dc->ra_at_cfa)
		return;
	if (row->ra_kind == EHF_OFFSET) {
		st->ra_at = UW_RA_SLOT;
		st->ra_slot = row->ra_off;
	} else if (row->ra_kind == EHF_REGISTER) {
		st->ra_at = UW_RA_REG;
		st->ra_reg = (unsigned)row->ra_off;
		st->ra_slot = dc->ra_cfa_off;
	}
}

/* x86_64: the return-address rule against where the code keeps it, the slot
 * at CFA-8 unless the code moved it into a register (`pop %r10`, V8's
 * argument-dropping return) */
static void cc_ra_at_cfa(const struct uw_decoder *dc, const struct crow *row, const struct uw_cfa_state *st,
			 uint64_t off, struct cc_result *res)
{
	const char *said = row->ra_kind == EHF_UNDEF ? "undefined" : row->ra_kind == EHF_SAME ? "same value" :
			   row->ra_kind == EHF_INITIAL ? "unset" : row->ra_kind == EHF_OFFSET ? "at another offset" :
			   row->ra_kind == EHF_REGISTER ? "a register" : "not an offset";
	if (st->ra_at == UW_RA_REG) {
		if (row->ra_kind == EHF_REGISTER && (unsigned)row->ra_off == st->ra_reg)
			return;
		if (row->ra_kind == EHF_OFFSET)
			cc_hit(&res->h[CC_RAVC], off, "the return address (r%u) rule says at cfa%+" PRId64 ", but the code "
			       "loaded it into %s from that slot and moved sp past it", dc->ra, row->ra_off,
			       dc->reg_name(st->ra_reg));
		else
			cc_hit(&res->h[CC_RAVC], off, "the return address (r%u) rule is %s, but the code keeps it in %s",
			       dc->ra, said, dc->reg_name(st->ra_reg));
		return;
	}
	if (!(row->ra_kind == EHF_OFFSET && row->ra_off == dc->ra_cfa_off))
		cc_hit(&res->h[CC_RA], off, "the return address (r%u) rule is %s, not 'at cfa%+" PRId64 "'", dc->ra,
		       said, dc->ra_cfa_off);
}

/* Compare the row in force at pc with the state the code leaves. */
static void cc_compare(struct lint_ctx *c, const struct uw_decoder *dc, const struct crow *row,
		       const struct uw_cfa_state *st, uint64_t off, struct cc_result *res)
{
	cc_cfa(dc, row, st, off, res);
	/* x86_64: the return address at CFA-8, or where the code moved it (arm64's
	 * moves from x30 to the stack: cc_reg) */
	if (dc->ra_at_cfa)
		cc_ra_at_cfa(dc, row, st, off, res);
	/* cc_reg acts on saved registers, and on a return-address register
	 * that is not at the CFA (arm64's x30) whatever its rule, in order */
	uint32_t todo = row->saved;
	if (dc->ra < LINT_CODE_REGS && !dc->ra_at_cfa)
		todo |= 1u << dc->ra;
	if (dc->sp < LINT_CODE_REGS)
		todo &= ~(1u << dc->sp);
	for (; todo; todo &= todo - 1)
		cc_reg(c, dc, row, st, (unsigned)__builtin_ctz(todo), off, res);
	/* the CFA as far up as the return address slot must lie in perf's copy, and the
	 * caller's return address (at the CFA or above) too; perf's libunwind path
	 * never reads the copy's last word (its access_mem wants addr + 8 < end) */
	int64_t d = row->cfa_ok && row->cfa_reg == dc->sp ? row->cfa_off : st->sp_known ? st->sp_d : 0;
	uint64_t size = c->o->stack_size;
	if (size && d > 0 && (uint64_t)d > size)
		cc_hit(&res->h[CC_DEEP], off, "CFA = sp+%" PRId64 ": the caller's return address is above perf's %" PRIu64
		       "-byte stack copy", d, size);
	else if (size && d > 0 && (uint64_t)d + 8 > size)
		cc_hit(&res->h[CC_DEEP], off, "CFA = sp+%" PRId64 ": the return address is the last word of perf's %" PRIu64
		       "-byte stack copy, which perf's libunwind path never reads, and the caller's frame is above it",
		       d, size);
	else if (size && d > 0 && (uint64_t)d + 16 > size)
		cc_hit(&res->h[CC_DEEP], off, "CFA = sp+%" PRId64 ": the caller's return address (at the CFA or above) is "
		       "at best the last word of perf's %" PRIu64 "-byte stack copy, which perf's libunwind path never reads",
		       d, size);
	if (c->lu_regs && row->max_reg >= c->lu_regs)
		cc_hit(&res->h[CC_LUREG], off, "the CFI names DWARF register %u; libunwind knows 0-%u only", row->max_reg,
		       c->lu_regs - 1);
}

/* The boundary at off has the same row and the same state as the one the
 * last cc_compare saw (only instructions without effects ran since, nops
 * mostly): cc_compare would make the same cc_hit calls, whose messages do
 * not name the boundary, so make them again without composing anything (the
 * rule's first failure, whose message is kept, came before). */
static void cc_again(struct cc_result *res, uint64_t off)
{
	for (uint32_t m = res->called; m; m &= m - 1) {
		struct cc_hits *h = &res->h[__builtin_ctz(m)];
		/* h->calls cc_mark(h, off) in one: the first marks off, the others
		 * see it marked, unless the pc list is full, where each one counts */
		if (h->w.npc && h->w.pc[h->w.npc - 1] == off)
			continue;
		if (h->w.npc < LINT_MAX_PCS) {
			h->n++;
			h->w.pc[h->w.npc++] = off;
		} else {
			h->n += h->calls;
		}
	}
}

static void cc_compare_full(struct lint_ctx *c, const struct uw_decoder *dc, const struct crow *row,
			    const struct uw_cfa_state *st, uint64_t off, struct cc_result *res)
{
	for (uint32_t m = res->called; m; m &= m - 1)
		res->h[__builtin_ctz(m)].calls = 0;
	res->called = 0;
	cc_compare(c, dc, row, st, off, res);
	for (unsigned i = 0; i < CC_NRULES; i++)
		if (res->h[i].calls)
			res->called |= 1u << i;
}

/* An instruction the decoder cannot decode at pc (JD081): say so with its
 * first bytes, and where the check takes up again (the next row's start,
 * which is an instruction boundary when the CFI is right); that row, or 0
 * when none is left. */
static size_t cc_undecoded(const struct uw_decoder *dc, const char *arch, const uint8_t *at, uint64_t left,
			   uint64_t off, uint64_t rel, const struct crow *rows, size_t nrows, size_t ri,
			   uint64_t end_off, struct cc_result *res)
{
	char hex[3 * 16 + 1] = "";
	size_t nb = left < dc->max_insn ? (size_t)left : dc->max_insn;
	for (size_t i = 0, o = 0; i < nb && i < 16; i++)
		o += (size_t)snprintf(hex + o, sizeof(hex) - o, "%s%02x", i ? " " : "", at[i]);
	size_t j = ri;
	while (j < nrows && rows[j].loc <= rel)
		j++;
	uint64_t to = j < nrows ? off + (rows[j].loc - rel) : end_off;
	cc_hit(&res->h[CC_UNDEC], off, "lint's %s decoder cannot decode the instruction that starts with the bytes %s "
	       "(%zu of the %" PRIu64 " left), so the code check does not compare the CFI rows of [+0x%" PRIx64
	       ", +0x%" PRIx64 ") with the code%s", arch, hex, nb, left, off, to,
	       j < nrows ? " (it takes up again at the next row)" : "");
	return j < nrows ? j : 0;
}

/* Follow the code over [s, e) with the decoder, comparing every row in force
 * at an instruction boundary; after a no-fall-through instruction the state
 * is taken again from the next row (and the saves are no longer known); at
 * an instruction it cannot decode, likewise from the next row's start. */
static void cc_follow(struct lint_ctx *c, const struct uw_decoder *dc, const char *arch, const uint8_t *code,
		      uint64_t code_addr, uint64_t s, uint64_t e, const struct crow *rows, size_t nrows,
		      uint64_t base, struct cc_result *res)
{
	struct uw_cfa_state st = { 0 };
	bool resync = true;
	if (s == code_addr) {
		/* function entry: CFA = rsp + 8 (the return address just pushed), sp + 0 on arm64 */
		uw_cfa_entry(&st, dc);
		resync = false;
	}
	size_t ri = 0;
	uint64_t pc = s;
	const struct crow *last = NULL;   /* the row of the last full compare */
	bool same = false;                /* and st is unchanged since */
	unsigned k = 0;
	for (; k < LINT_MAX_INSNS && pc < e; k++) {
		uint64_t rel = pc - base;     /* pc >= s >= base */
		while (ri < nrows && rows[ri].end <= rel)
			ri++;
		const struct crow *row = ri < nrows && rows[ri].loc <= rel ? &rows[ri] : NULL;
		if (row && resync) {
			st = (struct uw_cfa_state){ 0 };
			if (row->cfa_ok && row->cfa_reg == dc->sp) {
				st.sp_known = true;
				st.sp_d = row->cfa_off;
			} else if (row->cfa_ok && row->cfa_reg == dc->fp) {
				st.fp_known = true;
				st.fp_d = row->cfa_off;
			}
			cc_ra_resync(dc, row, &st);
			resync = false;
		}
		if (row && row == last && same) {
			cc_again(res, pc - code_addr);
		} else if (row) {
			cc_compare_full(c, dc, row, &st, pc - code_addr, res);
			last = row;
			same = true;
		}
		struct uw_insn x;
		size_t len = dc->decode(code + (pc - code_addr), (size_t)(e - pc), &x);
		if (!len) {
			size_t j = cc_undecoded(dc, arch, code + (pc - code_addr), e - pc, pc - code_addr, rel, rows, nrows,
						ri, e - code_addr, res);
			if (!j || base + rows[j].loc >= e)
				return;
			pc = base + rows[j].loc;
			resync = true;
			last = NULL;
			continue;
		}
		if (x.neff)
			uw_eff_apply(&st, &x);
		if (x.end)
			resync = true;
		same = same && !x.neff && !x.end;
		pc += len;
	}
	if (pc < e)
		cc_hit(&res->h[CC_UNDEC], pc - code_addr, "the code check follows at most %u instructions of an FDE, so it "
		       "does not compare the CFI rows of [+0x%" PRIx64 ", +0x%" PRIx64 ") with the code", k,
		       pc - code_addr, e - code_addr);
}

/* Do the bytes over [s, e) decode to instructions on whose first bytes every
 * row of the FDE starts?  (lint_salt.c's test of code bytes that are not the code) */
static bool cc_rows_on_insns(const struct uw_decoder *dc, const uint8_t *code, uint64_t code_addr, uint64_t s,
			     uint64_t e, const struct crow *rows, size_t nrows, uint64_t base)
{
	size_t ri = 0;
	uint64_t pc = s;
	for (unsigned k = 0; pc < e && k < LINT_MAX_INSNS; k++) {
		struct uw_insn x;
		size_t len = dc->decode(code + (pc - code_addr), (size_t)(e - pc), &x);
		if (!len)
			return false;
		while (ri < nrows && base + rows[ri].loc <= pc)
			ri++;
		if (ri < nrows && base + rows[ri].loc < pc + len)
			return false;
		pc += len;
	}
	return true;
}

/* The rows alone, for bytes that are not the code: a register saved below SP
 * by the row's own sp-based CFA (JD057), a return address rule x86_64's calls
 * cannot have (JD053), named at the row's start. */
static void cc_rows_only(const struct uw_decoder *dc, const struct crow *rows, size_t nrows, uint64_t base,
			 uint64_t code_addr, uint64_t s, uint64_t e, struct cc_result *res)
{
	for (size_t i = 0; i < nrows; i++) {
		const struct crow *row = &rows[i];
		uint64_t at = base + row->loc;
		if (at < s || at >= e)
			continue;
		if (dc->ra_at_cfa && !(row->ra_kind == EHF_OFFSET && row->ra_off == dc->ra_cfa_off))
			cc_hit(&res->h[CC_RA], at - code_addr, "the return address (r%u) rule is not 'at cfa%+" PRId64 "'",
			       dc->ra, dc->ra_cfa_off);
		if (!row->cfa_ok || row->cfa_reg != dc->sp)
			continue;
		uint32_t m = dc->sp < LINT_CODE_REGS ? row->saved & ~(1u << dc->sp) : row->saved;
		for (; m; m &= m - 1) {
			unsigned r = (unsigned)__builtin_ctz(m);
			int64_t o = row->off[r];
			if (row->cfa_off + o < 0) {
				cc_hit(&res->h[CC_BELOW], at - code_addr, "%s's rule says saved at cfa%+" PRId64 ", %" PRId64
				       " bytes below SP by the row's own CFA (sp%+" PRId64 "; the CFI alone: the dump's bytes "
				       "are not the code)", dc->reg_name(r), o, -(row->cfa_off + o), row->cfa_off);
				break;
			}
		}
	}
}

/* One finding per rule and FDE, naming every boundary it fails at. */
static void cc_say(struct lint_ctx *c, enum lint_rule_id id, uint64_t load_off, uint64_t fo, struct cc_hits *h)
{
	if (!h->n)
		return;
	memset(h->w.pc + h->w.npc, 0, (LINT_MAX_PCS - h->w.npc) * sizeof(h->w.pc[0]));
	memset(h->w.span, 0, sizeof(h->w.span));   /* instructions, not byte ranges */
	if (h->quiet) {
		lint_report_at(c, id, fo, &h->w, "%s", "");   /* counted, not shown */
		return;
	}
	char list[160] = "";
	size_t o = 0;
	for (unsigned i = 0; h->n > 1 && i < h->w.npc && o < sizeof(list); i++)
		o += (size_t)snprintf(list + o, sizeof(list) - o, "%s+0x%" PRIx64, i ? ", " : ": at ", h->w.pc[i]);
	if (h->n > 1 && h->n > h->w.npc && o < sizeof(list))
		snprintf(list + o, sizeof(list) - o, ", ...");
	h->w.load = load_off;
	if (id == LR_CODE_UNDECODED)
		lint_report_at(c, id, fo, &h->w, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " %s (%zu place%s where "
			       "the check stops%s)", load_off, h->w.pc[0], h->first, h->n, h->n == 1 ? "" : "s", list);
	else
		lint_report_at(c, id, fo, &h->w, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " %s (%zu instruction "
			       "boundar%s disagree%s%s)", load_off, h->w.pc[0], h->first, h->n, h->n == 1 ? "y" : "ies",
			       h->n == 1 ? "s" : "", list);
}

/* The key of an FDE's rows (struct rc_entry): its length, the CIE's
 * alignments, pointer encoding and program, the FDE's program; 0 when they
 * are not to be kept: a program too long for the key, an FDE program with a
 * byte 0x01 (DW_CFA_set_loc sets an address, not an advance: any such byte,
 * operand or not, keeps the FDE out) or a pc_begin whose advances could
 * overflow (each program byte advances at most 2^32 - 1 units). */
static size_t rc_key(const struct lint_ctx *c, const struct ehf_fde *fde, uint8_t *key)
{
	const struct ehf_cie *cie = fde->cie;
	uint64_t len = fde->pc_end - fde->pc_begin, ca = cie->code_align, most;
	int64_t da = cie->data_align;
	size_t n = 8 + 8 + 8 + 1 + 4 + 8 + cie->insns_len + fde->insns_len;
	if (n > LINT_RC_KEY || memchr(fde->insns, DW_CFA_set_loc, fde->insns_len) ||
	    __builtin_mul_overflow((uint64_t)fde->insns_len << 32, ca ? ca : 1, &most) ||
	    fde->pc_begin > UINT64_MAX - most)
		return 0;
	uint32_t ra = c->ra_col;
	uint64_t cl = cie->insns_len;
	uint8_t *k = key;
	memcpy(k, &len, 8), k += 8;
	memcpy(k, &ca, 8), k += 8;
	memcpy(k, &da, 8), k += 8;
	*k++ = cie->fde_enc;
	memcpy(k, &ra, 4), k += 4;
	memcpy(k, &cl, 8), k += 8;
	memcpy(k, cie->insns, cie->insns_len), k += cie->insns_len;
	memcpy(k, fde->insns, fde->insns_len);
	return n;
}

/* eight bytes a step (the key is zero-padded to a multiple of 8 by rc_key's caller) */
static uint64_t rc_hash(const uint8_t *p, size_t n)
{
	uint64_t h = 0x243f6a8885a308d3ull ^ n;
	for (size_t i = 0; i < n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	return h ^ (h >> 32);
}

/* The rows of an FDE, relative to its pc_begin: kept ones, or its program
 * run (and kept when it may be).  -1 when the program fails (reported). */
static int cc_rows(struct lint_ctx *c, const struct ehf_fde *fde, uint64_t fde_file_off, uint64_t s,
		   uint64_t code_addr, const uint8_t *key, size_t kn, uint64_t h, const struct crow **rows,
		   size_t *nrows)
{
	struct rc_entry *ent = NULL;
	if (kn && c->rcache) {
		struct rc_entry *two[2] = { &c->rcache[h % LINT_RC_SLOTS], &c->rcache[(h >> 32) % LINT_RC_SLOTS] };
		c->rc_clock++;
		for (int i = 0; i < 2; i++) {
			struct rc_entry *x = two[i];
			if (x->nrows && x->hash == h && x->key_len == kn && !memcmp(x->key, key, kn)) {
				x->used = c->rc_clock;
				*rows = x->rows;
				*nrows = x->nrows;
				return 0;
			}
		}
		ent = two[1]->used < two[0]->used ? two[1] : two[0];   /* empty ones have used 0 */
	}
	c->nrows = 0;
	c->rows_over = false;
	c->rows_base = fde->pc_begin;
	struct ju_err ee;
	if (ehf_rows(fde, collect_row, c, &ee) < 0) {
		lint_report(c, LR_EH_FRAME_PARSE, fde_file_off, "the CFA program of the FDE for %s+0x%" PRIx64
		       " fails: %s", "code", s - code_addr, ee.msg);
		return -EINVAL;
	}
	*rows = c->rows;
	*nrows = c->rows_over ? 0 : c->nrows;
	if (ent && !c->rows_over && c->nrows && c->nrows <= LINT_RC_ROWS) {
		ent->hash = h;
		ent->used = c->rc_clock;
		ent->key_len = (uint32_t)kn;
		ent->nrows = (uint32_t)c->nrows;
		memcpy(ent->key, key, kn);
		memcpy(ent->rows, c->rows, c->nrows * sizeof(*c->rows));
	}
	return 0;
}

/* The memo of whole code checks: the findings of the code check are a
 * function of the FDE's rows (so of its rc_key), where the FDE starts and
 * ends relative to the code, the code bytes it covers, the arch, perf's stack
 * size and which rules are quiet; the boundaries they name are offsets into
 * the code, the load and FDE offsets are added by cc_say.  A JIT that copies
 * one piece of code per function (CPython's perf trampolines) repeats all of
 * them: such a check is then served from here.  Only loads whose code bytes
 * are an earlier load's (check_identical) use it.  Keys are compared byte
 * for byte; one entry per slot, the newest stays. */
#define CM_SLOTS 64
#define CM_CODE 2048              /* code bytes at most (longer code is not kept) */
struct cm_hit {
	size_t n;
	unsigned npc;
	uint64_t pc[LINT_MAX_PCS];
	char first[240];
};
struct cm_entry {
	uint64_t hash;
	uint32_t key_len, code_len;   /* key_len 0: empty */
	uint64_t geo[5];              /* pc_begin, s, e relative to the code; the arch; stack size */
	uint32_t quiet;               /* bit i: h[i].first was not composed */
	uint8_t key[LINT_RC_KEY];
	uint8_t code[CM_CODE];
	struct cm_hit h[CC_NRULES];
};

/* The entry for this check: filled (a hit), or the slot to fill (*hit false).
 * NULL when the check is not to be kept. */
static struct cm_entry *cm_find(struct lint_ctx *c, const uint8_t *key, size_t kn, uint64_t kh,
				const uint64_t *geo, const uint8_t *code, size_t len, uint32_t quiet, bool *hit)
{
	*hit = false;
	if (c->cm_off || !kn || len > CM_CODE)
		return NULL;
	if (!c->cmemo && !(c->cmemo = calloc(CM_SLOTS, sizeof(*c->cmemo)))) {
		c->cm_off = true;
		return NULL;
	}
	uint8_t buf[CM_CODE + 8 + 5 * 8];
	memcpy(buf, geo, 5 * 8);
	memcpy(buf + 5 * 8, code, len);
	memset(buf + 5 * 8 + len, 0, 8);   /* rc_hash reads whole words */
	uint64_t h = rc_hash(buf, 5 * 8 + len) ^ kh * 0x9e3779b97f4a7c15ull;
	struct cm_entry *m = &c->cmemo[(h ^ h >> 17) % CM_SLOTS];
	*hit = m->key_len == kn && m->hash == h && m->code_len == len && !(m->quiet & ~quiet) &&
	       !memcmp(m->geo, geo, sizeof(m->geo)) && !memcmp(m->key, key, kn) && !memcmp(m->code, code, len);
	if (!*hit) {
		m->key_len = 0;           /* cm_keep fills it */
		m->hash = h;
	}
	return m;
}

/* Keep a check's findings in its slot (cm_find said where). */
static void cm_keep(struct cm_entry *m, const uint8_t *key, size_t kn, const uint64_t *geo, const uint8_t *code,
		    size_t len, const struct cc_result *res)
{
	m->quiet = 0;
	for (unsigned i = 0; i < CC_NRULES; i++) {
		const struct cc_hits *h = &res->h[i];
		struct cm_hit *k = &m->h[i];
		k->n = h->n;
		if (!h->n)
			continue;
		k->npc = h->w.npc;
		memcpy(k->pc, h->w.pc, h->w.npc * sizeof(h->w.pc[0]));
		if (h->quiet)
			m->quiet |= 1u << i;
		else
			snprintf(k->first, sizeof(k->first), "%s", h->first);
	}
	memcpy(m->geo, geo, sizeof(m->geo));
	memcpy(m->key, key, kn);
	memcpy(m->code, code, len);
	m->code_len = (uint32_t)len;
	m->key_len = (uint32_t)kn;
}

/* A check's findings from the memo, as cc_follow would have left them. */
static void cm_serve(const struct cm_entry *m, struct cc_result *res)
{
	for (unsigned i = 0; i < CC_NRULES; i++) {
		const struct cm_hit *k = &m->h[i];
		struct cc_hits *h = &res->h[i];
		h->n = k->n;
		if (!k->n)
			continue;
		h->w.npc = k->npc;
		memcpy(h->w.pc, k->pc, k->npc * sizeof(k->pc[0]));
		if (!h->quiet)
			snprintf(h->first, sizeof(h->first), "%s", k->first);
	}
}

/* Follow the code of one FDE with the stack-height model and compare every
 * row in force at an instruction boundary. */
void lint_code_check(struct lint_ctx *c, uint64_t load_off, const uint8_t *code, uint64_t code_addr,
		       uint64_t code_size, const struct ehf_fde *fde, uint64_t fde_file_off)
{
	const struct uw_decoder *dc = uw_decoder_for(c->mach);
	if (!dc)
		return;
	c->ra_col = dc->ra;
	const struct uw_arch *ua = c->mach <= UINT16_MAX ? uw_arch_by_mach((uint16_t)c->mach) : NULL;
	c->lu_regs = ua ? (unsigned)ua->lu_regs : 0;
	uint64_t s = fde->pc_begin > code_addr ? fde->pc_begin : code_addr;
	uint64_t e = fde->pc_end < code_addr + code_size ? fde->pc_end : code_addr + code_size;
	if (s >= e)
		return;
	uint8_t key[LINT_RC_KEY + 8];
	/* the memo is tried for code seen before only: unique code pays nothing
	 * for it (a repeated piece's first two copies are checked in full) */
	bool memo = c->code_seen && !c->cm_off && !c->salt_candidate;
	size_t kn = c->rcache || memo ? rc_key(c, fde, key) : 0;
	if (kn)
		memset(key + kn, 0, 8);   /* rc_hash reads whole words */
	uint64_t kh = kn ? rc_hash(key, kn) : 0;
	struct cc_result res;
	res.called = 0;
	uint32_t quiet = 0;
	for (unsigned i = 0; i < CC_NRULES; i++) {
		/* no memset of the 2.8 KB: messages and pcs are written before they are read */
		struct cc_hits *h = &res.h[i];
		h->quiet = lint_quiet(c, cc_rule[i]);
		quiet |= (uint32_t)h->quiet << i;
		h->n = 0;
		h->calls = 0;
		h->w.load = 0;
		h->w.whole = false;
		h->w.npc = 0;
	}
	uint64_t geo[5] = { fde->pc_begin - code_addr, s - code_addr, e - code_addr, c->mach,
			    c->o->stack_size };
	bool hit = false;
	struct cm_entry *m = !memo ? NULL : cm_find(c, key, kn, kh, geo, code + (s - code_addr), (size_t)(e - s), quiet, &hit);
	if (hit) {
		c->sum->memo_hits++;
		cm_serve(m, &res);
	} else {
		const struct crow *rows;
		size_t nrows;
		if (cc_rows(c, fde, fde_file_off, s, code_addr, key, kn, kh, &rows, &nrows) || !nrows)
			return;
		if (c->salt_candidate && (c->not_code ||
					  !cc_rows_on_insns(dc, code, code_addr, s, e, rows, nrows, fde->pc_begin))) {
			c->not_code = true;
			cc_rows_only(dc, rows, nrows, fde->pc_begin, code_addr, s, e, &res);
			m = NULL;
		} else {
			cc_follow(c, dc, ua ? ua->facts->name : "?", code, code_addr, s, e, rows, nrows, fde->pc_begin, &res);
		}
		if (m)
			cm_keep(m, key, kn, geo, code + (s - code_addr), (size_t)(e - s), &res);
	}
	for (unsigned i = 0; i < CC_NRULES; i++)
		cc_say(c, cc_rule[i], load_off, fde_file_off, &res.h[i]);
}
