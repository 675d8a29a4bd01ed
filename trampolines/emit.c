/* Ops -> code + truth rows.  The arch encodes and reports arch-neutral stack
 * effects; this file alone interprets them (objtool's check.c idea), so every
 * arch gets its CFA rules from the same code. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "trampolines/tramp.h"
#include "juerr.h"

/* Interpretation state; a row is a snapshot of it. */
struct emit_state {
	int cfa_reg;
	int64_t cfa_off;
	int64_t sp_off;
	bool fp_set;
	int64_t fp_off;
	uint64_t saved_mask;
	int32_t saved_off[TR_NREGS];
	enum tr_ra_where ra_where;
	int64_t ra_off;
	int ra_reg;
};

static void state_entry(const struct tr_arch *a, struct emit_state *s)
{
	memset(s, 0, sizeof(*s));
	s->cfa_reg = a->facts->dw_sp;
	s->cfa_off = a->facts->entry_cfa_off;
	s->sp_off = a->facts->entry_cfa_off;
	s->ra_where = tr_entry_ra_where(a);
	s->ra_off = a->facts->ra_cfa_off;
	s->ra_reg = a->facts->dw_lr;
}

static bool is_saved(const struct emit_state *s, int r)
{
	return r >= 0 && r < TR_NREGS && (s->saved_mask >> r & 1);
}

static void snapshot(const struct tr_arch *a, const struct emit_state *s, struct tr_row *row)
{
	int fp = a->facts->dw_fp;
	row->cfa_reg = s->cfa_reg;
	row->cfa_off = s->cfa_off;
	row->sp_off = s->sp_off;
	row->fp_saved = is_saved(s, fp);
	row->fp_save_off = row->fp_saved ? s->saved_off[fp] : 0;
	row->ra_where = s->ra_where;
	row->ra_off = s->ra_off;
	row->ra_reg = s->ra_reg;
	row->fp_set = s->fp_set;
	row->fp_off = s->fp_off;
	int64_t rec = -s->fp_off + a->fp_rec_off;   /* the record's place, from the CFA */
	row->fp_frame = s->fp_set && row->fp_saved && row->fp_save_off == rec;
	row->fp_ra_ok = row->fp_frame && s->ra_where == TR_RA_AT_CFA && s->ra_off == rec + 8;
	row->saved_mask = s->saved_mask;
	memcpy(row->saved_off, s->saved_off, sizeof(row->saved_off));
}

