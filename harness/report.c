/* Terminal table (case x unwinder) with each failure spelled out, and the
 * JSON report, schema 1 (DESIGN, CONTRACT). */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static void cell(const struct hx_case_res *c, int u, char *buf, size_t n)
{
	/* most common verdict, then the others, '!' if any differs from [expect] */
	int count[8] = { 0 }, fb = 0, bad = 0, unfaithful = 0, lost = 0;
	const char *name = NULL;
	for (size_t i = 0; i < c->nsamples; i++) {
		const struct hx_uw_res *r = &c->samples[i].uw[u];
		name = r->name;
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
	bool is_oracle = !strcmp(name, "oracle");
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

void hx_report_table(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o)
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
	/* why chains end early: for each case and unwinder (not fp, whose walk
	 * has no reason to give), the first sample that is not ok, with the
	 * unwinder's stop reason */
	bool header = false;
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		for (int u = 0; u < o->nuw; u++) {
			if (!strcmp(o->unwinders[u], "fp"))
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
				bool is_oracle = !strcmp(r->name, "oracle");
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

static void jstr(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void jchain(FILE *f, const uint64_t *a, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s\"0x%llx\"", i ? "," : "", (unsigned long long)a[i]);
	fputc(']', f);
}

int hx_report_json(const char *path, const char *arch, const struct hx_case_res *cases,
		   size_t n, double seconds)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
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
			jchain(f, sr->truth, sr->nt);
			fprintf(f, ",\"unwinders\":{");
			for (int u = 0; u < sr->nuw; u++) {
				const struct hx_uw_res *r = &sr->uw[u];
				checks++;
				fprintf(f, "%s\"%s\":{\"verdict\":\"%s\",\"frames\":", u ? "," : "", r->name,
					hx_verdict_name(r->j.v));
				jchain(f, r->r.addr, r->r.n);
				if (r->has_faithful)
					fprintf(f, ",\"faithful\":%s", r->faithful ? "true" : "false");
				else
					fprintf(f, ",\"faithful\":null");
				fprintf(f, ",\"fallback\":%s", r->fallback ? "true" : "false");
				if (!strcmp(r->name, "oracle"))
					fprintf(f, ",\"consistent\":%s", r->consistent ? "true" : "false");
				fprintf(f, ",\"expected\":");
				if (r->expected[0])
					jstr(f, r->expected);
				else
					fprintf(f, "null");
				if (c->has_symbols && strcmp(r->name, "oracle")) {
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
	return fclose(f) ? -1 : 0;
}
