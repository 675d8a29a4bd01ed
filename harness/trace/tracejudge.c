/* Judging a trace through the one session (harness/run/session.c), as `run`
 * judges a case: every sample with a truth by execution goes to the selected
 * unwinders (fp, libunwind, libdw, oracle by default) with the maps of its
 * moment and the jitdump; each JIT function (a CODE_LOAD) becomes one case of
 * the run report (where = SYMBOL+0xOFF), written through harness/report.
 * What a trace expects everywhere: perf's unwind is right ("ok"; the oracle
 * "consistent"), so a sample that is not counts as a miss.  Real perf (the
 * run layer's `perf` column, harness/run/perfcol.c) gets the samples of
 * each session as a capture group: written as a perf.data over the maps of
 * their moment and the jitdump, perf inject -j, perf script. */
#include "harness/trace/trace.h"
#include "harness/capture/samples.h"
#include "harness/report/report.h"
#include "harness/run/perfrun.h"
#include "harness/case/cfarow.h"
#include "harness/case/say.h"
#include "harness/run/runner.h"
#include "harness/run/session.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/uwarch.h"
#include "unwinders/view.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

struct tj {
	const struct hx_trace_cfg *cfg;
	const struct hx_trace_result *res;
	const struct uw_arch *arch;
	struct jd_file jd;
	struct hx_sess sess;
	bool have_sess;
	const char *maps_of;            /* the maps text the session was built from */
	size_t nloads_of;               /* ... and the loads its view holds (tj_loads) */
	size_t *change_at;              /* by loads seen k: the first load index >= k where the view
					 * changes what was there (a load over an earlier one, a move);
					 * jd.nloads: none (NULL: every sample on the end's view) */
	struct jd_file jd_at;           /* jd with those loads only */
	struct uw_map *maps;
	size_t nmaps;
	char dir[4096];
	struct hx_sess_ref ref;
	/* the samples of the current session, as the perf column reads a capture */
	struct hx_group grp;
	struct hx_sample *gs;
	int dump_size;
	bool said[HX_SESS_MAX_UW];      /* a column's skip or open error told */
	size_t *judged;                 /* per column: samples judged by the gate (--expect) */
	struct hx_trace_agree *agree;   /* the samples without a truth */
	/* perf's memory across the samples of the process, as this machine's perf
	 * keeps it (pv_memory_of): libunwind's address space, perf >= 7's Dwfl */
	bool lu_keep, dw_keep;
};

static void tj_close(struct tj *j)
{
	if (j->have_sess)
		hx_sess_close(&j->sess);
	j->have_sess = false;
	uw_maps_free(j->maps, j->nmaps);
	j->maps = NULL;
	j->nmaps = 0;
}

/* a sample of a load: judged against its truth by execution, or, with
 * none, for agreement with real perf's chain (tj_agree_ref) */
static bool judged(const struct tj *j, const struct hx_trace_sample *s)
{
	return s->load < j->res->nloads;
}

/* the loads perf's view holds at a sample's moment: those the tracer had
 * read from the dump when it was taken, as perf inject -j adds them in time
 * order (a load over an earlier one replaces it from then on: the earlier
 * load's samples keep their own rules).  0 (a path that does not say): all */
static size_t tj_loads(const struct tj *j, const struct hx_trace_sample *s)
{
	size_t n = s->nloads_seen && s->nloads_seen < j->jd.nloads ? s->nloads_seen : j->jd.nloads;
	if (getenv("JU_TRACE_END_VIEW") || !j->change_at)   /* tests only: the negative control */
		return j->jd.nloads;
	/* loads read later that change nothing already there (code at fresh
	 * addresses) are in the view too, as they were before this rule: one
	 * session (one real perf run) per change, not per load */
	return j->change_at[n];
}

/* change_at (see struct tj): a load whose range meets an earlier load's, and
 * a move (after the loads before it), each a change; O(loads^2) address
 * comparisons, bounded by the dump's loads */
