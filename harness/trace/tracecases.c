/* `trace --write-cases DIR`: each traced JIT function with a sample that was
 * not ok becomes a case file the generator reproduces, so the finding can be
 * run, changed and kept as a regression test without the JIT.
 *
 * One case per distinct (code bytes, unwinding info).  The code becomes ops:
 * an instruction whose bytes the JIT side's encoder writes for an op is that
 * op; one that moves the stack is `raw <bytes> ; <op>`, the op chosen from the
 * decoder's stack effects (unwinders/decode.h, the lint's decoder, written
 * apart from the JIT side); one that neither moves the stack nor branches nor
 * touches memory is `raw <bytes> ; none`.  The FDE program goes in as
 * `cfi = bytes`, the CIE's and the header's encodings as [unwind] keys, and
 * [expect] is the traced verdicts (the block `run --observe` writes).
 * Before a file is written, everything is checked, and a load that fails a
 * check gets no case and a line saying why:
 *  - the ops' bytes, encoded by the JIT side, equal the dump's code;
 *  - the unwinding info the generator writes for the case reads back (the
 *    project's .eh_frame reader, at perf's layout) as the dump's does: the
 *    CIE's fields and initial instructions, the FDE's range and program, the
 *    header and its table;
 *  - at every sample, the generator's truth row puts the return address
 *    where execution found it (the traced truth's first return address, read
 *    from the sample's stack copy);
 *  - every boundary was sampled (a case judges all of them) with one verdict
 *    per column at each.
 * Code beyond the format (a branch, a call other than call_target's, a
 * memory operand, `ret $n`) gets no case either: never a case whose truth
 * differs from the traced one. */
#include "harness/run/scratch.h"
#include "harness/trace/trace.h"
#include "harness/report/report.h"
#include "harness/capture/capture.h"
#include "harness/run/observe.h"
#include "harness/run/runner.h"
#include "harness/run/session.h"
#include "trampolines/tramp.h"
#include "unwinders/decode.h"
#include "unwinders/uwarch.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfview.h"

#include <capstone/capstone.h>
#include <dwarf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WC_LINE 160
#define WC_SAID 40          /* functions without a case named one by one */

struct wc {
	const struct hx_trace_cfg *cfg;
	const struct hx_trace_result *res;
	const struct hx_report *rep;
	const struct tr_arch *ta;
	const struct uw_decoder *dec;
	struct jd_file jd;
	csh cs;
	const struct hx_case_res **cr_of; /* per load, its case in the report (NULL: not sampled) */
	struct tr_func *f;               /* the case's code as the generator makes it */
	char (*lines)[WC_LINE];          /* the case's [code] lines */
	size_t nlines;
};

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static const struct jd_load *jd_load_of(const struct wc *w, const struct hx_trace_load *l)
{
	for (size_t k = 0; k < w->jd.nloads; k++)
		if (w->jd.loads[k].code_addr == l->addr && w->jd.loads[k].code_index == l->index)
			return &w->jd.loads[k];
	return NULL;
}

/* the JIT side's bytes for one op line; the length, or -1 */
static int encode_line(const struct wc *w, const char *line, uint8_t *out, size_t cap)
{
	struct tr_op op = { 0 };
	struct ju_err err;
	if (tr_op_parse(line, &op, &err) || tr_emit(w->ta, &op, 1, w->f, &err))
		return -EINVAL;
	if (w->f->code_size > cap)
		return -EINVAL;
	memcpy(out, w->f->code, w->f->code_size);
	return (int)w->f->code_size;
}

/* the op whose stack effect the decoder found, as a case line's op ("" for
 * none); -1 if the effects are none of the case format's ops */
static int effect_op(const struct wc *w, const struct uw_insn *x, char *op, size_t n)
{
	int64_t sp = 0;
	int store = -1, restore = -1;
	bool fp_from_sp = false, sp_from_fp = false, fp_restore = false, other = false;
	for (unsigned i = 0; i < x->neff; i++) {
		const struct uw_eff *e = &x->eff[i];
		switch (e->kind) {
		case UW_EFF_SP_ADD: sp += e->n; break;
		case UW_EFF_STORE: store = e->n ? -2 : (int)e->reg; break;
		case UW_EFF_LOAD:
		case UW_EFF_RESTORE: restore = (int)e->reg; break;
		case UW_EFF_FP_RESTORE: fp_restore = true; break;
		case UW_EFF_FP_FROM_SP: fp_from_sp = !e->n; other |= e->n != 0; break;
		case UW_EFF_SP_FROM_FP: sp_from_fp = !e->n; other |= e->n != 0; break;
		case UW_EFF_CLOBBER: break;
		default: other = true; break;
		}
	}
	const char *rn = NULL;
	int slot = (int)w->ta->fuzz.slot;
	op[0] = 0;
	if (other || store == -2)
		return -EINVAL;
	if (sp_from_fp && fp_restore && sp == slot && !fp_from_sp)
		snprintf(op, n, "leave");
	else if (fp_from_sp && !sp && store < 0 && restore < 0)
		snprintf(op, n, "set_fp");
	else if (sp == -slot && store == (int)w->dec->fp)
		snprintf(op, n, "push_fp");
	else if (sp == slot && fp_restore)
		snprintf(op, n, "pop_fp");
	else if (sp == -slot && store >= 0 && (rn = w->dec->reg_name((unsigned)store)))
		snprintf(op, n, "save_reg %s", rn);
	else if (sp == slot && restore >= 0 && (rn = w->dec->reg_name((unsigned)restore)))
		snprintf(op, n, "restore_reg %s", rn);
	else if (sp && store < 0 && restore < 0 && !fp_restore && !fp_from_sp && !sp_from_fp)
		snprintf(op, n, "%s %" PRId64, sp < 0 ? "alloc" : "free", sp < 0 ? -sp : sp);
	else if (sp || store >= 0 || restore >= 0 || fp_restore || fp_from_sp || sp_from_fp)
		return -EINVAL;
	return 0;
}

