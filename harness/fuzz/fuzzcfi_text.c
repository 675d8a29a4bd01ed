/* fuzz-cfi: a generated sample as case-file text, the only form it runs in
 * (the text goes through the case parser like any file, and a finding is
 * written exactly as it ran). */
#include <dwarf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/fuzz/fuzzcfi.h"
#include "harness/run/session.h"
#include "unwinders/unwind.h"
#include "juerr.h"

/* as GNU as writes it (the case parser's tr_reg_any reads it back) */
static void reg_name(const struct tr_arch *a, int64_t r, char *buf, size_t len)
{
	arch_dw_name(a->facts, r >= 0 && r <= UINT32_MAX ? (unsigned)r : ~0u, true, buf, len);
}

void hx_fz_op_line(const struct tr_arch *a, const struct tr_op *op, char *buf, size_t len)
{
	char r[16];
	switch (op->kind) {
	case TR_OP_RAW: {
		size_t o = (size_t)snprintf(buf, len, "raw");
		for (size_t i = 0; i < op->raw_len && o < len; i++)
			o += (size_t)snprintf(buf + o, len - o, " %02x", op->raw[i]);
		if (o < len)
			snprintf(buf + o, len - o, " ; none");
		return;
	}
	case TR_OP_ALLOC:
	case TR_OP_FREE:
		snprintf(buf, len, op->n < 4096 ? "%s %lld" : "%s 0x%llx", tr_op_name(op->kind), (long long)op->n);
		return;
	case TR_OP_SAVE_REG:
	case TR_OP_RESTORE_REG:
		reg_name(a, op->n, r, sizeof(r));
		snprintf(buf, len, "%s %s", tr_op_name(op->kind), r);
		return;
	default:
		snprintf(buf, len, "%s", tr_op_name(op->kind));
	}
}

const char *hx_fz_enc_name(uint8_t enc, char *buf, size_t len)
{
	static const char *const fmt[16] = {
		[DW_EH_PE_absptr] = "absptr", [DW_EH_PE_uleb128] = "uleb128", [DW_EH_PE_udata2] = "udata2",
		[DW_EH_PE_udata4] = "udata4", [DW_EH_PE_udata8] = "udata8", [DW_EH_PE_sleb128] = "sleb128",
		[DW_EH_PE_sdata2] = "sdata2", [DW_EH_PE_sdata4] = "sdata4", [DW_EH_PE_sdata8] = "sdata8",
	};
	if (enc == DW_EH_PE_omit)
		return "omit";
	const char *app = (enc & 0x70) == DW_EH_PE_pcrel ? "pcrel|" : (enc & 0x70) == DW_EH_PE_datarel ? "datarel|"
			: (enc & 0x70) == DW_EH_PE_textrel ? "textrel|" : "";
	const char *f = fmt[enc & 0x0f] ? fmt[enc & 0x0f] : "absptr";
	if (!app[0] || strcmp(f, "absptr"))
		snprintf(buf, len, "%s%s", app, f);
	else
		snprintf(buf, len, "%.7s", app);   /* "pcrel" alone: pcrel|absptr */
	return buf;
}

struct out {
	char *p;
	size_t cap, len;
	bool overflow;
};

__attribute__((format(printf, 2, 3)))
static void o_printf(struct out *o, const char *fmt, ...)
{
	if (o->overflow)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->cap - o->len)
		o->overflow = true;
	else
		o->len += (size_t)n;
}