static size_t *tj_changes(const struct jd_file *jd)
{
	size_t n = jd->nloads, *at = calloc(n + 1, sizeof(*at));
	bool *chg = calloc(n + 1, sizeof(*chg));
	if (!at || !chg) {
		free(at);
		free(chg);
		return NULL;
	}
	for (size_t m = 1; m < n; m++)
		for (size_t i = 0; i < m && !chg[m]; i++)
			chg[m] = jd->loads[m].code_addr < jd->loads[i].code_addr + jd->loads[i].code_size &&
				 jd->loads[i].code_addr < jd->loads[m].code_addr + jd->loads[m].code_size;
	for (size_t k = 0; k < jd->nmoves; k++)
		if (jd->moves[k].nloads_before <= n)
			chg[jd->moves[k].nloads_before] = true;
	at[n] = n;
	for (size_t k = n; k-- > 0;)
		at[k] = chg[k] ? k : at[k + 1];
	free(chg);
	return at;
}

/* the group real perf replays: the judged samples from smp[i] on that share
 * its maps and its loads (one session), the loads as its functions (where the arena is) */
static void tj_group(struct tj *j, size_t i)
{
	const struct hx_trace_result *res = j->res;
	struct hx_group *g = &j->grp;
	memset(g, 0, sizeof(*g));
	g->case_path = g->dump_path = (char *)res->jitdump;
	g->maps = res->smp[i].maps;
	g->maps_len = strlen(g->maps);
	for (size_t l = 0; l < res->nloads && g->nfuncs < HX_MAX_FUNCS; l++, g->nfuncs++) {
		g->funcs[g->nfuncs].addr = res->loads[l].addr;
		g->funcs[g->nfuncs].size = res->loads[l].size;
	}
	g->samples = j->gs;
	/* samples of a moment before the dump's last load: real perf is told they
	 * were taken after the last load they saw (toperf's generation time), so
	 * perf inject -j has the later loads' maps come after them */
	bool before_last = j->nloads_of && j->nloads_of < j->jd.nloads;
	if (before_last) {
		g->ngens = 1;
		g->gen_time[1] = j->jd.loads[j->nloads_of - 1].timestamp;
	}
	for (size_t k = i; k < res->nsmp; k++) {
		const struct hx_trace_sample *s = &res->smp[k];
		if (!judged(j, s))
			continue;
		if (!s->maps || strcmp(s->maps, g->maps) || tj_loads(j, s) != j->nloads_of)
			break;
		struct hx_sample *h = &j->gs[g->nsamples++];
		memset(h, 0, sizeof(*h));
		h->abi = s->abi;
		h->mask = s->mask;
		memcpy(h->regs, s->regs, sizeof(h->regs));
		h->stack_addr = s->sp;
		h->stack_size = s->stack_len;
		h->stack = s->stack;              /* the perf column finds a sample by its stack */
		h->gen = before_last ? 1 : 0;
		h->ntruth = (uint32_t)s->ncopy;
		memcpy(h->truth, s->truth, sizeof(uint64_t) * (size_t)s->ncopy);
	}
}

/* the session over the maps of smp[i]'s moment (rebuilt when they changed) */
static int tj_session(struct tj *j, size_t i, struct hx_report *rep, struct ju_err *err)
{
	const struct hx_trace_sample *s = &j->res->smp[i];
	if (j->have_sess && j->maps_of && s->maps && !strcmp(j->maps_of, s->maps) && tj_loads(j, s) == j->nloads_of)
		return 0;
	tj_close(j);
	if (!s->maps || uw_maps_parse(s->maps, strlen(s->maps), &j->maps, &j->nmaps, err))
		return -EINVAL;
	j->nloads_of = tj_loads(j, s);
	j->jd_at = j->jd;
	j->jd_at.nloads = j->nloads_of;
	/* the moves read by then: those a load the sample's moment saw came after
	 * (all of them at the end view) */
	size_t k = 0;
	while (k < j->jd.nmoves && (j->nloads_of == j->jd.nloads || j->jd.moves[k].nloads_before < j->nloads_of))
		k++;
	j->jd_at.nmoves = k;
	tj_group(j, i);
	struct hx_sess_cfg c = { .arch = j->arch, .maps = j->maps, .nmaps = j->nmaps, .jd = &j->jd_at,
				 .profile = j->cfg->profile, .dump_dir = j->dir, .capture = &j->grp,
				 .dump_sizes = &j->dump_size, .ndump_sizes = 1 };
	for (int u = 0; u < rep->o->nuw; u++) {
		c.names[u] = rep->o->unwinders[u];
		c.uws[u] = hx_column_by_name(rep->o->unwinders[u]);
	}
	c.nuw = rep->o->nuw;
	int rc = hx_sess_open(&j->sess, &c, err);
	if (rc)
		return rc;
	j->have_sess = true;
	j->maps_of = s->maps;
	/* a column its opener skipped or could not open here: said once, its
	 * samples not judged (skipped) or judged as errors (failed) */
	for (int u = 0; u < c.nuw; u++)
		if (j->sess.open_err[u][0] && !j->said[u]) {
			ju_say(j->sess.skipped[u] ? JU_SAY_SKIP : JU_SAY_WARNING, "jitunwind trace",
			       "%s: the %s column (samples from #%zu on): %s", j->sess.skipped[u] ? "skip" : "error",
			       c.names[u], i, j->sess.open_err[u]);
			j->said[u] = true;
		}
	return 0;
}

