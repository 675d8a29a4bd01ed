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
#include "harness/case/cfarow.h"
#include "harness/case/say.h"
#include "harness/run/perfrun.h"

void hx_case_res_free(struct hx_case_res *r)
{
	free(r->samples);
	r->samples = NULL;
}

/* The sample point as printed ("tramp2+0x3"), its instruction, offset, and
 * function as the compiled [expect] numbers it (HX_FN_*). */
static int where_of(const struct hx_group *g, const struct hx_sample *s, char *where,
		    size_t wl, char *insn, size_t il, int *offset)
{
	insn[0] = 0;
	*offset = -1;
	/* in a case whose code has generations, the point says which: "tramp+0x4@g2" */
	char gen[16] = "";
	if (g->ngens)
		snprintf(gen, sizeof(gen), "@g%u", s->gen);
	if (s->func == HX_FUNC_CALLEE) {
		snprintf(where, wl, "callee%s", gen);
		snprintf(insn, il, "(C target)");
		return HX_FN_CALLEE;
	}
	for (uint32_t f = 0; f < g->nfuncs; f++) {
		const struct hx_func *fn = &g->funcs[f];
		if (fn->index != s->func || fn->gen != s->gen)
			continue;
		snprintf(where, wl, "%s+0x%x%s", fn->name, s->offset, gen);
		*offset = (int)s->offset;
		for (uint32_t r = 0; r < fn->nrows; r++)
			if (fn->rows[r].offset == s->offset)
				snprintf(insn, il, "%s", fn->rows[r].insn);
		return hx_case_fn_id(fn->name);
	}
	snprintf(where, wl, "func%u+0x%x", s->func, s->offset);
	*offset = (int)s->offset;
	return HX_FN_NONE;
}

/* "ok" needs the verdict and no fallback; "ok fallback" needs both */
bool hx_expect_matches(const char *expected, const struct hx_uw_res *u, bool is_oracle)
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
	struct jd_file jd_gen;              /* jd as perf knows it in generation `gen` */
	uint32_t gen;                       /* the generation the session's views are of (0: all) */
	struct uw_map *maps;
	size_t nmaps;
	struct hx_sess sess;                /* both views and the unwinders' states */
	bool have_sess;
	struct hx_sess_ref ref;             /* the oracle's chains on the sample */
	int profs[3], nprofs;
	int sizes[4], nsizes;
	bool skip_said[HX_MAX_UW];          /* a skipped column's line was printed */
	/* the perf modelled is older than 7 (or none runs here): its libdw path
	 * makes one Dwfl per sample, so no module an earlier sample reported
	 * (a garbage frame's, in a data segment) stays to refuse a later one's;
	 * perf >= 7 keeps one per address space, as one per view does */
	bool dwfl_per_sample;
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
	if (rp->have_sess)
		hx_sess_close(&rp->sess);
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
	const struct hx_perf_build *b;
	rp->dwfl_per_sample = hx_perf_probe(&b, NULL, 0) || !pv_memory_of(b->major)->dw_per_process;
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
		struct ju_err je;
		if (hx_case_parse_ex(rp->owned, res->file, g->case_text, g->case_len,
				     rp->o->observe ? HX_CASE_NO_EXPECT : 0, &je))
			return snprintf(err, errlen, "%s", je.msg), -EINVAL;
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
	struct ju_err je;
	if (g->dump_path) {
		if (jd_open(&rp->jd, g->dump_path, &je)) {
			snprintf(err, errlen, "%s: offset 0x%llx: %s", g->dump_path,
				 (unsigned long long)je.offset, je.msg);
			return -EINVAL;
		}
		rp->have_jd = true;
	}
	if (g->maps && uw_maps_parse(g->maps, g->maps_len, &rp->maps, &rp->nmaps, &je))
		return snprintf(err, errlen, "%s", je.msg), -EINVAL;
	replay_configs(rp);
	return 0;
}

/* A column's index in the run layer's table (the case's compiled [expect]). */
static int col_index(const struct uw_unwinder *u)
{
	size_t n;
	const struct uw_unwinder *const *all = hx_columns(&n);
	for (size_t i = 0; u && i < n; i++)
		if (all[i] == u)
			return (int)i;
	return -ENOENT;
}

/* The expectation selected unwinder u is judged by: its own, else its
 * policy's expect_as (kernel-fp is held to fp's expectations). */
static const struct hx_expect *expect_of(const struct replay *rp, int u, int prof, int size)
{
	const struct uw_unwinder *uw = rp->sess.cfg.uws[u];
	const struct hx_expect *x = hx_case_find(rp->c, col_index(uw), prof, size);
	if (!x && uw && uw->expect_as)
		x = hx_case_find(rp->c, col_index(hx_column_by_name(uw->expect_as)), prof, size);
	return x;
}