static uint64_t case_features(const struct hx_fz_gen *g)
{
	uint64_t f = 0;
	bool call = false;
	for (size_t i = 0; i < g->nops; i++) {
		const struct tr_op *op = &g->ops[i];
		f |= op->kind == TR_OP_PUSH_FP ? 1ull << FZF_FP : 0;
		f |= op->kind == TR_OP_SET_FP ? 1ull << FZF_SET_FP : 0;
		f |= op->kind == TR_OP_LEAVE ? 1ull << FZF_LEAVE : 0;
		f |= op->kind == TR_OP_SAVE_REG ? 1ull << FZF_SAVE_REG : 0;
		f |= op->kind == TR_OP_ALLOC && op->n >= 4096 ? 1ull << FZF_BIG_ALLOC : 0;
		f |= g->place[i] == HX_FZ_DEAD && op->kind == TR_OP_RET ? 1ull << FZF_DEAD_RET : 0;
		f |= g->place[i] == HX_FZ_DEAD && op->kind == TR_OP_TAIL_JUMP ? 1ull << FZF_DEAD_TAIL : 0;
		call |= op->kind == TR_OP_CALL_TARGET;
	}
	const struct tr_unwind_opts *u = &g->unw;
	f |= !call ? 1ull << FZF_NO_CALL : 0;
	f |= g->depth > 1 ? 1ull << FZF_DEPTH2 : 0;
	f |= u->cie_version == 3 ? 1ull << FZF_CIE_V3 : 0;
	f |= u->terminator ? 1ull << FZF_TERMINATOR : 0;
	f |= strchr(u->cie_aug, 'L') && u->lsda_enc != DW_EH_PE_omit ? 1ull << FZF_LSDA : 0;
	return f;
}

static void code_section(struct out *o, const struct hx_fz_gen *g, const struct tr_op *ops)
{
	o_printf(o, "\n[code]\n");
	for (size_t i = 0; i < g->nops; i++) {
		char line[128];
		hx_fz_op_line(g->arch, &ops[i], line, sizeof(line));
		if (g->place[i] == HX_FZ_DEAD) {
			struct ju_err err;
			char real[64], insn[48] = "";
			uint8_t b[TR_RAW_MAX];
			struct tr_eff eff[TR_MAX_EFF];
			int neff;
			hx_fz_op_line(g->arch, &g->ops[i], real, sizeof(real));
			g->arch->encode(&g->ops[i], b, sizeof(b), insn, sizeof(insn), eff, &neff, &err);
			o_printf(o, "%-24s # skipped exit: %s (%s)\n", line, real, insn);
		} else if (g->place[i] == HX_FZ_JUMP) {
			o_printf(o, "%-24s # jumps over the skipped exit to the landing pad\n", line);
		} else {
			o_printf(o, "%s\n", line);
		}
	}
}

static void unwind_section(struct out *o, const struct hx_fz_gen *g, const struct hx_fz_prog *p)
{
	char e1[32];
	const struct tr_unwind_opts *u = &g->unw;
	o_printf(o, "\n[unwind]\n# CFA program (%s):", p->n ? "each instruction" : "empty");
	size_t col = 80;
	for (size_t i = 0; i < p->n; i++) {
		size_t l = strlen(p->insn[i].text) + 2;
		if (col + l > 100) {
			o_printf(o, "\n#  ");
			col = 3;
		}
		o_printf(o, " %s%s", p->insn[i].text, i + 1 < p->n ? ";" : "");
		col += l;
	}
	/* an empty program is written as one DW_CFA_nop (a case's bytes are never empty) */
	o_printf(o, "\ncfi = bytes%s", p->n ? "" : " 00");
	for (size_t i = 0; i < p->n; i++)
		for (size_t b = 0; b < p->insn[i].len; b++)
			o_printf(o, " %02x", p->insn[i].bytes[b]);
	o_printf(o, "\ncie = %s\n", u->cie_aug[0] ? u->cie_aug : "none");
	if (u->cie_version != 1)
		o_printf(o, "cie_version = %d\n", u->cie_version);
	o_printf(o, "fde_enc = %s\n", hx_fz_enc_name(u->fde_enc, e1, sizeof(e1)));
	if (strchr(u->cie_aug, 'L'))
		o_printf(o, "lsda_enc = %s\n", hx_fz_enc_name(u->lsda_enc, e1, sizeof(e1)));
	o_printf(o, "hdr = %s\n", u->hdr == TR_HDR_BEFORE ? "before" : u->hdr == TR_HDR_NONE ? "none" : "after");
	if (u->hdr != TR_HDR_NONE)
		o_printf(o, "table_enc = %s\n", u->hdr_table ? hx_fz_enc_name(u->table_enc, e1, sizeof(e1)) : "omit");
	if (u->terminator)
		o_printf(o, "terminator = yes\n");
	if (u->eh_unaligned)
		o_printf(o, "eh_frame = unaligned\n");
}