/* the expectation of a trace: right everywhere (a column skipped here is
 * not judged) */
static void expect_ok(const struct hx_sess *sess, struct hx_sample_res *sr, int ref_col, bool *pass)
{
	for (int u = 0; u < sr->nuw; u++) {
		struct hx_uw_res *ur = &sr->uw[u];
		if (sess->skipped[u] || u == ref_col) {
			ur->expected[0] = 0;
			ur->match = true;
			continue;
		}
		bool oracle = ur->uw && ur->uw->ref == UW_REF_TRUTH;
		snprintf(ur->expected, sizeof(ur->expected), "%s", oracle ? "consistent" : "ok");
		/* the oracle reads the JIT's own unwinding info: where the JIT
		 * wrote none for a frame (V8's builtins: an empty .eh_frame) it
		 * predicts nothing, which is no inconsistency.  An unwinder that
		 * got the true chain by falling back to frame pointers there is
		 * right (its JSON keeps "fallback") */
		ur->match = oracle ? ur->consistent || ur->r.stop == UW_STOP_NO_INFO : ur->j.v == HX_OK;
		/* the FP convention's prediction needs the frames' records, which
		 * execution does not tell: not judged */
		if (ur->uw && ur->uw->ref == UW_REF_FP)
			ur->has_faithful = false;
		*pass &= ur->match;
	}
}

/* --expect: each column it names judged by its line as a case's [expect]
 * reads at this offset (a bare offset: of any function); the others carry no
 * expectation.  Each column's judged samples counted: one with none fails */
static void expect_gate(struct tj *j, struct hx_sample_res *sr, int ref_col, bool *pass)
{
	char where[48];
	snprintf(where, sizeof(where), "tramp+0x%x", (unsigned)sr->offset);
	for (int u = 0; u < sr->nuw; u++) {
		struct hx_uw_res *ur = &sr->uw[u];
		const char *ex = hx_case_expect(j->cfg->gate, ur->name, pv_profile_name(j->cfg->profile),
						(int)j->cfg->stack_size, where, sr->offset);
		ur->expected[0] = 0;
		ur->match = true;
		if (!ex || j->sess.skipped[u] || u == ref_col)
			continue;
		snprintf(ur->expected, sizeof(ur->expected), "%s", ex);
		ur->match = hx_expect_matches(ex, ur, ur->uw && ur->uw->ref == UW_REF_TRUTH);
		if (ur->uw && ur->uw->ref == UW_REF_FP)
			ur->has_faithful = false;
		j->judged[u]++;
		*pass &= ur->match;
	}
}

/* what run --json says of a sample beside its verdicts: the emitted CFI's
 * row at pc, the truth's symbols as perf names them (return addresses at
 * ip - 1, as perf looks them up) */
static void tj_rows_syms(struct tj *j, struct hx_sample_res *sr)
{
	if (j->sess.have_view)
		hx_cfa_row_text(&j->sess.view, sr->pc, sr->cfa_row, sizeof(sr->cfa_row));
	for (int t = 0; j->sess.have_pv && t < sr->nt; t++) {
		const char *name = pv_symbolize(&j->sess.pv, t ? sr->truth[t] - 1 : sr->truth[t]);
		snprintf(sr->tsym[t], HX_SYM_LEN, "%s", name ? name : "");
	}
}

