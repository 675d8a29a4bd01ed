/* The oracle: what the EMITTED unwinding info predicts, computed by the
 * project's own CFI interpreter over the sample snapshot only. */
#include "unwinders/view.h"

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rows the oracle computed, by pc, per view (uw_view.rows): a replay
 * meets the same pcs over and over (every sample of a case walks the same
 * harness frames), and running the CIE and FDE programs again for each was
 * most of its time.  An entry keeps what a frame step needs: the CFA rule
 * and the rules other than "same value" (a row has a handful). */
#define OR_CACHE 128
#define OR_RULES 20

struct or_rule {
	uint16_t reg;
	struct ehf_rule rule;
};

struct or_row {
	uint64_t pc;                  /* the lookup pc; 0: an empty slot */
	const struct ehf_fde *fde;
	uint8_t cfa_kind;
	bool ra_signed;
	uint16_t cfa_reg;
	int nrules;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	size_t cfa_expr_len;
	struct or_rule rules[OR_RULES];
};

struct uw_row_cache {
	struct or_row slot[OR_CACHE];
};

struct uw_row_cache *uw_row_cache_new(void)
{
	return calloc(1, sizeof(struct uw_row_cache));
}

void uw_row_cache_free(struct uw_row_cache *c)
{
	free(c);
}

/* The FDE for lookup in the view, or NULL with res's stop and why set. */
static const struct ehf_fde *or_fde(const struct uw_view *v, uint64_t pc, uint64_t lookup, struct uw_result *res)
{
	const struct uw_region *reg = uw_view_find(v, lookup);
	if (!reg) {
		res->stop = UW_STOP_NO_INFO;
		uw_why_hex(res->why, sizeof(res->why), "no mapping for pc ", pc, "");
		return NULL;
	}
	if (!reg->has_cfi) {
		res->stop = reg->cfi_bad ? UW_STOP_BAD_INFO : UW_STOP_NO_INFO;
		snprintf(res->why, sizeof(res->why), "%s", reg->cfi_err);
		return NULL;
	}
	const struct ehf_fde *fde = ehf_find_fde(&reg->cfi, lookup);
	if (!fde) {
		res->stop = UW_STOP_NO_INFO;
		snprintf(res->why, sizeof(res->why), "no FDE covers 0x%llx in %s",
			 (unsigned long long)lookup, reg->name ? reg->name : "?");
	}
	return fde;
}

/* lookup's slot in the view's cache: the one holding it, else the first
 * empty one of its OR_PROBES (open addressing: a view's few lookup pcs -
 * the samples' pcs and the return addresses above them - each keep their
 * own row; a direct-mapped cache gave two of them one slot in about half
 * the runs, by where ASLR put the code, and the rows were computed again
 * at every sample), else the home slot (evicted).  NULL: no cache, or
 * lookup 0 (the empty mark). */
#define OR_PROBES 8
static struct or_row *or_slot(struct uw_row_cache *c, uint64_t lookup)
{
	if (!c || !lookup)
		return NULL;
	size_t h = (size_t)((lookup * 0x9e3779b97f4a7c15ull) >> 57) % OR_CACHE;
	for (size_t i = 0; i < OR_PROBES; i++) {
		struct or_row *r = &c->slot[(h + i) % OR_CACHE];
		if (r->pc == lookup || !r->pc)
			return r;
	}
	return &c->slot[h];
}

/* The row at lookup: the view's cached one, else computed into *hdr and
 * rules (kept in the cache when it has at most OR_RULES rules).  Returns the
 * row's rules (n in (*hdr)->nrules), or NULL with res's stop and why set. */
