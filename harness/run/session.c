/* One replay session (session.h): perf's two views, the selected
 * unwinders' states, and the one loop that unwinds a sample with them. */
#include "harness/run/session.h"
#include "harness/capture/samples.h"
#include "unwinders/lrstep.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

_Static_assert(HX_SESS_MAX_TRUTH >= HX_MAX_TRUTH, "a result holds a symbol per truth frame");

/* cfg.times: a monotonic clock (vDSO, no system call) */
static double now(const struct hx_sess *s)
{
	if (!s->cfg.times)
		return 0;
	if (s->cfg.clock)
		return s->cfg.clock();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Perf's view under the session's profile, then every selected unwinder's
 * state over both views. */
static void open_profile(struct hx_sess *s)
{
	const struct hx_sess_cfg *c = &s->cfg;
	s->view.pv = NULL;
	s->have_pv = false;
	s->pv_err[0] = 0;
	double t0 = now(s);
	struct ju_err je;
	je.msg[0] = 0;
	if (!c->no_pv) {
		/* the jitted .so files in a scratch directory (pid-named, removed if a
		 * signal ends the command), not in perf view's own under /tmp */
		const char *outdir = c->jitted_dir;
		s->pvdir[0] = 0;
		struct ju_err se;
		if (!outdir && c->jd && (c->jd->nloads || c->jd->nmoves) &&
		    !hx_scratch_mkdtemp(s->pvdir, sizeof(s->pvdir), "pv", &se))
			outdir = s->pvdir;
		if (pv_build_at(&s->pv, c->profile, c->maps, c->nmaps, c->jd, outdir, c->dump_dir,
				&je) == 0) {
			s->have_pv = true;
			s->view.pv = &s->pv;
		} else if (je.msg[0]) {
			snprintf(s->pv_err, sizeof(s->pv_err), "%s", je.msg);
		} else {
			snprintf(s->pv_err, sizeof(s->pv_err), "perf's view could not be built");
		}
	}
	if (c->times)
		c->times->pv += now(s) - t0;
	for (int u = 0; u < c->nuw; u++) {
		s->state[u] = NULL;
		s->open_err[u][0] = 0;
		s->skipped[u] = false;
		s->uws[u] = c->uws[u];
		t0 = now(s);
		int rc = 0;
		hx_col_open_fn run_open = s->uws[u] ? hx_column_opener(s->uws[u]) : NULL;
		struct hx_col_in in = { &s->view, c->capture, c->dump_sizes, c->ndump_sizes };
		if (run_open) {
			je.msg[0] = 0;
			rc = run_open(&in, &s->state[u], &je);
			snprintf(s->open_err[u], sizeof(s->open_err[u]), "%s", rc ? je.msg : "");
		} else if (s->uws[u] && s->uws[u]->open) {
			je.msg[0] = 0;
			rc = s->uws[u]->open(&s->view, &s->state[u], &je);
			snprintf(s->open_err[u], sizeof(s->open_err[u]), "%s", rc ? je.msg : "");
		}
		if (c->times)
			c->times->open[u] += now(s) - t0;
		s->skipped[u] = rc > 0;
		if (rc) {
			if (!s->open_err[u][0])
				snprintf(s->open_err[u], sizeof(s->open_err[u]), "its state could not be opened");
			s->uws[u] = NULL;
		}
	}
}

static void close_profile(struct hx_sess *s)
{
	const struct hx_sess_cfg *c = &s->cfg;
	for (int u = 0; u < c->nuw; u++) {
		double t0 = now(s);
		if (s->uws[u] && s->uws[u]->close)
			s->uws[u]->close(s->state[u]);
		s->state[u] = NULL;
		if (c->times)
			c->times->open[u] += now(s) - t0;
	}
	double t0 = now(s);
	if (s->have_pv)
		pv_fini(&s->pv);
	if (s->pvdir[0])
		hx_scratch_remove(s->pvdir);
	s->pvdir[0] = 0;
	if (c->times)
		c->times->pv += now(s) - t0;
	s->have_pv = false;
	s->view.pv = NULL;
}

int hx_sess_open(struct hx_sess *s, const struct hx_sess_cfg *cfg, struct ju_err *e)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	memset(e, 0, sizeof(*e));
	if (!cfg->arch || cfg->nuw < 0 || cfg->nuw > HX_SESS_MAX_UW)
		return ju_errf(e, EINVAL, 0, "session: %s", cfg->arch ? "too many unwinders" : "no architecture");
	double t0 = now(s);
	int rc = uw_view_init(&s->view, cfg->arch, cfg->maps, cfg->nmaps, cfg->jd, e);
	if (cfg->times)
		cfg->times->load += now(s) - t0;
	if (rc)
		return rc < -1 ? rc : -EINVAL;
	s->have_view = true;
	open_profile(s);
	return 0;
}

