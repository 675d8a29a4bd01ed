/* JUnit XML (run --junit FILE): a testsuite per case, a testcase per
 * unwinder, a failure with the first sample that missed [expect]; a case
 * that could not run is one skipped testcase, a capture problem an error.
 * The shape is checked against tests/junit.xsd with xmllint. */
#include "harness/report/report.h"

#include <errno.h>
#include <string.h>

/* XML 1.0 text or attribute value: markup escaped, control bytes as '?',
 * bytes >= 0x80 as character references (Latin-1: any byte string is valid) */
void hx_xml_str(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
		switch (*p) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default:
			if (*p >= 0x80)
				fprintf(f, "&#x%x;", *p);
			else if (*p < 0x20 && *p != '\n' && *p != '\t')
				fputc('?', f);
			else
				fputc(*p, f);
		}
	}
}

/* the first sample of unwinder u that missed [expect], or NULL */
const struct hx_sample_res *hx_first_miss(const struct hx_case_res *c, int u, int *nmiss)
{
	const struct hx_sample_res *first = NULL;
	*nmiss = 0;
	for (size_t s = 0; s < c->nsamples; s++) {
		const struct hx_sample_res *sr = &c->samples[s];
		if (u < sr->nuw && !sr->uw[u].match) {
			if (!first)
				first = sr;
			(*nmiss)++;
		}
	}
	return first;
}

/* "tramp+0x7 (offset 7: ret) [perf current, stack 8192]: expected ok, got truncated" */
void hx_miss_text(const struct hx_sample_res *sr, const struct hx_uw_res *r, char *buf, size_t n)
{
	const char *got = hx_verdict_name(r->j.v);
	if (r->uw && r->uw->ref == UW_REF_TRUTH)
		got = r->consistent ? "consistent" : "inconsistent";
	snprintf(buf, n, "%s (%s) [perf %s, stack %d]: expected %s, got %s%s%s%s", sr->where,
		 sr->insn, sr->profile, sr->stack_size, r->expected[0] ? r->expected : "(no expectation)",
		 got, r->fallback ? " fallback" : "", r->r.why[0] ? "; " : "", r->r.why);
}

static void chain(FILE *f, const char *label, const uint64_t *a, int n, char (*sym)[HX_SYM_LEN], int nsym)
{
	fprintf(f, "%s:", label);
	for (int i = 0; i < n; i++) {
		fprintf(f, " 0x%llx", (unsigned long long)a[i]);
		if (sym && i < nsym && sym[i][0]) {
			fputs(" (", f);
			hx_xml_str(f, sym[i]);
			fputc(')', f);
		}
	}
	fputc('\n', f);
}

static void junit_case(FILE *f, const struct hx_case_res *c, const struct hx_opts *o)
{
	int fails = 0, nmiss;
	for (int u = 0; u < o->nuw; u++)
		fails += hx_first_miss(c, u, &nmiss) != NULL;
	bool err = c->problem[0] && !c->skipped;
	fprintf(f, " <testsuite name=\"");
	hx_xml_str(f, c->name);
	fprintf(f, "\" tests=\"%d\" failures=\"%d\" errors=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
		c->skipped ? 1 : o->nuw + err, fails, err, c->skipped, c->seconds);
	fprintf(f, "  <properties><property name=\"file\" value=\"");
	hx_xml_str(f, c->file);
	fprintf(f, "\"/><property name=\"about\" value=\"");
	hx_xml_str(f, c->about);
	fprintf(f, "\"/></properties>\n");
	if (c->skipped || err) {
		fprintf(f, "  <testcase classname=\"jitunwind.");
		hx_xml_str(f, c->name);
		fprintf(f, "\" name=\"case\" time=\"0\">\n   <%s message=\"", c->skipped ? "skipped" : "error");
		hx_xml_str(f, c->problem);
		fprintf(f, "\"/>\n  </testcase>\n");
	}
	for (int u = 0; !c->skipped && u < o->nuw; u++) {
		fprintf(f, "  <testcase classname=\"jitunwind.");
		hx_xml_str(f, c->name);
		fprintf(f, "\" name=\"");
		hx_xml_str(f, o->unwinders[u]);
		fprintf(f, "\" time=\"0\"");
		const struct hx_sample_res *sr = hx_first_miss(c, u, &nmiss);
		if (!sr) {
			fprintf(f, "/>\n");
			continue;
		}
		const struct hx_uw_res *r = &sr->uw[u];
		char msg[1024];
		hx_miss_text(sr, r, msg, sizeof(msg));
		fprintf(f, ">\n   <failure type=\"expectation\" message=\"");
		hx_xml_str(f, msg);
		fprintf(f, "\">%d sample(s) missed [expect]; the first:\n", nmiss);
		hx_xml_str(f, msg);
		fputc('\n', f);
		chain(f, "truth", sr->truth, sr->nt, (char (*)[HX_SYM_LEN])sr->tsym, sr->nt);
		chain(f, "got", r->r.addr, r->r.n, (char (*)[HX_SYM_LEN])r->sym, r->nsym);
		fprintf(f, "</failure>\n  </testcase>\n");
	}
	fprintf(f, " </testsuite>\n");
}

int hx_report_junit(FILE *f, const struct hx_report *rp)
{
	size_t tests = 0, failures = 0, errors = 0, skipped = 0;
	for (size_t i = 0; i < rp->n; i++) {
		const struct hx_case_res *c = &rp->cases[i];
		int nmiss;
		if (c->skipped) {
			tests++, skipped++;
			continue;
		}
		tests += (size_t)rp->o->nuw;
		if (c->problem[0])
			tests++, errors++;
		for (int u = 0; u < rp->o->nuw; u++)
			failures += hx_first_miss(c, u, &nmiss) != NULL;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<testsuites name=\"jitunwind ");
	hx_xml_str(f, rp->arch);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\" time=\"%.3f\">\n",
		tests, failures, errors, skipped, rp->seconds);
	for (size_t i = 0; i < rp->n; i++)
		junit_case(f, &rp->cases[i], rp->o);
	fprintf(f, "</testsuites>\n");
	return ferror(f) ? -EIO : 0;
}
