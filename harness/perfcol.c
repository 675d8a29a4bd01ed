/* The `perf` column: real perf unwinds the case's own samples.  Per case and
 * dump size: the group is written as a perf.data (toperf.c), `perf inject -j`
 * turns the jitdump into jitted-<pid>-<n>.so files, `perf script` prints every
 * chain (addresses, never symbols) and the mmap events that place them; each
 * chain goes back to its sample point by sample order.  perf runs with a
 * private HOME and --buildid-dir in a temporary directory, removed after. */
#include "perfcol.h"
#include "perfrun.h"
#include "samples.h"
#include "toperf.h"
#include "unwinders/unwind.h"
#include "unwinders/view.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PC_MAX_SIZES 4
#define PC_ZERO UINT64_MAX      /* perf prints a zero return address as ip - 1 */

void hx_perfcol_set_cmd(const char *cmd)
{
	hx_perf_set_cmd(cmd);
}

static int probe(char *why, size_t len)
{
	return hx_perf_probe(NULL, why, len);
}

/* perf before 6 is what the 5.x-0x40 profile stands for; every other
 * profile (current, v6.1) for perf 6 and later */
static const char *emulated_by(const char *profile)
{
	const struct hx_perf_build *b;
	if (hx_perf_probe(&b, NULL, 0))
		return NULL;
	bool old = b->major < 6, p5 = !strncmp(profile, "5.", 2);
	return old == p5 ? b->engine : NULL;
}

struct pc_run {
	int size;
	uint64_t (*chain)[UW_MAX_FRAMES];
	int *n;
	size_t nsamples;
	char why[200];           /* the run failed: why (every sample errors) */
};

struct pc_state {
	const struct hx_group *g;
	char dir[64];
	struct pc_run runs[PC_MAX_SIZES];
	int nruns;
};

/* perf script's chains, in sample order (only this case's process is in the
 * file): every frame after the first is a return address minus 1 (perf's
 * callchain); a zero return address is printed as -1 */
static void take_chains(struct pc_run *r, const struct hx_ps *ps)
{
	if (ps->why[0])
		snprintf(r->why, sizeof(r->why), "%s", ps->why);
	if (ps->n > r->nsamples)
		snprintf(r->why, sizeof(r->why), "perf printed more samples than the %zu taken", r->nsamples);
	for (size_t k = 0; k < ps->n && k < r->nsamples; k++) {
		const struct hx_ps_sample *s = &ps->s[k];
		for (int f = 0; f < s->n; f++)
			r->chain[k][f] = f == 0 ? s->addr[f] : s->addr[f] == PC_ZERO ? 0 : s->addr[f] + 1;
		r->n[k] = s->n;
	}
}

/* One dump size: write, inject, script, parse. */
static void run_size(struct pc_state *st, const struct uw_arch *arch, struct pc_run *r)
{
	char data[96], jit[96], out[96], err[256];
	snprintf(data, sizeof(data), "%s/p.data", st->dir);
	snprintf(jit, sizeof(jit), "%s/p.jit.data", st->dir);
	snprintf(out, sizeof(out), "%s/script.txt", st->dir);
	struct hx_toperf_opts o = { .stack_size = (uint32_t)r->size };
	if (hx_toperf_write_group(st->g, arch, data, &o, err, sizeof(err))) {
		snprintf(r->why, sizeof(r->why), "writing the perf.data: %s", err);
		return;
	}
	const char *inj[] = { "inject", "-j", "-i", data, "-o", jit, NULL };
	const char *scr[] = { "script", "-i", jit, "-F", "pid,time,ip,dso", "--ns", "--no-inline",
			      "--show-mmap-events", NULL };
	char inj_out[96];
	snprintf(inj_out, sizeof(inj_out), "%s/inject.txt", st->dir);
	if (hx_perf_run(st->dir, inj, NULL, inj_out, r->why, sizeof(r->why)) ||
	    hx_perf_run(st->dir, scr, NULL, out, r->why, sizeof(r->why)))
		return;
	size_t n;
	char *text = hx_slurp(out, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", out, strerror(errno));
		return;
	}
	struct hx_ps ps;
	if (hx_ps_parse(&ps, text))
		snprintf(r->why, sizeof(r->why), "out of memory reading perf script's output");
	else
		take_chains(r, &ps);
	hx_ps_free(&ps);
	free(text);
}

