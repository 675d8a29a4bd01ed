/* Terminal table (case x unwinder) with each failure spelled out, and the
 * JSON report, schema 1 (DESIGN, CONTRACT). */
#include "report.h"
#include "jsonw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the oracle's chain is the emitted info's: its verdict is consistent/inconsistent */
static bool judges_emitted(const struct hx_uw_res *r)
{
	return r->uw && r->uw->ref == UW_REF_TRUTH;
}

static void cell(const struct hx_case_res *c, int u, char *buf, size_t n)
{
	/* most common verdict, then the others, '!' if any differs from [expect] */
	int count[8] = { 0 }, fb = 0, bad = 0, unfaithful = 0, lost = 0;
	const char *name = NULL;
	bool is_oracle = false;
	for (size_t i = 0; i < c->nsamples; i++) {
		const struct hx_uw_res *r = &c->samples[i].uw[u];
		name = r->name;
		is_oracle = judges_emitted(r);
		count[r->j.v]++;
		fb += r->fallback;
		bad += !r->match;
		unfaithful += r->has_faithful && !r->faithful;
		lost += r->name_lost;
	}
	size_t len = 0;
	buf[0] = 0;
	if (!name) {
		snprintf(buf, n, "-");
		return;
	}
	if (is_oracle) {
		for (int v = 2; v < 6; v++)
			count[1] += count[v], count[v] = 0;
	}
	for (int v = 0; v < 6; v++) {
		if (!count[v])
			continue;
		const char *vn = hx_verdict_name(v);
		if (is_oracle)
			vn = v == HX_OK ? "consistent" : "inconsistent";   /* v is 0 or 1 here */
		len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s:%d", len ? " " : "", vn, count[v]);
	}
	if (fb && len < n)
		len += (size_t)snprintf(buf + len, n - len, " fallback:%d", fb);
	if (unfaithful && len < n)
		len += (size_t)snprintf(buf + len, n - len, " unfaithful:%d", unfaithful);
	if (lost && len < n)
		len += (size_t)snprintf(buf + len, n - len, " name-lost:%d", lost);
	if (bad && len < n)
		snprintf(buf + len, n - len, " !%d", bad);
}

/* the case x unwinder matrix */
static void term_matrix(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o)
{
	fprintf(out, "%-26s %-6s", "case", "result");
	for (int u = 0; u < o->nuw; u++)
		fprintf(out, " | %-30s", o->unwinders[u]);
	fprintf(out, "\n");
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		fprintf(out, "%-26s %-6s", c->name, c->skipped ? "skip" : c->pass ? "pass" : "FAIL");
		for (int u = 0; u < o->nuw; u++) {
			char b[128];
			cell(c, u, b, sizeof(b));
			fprintf(out, " | %-30s", b);
		}
		fprintf(out, "\n");
	}
}

static void term_why(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o)
{
	/* why chains end early: for each case and unwinder (but those with no
	 * reason to give, the FP walk), the first sample that is not ok, with
	 * the unwinder's stop reason */
	bool header = false;
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		for (int u = 0; u < o->nuw; u++) {
			const struct uw_unwinder *uw = uw_unwinder_by_name(o->unwinders[u]);
			if (uw && uw->quiet_why)
				continue;
			for (size_t k = 0; k < c->nsamples; k++) {
				const struct hx_sample_res *sr = &c->samples[k];
				if (u >= sr->nuw)
					break;
				const struct hx_uw_res *r = &sr->uw[u];
				if (r->j.v == HX_OK && !r->fallback)
					continue;
				if (!header) {
					fprintf(out, "\nwhy (first sample per case and unwinder that is not a clean ok):\n");
					header = true;
				}
				if (r->fallback && r->r.fallback_why[0])
					fprintf(out, "  %-24s %-10s %-12s %s fallback: %s\n", c->name, r->name, sr->where,
						hx_verdict_name(r->j.v), r->r.fallback_why);
				else
					fprintf(out, "  %-24s %-10s %-12s %s%s: %s%s%s\n", c->name, r->name, sr->where,
						hx_verdict_name(r->j.v), r->fallback ? " fallback" : "",
						uw_stop_name(r->r.stop), r->r.why[0] ? ", " : "", r->r.why);
				break;
			}
		}
	}
}

