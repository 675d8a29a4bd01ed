/* trace's judging options and reports: --unwinders, --perf-profile, --perf, --json,
 * --junit, --html, --tap; the samples judged (tracejudge.c) and written
 * through harness/report as `run` writes its cases. */
#include "harness/trace/trace.h"
#include "harness/realperf/perfcol.h"
#include "harness/report/report.h"
#include "harness/run/session.h"
#include "unwinders/model/perfview.h"
#include "unwinders/uwarch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int hx_trace_judge(const struct hx_trace_cfg *cfg, const struct hx_trace_result *res, struct hx_report *rep,
		   char *err, size_t n);
void hx_trace_judged_free(struct hx_report *rep);

/* the default columns: run's on this arch that this machine can run and
 * that read user samples (a trace takes no kernel samples); a default one
 * whose probe fails (real perf missing or refused) is a visible skip */
static void defaults(char *buf, size_t n)
{
	const char *arch = uw_arch_host()->facts->name;
	size_t nc, off = 0;
	const struct uw_unwinder *const *cols = hx_columns(&nc);
	buf[0] = 0;
	for (size_t i = 0; i < nc; i++) {
		const struct uw_unwinder *u = cols[i];
		char why[256] = "";
		if (u->kernel || !uw_unwinder_default_on(u, arch))
			continue;
		if (u->probe && u->probe(why, sizeof(why))) {
			printf("SKIP column %s: %s\n", u->name, why);
			continue;
		}
		int w = snprintf(buf + off, n - off, "%s%s", off ? "," : "", u->name);
		if (w < 0 || (size_t)w >= n - off)
			return;
		off += (size_t)w;
	}
}

/* --unwinders LIST into o; 0 or -1 (err set) */
static int pick(const struct hx_trace_cfg *c, struct hx_opts *o, char *buf, size_t n, char *err, size_t en)
{
	if (c->unwinders)
		snprintf(buf, n, "%s", c->unwinders);
	else
		defaults(buf, n);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!hx_column_by_name(t) || o->nuw == HX_MAX_UW) {
			snprintf(err, en, "--unwinders: '%s' is no unwinder of this build (or too many)", t);
			return -1;
		}
		o->unwinders[o->nuw++] = t;
	}
	return 0;
}

int hx_trace_judge_report(const struct hx_trace_cfg *c, const struct hx_trace_result *res)
{
	struct hx_opts o = { .profile = (enum pv_profile)c->profile, .profile_set = true };
	char list[512], err[1024] = "";
	if (c->perf_cmd)
		hx_perfcol_set_cmd(c->perf_cmd);   /* the perf column's perf (default: perf on PATH) */
	if (pick(c, &o, list, sizeof(list), err, sizeof(err))) {
		fprintf(stderr, "jitunwind trace: %s\n", err);
		return 2;
	}
	struct hx_report rep = { .arch = uw_arch_host()->facts->name, .o = &o };
	int e = hx_trace_judge(c, res, &rep, err, sizeof(err));
	if (e) {
		fprintf(stderr, "jitunwind trace: judging: %s\n", err[0] ? err : strerror(-e));
		hx_trace_judged_free(&rep);
		return 2;
	}
	hx_report_write(hx_reporter_by_name(c->tap ? "tap" : "terminal"), NULL, &rep);
	int wc = c->write_cases ? hx_trace_write_cases(c, res, &rep, stdout) : 0;
	const struct { const char *path, *name; } files[] = {
		{ c->json, "json" }, { c->junit, "junit" }, { c->html, "html" } };
	int rc = wc ? 2 : 0;
	for (size_t k = 0; k < 3; k++)
		if (files[k].path && hx_report_write(hx_reporter_by_name(files[k].name), files[k].path, &rep)) {
			fprintf(stderr, "jitunwind trace: cannot write %s\n", files[k].path);
			rc = 2;
		}
	for (size_t i = 0; i < rep.n && !rc; i++)
		if (!rep.cases[i].pass)
			rc = 1;
	hx_trace_judged_free(&rep);
	return rc;
}