/* "line 12: " or "op 3: " so a message finds its source. */
static void where_prefix(struct ju_err *err, const struct tr_op *op, size_t idx);
static void where_err(struct ju_err *err, const struct tr_op *op, size_t idx,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void where_err(struct ju_err *err, const struct tr_op *op, size_t idx,
		      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ju_verrf(err, EINVAL, 0, fmt, ap);
	va_end(ap);
	where_prefix(err, op, idx);
}

/* The same "line 12: " before a message an encoder filled. */
static void where_prefix(struct ju_err *err, const struct tr_op *op, size_t idx)
{
	if (op->line > 0)
		ju_err_prefix(err, "line %d: ", op->line);
	else
		ju_err_prefix(err, "op %zu: ", idx + 1);
}

/* Applies one effect; returns NULL or what went wrong. */
static const char *apply(const struct tr_arch *a, struct emit_state *s, const struct tr_eff *e)
{
	switch (e->kind) {
	case TR_EFF_SP_ADD:
		s->sp_off -= e->n;
		if (s->sp_off < 0)
			return "SP moves above the CFA (into the caller's frame)";
		if (s->cfa_reg == a->facts->dw_sp)
			s->cfa_off = s->sp_off;
		return NULL;
	case TR_EFF_SAVE: {
		int r = e->reg;
		if (r < 0 || r >= TR_NREGS)
			return "saved register out of range";
		/* FP already repointed holds our frame, not the caller's value: nothing to record. */
		if (r == a->facts->dw_fp && s->fp_set)
			return NULL;
		if (is_saved(s, r))
			return NULL;
		int64_t off = e->n - s->sp_off;
		if (s->ra_where == TR_RA_IN_REG && r == s->ra_reg) {
			s->ra_where = TR_RA_AT_CFA;
			s->ra_off = off;
			/* a register other than the link register that held the return
			 * address (x86_64's `pop %r10; ...; push %r10`) stores the return
			 * address back, not its caller's value: not a save */
			if (r != a->facts->dw_lr)
				return NULL;
		}
		s->saved_mask |= UINT64_C(1) << r;
		s->saved_off[r] = (int32_t)off;
		return NULL;
	}
	case TR_EFF_RESTORE: {
		int r = e->reg;
		if (r < 0 || r >= TR_NREGS)
			return "restored register out of range";
		s->saved_mask &= ~(UINT64_C(1) << r);
		s->saved_off[r] = 0;
		if (r == a->facts->dw_fp) {
			if (s->cfa_reg == a->facts->dw_fp) {
				s->cfa_reg = a->facts->dw_sp;
				s->cfa_off = s->sp_off;
			}
			s->fp_set = false;
			s->fp_off = 0;
		}
		/* the link register reloaded, or any register loaded from the return
		 * address's slot (x86_64's `pop %r10` at the return address): the
		 * return address is in that register now */
		if (s->ra_where == TR_RA_AT_CFA &&
		    (r == a->facts->dw_lr || e->n - s->sp_off == s->ra_off)) {
			s->ra_where = TR_RA_IN_REG;
			s->ra_reg = r;
			s->ra_off = 0;
		}
		return NULL;
	}
	case TR_EFF_FP_FROM_SP:
		s->fp_set = true;
		s->fp_off = s->sp_off - e->n;
		s->cfa_reg = a->facts->dw_fp;
		s->cfa_off = s->fp_off;
		return NULL;
	case TR_EFF_SP_FROM_FP:
		if (!s->fp_set)
			return "SP is set from FP, but FP was never set from SP here";
		s->sp_off = s->fp_off - e->n;
		if (s->sp_off < 0)
			return "SP moves above the CFA (into the caller's frame)";
		if (s->cfa_reg == a->facts->dw_sp)
			s->cfa_off = s->sp_off;
		return NULL;
	case TR_EFF_CALL:
	case TR_EFF_RET:
	case TR_EFF_JUMP:
		return NULL;
	}
	return "unknown effect";
}

#define TR_ROW_SPLIT_MAX 4   /* instructions of one op (tr_encode_words' TR_WORDS_MAX) */

/* The i-th "; "-separated part of an op's text (one instruction's), into out. */
static void text_part(const char *text, int i, char *out, size_t len)
{
	const char *p = text;
	for (int k = 0; k < i && p; k++)
		p = strstr(p, "; ") ? strstr(p, "; ") + 2 : NULL;
	if (!p) {
		snprintf(out, len, "%s", text);
		return;
	}
	const char *e = strstr(p, "; ");
	snprintf(out, len, "%.*s", e ? (int)(e - p) : (int)strlen(p), p);
}

/* An encoded op's rows, at out->code_size: one, or (an op of several
 * fixed-width instructions whose effects say which instruction has them)
 * one per instruction, each snapshot before its own effects. 0 or -errno. */
static int emit_rows(const struct tr_arch *arch, struct emit_state *s, struct tr_func *out, uint32_t len,
		     const char *text, const struct tr_eff *eff, int neff, struct ju_err *err)
{
	int nins = 1;
	for (int k = 0; k < neff; k++)
		if (eff[k].insn + 1 > nins)
			nins = eff[k].insn + 1;
	uint32_t w = len / (uint32_t)nins;             /* fixed width: every instruction as long */
	if (nins > TR_ROW_SPLIT_MAX || w * (uint32_t)nins != len) {
		ju_errf(err, EINVAL, 0, "%s: %d instructions in %u bytes", text, nins, len);
		return -EINVAL;
	}
	for (int j = 0; j < nins; j++) {
		if (out->nrows == TR_MAX_INSNS) {
			ju_errf(err, EINVAL, 0, "more than %d instructions", TR_MAX_INSNS);
			return -ERANGE;
		}
		struct tr_row *row = &out->rows[out->nrows];
		memset(row, 0, sizeof(*row));
		row->offset = (uint32_t)out->code_size + (uint32_t)j * w;
		row->len = w;
		if (nins > 1)
			text_part(text, j, row->insn, sizeof(row->insn));
		else
			snprintf(row->insn, sizeof(row->insn), "%s", text);
		snapshot(arch, s, row);
		for (int k = 0; k < neff; k++) {
			if (eff[k].insn != j && nins > 1)
				continue;
			const char *why = apply(arch, s, &eff[k]);
			if (why) {
				ju_errf(err, EINVAL, 0, "%s: %s", row->insn, why);
				return -EINVAL;
			}
			if (eff[k].kind == TR_EFF_CALL) {
				if (out->ret_off >= 0) {
					ju_errf(err, EINVAL, 0, "a second call_target (one call per function: the truth has one return address)");
					return -EINVAL;
				}
				row->is_call = true;
				out->ret_off = (int64_t)(row->offset + row->len);
				if (eff[k].n > 0)
					out->rel32_off = out->ret_off - eff[k].n;
			}
		}
		out->nrows++;
	}
	return 0;
}

int tr_emit(const struct tr_arch *arch, const struct tr_op *ops, size_t nops,
	    struct tr_func *out, struct ju_err *err)
{
	out->arch = arch;
	out->code_size = 0;
	out->nrows = 0;
	out->ncfi = 0;
	out->ret_off = -1;
	out->rel32_off = -1;
	if (!arch || !arch->encode) {
		ju_errf(err, EINVAL, 0, "no encoder for this arch");
		return -EINVAL;
	}
	struct emit_state s;
	state_entry(arch, &s);
	for (size_t i = 0; i < nops; i++) {
		const struct tr_op *op = &ops[i];
		if (op->kind == TR_OP_CFI) {
			if (out->ncfi == TR_MAX_INSNS) {
				where_err(err, op, i, "more than %d .cfi directives", TR_MAX_INSNS);
				return -ERANGE;
			}
			out->cfi[out->ncfi].offset = (uint32_t)out->code_size;
			snprintf(out->cfi[out->ncfi].text, sizeof(out->cfi[0].text), "%s", op->cfi);
			out->cfi[out->ncfi].line = op->line;
			out->ncfi++;
			continue;
		}
		struct tr_op o = *op;
		if (o.reg_name[0]) {
			int r = arch->dwarf_reg(o.reg_name);
			if (r < 0) {
				where_err(err, op, i, "'%s' is not an %s register", o.reg_name, arch->facts->name);
				return -EINVAL;
			}
			if (o.kind == TR_OP_RAW)
				o.effect_n = r;
			else
				o.n = r;
		}
		struct tr_eff eff[TR_MAX_EFF];
		int neff = 0;
		char text[sizeof(out->rows[0].insn) * TR_ROW_SPLIT_MAX];
		int len = arch->encode(&o, out->code + out->code_size, TR_MAX_CODE - out->code_size,
				       text, sizeof(text), eff, &neff, err);
		if (len < 0) {
			where_prefix(err, op, i);
			return len;
		}
		int rc = emit_rows(arch, &s, out, (uint32_t)len, text, eff, neff, err);
		if (rc) {
			where_prefix(err, op, i);
			return rc;
		}
		out->code_size += (size_t)len;
	}
	return 0;
}

void tr_raw_text(const struct tr_op *op, const char *etext, char *text, size_t textcap)
{
	size_t o = (size_t)snprintf(text, textcap, "raw");
	for (size_t i = 0; i < op->raw_len && o < textcap; i++)
		o += (size_t)snprintf(text + o, textcap - o, " %02x", op->raw[i]);
	if (o < textcap)
		snprintf(text + o, textcap - o, " (%s)", op->effect == TR_OP_NOP ? "none" : etext);
}

#define TR_WORDS_MAX 4

int tr_encode_words(const struct tr_op *op, uint8_t *buf, size_t cap, char *text, size_t textcap,
		    struct tr_eff eff[TR_MAX_EFF], int *neff, struct ju_err *err,
		    tr_words_fn *words, int maxw)
{
	uint32_t w[TR_WORDS_MAX];
	*neff = 0;
	if (maxw < 1 || maxw > TR_WORDS_MAX) {
		ju_errf(err, EINVAL, 0, "encoder: %d words per op, expected 1..%d", maxw, TR_WORDS_MAX);
		return -ERANGE;
	}
	if (op->kind == TR_OP_RAW) {
		char etext[64] = "";
		int rc = op->effect == TR_OP_NOP ? 0 :
			 words(op->effect, op->effect_n, w, etext, sizeof(etext), eff, neff, err);
		if (rc < 0)
			return rc;
		for (int e = 0; e < *neff; e++)
			eff[e].insn = 0;          /* the raw bytes are one row, whatever they hold */
		if (op->raw_len > cap) {
			ju_errf(err, EINVAL, 0, "raw: no room for %zu bytes", op->raw_len);
			return -ENOSPC;
		}
		memcpy(buf, op->raw, op->raw_len);
		tr_raw_text(op, etext, text, textcap);
		return (int)op->raw_len;
	}
	int k = words(op->kind, op->n, w, text, textcap, eff, neff, err);
	if (k < 0)
		return k;
	if (cap < 4 * (size_t)k) {
		ju_errf(err, EINVAL, 0, "%s: no room for the instruction%s", tr_op_name(op->kind), k > 1 ? "s" : "");
		return -ENOSPC;
	}
	for (int i = 0; i < k; i++)
		for (int j = 0; j < 4; j++)
			buf[4 * i + j] = (uint8_t)(w[i] >> (8 * j));
	return 4 * k;
}