static bool in_groups(csh cs, const cs_insn *in, const int *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (cs_insn_group(cs, in, (unsigned)g[i]))
			return true;
	return false;
}

/* the first instruction before off (code at p - off) that writes reg, or -1 */
static int64_t written_before(struct wc *w, const uint8_t *p, uint64_t off, int reg, char *text, size_t tn)
{
	cs_insn *pre = NULL;
	size_t n = off ? cs_disasm(w->cs, p - off, off, 0, 0, &pre) : 0;
	int64_t at = -1;
	for (size_t i = 0; i < n && at < 0; i++)
		if (hx_cap_host.trace.writes_reg(&pre[i], reg)) {
			at = (int64_t)pre[i].address;
			snprintf(text, tn, "%s %s", pre[i].mnemonic, pre[i].op_str);
		}
	if (pre)
		cs_free(pre, n);
	return at;
}

/* A call a case makes with its target as the callee: through a register the
 * harness gives the target in (`raw <bytes> ; call_target`), or direct
 * (`call_target rel32`: the capture points it at a jump through
 * call_target's register), when no earlier instruction writes that register.
 * 0, or -1 with why (other calls: why the format cannot make them). */
static int reg_call(struct wc *w, const cs_insn *in, const uint8_t *p, size_t len, uint64_t off, char *line,
		    char *why, size_t wn)
{
	const struct hx_trace_arch *a = &hx_cap_host.trace;
	bool rel = a->call_rel && a->call_rel(in) && len == 5;
	int reg = rel ? a->target_reg : a->call_reg ? a->call_reg(in) : 0;
	if (!reg) {
		snprintf(why, wn, "+0x%" PRIx64 " (%s %s): a call the case format cannot make (a case calls its target "
			 "as call_target does%s%s, or by a direct call; not through memory)", off, in->mnemonic,
			 in->op_str, a->call_regs ? ", through a register the harness gives it in: " : "",
			 a->call_regs ? a->call_regs : "");
		return -EINVAL;
	}
	char text[64];
	int64_t at = written_before(w, p, off, reg, text, sizeof(text));
	if (at >= 0) {
		snprintf(why, wn, "+0x%" PRIx64 " (%s %s): %s is written first, at +0x%" PRIx64 " (%s): a case's "
			 "harness gives the target there only at entry", off, in->mnemonic, in->op_str,
			 rel ? "the register the case's direct call jumps through" : "the call's register", at, text);
		return -EINVAL;
	}
	if (rel) {
		snprintf(line, WC_LINE, "call_target rel32");
		return 0;
	}
	int o = snprintf(line, WC_LINE, "raw");
	for (size_t i = 0; i < len && o < WC_LINE - 24; i++)
		o += snprintf(line + o, WC_LINE - (size_t)o, " %02x", p[i]);
	snprintf(line + o, WC_LINE - (size_t)o, " ; call_target");
	return 0;
}

/* one instruction as a [code] line; 0, or -1 with why */
static int insn_line(struct wc *w, const uint8_t *p, size_t len, uint64_t off, char *line, char *why, size_t wn)
{
	uint8_t enc[64];
	cs_insn *in = NULL;
	char text[64] = "?";
	size_t got = cs_disasm(w->cs, p, len, 0, 1, &in);
	if (got)
		snprintf(text, sizeof(text), "%s %s", in->mnemonic, in->op_str);
	struct uw_insn x = { 0 };
	size_t dl = w->dec->decode(p, len, &x);
	char op[64];
	int rc = -1;
	static const int branch[] = { CS_GRP_JUMP, CS_GRP_CALL, CS_GRP_RET, CS_GRP_INT, CS_GRP_IRET,
				      CS_GRP_PRIVILEGE, CS_GRP_BRANCH_RELATIVE };
	if (!got || dl != len) {
		snprintf(why, wn, "+0x%" PRIx64 " (%s): the decoders do not agree on its length", off, text);
	} else if (in_groups(w->cs, in, branch, sizeof(branch) / sizeof(branch[0])) || x.end) {
		/* a branch, call or return: only as the op the generator writes */
		static const char *const ctl[] = { "ret", "call_target", "tail_jump" };
		for (size_t k = 0; k < 3 && rc; k++)
			if (encode_line(w, ctl[k], enc, sizeof(enc)) == (int)len && !memcmp(enc, p, len)) {
				snprintf(line, WC_LINE, "%s", ctl[k]);
				rc = 0;
			}
		if (rc && cs_insn_group(w->cs, in, CS_GRP_CALL))
			rc = reg_call(w, in, p, len, off, line, why, wn);
		else if (rc)
			snprintf(why, wn, "+0x%" PRIx64 " (%s): control flow the case format cannot express (a case's "
				 "code runs straight through, calls only its target and returns with a plain ret)", off, text);
	} else if (effect_op(w, &x, op, sizeof(op))) {
		snprintf(why, wn, "+0x%" PRIx64 " (%s): a stack effect no op of the case format has", off, text);
	} else if (!op[0] && !(hx_cap_host.trace.inert && hx_cap_host.trace.inert(in))) {
		snprintf(why, wn, "+0x%" PRIx64 " (%s): it reads or writes memory the case's harness does not "
			 "have (only stack ops, lea, nop and register arithmetic are run as they are)", off, text);
	} else {
		static const char *const plain[] = { "nop", "endbr64", "bti", "paciasp", "autiasp" };
		if (op[0] && encode_line(w, op, enc, sizeof(enc)) == (int)len && !memcmp(enc, p, len))
			snprintf(line, WC_LINE, "%s", op);
		else
			line[0] = 0;
		for (size_t k = 0; k < 5 && !op[0] && !line[0]; k++)
			if (encode_line(w, plain[k], enc, sizeof(enc)) == (int)len && !memcmp(enc, p, len))
				snprintf(line, WC_LINE, "%s", plain[k]);
		if (!line[0]) {
			int o = snprintf(line, WC_LINE, "raw");
			for (size_t i = 0; i < len && o < WC_LINE - 8; i++)
				o += snprintf(line + o, WC_LINE - (size_t)o, " %02x", p[i]);
			snprintf(line + o, WC_LINE - (size_t)o, " ; %s", op[0] ? op : "none");
		}
		rc = 0;
	}
	if (in)
		cs_free(in, got);
	return rc;
}

