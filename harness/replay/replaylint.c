/* replay --lint (replaylint.h).  A loss: in a DWARF column's chain, a frame
 * in a jitdump load whose caller is missing (the chain ends there), nowhere
 * perf knows or unnamed JIT code (lost), or found without CFI (fallback).
 * Its pc: the sampled pc (frame 0), else the call instruction before the
 * return address, whose CFI row unwinds that frame.  A lint finding
 * explains it when it is about that load (one of the loads of that name) and
 * names that instruction offset, or every instruction of the load, or of
 * every load. */
#include "harness/replay/replaylint.h"
#include "harness/replay/realreplay_int.h"
#include "harness/case/jsonw.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/lint/lint.h"
#include "unwinders/uwarch.h"

#include <capstone/capstone.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RL_MAX_LOSSES 4096        /* distinct loss pcs kept (counted past it) */
#define RL_SHOW_RULES 6           /* explaining findings listed per loss */
#define RL_LOADS 4
#define RL_STACK_SPAN (64ull << 20)   /* a read this far above SP is still the thread's stack */

enum rl_kind { RL_ENDS, RL_LOST, RL_FALLBACK, RL_NKIND };
static const char *const kind_name[RL_NKIND] = { "ends", "lost", "fallback" };

struct rl_finding {
	const struct lint_rule *rule;
	uint64_t offset;
	struct lint_where where;
};

struct rl_dump {
	struct rl_finding *f;
	size_t n, cap;
	bool unreadable;
	char err[256];
};

struct rl_loss {
	const char *name;
	const char *engine;           /* the DWARF unwinder that loses it */
	size_t dump;
	uint64_t off;                 /* of the instruction whose row unwinds the frame */
	bool ra;                      /* a caller frame: off is the call before the return address */
	uint64_t load_off[RL_LOADS];
	unsigned nloads;
	uint64_t count[RR_MAX_UW][RL_NKIND];
	size_t expl[RL_SHOW_RULES];   /* indices into the dump's findings */
	unsigned nexpl;
	bool matched;
	uint64_t native_pc, native_below, native_n;   /* losses caused by the native frame below */
	/* losses at a caller frame whose CFA register the JIT frame below it
	 * restores: that frame's load (file offset) and instruction, and how
	 * many of the losses had it below */
	uint64_t below_load, below_off, below_n;
};

struct hx_rl {
	struct rl_dump d[RR_MAX_DUMPS];
	size_t nd;
	int cols[RR_MAX_UW];
	size_t ncols;
	struct rl_loss *loss;
	size_t nloss, cap;
	uint64_t dropped, pmap_losses, copy_losses;
	csh cs;
	bool cs_ok;
	bool ignored[LR__COUNT];
};

static void on_finding(const struct lint_finding *f, void *arg)
{
	struct rl_dump *d = arg;
	if (d->n == d->cap) {
		size_t c = d->cap ? d->cap * 2 : 256;
		struct rl_finding *p = realloc(d->f, c * sizeof(*p));
		if (!p)
			return;                  /* dropped: hx_rl_open checks the count */
		d->f = p;
		d->cap = c;
	}
	d->f[d->n++] = (struct rl_finding){ f->rule, f->offset, f->where };
}