/* every sample that missed its expectation, with the first divergent frame */
static void term_failures(FILE *out, const struct hx_case_res *cases, size_t n)
{
	int shown = 0;
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		if (c->skipped) {
			fprintf(out, "\nskip %s: %s\n", c->name, c->problem);
			continue;
		}
		if (c->pass)
			continue;
		fprintf(out, "\nFAIL %s (%s)\n", c->name, c->file);
		if (c->problem[0])
			fprintf(out, "  %s\n", c->problem);
		for (size_t s = 0; s < c->nsamples; s++) {
			const struct hx_sample_res *sr = &c->samples[s];
			for (int u = 0; u < sr->nuw; u++) {
				const struct hx_uw_res *r = &sr->uw[u];
				if (r->match)
					continue;
				if (++shown > 200) {
					if (shown == 201)
						fprintf(out, "  ... more failures in the JSON report\n");
					continue;
				}
				bool is_oracle = judges_emitted(r);
				const char *got = is_oracle ? (r->consistent ? "consistent" : "inconsistent")
							    : hx_verdict_name(r->j.v);
				if (is_oracle && r->expected[0] && strcmp(r->expected, "consistent") &&
				    strcmp(r->expected, "inconsistent"))
					got = hx_verdict_name(r->j.v);
				fprintf(out, "  %s", sr->where);
				if (sr->stack_size != 8192)
					fprintf(out, " [stack %d]", sr->stack_size);
				if (strcmp(sr->profile, "current"))
					fprintf(out, " [perf %s]", sr->profile);
				if (sr->offset >= 0)
					fprintf(out, " (offset %d: %s)", sr->offset, sr->insn);
				fprintf(out, " %s: expected %s, got %s", r->name,
					r->expected[0] ? r->expected : "(no expectation)", got);
				if (r->j.diverge_got >= 0) {
					int g = r->j.diverge_got, t = r->j.diverge_truth;
					fprintf(out, "; first divergent frame #%d: ", g);
					if (g < r->r.n && r->r.addr[g])
						fprintf(out, "got 0x%llx", (unsigned long long)r->r.addr[g]);
					else
						fprintf(out, "chain ended (%s%s%s)", uw_stop_name(r->r.stop),
							r->r.why[0] ? ": " : "", r->r.why);
					if (t >= 0 && t < sr->nt)
						fprintf(out, ", truth 0x%llx", (unsigned long long)sr->truth[t]);
				}
				if (r->fallback)
					fprintf(out, " (fallback: found without the emitted CFI)");
				if (r->name_lost)
					fprintf(out, " (JIT frame name lost)");
				fprintf(out, "\n");
			}
		}
	}
}

static int report_terminal(FILE *out, const struct hx_report *rp)
{
	term_matrix(out, rp->cases, rp->n, rp->o);
	term_why(out, rp->cases, rp->n, rp->o);
	term_failures(out, rp->cases, rp->n);
	return ferror(out) ? -EIO : 0;
}

static void jstr(FILE *f, const char *s)
{
	hx_jsonw_str(f, s ? s : "", 0);
}

