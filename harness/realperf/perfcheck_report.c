/* perf-check's report: each mode's agreement as text, every mode as JSON. */
#include "harness/realperf/perfcheck_int.h"
#include "harness/case/jsonw.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static double pct(size_t a, size_t n)
{
	return n ? 100.0 * (double)a / (double)n : 0.0;
}

static void verdict_counts(FILE *f, const int *v)
{
	for (int i = 0; i < 6; i++)
		if (v[i])
			fprintf(f, " %s %d", hx_verdict_name((enum hx_verdict)i), v[i]);
}

/* every disagreement, grouped by sample point (its samples usually print one chain) */
static void print_disagreements(const struct pk_case *kc)
{
	for (size_t i = 0; i < kc->ndis; i++) {
		const struct pk_dis *d = &kc->dis[i];
		if (i && kc->dis[i - 1].point == d->point && !strcmp(kc->dis[i - 1].why, d->why))
			continue;
		const struct pk_point *pt = &kc->pts[d->point];
		size_t same = 0;
		for (size_t k = i; k < kc->ndis && kc->dis[k].point == d->point; k++)
			same += !strcmp(kc->dis[k].why, d->why);
		printf("    %s %s (%s): %zu of %d sample(s): perf %s, emulation %s: %s\n", kc->name, pt->sr->where,
		       pt->sr->insn, same, pt->samples, hx_verdict_name(d->perf_v),
		       hx_verdict_name(pt->sr->uw[0].j.v), d->why);
	}
}

static void print_unsampled(const struct pk_case *kc)
{
	size_t shown = 0;
	for (size_t i = 0; i < kc->npts; i++)
		if (!kc->pts[i].samples)
			printf("%s%s", shown++ ? ", " : "    never sampled: ", kc->pts[i].sr->where);
	if (shown)
		printf("\n");
}

void pk_print_mode(const struct pk *k, const struct pk_run *r)
{
	const char *m = pk_mode_names[r->mode];
	char cg[32] = "fp";
	if (r->mode == PK_DWARF)
		snprintf(cg, sizeof(cg), "dwarf,%d", k->o.stack_size);
	printf("\n%s mode (perf record --call-graph %s; emulation: %s, profile %s)\n", m, cg, r->emu,
	       pv_profile_name(k->profile));
	if (r->why[0]) {
		printf("  %s: %s\n", m, r->why);
		return;
	}
	printf("  %-28s %6s %7s %7s %7s %7s  perf vs truth\n", "case", "points", "sampled", "agree", "samples",
	       "agree");
	for (size_t i = 0; i < r->ncases; i++) {
		const struct pk_case *kc = &r->cases[i];
		printf("  %-28s %6zu %7zu %6.1f%% %7zu %6.1f%% ", kc->name, kc->npts, kc->sampled,
		       pct(kc->points_agree, kc->npts), kc->samples, pct(kc->agree, kc->samples));
		verdict_counts(stdout, kc->perf_v);
		printf("\n");
		if (kc->problem[0])
			printf("    problem: %s\n", kc->problem);
		print_unsampled(kc);
		print_disagreements(kc);
	}
	size_t outside = 0;
	for (size_t i = 0; i < r->ncases; i++)
		outside += r->cases[i].outside;
	printf("  %s: %zu/%zu points sampled; perf agrees with %s at %zu points (%.2f %%; needed %.2f %%),"
	       " in %zu of %zu samples (%.2f %%; %zu more samples elsewhere in the cases' processes): %s (%.1f s)\n",
	       m, r->sampled, r->points, r->emu, r->points_agree, pct(r->points_agree, r->points), k->o.min_agree,
	       r->agree, r->samples, pct(r->agree, r->samples), outside, r->pass ? "pass" : "FAIL", r->seconds);
	printf("  %s: whole chains (past the anchor, not judged) equal in %zu of %zu samples\n", m, r->whole,
	       r->samples);
	for (const struct pk_run *x = r; x; x = x->retry) {
		if (x->lost[0])
			printf("  %s: perf record%s: %s\n", m, x->attempt ? " (retry)" : "", x->lost);
		if (x->attempt && x->why[0])
			printf("  %s: retry %d: %s\n", m, x->attempt, x->why);
	}
	if (r->retry)
		printf("  %s: %zu case(s) recorded again for points without a sample; %zu taken from a retry\n", m,
		       r->recorded_again, r->retried);
}

static void json_verdicts(FILE *f, const char *key, const int *v)
{
	fprintf(f, ",\"%s\":{", key);
	for (int i = 0, n = 0; i < 6; i++)
		if (v[i])
			fprintf(f, "%s\"%s\":%d", n++ ? "," : "", hx_verdict_name((enum hx_verdict)i), v[i]);
	fprintf(f, "}");
}