/* f's code is code (as long), but for a direct call's displacement (its
 * callee is the case's target, placed by the capture) */
static bool same_code(const struct tr_func *f, const uint8_t *code)
{
	for (size_t i = 0; i < f->code_size; i++)
		if (f->code[i] != code[i] &&
		    !(f->rel32_off >= 0 && i >= (size_t)f->rel32_off && i < (size_t)f->rel32_off + 4))
			return false;
	return true;
}

/* the [code] lines of load l, checked to encode to the dump's bytes; 0 or -1 with why */
static int code_lines(struct wc *w, const struct hx_trace_load *l, const struct jd_load *jl, char *why, size_t wn)
{
	w->nlines = 0;
	if (l->undecodable || !l->nbps) {
		snprintf(why, wn, "its code could not be decoded to the end");
		return -EINVAL;
	}
	if (l->nbps > TR_MAX_INSNS) {
		snprintf(why, wn, "%zu instructions: a case holds at most %d", l->nbps, TR_MAX_INSNS);
		return -EINVAL;
	}
	uint64_t end = l->decoded;
	if (l->code_differs && l->first_diff < end) {
		snprintf(why, wn, "its code in memory differs from the dump's at +0x%" PRIx64 ", inside an instruction",
			 l->first_diff);
		return -EINVAL;
	}
	for (size_t b = 0; b < l->nbps; b++) {
		uint64_t off = l->bps[b].addr - l->addr, next = b + 1 < l->nbps ? l->bps[b + 1].addr - l->addr : end;
		if (next <= off || next > jl->code_size || next - off > TR_RAW_MAX) {
			snprintf(why, wn, "+0x%" PRIx64 ": an instruction the case format cannot hold", off);
			return -EINVAL;
		}
		if (insn_line(w, jl->code + off, (size_t)(next - off), off, w->lines[w->nlines], why, wn))
			return -EINVAL;
		w->nlines++;
	}
	struct tr_op *ops = calloc(w->nlines, sizeof(*ops));
	struct ju_err err = { 0 };
	int rc = ops ? 0 : -1;
	for (size_t i = 0; i < w->nlines && !rc; i++)
		rc = tr_op_parse(w->lines[i], &ops[i], &err);
	if (!rc)
		rc = tr_emit(w->ta, ops, w->nlines, w->f, &err);
	free(ops);
	if (rc) {
		snprintf(why, wn, "the generator refused its ops: %s", err.msg[0] ? err.msg : "out of memory");
		return -EINVAL;
	}
	if (w->f->code_size != jl->code_size || !same_code(w->f, jl->code)) {
		snprintf(why, wn, "the ops encode to %zu bytes that differ from the dump's %" PRIu64,
			 w->f->code_size, jl->code_size);
		return -EINVAL;
	}
	return 0;
}

/* What perf's readers get from a load's unwinding info, at perf's layout:
 * the fields a case's [unwind] keys and `cfi = bytes` decide. */
struct unw_desc {
	bool has;
	uint8_t version, fde_enc, lsda_enc;
	char aug[16];
	uint64_t code_align, personality, pc_begin, pc_end, mapped;
	int64_t data_align;
	unsigned ra_reg;
	uint8_t init[64], prog[TR_MAX_PROG];
	size_t init_len, prog_len, nfdes;
	bool hdr, table, term;
	uint8_t table_enc;
};

/* a CFA program without its trailing DW_CFA_nop padding (whole
 * instructions only: a 0 that is an operand stays) */
static size_t no_pad(const uint8_t *p, size_t n, const struct ehf_cie *cie)
{
	size_t pos = 0, keep = 0;
	char txt[128];
	struct ju_err e;
	for (unsigned k = 0; pos < n && k < 4096; k++) {
		size_t at = pos;
		if (ehf_disasm_insn(p, n, &pos, cie, txt, sizeof(txt), &e) || pos <= at)
			return n;
		if (p[at] != 0)
			keep = pos;
	}
	return keep;
}

/* 0, or -1 with why (the info does not read, or describes no code here) */
static int describe(enum pv_profile prof, uint64_t addr, uint64_t size, const uint8_t *data, uint64_t us,
		    uint64_t hs, uint64_t mapped, struct unw_desc *d, char *why, size_t wn)
{
	memset(d, 0, sizeof(*d));
	if (!us)
		return 0;
	struct pv_unwind_sizes sz = { us, hs, mapped };
	struct pv_layout ly;
	pv_layout(prof, addr, size, &sz, &ly);
	struct ehf_table t;
	struct ehf_bases b = { .section = ly.rt_eh, .ptr_size = 8 };
	struct ju_err e;
	if (hs > us || ehf_parse(&t, data, (size_t)(us - hs), &b, &e)) {
		snprintf(why, wn, "its .eh_frame does not parse (.eh_frame+0x%" PRIx64 ": %s)", (uint64_t)e.offset, e.msg);
		return -EINVAL;
	}
	const struct ehf_fde *f = ehf_find_fde(&t, addr);
	int rc = 0;
	if (!f || f->insns_len > sizeof(d->prog) || f->cie->insns_len > sizeof(d->init)) {
		snprintf(why, wn, f ? "its CFA program is too long for a case" : "no FDE covers its code at perf's layout");
		rc = -1;
	} else {
		const struct ehf_cie *c = f->cie;
		d->has = true;
		d->version = c->version;
		snprintf(d->aug, sizeof(d->aug), "%s", c->aug);
		d->code_align = c->code_align;
		d->data_align = c->data_align;
		d->ra_reg = c->ra_reg;
		d->fde_enc = c->fde_enc;
		d->lsda_enc = c->lsda_enc;
		d->personality = c->personality;
		d->init_len = no_pad(c->insns, c->insns_len, c);
		memcpy(d->init, c->insns, d->init_len);
		d->pc_begin = f->pc_begin;
		d->pc_end = f->pc_end;
		d->prog_len = no_pad(f->insns, f->insns_len, c);
		memcpy(d->prog, f->insns, d->prog_len);
		d->nfdes = t.nfdes;
		d->term = t.terminated;
		d->mapped = mapped;
	}
	ehf_table_free(&t);
	struct ehf_hdr h;
	if (!rc && hs) {
		if (ehf_parse_hdr(data + (us - hs), (size_t)hs, ly.rt_hdr, &h, &e)) {
			snprintf(why, wn, "its .eh_frame_hdr does not parse (+0x%" PRIx64 ": %s)", (uint64_t)e.offset, e.msg);
			return -EINVAL;
		}
		d->hdr = true;
		d->table = h.has_table;
		d->table_enc = h.table_enc;
	}
	return rc;
}

