/* Runner: replay each case's samples, judge. */
#include "harness/run/runner.h"
#include "unwinders/view.h"
#include "unwinders/model/files.h"
#include "unwinders/lrstep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "harness/run/cfarow.h"

void hx_case_res_free(struct hx_case_res *r)
{
	free(r->samples);
	r->samples = NULL;
}

static void where_of(const struct hx_group *g, const struct hx_sample *s, char *where,
		     size_t wl, char *insn, size_t il, int *offset)
{
	insn[0] = 0;
	*offset = -1;
	if (s->func == HX_FUNC_CALLEE) {
		snprintf(where, wl, "callee");
		snprintf(insn, il, "(C target)");
		return;
	}
	for (uint32_t f = 0; f < g->nfuncs; f++) {
		const struct hx_func *fn = &g->funcs[f];
		if (fn->index != s->func)
			continue;
		snprintf(where, wl, "%s+0x%x", fn->name, s->offset);
		*offset = (int)s->offset;
		for (uint32_t r = 0; r < fn->nrows; r++)
			if (fn->rows[r].offset == s->offset)
				snprintf(insn, il, "%s", fn->rows[r].insn);
		return;
	}
	snprintf(where, wl, "func%u+0x%x", s->func, s->offset);
	*offset = (int)s->offset;
}

/* "ok" needs the verdict and no fallback; "ok fallback" needs both */
static bool expect_matches(const char *expected, const struct hx_uw_res *u, bool is_oracle)
{
	if (!strcmp(expected, "consistent"))
		return is_oracle && u->consistent;
	if (!strcmp(expected, "inconsistent"))
		return is_oracle && !u->consistent;
	char w[32];
	snprintf(w, sizeof(w), "%s", expected);
	char *sp = strchr(w, ' ');
	bool want_fb = false;
	if (sp) {
		*sp = 0;
		want_fb = true;
	}
	return !strcmp(w, hx_verdict_name(u->j.v)) && u->fallback == want_fb;
}

/* where the oracle's chain reaches the anchor's return address */
static int oracle_len(const struct uw_result *o, const struct hx_sample *s)
{
	for (int f = 0; f < o->n; f++)
		if (s->ntruth && o->addr[f] == s->truth[s->ntruth - 1])
			return f + 1;
	return o->n;
}

static void symbolize(const struct pv_view *pv, const struct uw_view *v, struct hx_uw_res *ur, int nt)
{
	ur->nsym = ur->r.n < nt ? ur->r.n : nt;
	for (int f = 0; f < ur->nsym; f++) {
		/* perf looks return addresses up at ip - 1 */
		uint64_t a = f ? ur->r.addr[f] - 1 : ur->r.addr[f];
		const char *n = pv_symbolize(pv, a);
		snprintf(ur->sym[f], HX_SYM_LEN, "%s", n ? n : "");
		const struct uw_region *reg = uw_view_find(v, a);
		if (!n && reg && reg->kind == UW_REGION_JIT && a < reg->load->code_addr + reg->load->code_size)
			ur->name_lost = true;
	}
}

/* Everything one group's replay reads: the parsed case, the jitdump, the
 * maps and the process view, plus the per-profile perf view and the
 * per-sample scratch chains (heap: no function-static state). */
struct replay {
	const struct hx_group *g;
	const struct hx_opts *o;
	const struct uw_arch *arch;
	const struct hx_case *c;            /* o->parsed, or owned */
	struct hx_case *owned;
	struct jd_file jd;
	bool have_jd;
	struct uw_map *maps;
	size_t nmaps;
	struct uw_view view;
	bool have_view;
	struct pv_view pv;
	bool have_pv;
	const struct uw_unwinder *uws[HX_MAX_UW];
	void *state[HX_MAX_UW];
	int profs[3], nprofs;
	int sizes[4], nsizes;
	struct uw_result oracle_full, oracle_dump, pred;
};

