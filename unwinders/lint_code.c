/* lint's code-vs-CFI check (JD052, JD053): the CFI rows of an FDE against the
 * stack effects of its code, decoded by the arch's decoder (decode.h). */
#include "unwinders/lint_int.h"

#include <dwarf.h>
#include <inttypes.h>
#include <string.h>

#include "unwinders/decode.h"

static int collect_row(const struct ehf_row *row, void *arg)
{
	struct lint_ctx *c = arg;
	if (c->nrows >= LINT_MAX_ROWS) {
		c->rows_over = true;
		return 1;
	}
	struct crow *r = &c->rows[c->nrows++];
	memset(r, 0, sizeof(*r));
	r->loc = row->loc;
	r->end = row->end;
	if (row->cfa_defined && row->cfa_kind == EHF_CFA_REG_OFF) {
		r->cfa_ok = true;
		r->cfa_reg = row->cfa_reg;
		r->cfa_off = row->cfa_off;
	} else if (row->cfa_defined && row->cfa_expr_len >= 2 && row->cfa_expr[0] >= DW_OP_breg0 &&
		   row->cfa_expr[0] <= DW_OP_breg31) {
		/* DW_OP_bregN off alone is register + offset */
		size_t pos = 1;
		uint64_t v = 0;
		unsigned sh = 0;
		uint8_t b = 0x80;
		while (pos < row->cfa_expr_len && sh < 63 && (b & 0x80)) {
			b = row->cfa_expr[pos++];
			v |= (uint64_t)(b & 0x7f) << sh;
			sh += 7;
		}
		if (!(b & 0x80) && pos == row->cfa_expr_len) {
			if (sh < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << sh;
			r->cfa_ok = true;
			r->cfa_reg = (uint16_t)(row->cfa_expr[0] - DW_OP_breg0);
			r->cfa_off = (int64_t)v;
		}
	}
	r->ra_kind = row->reg[c->ra_col].kind;
	r->ra_off = row->reg[c->ra_col].off;
	return 0;
}

/* What the code check found in one FDE: the first CFA disagreement and the
 * first bad return address rule, with their counts. */
struct cc_result {
	size_t bad, ra_bad;
	uint64_t first_pc, ra_pc;
	int64_t first_row, first_code;
	unsigned first_reg;
	bool first_popped;
	uint8_t ra_kind;
};

/* Compare the row in force at pc with the state the code leaves. */
static void cc_compare(const struct uw_decoder *dc, const struct crow *row, const struct uw_cfa_state *st,
		       uint64_t pc, struct cc_result *res)
{
	if (row->cfa_ok) {
		bool known = row->cfa_reg == dc->sp ? st->sp_known : row->cfa_reg == dc->fp ? st->fp_known : false;
		int64_t want = row->cfa_reg == dc->sp ? st->sp_d : st->fp_d;
		bool popped = row->cfa_reg == dc->fp && st->fp_popped;
		if (((known && row->cfa_off != want) || popped) && !res->bad++) {
			res->first_pc = pc;
			res->first_row = row->cfa_off;
			res->first_code = want;
			res->first_reg = row->cfa_reg;
			res->first_popped = popped;
		}
	}
	/* x86_64: the return address is always at CFA-8 (arm64's moves from x30 to the stack) */
	if (dc->ra_at_cfa && !(row->ra_kind == EHF_OFFSET && row->ra_off == dc->ra_cfa_off) && !res->ra_bad++) {
		res->ra_pc = pc;
		res->ra_kind = row->ra_kind;
	}
}

/* Follow the code over [s, e) with the decoder, comparing every row in force
 * at an instruction boundary; after a no-fall-through instruction the state
 * is taken again from the next row. */
static void cc_follow(struct lint_ctx *c, const struct uw_decoder *dc, const uint8_t *code, uint64_t code_addr,
		      uint64_t s, uint64_t e, struct cc_result *res)
{
	struct uw_cfa_state st = { 0 };
	bool resync = true;
	if (s == code_addr) {
		/* function entry: CFA = rsp + 8 (the return address just pushed), sp + 0 on arm64 */
		st.sp_known = true;
		st.sp_d = dc->entry_cfa;
		resync = false;
	}
	size_t ri = 0;
	uint64_t pc = s;
	for (unsigned k = 0; k < LINT_MAX_INSNS && pc < e; k++) {
		while (ri < c->nrows && c->rows[ri].end <= pc)
			ri++;
		const struct crow *row = ri < c->nrows && c->rows[ri].loc <= pc ? &c->rows[ri] : NULL;
		if (row && resync) {
			st = (struct uw_cfa_state){ 0 };
			if (row->cfa_ok && row->cfa_reg == dc->sp) {
				st.sp_known = true;
				st.sp_d = row->cfa_off;
			} else if (row->cfa_ok && row->cfa_reg == dc->fp) {
				st.fp_known = true;
				st.fp_d = row->cfa_off;
			}
			resync = false;
		}
		if (row)
			cc_compare(dc, row, &st, pc, res);
		struct uw_insn x;
		size_t len = dc->decode(code + (pc - code_addr), (size_t)(e - pc), &x);
		if (!len)
			break;
		uw_eff_apply(&st, &x);
		if (x.end)
			resync = true;
		pc += len;
	}
}

static void cc_report(struct lint_ctx *c, const struct uw_decoder *dc, uint64_t load_off, uint64_t code_addr,
		      uint64_t fo, const struct cc_result *r)
{
	const char *reg = dc->reg_name(r->first_reg);
	size_t bad = r->bad, ra_bad = r->ra_bad;
	if (bad && r->first_popped)
		lint_report(c, LR_CFA_VS_CODE, fo, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " the CFI says CFA = %s%+"
		       PRId64 " but the frame pointer was restored to the caller's value before it (%zu instruction boundar%s "
		       "disagree%s)", load_off, r->first_pc - code_addr, reg, r->first_row, bad,
		       bad == 1 ? "y" : "ies", bad == 1 ? "s" : "");
	else if (bad)
		lint_report(c, LR_CFA_VS_CODE, fo, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " the CFI says CFA = %s%+"
		       PRId64 " but the instructions before it leave CFA = %s%+" PRId64 " (%zu instruction boundar%s "
		       "disagree%s)", load_off, r->first_pc - code_addr, reg, r->first_row, reg,
		       r->first_code, bad, bad == 1 ? "y" : "ies", bad == 1 ? "s" : "");
	uint8_t k = r->ra_kind;
	if (ra_bad)
		lint_report(c, LR_RA_RULE, fo, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " the return address (r16) "
		       "rule is %s, not 'at cfa-8' (%zu instruction boundar%s)", load_off, r->ra_pc - code_addr,
		       k == EHF_UNDEF ? "undefined" : k == EHF_SAME ? "same value" :
		       k == EHF_INITIAL ? "unset" : k == EHF_OFFSET ? "at another offset" : "not an offset",
		       ra_bad, ra_bad == 1 ? "y" : "ies");
}

/* Follow the code of one FDE with the stack-height model and compare every
 * row in force at an instruction boundary. */
void lint_code_check(struct lint_ctx *c, uint64_t load_off, const uint8_t *code, uint64_t code_addr,
		       uint64_t code_size, const struct ehf_fde *fde, uint64_t fde_file_off)
{
	const struct uw_decoder *dc = uw_decoder_for(c->hdr.elf_mach);
	if (!dc)
		return;
	c->ra_col = dc->ra;
	uint64_t s = fde->pc_begin > code_addr ? fde->pc_begin : code_addr;
	uint64_t e = fde->pc_end < code_addr + code_size ? fde->pc_end : code_addr + code_size;
	if (s >= e)
		return;
	c->nrows = 0;
	c->rows_over = false;
	struct ehf_err ee;
	if (ehf_rows(fde, collect_row, c, &ee) < 0) {
		lint_report(c, LR_EH_FRAME_PARSE, fde_file_off, "the CFA program of the FDE for %s+0x%" PRIx64
		       " fails: %s", "code", s - code_addr, ee.msg);
		return;
	}
	if (c->rows_over || !c->nrows)
		return;
	struct cc_result res = { 0 };
	cc_follow(c, dc, code, code_addr, s, e, &res);
	cc_report(c, dc, load_off, code_addr, fde_file_off, &res);
}