/* the first field where the case's unwinding info reads otherwise than the dump's, or NULL */
static const char *unw_diff(const struct unw_desc *a, const struct unw_desc *b)
{
#define D(c, what) if (c) return what
	D(a->has != b->has, "whether there is unwinding info");
	if (!a->has)
		return NULL;
	D(a->version != b->version, "the CIE version");
	D(strcmp(a->aug, b->aug), "the CIE augmentation");
	D(a->code_align != b->code_align || a->data_align != b->data_align, "the CIE alignment factors");
	D(a->ra_reg != b->ra_reg, "the return-address column");
	D(a->fde_enc != b->fde_enc || a->lsda_enc != b->lsda_enc, "the CIE's pointer encodings");
	D(a->personality != b->personality, "the personality routine");
	D(a->init_len != b->init_len || memcmp(a->init, b->init, a->init_len), "the CIE's initial instructions");
	D(a->pc_begin != b->pc_begin || a->pc_end != b->pc_end, "the FDE's address range");
	D(a->prog_len != b->prog_len || memcmp(a->prog, b->prog, a->prog_len), "the FDE's CFA program");
	D(a->nfdes != b->nfdes, "the number of FDEs");
	D(a->term != b->term, "the zero terminator");
	D(a->hdr != b->hdr || a->table != b->table || (a->table && a->table_enc != b->table_enc), "the .eh_frame_hdr");
	D(a->mapped != b->mapped, "mapped_size");
#undef D
	return NULL;
}

static void enc_name(uint8_t enc, char *buf, size_t n)
{
	static const char *const fmt[16] = { "absptr", "uleb128", "udata2", "udata4", "udata8", NULL, NULL, NULL,
					     NULL, "sleb128", "sdata2", "sdata4", "sdata8" };
	static const char *const app[8] = { NULL, "pcrel", "textrel", "datarel" };
	if (enc == 0xff) {
		snprintf(buf, n, "omit");
		return;
	}
	const char *a = app[(enc >> 4) & 7], *f = fmt[enc & 15];
	snprintf(buf, n, "%s%s%s", a ? a : "", a ? "|" : "", f ? f : "?");
}

/* the [unwind] lines that make the generator write what d describes for the
 * code in w->f at addr; 0, or -1 with why */
static int unwind_lines(struct wc *w, const struct jd_load *jl, char *out, size_t n, char *why, size_t wn)
{
	enum pv_profile prof = (enum pv_profile)w->cfg->profile;
	struct unw_desc want, got;
	if (describe(prof, jl->code_addr, jl->code_size, jl->unwind, jl->has_unwind ? jl->unwinding_size : 0,
		     jl->eh_frame_hdr_size, jl->mapped_size, &want, why, wn))
		return -EINVAL;
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	if (!want.has) {
		/* no UNWINDING_INFO: no FDE, no header, no terminator write none */
		snprintf(out, n, "cfi = none\nhdr = none\n");
		return 0;
	}
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, want.prog, want.prog_len);
	o.prog_len = want.prog_len;
	snprintf(o.cie_aug, sizeof(o.cie_aug), "%.7s", want.aug);
	o.cie_version = want.version;
	o.fde_enc = want.fde_enc;
	o.lsda_enc = want.lsda_enc;
	o.hdr = want.hdr ? TR_HDR_AFTER : TR_HDR_NONE;
	o.hdr_table = want.table;
	o.table_enc = want.table ? want.table_enc : DW_EH_PE_omit;
	o.terminator = want.term;
	const char *diff = "the generator refused it";
	struct tr_unwind *u = calloc(1, sizeof(*u));
	struct ju_err err = { 0 };
	for (int pass = 0; pass < 4 && u && diff; pass++) {
		o.eh_unaligned = pass & 1;
		o.mapped = pass < 2 ? -1 : (long long)want.mapped;
		if (tr_unwind_build(w->f, &o, jl->code_addr, u, &err))
			continue;
		if (describe(prof, jl->code_addr, w->f->code_size, u->data, u->size, u->hdr_size, u->mapped_size, &got,
			     err.msg, sizeof(err.msg)))
			continue;
		diff = unw_diff(&got, &want);
	}
	free(u);
	if (diff) {
		snprintf(why, wn, "the case's unwinding info would differ from the dump's in %s%s%s", diff,
			 err.msg[0] ? ": " : "", err.msg);
		return -EINVAL;
	}
	char fde[48], tab[48], prog[3 * TR_MAX_PROG + 1] = "";
	enc_name(o.fde_enc, fde, sizeof(fde));
	enc_name(o.table_enc, tab, sizeof(tab));
	for (size_t i = 0, pl = 0; i < o.prog_len && pl < sizeof(prog); i++)
		pl += (size_t)snprintf(prog + pl, sizeof(prog) - pl, "%s%02x", i ? " " : "", o.prog[i]);
	int len = snprintf(out, n, "cfi = bytes %s\ncie = %s\ncie_version = %d\nfde_enc = %s\nhdr = %s\n", prog,
			   o.cie_aug[0] ? o.cie_aug : "none", o.cie_version, fde, want.hdr ? "after" : "none");
	if (want.hdr)
		len += snprintf(out + len, n - (size_t)len, "table_enc = %s\n", tab);
	if (strchr(o.cie_aug, 'L')) {
		enc_name(o.lsda_enc, tab, sizeof(tab));
		len += snprintf(out + len, n - (size_t)len, "lsda_enc = %s\n", tab);
	}
	if (o.terminator)
		len += snprintf(out + len, n - (size_t)len, "terminator = yes\n");
	if (o.eh_unaligned)
		len += snprintf(out + len, n - (size_t)len, "eh_frame = unaligned\n");
	if (o.mapped >= 0)
		snprintf(out + len, n - (size_t)len, "mapped = %lld\n", o.mapped);
	return 0;
}