/* A real profiler's column (perf) without a key of its own: held to the
 * emulation it stands for.  Where that emulation ran on the sample, their
 * chains must agree (faithful, down to the anchor); else the verdict must be
 * the case's [expect] for the emulation under the profile this perf stands
 * for (its chain is the same under every profile).  false: neither exists. */
static bool expect_as_emulation(const struct replay *rp, int u, int prof, struct hx_sample_res *sr, int fn,
				int gen)
{
	struct hx_uw_res *ur = &sr->uw[u];
	const struct uw_unwinder *uw = rp->sess.cfg.uws[u];
	const char *emu = uw->emulated_by(pv_profile_name((enum pv_profile)prof));
	for (int e = 0; emu && ur->has_faithful && e < sr->nuw; e++)
		if (e != u && !strcmp(sr->uw[e].name, emu)) {
			snprintf(ur->expected, sizeof(ur->expected), "as %s (%s%s)", emu,
				 hx_verdict_name(sr->uw[e].j.v), sr->uw[e].fallback ? " fallback" : "");
			ur->match = ur->faithful;
			return true;
		}
	int stand = -1;
	for (int p = 0; p < HX_MAX_PROFILES && stand < 0; p++)
		if (strcmp(pv_profile_name((enum pv_profile)p), "?") &&
		    (emu = uw->emulated_by(pv_profile_name((enum pv_profile)p))))
			stand = p;
	const struct hx_expect *x = stand >= 0 ? hx_case_find(rp->c, col_index(hx_column_by_name(emu)), stand,
							      sr->stack_size) : NULL;
	if (!x)
		return false;
	const char *v = hx_case_verdict_gen(x, fn, sr->offset, gen);
	snprintf(ur->expected, sizeof(ur->expected), "%s", v);
	ur->match = hx_expect_matches(v, ur, false);
	return true;
}

/* Each unwinder's chain against the case's [expect] for this sample. */
static void expect_all(struct replay *rp, int prof, struct hx_sample_res *sr, int fn, int gen, bool *pass)
{
	for (int u = 0; u < sr->nuw; u++) {
		struct hx_uw_res *ur = &sr->uw[u];
		const struct uw_unwinder *uw = rp->sess.cfg.uws[u];
		const struct hx_expect *x = expect_of(rp, u, prof, sr->stack_size);
		ur->expected[0] = 0;
		ur->match = false;
		if (rp->sess.skipped[u]) {
			ur->match = true;     /* skipped visibly (replay_profile): not judged */
			continue;
		}
		if (x) {
			const char *ex = hx_case_verdict_gen(x, fn, sr->offset, gen);
			snprintf(ur->expected, sizeof(ur->expected), "%s", ex);
			ur->match = hx_expect_matches(ex, ur, rp->sess.uws[u] && uw->ref == UW_REF_TRUTH);
		} else if (uw && uw->emulated_by) {
			expect_as_emulation(rp, u, prof, sr, fn, gen);
		}
		if (!ur->match)
			*pass = false;
	}
}

/* perf's memory of the process (docs/perf-remembers.md): the one place the
 * run decides what perf carries from one sample of a case to the next.  A
 * case whose code has generations is one process to perf, its samples in
 * capture order: perf 6.x keeps one libunwind address space per process
 * (UNW_CACHE_GLOBAL, flushed only at exec), so the libunwind emulation keeps
 * one per replay of the case, by perf profile and dump size (each a perf
 * run of its own), flushed when that replay starts (proc_flush); perf >= 7
 * keeps one libdw Dwfl per process, which a later load over the same
 * addresses cannot join (dwfl_report_elf refuses the overlap), so under
 * such a perf the libdw emulation keeps one across the generations too.  A
 * case that loads its code once keeps nothing (its one load gives every pc
 * the rules a fresh address space would find). */
static uint64_t proc_key(int pi, int z)
{
	return (UINT64_C(1) << 62) | (uint64_t)(pi * 8 + z);
}

static void proc_flush(const struct replay *rp, int pi)
{
	for (int z = 0; rp->g->ngens && z < rp->nsizes; z++) {
		uw_libunwind_flush(proc_key(pi, z));
		uw_libunwind_flush(proc_key(pi, z) ^ UW_PROC_FP_RUN);
		uw_libdw_flush(proc_key(pi, z));
		uw_libdw_flush(proc_key(pi, z) ^ UW_PROC_FP_RUN);
	}
}

static void carry_memory(const struct replay *rp, int pi, int z, struct uw_sample *full, struct uw_sample *dump)
{
	if (!rp->g->ngens || getenv("JU_NO_PERF_MEMORY"))   /* tests only: the negative control */
		return;
	full->lu_proc = dump->lu_proc = proc_key(pi, z);
	if (!rp->dwfl_per_sample)
		full->dwfl_proc = dump->dwfl_proc = proc_key(pi, z);
}

