/* The emitted CFI's row at a pc as one line of text ("CFA=sp+16 bp=[CFA-16]
 * ra=[CFA-8]"), registers by perf's names: for the reports' sample details. */
#include "cfarow.h"

#include <stdio.h>
#include <string.h>

const char *hx_dw_reg_name(const struct uw_arch *a, unsigned dw, char *tmp, size_t n)
{
	if ((int)dw == a->dw_pc)
		return "ra";
	if (dw < 40 && a->perf_of_dw[dw] >= 0 && a->perf_of_dw[dw] < UW_PERF_REGS &&
	    a->perf_reg_names[a->perf_of_dw[dw]])
		return a->perf_reg_names[a->perf_of_dw[dw]];
	snprintf(tmp, n, "r%u", dw);
	return tmp;
}

static size_t put_rule(const struct uw_arch *a, unsigned d, const struct ehf_rule *ru, char *buf, size_t n)
{
	char t1[16], t2[16];
	const char *name = hx_dw_reg_name(a, d, t1, sizeof(t1));
	switch (ru->kind) {
	case EHF_OFFSET:
		return (size_t)snprintf(buf, n, " %s=[CFA%+lld]", name, (long long)ru->off);
	case EHF_VAL_OFFSET:
		return (size_t)snprintf(buf, n, " %s=CFA%+lld", name, (long long)ru->off);
	case EHF_REGISTER:
		return (size_t)snprintf(buf, n, " %s=%s", name, hx_dw_reg_name(a, ru->reg, t2, sizeof(t2)));
	case EHF_UNDEF:
		return (size_t)snprintf(buf, n, " %s=undefined", name);
	case EHF_EXPRESSION:
	case EHF_VAL_EXPRESSION:
		return (size_t)snprintf(buf, n, " %s=expr", name);
	default:
		return 0;   /* same value / the arch's initial rule: nothing to say */
	}
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
	struct ehf_err ee;
	if (ehf_row_at(fde, pc, &row, &ee)) {
		snprintf(buf, n, "FDE at 0x%llx: %s", (unsigned long long)fde->offset, ee.msg);
		return;
	}
	char t[16];
	size_t o;
	if (!row.cfa_defined)
		o = (size_t)snprintf(buf, n, "CFA undefined");
	else if (row.cfa_kind == EHF_CFA_REG_OFF)
		o = (size_t)snprintf(buf, n, "CFA=%s%+lld", hx_dw_reg_name(a, row.cfa_reg, t, sizeof(t)),
				     (long long)row.cfa_off);
	else
		o = (size_t)snprintf(buf, n, "CFA=expr");
	for (unsigned d = 0; d < EHF_NREGS && o < n; d++)
		o += put_rule(a, d, &row.reg[d], buf + o, n - o);
}