static int chain_len(const struct uw_result *r)
{
	int n = r->n;
	while (n > 0 && r->addr[n - 1] == 0)
		n--;                    /* a zero return address ends a chain: no frame */
	return n;
}

/* A sample without a truth by execution: real perf's chain (the session's
 * first real-profiler column that runs here) is what every other column is
 * judged against, for agreement, up to where perf's chain ends; that column
 * is the reference and carries no expectation.  Its index, or -ENOENT: none. */
static int tj_agree_ref(struct tj *j, struct hx_sess_sample *in, struct hx_uw_res *out, uint64_t *ref)
{
	for (int u = 0; u < j->sess.cfg.nuw; u++) {
		const struct uw_unwinder *uw = j->sess.cfg.uws[u];
		if (!uw || uw->ref != UW_REF_EMULATION || j->sess.skipped[u] || !j->sess.uws[u])
			continue;
		in->judge = false;
		in->only = u;
		hx_sess_sample(&j->sess, in, &j->ref, out);
		in->judge = true;
		in->only = -1;
		const struct uw_result *r = &out[u].r;
		int n = chain_len(r) < HX_TRACE_MAX_TRUTH ? chain_len(r) : HX_TRACE_MAX_TRUTH;
		if (n <= 0)
			return -EINVAL;
		memcpy(ref, r->addr, sizeof(uint64_t) * (size_t)n);
		in->truth.addr = ref;
		in->truth.n = n;
		return u;
	}
	return -ENOENT;
}

/* a sample without a truth: each pair of columns that ran here, their
 * chains identical or not */
static void tj_pairs(struct tj *j, const struct hx_uw_res *ur, int nuw)
{
	for (int a = 0; a < nuw && a < HX_TRACE_MAX_COLS; a++)
		for (int b = a + 1; b < nuw && b < HX_TRACE_MAX_COLS; b++) {
			if (j->sess.skipped[a] || j->sess.skipped[b] || !j->sess.uws[a] || !j->sess.uws[b])
				continue;
			int n = chain_len(&ur[a].r);
			j->agree->both[a][b]++;
			j->agree->same[a][b] += n == chain_len(&ur[b].r) &&
						hx_chain_prefix_eq(ur[a].r.addr, n, ur[b].r.addr, n, n);
		}
}

static void tj_sample(struct tj *j, const struct hx_trace_sample *s, struct hx_case_res *cr, int nuw)
{
	const struct hx_trace_load *l = &j->res->loads[s->load];
	struct uw_sample full = { .arch = j->arch, .abi = s->abi, .mask = s->mask, .stack_addr = s->sp,
				  .stack = s->stack, .stack_size = s->stack_len,
				  .dwfl_proc = j->dw_keep ? (uint64_t)j->res->pid + 1 : 0, .dwfl_fresh = !j->dw_keep,
				  .lu_proc = j->lu_keep ? (uint64_t)j->res->pid + 1 : 0 };
	memcpy(full.regs, s->regs, sizeof(full.regs));
	uint8_t fl[HX_TRACE_MAX_TRUTH];
	uint64_t ref[HX_TRACE_MAX_TRUTH];
	memset(fl, HX_FP_NOT_RA, sizeof(fl));
	struct hx_sess_sample in = { .full = &full, .dump = &full, .truth = { s->truth, fl, s->ncopy },
				     .judge = true, .only = -1 };
	struct hx_sample_res *sr = &cr->samples[cr->nsamples];
	int ref_col = -1;
	if (!s->truth_known && (ref_col = tj_agree_ref(j, &in, sr->uw, ref)) < 0) {
		j->agree->unjudged++;   /* no truth and no real perf to agree with: the columns compared */
		in.judge = false;
		hx_sess_sample(&j->sess, &in, &j->ref, sr->uw);
		tj_pairs(j, sr->uw, nuw);
		return;
	}
	j->agree->judged += ref_col >= 0;
	cr->nsamples++;
	hx_sess_emitted(&j->sess, &full, &in.truth, &j->ref);
	if (j->ref.emitted.v != HX_OK)
		cr->consistent = false;
	snprintf(sr->where, sizeof(sr->where), "%.30s+0x%" PRIx64, l->name, s->pc - l->addr);
	sr->offset = (int)(s->pc - l->addr);
	for (size_t b = 0; b < l->nbps; b++)
		if (l->bps[b].addr == s->pc)
			snprintf(sr->insn, sizeof(sr->insn), "%s", l->bps[b].insn);
	sr->stack_size = (int)j->cfg->stack_size;   /* perf asked for it; near the top the copy is shorter */
	snprintf(sr->profile, sizeof(sr->profile), "%s", pv_profile_name(j->cfg->profile));
	sr->nt = in.truth.n;    /* judged up to the stack copy's end (the header counts the cut) */
	memcpy(sr->truth, in.truth.addr, sizeof(uint64_t) * (size_t)in.truth.n);
	sr->truth_of = ref_col >= 0 ? sr->uw[ref_col].name : NULL;
	sr->pc = s->pc;
	sr->src = (uint32_t)(s - j->res->smp);
	tj_rows_syms(j, sr);
	hx_sess_sample(&j->sess, &in, &j->ref, sr->uw);
	sr->nuw = nuw;
	if (ref_col >= 0)
		tj_pairs(j, sr->uw, nuw);
	if (j->cfg->gate)
		expect_gate(j, sr, ref_col, &cr->pass);
	else
		expect_ok(&j->sess, sr, ref_col, &cr->pass);
}