void hx_sess_reprofile(struct hx_sess *s, enum pv_profile p)
{
	close_profile(s);
	s->cfg.profile = p;
	open_profile(s);
}

void hx_sess_close(struct hx_sess *s)
{
	if (!s->have_view)
		return;
	close_profile(s);
	uw_view_fini(&s->view);
	s->have_view = false;
}

int hx_sess_anchor_len(const struct uw_result *c, const struct hx_sess_truth *t)
{
	for (int f = 0; f < c->n; f++)
		if (t->n && c->addr[f] == t->addr[t->n - 1])
			return f + 1;
	return c->n;
}

void hx_sess_emitted(struct hx_sess *s, const struct uw_sample *full, const struct hx_sess_truth *t,
		     struct hx_sess_ref *ref)
{
	double t0 = now(s);
	uw_oracle.unwind(NULL, &s->view, full, &ref->oracle_full);
	if (s->cfg.times)
		s->cfg.times->oracle += now(s) - t0;
	hx_judge(t->addr, t->n, ref->oracle_full.addr, ref->oracle_full.n, &ref->emitted);
}

/* perf's symbols for the chain's first frames (return addresses looked up
 * at ip - 1); a JIT frame perf cannot name is name_lost */
static void symbolize(const struct hx_sess *s, struct hx_uw_res *ur, int nt)
{
	ur->nsym = ur->r.n < nt ? ur->r.n : nt;
	for (int f = 0; f < ur->nsym; f++) {
		uint64_t a = f ? ur->r.addr[f] - 1 : ur->r.addr[f];
		const char *n = pv_symbolize(&s->pv, a);
		snprintf(ur->sym[f], HX_SYM_LEN, "%s", n ? n : "");
		const struct uw_region *reg = uw_view_find(&s->view, a);
		if (!n && reg && reg->kind == UW_REGION_JIT && a < reg->load->code_addr + reg->load->code_size)
			ur->name_lost = true;
	}
}

/* the FP convention over the truth: the frames whose owner has its record
 * established; where the record's FP + 8 is not the return address, the
 * walk reports whatever word is there: any frame at that place */
static bool fp_faithful(const struct hx_sess_truth *t, const struct uw_result *r, const struct uw_sample *s)
{
	int np = 0;
	bool ok = true;
	/* a walk with first_ra_live (unwinders/uwarch.h): the first step stores the
	 * live ra, not the ra slot of the first record it reads, and goes on from
	 * that record */
	bool live = s->arch->fp.first_ra_live, unstored = false;
	for (int f = 0; f < t->n; f++) {
		if (f == 1 && live) {
			ok &= np < r->n && r->addr[np] == (uw_reg(s, s->arch->perf_lr) & s->arch->fp.ra_mask);
			np++;
			unstored = true;
		}
		if (t->fpflag[f] == HX_FP_SKIPPED)
			continue;
		if (f >= 1 && unstored) {
			unstored = false;
			continue;
		}
		ok &= np < r->n && (t->fpflag[f] == HX_FP_NOT_RA || r->addr[np] == t->addr[f]);
		np++;
	}
	return ok;
}

