/* The emitted CFI's row at a pc as one line of text ("CFA=sp+16 bp=[CFA-16]
 * ra=[CFA-8]"), registers by perf's names: for the reports' sample details. */
#include "harness/case/cfarow.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *hx_dw_reg_name(const struct uw_arch *a, unsigned dw, char *tmp, size_t n)
{
	if ((int)dw == a->facts->dw_pc)
		return "ra";
	if (dw < 40 && a->perf_of_dw[dw] >= 0 && a->perf_of_dw[dw] < UW_PERF_REGS &&
	    a->perf_reg_names[a->perf_of_dw[dw]])
		return a->perf_reg_names[a->perf_of_dw[dw]];
	snprintf(tmp, n, "r%u", dw);
	return tmp;
}

static const char *report_name(const void *ctx, unsigned dw, char *tmp, size_t n)
{
	return hx_dw_reg_name(ctx, dw, tmp, n);
}

/* replay's names: perf's register name (the return address column too), else rN */
static const char *replay_name(const void *ctx, unsigned dw, char *tmp, size_t n)
{
	const struct uw_arch *a = ctx;
	int p = (int)dw < a->ndw ? a->perf_of_dw[dw] : -1;
	const char *rn = p >= 0 ? a->perf_reg_names[p] : NULL;
	if (rn)
		return rn;
	snprintf(tmp, n, "r%u", dw);
	return tmp;
}

void hx_row_text(const struct uw_arch *a, const struct ehf_row *row, enum hx_row_style st, char *buf, size_t n)
{
	static const struct ehf_row_fmt styles[] = {
		[HX_ROW_REPORT] = { .cfa = "CFA", .cfa_undefined = "CFA undefined", .undef = "undefined",
				    .name = report_name, .nregs = EHF_NREGS, .brackets = true },
		[HX_ROW_REPLAY] = { .cfa = "cfa", .cfa_undefined = "cfa=undefined", .undef = "undef",
				    .name = replay_name, .brackets = true },
	};
	struct ehf_row_fmt f = styles[st];
	f.ctx = a;
	if (st == HX_ROW_REPLAY)
		f.nregs = (unsigned)a->ndw + 1;   /* the arch's columns and column ndw, as replay printed them */
	ehf_row_text(row, &f, buf, n);
}

void hx_cfa_row_text(const struct uw_view *v, uint64_t pc, char *buf, size_t n)
{
	const struct uw_arch *a = v->arch;
	const struct uw_region *reg = uw_view_find(v, pc);
	snprintf(buf, n, "-");
	if (!a || !reg)
		return;
	if (!reg->has_cfi) {
		snprintf(buf, n, "no CFI: %s", reg->cfi_err[0] ? reg->cfi_err : "none in this mapping");
		return;
	}
	const struct ehf_fde *fde = ehf_find_fde(&reg->cfi, pc);
	if (!fde) {
		snprintf(buf, n, "no FDE covers the pc");
		return;
	}
	struct ehf_row row;
	struct ju_err ee;
	if (ehf_row_at(fde, pc, &row, &ee)) {
		snprintf(buf, n, "FDE at 0x%llx: %s", (unsigned long long)fde->offset, ee.msg);
		return;
	}
	hx_row_text(a, &row, HX_ROW_REPORT, buf, n);
}

/* A truth row as a row of the profiler side, for the one formatter: the CFA
 * rule, each saved register at [CFA+off], and the return address in the pc's
 * column (hx_dw_reg_name calls it "ra"): at [CFA+off] or in its register. */
static void true_row(const struct uw_arch *ua, const struct tr_row *r, struct ehf_row *row)
{
	memset(row, 0, sizeof(*row));
	for (unsigned d = 0; d < EHF_NREGS; d++)
		row->reg[d].kind = EHF_INITIAL;
	row->cfa_defined = true;
	row->cfa_kind = EHF_CFA_REG_OFF;
	row->cfa_reg = (uint16_t)r->cfa_reg;
	row->cfa_off = r->cfa_off;
	for (unsigned d = 0; d < TR_NREGS && d < EHF_NREGS; d++)
		if (r->saved_mask & (1ull << d)) {
			row->reg[d].kind = EHF_OFFSET;
			row->reg[d].off = r->saved_off[d];
		}
	unsigned pc = (unsigned)ua->facts->dw_pc;
	if (pc >= EHF_NREGS)
		return;
	if (r->ra_where == TR_RA_AT_CFA) {
		row->reg[pc].kind = EHF_OFFSET;
		row->reg[pc].off = r->ra_off;
	} else {
		row->reg[pc].kind = EHF_REGISTER;
		row->reg[pc].reg = (uint16_t)r->ra_reg;
	}
}

