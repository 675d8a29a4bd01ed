/* TAP version 13 (run --tap, on stdout instead of the matrix): one test
 * point per case and unwinder, "not ok" when a sample missed [expect], with
 * the first such sample as diagnostics; a case that cannot run is one
 * "# SKIP" point, a capture problem one "not ok". */
#include "harness/report/report.h"

#include <errno.h>
#include <string.h>

/* a description on one line, without '#' (TAP's directive marker) */
static void tap_text(FILE *f, const char *s)
{
	for (; s && *s; s++)
		fputc(*s == '#' ? '_' : (*s == '\n' || *s == '\r') ? ' ' : *s, f);
}

static size_t tap_points(const struct hx_report *rp)
{
	size_t n = 0;
	for (size_t i = 0; i < rp->n; i++) {
		const struct hx_case_res *c = &rp->cases[i];
		n += c->skipped ? 1 : (size_t)rp->o->nuw + (c->problem[0] != 0);
	}
	return n;
}

int hx_report_tap(FILE *f, const struct hx_report *rp)
{
	size_t k = 0;
	fprintf(f, "TAP version 13\n1..%zu\n", tap_points(rp));
	for (size_t i = 0; i < rp->n; i++) {
		const struct hx_case_res *c = &rp->cases[i];
		if (c->skipped || c->problem[0]) {
			fprintf(f, "%s %zu - ", c->skipped ? "ok" : "not ok", ++k);
			tap_text(f, c->name);
			fprintf(f, c->skipped ? " # SKIP " : "\n# ");
			tap_text(f, c->problem);
			fputc('\n', f);
			if (c->skipped)
				continue;
		}
		for (int u = 0; u < rp->o->nuw; u++) {
			int nmiss;
			const struct hx_sample_res *sr = hx_first_miss(c, u, &nmiss);
			fprintf(f, "%s %zu - ", sr ? "not ok" : "ok", ++k);
			tap_text(f, c->name);
			fprintf(f, " %s met [expect]\n", rp->o->unwinders[u]);
			if (!sr)
				continue;
			char msg[1024];
			hx_miss_text(sr, &sr->uw[u], msg, sizeof(msg));
			fprintf(f, "# %d sample(s) missed; the first: ", nmiss);
			tap_text(f, msg);
			fputc('\n', f);
		}
	}
	return ferror(f) ? -EIO : 0;
}
