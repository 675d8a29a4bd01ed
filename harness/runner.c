/* Runner: fork per case, read the samples back, replay, judge. */
#include "runner.h"
#include "unwinders/view.h"
#include "unwinders/lrstep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "capture.h"

void hx_case_res_free(struct hx_case_res *r)
{
	free(r->samples);
	r->samples = NULL;
}

int hx_capture_to_file(const struct hx_case *c, const char *case_path, const char *dumpdir,
		       const char *out_path, char *err, size_t errlen)
{
	int fd = open(out_path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", out_path, strerror(errno));
		return -1;
	}
	const struct tr_arch *host = tr_arch_host();
	if (hx_samples_write_header(fd, host ? host->elf_mach : 0)) {
		close(fd);
		snprintf(err, errlen, "%s: write failed", out_path);
		return -1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fd);
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int rc = hx_capture_case(c, case_path, dumpdir, fd);
		close(fd);
		_exit(rc ? 1 : 0);
	}
	close(fd);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFSIGNALED(st)) {
		/* the crash handler exits normally; a signal here means the child was
		 * killed (the alarm for a trampoline that never returns, or a crash
		 * the handler could not catch) */
		int fd2 = open(out_path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd2 >= 0) {
			char m[160];
			snprintf(m, sizeof(m), "child killed by signal %d (%s)%s", WTERMSIG(st),
				 strsignal(WTERMSIG(st)),
				 WTERMSIG(st) == SIGALRM ? ": the case did not finish in 10 s" : "");
			hx_rec_write(fd2, HX_REC_ERROR, m, strlen(m) + 1, NULL, 0);
			close(fd2);
		}
	}
	return 0;
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

