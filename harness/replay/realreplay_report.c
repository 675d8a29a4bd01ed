/* `jitunwind replay FILE.data`: the report of the replayed keys (text,
 * JSON, stats; realreplay_int.h). */
#include "harness/replay/realreplay.h"
#include "harness/run/session.h"
#include "harness/replay/realreplay_int.h"
#include "harness/replay/realperf.h"
#include "harness/replay/replaylint.h"
#include "harness/case/jsonw.h"
#include "harness/case/say.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static int cmp_key(const void *a, const void *b)
{
	const struct rr_key *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->off > y->off) - (x->off < y->off);
}

/* The columns a report shows: the unwinders, kernel-fp when some sample had
 * it, perf when it ran. */
struct rr_cols { size_t idx[RR_NCOL], n; };

static uint64_t col_samples(const struct rr_key *k, size_t u)
{
	uint64_t n = 0;
	for (int o = 0; o < HX_OUT_N; o++)
		n += k->out[u][o];
	return n;
}

/* What a recording without user registers and stack (perf record -g) lets
 * the replay judge, and what not. */
static void note_no_stack(const struct rr *r)
{
	if (!r->nnoregs)
		return;
	printf("  note: %" PRIu64 " sample(s) carry no user registers or stack (perf record -g or --call-graph fp, "
	       "not --call-graph dwarf): the unwinder columns cannot replay them. What is judged: the chain the "
	       "kernel's frame-pointer walk recorded (the kernel-fp column): does it leave JIT code into a mapped "
	       "file, end in JIT code, or hold a frame perf cannot name. What is not: whether a caller is missing or "
	       "wrong (that needs the stack: record with --call-graph dwarf), nor what DWARF unwinding would give; "
	       "`jitunwind lint` judges perf -g per function from the code (JD084-JD086)\n", r->nnoregs);
}

static void report_text(const struct rr *r, const struct rr_cols *cc)
{
	printf("replay %s: %zu samples (%" PRIu64 " in JIT code, %" PRIu64 " in native code under JIT frames, %" PRIu64 " without registers or stack), "
	       "arch %s, %zu jitdump(s), %zu perf map(s), %" PRIu64 " view(s) built, %" PRIu64
	       " sample(s) replayed on a view built at their own time or one alike for them, the rest on the "
	       "recording's end's where nothing they reach changed after them; %" PRIu64 " against another moment's view\n", r->path, r->nsmp, r->njit, r->nunder, r->nnoregs,
	       r->arch->facts->name, r->ndumps, r->npmaps, r->nviews, r->nstale, r->ninexact);
	if (r->ninjected)
		printf("  injected by perf inject -j: %" PRIu64 " jitted maps (taken from the dump)\n", r->ninjected);
	if (!r->clock_ok)
		printf("  note: the recording's clock is not CLOCK_MONOTONIC (perf record -k 1): "
		       "every CODE_LOAD is taken to precede every sample\n");
	note_no_stack(r);
	char anon[1024];
	hx_rr_anon_why(r, anon, sizeof(anon));
	if (anon[0])
		printf("  JIT code unseen: %s\n", anon);
	if (r->vdso_bid[0] && r->vdso[0])
		printf("  vDSO %s: %s (perf's build-id cache)\n", r->vdso_bid, r->vdso);
	else if (r->vdso_own)
		printf("  vDSO: the recording names no build-id for it (perf >= 7 keeps build-ids in its MMAP2 events, "
		       "none for the vDSO); read from this process's own, as perf script reads its own\n");
	else if (r->vdso_bid[0])
		printf("  vDSO %s: %s: [vdso] frames have no DSO, and chains end there, as perf's do\n", r->vdso_bid,
		       r->symfs ? "not read under --symfs (perf reads none there)"
				: "not in the build-id cache ($PERF_BUILDID_DIR, else ~/.debug)");
	if (r->perf)
		hx_rp_report_text(r->perf, r);
	if (r->nearlier)
		printf("  %" PRIu64 " JIT sample(s) unwound with what an earlier load left at a pc (perf's "
		       "libunwind keeps its rules per process until an exec; perf 7's libdw its modules until a map is removed)\n", r->nearlier);
	printf("  columns (reached-file/ended-in-jit/fallback/name-lost):");
	for (size_t c = 0; c < cc->n; c++)
		printf(" %s", hx_rr_col_name(r, cc->idx[c]));
	printf("\n  %" PRIu64 " JIT sample(s) where the unwinders' chains differ\n", r->ndiverge);
	for (size_t i = 0; i < r->nkeys && (r->top <= 0 || (int)i < r->top); i++) {
		const struct rr_key *k = &r->keys[i];
		printf("%s+0x%" PRIx64 "  %" PRIu64 " sample(s)\n   ", k->name, k->off, k->samples);
		/* a column that replayed none of the key's samples (an fp
		 * recording has no stack for the unwinders) is left out */
		for (size_t c = 0; c < cc->n; c++) {
			size_t u = cc->idx[c];
			if (col_samples(k, u))
				printf(" %s %" PRIu64 "/%" PRIu64 "/%" PRIu64 "/%" PRIu64, hx_rr_col_name(r, u),
				       k->out[u][0], k->out[u][1], k->out[u][2], k->out[u][3]);
		}
		printf("\n    cfi: %s\n", k->cfa);
		for (size_t u = 0; u < r->nu; u++)
			if (col_samples(k, u))
				printf("    %s stops (first sample): %s\n", hx_rr_col_name(r, u), k->why[u]);
		if (k->div >= 0)
			printf("    first divergence: %s\n", k->div_desc);
		if (k->earlier)
			printf("    %" PRIu64 " with an earlier load's rules, first: %s\n", k->earlier, k->earlier_why);
	}
	if (r->lint)
		hx_rl_report_text(r->lint, r);
}

