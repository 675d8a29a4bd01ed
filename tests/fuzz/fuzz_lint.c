/* libFuzzer target: the strict jitdump reader, the .eh_frame/.eh_frame_hdr
 * parser and CFI interpreter, the linter and `dump`, on the same bytes.
 * Built and run by `make fuzz` (clang, ASan + UBSan). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/lint/lint.h"
#include "unwinders/model/perfview.h"
#include "unwinders/view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int hx_dump_mem(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
		enum pv_profile prof, bool code);

static int count_row(const struct ehf_row *row, void *arg)
{
	(*(size_t *)arg)++;
	return row->loc > row->end;   /* never: rows are ordered */
}

static int reg(void *arg, unsigned r, uint64_t *v)
{
	*v = 0x7ffc0000 + r * 8;
	return r > 32;
}

static int mem(void *arg, uint64_t a, uint64_t *v)
{
	*v = a ^ 0x5555;
	return (a & 7) != 0;
}

/* Everything the oracle does with one .eh_frame (+ header): FDE lookup, rows,
 * every row at a few pcs, the programs as text, expressions. */
static void eh_all(const uint8_t *eh, size_t ehs, uint64_t eh_addr, const uint8_t *hd, size_t hs,
		   uint64_t hdr_addr)
{
	struct ehf_table t;
	struct ehf_bases b = { eh_addr, 0, 0, 8 };
	struct ju_err e;
	if (!ehf_parse(&t, eh, ehs, &b, &e)) {
		for (size_t i = 0; i < t.nfdes && i < 64; i++) {
			const struct ehf_fde *f = &t.fdes[i];
			size_t n = 0;
			ehf_rows(f, count_row, &n, &e);
			uint64_t span = f->pc_end - f->pc_begin;
			for (uint64_t k = 0; k < 4 && span; k++) {
				struct ehf_row row;
				uint64_t pc = f->pc_begin + (span - 1) * k / 3;
				if (ehf_find_fde(&t, pc) && !ehf_row_at(f, pc, &row, &e)) {
					struct ehf_expr_ctx cx = { reg, mem, NULL };
					uint64_t v;
					if (row.cfa_kind == EHF_CFA_EXPR)
						ehf_eval_expr(row.cfa_expr, row.cfa_expr_len, &cx, false, 0, &v, &e);
					for (unsigned r = 0; r < EHF_NREGS; r++)
						if (row.reg[r].kind == EHF_EXPRESSION || row.reg[r].kind == EHF_VAL_EXPRESSION)
							ehf_eval_expr(row.reg[r].expr, row.reg[r].expr_len, &cx, true,
								      0x7ffc1000, &v, &e);
				}
			}
			char buf[256];
			for (size_t pos = 0, k = 0; pos < f->insns_len && k < 4096; k++)
				if (ehf_disasm_insn(f->insns, f->insns_len, &pos, f->cie, buf, sizeof(buf), &e))
					break;
		}
		for (size_t i = 0; i < t.ncies && i < 64; i++) {
			char buf[256];
			const struct ehf_cie *c = &t.cies[i];
			for (size_t pos = 0, k = 0; pos < c->insns_len && k < 4096; k++)
				if (ehf_disasm_insn(c->insns, c->insns_len, &pos, c, buf, sizeof(buf), &e))
					break;
		}
		ehf_table_free(&t);
	}
	struct ehf_hdr h;
	if (hs && !ehf_parse_hdr(hd, hs, hdr_addr, &h, &e) && h.has_table) {
		uint64_t fa;
		ehf_hdr_lookup(hd, hs, hdr_addr, &h, eh_addr - 1, &fa, &e);
		ehf_hdr_lookup(hd, hs, hdr_addr, &h, hdr_addr - 0x40, &fa, &e);
	}
}

static void lint_ignore(const struct lint_finding *f, void *arg)
{
	(*(size_t *)arg) += f->msg[0] != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *null;
	if (!null)
		null = fopen("/dev/null", "w");
	/* the strict reader, then the oracle's use of each load's data */
	struct jd_file f;
	struct ju_err je;
	memset(&f, 0, sizeof(f));
	if (!jd_parse_mem(&f, data, size, &je)) {
		for (size_t i = 0; i < f.nloads && i < 256; i++) {
			const struct jd_load *l = &f.loads[i];
			if (!l->has_unwind)
				continue;
			uint64_t ehs = l->unwinding_size - l->eh_frame_hdr_size;
			uint64_t eh_addr = l->code_addr + uw_jit_eh_off(l);
			eh_all(l->unwind, (size_t)ehs, eh_addr, l->unwind + ehs, (size_t)l->eh_frame_hdr_size,
			       eh_addr + ehs);
		}
	}
	jd_close(&f);
	/* the bytes themselves as .eh_frame and as .eh_frame_hdr */
	eh_all(data, size, 0x10000, data, size, 0x10000);
	/* the linter under every profile, and dump as text and JSON */
	size_t n = 0;
	struct lint_summary sum;
	for (int p = PV_CURRENT; p <= PV_5X_0X40; p++) {
		struct lint_opts o = { (enum pv_profile)p, "jit-1.dump", (unsigned)(size & 3), 8192 };
		lint_mem(data, size, &o, lint_ignore, &n, &sum);
	}
	/* not a dump: dump only prints its one-line error to stderr, which would
	 * flood the log */
	if (null && size >= 40 && !memcmp(data, "DTiJ", 4))
		hx_dump_mem(null, "fuzz", data, size, size & 1, PV_CURRENT, true);
	return 0;
}
