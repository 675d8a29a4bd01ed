/* Terminal table (case x unwinder) with each failure spelled out, and the
 * JSON report, schema 1 (DESIGN, CONTRACT). */
#include "harness/report/report.h"
#include "harness/case/cfarow.h"
#include "harness/run/session.h"
#include "harness/case/jsonw.h"
#include "harness/version.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the oracle's chain is the emitted info's: its verdict is consistent/inconsistent */
static bool judges_emitted(const struct hx_uw_res *r)
{
	return r->uw && r->uw->ref == UW_REF_TRUTH;
}

/* "0x55..a2 (hx_call)" into a buffer */
static size_t addr_sym_s(char *b, size_t n, uint64_t a, const char *sym)
{
	int k = snprintf(b, n, "0x%llx%s%s%s", (unsigned long long)a, sym && sym[0] ? " (" : "",
			 sym && sym[0] ? sym : "", sym && sym[0] ? ")" : "");
	return k < 0 ? 0 : (size_t)k < n ? (size_t)k : n - 1;
}

/* why one unwinder's chain at one sample is not a clean ok: its verdict and
 * stop reason (rN named; an ok chain gives no stop reason, only its
 * fallback's), or for those with no reason to give (the FP walk) the first
 * frame missed */
static void why_text(const struct hx_sample_res *sr, const struct hx_uw_res *r, const struct uw_arch *arch,
		     char *b, size_t n)
{
	const struct uw_unwinder *uw = hx_column_by_name(r->name);
	const char *v = hx_verdict_name(r->j.v);
	char why[512];
	bool fbwhy = r->fallback && r->r.fallback_why[0];
	hx_term_regnames(arch, fbwhy ? r->r.fallback_why : r->r.why, why, sizeof(why));
	size_t k;
	if (fbwhy)
		k = (size_t)snprintf(b, n, "%s fallback: %s", v, why);
	else if ((uw && uw->quiet_why) || r->j.v == HX_OK)
		k = (size_t)snprintf(b, n, "%s%s", v, r->fallback ? " fallback" : "");
	else
		k = (size_t)snprintf(b, n, "%s%s: %s%s%s", v, r->fallback ? " fallback" : "",
				     uw_stop_name(r->r.stop), why[0] ? ", " : "", why);
	/* perf's memory changed the chain: say so before anything else it did */
	if (k < n && r->r.earlier_why[0])
		k += (size_t)snprintf(b + k, n - k, "; rules of an earlier load: %s", r->r.earlier_why);
	int t = r->j.diverge_truth;
	if (k < n && uw && uw->quiet_why && t >= 0 && t < sr->nt) {
		k += (size_t)snprintf(b + k, n - k, ": misses frame #%d ", t);
		if (k < n)
			addr_sym_s(b + k, n - k, sr->truth[t], sr->tsym[t]);
	}
}

struct why {
	const char *uw, *where;
	int ci;
	char text[640];
	bool shown;
};

/* the first sample per case and unwinder that is not a clean ok */
static size_t why_collect(const struct hx_case_res *cases, size_t n, const struct hx_opts *o,
			  const struct uw_arch *arch, struct why *w)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		for (int u = 0; u < o->nuw; u++) {
			for (size_t s = 0; s < c->nsamples; s++) {
				const struct hx_sample_res *sr = &c->samples[s];
				if (u >= sr->nuw)
					break;
				const struct hx_uw_res *r = &sr->uw[u];
				if ((r->j.v == HX_OK && !r->fallback) || !hx_term_default_sample(c, sr))
					continue;
				w[k] = (struct why){ r->name, sr->where, (int)i, "", false };
				why_text(sr, r, arch, w[k].text, sizeof(w[k].text));
				k++;
				break;
			}
		}
	}
	return k;
}

/* one line per reason and place: "fp at tramp+0x0 in 33 cases: skipped: ..."
 * and the cases named below it, wrapped at the terminal's width */