/* one case per load: its coverage in `about` */
static void case_head(const struct tj *j, const struct hx_trace_load *l, struct hx_case_res *cr)
{
	size_t hit = 0;
	for (size_t b = 0; b < l->nbps; b++)
		hit += l->bps[b].hits > 0;
	snprintf(cr->name, sizeof(cr->name), "%s", l->name);
	snprintf(cr->file, sizeof(cr->file), "%s", j->res->jitdump);
	int len = snprintf(cr->about, sizeof(cr->about), "JIT code at 0x%" PRIx64 ", %zu of %zu boundaries "
			   "sampled", l->addr, hit, l->nbps);
	for (size_t b = 0, shown = 0; b < l->nbps && shown < 24 && len < (int)sizeof(cr->about) - 16; b++)
		if (!l->bps[b].hits && !l->bps[b].foreign)
			len += snprintf(cr->about + len, sizeof(cr->about) - (size_t)len, "%s+0x%" PRIx64,
					shown++ ? " " : "; never executed: ", l->bps[b].addr - l->addr);
	snprintf(cr->profile, sizeof(cr->profile), "%s", pv_profile_name(j->cfg->profile));
	cr->pass = cr->consistent = true;
	cr->has_symbols = true;
}

int hx_trace_jd_open(const struct hx_trace_result *res, struct jd_file *jd, struct ju_err *je)
{
	uint8_t *copy = malloc(res->jd_end ? res->jd_end : 1);
	if (!copy)
		return ju_errf(je, ENOMEM, 0, "out of memory");
	if (res->jd_bytes)
		memcpy(copy, res->jd_bytes, res->jd_end);
	int e = jd_parse_mem(jd, copy, res->jd_end, je);
	/* as jd_open leaves it: jd_close frees the copy */
	snprintf(jd->path, sizeof(jd->path), "%s", res->jitdump);
	jd->data = copy;
	jd->size = res->jd_end;
	jd->heap = true;
	if (e)
		jd_close(jd);
	return e;
}

/* --expect: a function none of whose samples a column it names judged is
 * not met (nothing judged is never "met") */
static void gate_cases(const struct tj *j, const struct hx_report *rep, struct hx_case_res *cases, size_t n)
{
	for (int u = 0; j->cfg->gate && u < rep->o->nuw; u++) {
		if (!hx_case_has_expect(j->cfg->gate, rep->o->unwinders[u], pv_profile_name(j->cfg->profile),
					(int)j->cfg->stack_size))
			continue;
		for (size_t k = 0; k < n; k++) {
			size_t judged_here = 0;
			for (size_t s = 0; s < cases[k].nsamples; s++)
				judged_here += cases[k].samples[s].uw[u].expected[0] != 0;
			if (!judged_here)
				cases[k].pass = false;
		}
	}
}

