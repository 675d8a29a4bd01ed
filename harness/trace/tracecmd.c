/* trace's judging options and reports: --unwinders, --perf-profile, --perf, --json,
 * --junit, --html, --tap; the samples judged (tracejudge.c) and written
 * through harness/report as `run` writes its cases. */
#include "harness/trace/trace.h"
#include "harness/run/perfcol.h"
#include "harness/report/report.h"
#include "harness/case/case.h"
#include "harness/case/say.h"
#include "harness/run/session.h"
#include "unwinders/model/perfview.h"
#include "unwinders/uwarch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hx_trace_judge(const struct hx_trace_cfg *cfg, const struct hx_trace_result *res, struct hx_report *rep,
		   size_t *judged, struct hx_trace_agree *agree, struct ju_err *err);
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

/* --unwinders LIST into o; 0 or -EINVAL (err set) */
static int pick(const struct hx_trace_cfg *c, struct hx_opts *o, char *buf, size_t n, struct ju_err *err)
{
	if (c->unwinders)
		snprintf(buf, n, "%s", c->unwinders);
	else
		defaults(buf, n);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!hx_column_by_name(t) || o->nuw == HX_MAX_UW) {
			return ju_errf(err, EINVAL, 0, "--unwinders: '%s' is no unwinder of this build (or too many)", t);
		}
		o->unwinders[o->nuw++] = t;
	}
	return 0;
}

int hx_trace_gate_parse(struct hx_trace_cfg *cfg, struct ju_err *err)
{
	struct hx_case *g = calloc(1, sizeof(*g));
	if (!g)
		return ju_errf(err, ENOMEM, 0, "out of memory");
	snprintf(g->path, sizeof(g->path), "--expect");
	struct ju_err je;
	const char *m = je.msg;
	for (int i = 0; i < cfg->nexpect; i++)
		if (hx_case_expect_line(g, cfg->expect[i], i + 1, &je)) {
			/* the parser's "--expect:N: " prefix: the line itself names it */
			const char *msg = m + strlen(g->path);
			msg += strspn(msg, ":0123456789");
			msg += strspn(msg, " ");
			free(g);
			return ju_errf(err, EINVAL, 0, "--expect '%s': %s", cfg->expect[i], msg);
		}
	if (hx_case_compile(g, &je)) {
		free(g);
		return ju_errf(err, EINVAL, 0, "%s", m);
	}
	cfg->gate = g;
	return 0;
}

void hx_trace_gate_free(struct hx_trace_cfg *cfg)
{
	free(cfg->gate);
	cfg->gate = NULL;
}

/* the gate's verdict: every --expect met by the samples judged, and each
 * column it names judged at least one (none judged is never "met") */
static int gate_verdict(const struct hx_trace_cfg *c, const struct hx_opts *o, const struct hx_report *rep,
			const size_t *judged)
{
	int rc = 0;
	const char *pre = c->tap ? "# " : "";     /* TAP: a diagnostic line */
	for (int i = 0; i < c->gate->nexpect; i++) {
		const struct hx_expect *x = &c->gate->expect[i];
		int u = 0;
		while (u < o->nuw && strcmp(o->unwinders[u], x->uw))
			u++;
		size_t miss = 0;
		const struct hx_sample_res *first = NULL;
		for (size_t k = 0; u < o->nuw && k < rep->n; k++)
			for (size_t s = 0; s < rep->cases[k].nsamples; s++) {
				const struct hx_sample_res *sr = &rep->cases[k].samples[s];
				if (sr->uw[u].expected[0] && !sr->uw[u].match && !miss++)
					first = sr;
			}
		if (u == o->nuw || !judged[u]) {
			printf("%strace: --expect '%s': NOT MET: no sample judged by %s (%s)\n", pre, c->expect[i], x->uw,
			       u == o->nuw ? "not among the columns: see --unwinders and the SKIP lines"
					   : "skipped, or no sample with a truth or a real perf chain to agree with");
			rc = 1;
		} else if (miss) {
			printf("%strace: --expect '%s': NOT MET: %zu of %zu samples judged by %s missed it (first: %s, "
			       "%s)\n", pre, c->expect[i], miss, judged[u], x->uw, first->where, hx_verdict_name(first->uw[u].j.v));
			rc = 1;
		} else {
			printf("%strace: --expect '%s': met by all %zu samples judged by %s\n", pre, c->expect[i], judged[u],
			       x->uw);
		}
	}
	return rc;
}

/* the samples without a truth: how many were judged against real perf's
 * chain, and each column against the others (identical chains) */
static void agree_lines(const struct hx_trace_cfg *c, const struct hx_opts *o, const struct hx_trace_agree *a)
{
	const char *pre = c->tap ? "# " : "";
	if (!a->judged && !a->unjudged)
		return;
	printf("%strace: %zu samples without a truth by execution judged for agreement with real perf's chain (its "
	       "column their reference, with no verdict of its own); %zu not judged (no real perf column ran)\n", pre,
	       a->judged, a->unjudged);
	printf("%strace: identical chains among them:", pre);
	for (int x = 0; x < o->nuw && x < HX_TRACE_MAX_COLS; x++)
		for (int y = x + 1; y < o->nuw && y < HX_TRACE_MAX_COLS; y++)
			if (a->both[x][y])
				printf(" %s=%s %zu/%zu", o->unwinders[x], o->unwinders[y], a->same[x][y], a->both[x][y]);
	printf("\n");
}

int hx_trace_judge_report(const struct hx_trace_cfg *c, const struct hx_trace_result *res)
{
	struct hx_opts o = { .profile = (enum pv_profile)c->profile, .profile_set = true };
	struct ju_err err = { 0 };
	char list[512];
	if (c->perf_cmd)
		hx_perfcol_set_cmd(c->perf_cmd);   /* the perf column's perf (default: perf on PATH) */
	if (pick(c, &o, list, sizeof(list), &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind trace", "%s", err.msg);
		return 2;
	}
	struct hx_report rep = { .arch = uw_arch_host()->facts->name, .o = &o };
	size_t judged[HX_MAX_UW] = { 0 };
	struct hx_trace_agree agree = { 0 };
	int e = hx_trace_judge(c, res, &rep, judged, &agree, &err);
	if (e) {
		ju_say(JU_SAY_ERROR, "jitunwind trace", "judging: %s", err.msg[0] ? err.msg : strerror(-e));
		hx_trace_judged_free(&rep);
		return 2;
	}
	hx_report_write(hx_reporter_by_name(c->tap ? "tap" : "terminal"), NULL, &rep);
	agree_lines(c, &o, &agree);
	int wc = c->write_cases ? hx_trace_write_cases(c, res, &rep, stdout) : 0;
	const struct { const char *path, *name; } files[] = {
		{ c->json, "json" }, { c->junit, "junit" }, { c->html, "html" } };
	int rc = wc ? 2 : 0;
	for (size_t k = 0; k < 3; k++)
		if (files[k].path && hx_report_write(hx_reporter_by_name(files[k].name), files[k].path, &rep)) {
			ju_say(JU_SAY_ERROR, "jitunwind trace", "cannot write %s", files[k].path);
			rc = 2;
		}
	if (!rc && c->gate)
		rc = gate_verdict(c, &o, &rep, judged);
	else if (!rc)
		printf("%strace: no --expect given: the exit status does not judge (0 whatever the verdicts)\n",
		       c->tap ? "# " : "");
	hx_trace_judged_free(&rep);
	return rc;
}