/* a row that keeps the return address in a register (V8's `pop %r10`): that
 * register of the sample holds what execution found; 0, or -1 with why */
static int truth_in_reg(const struct wc *w, const struct tr_row *row, const struct hx_trace_sample *s, int off,
			char *why, size_t wn)
{
	const struct uw_arch *ua = uw_arch_by_mach(w->ta->facts->elf_mach);
	int pr = ua && row->ra_reg >= 0 && row->ra_reg < (int)(sizeof(ua->perf_of_dw) / sizeof(ua->perf_of_dw[0]))
			 ? ua->perf_of_dw[row->ra_reg] : -1;
	const char *rn = w->dec->reg_name((unsigned)row->ra_reg);
	if (pr < 0 || pr >= 64 || !(s->mask >> pr & 1))
		snprintf(why, wn, "+0x%x: the generator's row keeps the return address in %s, which the sample's "
			 "registers do not hold", off, rn);
	else if (s->regs[pr] != s->truth[1])
		snprintf(why, wn, "its truth would differ from the traced one: at +0x%x the generator's row keeps the "
			 "return address in %s (0x%" PRIx64 "), execution found 0x%" PRIx64, off, rn, s->regs[pr],
			 s->truth[1]);
	else
		return 0;
	return -EINVAL;
}

/* at every sample of the case, the generator's row puts the return address
 * where execution found it; 0, or -1 with why */
static int truth_check(const struct wc *w, const struct hx_case_res *cr, char *why, size_t wn)
{
	for (size_t i = 0; i < cr->nsamples; i++) {
		const struct hx_sample_res *sr = &cr->samples[i];
		const struct hx_trace_sample *s = &w->res->smp[sr->src];
		const struct tr_row *row = NULL;
		for (size_t r = 0; r < w->f->nrows && !row; r++)
			if (w->f->rows[r].offset == (uint32_t)sr->offset)
				row = &w->f->rows[r];
		if (!row) {
			snprintf(why, wn, "+0x%x: no generator row there", sr->offset);
			return -EINVAL;
		}
		if (sr->truth_of) {
			snprintf(why, wn, "+0x%x: a sample without a truth by execution (judged for agreement with %s)",
				 sr->offset, sr->truth_of);
			return -EINVAL;
		}
		if (s->ncopy < 2)
			continue;   /* no return address in the copy to compare (counted in the header) */
		if (row->ra_where == TR_RA_IN_REG) {
			if (truth_in_reg(w, row, s, sr->offset, why, wn))
				return -EINVAL;
			continue;
		}
		int64_t at = row->sp_off + row->ra_off;
		uint64_t v = 0;
		if (at < 0 || (uint64_t)at + 8 > s->stack_len)
			snprintf(why, wn, "its truth would differ from the traced one: at +0x%x the generator's row "
				 "puts the return address at sp%+" PRId64 ", outside the sample's stack copy", sr->offset, at);
		else if (memcpy(&v, s->stack + at, 8), v != s->truth[1])
			snprintf(why, wn, "its truth would differ from the traced one: at +0x%x the generator's row "
				 "puts the return address at sp%+" PRId64 " (0x%" PRIx64 "), execution found 0x%" PRIx64,
				 sr->offset, at, v, s->truth[1]);
		else
			continue;
		return -EINVAL;
	}
	return 0;
}

/* the columns the trace judged (a column a session skipped is left out of
 * [expect]) and one verdict per column at each offset; 0, or -1 with why */