/* every sample judged into one case per load; 0 or -errno (err set) */
int hx_trace_judge(const struct hx_trace_cfg *cfg, const struct hx_trace_result *res, struct hx_report *rep,
		   size_t *gate_judged, struct hx_trace_agree *agree, struct ju_err *err)
{
	struct tj j = { .cfg = cfg, .res = res, .arch = uw_arch_host(), .dump_size = (int)cfg->stack_size,
			.judged = gate_judged, .agree = agree };
	/* the samples come in the order they were taken: the state perf keeps
	 * carries from one to the next as in perf script, as this machine's perf
	 * keeps it (run's and replay's rule; no perf: none kept) */
	const struct hx_perf_build *b;
	if (!hx_perf_probe(&b, NULL, 0) && !getenv("JU_NO_PERF_MEMORY")) {
		j.lu_keep = pv_memory_of(b->major)->lu_per_process;
		j.dw_keep = pv_memory_of(b->major)->dw_per_process;
	}
	struct ju_err je;
	if (hx_trace_jd_open(res, &j.jd, &je)) {
		return ju_errf(err, EINVAL, je.offset, "%s: offset 0x%" PRIx64 ": %s", res->jitdump,
			       (uint64_t)je.offset, je.msg);
	}
	j.change_at = tj_changes(&j.jd);
	char path[sizeof(j.dir)];
	snprintf(path, sizeof(path), "%s", res->jitdump);
	snprintf(j.dir, sizeof(j.dir), "%s", dirname(path));
	/* one case per load sampled at its boundaries, in load order */
	size_t *cix = calloc(res->nloads ? res->nloads : 1, sizeof(*cix)), ncases = 0;
	for (size_t i = 0; cix && i < res->nloads; i++)
		cix[i] = res->loads[i].traced ? ncases++ : SIZE_MAX;
	struct hx_case_res *cases = calloc(ncases ? ncases : 1, sizeof(*cases));
	j.gs = calloc(res->nsmp ? res->nsmp : 1, sizeof(*j.gs));
	int e = cases && j.gs && cix ? 0 : -ENOMEM;
	/* each case's samples sized to its load's judged samples (a sample
	 * result is tens of KB: the whole trace per load would be terabytes of
	 * address space for a JIT of thousands of loads, and fork would fail) */
	size_t *per = calloc(ncases ? ncases : 1, sizeof(*per));
	if (!per)
		e = -ENOMEM;
	for (size_t i = 0; i < res->nsmp && !e; i++)
		if (judged(&j, &res->smp[i]) && cix[res->smp[i].load] != SIZE_MAX)
			per[cix[res->smp[i].load]]++;
	for (size_t i = 0; i < res->nloads && !e; i++) {
		if (cix[i] == SIZE_MAX)
			continue;
		case_head(&j, &res->loads[i], &cases[cix[i]]);
		if (!(cases[cix[i]].samples = calloc(per[cix[i]] ? per[cix[i]] : 1, sizeof(*cases[0].samples))))
			e = -ENOMEM;
	}
	free(per);
	for (size_t i = 0; i < res->nsmp && !e; i++) {
		const struct hx_trace_sample *s = &res->smp[i];
		if (!judged(&j, s) || cix[s->load] == SIZE_MAX)
			continue;          /* counted in the header: no truth to judge by */
		if ((e = tj_session(&j, i, rep, err)))
			break;
		tj_sample(&j, s, &cases[cix[s->load]], rep->o->nuw);
	}
	free(cix);
	if (!e && cases)
		gate_cases(&j, rep, cases, ncases);
	tj_close(&j);
	free(j.change_at);
	jd_close(&j.jd);
	free(j.gs);
	rep->cases = cases;
	rep->n = cases ? ncases : 0;
	return e;
}

void hx_trace_judged_free(struct hx_report *rep)
{
	struct hx_case_res *c = (struct hx_case_res *)rep->cases;
	for (size_t i = 0; i < rep->n; i++)
		hx_case_res_free(&c[i]);
	free(c);
	rep->cases = NULL;
	rep->n = 0;
}