static void json_dis(FILE *f, enum pk_mode m, const struct pk_case *kc, const struct pk_dis *d)
{
	const struct pk_point *pt = &kc->pts[d->point];
	const struct uw_result *e = &pt->sr->uw[0].r;
	uint64_t pred[UW_MAX_FRAMES];
	for (int i = 0; i < e->n; i++)
		pred[i] = printed_of(m, e, i);
	fprintf(f, "{\"where\":");
	hx_jsonw_str(f, pt->sr->where, 0);
	fprintf(f, ",\"offset\":");
	if (pt->sr->offset < 0)
		fprintf(f, "null");
	else
		fprintf(f, "%d", pt->sr->offset);
	fprintf(f, ",\"insn\":");
	hx_jsonw_str(f, pt->sr->insn, 0);
	fprintf(f, ",\"time_ns\":%llu,\"perf_verdict\":\"%s\",\"emulation_verdict\":\"%s\",\"frame\":%d,\"why\":",
		(unsigned long long)d->time, hx_verdict_name(d->perf_v), hx_verdict_name(pt->sr->uw[0].j.v),
		d->frame);
	hx_jsonw_str(f, d->why, 0);
	fprintf(f, ",\"perf\":");
	hx_jsonw_addrs(f, d->printed, d->n);
	fprintf(f, ",\"emulation\":");
	hx_jsonw_addrs(f, pred, e->n);
	fprintf(f, ",\"truth\":");
	hx_jsonw_addrs(f, pt->sr->truth, pt->sr->nt);
	fprintf(f, "}");
}

static void json_case(FILE *f, enum pk_mode m, const struct pk_case *kc)
{
	fprintf(f, "{\"name\":");
	hx_jsonw_str(f, kc->name, 0);
	fprintf(f, ",\"file\":");
	hx_jsonw_str(f, kc->file, 0);
	fprintf(f, ",\"pid\":%u,\"problem\":", kc->pid);
	hx_jsonw_str(f, kc->problem[0] ? kc->problem : NULL, 0);
	fprintf(f, ",\"points\":%zu,\"sampled\":%zu,\"points_agree\":%zu,\"samples\":%zu,\"samples_agree\":%zu,"
		"\"whole_equal\":%zu,\"elsewhere\":%zu", kc->npts, kc->sampled, kc->points_agree, kc->samples, kc->agree,
		kc->whole, kc->outside);
	json_verdicts(f, "perf_verdicts", kc->perf_v);
	json_verdicts(f, "emulation_verdicts", kc->emu_v);
	fprintf(f, ",\"unsampled\":[");
	for (size_t i = 0, n = 0; i < kc->npts; i++)
		if (!kc->pts[i].samples) {
			fprintf(f, "%s", n++ ? "," : "");
			hx_jsonw_str(f, kc->pts[i].sr->where, 0);
		}
	fprintf(f, "],\"disagreements\":[");
	for (size_t i = 0; i < kc->ndis; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_dis(f, m, kc, &kc->dis[i]);
	}
	fprintf(f, "]}");
}

int pk_write_json(const struct pk *k, const char *path, bool pass)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\"tool\":\"jitunwind\",\"command\":\"perf-check\",\"schema\":1,\"arch\":\"%s\",\"perf\":{\"cmd\":",
		tr_arch_host()->facts->name);
	hx_jsonw_str(f, hx_perf_cmd(), 0);
	fprintf(f, ",\"version\":");
	hx_jsonw_str(f, k->perf->version, 0);
	fprintf(f, ",\"engine\":\"%s\"},\"profile\":\"%s\",\"stack_size\":%d,\"period_us\":%d,\"spin_us\":%d,"
		"\"min_agreement\":%.2f,\"modes\":[", k->perf->engine, pv_profile_name(k->profile),
		k->o.stack_size, k->o.period_us, k->o.spin_us, k->o.min_agree);
	for (int i = 0; i < k->nruns; i++) {
		const struct pk_run *r = &k->runs[i];
		fprintf(f, "%s{\"mode\":\"%s\",\"emulation\":\"%s\",\"error\":", i ? "," : "",
			pk_mode_names[r->mode], r->emu);
		hx_jsonw_str(f, r->why[0] ? r->why : NULL, 0);
		fprintf(f, ",\"lost\":");
		hx_jsonw_str(f, r->lost[0] ? r->lost : NULL, 0);
		fprintf(f, ",\"recorded_again\":%zu,\"retried\":%zu", r->recorded_again, r->retried);
		fprintf(f, ",\"points\":%zu,\"sampled\":%zu,\"points_agree\":%zu,\"agreement\":%.2f,\"samples\":%zu,"
			"\"samples_agree\":%zu,\"whole_equal\":%zu,\"pass\":%s,\"seconds\":%.2f,\"cases\":[", r->points,
			r->sampled, r->points_agree, pct(r->points_agree, r->points), r->samples, r->agree, r->whole,
			r->pass ? "true" : "false", r->seconds);
		for (size_t c = 0; c < r->ncases; c++) {
			fprintf(f, "%s", c ? "," : "");
			json_case(f, r->mode, &r->cases[c]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "],\"result\":\"%s\",\"seconds\":%.2f}\n", pass ? "pass" : "fail", k->seconds);
	return fclose(f) ? -errno : 0;
}

/* the cases' jitdumps, perf maps and the .so files perf inject wrote beside them */