static void term_why(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o,
		     const struct uw_arch *arch)
{
	struct why *w = calloc(n * (size_t)o->nuw + 1, sizeof(*w));
	int cols = hx_term_columns(out);
	char line[1024];
	size_t nn = n * 72 + 8;
	char *names = malloc(nn);
	if (!w || !names) {
		free(w);
		free(names);
		return;
	}
	size_t nw = why_collect(cases, n, o, arch, w);
	if (nw)
		hx_term_wrap(out, "\nwhy (the first sample per case and unwinder that is not a clean ok, in the "
				  "case's first profile and stack size):", cols, 0);
	for (size_t i = 0; i < nw; i++) {
		if (w[i].shown)
			continue;
		size_t same = 0;
		for (size_t j = i; j < nw; j++)
			same += !strcmp(w[j].uw, w[i].uw) && !strcmp(w[j].where, w[i].where) &&
				!strcmp(w[j].text, w[i].text);
		if (same == 1)
			snprintf(line, sizeof(line), "  %s: %s at %s: %s", cases[w[i].ci].name, w[i].uw, w[i].where,
				 w[i].text);
		else
			snprintf(line, sizeof(line), "  %s at %s in %zu cases: %s", w[i].uw, w[i].where, same, w[i].text);
		hx_term_wrap(out, line, cols, 6);
		if (same == 1) {
			w[i].shown = true;
			continue;
		}
		size_t len = (size_t)snprintf(names, nn, "    ");
		for (size_t j = i; j < nw; j++) {
			if (w[j].shown || strcmp(w[j].uw, w[i].uw) || strcmp(w[j].where, w[i].where) ||
			    strcmp(w[j].text, w[i].text))
				continue;
			w[j].shown = true;
			if (len < nn)
				len += (size_t)snprintf(names + len, nn - len, "%s%s", len > 4 ? ", " : "",
							cases[w[j].ci].name);
		}
		hx_term_wrap(out, names, cols, 4);
	}
	free(names);
	free(w);
}

/* one sample's miss: "tramp+0x7 (ret) libunwind: expected truncated, got ok; ..." */
static void failure_text(const struct hx_sample_res *sr, const struct hx_uw_res *r, const struct uw_arch *arch,
			 char *b, size_t n)
{
	bool is_oracle = judges_emitted(r);
	const char *got = is_oracle ? (r->consistent ? "consistent" : "inconsistent") : hx_verdict_name(r->j.v);
	if (is_oracle && r->expected[0] && strcmp(r->expected, "consistent") && strcmp(r->expected, "inconsistent"))
		got = hx_verdict_name(r->j.v);
	size_t k = (size_t)snprintf(b, n, "  %s", sr->where);
#define ADD(...) do { if (k < n) k += (size_t)snprintf(b + k, n - k, __VA_ARGS__); } while (0)
	if (sr->stack_size != 8192)
		ADD(" [stack %d]", sr->stack_size);
	if (strcmp(sr->profile, "current"))
		ADD(" [perf %s]", sr->profile);
	if (sr->offset >= 0)
		ADD(" (%s)", sr->insn);
	ADD(" %s: expected %s, got %s", r->name, r->expected[0] ? r->expected : "(no expectation)", got);
	if (r->j.diverge_got >= 0) {
		int g = r->j.diverge_got, t = r->j.diverge_truth;
		ADD("; first divergent frame #%d: ", g);
		if (g < r->r.n && r->r.addr[g]) {
			ADD("got ");
			if (k < n)
				k += addr_sym_s(b + k, n - k, r->r.addr[g], g < r->nsym ? r->sym[g] : NULL);
		} else {
			char why[512];
			hx_term_regnames(arch, r->r.why, why, sizeof(why));
			ADD("chain ended (%s%s%s)", uw_stop_name(r->r.stop), why[0] ? ": " : "", why);
		}
		if (t >= 0 && t < sr->nt) {
			ADD(", truth ");
			if (k < n)
				k += addr_sym_s(b + k, n - k, sr->truth[t], sr->tsym[t]);
		}
	}
	if (r->fallback)
		ADD(" (fallback: found without the emitted CFI)");
	if (r->name_lost)
		ADD(" (JIT frame name lost)");
#undef ADD
}

/* every sample that missed its expectation, with the first divergent frame */
static void term_failures(FILE *out, const struct hx_case_res *cases, size_t n, const struct uw_arch *arch)
{
	int shown = 0, cols = hx_term_columns(out);
	char line[1536];
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		if (c->skipped) {
			snprintf(line, sizeof(line), "\nskip %s: %s", c->name, c->problem);
			hx_term_wrap(out, line, cols, 4);
			continue;
		}
		if (c->pass)
			continue;
		snprintf(line, sizeof(line), "\nFAIL %s (%s)", c->name, c->file);
		hx_term_wrap(out, line, cols, 4);
		if (c->problem[0]) {
			snprintf(line, sizeof(line), "  %s", c->problem);
			hx_term_wrap(out, line, cols, 4);
		}
		for (size_t s = 0; s < c->nsamples; s++) {
			const struct hx_sample_res *sr = &c->samples[s];
			for (int u = 0; u < sr->nuw; u++) {
				if (sr->uw[u].match)
					continue;
				if (++shown > 200) {
					if (shown == 201)
						fprintf(out, "  ... more failures in the JSON report\n");
					continue;
				}
				failure_text(sr, &sr->uw[u], arch, line, sizeof(line));
				hx_term_wrap(out, line, cols, 6);
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
	if (r->r.earlier_why[0]) {
		fprintf(f, ",\"earlier_load_rules\":");
		jstr(f, r->r.earlier_why);
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
	if (sr->truth_of)
		fprintf(f, ",\"truth_of\":\"%s\"", sr->truth_of);
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
