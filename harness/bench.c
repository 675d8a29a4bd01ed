/* `jitunwind bench [PATH...]`: capture cost per sample, replay rate per
 * unwinder and for the judge, and the wall time of a whole run.  Figures,
 * never pass/fail: speed targets are shown here, not asserted in tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "harness/case.h"
#include "harness/judge.h"
#include "harness/runner.h"
#include "harness/samples.h"
#include "trampolines/tramp.h"
#include "unwinders/view.h"

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
	struct uw_sample *us;
	size_t n;
};

int hx_bench_main(int argc, char **argv)
{
	const char *def[1];
	char defp[64];
	const struct tr_arch *host = tr_arch_host();
	snprintf(defp, sizeof(defp), "cases/%s", host ? host->name : "x86_64");
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
		if (hx_capture_to_file(&c, files[i], dir, sp, err, sizeof(err)) ||
		    hx_samples_read(&g[ng].s, sp, err, sizeof(err))) {
			fprintf(stderr, "jitunwind bench: %s\n", err);
			return 2;
		}
		hx_case_free(&c);
		ng++;
	}
	double tcap = now() - t0;
	for (size_t i = 0; i < ng; i++) {
		struct hx_group *gr = &g[i].s.groups[0];
		struct jd_err je;
		const struct uw_arch *a = uw_arch_by_mach((uint16_t)g[i].s.elf_mach);
		if (!gr->dump_path || jd_open(&g[i].jd, gr->dump_path, &je) ||
		    uw_maps_parse(gr->maps, gr->maps_len, &g[i].maps, &g[i].nmaps, err, sizeof(err)) ||
		    uw_view_init(&g[i].view, a, g[i].maps, g[i].nmaps, &g[i].jd, err, sizeof(err))) {
			fprintf(stderr, "jitunwind bench: cannot build the view for %s\n", gr->case_path);
			return 2;
		}
		g[i].n = gr->nsamples;
		g[i].us = calloc(g[i].n + 1, sizeof(*g[i].us));
		for (size_t k = 0; k < g[i].n; k++) {
			const struct hx_sample *x = &gr->samples[k];
			struct uw_sample *u = &g[i].us[k];
			u->arch = a;
			u->abi = x->abi;
			u->mask = x->mask;
			memcpy(u->regs, x->regs, sizeof(u->regs));
			u->stack_addr = x->stack_addr;
			u->stack = x->stack;
			u->stack_size = x->stack_size;
		}
		total += g[i].n;
	}
	printf("jitunwind bench: %zu cases, %zu samples (%s)\n", ng, total, defp);
	printf("  capture: %.1f us per sample (%.3f s for all cases, fork and jitdump included)\n",
	       total ? tcap * 1e6 / (double)total : 0.0, tcap);

	static const char *const names[] = { "fp", "oracle", "libunwind", "libdw" };
	static struct uw_result r;
	for (size_t u = 0; u < sizeof(names) / sizeof(names[0]); u++) {
		const struct uw_unwinder *uw = uw_unwinder_by_name(names[u]);
		if (!uw)
			continue;
		void *state[64] = { 0 };
		double ts = now();
		for (size_t i = 0; i < ng && i < 64; i++)
			if (uw->open && uw->open(&g[i].view, &state[i], err, sizeof(err)))
				state[i] = NULL;
		double topen = now() - ts;
		size_t done = 0, frames = 0;
		double t1 = now(), el;
		do {
			for (size_t i = 0; i < ng && i < 64; i++)
				for (size_t k = 0; k < g[i].n; k++) {
					uw->unwind(state[i], &g[i].view, &g[i].us[k], &r);
					frames += (size_t)r.n;
					done++;
				}
			el = now() - t1;
		} while (el < 0.5 && total);
		for (size_t i = 0; i < ng && i < 64; i++)
			if (uw->close && state[i])
				uw->close(state[i]);
		printf("  replay %-9s %10.0f samples/s  %5.1f frames/sample  (state built in %.2f ms)\n",
		       names[u], done / el, done ? (double)frames / (double)done : 0.0, topen * 1e3);
	}
	/* the judge: every sample's FP chain against its truth */
	size_t done = 0, cap = total ? total : 1, m = 0;
	struct uw_result *fr = calloc(cap, sizeof(*fr));
	for (size_t i = 0; i < ng && fr; i++)
		for (size_t k = 0; k < g[i].n; k++)
			uw_fp.unwind(NULL, &g[i].view, &g[i].us[k], &fr[m++]);
	double t1 = now(), el;
	struct hx_judgement j;
	do {
		m = 0;
		for (size_t i = 0; i < ng && fr; i++) {
			struct hx_group *gr = &g[i].s.groups[0];
			for (size_t k = 0; k < g[i].n; k++, m++) {
				const struct hx_sample *x = &gr->samples[k];
				hx_judge(x->truth, (int)x->ntruth, fr[m].addr, fr[m].n, &j);
				done++;
			}
		}
		el = now() - t1;
	} while (el < 0.2 && total);
	free(fr);
	printf("  judge             %10.0f samples/s\n", done / el);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("  peak RSS %ld KiB\n", ru.ru_maxrss);
	for (size_t i = 0; i < ng; i++) {
		uw_view_fini(&g[i].view);
		uw_maps_free(g[i].maps, g[i].nmaps);
		jd_close(&g[i].jd);
		free(g[i].us);
		hx_samples_free(&g[i].s);
	}
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