int hx_rl_open(struct hx_rl **out, struct rr *r, const char *ignore)
{
	struct hx_rl *l = calloc(1, sizeof(*l));
	*out = NULL;
	if (!l) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		return -ENOMEM;
	}
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", ignore ? ignore : "");
	for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		const struct lint_rule *ru = lint_rule_find(t);
		if (!ru) {
			snprintf(r->err, sizeof(r->err), "--lint-ignore %s: no such lint rule", t);
			free(l);
			return -EINVAL;
		}
		l->ignored[ru - lint_rules] = true;
	}
	for (size_t u = 0; u < r->nu; u++)
		if (r->uws[u]->ref == UW_REF_ORACLE)   /* perf's DWARF unwinders (libunwind, libdw) */
			l->cols[l->ncols++] = (int)u;
	for (size_t i = 0; i < r->ndumps; i++) {
		struct lint_opts o = { .profile = r->prof, .name = r->recorded[i],
				       .stack_size = r->stack_size ? r->stack_size : 8192, .dump_dir = r->dump_dir[i] };
		struct lint_summary sum;
		struct rl_dump *d = &l->d[l->nd++];
		struct ju_err je;
		if (lint_file(r->dump_path[i], &o, on_finding, d, &sum, &je)) {
			snprintf(d->err, sizeof(d->err), "%s", je.msg);
			d->unreadable = true;
		}
		uint64_t total = sum.count[0] + sum.count[1] + sum.count[2];
		if (d->n < total) {
			snprintf(r->err, sizeof(r->err), "%s: out of memory keeping lint's findings", r->dump_path[i]);
			hx_rl_free(l);
			return -ENOMEM;
		}
	}
	l->cs_ok = r->arch->has_cs && cs_open((cs_arch)r->arch->cs_arch, (cs_mode)r->arch->cs_mode, &l->cs) == CS_ERR_OK;
	*out = l;
	return 0;
}

/* The offset of the call instruction that ends at ret (a return address's
 * offset in the load's code): the longest decoding that is a call. */
static uint64_t call_before(const struct hx_rl *l, const struct rr *r, const struct jd_load *ld, uint64_t ret)
{
	if (r->arch->perf_lr >= 0)
		return ret >= 4 ? ret - 4 : ret;     /* arm64: fixed-size bl/blr */
	if (!l->cs_ok)
		return ret - 1;
	for (uint64_t len = 15; len >= 2; len--) {
		if (len > ret || ret > ld->code_size)
			continue;
		cs_insn *in = NULL;
		size_t n = cs_disasm(l->cs, ld->code + ret - len, len, ld->code_addr + ret - len, 1, &in);
		bool call = n == 1 && in[0].size == len && !strncmp(in[0].mnemonic, "call", 4);
		if (n)
			cs_free(in, n);
		if (call)
			return ret - len;
	}
	return ret - 1;
}

static struct rl_loss *loss_of(struct hx_rl *l, const struct rr *r, const struct rr_jit *j, uint64_t off, bool ra,
			       int col)
{
	size_t dump = 0;
	for (size_t d = 0; d < r->ndumps; d++)
		if (j->load >= r->jd[d].loads && j->load < r->jd[d].loads + r->jd[d].nloads)
			dump = d;
	const char *eng = r->uws[col]->name;
	for (size_t i = 0; i < l->nloss; i++)
		if (l->loss[i].off == off && l->loss[i].ra == ra && l->loss[i].dump == dump &&
		    !strcmp(l->loss[i].name, j->name) && !strcmp(l->loss[i].engine, eng))
			return &l->loss[i];
	if (l->nloss == RL_MAX_LOSSES)
		return NULL;
	if (l->nloss == l->cap) {
		size_t c = l->cap ? l->cap * 2 : 64;
		struct rl_loss *p = realloc(l->loss, c * sizeof(*p));
		if (!p)
			return NULL;
		l->loss = p;
		l->cap = c;
	}
	struct rl_loss *x = &l->loss[l->nloss++];
	memset(x, 0, sizeof(*x));
	x->name = j->name;
	x->off = off;
	x->ra = ra;
	x->dump = dump;
	x->engine = eng;
	return x;
}

/* where column c's chain first loses a JIT frame's caller, if it does (a
 * chain without even the sampled JIT pc loses it there) */