static const struct or_rule *or_row_at(const struct uw_view *v, uint64_t pc, uint64_t lookup,
				       const struct or_row **hdr, struct or_row *tmp,
				       struct or_rule big[EHF_NREGS], struct uw_result *res)
{
	struct or_row *slot = or_slot(v->rows, lookup);
	if (slot && slot->pc == lookup) {
		*hdr = slot;
		return slot->rules;
	}
	const struct ehf_fde *fde = or_fde(v, pc, lookup, res);
	if (!fde)
		return NULL;
	static __thread struct ehf_row row;
	struct ju_err ee;
	if (ehf_row_at(fde, lookup, &row, &ee)) {
		res->stop = UW_STOP_BAD_INFO;
		snprintf(res->why, sizeof(res->why), "FDE at 0x%llx: %s", (unsigned long long)fde->offset, ee.msg);
		return NULL;
	}
	*tmp = (struct or_row){ .pc = lookup, .fde = fde, .cfa_kind = row.cfa_kind, .ra_signed = row.ra_signed,
				.cfa_reg = row.cfa_reg, .cfa_off = row.cfa_off, .cfa_expr = row.cfa_expr,
				.cfa_expr_len = row.cfa_expr_len };
	for (int d = 0; d < EHF_NREGS; d++)
		if (row.reg[d].kind != EHF_INITIAL && row.reg[d].kind != EHF_SAME)
			big[tmp->nrules++] = (struct or_rule){ (uint16_t)d, row.reg[d] };
	*hdr = tmp;
	if (tmp->nrules > OR_RULES)
		return big;
	memcpy(tmp->rules, big, sizeof(big[0]) * (size_t)tmp->nrules);
	if (slot)
		*slot = *tmp;
	return tmp->rules;
}

struct or_regs {
	uint64_t val[EHF_NREGS];
	bool ok[EHF_NREGS];
	const struct uw_sample *s;
};

static int or_read_reg(void *arg, unsigned r, uint64_t *val)
{
	struct or_regs *R = arg;
	if (r >= EHF_NREGS || !R->ok[r])
		return -ENODATA;
	*val = R->val[r];
	return 0;
}

static int or_read_mem(void *arg, uint64_t addr, uint64_t *val)
{
	struct or_regs *R = arg;
	return uw_stack_read(R->s, addr, val) ? 0 : -EFAULT;
}

/* The CFA of a row under the registers R; a negative errno with res set
 * (-ENODATA a register the sample lacks, -EINVAL a failing expression). */
static int or_cfa(const struct or_row *h, struct or_regs *R, uint64_t pc, uint64_t *cfa, struct uw_result *res)
{
	struct ju_err ee;
	if (h->cfa_kind == EHF_CFA_REG_OFF) {
		uint64_t base;
		if (or_read_reg(R, h->cfa_reg, &base)) {
			res->stop = UW_STOP_BAD_INFO;
			snprintf(res->why, sizeof(res->why), "CFA register r%u unknown at 0x%llx", h->cfa_reg,
				 (unsigned long long)pc);
			return -ENODATA;
		}
		*cfa = base + (uint64_t)h->cfa_off;
		return 0;
	}
	struct ehf_expr_ctx ectx = { or_read_reg, or_read_mem, R };
	if (ehf_eval_expr(h->cfa_expr, h->cfa_expr_len, &ectx, false, 0, cfa, &ee)) {
		res->stop = UW_STOP_BAD_INFO;
		snprintf(res->why, sizeof(res->why), "CFA expression: %s", ee.msg);
		return -EINVAL;
	}
	return 0;
}

/* The value a rule gives its register in the caller (rules read R, the
 * callee's registers): 1 with *val, 0 undefined, 2 unchanged, -1 the return
 * address is outside the stack copy (res set: the walk ends). */