static int verdicts_check(const struct wc *w, const struct hx_case_res *cr, bool *judged, char *why, size_t wn)
{
	int nuw = w->rep->o->nuw;
	for (int u = 0; u < nuw; u++) {
		size_t n = 0;
		for (size_t i = 0; i < cr->nsamples; i++)
			n += u < cr->samples[i].nuw && cr->samples[i].uw[u].expected[0];
		judged[u] = n > 0;
		if (n && n != cr->nsamples) {
			snprintf(why, wn, "the %s column judged %zu of its %zu samples", w->rep->o->unwinders[u], n,
				 cr->nsamples);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < cr->nsamples; i++)
		for (size_t k = i + 1; k < cr->nsamples; k++) {
			const struct hx_sample_res *a = &cr->samples[i], *b = &cr->samples[k];
			if (a->offset != b->offset)
				continue;
			for (int u = 0; u < nuw && u < a->nuw && u < b->nuw; u++)
				if (judged[u] && (a->uw[u].j.v != b->uw[u].j.v || a->uw[u].fallback != b->uw[u].fallback ||
						  a->uw[u].consistent != b->uw[u].consistent)) {
					snprintf(why, wn, "+0x%x: %s's verdicts differ between its samples (its callers "
						 "differ; a case has one)", a->offset, w->rep->o->unwinders[u]);
					return -EINVAL;
				}
		}
	return 0;
}

/* the [expect] block of the traced verdicts, without the columns not judged */
static int expect_block(const struct wc *w, const struct hx_case_res *cr, const bool *judged, char *out, size_t n)
{
	char *blk = malloc(1 << 16);
	if (!blk || hx_observe_block(cr, w->rep->o, blk, 1 << 16)) {
		free(blk);
		return -EINVAL;
	}
	size_t len = 0;
	out[0] = 0;
	for (char *save = NULL, *t = strtok_r(blk, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		const char *key = t + (t[0] == '?');
		bool drop = false;
		for (int u = 0; u < w->rep->o->nuw; u++) {
			size_t kl = strlen(w->rep->o->unwinders[u]);
			if (!judged[u] && !strncmp(key, w->rep->o->unwinders[u], kl) && (key[kl] == ' ' || key[kl] == '@'))
				drop = true;
		}
		if (!drop && len < n)
			len += (size_t)snprintf(out + len, n - len, "%s\n", t);
	}
	free(blk);
	return len < n ? 0 : -1;
}

/* "libunwind truncated at +0xb; oracle inconsistent at +0xb" for `about` */
static void misses(const struct wc *w, const struct hx_case_res *cr, const bool *judged, char *out, size_t n)
{
	size_t len = 0;
	out[0] = 0;
	for (int u = 0; u < w->rep->o->nuw && len < n; u++) {
		if (!judged[u])
			continue;
		bool first = true;
		for (size_t i = 0; i < cr->nsamples && len < n; i++) {
			const struct hx_uw_res *r = &cr->samples[i].uw[u];
			if (r->match)
				continue;
			bool oracle = r->uw && r->uw->ref == UW_REF_TRUTH;
			len += (size_t)snprintf(out + len, n - len, "%s%s%s +0x%x", first ? (len ? "; " : "") : ",",
						first ? w->rep->o->unwinders[u] : "", first ? (oracle ? " inconsistent at" :
						" not ok at") : "", cr->samples[i].offset);
			first = false;
		}
	}
}

static void file_name(const char *sym, uint64_t key, char *out, size_t n)
{
	char base[41];
	size_t k = 0;
	for (const char *p = sym; *p && k < sizeof(base) - 1; p++)
		base[k++] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p) ? *p : '-';
	base[k] = 0;
	snprintf(out, n, "%s-%08" PRIx64, k ? base : "jit", key & 0xffffffffu);
}

/* a sample not ok but for fp's `skipped` (the frame-pointer convention's
 * prologue and epilogue, in every function with a frame record) */
static bool finding(const struct hx_case_res *cr, int nuw)
{
	for (size_t i = 0; i < cr->nsamples; i++)
		for (int u = 0; u < nuw && u < cr->samples[i].nuw; u++) {
			const struct hx_uw_res *r = &cr->samples[i].uw[u];
			if (!r->match && !(r->uw && r->uw->ref == UW_REF_FP && r->j.v == HX_SKIPPED))
				return true;
		}
	return false;
}

static uint64_t load_key(const struct jd_load *jl);

/* the loads whose case is written: per distinct (code, unwinding info) among
 * those with a finding, the one with the most samples not ok beyond fp's
 * (its case shows the most); NULL: out of memory */
static bool *representatives(const struct wc *w)
{
	size_t n = w->res->nloads;
	uint64_t *key = calloc(n + 1, sizeof(*key));
	size_t *score = calloc(n + 1, sizeof(*score));
	bool *pick = calloc(n + 1, sizeof(*pick));
	for (size_t li = 0; li < n && key && score && pick; li++) {
		const struct hx_case_res *cr = w->cr_of[li];
		if (!cr || !finding(cr, w->rep->o->nuw))
			continue;
		const struct jd_load *jl = jd_load_of(w, &w->res->loads[li]);
		key[li] = jl ? load_key(jl) : ~(uint64_t)li;
		score[li] = 1;
		for (size_t i = 0; i < cr->nsamples; i++)
			for (int u = 0; u < cr->samples[i].nuw; u++)
				score[li] += !cr->samples[i].uw[u].match && cr->samples[i].uw[u].uw &&
					     cr->samples[i].uw[u].uw->ref != UW_REF_FP;
	}
	for (size_t li = 0; li < n && key && score && pick; li++) {
		size_t best = li;
		for (size_t m = 0; m < n && score[li]; m++)
			if (score[m] && key[m] == key[li] && (score[m] > score[best] || (score[m] == score[best] && m < best)))
				best = m;
		pick[best] |= score[li] != 0;
	}
	if (!key || !score) {
		free(pick);
		pick = NULL;
	}
	free(key);
	free(score);
	return pick;
}

static uint64_t load_key(const struct jd_load *jl)
{
	uint64_t h = fnv(0xcbf29ce484222325ull, jl->code, (size_t)jl->code_size);
	if (jl->has_unwind)
		h = fnv(h ^ 0x5a, jl->unwind, (size_t)jl->unwinding_size);
	return h;
}

/* every boundary sampled; 0, or -1 with why */
static int coverage(const struct hx_trace_load *l, char *why, size_t wn)
{
	size_t miss = 0;
	int len = 0;
	for (size_t b = 0; b < l->nbps; b++)
		if (!l->bps[b].hits && miss++ < 8 && len < (int)wn)
			len += snprintf(why + len, wn - (size_t)len, "%s+0x%" PRIx64, miss > 1 ? "," : "",
					l->bps[b].addr - l->addr);
	if (!miss)
		return 0;
	char list[256];
	snprintf(list, sizeof(list), "%s", why);
	snprintf(why, wn, "%zu of its %zu boundaries were never executed (%s%s): a case judges every one", miss,
		 l->nbps, list, miss > 8 ? ",..." : "");
	return -EINVAL;
}

/* the case's text up to [sample] (no [expect]) */
static char *case_text(const struct wc *w, const struct hx_trace_load *l, const struct hx_case_res *cr,
		       const bool *judged, const char *name, const char *unw)
{
	char miss[512], *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	misses(w, cr, judged, miss, sizeof(miss));
	fprintf(f, "[case]\nname = %s\narch = %s\nabout = %s as jitunwind trace found it (%s): %s\n\n[code]\n",
		name, w->ta->facts->name, l->name, w->cfg->argv ? w->cfg->argv[0] : "?", miss);
	for (size_t i = 0; i < w->nlines; i++)
		fprintf(f, "%s\n", w->lines[i]);
	fprintf(f, "\n[unwind]\n%s\n[sample]\nat = every-insn\n", unw);
	if (w->cfg->stack_size != 8192)
		fprintf(f, "stack_size = %zu\n", w->cfg->stack_size);
	if (w->cfg->profile)
		fprintf(f, "profiles = %s\n", pv_profile_name((enum pv_profile)w->cfg->profile));
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* the case (text without [expect]) captured and replayed here as `run`
 * does it, with trace's columns: the harness's verdicts; 0, or -1 with why */
static int run_here(const struct wc *w, const char *path, const char *text, struct hx_case_res *out, char *why,
		    size_t wn)
{
	struct hx_case c;
	char err[1024] = "", dir[HX_SCRATCH_PATH];
	struct ju_err pe;
	if (hx_case_parse_ex(&c, path, text, strlen(text), HX_CASE_NO_EXPECT, &pe)) {
		snprintf(why, wn, "the written case does not parse: %s", pe.msg);
		return -EINVAL;
	}
	int rc = -1;
	if (!hx_scratch_mkdtemp(dir, sizeof(dir), "wc", &pe)) {
		struct hx_batch_case bc = { .c = &c, .path = path, .dumpdir = dir };
		struct hx_samples s;
		if (!hx_capture_samples(&bc, 1, &s, NULL, &pe)) {
			struct hx_opts o = *w->rep->o;
			o.observe = true;
			o.parsed = &c;
			if (s.ngroups != 1)
				snprintf(err, sizeof(err), "%zu sample groups captured", s.ngroups);
			else if (!hx_replay_group(&s.groups[0], s.elf_mach, &o, out, err, sizeof(err)))
				rc = 0;
			hx_samples_free(&s);
		}
		hx_scratch_remove(dir);
	}                               /* else pe says why */
	hx_case_free(&c);
	if (rc)
		snprintf(why, wn, "the written case could not be run here: %s", err[0] ? err : pe.msg);
	return rc;
}

/* [expect] as the case gives it here, after a comment line for each traced
 * verdict that differs (its callers there are not the harness's); 0 or -1 */
static int expect_text(const struct wc *w, const struct hx_case_res *cr, const struct hx_case_res *here,
		       const bool *judged, FILE *f, size_t *ndiff)
{
	*ndiff = 0;
	char *blk = malloc(1 << 16);
	if (!blk || expect_block(w, here, judged, blk, 1 << 16)) {
		free(blk);
		return -EINVAL;
	}
	char *body = strchr(blk, '\n');
	fprintf(f, "%.*s", body ? (int)(body - blk + 1) : 0, blk);     /* "[expect]" */
	for (size_t i = 0; i < cr->nsamples; i++) {
		const struct hx_sample_res *t = &cr->samples[i], *h = NULL;
		for (size_t k = 0; k < here->nsamples && !h; k++)
			if (here->samples[k].offset == t->offset)
				h = &here->samples[k];
		for (int u = 0; u < w->rep->o->nuw; u++) {
			char a[32], b[32] = "not sampled";
			if (!judged[u] || u >= t->nuw)
				continue;
			hx_expect_word(&t->uw[u], a, sizeof(a));
			if (h && u < h->nuw)
				hx_expect_word(&h->uw[u], b, sizeof(b));
			if (strcmp(a, b) && ++*ndiff)
				fprintf(f, "# traced: %s %s at +0x%x; here %s\n", w->rep->o->unwinders[u], a, t->offset, b);
		}
	}
	fputs(body ? body + 1 : blk, f);
	free(blk);
	return 0;
}

static int write_file(const struct wc *w, const struct hx_trace_load *l, const struct hx_case_res *cr,
		      const bool *judged, const char *name, const char *unw, size_t same, size_t *ndiff,
		      char *why, size_t wn)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.case", w->cfg->write_cases, name);
	char *text = case_text(w, l, cr, judged, name, unw);
	struct hx_case_res here = { 0 };
	if (!text || run_here(w, path, text, &here, why, wn)) {
		if (!text)
			snprintf(why, wn, "out of memory");
		free(text);
		hx_case_res_free(&here);
		return 1;
	}
	FILE *f = fopen(path, "w");
	int e = f ? 0 : -errno;
	if (f) {
		fprintf(f, "# written by `jitunwind trace --write-cases`: %s at 0x%" PRIx64 " in pid %d (jitdump %s);\n"
			"# %zu load%s had these code bytes and unwinding info.  [expect] is what this case gives\n"
			"# here; a verdict the trace judged otherwise (beyond the function's own frame a verdict\n"
			"# depends on its callers: the JIT's there, the harness's C here) is a comment in it.\n",
			l->name, l->addr, (int)w->res->pid, w->res->jitdump, same, same == 1 ? "" : "s");
		fprintf(f, "%s\n", text);
		if (expect_text(w, cr, &here, judged, f, ndiff))
			e = -ENOMEM;
		if (fclose(f) && !e)
			e = -EIO;
	}
	free(text);
	hx_case_res_free(&here);
	if (e)
		snprintf(why, wn, "cannot write %s: %s", path, strerror(-e));
	return e;
}

/* one load: its case written (0), no case (1, why), or an I/O error (-errno, why) */
static int one_load(struct wc *w, size_t li, const struct jd_load *jl, const char *name, size_t same,
		    size_t *ndiff, char *why, size_t wn)
{
	const struct hx_trace_load *l = &w->res->loads[li];
	const struct hx_case_res *cr = w->cr_of[li];
	bool judged[HX_MAX_UW] = { false };
	char unw[4 * TR_MAX_PROG];
	if (w->cfg->stack_size % 8 || w->cfg->stack_size < 8 || w->cfg->stack_size > 65528) {
		snprintf(why, wn, "--stack-size %zu is no size perf takes (multiples of 8 up to 65528)",
			 w->cfg->stack_size);
		return 1;
	}
	if (coverage(l, why, wn) || code_lines(w, l, jl, why, wn) || unwind_lines(w, jl, unw, sizeof(unw), why, wn) ||
	    truth_check(w, cr, why, wn) || verdicts_check(w, cr, judged, why, wn))
		return 1;
	return write_file(w, l, cr, judged, name, unw, same, ndiff, why, wn);
}

/* the writer's state: the directory, the dump, the decoders; 0 or -errno (said on out) */
static int wc_open(struct wc *w, FILE *out)
{
	struct ju_err je;
	w->f = calloc(1, sizeof(*w->f));
	w->lines = calloc(TR_MAX_INSNS, sizeof(*w->lines));
	w->cr_of = calloc(w->res->nloads + 1, sizeof(*w->cr_of));
	if (!w->f || !w->lines || !w->cr_of)
		return -ENOMEM;
	/* the report has a case per load sampled at its boundaries, in load order */
	for (size_t li = 0, k = 0; li < w->res->nloads && k < w->rep->n; li++)
		if (w->res->loads[li].traced)
			w->cr_of[li] = &w->rep->cases[k++];
	if (mkdir(w->cfg->write_cases, 0777) && errno != EEXIST) {
		int e = -errno;
		fprintf(out, "write-cases: cannot make %s: %s\n", w->cfg->write_cases, strerror(-e));
		return e;
	}
	if (hx_trace_jd_open(w->res, &w->jd, &je)) {
		fprintf(out, "write-cases: %s: offset 0x%" PRIx64 ": %s\n", w->res->jitdump, (uint64_t)je.offset, je.msg);
		return -EINVAL;
	}
	w->dec = uw_decoder_for(w->jd.elf_mach);
	const struct uw_arch *ua = uw_arch_host();   /* capstone's settings, the host's (trace runs there) */
	if (!w->ta || !w->dec || !ua->has_cs || cs_open((cs_arch)ua->cs_arch, (cs_mode)ua->cs_mode, &w->cs)) {
		fprintf(out, "write-cases: no encoder, decoder or capstone for this jitdump's arch (elf_mach %u)\n",
			w->jd.elf_mach);
		return -ENOSYS;
	}
	cs_option(w->cs, CS_OPT_DETAIL, CS_OPT_ON);
	cs_option(w->cs, CS_OPT_SYNTAX, ua->cs_att ? CS_OPT_SYNTAX_ATT : CS_OPT_SYNTAX_DEFAULT);
	return 0;
}

static void wc_close(struct wc *w)
{
	if (w->cs)
		cs_close(&w->cs);
	if (w->jd.data)
		jd_close(&w->jd);
	free(w->f);
	free(w->lines);
	free(w->cr_of);
	free(w);
}

/* load li's case, and its line on out: 0 written, 1 no case, -errno */
static int wc_load(struct wc *w, size_t li, const char *dir, FILE *out, size_t without)
{
	const struct hx_trace_load *l = &w->res->loads[li];
	const struct jd_load *jl = jd_load_of(w, l);
	char why[1024] = "", name[64];
	uint64_t key = jl ? load_key(jl) : 0;
	size_t same = 0, ndiff = 0;
	for (size_t m = 0; jl && m < w->jd.nloads; m++)
		same += load_key(&w->jd.loads[m]) == key;
	file_name(l->name, key, name, sizeof(name));
	int rc = jl ? one_load(w, li, jl, name, same, &ndiff, why, sizeof(why)) : 1;
	if (!jl)
		snprintf(why, sizeof(why), "no CODE_LOAD of the jitdump at 0x%" PRIx64, l->addr);
	if (rc < 0)
		fprintf(out, "write-cases: %s\n", why);
	else if (rc && without < WC_SAID)
		fprintf(out, "write-cases: %s: no case: %s\n", l->name, why);
	else if (!rc)
		fprintf(out, "write-cases: %s: %s/%s.case: %s%zu verdict%s%s%s%s\n", l->name, w->cfg->write_cases, name,
			ndiff ? "" : "as traced at every boundary, ", ndiff, ndiff == 1 ? "" : "s",
			ndiff ? " here not as traced (comments in its [expect])" : " otherwise",
			strcmp(dir, "/tmp") ? "; its jitdump was in " : "", strcmp(dir, "/tmp") ? dir : "");
	return rc;
}

int hx_trace_write_cases(const struct hx_trace_cfg *cfg, const struct hx_trace_result *res,
			 const struct hx_report *rep, FILE *out)
{
	struct wc *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct wc){ .cfg = cfg, .res = res, .rep = rep, .ta = tr_arch_host() };
	int e = wc_open(w, out);
	bool *pick = e ? NULL : representatives(w);
	if (!e && !pick)
		e = -ENOMEM;
	/* perf's libdw path (>= 6.8) reads jitted .so files only under
	 * /tmp/jitted-: run puts a case's dump in /tmp unless told */
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", res->jitdump);
	char *sl = strrchr(dir, '/');
	if (sl)
		*sl = 0;
	size_t wrote = 0, without = 0;
	for (size_t li = 0; li < res->nloads && !e; li++) {
		if (!pick[li])
			continue;
		int rc = wc_load(w, li, sl ? dir : ".", out, without);
		e = rc < 0 ? rc : 0;
		wrote += !rc;
		without += rc > 0;
	}
	if (!e && without > WC_SAID)
		fprintf(out, "write-cases: and %zu more functions not ok without a case\n", without - WC_SAID);
	if (!e)
		fprintf(out, "write-cases: %zu case%s written to %s; %zu function%s not ok without a case\n", wrote,
			wrote == 1 ? "" : "s", cfg->write_cases, without, without == 1 ? "" : "s");
	free(pick);
	wc_close(w);
	return e;
}