static int first_loss(const struct rr *r, const struct rr_view *v, uint64_t pc, const struct uw_result *c,
		      struct rr_jit *j, enum rl_kind *kind)
{
	if (c->n == 0 && hx_rr_jit_at(r, v, pc, j)) {
		*kind = RL_ENDS;
		return 0;
	}
	for (int i = 0; i < c->n; i++) {
		if (!hx_rr_jit_at(r, v, c->addr[i] - (i ? 1 : 0), j))
			continue;
		if (i == c->n - 1) {
			*kind = RL_ENDS;
			return c->n < UW_MAX_FRAMES ? i : -1;
		}
		struct rr_jit up;
		uint64_t ca = c->addr[i + 1] - 1;
		if (hx_rr_jit_at(r, v, ca, &up) ? !up.named : !pv_find(&v->sess.pv, ca)) {
			*kind = RL_LOST;
			return i;
		}
		if (c->flags[i + 1] & UW_F_FALLBACK) {
			*kind = RL_FALLBACK;
			return i;
		}
	}
	return -1;
}

/* The chain ended at a read above the stack copy: the stack is deeper than
 * perf's dump (--call-graph dwarf,SIZE), whatever the JIT's CFI says.  The
 * unwinders' own stop message names the address. */
static bool failed_read(const struct uw_result *c, uint64_t *a)
{
	const char *p = strstr(c->why, "read of 0x");
	unsigned long long v;
	if (c->stop != UW_STOP_MEM || !p || sscanf(p, "read of 0x%llx", &v) != 1)
		return false;
	*a = v;
	return true;
}

static bool past_copy(const struct uw_sample *s, const struct uw_result *c)
{
	uint64_t a;
	/* perf's libunwind accessor takes the copy to end 8 bytes early
	 * (addr + 8 >= end): its last word is past it too */
	return failed_read(c, &a) && a + 8 >= s->stack_addr + s->stack_size && a >= s->stack_addr &&
	       a - s->stack_addr < RL_STACK_SPAN;
}

static bool row_at(const struct rr_view *v, uint64_t pc, struct ehf_row *row)
{
	const struct uw_region *reg = uw_view_find(&v->sess.view, pc);
	const struct ehf_fde *fde = reg && reg->has_cfi ? ehf_find_fde(&reg->cfi, pc) : NULL;
	struct ju_err ee;
	return fde && !ehf_row_at(fde, pc, row, &ee) && row->cfa_defined && row->cfa_kind == EHF_CFA_REG_OFF;
}

/* A JIT frame right above the sampled native frame, whose CFA is computed
 * from a register that native frame's row restores from under SP (gcc's
 * rows at `leave; ret` keep rbp "saved" at cfa-16 = sp-8), outside perf's
 * stack copy: the JIT frame's caller is lost, and nothing in the dump says
 * so.  0, or how many bytes below SP. */
static uint64_t native_below_sp(const struct rr *r, const struct rr_view *v, const struct uw_result *c, int i)
{
	struct rr_jit j;
	struct ehf_row nat, jit;
	if (i != 1 || hx_rr_jit_at(r, v, c->addr[0], &j) || !row_at(v, c->addr[0], &nat) ||
	    !row_at(v, c->addr[1] - 1, &jit))
		return 0;
	int sp = r->arch->facts->dw_sp;
	unsigned cr = jit.cfa_reg;
	if (nat.cfa_reg != sp || cr == (unsigned)sp || cr >= EHF_NREGS || nat.reg[cr].kind != EHF_OFFSET)
		return 0;
	int64_t at = nat.cfa_off + nat.reg[cr].off;     /* the slot, from the sampled SP */
	return at < 0 ? (uint64_t)-at : 0;
}

/* A caller frame i (> 0) whose CFA comes from a register other than SP that
 * the JIT frame below it (i - 1) restores from a slot its row names: a wrong
 * row there (V8's epilogue keeps rbp "saved" below SP, JD057) loses frame
 * i's caller, and the finding names frame i - 1's instruction.  Its load
 * and the offset of that instruction (the call before a return address). */
