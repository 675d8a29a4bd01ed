/* The oracle: what the EMITTED unwinding info predicts, computed by the
 * project's own CFI interpreter over the sample snapshot only. */
#include "view.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

struct or_regs {
	uint64_t val[EHF_NREGS];
	bool ok[EHF_NREGS];
	const struct uw_sample *s;
};

static int or_read_reg(void *arg, unsigned r, uint64_t *val)
{
	struct or_regs *R = arg;
	if (r >= EHF_NREGS || !R->ok[r])
		return -1;
	*val = R->val[r];
	return 0;
}

static int or_read_mem(void *arg, uint64_t addr, uint64_t *val)
{
	struct or_regs *R = arg;
	return uw_stack_read(R->s, addr, val) ? 0 : -1;
}

/* The CFI row for lookup; 1 (res says why) when there is none. */
static int or_find_row(const struct uw_view *v, uint64_t lookup, uint64_t pc, struct ehf_row *row,
		       const struct ehf_fde **fdep, struct uw_result *res)
{
	const struct uw_region *reg = uw_view_find(v, lookup);
	if (!reg) {
		res->stop = UW_STOP_NO_INFO;
		snprintf(res->why, sizeof(res->why), "no mapping for pc 0x%llx", (unsigned long long)pc);
		return 1;
	}
	if (!reg->has_cfi) {
		res->stop = reg->cfi_bad ? UW_STOP_BAD_INFO : UW_STOP_NO_INFO;
		snprintf(res->why, sizeof(res->why), "%s", reg->cfi_err);
		return 1;
	}
	const struct ehf_fde *fde = ehf_find_fde(&reg->cfi, lookup);
	if (!fde) {
		res->stop = UW_STOP_NO_INFO;
		snprintf(res->why, sizeof(res->why), "no FDE covers 0x%llx in %s",
			 (unsigned long long)lookup, reg->name ? reg->name : "?");
		return 1;
	}
	struct ehf_err ee;
	if (ehf_row_at(fde, lookup, row, &ee)) {
		res->stop = UW_STOP_BAD_INFO;
		snprintf(res->why, sizeof(res->why), "FDE at 0x%llx: %s",
			 (unsigned long long)fde->offset, ee.msg);
		return 1;
	}
	*fdep = fde;
	return 0;
}

/* The row's CFA; 1 (res says why) when it cannot be computed. */
static int or_cfa(struct or_regs *R, const struct ehf_row *row, const struct ehf_expr_ctx *ectx,
		  uint64_t pc, uint64_t *cfa, struct uw_result *res)
{
	struct ehf_err ee;
	if (row->cfa_kind == EHF_CFA_REG_OFF) {
		uint64_t base;
		if (or_read_reg(R, row->cfa_reg, &base)) {
			res->stop = UW_STOP_BAD_INFO;
			snprintf(res->why, sizeof(res->why), "CFA register r%u unknown at 0x%llx",
				 row->cfa_reg, (unsigned long long)pc);
			return 1;
		}
		*cfa = base + (uint64_t)row->cfa_off;
	} else if (ehf_eval_expr(row->cfa_expr, row->cfa_expr_len, ectx, false, 0, cfa, &ee)) {
		res->stop = UW_STOP_BAD_INFO;
		snprintf(res->why, sizeof(res->why), "CFA expression: %s", ee.msg);
		return 1;
	}
	return 0;
}

/* The caller's registers N from R by the row's rules; 1 when the RA's slot is
 * outside the stack copy.  A lost non-RA register leaves its UW_STOP_MEM in res
 * (a later stop overwrites it), as before the split. */