static int or_rule_value(const struct or_rule *x, struct or_regs *R, uint64_t cfa, unsigned ra_reg,
			 uint64_t *val, struct uw_result *res)
{
	const struct ehf_rule *ru = &x->rule;
	struct ehf_expr_ctx ectx = { or_read_reg, or_read_mem, R };
	struct ju_err ee;
	switch (ru->kind) {
	case EHF_OFFSET:
		if (uw_stack_read(R->s, cfa + (uint64_t)ru->off, val))
			return 1;
		res->stop = UW_STOP_MEM;
		snprintf(res->why, sizeof(res->why), "r%d saved at 0x%llx, outside the stack copy", x->reg,
			 (unsigned long long)(cfa + (uint64_t)ru->off));
		return x->reg == ra_reg ? -1 : 0;
	case EHF_VAL_OFFSET:
		*val = cfa + (uint64_t)ru->off;
		return 1;
	case EHF_REGISTER:
		return or_read_reg(R, ru->reg, val) ? 0 : 1;
	case EHF_EXPRESSION:
	case EHF_VAL_EXPRESSION:
		if (ehf_eval_expr(ru->expr, ru->expr_len, &ectx, true, cfa, val, &ee))
			return 0;
		return ru->kind == EHF_VAL_EXPRESSION || uw_stack_read(R->s, *val, val);
	case EHF_UNDEF:
		return 0;
	default:
		return 2;   /* leaves the register as it is */
	}
}

/* One step: R becomes the caller's registers; the return address in *ra.
 * 1 a frame, 0 the walk ends (res set). */
static int or_step(const struct or_row *h, const struct or_rule *rules, struct or_regs *R, uint64_t pc,
		   uint64_t *ra, struct uw_result *res)
{
	const struct uw_arch *a = R->s->arch;
	uint64_t cfa;
	if (or_cfa(h, R, pc, &cfa, res))
		return 0;
	uint64_t val[EHF_NREGS];
	int got[EHF_NREGS];
	unsigned rac = h->fde->cie->ra_reg;
	for (int i = 0; i < h->nrules; i++)
		if ((got[i] = or_rule_value(&rules[i], R, cfa, rac, &val[i], res)) < 0)
			return 0;
	uint64_t old_sp = R->val[a->facts->dw_sp];
	for (int i = 0; i < h->nrules; i++) {
		if (got[i] == 2)
			continue;
		R->ok[rules[i].reg] = got[i] == 1;
		if (got[i] == 1)
			R->val[rules[i].reg] = val[i];
	}
	if (rac >= EHF_NREGS || !R->ok[rac]) {
		res->stop = UW_STOP_END;
		uw_why_hex(res->why, sizeof(res->why), "return address undefined at ", pc, "");
		return 0;
	}
	*ra = R->val[rac];
	/* DW_CFA_AARCH64_negate_ra_state: the RA is PAC-signed; strip it as
	 * libgcc's unwinder authenticates it (48-bit user VA, as fp.c) */
	if (h->ra_signed)
		*ra &= a->pac_mask;
	R->val[a->facts->dw_sp] = cfa;
	R->ok[a->facts->dw_sp] = true;
	if (*ra == 0) {
		res->stop = UW_STOP_END;
		return 0;
	}
	if (cfa == old_sp && *ra == pc) {
		res->stop = UW_STOP_LOOP;
		uw_why_hex(res->why, sizeof(res->why), "no progress at ", pc, "");
		return 0;
	}
	return 1;
}

static int oracle_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
			 struct uw_result *res)
{
	const struct uw_arch *a = s->arch;
	struct or_regs R;
	memset(R.ok, 0, sizeof(R.ok));
	R.s = s;
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
	struct or_row tmp;
	static __thread struct or_rule big[EHF_NREGS];
	while (res->n < UW_MAX_FRAMES) {
		const struct or_row *h;
		const struct or_rule *rules = or_row_at(v, pc, activation ? pc : pc - 1, &h, &tmp, big, res);
		uint64_t ra;
		if (!rules || !or_step(h, rules, &R, pc, &ra, res))
			return 0;
		pc = ra;
		activation = h->fde->cie->signal;
		res->addr[res->n] = pc;
		res->flags[res->n++] = 0;
	}
	res->stop = UW_STOP_MAX;
	return 0;
}

const struct uw_unwinder uw_oracle = {
	.name = "oracle", .about = "the emitted CFI, interpreted by the project's own reader",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_TRUTH, .unwind = oracle_unwind,
	.bench_rate = 1e6,
};