static bool jit_below(const struct hx_rl *l, const struct rr *r, const struct rr_view *v, const struct uw_result *c,
		      int i, uint64_t *load, uint64_t *off)
{
	struct rr_jit b;
	struct ehf_row up, lo;
	uint64_t pc = c->addr[i - 1] - (i > 1 ? 1 : 0);
	if (i < 1 || !hx_rr_jit_at(r, v, pc, &b) || !b.load || !row_at(v, c->addr[i] - 1, &up) || !row_at(v, pc, &lo))
		return false;
	unsigned cr = up.cfa_reg;
	if (cr == (unsigned)r->arch->facts->dw_sp || cr >= EHF_NREGS || lo.reg[cr].kind != EHF_OFFSET)
		return false;
	*load = b.load->file_off;
	*off = c->addr[i - 1] - b.start;
	if (i > 1)
		*off = call_before(l, r, b.load, *off);
	return true;
}

int hx_rl_sample(struct hx_rl *l, const struct rr *r, const struct rr_view *v, const struct uw_sample *s,
		 const struct uw_result *res)
{
	uint64_t pc = uw_reg(s, r->arch->perf_ip);
	for (size_t k = 0; k < l->ncols; k++) {
		struct rr_jit j;
		enum rl_kind kind;
		const struct uw_result *c = &res[l->cols[k]];
		int i = first_loss(r, v, pc, c, &j, &kind);
		if (i < 0)
			continue;
		if (!j.load) {
			l->pmap_losses++;       /* perf map code: no dump to lint */
			continue;
		}
		if (kind == RL_ENDS && past_copy(s, c)) {
			l->copy_losses++;
			continue;
		}
		uint64_t below = kind == RL_ENDS ? native_below_sp(r, v, c, i) : 0;
		uint64_t off = (c->n ? c->addr[i] : pc) - j.start;
		if (i > 0)
			off = call_before(l, r, j.load, off);
		struct rl_loss *x = loss_of(l, r, &j, off, i > 0, l->cols[k]);
		if (!x) {
			l->dropped++;
			continue;
		}
		x->count[k][kind]++;
		if (below && !x->native_n++) {
			x->native_pc = c->addr[0];
			x->native_below = below;
		}
		uint64_t bl, bo;
		if (kind == RL_ENDS && i > 0 && jit_below(l, r, v, c, i, &bl, &bo)) {
			if (!x->below_n) {
				x->below_load = bl;
				x->below_off = bo;
			}
			x->below_n += x->below_load == bl && x->below_off == bo;
		}
		bool seen = false;
		for (unsigned n = 0; n < x->nloads; n++)
			seen |= x->load_off[n] == j.load->file_off;
		if (!seen && x->nloads < RL_LOADS)
			x->load_off[x->nloads++] = j.load->file_off;
	}
	return 0;
}

/* Rules that say nothing about how perf unwinds (file naming, line info,
 * readers other than perf, lint's own limits), and the rules about one
 * unwinder's input only (the -g rules: the kernel's frame-pointer walk's). */
static const char *const not_unwinding[] = { "JD006", "JD007", "JD014", "JD024", "JD038", "JD044", "JD070",
					     "JD071", "JD072", "JD073", "JD074", "JD075", "JD076", "JD087",
					     "JD099" };
static const struct { const char *rule, *engine; } one_engine[] = {
	{ "JD040", "libunwind" }, { "JD041", "libunwind" }, { "JD042", "libunwind" }, { "JD043", "libunwind" },
	{ "JD091", "libdw" }, { "JD084", "fp" }, { "JD085", "fp" }, { "JD086", "fp" },
};

static bool about_unwinding(const struct lint_rule *ru, const char *engine)
{
	for (size_t i = 0; i < sizeof(not_unwinding) / sizeof(not_unwinding[0]); i++)
		if (!strcmp(ru->id, not_unwinding[i]))
			return false;
	for (size_t i = 0; i < sizeof(one_engine) / sizeof(one_engine[0]); i++)
		if (!strcmp(ru->id, one_engine[i].rule))
			return !strcmp(engine, one_engine[i].engine);
	return true;
}