static int report_json(FILE *f, const struct hx_report *rp)
{
	const struct hx_case_res *cases = rp->cases;
	size_t n = rp->n;
	const char *arch = rp->arch;
	double seconds = rp->seconds;
	size_t pass = 0, fail = 0, samples = 0, checks = 0;
	fprintf(f, "{\"tool\":\"jitunwind\",\"schema\":1,\"arch\":");
	jstr(f, arch);
	fprintf(f, ",\n\"cases\":[");
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		if (c->skipped)
			continue;
		c->pass ? pass++ : fail++;
		fprintf(f, "%s\n{\"name\":", pass + fail > 1 ? "," : "");
		jstr(f, c->name);
		fprintf(f, ",\"file\":");
		jstr(f, c->file);
		fprintf(f, ",\"about\":");
		jstr(f, c->about);
		fprintf(f, ",\"profile\":\"%s\"", c->profile);
		fprintf(f, ",\"result\":\"%s\",\"emitted\":\"%s\"", c->pass ? "pass" : "fail",
			c->consistent ? "consistent" : "inconsistent");
		if (c->problem[0]) {
			fprintf(f, ",\"problem\":");
			jstr(f, c->problem);
		}
		fprintf(f, ",\"samples\":[");
		for (size_t s = 0; s < c->nsamples; s++) {
			const struct hx_sample_res *sr = &c->samples[s];
			samples++;
			fprintf(f, "%s\n {\"where\":", s ? "," : "");
			jstr(f, sr->where);
			if (sr->offset >= 0)
				fprintf(f, ",\"offset\":%d,\"insn\":", sr->offset);
			else
				fprintf(f, ",\"offset\":null,\"insn\":");
			jstr(f, sr->insn);
			fprintf(f, ",\"profile\":\"%s\",\"stack_size\":%d,\"truth\":", sr->profile, sr->stack_size);
			hx_jsonw_addrs(f, sr->truth, sr->nt);
			fprintf(f, ",\"unwinders\":{");
			for (int u = 0; u < sr->nuw; u++) {
				const struct hx_uw_res *r = &sr->uw[u];
				checks++;
				fprintf(f, "%s\"%s\":{\"verdict\":\"%s\",\"frames\":", u ? "," : "", r->name,
					hx_verdict_name(r->j.v));
				hx_jsonw_addrs(f, r->r.addr, r->r.n);
				if (r->has_faithful)
					fprintf(f, ",\"faithful\":%s", r->faithful ? "true" : "false");
				else
					fprintf(f, ",\"faithful\":null");
				fprintf(f, ",\"fallback\":%s", r->fallback ? "true" : "false");
				if (judges_emitted(r))
					fprintf(f, ",\"consistent\":%s", r->consistent ? "true" : "false");
				fprintf(f, ",\"expected\":");
				if (r->expected[0])
					jstr(f, r->expected);
				else
					fprintf(f, "null");
				if (c->has_symbols && !judges_emitted(r)) {
					fprintf(f, ",\"symbols\":[");
					for (int k = 0; k < r->nsym; k++) {
						fprintf(f, "%s", k ? "," : "");
						if (r->sym[k][0])
							jstr(f, r->sym[k]);
						else
							fprintf(f, "null");
					}
					fprintf(f, "],\"name_lost\":%s", r->name_lost ? "true" : "false");
				}
				fprintf(f, ",\"match\":%s,\"stop\":\"%s\"", r->match ? "true" : "false",
					uw_stop_name(r->r.stop));
				if (r->r.why[0]) {
					fprintf(f, ",\"why\":");
					jstr(f, r->r.why);
				}
				if (r->fallback && r->r.fallback_why[0]) {
					fprintf(f, ",\"fallback_why\":");
					jstr(f, r->r.fallback_why);
				}
				fprintf(f, "}");
			}
			fprintf(f, "}}");
		}
		fprintf(f, "]}");
	}
	fprintf(f, "\n],\n\"totals\":{\"cases\":%zu,\"pass\":%zu,\"fail\":%zu,\"samples\":%zu,\"checks\":%zu,\"seconds\":%.3f}}\n",
		pass + fail, pass, fail, samples, checks, seconds);
	return ferror(f) ? -EIO : 0;
}

/* Adding a reporter (HTML, JUnit, TAP): one file with its write function,
 * one line here, one option in harness/main.c. */
static const struct hx_reporter reporters[] = {
	{ "terminal", report_terminal },
	{ "json", report_json },
};

const struct hx_reporter *hx_reporter_by_name(const char *name)
{
	for (size_t i = 0; i < sizeof(reporters) / sizeof(reporters[0]); i++)
		if (!strcmp(reporters[i].name, name))
			return &reporters[i];
	return NULL;
}

int hx_report_write(const struct hx_reporter *rep, const char *path, const struct hx_report *r)
{
	if (!path)
		return rep->write(stdout, r);
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	int rc = rep->write(f, r);
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}