/* the work space of one call (tens of kB: not on the stack) */
struct text_work {
	struct tr_op ops[HX_FZ_MAX_OPS];
	struct tr_func truth;
	struct hx_fz_prog prog;
	struct hx_fz_gen copy;
};

static int case_text(struct text_work *w, struct hx_fz_gen *g, const char *name, const char *about,
		     const char *expect_text, char *buf, size_t cap, uint64_t *features, struct ju_err *err)
{
	struct tr_op *ops = w->ops;
	struct tr_func *truth = &w->truth;
	struct hx_fz_prog *prog = &w->prog;
	size_t n;
	int rc = hx_fz_exec_ops(g, ops, &n, err);
	if (!rc)
		rc = tr_emit(g->arch, ops, n, truth, err);
	if (!rc)
		rc = hx_fz_encode(g, truth, prog, err);
	if (rc)
		return rc;
	bool call = truth->ret_off >= 0;
	struct out o = { .p = buf, .cap = cap };
	o_printf(&o, "[case]\nname  = %s\narch  = %s\nabout = %s\n", name, g->arch->facts->name, about);
	code_section(&o, g, ops);
	unwind_section(&o, g, prog);
	o_printf(&o, "\n[sample]\nat = every-insn%s\n", call ? ", in-callee" : "");
	if (g->depth > 1)
		o_printf(&o, "depth = %d\n", g->depth);
	o_printf(&o, "\n[expect]\n");
	if (expect_text) {
		o_printf(&o, "%s", expect_text);
	} else {
		/* a placeholder: the run is read for its verdicts, not judged */
		char names[256];
		hx_column_list(g->arch->facts->name, names, sizeof(names));
		for (char *save = NULL, *t = strtok_r(names, ",", &save); t; t = strtok_r(NULL, ",", &save))
			o_printf(&o, "%s = %s\n", t, hx_column_by_name(t)->ref == UW_REF_TRUTH ? "consistent" : "ok");
	}
	if (o.overflow) {
		ju_errf(err, EINVAL, 0, "case text longer than %zu bytes", cap);
	}
	if (features)
		*features = prog->features | case_features(g);
	return 0;
}

int hx_fz_case_text(struct hx_fz_gen *g, const char *name, const char *about, const char *expect_text,
		    char *buf, size_t cap, uint64_t *features, struct ju_err *err)
{
	struct text_work *w = calloc(1, sizeof(*w));
	if (!w) {
		return ju_errf(err, ENOMEM, 0, "out of memory");
	}
	int rc = case_text(w, g, name, about, expect_text, buf, cap, features, err);
	free(w);
	return rc;
}

int hx_fz_program(struct hx_fz_gen *g, bool plain, struct hx_fz_prog *p, struct ju_err *err)
{
	struct text_work *w = calloc(1, sizeof(*w));
	size_t n;
	int rc = w ? hx_fz_exec_ops(g, w->ops, &n, err) : ju_errf(err, ENOMEM, 0, "out of memory");
	if (!rc)
		rc = tr_emit(g->arch, w->ops, n, &w->truth, err);
	if (!rc && !plain)
		rc = hx_fz_encode(g, &w->truth, p, err);
	else if (!rc) {
		w->copy = *g;
		w->copy.ndel = 0;
		w->copy.mut.kind = HX_FZ_MUT_NONE;
		rc = hx_fz_encode(&w->copy, &w->truth, p, err);
	}
	free(w);
	return rc;
}