static bool names_at(const struct lint_where *w, uint64_t off)
{
	for (unsigned i = 0; i < w->npc && i < LINT_MAX_PCS; i++)
		if (w->span[i] ? off - w->pc[i] < w->span[i] && off >= w->pc[i] : w->pc[i] == off)
			return true;
	return false;
}

static uint64_t total(const struct hx_rl *l, const struct rl_loss *x);

static bool names(const struct hx_rl *l, const struct rl_finding *f, const struct rl_loss *x)
{
	const struct lint_where *w = &f->where;
	if (l->ignored[f->rule - lint_rules] || !about_unwinding(f->rule, x->engine))
		return false;
	if (!w->load)
		return w->whole;
	/* every loss here had the same JIT frame below, restoring the register
	 * this frame's CFA needs: a finding at that frame's instruction */
	if (x->below_n && x->below_n == total(l, x) && w->load == x->below_load && !w->whole &&
	    names_at(w, x->below_off))
		return true;
	bool load = false;
	for (unsigned n = 0; n < x->nloads; n++)
		load |= x->load_off[n] == w->load;
	if (!load)
		return false;
	return w->whole || names_at(w, x->off);
}

/* pair every loss with the findings naming it (done once, at report time) */
static void pair(struct hx_rl *l)
{
	for (size_t i = 0; i < l->nloss; i++) {
		struct rl_loss *x = &l->loss[i];
		if (x->matched)
			continue;
		x->matched = true;
		const struct rl_dump *d = &l->d[x->dump];
		for (size_t k = 0; k < d->n && x->nexpl < RL_SHOW_RULES; k++)
			if (names(l, &d->f[k], x))
				x->expl[x->nexpl++] = k;
	}
}

static uint64_t total(const struct hx_rl *l, const struct rl_loss *x)
{
	uint64_t t = 0;
	for (size_t k = 0; k < l->ncols; k++)
		for (int o = 0; o < RL_NKIND; o++)
			t += x->count[k][o];
	return t;
}

/* every loss at this pc came from the native frame below it */
static bool by_native(const struct hx_rl *l, const struct rl_loss *x)
{
	return x->native_n && x->native_n == total(l, x);
}

unsigned long hx_rl_unexplained(const struct hx_rl *l)
{
	pair((struct hx_rl *)l);
	unsigned long n = 0;
	for (size_t i = 0; i < l->nloss; i++)
		n += !l->loss[i].nexpl && !by_native(l, &l->loss[i]);
	return n;
}

static int cmp_loss(const void *a, const void *b, void *arg)
{
	const struct hx_rl *l = arg;
	uint64_t x = total(l, a), y = total(l, b);
	return (x < y) - (x > y);
}

static const char *verdict(const struct hx_rl *l, const struct rl_loss *x)
{
	return x->nexpl ? "explained" : by_native(l, x) ? "native-below" : "UNEXPLAINED";
}