static bool is_dwarf(const char *name)
{
	return !strcmp(name, "libunwind") || !strcmp(name, "libdw");
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

int hx_replay_group(const struct hx_group *g, uint32_t elf_mach, const struct hx_opts *o,
		    struct hx_case_res *res, char *err, size_t errlen)
{
	memset(res, 0, sizeof(*res));
	struct hx_case c;
	snprintf(res->file, sizeof(res->file), "%s", g->case_path ? g->case_path : "?");
	if (hx_case_parse(&c, res->file, g->case_text, g->case_len, err, errlen)) {
		hx_case_free(&c);
		return 2;
	}
	snprintf(res->name, sizeof(res->name), "%s", c.name);
	snprintf(res->about, sizeof(res->about), "%s", c.about);
	res->pass = true;
	res->consistent = true;
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

	const struct uw_arch *arch = uw_arch_by_mach((uint16_t)elf_mach);
	if (!arch) {
		snprintf(err, errlen, "%s: unsupported ELF machine %u", res->file, elf_mach);
		hx_case_free(&c);
		return 2;
	}
	struct jd_file jd;
	bool have_jd = false;
	struct jd_err je;
	if (g->dump_path) {
		if (jd_open(&jd, g->dump_path, &je)) {
			snprintf(err, errlen, "%s: offset 0x%llx: %s", g->dump_path,
				 (unsigned long long)je.offset, je.msg);
			hx_case_free(&c);
			return 2;
		}
		have_jd = true;
	}
	struct uw_map *maps = NULL;
	size_t nmaps = 0;
	if (g->maps && uw_maps_parse(g->maps, g->maps_len, &maps, &nmaps, err, errlen)) {
		if (have_jd)
			jd_close(&jd);
		hx_case_free(&c);
		return 2;
	}
	struct uw_view view;
	uw_view_init(&view, arch, maps, nmaps, have_jd ? &jd : NULL, err, errlen);

	int profs[3], nprofs = 0;
	if (o->profile_set)
		profs[nprofs++] = (int)o->profile;
	else
		for (int i = 0; i < c.nprofiles; i++)
			profs[nprofs++] = c.profiles[i];
	if (!nprofs)
		profs[nprofs++] = PV_CURRENT;
	int sizes[4], nsizes = 0;
	if (o->stack_size)
		sizes[nsizes++] = o->stack_size;
	else
		for (int i = 0; i < c.nstack_sizes; i++)
			sizes[nsizes++] = c.stack_sizes[i];
	if (!nsizes)
		sizes[nsizes++] = 8192;
	snprintf(res->profile, sizeof(res->profile), "%s", pv_profile_name((enum pv_profile)profs[0]));

	size_t total = g->nsamples * (size_t)nsizes * (size_t)nprofs;
	res->samples = calloc(total ? total : 1, sizeof(*res->samples));
	static struct uw_result oracle_full, oracle_dump;
	for (int pi = 0; pi < nprofs && res->samples; pi++) {
		const char *prof = pv_profile_name((enum pv_profile)profs[pi]);
		/* every selected unwinder must have an expectation, so none passes silently */
		for (int u = 0; u < o->nuw; u++)
			for (int z = 0; z < nsizes; z++)
				if (!hx_case_has_expect(&c, o->unwinders[u], prof, sizes[z]) && !res->problem[0]) {
					snprintf(res->problem, sizeof(res->problem),
						 "%s has no expectation for '%s' (profile %s, stack size %d) in [expect]",
						 res->file, o->unwinders[u], prof, sizes[z]);
					res->pass = false;
				}
		/* perf's view for this generation, built once for all samples */
		static struct pv_view pv;
		bool have_pv = false;
		char pverr[512];
		view.pv = NULL;
		/* perf writes jitted-<pid>-<n>.so next to the dump, and its libdw path
		 * (>= 6.8) uses them only under /tmp/jitted-: the dump is taken to be
		 * where CPython writes it, /tmp, unless --perf-dump-dir says otherwise */
		if (pv_build_at(&pv, (enum pv_profile)profs[pi], maps, nmaps, have_jd ? &jd : NULL, NULL,
				o->perf_dump_dir ? o->perf_dump_dir : "/tmp", pverr, sizeof(pverr)) == 0) {
			have_pv = true;
			view.pv = &pv;
			res->has_symbols = true;
		} else if (!res->problem[0]) {
			snprintf(res->problem, sizeof(res->problem), "perf view: %s", pverr);
			res->pass = false;
		}
		void *state[HX_MAX_UW] = { 0 };
		const struct uw_unwinder *uws[HX_MAX_UW];
		for (int u = 0; u < o->nuw; u++) {
			uws[u] = uw_unwinder_by_name(o->unwinders[u]);
			if (uws[u] && uws[u]->open && uws[u]->open(&view, &state[u], err, errlen)) {
				snprintf(res->problem, sizeof(res->problem), "%s: %s", o->unwinders[u], err);
				res->pass = false;
				uws[u] = NULL;
			}
		}
		for (size_t i = 0; i < g->nsamples; i++) {
			const struct hx_sample *s = &g->samples[i];
			struct uw_sample full = { .arch = arch, .abi = s->abi, .mask = s->mask,
						  .stack_addr = s->stack_addr, .stack = s->stack,
						  .stack_size = s->stack_size };
			memcpy(full.regs, s->regs, sizeof(full.regs));
			/* the oracle over the whole stack decides `emitted` */
			uw_oracle.unwind(NULL, &view, &full, &oracle_full);
			struct hx_judgement oj;
			hx_judge(s->truth, (int)s->ntruth, oracle_full.addr, oracle_full.n, &oj);
			if (oj.v != HX_OK)
				res->consistent = false;
			for (int z = 0; z < nsizes; z++) {
				struct hx_sample_res *sr = &res->samples[res->nsamples++];
				where_of(g, s, sr->where, sizeof(sr->where), sr->insn, sizeof(sr->insn), &sr->offset);
				sr->stack_size = sizes[z];
				snprintf(sr->profile, sizeof(sr->profile), "%s", prof);
				sr->nt = (int)s->ntruth;
				memcpy(sr->truth, s->truth, sizeof(uint64_t) * s->ntruth);
				/* DWARF unwinders see only the first stack_size bytes (perf's dump) */
				struct uw_sample dump = full;
				if (dump.stack_size > (uint64_t)sizes[z])
					dump.stack_size = (uint64_t)sizes[z];
				uw_oracle.unwind(NULL, &view, &dump, &oracle_dump);
				int olen = oracle_len(&oracle_dump, s);
				for (int u = 0; u < o->nuw; u++) {
					struct hx_uw_res *ur = &sr->uw[sr->nuw++];
					ur->name = o->unwinders[u];
					bool dw = is_dwarf(ur->name);
					if (!uws[u]) {
						ur->r.n = 0;
						ur->r.stop = UW_STOP_ERROR;
						snprintf(ur->r.why, sizeof(ur->r.why), "unwinder not available");
					} else if (uws[u] == &uw_oracle) {
						ur->r = oracle_full;
					} else {
						uws[u]->unwind(state[u], &view, dw ? &dump : &full, &ur->r);
					}
					hx_judge(s->truth, sr->nt, ur->r.addr, ur->r.n, &ur->j);
					for (int f = 0; f < ur->r.n; f++)
						ur->fallback |= (ur->r.flags[f] & UW_F_FALLBACK) != 0;
					bool is_oracle = !strcmp(ur->name, "oracle");
					if (is_oracle) {
						ur->consistent = ur->j.v == HX_OK;
					} else if (!strcmp(ur->name, "fp") || !strcmp(ur->name, "kernel-fp")) {
						/* the FP convention: the truth frames whose owner
						 * has its frame record established */
						uint64_t pred[HX_MAX_TRUTH];
						int np = 0;
						for (int t = 0; t < sr->nt; t++)
							if (s->fpflag[t])
								pred[np++] = s->truth[t];
						ur->has_faithful = true;
						ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, pred, np, np);
					} else if (!strncmp(ur->name, "lr-step", 7)) {
						/* the convention it implements: the kernel's FP chain
						 * spliced with a registers-only step of the emitted CFI */
						static struct uw_result pred;
						uw_lrstep_unwind_with(&uw_oracle, NULL, &view, &full, &pred);
						ur->has_faithful = true;
						ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, pred.addr,
										  pred.n, pred.n);
					} else {
						/* DWARF: the oracle under the same view and dump size */
						ur->has_faithful = true;
						ur->faithful = hx_chain_prefix_eq(ur->r.addr, ur->r.n, oracle_dump.addr,
										  oracle_dump.n, olen);
					}
					if (have_pv && !is_oracle)
						symbolize(&pv, &view, ur, sr->nt);
					const char *ex = hx_case_expect(&c, ur->name, prof, sizes[z], sr->where, sr->offset);
					snprintf(ur->expected, sizeof(ur->expected), "%s", ex ? ex : "");
					ur->match = ex ? expect_matches(ex, ur, is_oracle) : false;
					if (!ur->match)
						res->pass = false;
				}
			}
		}
		for (int u = 0; u < o->nuw; u++)
			if (uws[u] && uws[u]->close)
				uws[u]->close(state[u]);
		if (have_pv)
			pv_fini(&pv);
		view.pv = NULL;
	}
	if (g->nsamples == 0 && !res->problem[0]) {
		snprintf(res->problem, sizeof(res->problem), "no sample was taken");
		res->pass = false;
	}
	uw_view_fini(&view);
	uw_maps_free(maps, nmaps);
	if (have_jd)
		jd_close(&jd);
	hx_case_free(&c);
	return 0;
}
