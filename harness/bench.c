/* `jitunwind bench [PATH...]`: capture cost per sample, replay rate per
 * unwinder and for the judge, and the wall time of a whole run.  Figures,
 * never pass/fail: speed targets are shown here, not asserted in tests. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "harness/case.h"
#include "harness/judge.h"
#include "harness/ksampler.h"
#include "harness/runner.h"
#include "harness/samples.h"
#include "trampolines/tramp.h"
#include "unwinders/view.h"
#include "unwinders/perfview.h"

int hx_bench_main(int argc, char **argv);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct bgroup {
	struct hx_samples s;
	struct jd_file jd;
	struct uw_map *maps;
	size_t nmaps;
	struct uw_view view;
	struct pv_view pv;
	struct uw_sample *us;
	size_t n;
};

/* timings summed over every group, per unwinder of the table */
struct btimes {
	const struct tr_arch *host;
	const struct uw_unwinder *const *uws;
	size_t nu;
	double *secs, *topen, tjudge;
	size_t *done, *frames, judged;
	struct uw_result *r;
};

/* One map set, as the runner replays it: its views built once (not timed),
 * then every default unwinder replays its samples, timed, then the judge.
 * 0, or -errno with err set. */
static int bench_group(struct bgroup *bg, struct btimes *t, char *err, size_t errlen)
{
	struct hx_group *gr = &bg->s.groups[0];
	struct jd_err je;
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)bg->s.elf_mach);
	if (!gr->dump_path || jd_open(&bg->jd, gr->dump_path, &je) ||
	    uw_maps_parse(gr->maps, gr->maps_len, &bg->maps, &bg->nmaps, err, errlen) ||
	    uw_view_init(&bg->view, a, bg->maps, bg->nmaps, &bg->jd, err, errlen)) {
		snprintf(err, errlen, "cannot build the view for %s", gr->case_path);
		return -EINVAL;
	}
	/* perf's view, as the runner builds it (dump taken to be in /tmp) */
	if (pv_build_at(&bg->pv, PV_CURRENT, bg->maps, bg->nmaps, &bg->jd, NULL, "/tmp",
			err, errlen)) {
		snprintf(err + strlen(err), errlen - strlen(err), " (perf view for %s)", gr->case_path);
		return -EINVAL;
	}
	bg->view.pv = &bg->pv;
	bg->n = gr->nsamples;
	bg->us = calloc(bg->n + 1, sizeof(*bg->us));
	if (!bg->us) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < bg->n; k++) {
		const struct hx_sample *x = &gr->samples[k];
		struct uw_sample *u = &bg->us[k];
		u->arch = a;
		u->abi = x->abi;
		u->mask = x->mask;
		memcpy(u->regs, x->regs, sizeof(u->regs));
		u->stack_addr = x->stack_addr;
		u->stack = x->stack;
		/* DWARF unwinders get perf's default dump */
		u->stack_size = x->stack_size > 8192 ? 8192 : x->stack_size;
	}
	size_t reps = bg->n ? 3000 / bg->n + 1 : 0;
	for (size_t u = 0; u < t->nu; u++) {
		const struct uw_unwinder *uw = t->uws[u];
		/* the unwinders a run on this host replays by default (not the
		 * perf column: it runs perf per case, not per sample) */
		if (!t->host || !uw_unwinder_default_on(uw, t->host->name) || uw->probe)
			continue;
		void *state = NULL;
		double ts = now();
		if (uw->open && uw->open(&bg->view, &state, err, errlen))
			state = NULL;
		t->topen[u] += now() - ts;
		ts = now();
		/* the kernel's FP walk and the oracle read the whole stack,
		 * DWARF unwinders perf's dump */
		bool whole = uw->sees == UW_SEES_WHOLE;
		for (size_t rep = 0; rep < reps; rep++)
			for (size_t k = 0; k < bg->n; k++) {
				struct uw_sample one = bg->us[k];
				if (whole)
					one.stack_size = gr->samples[k].stack_size;
				uw->unwind(state, &bg->view, &one, t->r);
				t->frames[u] += (size_t)t->r->n;
				t->done[u]++;
			}
		t->secs[u] += now() - ts;
		if (uw->close && state)
			uw->close(state);
	}
	/* the judge: each sample's FP chain against its truth */
	for (size_t k = 0; k < bg->n; k++) {
		const struct hx_sample *x = &gr->samples[k];
		uw_fp.unwind(NULL, &bg->view, &bg->us[k], t->r);
		struct hx_judgement j;
		double ts = now();
		for (size_t rep = 0; rep < reps; rep++)
			hx_judge(x->truth, (int)x->ntruth, t->r->addr, t->r->n, &j);
		t->tjudge += now() - ts;
		t->judged += reps;
	}
	pv_fini(&bg->pv);
	uw_view_fini(&bg->view);
	uw_maps_free(bg->maps, bg->nmaps);
	jd_close(&bg->jd);
	free(bg->us);
	hx_samples_free(&bg->s);
	return 0;
}

/* Spin-point sampling cost: every case captured again with the kernel
 * sampler (3 samples per point); the extra time per spin point. */