static void json_key(FILE *f, const struct rr *r, const struct rr_cols *cc, const struct rr_key *k)
{
	hx_jsonw_str(f, k->name, HX_JSONW_LATIN1);
	fprintf(f, ",\"offset\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"perf_map\":%s,\"outcomes\":{", k->off,
		k->samples, k->pmap ? "true" : "false");
	for (size_t c = 0; c < cc->n; c++) {
		size_t u = cc->idx[c];
		fprintf(f, "%s\"%s\":{", c ? "," : "", hx_rr_col_name(r, u));
		for (int o = 0; o < HX_OUT_N; o++)
			fprintf(f, "%s\"%s\":%" PRIu64, o ? "," : "", hx_outcome_name((enum hx_outcome)o), k->out[u][o]);
		fprintf(f, "}");
	}
	fprintf(f, "},\"first_divergent_frame\":%d,\"divergence\":", k->div);
	hx_jsonw_str(f, k->div >= 0 ? k->div_desc : NULL, 0);
	fprintf(f, ",\"cfi_row\":");
	hx_jsonw_str(f, k->cfa, HX_JSONW_LATIN1);
	fprintf(f, ",\"earlier_load_rules\":%" PRIu64 ",\"earlier_load_why\":", k->earlier);
	hx_jsonw_str(f, k->earlier ? k->earlier_why : NULL, HX_JSONW_LATIN1);
	fprintf(f, ",\"stops\":{");
	for (size_t u = 0; u < r->nu; u++) {
		fprintf(f, "%s\"%s\":", u ? "," : "", hx_rr_col_name(r, u));
		hx_jsonw_str(f, k->why[u], HX_JSONW_LATIN1);
	}
	fprintf(f, "}");
}