/* o->times: a monotonic clock (vDSO, no system call) */
static double rt_now(const struct hx_opts *o)
{
	if (!o->times)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void replay_free(struct replay *rp)
{
	if (rp->have_view)
		uw_view_fini(&rp->view);
	uw_maps_free(rp->maps, rp->nmaps);
	if (rp->have_jd)
		jd_close(&rp->jd);
	if (rp->owned) {
		hx_case_free(rp->owned);
		free(rp->owned);
	}
	free(rp);
}

/* The capture's own outcome: an error record, a crash, a missing END. */
static void group_problem(const struct hx_group *g, struct hx_case_res *res)
{
	if (g->error) {
		snprintf(res->problem, sizeof(res->problem), "%s", g->error);
		res->pass = false;
	}
	if (g->crashed) {
		char where[64] = "C code";
		if (g->crash.func != HX_FUNC_CALLEE && g->crash.func < g->nfuncs)
			snprintf(where, sizeof(where), "%s+0x%llx", g->funcs[g->crash.func].name,
				 (unsigned long long)g->crash.offset);
		snprintf(res->problem, sizeof(res->problem),
			 "crash: signal %u (%s) at pc 0x%llx (%s), fault address 0x%llx", g->crash.signo,
			 strsignal((int)g->crash.signo), (unsigned long long)g->crash.pc, where,
			 (unsigned long long)g->crash.fault_addr);
		res->pass = false;
	} else if (!g->ended && !g->error) {
		snprintf(res->problem, sizeof(res->problem), "the capture did not finish (no END record)");
		res->pass = false;
	}
}

/* The profiles and dump sizes to replay under: the options', else the case's. */
static void replay_configs(struct replay *rp)
{
	const struct hx_opts *o = rp->o;
	const struct hx_case *c = rp->c;
	rp->nprofs = rp->nsizes = 0;
	if (o->profile_set)
		rp->profs[rp->nprofs++] = (int)o->profile;
	else
		for (int i = 0; i < c->nprofiles; i++)
			rp->profs[rp->nprofs++] = c->profiles[i];
	if (!rp->nprofs)
		rp->profs[rp->nprofs++] = PV_CURRENT;
	if (o->stack_size)
		rp->sizes[rp->nsizes++] = o->stack_size;
	else
		for (int i = 0; i < c->nstack_sizes; i++)
			rp->sizes[rp->nsizes++] = c->stack_sizes[i];
	if (!rp->nsizes)
		rp->sizes[rp->nsizes++] = 8192;
}

/* Parse the case, open the jitdump, parse the maps, build the process view.
 * 0, or -errno with err set. */
static int replay_load(struct replay *rp, uint32_t elf_mach, struct hx_case_res *res,
		       char *err, size_t errlen)
{
	const struct hx_group *g = rp->g;
	snprintf(res->file, sizeof(res->file), "%s", g->case_path ? g->case_path : "?");
	const struct hx_case *pc = rp->o->parsed;
	if (pc && pc->text && g->case_text && pc->text_len == g->case_len &&
	    !memcmp(pc->text, g->case_text, g->case_len) && !strcmp(pc->path, res->file)) {
		rp->c = pc;
	} else {
		rp->owned = calloc(1, sizeof(*rp->owned));
		if (!rp->owned) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (hx_case_parse_ex(rp->owned, res->file, g->case_text, g->case_len,
				     rp->o->observe ? HX_CASE_NO_EXPECT : 0, err, errlen))
			return -EINVAL;
		rp->c = rp->owned;
	}
	snprintf(res->name, sizeof(res->name), "%s", rp->c->name);
	snprintf(res->about, sizeof(res->about), "%s", rp->c->about);
	res->pass = true;
	res->consistent = true;
	group_problem(g, res);
	rp->arch = uw_arch_by_mach((uint16_t)elf_mach);
	if (!rp->arch) {
		snprintf(err, errlen, "%s: unsupported ELF machine %u", res->file, elf_mach);
		return -EINVAL;
	}
	struct jd_err je;
	if (g->dump_path) {
		if (jd_open(&rp->jd, g->dump_path, &je)) {
			snprintf(err, errlen, "%s: offset 0x%llx: %s", g->dump_path,
				 (unsigned long long)je.offset, je.msg);
			return -EINVAL;
		}
		rp->have_jd = true;
	}
	if (g->maps && uw_maps_parse(g->maps, g->maps_len, &rp->maps, &rp->nmaps, err, errlen))
		return -EINVAL;
	if (uw_view_init(&rp->view, rp->arch, rp->maps, rp->nmaps, rp->have_jd ? &rp->jd : NULL,
			 err, errlen))
		return -ENOMEM;
	rp->have_view = true;
	replay_configs(rp);
	return 0;
}

/* faithful: the chain against what the unwinder's convention predicts */
static void judge_faithful(struct replay *rp, const struct uw_unwinder *uw, const struct hx_sample *s,
			   const struct uw_sample *full, int olen, const struct hx_sample_res *sr,
			   struct hx_uw_res *ur)
{
	switch (uw ? uw->ref : UW_REF_ORACLE) {
	case UW_REF_TRUTH:
		ur->consistent = ur->j.v == HX_OK;
		return;
	case UW_REF_FP: {
		/* the truth frames whose owner has its frame record established;
		 * where the record's FP + 8 is not the return address, the walk
		 * reports whatever word is there: any frame at that place */
		int np = 0;
		bool ok = true;
		for (uint32_t t = 0; t < s->ntruth; t++) {
			if (s->fpflag[t] == HX_FP_SKIPPED)
				continue;
			ok &= np < ur->r.n && (s->fpflag[t] == HX_FP_NOT_RA || ur->r.addr[np] == s->truth[t]);
			np++;
		}
		ur->has_faithful = true;
		ur->faithful = ok;
		return;
	}
	case UW_REF_LR_SPLICE:
		/* the kernel's FP chain spliced with a registers-only step of the emitted CFI */
		uw_lrstep_unwind_with(&uw_oracle, NULL, &rp->view, full, &rp->pred);
		ur->has_faithful = true;
		ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, rp->pred.addr, rp->pred.n,
						  rp->pred.n);
		return;
	case UW_REF_FP_EMU:
		/* the emulation of the kernel's walk on the same sample: equal chains;
		 * where the emulation met a record outside the stack (an rbp that is
		 * no frame pointer, in code built without them), the kernel read on
		 * in live memory no sample holds: its chain must start with fp's */
		uw_fp.unwind(NULL, &rp->view, full, &rp->pred);
		ur->has_faithful = true;
		ur->faithful = (ur->r.n == rp->pred.n || (rp->pred.stop == UW_STOP_MEM && ur->r.n > rp->pred.n)) &&
			       hx_chain_prefix_eq(ur->r.addr, ur->r.n, rp->pred.addr, rp->pred.n, rp->pred.n);
		return;
	case UW_REF_EMULATION: {
		/* a real profiler against jitunwind's emulation of it, when that
		 * column ran on the same sample (down to the anchor) */
		const char *emu = uw->emulated_by ? uw->emulated_by(sr->profile) : NULL;
		for (int i = 0; emu && i < sr->nuw; i++) {
			const struct uw_result *e = &sr->uw[i].r;
			if (strcmp(sr->uw[i].name, emu))
				continue;
			int len = e->n;
			for (int f = 0; f < e->n; f++)
				if (s->ntruth && e->addr[f] == s->truth[s->ntruth - 1]) {
					len = f + 1;
					break;
				}
			ur->has_faithful = true;
			ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, e->addr, e->n, len);
		}
		return;
	}
	case UW_REF_ORACLE:
		/* the oracle under the same view and dump size */
		ur->has_faithful = true;
		ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, rp->oracle_dump.addr,
						  rp->oracle_dump.n, olen);
		return;
	}
}