/* One sample under one profile, at every dump size, through every unwinder.
 * A kernel sample's live memory is the breakpoint sample's whole stack at
 * the same point (live; checked equal): what the kernel's walk read. */
static void replay_sample(struct replay *rp, const struct hx_sample *s, const struct hx_sample *live,
			  int pi, struct hx_case_res *res)
{
	const char *prof = pv_profile_name((enum pv_profile)rp->profs[pi]);
	const struct hx_sample *w = live ? live : s;
	struct uw_sample full = { .arch = rp->arch, .abi = s->abi, .mask = s->mask,
				  .stack_addr = w->stack_addr, .stack = w->stack,
				  .stack_size = w->stack_size };
	memcpy(full.regs, s->regs, sizeof(full.regs));
	if (s->kernel) {
		full.callchain = s->chain;
		full.ncallchain = s->nchain;
	}
	struct hx_sess *ss = &rp->sess;
	struct hx_sess_sample in = { .full = &full, .truth = { s->truth, s->fpflag, (int)s->ntruth },
				     .judge = true, .only = -1 };
	/* the oracle over the whole stack decides `emitted` */
	hx_sess_emitted(ss, &full, &in.truth, &rp->ref);
	if (rp->ref.emitted.v != HX_OK)
		res->consistent = false;
	for (int z = 0; z < rp->nsizes; z++) {
		struct hx_sample_res *sr = &res->samples[res->nsamples++];
		int fn = where_of(rp->g, s, sr->where, sizeof(sr->where), sr->insn, sizeof(sr->insn), &sr->offset);
		sr->stack_size = rp->sizes[z];
		snprintf(sr->profile, sizeof(sr->profile), "%s", prof);
		sr->nt = (int)s->ntruth;
		memcpy(sr->truth, s->truth, sizeof(uint64_t) * s->ntruth);
		sr->pc = uw_reg(&full, rp->arch->perf_ip);
		sr->src = (uint32_t)(s - rp->g->samples);
		hx_cfa_row_text(&ss->view, sr->pc, sr->cfa_row, sizeof(sr->cfa_row));
		hx_true_row_text(rp->c, sr->where, sr->offset, rp->arch, sr->true_row, sizeof(sr->true_row));
		for (int t = 0; ss->have_pv && t < sr->nt; t++) {
			/* return addresses looked up at ip - 1, as perf does */
			const char *n = pv_symbolize(&ss->pv, t ? sr->truth[t] - 1 : sr->truth[t]);
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
		dump.dwfl_fresh = rp->dwfl_per_sample;
		carry_memory(rp, pi, z, &full, &dump);
		in.dump = &dump;
		hx_sess_sample(ss, &in, &rp->ref, sr->uw);
		sr->nuw = rp->o->nuw;
		expect_all(rp, rp->profs[pi], sr, fn, (int)s->gen, &res->pass);
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

/* The session's settings: the group's views, the selected unwinders, the
 * capture and dump sizes for the perf column. */
static void sess_cfg(const struct replay *rp, int pi, struct hx_sess_cfg *cfg)
{
	const struct hx_opts *o = rp->o;
	memset(cfg, 0, sizeof(*cfg));
	cfg->arch = rp->arch;
	cfg->maps = rp->maps;
	cfg->nmaps = rp->nmaps;
	cfg->jd = rp->have_jd ? (rp->gen ? &rp->jd_gen : &rp->jd) : NULL;
	cfg->profile = (enum pv_profile)rp->profs[pi];
	cfg->jitted_dir = o->jitted_dir;
	cfg->dump_dir = o->perf_dump_dir ? o->perf_dump_dir : "/tmp";
	for (int u = 0; u < o->nuw; u++) {
		cfg->names[u] = o->unwinders[u];
		cfg->uws[u] = hx_column_by_name(o->unwinders[u]);
	}
	cfg->nuw = o->nuw;
	cfg->capture = rp->g;
	cfg->dump_sizes = rp->sizes;
	cfg->ndump_sizes = rp->nsizes;
	cfg->times = o->times;
}

static int open_session(struct replay *rp, int pi, struct hx_case_res *res, char *err, size_t errlen)
{
	struct hx_sess_cfg cfg;
	struct ju_err e;
	sess_cfg(rp, pi, &cfg);
	int rc = hx_sess_open(&rp->sess, &cfg, &e);
	if (rc) {
		snprintf(err, errlen, "%s: %s", res->file, e.msg);
		return rc;
	}
	rp->have_sess = true;
	return 0;
}

/* The session as perf has the process in generation gen of the case's
 * code: the jitdump's loads and moves up to that generation's GEN record (a
 * late load's come after its samples, a patch has none), as perf inject -j
 * adds them in time order. */
static int gen_session(struct replay *rp, int pi, uint32_t gen, struct hx_case_res *res, char *err, size_t errlen)
{
	if (rp->have_sess && rp->gen == gen && gen)
		return 0;
	if (rp->have_sess)
		hx_sess_close(&rp->sess);
	rp->have_sess = false;
	rp->gen = gen;
	if (rp->have_jd) {
		rp->jd_gen = rp->jd;
		size_t k = 0;
		while (k < rp->jd.nloads && gen <= HX_GROUP_MAX_GENS && rp->jd.loads[k].timestamp <= rp->g->gen_time[gen])
			k++;
		rp->jd_gen.nloads = k;
		k = 0;
		while (k < rp->jd.nmoves && gen <= HX_GROUP_MAX_GENS && rp->jd.moves[k].timestamp <= rp->g->gen_time[gen])
			k++;
		rp->jd_gen.nmoves = k;
	}
	return open_session(rp, pi, res, err, errlen);
}

/* Every sample under one perf profile: perf's view and the unwinders'
 * state are built once for all samples (once per generation of the code).  0, or a negative errno (err set). */
static int replay_profile(struct replay *rp, int pi, struct hx_case_res *res, char *err, size_t errlen)
{
	const struct hx_opts *o = rp->o;
	const char *prof = pv_profile_name((enum pv_profile)rp->profs[pi]);
	int rc;
	proc_flush(rp, pi);
	if (rp->g->ngens) {
		rp->gen = 0;            /* a new profile: its views again */
		if ((rc = gen_session(rp, pi, 1, res, err, errlen)))
			return rc;
	} else if (rp->have_sess) {
		hx_sess_reprofile(&rp->sess, (enum pv_profile)rp->profs[pi]);
	} else if ((rc = open_session(rp, pi, res, err, errlen))) {
		return rc;
	}
	/* every selected unwinder must have an expectation, so none passes
	 * silently; a real profiler's column without one is held to the
	 * emulation it stands for */
	for (int u = 0; u < o->nuw; u++)
		for (int z = 0; z < rp->nsizes; z++)
			if (!expect_of(rp, u, rp->profs[pi], rp->sizes[z]) && !rp->sess.skipped[u] &&
			    !(rp->sess.cfg.uws[u] && rp->sess.cfg.uws[u]->emulated_by))
				problem(res, "%s has no expectation for '%s' (profile %s, stack size %d) in [expect]",
					res->file, o->unwinders[u], prof, rp->sizes[z]);
	if (rp->sess.have_pv)
		res->has_symbols = true;
	else
		problem(res, "perf view: %s", rp->sess.pv_err);
	for (int u = 0; u < o->nuw; u++)
		if (rp->sess.skipped[u]) {
			/* a visible skip of the column for this case; its samples are not judged */
			if (!rp->skip_said[u])
				ju_say(JU_SAY_SKIP, "jitunwind", "skip: the %s column for %s (%s): %s", o->unwinders[u],
					rp->c->name, res->file, rp->sess.open_err[u]);
			rp->skip_said[u] = true;
		} else if (rp->sess.open_err[u][0]) {
			snprintf(res->problem, sizeof(res->problem), "%s: %s", o->unwinders[u], rp->sess.open_err[u]);
			res->pass = false;
		}
	/* a run with kernel samples replays those (the breakpoint's at the same
	 * points were checked equal at each spin's release) */
	const struct hx_sample *live = NULL;
	for (size_t i = 0; i < rp->g->nsamples; i++) {
		const struct hx_sample *s = &rp->g->samples[i];
		if (rp->g->ngens && s->gen != rp->gen && (rc = gen_session(rp, pi, s->gen, res, err, errlen)))
			return rc;
		if (!s->kernel)
			live = s;
		else if (!kernel_matches(live, s, rp->arch, res))
			continue;
		if (!rp->g->nkernel || s->kernel)
			replay_sample(rp, s, s->kernel ? live : NULL, pi, res);
	}
	return 0;
}

/* kernel-fp selected and perf_event_open refused: a visible skip */
static bool kernel_refused(const struct hx_group *g, const struct hx_opts *o, struct hx_case_res *res)
{
	if (!g->kskip)
		return false;
	for (int u = 0; u < o->nuw; u++) {
		const struct uw_unwinder *uw = hx_column_by_name(o->unwinders[u]);
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
	for (int pi = 0; pi < rp->nprofs && rc == 0; pi++)
		rc = replay_profile(rp, pi, res, err, errlen);
	if (g->nsamples == 0)
		problem(res, "no sample was taken");
	replay_free(rp);
	return rc;
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