/* a real profiler against jitunwind's emulation of it, when that column
 * ran on the same sample (down to the anchor) */
static void emu_faithful(const struct hx_sess *s, const struct uw_unwinder *uw, const struct hx_sess_truth *t,
			 const struct hx_uw_res *out, int u, struct hx_uw_res *ur)
{
	const char *emu = uw->emulated_by ? uw->emulated_by(pv_profile_name(s->cfg.profile)) : NULL;
	for (int i = 0; emu && i <= u; i++) {
		if (strcmp(out[i].name, emu))
			continue;
		const struct uw_result *e = &out[i].r;
		ur->has_faithful = true;
		ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, e->addr, e->n, hx_sess_anchor_len(e, t));
	}
}

/* faithful: the chain against what the unwinder's convention predicts */
static void judge_faithful(struct hx_sess *s, const struct hx_sess_sample *in, const struct hx_sess_ref *ref,
			   const struct hx_uw_res *out, int u, struct hx_uw_res *ur)
{
	struct uw_result *p = &s->scratch;
	const struct uw_unwinder *uw = s->uws[u];   /* NULL: not available, held to the oracle */
	ur->has_faithful = true;
	switch (uw ? uw->ref : UW_REF_ORACLE) {
	case UW_REF_TRUTH:
		ur->has_faithful = false;
		ur->consistent = ur->j.v == HX_OK;
		return;
	case UW_REF_FP:
		ur->faithful = fp_faithful(&in->truth, &ur->r, in->full);
		return;
	case UW_REF_LR_SPLICE:
		/* the kernel's FP chain spliced with a registers-only step of the emitted CFI */
		uw_lrstep_unwind_with(&uw_oracle, NULL, &s->view, in->full, p);
		ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, p->addr, p->n, p->n);
		return;
	case UW_REF_FP_EMU:
		/* the emulation of the kernel's walk on the same sample: equal chains;
		 * where the emulation met a record outside the stack (an rbp that is
		 * no frame pointer, in code built without them), the kernel read on
		 * in live memory no sample holds: its chain must start with fp's */
		uw_fp.unwind(NULL, &s->view, in->full, p);
		ur->faithful = (ur->r.n == p->n || (p->stop == UW_STOP_MEM && ur->r.n > p->n)) &&
			       hx_chain_prefix_eq(ur->r.addr, ur->r.n, p->addr, p->n, p->n);
		return;
	case UW_REF_EMULATION:
		ur->has_faithful = false;
		emu_faithful(s, uw, &in->truth, out, u, ur);
		return;
	case UW_REF_ORACLE:
		/* the oracle under the same view and dump size */
		ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, ref->oracle_dump.addr, ref->oracle_dump.n,
						  hx_sess_anchor_len(&ref->oracle_dump, &in->truth));
		return;
	}
}

void hx_sess_unwind(struct hx_sess *s, int u, const struct uw_sample *full, const struct uw_sample *dump,
		    struct uw_result *r)
{
	const struct uw_unwinder *uw = s->uws[u];
	if (!uw) {
		r->n = 0;
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "unwinder not available");
		return;
	}
	double t0 = now(s);
	uw->unwind(s->state[u], &s->view, uw->sees == UW_SEES_DUMP ? dump : full, r);
	if (s->cfg.times)
		s->cfg.times->unwind[u] += now(s) - t0;
}