/* The [expect] key an unwinder is judged by: its own, else its policy's
 * expect_as (kernel-fp is held to fp's expectations). */
static const char *expect_key(const struct replay *rp, const struct uw_unwinder *uw, const char *name,
			      const char *prof, int size)
{
	if (uw && uw->expect_as && !hx_case_has_expect(rp->c, name, prof, size))
		return uw->expect_as;
	return name;
}

/* One unwinder on one sample at one dump size: unwind, judge, compare. */
static void judge_one(struct replay *rp, int u, const struct hx_sample *s, const struct uw_sample *full,
		      const struct uw_sample *dump, int olen, const char *prof, struct hx_sample_res *sr,
		      bool *pass)
{
	const struct uw_unwinder *uw = rp->uws[u];
	struct hx_uw_res *ur = &sr->uw[sr->nuw++];
	ur->name = rp->o->unwinders[u];
	ur->uw = uw_unwinder_by_name(ur->name);
	if (!uw) {
		ur->r.n = 0;
		ur->r.stop = UW_STOP_ERROR;
		snprintf(ur->r.why, sizeof(ur->r.why), "unwinder not available");
	} else if (uw->ref == UW_REF_TRUTH) {
		ur->r = rp->oracle_full;     /* the truth reference (oracle) already ran, for `emitted` */
	} else {
		double t0 = rt_now(rp->o);
		uw->unwind(rp->state[u], &rp->view, uw->sees == UW_SEES_DUMP ? dump : full, &ur->r);
		if (rp->o->times)
			rp->o->times->unwind[u] += rt_now(rp->o) - t0;
	}
	hx_judge(s->truth, sr->nt, ur->r.addr, ur->r.n, &ur->j);
	for (int f = 0; f < ur->r.n; f++)
		ur->fallback |= (ur->r.flags[f] & UW_F_FALLBACK) != 0;
	bool is_ref = uw && uw->ref == UW_REF_TRUTH;
	judge_faithful(rp, uw, s, full, olen, sr, ur);
	if (rp->have_pv && !is_ref)
		symbolize(&rp->pv, &rp->view, ur, sr->nt);
	const char *ex = hx_case_expect(rp->c, expect_key(rp, uw, ur->name, prof, sr->stack_size), prof,
					sr->stack_size, sr->where, sr->offset);
	snprintf(ur->expected, sizeof(ur->expected), "%s", ex ? ex : "");
	ur->match = ex ? expect_matches(ex, ur, is_ref) : false;
	if (!ur->match)
		*pass = false;
}