static int report_json(const struct rr *r, const struct rr_cols *cc)
{
	FILE *f = strcmp(r->json, "-") ? fopen(r->json, "w") : stdout;
	if (!f) {
		int e = errno;
		ju_say(JU_SAY_ERROR, "jitunwind", "%s: %s", r->json, strerror(e));
		return -e;
	}
	fprintf(f, "{\"file\":");
	hx_jsonw_str(f, r->path, HX_JSONW_LATIN1);
	fprintf(f, ",\"arch\":\"%s\",\"samples\":%zu,\"jit_samples\":%" PRIu64 ",\"under_jit_samples\":%" PRIu64 ",\"no_regs\":%" PRIu64
		",\"views\":%" PRIu64 ",\"resolved_at_time\":%" PRIu64 ",\"past_view_budget\":%" PRIu64 ",\"diverging\":%" PRIu64
		",\"injected_maps\":%" PRIu64 ",\"perf_maps\":%zu,\"earlier_load_rules\":%" PRIu64 ",\"clock_monotonic\":%s"
		",\"anon_exec_samples\":%" PRIu64 ",\"unseen_jit_samples\":%" PRIu64 ",\"unseen_jit_why\":",
		r->arch->facts->name, r->nsmp,
		r->njit, r->nunder, r->nnoregs, r->nviews, r->nstale, r->ninexact, r->ndiverge, r->ninjected, r->npmaps, r->nearlier,
		r->clock_ok ? "true" : "false", r->nanon, r->nanon_bare);
	char anon[1024];
	hx_rr_anon_why(r, anon, sizeof(anon));
	hx_jsonw_str(f, anon[0] ? anon : NULL, HX_JSONW_LATIN1);
	fprintf(f, ",\"columns\":[");
	for (size_t c = 0; c < cc->n; c++)
		fprintf(f, "%s\"%s\"", c ? "," : "", hx_rr_col_name(r, cc->idx[c]));
	fprintf(f, "],\"vdso\":");
	if (r->vdso_bid[0]) {
		fprintf(f, "{\"build_id\":\"%s\",\"file\":", r->vdso_bid);
		hx_jsonw_str(f, r->vdso[0] ? r->vdso : NULL, HX_JSONW_LATIN1);
		fprintf(f, "}");
	} else if (r->vdso_own) {
		fprintf(f, "{\"build_id\":null,\"file\":\"own\"}");
	} else {
		fprintf(f, "null");
	}
	if (r->perf) {
		fprintf(f, ",\"perf\":");
		hx_rp_report_json(r->perf, r, f);
	}
	if (r->lint) {
		fprintf(f, ",\"lint\":");
		hx_rl_report_json(r->lint, r, f);
	}
	fprintf(f, ",\"pcs\":[");
	for (size_t i = 0; i < r->nkeys; i++) {
		fprintf(f, "%s\n{\"symbol\":", i ? "," : "");
		json_key(f, r, cc, &r->keys[i]);
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
	int bad = ferror(f);
	if (f != stdout && fclose(f))
		bad = 1;
	if (bad)
		ju_say(JU_SAY_ERROR, "jitunwind", "%s: write error", r->json);
	return bad ? -1 : 0;
}

static void print_stats(const struct rr *r, const struct timespec *t0)
{
	struct timespec t1;
	struct rusage ru;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	double wall = (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
	double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
		     ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
	ju_say(JU_SAY_STATS, NULL, "replay stats: %zu samples, %zu bytes, %.3f s wall (%.0f samples/s), %.3f s CPU, "
	       "peak RSS %ld KiB, %" PRIu64 " view(s)", r->nsmp, r->pf.size, wall, wall > 0 ? (double)r->nsmp / wall : 0.0,
	       cpu, ru.ru_maxrss, r->nviews);
}

/* The replayed keys reported: text, JSON, stats.  -EIO when the JSON cannot
 * be written, else 0 with out->kind findings when the unwinders diverged. */
int hx_rr_report(struct rr *r, bool stats, const struct timespec *t0, struct hx_cmd_outcome *out)
{
	if (r->nkeys)
		qsort(r->keys, r->nkeys, sizeof(*r->keys), cmp_key);
	struct rr_cols cc = { .n = 0 };
	/* no sample with a stack (perf record -g): the unwinders have no column */
	for (size_t u = 0; u < r->nu && (!r->nsmp || r->nnoregs < r->nsmp); u++)
		cc.idx[cc.n++] = u;
	bool kfp = false;
	for (size_t i = 0; i < r->nkeys && !kfp; i++)
		for (int o = 0; o < HX_OUT_N; o++)
			kfp |= r->keys[i].out[r->nu][o] != 0;
	if (kfp)
		cc.idx[cc.n++] = r->nu;
	if (r->perf)
		cc.idx[cc.n++] = r->nu + 1;
	report_text(r, &cc);
	int status = r->json && report_json(r, &cc) ? -EIO : 0;
	/* JIT code perf cannot see is a finding: nothing of it was judged */
	out->kind = r->ndiverge || r->nanon_bare ? HX_CMD_FINDINGS : HX_CMD_CLEAN;
	if (stats)
		print_stats(r, t0);
	return status;
}