void hx_sess_sample(struct hx_sess *s, const struct hx_sess_sample *in, struct hx_sess_ref *ref,
		    struct hx_uw_res *out)
{
	if (in->judge) {
		double t0 = now(s);
		uw_oracle.unwind(NULL, &s->view, in->dump, &ref->oracle_dump);
		if (s->cfg.times)
			s->cfg.times->oracle += now(s) - t0;
	}
	int u0 = in->only >= 0 ? in->only : 0, u1 = in->only >= 0 ? in->only + 1 : s->cfg.nuw;
	for (int u = u0; u < u1; u++) {
		struct hx_uw_res *ur = &out[u];
		/* every unwinder sets a flag with each frame it pushes: the chain's
		 * arrays need no clearing (bench replays fp at >10M samples/s) */
		memset(&ur->j, 0, offsetof(struct hx_uw_res, sym) - offsetof(struct hx_uw_res, j));
		ur->r.n = 0;
		ur->r.stop = UW_STOP_END;
		ur->r.why[0] = ur->r.fallback_why[0] = 0;
		ur->name = s->cfg.names[u] ? s->cfg.names[u] : s->cfg.uws[u] ? s->cfg.uws[u]->name : "?";
		ur->uw = s->cfg.uws[u];
		if (in->judge && s->uws[u] && s->uws[u]->ref == UW_REF_TRUTH)
			ur->r = ref->oracle_full;     /* the truth reference already ran, for `emitted` */
		else
			hx_sess_unwind(s, u, in->full, in->dump, &ur->r);
		if (!in->judge)
			continue;
		for (int f = 0; f < ur->r.n; f++)
			ur->fallback |= (ur->r.flags[f] & UW_F_FALLBACK) != 0;
		hx_judge(in->truth.addr, in->truth.n, ur->r.addr, ur->r.n, &ur->j);
		judge_faithful(s, in, ref, out, u, ur);
		if (s->have_pv && !(s->uws[u] && s->uws[u]->ref == UW_REF_TRUTH))
			symbolize(s, ur, in->truth.n);
	}
}

const char *hx_outcome_name(enum hx_outcome o)
{
	static const char *const names[HX_OUT_N] = { "full", "truncated", "fallback", "name-lost" };
	return (unsigned)o < HX_OUT_N ? names[o] : "?";
}

/* the session's own JIT lookup: a jitted DSO of perf's view */
static bool pv_jit_at(const void *ctx, uint64_t a, bool *named)
{
	const struct hx_sess *s = ctx;
	const struct pv_map *m = pv_find(&s->pv, a);
	if (!m || !m->dso || !m->dso->jitted || !m->dso->load)
		return false;
	*named = pv_symbolize(&s->pv, a) != NULL;
	return true;
}

int hx_sess_first_jit(const struct hx_sess *s, const struct uw_result *c, hx_jit_at_fn jit_at, const void *ctx)
{
	if (!jit_at) {
		jit_at = pv_jit_at;
		ctx = s;
	}
	bool named;
	for (int i = 0; i < c->n; i++)
		if (jit_at(ctx, c->addr[i] - (i ? 1 : 0), &named))
			return i;
	return -ENOENT;
}

enum hx_outcome hx_sess_outcome(const struct hx_sess *s, const struct uw_result *c, hx_jit_at_fn jit_at,
				const void *ctx)
{
	if (!jit_at) {
		jit_at = pv_jit_at;
		ctx = s;
	}
	bool fb = false, named;
	int j = hx_sess_first_jit(s, c, jit_at, ctx);
	if (j < 0)
		return HX_OUT_TRUNC;     /* ended before it reached the JIT frame */
	for (int i = j + 1; i < c->n; i++) {
		fb |= (c->flags[i] & UW_F_FALLBACK) != 0;
		if (jit_at(ctx, c->addr[i] - 1, &named)) {
			if (!named)
				return HX_OUT_LOST;
			continue;
		}
		const struct pv_map *m = s->have_pv ? pv_find(&s->pv, c->addr[i] - 1) : NULL;
		if (!m || !m->dso)
			return HX_OUT_LOST;
		return fb ? HX_OUT_FALLBACK : HX_OUT_FULL;
	}
	return HX_OUT_TRUNC;
}