/* One sample under one profile, at every dump size, through every unwinder.
 * A kernel sample's live memory is the breakpoint sample's whole stack at
 * the same point (live; checked equal): what the kernel's walk read. */
static void replay_sample(struct replay *rp, const struct hx_sample *s, const struct hx_sample *live,
			  const char *prof, struct hx_case_res *res)
{
	const struct hx_sample *w = live ? live : s;
	struct uw_sample full = { .arch = rp->arch, .abi = s->abi, .mask = s->mask,
				  .stack_addr = w->stack_addr, .stack = w->stack,
				  .stack_size = w->stack_size };
	memcpy(full.regs, s->regs, sizeof(full.regs));
	if (s->kernel) {
		full.callchain = s->chain;
		full.ncallchain = s->nchain;
	}
	/* the oracle over the whole stack decides `emitted` */
	double t0 = rt_now(rp->o);
	uw_oracle.unwind(NULL, &rp->view, &full, &rp->oracle_full);
	if (rp->o->times)
		rp->o->times->oracle += rt_now(rp->o) - t0;
	struct hx_judgement oj;
	hx_judge(s->truth, (int)s->ntruth, rp->oracle_full.addr, rp->oracle_full.n, &oj);
	if (oj.v != HX_OK)
		res->consistent = false;
	for (int z = 0; z < rp->nsizes; z++) {
		struct hx_sample_res *sr = &res->samples[res->nsamples++];
		where_of(rp->g, s, sr->where, sizeof(sr->where), sr->insn, sizeof(sr->insn), &sr->offset);
		sr->stack_size = rp->sizes[z];
		snprintf(sr->profile, sizeof(sr->profile), "%s", prof);
		sr->nt = (int)s->ntruth;
		memcpy(sr->truth, s->truth, sizeof(uint64_t) * s->ntruth);
		sr->pc = uw_reg(&full, rp->arch->perf_ip);
		sr->src = (uint32_t)(s - rp->g->samples);
		hx_cfa_row_text(&rp->view, sr->pc, sr->cfa_row, sizeof(sr->cfa_row));
		for (int t = 0; rp->have_pv && t < sr->nt; t++) {
			/* as symbolize(): return addresses looked up at ip - 1 */
			const char *n = pv_symbolize(&rp->pv, t ? sr->truth[t] - 1 : sr->truth[t]);
			snprintf(sr->tsym[t], HX_SYM_LEN, "%s", n ? n : "");
		}
		/* perf's dump: only the first stack_size bytes */
		struct uw_sample dump = full;
		if (live) {
			dump.stack = s->stack;
			dump.stack_size = s->stack_size;
		}
		if (dump.stack_size > (uint64_t)rp->sizes[z])
			dump.stack_size = (uint64_t)rp->sizes[z];
		t0 = rt_now(rp->o);
		uw_oracle.unwind(NULL, &rp->view, &dump, &rp->oracle_dump);
		if (rp->o->times)
			rp->o->times->oracle += rt_now(rp->o) - t0;
		int olen = oracle_len(&rp->oracle_dump, s);
		for (int u = 0; u < rp->o->nuw; u++)
			judge_one(rp, u, s, &full, &dump, olen, prof, sr, &res->pass);
	}
}