void hx_rl_report_text(const struct hx_rl *cl, const struct rr *r)
{
	struct hx_rl *l = (struct hx_rl *)cl;
	pair(l);
	if (l->nloss)
		qsort_r(l->loss, l->nloss, sizeof(*l->loss), cmp_loss, l);
	unsigned long un = hx_rl_unexplained(l), nat = 0;
	for (size_t i = 0; i < l->nloss; i++)
		nat += !l->loss[i].nexpl && by_native(l, &l->loss[i]);
	printf("lint meets replay: %zu pc(s) where a DWARF unwinder loses a JIT frame's caller: %lu explained by "
	       "a lint finding, %lu by the native frame below, %lu unexplained%s\n", l->nloss,
	       (unsigned long)l->nloss - un - nat, nat, un, l->dropped ? " (more not kept)" : "");
	if (l->copy_losses)
		printf("  %" PRIu64 " chain end(s) in JIT frames at the end of perf's stack copy (%" PRIu64 " bytes: "
		       "--call-graph dwarf,SIZE), not a property of the dump\n", l->copy_losses, r->stack_size);
	if (l->pmap_losses)
		printf("  %" PRIu64 " loss(es) in perf map code (no jitdump: nothing to lint, no unwinding info)\n",
		       l->pmap_losses);
	for (size_t i = 0; i < l->nd; i++)
		if (l->d[i].unreadable)
			printf("  %s: lint could not read it: %s\n", r->dump_path[i], l->d[i].err);
	for (size_t i = 0; i < l->nloss; i++) {
		const struct rl_loss *x = &l->loss[i];
		printf("  %-12s %s+0x%" PRIx64 "%s ", verdict(l, x), x->name, x->off, x->ra ? " (call)" : "");
		for (size_t k = 0; k < l->ncols; k++)
			for (int o = 0; o < RL_NKIND; o++)
				if (x->count[k][o])
					printf(" %s %s x%" PRIu64, r->uws[l->cols[k]]->name, kind_name[o], x->count[k][o]);
		for (unsigned e = 0; e < x->nexpl; e++) {
			const struct rl_finding *f = &l->d[x->dump].f[x->expl[e]];
			printf("%s %s %s @0x%" PRIx64, e ? "," : "  <-", f->rule->id, f->rule->name, f->offset);
		}
		if (x->nexpl && x->below_n && x->below_n == total(l, x))
			printf(" (the JIT frame below, at +0x%" PRIx64 ", restores the register this frame's CFA is "
			       "computed from)", x->below_off);
		if (!x->nexpl && x->native_n)
			printf("  <- the native frame below (pc 0x%" PRIx64 ") restores a register from %" PRIu64
			       " bytes below SP, outside perf's stack copy, and this frame's CFA needs it",
			       x->native_pc, x->native_below);
		printf("\n");
	}
}

void hx_rl_report_json(const struct hx_rl *cl, const struct rr *r, FILE *f)
{
	struct hx_rl *l = (struct hx_rl *)cl;
	pair(l);
	fprintf(f, "{\"losses\":%zu,\"unexplained\":%lu,\"perf_map_losses\":%" PRIu64 ",\"stack_copy_ends\":%" PRIu64
		",\"pcs\":[", l->nloss, hx_rl_unexplained(l), l->pmap_losses, l->copy_losses);
	for (size_t i = 0; i < l->nloss; i++) {
		const struct rl_loss *x = &l->loss[i];
		fprintf(f, "%s\n{\"symbol\":", i ? "," : "");
		hx_jsonw_str(f, x->name, HX_JSONW_LATIN1);
		fprintf(f, ",\"offset\":%" PRIu64 ",\"call\":%s,\"verdict\":\"%s\",\"native_pc\":%" PRIu64
			",\"native_below_sp\":%" PRIu64 ",\"counts\":{", x->off, x->ra ? "true" : "false", verdict(l, x),
			x->native_pc, x->native_below);
		bool first = true;
		for (size_t k = 0; k < l->ncols; k++)
			for (int o = 0; o < RL_NKIND; o++)
				if (x->count[k][o]) {
					fprintf(f, "%s\"%s %s\":%" PRIu64, first ? "" : ",", r->uws[l->cols[k]]->name,
						kind_name[o], x->count[k][o]);
					first = false;
				}
		fprintf(f, "},\"findings\":[");
		for (unsigned e = 0; e < x->nexpl; e++) {
			const struct rl_finding *fd = &l->d[x->dump].f[x->expl[e]];
			fprintf(f, "%s{\"rule\":\"%s\",\"name\":\"%s\",\"offset\":%" PRIu64 "}", e ? "," : "", fd->rule->id,
				fd->rule->name, fd->offset);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}");
}

void hx_rl_free(struct hx_rl *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->nd; i++)
		free(l->d[i].f);
	if (l->cs_ok)
		cs_close(&l->cs);
	free(l->loss);
	free(l);
}