static int or_apply_rules(struct or_regs *R, struct or_regs *N, const struct ehf_row *row,
			  const struct ehf_fde *fde, const struct uw_sample *s, uint64_t cfa,
			  const struct ehf_expr_ctx *ectx, struct uw_result *res)
{
	struct ehf_err ee;
	for (int d = 0; d < EHF_NREGS; d++) {
		const struct ehf_rule *ru = &row->reg[d];
		uint64_t val = 0;
		switch (ru->kind) {
		case EHF_INITIAL:
		case EHF_SAME:
			continue;
		case EHF_UNDEF:
			N->ok[d] = false;
			continue;
		case EHF_OFFSET:
			if (!uw_stack_read(s, cfa + (uint64_t)ru->off, &val)) {
				res->stop = UW_STOP_MEM;
				snprintf(res->why, sizeof(res->why), "r%d saved at 0x%llx, outside the stack copy",
					 d, (unsigned long long)(cfa + (uint64_t)ru->off));
				if (d == (int)fde->cie->ra_reg)
					return 1;
				N->ok[d] = false;
				continue;
			}
			break;
		case EHF_VAL_OFFSET:
			val = cfa + (uint64_t)ru->off;
			break;
		case EHF_REGISTER:
			if (or_read_reg(R, ru->reg, &val)) {
				N->ok[d] = false;
				continue;
			}
			break;
		case EHF_EXPRESSION:
		case EHF_VAL_EXPRESSION:
			if (ehf_eval_expr(ru->expr, ru->expr_len, ectx, true, cfa, &val, &ee)) {
				N->ok[d] = false;
				continue;
			}
			if (ru->kind == EHF_EXPRESSION && !uw_stack_read(s, val, &val)) {
				N->ok[d] = false;
				continue;
			}
			break;
		default:
			continue;
		}
		N->val[d] = val;
		N->ok[d] = true;
	}
	return 0;
}

static int oracle_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
			 struct uw_result *res)
{
	const struct uw_arch *a = s->arch;
	struct or_regs R = { .s = s };
	for (int d = 0; d < a->ndw && d < EHF_NREGS; d++) {
		int p = a->perf_of_dw[d];
		if (p >= 0 && (s->mask >> p & 1)) {
			R.val[d] = s->regs[p];
			R.ok[d] = true;
		}
	}
	uint64_t pc = uw_reg(s, a->perf_ip);
	res->n = 0;
	res->stop = UW_STOP_END;
	res->why[0] = 0;
	res->addr[res->n] = pc;
	res->flags[res->n++] = 0;
	bool activation = true;
	struct ehf_row row;
	struct ehf_expr_ctx ectx = { or_read_reg, or_read_mem, &R };
	while (res->n < UW_MAX_FRAMES) {
		uint64_t lookup = activation ? pc : pc - 1;
		const struct ehf_fde *fde;
		if (or_find_row(v, lookup, pc, &row, &fde, res))
			return 0;
		uint64_t cfa;
		if (or_cfa(&R, &row, &ectx, pc, &cfa, res))
			return 0;
		struct or_regs N = R;
		if (or_apply_rules(&R, &N, &row, fde, s, cfa, &ectx, res))
			return 0;
		unsigned rac = fde->cie->ra_reg;
		bool ra_ok = rac < EHF_NREGS && N.ok[rac];
		if (!ra_ok) {
			res->stop = UW_STOP_END;
			snprintf(res->why, sizeof(res->why), "return address undefined at 0x%llx",
				 (unsigned long long)pc);
			return 0;
		}
		uint64_t ra = N.val[rac];
		/* DW_CFA_AARCH64_negate_ra_state: the RA is PAC-signed; strip it as
		 * libgcc's unwinder authenticates it (48-bit user VA, as fp.c) */
		if (row.ra_signed)
			ra &= a->pac_mask;
		uint64_t old_sp = R.val[a->dw_sp];
		N.val[a->dw_sp] = cfa;
		N.ok[a->dw_sp] = true;
		if (ra == 0) {
			res->stop = UW_STOP_END;
			return 0;
		}
		if (cfa == old_sp && ra == pc) {
			res->stop = UW_STOP_LOOP;
			snprintf(res->why, sizeof(res->why), "no progress at 0x%llx", (unsigned long long)pc);
			return 0;
		}
		R = N;
		pc = ra;
		activation = fde->cie->signal;
		res->addr[res->n] = pc;
		res->flags[res->n++] = 0;
	}
	res->stop = UW_STOP_MAX;
	return 0;
}

const struct uw_unwinder uw_oracle = {
	.name = "oracle", .about = "the emitted CFI, interpreted by the project's own reader",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_TRUTH, .unwind = oracle_unwind,
};