/* the generator's truth row at the sample's offset, as the emitted row is printed */
void hx_true_row_text(const struct hx_case *c, const char *where, int offset, const struct uw_arch *ua,
		      char *buf, size_t n)
{
	snprintf(buf, n, "-");
	if (offset < 0)
		return;
	const struct tr_arch *ta = tr_arch_host();
	bool leaf = !strncmp(where, "leaf", 4);
	const char *g = strstr(where, "@g");           /* a later generation's ("tramp+0x4@g2") */
	size_t nops = leaf ? c->nleaf : c->nops;
	const struct tr_op *ops = leaf ? c->leaf_ops : g ? hx_case_gen_ops(c, atoi(g + 2), &nops) : c->ops;
	struct tr_func *f = calloc(1, sizeof(*f));
	struct ju_err err;
	if (!f || tr_emit(ta, ops, nops, f, &err)) {
		snprintf(buf, n, "(the truth rows could not be rebuilt)");
		free(f);
		return;
	}
	for (size_t i = 0; i < f->nrows; i++) {
		const struct tr_row *r = &f->rows[i];
		if (r->offset != (uint32_t)offset)
			continue;
		struct ehf_row row;
		true_row(ua, r, &row);
		hx_row_text(ua, &row, HX_ROW_REPORT, buf, n);
		break;
	}
	free(f);
}

/* the rules one row has and the other lacks: "emitted only: bp=[CFA-16]; true only: ..." */
void hx_row_diff_text(const char *emitted, const char *truth, char *buf, size_t n)
{
	buf[0] = 0;
	if (!strcmp(emitted, truth) || truth[0] == '-' || truth[0] == '(')
		return;
	const char *rows[2] = { emitted, truth };
	size_t o = 0;
	for (int k = 0; k < 2; k++) {
		char a[200], *save = NULL;
		bool any = false;
		snprintf(a, sizeof(a), "%s", rows[k]);
		for (char *tok = strtok_r(a, " ", &save); tok && o < n; tok = strtok_r(NULL, " ", &save)) {
			const char *hit = strstr(rows[!k], tok);
			size_t tl = strlen(tok);
			if (hit && (hit == rows[!k] || hit[-1] == ' ') && (hit[tl] == ' ' || !hit[tl]))
				continue;
			o += (size_t)snprintf(buf + o, n - o, "%s%s", any ? " " : o ? "; true only: " : k ? "true only: " : "emitted only: ", tok);
			any = true;
		}
	}
}

/* "r6" in an unwinder's message as "r6 (bp)": DWARF numbers with perf's names */
void hx_term_regnames(const struct uw_arch *a, const char *in, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 1 < n; p++) {
		out[o++] = *p;
		bool word_start = p == in || !isalnum((unsigned char)p[-1]);
		if (!a || *p != 'r' || !word_start || !isdigit((unsigned char)p[1]))
			continue;
		char *end;
		long reg = strtol(p + 1, &end, 10);
		if (isalnum((unsigned char)*end) || reg < 0 || reg >= 40)
			continue;
		int perf = a->perf_of_dw[reg];
		const char *name = reg == a->facts->dw_pc ? "return address" :
				   perf >= 0 && perf < UW_PERF_REGS ? a->perf_reg_names[perf] : NULL;
		for (p++; p < end && o + 1 < n; p++)
			out[o++] = *p;
		p--;
		if (name && o + 1 < n)
			o += (size_t)snprintf(out + o, n - o, " (%s)", name);
		if (o >= n)
			o = n - 1;
	}
	out[o] = 0;
}