static void pc_close(void *state)
{
	struct pc_state *st = state;
	if (!st)
		return;
	for (int i = 0; i < st->nruns; i++) {
		free(st->runs[i].chain);
		free(st->runs[i].n);
	}
	hx_perf_workdir_remove(st->dir);
	free(st);
}

static int pc_open(const struct uw_view *v, void **state, char *err, size_t errlen)
{
	const struct hx_group *g = v->capture;
	char why[256];
	if (probe(why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if (!g) {
		snprintf(err, errlen, "no capture to replay (the perf column needs the case's samples)");
		return -1;
	}
	struct pc_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->g = g;
	if (hx_perf_workdir(st->dir, sizeof(st->dir), "perf", err, errlen)) {
		pc_close(st);
		return -1;
	}
	for (int i = 0; i < v->ndump_sizes && i < PC_MAX_SIZES; i++) {
		struct pc_run *r = &st->runs[st->nruns++];
		r->size = v->dump_sizes[i];
		r->nsamples = g->nsamples;
		r->chain = calloc(g->nsamples ? g->nsamples : 1, sizeof(*r->chain));
		r->n = calloc(g->nsamples ? g->nsamples : 1, sizeof(*r->n));
		if (!r->chain || !r->n) {
			snprintf(err, errlen, "out of memory");
			pc_close(st);
			return -1;
		}
		run_size(st, v->arch, r);
	}
	*state = st;
	return 0;
}

static int pc_unwind(void *state, const struct uw_view *v, const struct uw_sample *s, struct uw_result *r)
{
	struct pc_state *st = state;
	r->n = 0;
	r->stop = UW_STOP_ERROR;
	r->why[0] = r->fallback_why[0] = 0;
	if (!st) {
		snprintf(r->why, sizeof(r->why), "perf did not run for this case");
		return -1;
	}
	size_t k = 0;
	while (k < st->g->nsamples && st->g->samples[k].stack != s->stack)
		k++;
	/* the run whose dump holds this sample's stack copy: the smallest size >= it */
	const struct pc_run *run = NULL;
	for (int i = 0; i < st->nruns; i++)
		if ((uint64_t)st->runs[i].size >= s->stack_size &&
		    (!run || st->runs[i].size < run->size))
			run = &st->runs[i];
	if (k == st->g->nsamples || !run) {
		snprintf(r->why, sizeof(r->why), "not a sample of this case's perf.data");
		return -1;
	}
	if (run->n[k] == 0) {
		snprintf(r->why, sizeof(r->why), "%s", run->why[0] ? run->why : "perf printed no chain for it");
		return -1;
	}
	memcpy(r->addr, run->chain[k], sizeof(uint64_t) * (size_t)run->n[k]);
	memset(r->flags, 0, sizeof(r->flags));
	r->n = run->n[k];
	r->stop = UW_STOP_END;
	const struct hx_perf_build *b;
	snprintf(r->why, sizeof(r->why), "perf %s script printed %d frames",
		 hx_perf_probe(&b, NULL, 0) ? "?" : b->version, r->n);
	return 0;
}

const struct uw_unwinder uw_perf = {
	.name = "perf",
	.about = "real perf (--perf CMD): perf inject -j + perf script over the case's samples as a perf.data",
	.sees = UW_SEES_DUMP,
	.ref = UW_REF_EMULATION,
	.default_arches = uw_arches_perf_cases,   /* where the cases carry perf's expectations */
	.quiet_why = true,
	.open = pc_open,
	.unwind = pc_unwind,
	.close = pc_close,
	.probe = probe,
	.emulated_by = emulated_by,
};