/* the case's first problem wins */
__attribute__((format(printf, 2, 3)))
static void problem(struct hx_case_res *res, const char *fmt, ...)
{
	if (res->problem[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->problem, sizeof(res->problem), fmt, ap);
	va_end(ap);
	res->pass = false;
}

/* A kernel sample and the breakpoint sample written before it at the same
 * point: same registers (the ones the kernel reports the same way) and the
 * same stack bytes, else the case fails (the spin was not the breakpoint's state). */
static bool kernel_matches(const struct hx_sample *b, const struct hx_sample *k,
			   const struct uw_arch *arch, struct hx_case_res *res)
{
	if (!b || b->func != k->func || b->offset != k->offset || b->stack_addr != k->stack_addr) {
		problem(res, "kernel sample at func %d+0x%x (sp 0x%llx) has no breakpoint sample at that point and sp before it",
			(int)k->func, k->offset, (unsigned long long)k->stack_addr);
		return false;
	}
	for (int r = 0; r < 64; r++)
		if ((k->mask >> r & 1) && (b->mask >> r & 1) && k->regs[r] != b->regs[r]) {
			problem(res, "kernel sample at func %d+0x%x: perf register %d is 0x%llx, the breakpoint's 0x%llx",
				(int)k->func, k->offset, r, (unsigned long long)k->regs[r],
				(unsigned long long)b->regs[r]);
			return false;
		}
	uint64_t n = k->stack_size < b->stack_size ? k->stack_size : b->stack_size;
	for (uint64_t i = 0; i < n; i++)
		if (k->stack[i] != b->stack[i]) {
			problem(res, "kernel sample at func %d+0x%x: its stack dump differs from the breakpoint's at SP+0x%llx",
				(int)k->func, k->offset, (unsigned long long)i);
			return false;
		}
	return true;
}

/* Every sample under one perf profile: perf's view and the unwinders'
 * state are built once for all samples. */
static void replay_profile(struct replay *rp, int pi, struct hx_case_res *res)
{
	const struct hx_opts *o = rp->o;
	const char *prof = pv_profile_name((enum pv_profile)rp->profs[pi]);
	/* every selected unwinder must have an expectation, so none passes silently */
	for (int u = 0; u < o->nuw; u++)
		for (int z = 0; z < rp->nsizes; z++)
			if (!hx_case_has_expect(rp->c, expect_key(rp, uw_unwinder_by_name(o->unwinders[u]),
								   o->unwinders[u], prof, rp->sizes[z]),
						prof, rp->sizes[z]))
				problem(res, "%s has no expectation for '%s' (profile %s, stack size %d) in [expect]",
					res->file, o->unwinders[u], prof, rp->sizes[z]);
	char pverr[512];
	rp->view.pv = NULL;
	rp->have_pv = false;
	/* perf writes jitted-<pid>-<n>.so next to the dump, and its libdw path
	 * (>= 6.8) uses them only under /tmp/jitted-: the dump is taken to be
	 * where CPython writes it, /tmp, unless --perf-dump-dir says otherwise */
	double t0 = rt_now(o);
	int pvrc = pv_build_at(&rp->pv, (enum pv_profile)rp->profs[pi], rp->maps, rp->nmaps,
			       rp->have_jd ? &rp->jd : NULL, o->jitted_dir, o->perf_dump_dir ? o->perf_dump_dir : "/tmp",
			       pverr, sizeof(pverr));
	if (o->times)
		o->times->pv += rt_now(o) - t0;
	if (pvrc == 0) {
		rp->have_pv = true;
		rp->view.pv = &rp->pv;
		res->has_symbols = true;
	} else {
		problem(res, "perf view: %s", pverr);
	}
	rp->view.capture = rp->g;       /* for the perf column */
	rp->view.dump_sizes = rp->sizes;
	rp->view.ndump_sizes = rp->nsizes;
	for (int u = 0; u < o->nuw; u++) {
		char err[512];
		rp->state[u] = NULL;
		rp->uws[u] = uw_unwinder_by_name(o->unwinders[u]);
		t0 = rt_now(o);
		int orc = rp->uws[u] && rp->uws[u]->open ? rp->uws[u]->open(&rp->view, &rp->state[u], err, sizeof(err)) : 0;
		if (o->times)
			o->times->open[u] += rt_now(o) - t0;
		if (orc) {
			snprintf(res->problem, sizeof(res->problem), "%s: %s", o->unwinders[u], err);
			res->pass = false;
			rp->uws[u] = NULL;
		}
	}
	/* a run with kernel samples replays those (the breakpoint's at the same
	 * points were checked equal at each spin's release) */
	const struct hx_sample *live = NULL;
	for (size_t i = 0; i < rp->g->nsamples; i++) {
		const struct hx_sample *s = &rp->g->samples[i];
		if (!s->kernel)
			live = s;
		else if (!kernel_matches(live, s, rp->arch, res))
			continue;
		if (!rp->g->nkernel || s->kernel)
			replay_sample(rp, s, s->kernel ? live : NULL, prof, res);
	}
	for (int u = 0; u < o->nuw; u++) {
		t0 = rt_now(o);
		if (rp->uws[u] && rp->uws[u]->close)
			rp->uws[u]->close(rp->state[u]);
		if (o->times)
			o->times->open[u] += rt_now(o) - t0;
	}
	t0 = rt_now(o);
	if (rp->have_pv)
		pv_fini(&rp->pv);
	if (o->times)
		o->times->pv += rt_now(o) - t0;
	rp->have_pv = false;
	rp->view.pv = NULL;
}

/* kernel-fp selected and perf_event_open refused: a visible skip */
static bool kernel_refused(const struct hx_group *g, const struct hx_opts *o, struct hx_case_res *res)
{
	if (!g->kskip)
		return false;
	for (int u = 0; u < o->nuw; u++) {
		const struct uw_unwinder *uw = uw_unwinder_by_name(o->unwinders[u]);
		if (uw && uw->kernel) {
			res->skipped = true;
			snprintf(res->problem, sizeof(res->problem), "%s", g->kskip);
			return true;
		}
	}
	return false;
}

static int replay_group(const struct hx_group *g, uint32_t elf_mach, const struct hx_opts *o,
			struct hx_case_res *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	struct replay *rp = calloc(1, sizeof(*rp));
	if (!rp) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	rp->g = g;
	rp->o = o;
	double t0 = rt_now(o);
	int rc = replay_load(rp, elf_mach, res, err, errlen);
	if (o->times)
		o->times->load += rt_now(o) - t0;
	if (rc) {
		replay_free(rp);
		return rc;
	}
	snprintf(res->profile, sizeof(res->profile), "%s", pv_profile_name((enum pv_profile)rp->profs[0]));
	if (kernel_refused(g, o, res)) {
		replay_free(rp);
		return 0;
	}
	size_t total = (g->nkernel ? g->nkernel : g->nsamples) * (size_t)rp->nsizes * (size_t)rp->nprofs;
	res->samples = calloc(total ? total : 1, sizeof(*res->samples));
	if (!res->samples) {
		replay_free(rp);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int pi = 0; pi < rp->nprofs; pi++)
		replay_profile(rp, pi, res);
	if (g->nsamples == 0)
		problem(res, "no sample was taken");
	replay_free(rp);
	return 0;
}

int hx_replay_group(const struct hx_group *g, uint32_t elf_mach, const struct hx_opts *o,
		    struct hx_case_res *res, char *err, size_t errlen)
{
	double t0 = rt_now(o);
	/* the process view and perf's view check each file once between them */
	uw_files_pass_begin();
	int rc = replay_group(g, elf_mach, o, res, err, errlen);
	uw_files_pass_end();
	if (o->times)
		o->times->total += rt_now(o) - t0;
	return rc;
}
