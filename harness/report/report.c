/* Terminal table (case x unwinder) with each failure spelled out, and the
 * JSON report, schema 1 (DESIGN, CONTRACT). */
#include "harness/report/report.h"
#include "harness/report/jsonw.h"
#include "harness/cli/version.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the oracle's chain is the emitted info's: its verdict is consistent/inconsistent */
static bool judges_emitted(const struct hx_uw_res *r)
{
	return r->uw && r->uw->ref == UW_REF_TRUTH;
}

/* "0x55..a2 (hx_call)" */
static void addr_sym(FILE *out, uint64_t a, const char *sym)
{
	fprintf(out, "0x%llx", (unsigned long long)a);
	if (sym && sym[0])
		fprintf(out, " (%s)", sym);
}

static void term_why(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o,
		     const struct uw_arch *arch)
{
	/* why chains end early: for each case and unwinder, the first sample
	 * that is not ok, with the unwinder's stop reason (rN named) and, for
	 * those with no reason to give (the FP walk), the first frame missed */
	bool header = false;
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		for (int u = 0; u < o->nuw; u++) {
			const struct uw_unwinder *uw = uw_unwinder_by_name(o->unwinders[u]);
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
				char why[512];
				hx_term_regnames(arch, r->fallback && r->r.fallback_why[0] ? r->r.fallback_why : r->r.why,
						 why, sizeof(why));
				fprintf(out, "  %-24s %-10s %-12s ", c->name, r->name, sr->where);
				if (r->fallback && r->r.fallback_why[0])
					fprintf(out, "%s fallback: %s", hx_verdict_name(r->j.v), why);
				else if (uw && uw->quiet_why)
					fprintf(out, "%s%s", hx_verdict_name(r->j.v), r->fallback ? " fallback" : "");
				else
					fprintf(out, "%s%s: %s%s%s", hx_verdict_name(r->j.v), r->fallback ? " fallback" : "",
						uw_stop_name(r->r.stop), why[0] ? ", " : "", why);
				int t = r->j.diverge_truth;
				if (uw && uw->quiet_why && t >= 0 && t < sr->nt) {
					fprintf(out, ": misses frame #%d ", t);
					addr_sym(out, sr->truth[t], sr->tsym[t]);
				}
				fprintf(out, "\n");
				break;
			}
		}
	}
}

/* every sample that missed its expectation, with the first divergent frame */
static void term_failures(FILE *out, const struct hx_case_res *cases, size_t n, const struct uw_arch *arch)
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
					if (g < r->r.n && r->r.addr[g]) {
						fprintf(out, "got ");
						addr_sym(out, r->r.addr[g], g < r->nsym ? r->sym[g] : NULL);
					}
					else
					{
						char why[512];
						hx_term_regnames(arch, r->r.why, why, sizeof(why));
						fprintf(out, "chain ended (%s%s%s)", uw_stop_name(r->r.stop),
							why[0] ? ": " : "", why);
					}
					if (t >= 0 && t < sr->nt) {
						fprintf(out, ", truth ");
						addr_sym(out, sr->truth[t], sr->tsym[t]);
					}
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
	hx_term_matrix(out, rp->cases, rp->n, rp->o);
	term_why(out, rp->cases, rp->n, rp->o, uw_arch_by_name(rp->arch));
	term_failures(out, rp->cases, rp->n, uw_arch_by_name(rp->arch));
	return ferror(out) ? -EIO : 0;
}

static void jstr(FILE *f, const char *s)
{
	hx_jsonw_str(f, s ? s : "", 0);
}

/* a list of symbols, null where none is known */
static void json_syms(FILE *f, const char (*sym)[HX_SYM_LEN], int n)
{
	fprintf(f, "[");
	for (int k = 0; k < n; k++) {
		fprintf(f, "%s", k ? "," : "");
		if (sym[k][0])
			jstr(f, sym[k]);
		else
			fprintf(f, "null");
	}
	fprintf(f, "]");
}

/* one unwinder's result at one sample: verdict, frames, flags, stop */
static void json_uw(FILE *f, const struct hx_uw_res *r, bool has_symbols)
{
	fprintf(f, "\"%s\":{\"verdict\":\"%s\",\"frames\":", r->name, hx_verdict_name(r->j.v));
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
	if (has_symbols && !judges_emitted(r)) {
		fprintf(f, ",\"symbols\":");
		json_syms(f, r->sym, r->nsym);
		fprintf(f, ",\"name_lost\":%s", r->name_lost ? "true" : "false");
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

/* one sample point: where, the truth, the emitted row, every unwinder */
static void json_sample(FILE *f, const struct hx_sample_res *sr, bool has_symbols)
{
	fprintf(f, "{\"where\":");
	jstr(f, sr->where);
	if (sr->offset >= 0)
		fprintf(f, ",\"offset\":%d,\"insn\":", sr->offset);
	else
		fprintf(f, ",\"offset\":null,\"insn\":");
	jstr(f, sr->insn);
	fprintf(f, ",\"profile\":\"%s\",\"stack_size\":%d,\"truth\":", sr->profile, sr->stack_size);
	hx_jsonw_addrs(f, sr->truth, sr->nt);
	fprintf(f, ",\"pc\":\"0x%llx\",\"cfa_row\":", (unsigned long long)sr->pc);
	jstr(f, sr->cfa_row);
	if (has_symbols) {
		fprintf(f, ",\"truth_symbols\":");
		json_syms(f, sr->tsym, sr->nt);
	}
	fprintf(f, ",\"unwinders\":{");
	for (int u = 0; u < sr->nuw; u++) {
		fprintf(f, "%s", u ? "," : "");
		json_uw(f, &sr->uw[u], has_symbols);
	}
	fprintf(f, "}}");
}

static void json_case(FILE *f, const struct hx_case_res *c)
{
	fprintf(f, "{\"name\":");
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
		fprintf(f, "%s\n ", s ? "," : "");
		json_sample(f, &c->samples[s], c->has_symbols);
	}
	fprintf(f, "]}");
}

static int report_json(FILE *f, const struct hx_report *rp)
{
	size_t pass = 0, fail = 0, samples = 0, checks = 0;
	fprintf(f, "{\"tool\":\"jitunwind\",\"schema\":%d,\"version\":\"%s\",\"arch\":",
		HX_REPORT_SCHEMA, HX_VERSION);
	jstr(f, rp->arch);
	fprintf(f, ",\n\"cases\":[");
	for (size_t i = 0; i < rp->n; i++) {
		const struct hx_case_res *c = &rp->cases[i];
		if (c->skipped)
			continue;
		c->pass ? pass++ : fail++;
		fprintf(f, "%s\n", pass + fail > 1 ? "," : "");
		json_case(f, c);
		samples += c->nsamples;
		for (size_t s = 0; s < c->nsamples; s++)
			checks += (size_t)c->samples[s].nuw;
	}
	fprintf(f, "\n],\n\"totals\":{\"cases\":%zu,\"pass\":%zu,\"fail\":%zu,\"samples\":%zu,\"checks\":%zu,\"seconds\":%.3f}}\n",
		pass + fail, pass, fail, samples, checks, rp->seconds);
	return ferror(f) ? -EIO : 0;
}

/* Adding a reporter (HTML, JUnit, TAP): one file with its write function,
 * one line here, one option in harness/cli/main.c. */
static const struct hx_reporter reporters[] = {
	{ "terminal", report_terminal },
	{ "json", report_json },
	{ "junit", hx_report_junit },
	{ "tap", hx_report_tap },
	{ "html", hx_report_html },
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