static void bench_kernel(char **files, int nf, const struct tr_arch *host, const char *dir,
			 double tcap, size_t points)
{
	char err[1024];
	struct hx_kcfg saved = hx_kcfg;
	hx_kstats = (struct hx_kstats){ 0 };
	hx_kcfg.nsamples = 3;
	char skip[512] = "";
	size_t nk = 0;
	double t0 = now();
	for (int i = 0; i < nf && !skip[0]; i++) {
		struct hx_case c;
		if (hx_case_load(&c, files[i], err, sizeof(err)))
			continue;
		char sp[4352];
		snprintf(sp, sizeof(sp), "%s/%s.ksamples", dir, c.name);
		struct hx_samples s;
		if (host && !strcmp(c.arch, host->name) && !hx_capture_one(&c, files[i], dir, sp, err, sizeof(err)) &&
		    !hx_samples_read(&s, sp, err, sizeof(err))) {
			if (s.ngroups && s.groups[0].kskip)
				snprintf(skip, sizeof(skip), "%s", s.groups[0].kskip);
			nk += s.ngroups ? s.groups[0].nkernel : 0;
			hx_samples_free(&s);
		}
		hx_case_free(&c);
	}
	double tk = now() - t0;
	hx_kcfg = saved;
	if (skip[0])
		printf("  spin points: skipped (%s)\n", skip);
	else
		printf("  spin points: %.2f ms per point sampling 3 kernel samples (%llu points, %zu kernel samples; "
		       "capture %.3f s vs %.3f s without)\n",
		       hx_kstats.points ? (double)hx_kstats.ns / 1e6 / (double)hx_kstats.points : 0.0,
		       (unsigned long long)hx_kstats.points, nk, tk, tcap);
}

int hx_bench_main(int argc, char **argv)
{
	const char *def[1];
	char defp[64];
	const struct tr_arch *host = tr_arch_host();
	snprintf(defp, sizeof(defp), "cases/%s", host ? host->name : "unknown");
	def[0] = defp;
	const char *const *paths = argc > 1 ? (const char *const *)argv + 1 : def;
	int npaths = argc > 1 ? argc - 1 : 1;
	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: jitunwind bench [PATH...]\n  capture cost per sample, replay rate per unwinder and for the judge\n");
		return 0;
	}
	char err[1024], **files;
	int nf;
	if (hx_case_glob(paths, npaths, &files, &nf, err, sizeof(err))) {
		fprintf(stderr, "jitunwind bench: %s\n", err);
		return 2;
	}
	char dir[] = "/tmp/jitunwind-bench-XXXXXX";
	if (!mkdtemp(dir))
		return 2;
	struct bgroup *g = calloc((size_t)nf, sizeof(*g));
	size_t total = 0, ng = 0;
	double t0 = now();
	for (int i = 0; i < nf; i++) {
		struct hx_case c;
		if (hx_case_load(&c, files[i], err, sizeof(err))) {
			fprintf(stderr, "jitunwind bench: %s\n", err);
			return 2;
		}
		if (!host || strcmp(c.arch, host->name)) {
			hx_case_free(&c);
			continue;
		}
		char sp[4352];
		snprintf(sp, sizeof(sp), "%s/%s.samples", dir, c.name);
		if (hx_capture_one(&c, files[i], dir, sp, err, sizeof(err)) ||
		    hx_samples_read(&g[ng].s, sp, err, sizeof(err))) {
			fprintf(stderr, "jitunwind bench: %s\n", err);
			return 2;
		}
		hx_case_free(&c);
		ng++;
	}
	double tcap = now() - t0;
	/* one map set at a time, as the runner replays: its views are built once
	 * (not timed), then every unwinder replays its samples, timed */
	struct btimes t = { .host = host };
	t.uws = uw_unwinders(&t.nu);
	t.secs = calloc(t.nu, sizeof(double));
	t.topen = calloc(t.nu, sizeof(double));
	t.done = calloc(t.nu, sizeof(size_t));
	t.frames = calloc(t.nu, sizeof(size_t));
	t.r = malloc(sizeof(*t.r));
	if (!t.secs || !t.topen || !t.done || !t.frames || !t.r)
		return 2;
	for (size_t i = 0; i < ng; i++) {
		if (bench_group(&g[i], &t, err, sizeof(err))) {
			fprintf(stderr, "jitunwind bench: %s\n", err);
			return 2;
		}
		total += g[i].n;
	}
	printf("jitunwind bench: %zu cases, %zu samples (%s)\n", ng, total, defp);
	printf("  capture: %.1f us per sample (%.3f s for all cases, fork and jitdump included)\n",
	       total ? tcap * 1e6 / (double)total : 0.0, tcap);
	for (size_t u = 0; u < t.nu; u++)
		if (t.done[u])
			printf("  replay %-10s %10.0f samples/s  %5.1f frames/sample  (state built in %.2f ms per map set)\n",
			       t.uws[u]->name, (double)t.done[u] / t.secs[u], (double)t.frames[u] / (double)t.done[u],
			       t.topen[u] * 1e3 / (double)(ng ? ng : 1));
	bench_kernel(files, nf, host, dir, tcap, total);
	printf("  judge             %10.0f samples/s\n", t.tjudge > 0 ? (double)t.judged / t.tjudge : 0.0);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("  peak RSS %ld KiB\n", ru.ru_maxrss);
	free(t.r);
	free(t.secs);
	free(t.topen);
	free(t.done);
	free(t.frames);
	free(g);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		return 2;
	for (int i = 0; i < nf; i++)
		free(files[i]);
	free(files);
	return 0;
}
