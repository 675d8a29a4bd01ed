/* lint's output (harness/report/lintout.c): each finding as text or JSON
 * (kept and written errors first, or streamed in file order), the rule
 * counts and the rule list; the `lint` command (harness/cli/lintcmd.c) parses
 * the options and walks the files through these. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwinders/lint/lint.h"
#include "harness/case/jsonw.h"
#include "harness/report/lintout.h"

/* ---- text output ---- */

const char *hx_lj_pname(const char *s, size_t n, char *buf, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap && i < 200; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
	}
	buf[o] = 0;
	return buf;
}


/* ---- lint ---- */

/* Findings of one file are kept and written errors first (then warnings,
 * infos; file order within a severity) unless --sort offset streams them. */
static void json_where(FILE *f, const struct lint_where *w)
{
	if (!w->load && !w->whole)
		return;
	fprintf(f, ", \"load\": %" PRIu64 ", \"code_offsets\": ", w->load);
	if (w->whole) {
		fputs("\"all\"", f);
		return;
	}
	fputc('[', f);
	bool spans = false;
	for (unsigned i = 0; i < w->npc; i++) {
		fprintf(f, "%s%" PRIu64, i ? ", " : "", w->pc[i]);
		spans |= w->span[i] != 0;
	}
	fputc(']', f);
	if (!spans)
		return;
	fputs(", \"code_spans\": [", f);
	for (unsigned i = 0; i < w->npc; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", w->span[i]);
	fputc(']', f);
}

static void write_finding(struct lint_out *o, const struct lint_finding *x)
{
	if (o->json) {
		fprintf(o->f, "%s\n        { \"id\": \"%s\", \"name\": \"%s\", \"severity\": \"%s\", \"offset\": %" PRIu64
			", \"message\": ", o->first ? "" : ",", x->rule->id, x->rule->name, lint_sev_name(x->rule->sev),
			x->offset);
		hx_jsonw_str(o->f, x->msg, HX_JSONW_LATIN1);
		fputs(", \"perf\": ", o->f);
		hx_jsonw_str(o->f, x->rule->perf, HX_JSONW_LATIN1);
		json_where(o->f, &x->where);
		if (x->where.load && x->func[0]) {
			fputs(", \"function\": ", o->f);
			hx_jsonw_str(o->f, x->func, HX_JSONW_LATIN1);
		}
		fputs(" }", o->f);
		o->first = false;
		return;
	}
	fprintf(o->f, "%s:0x%" PRIx64 ": %s: %s %s: %s\n    perf: %s\n", o->path, x->offset,
		lint_sev_name(x->rule->sev), x->rule->id, x->rule->name, x->msg, x->rule->perf);
}

void hx_lint_on_finding(const struct lint_finding *x, void *arg)
{
	struct lint_out *o = arg;
	if (x->rule->sev < o->min)
		return;
	if (o->by_offset || o->oom) {
		write_finding(o, x);
		return;
	}
	if (o->nkeep == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		struct lint_finding *k = realloc(o->keep, cap * sizeof(*k));
		if (!k) {
			/* out of memory: what is kept first, then the rest as it comes */
			for (size_t i = 0; i < o->nkeep; i++)
				write_finding(o, &o->keep[i]);
			o->nkeep = 0;
			o->oom = true;
			write_finding(o, x);
			return;
		}
		o->keep = k;
		o->cap = cap;
	}
	o->keep[o->nkeep++] = *x;
}

/* The kept findings, errors first, each severity in file order. */
void hx_lint_flush(struct lint_out *o)
{
	for (int sev = LINT_ERROR; sev >= LINT_INFO; sev--)
		for (size_t i = 0; i < o->nkeep; i++)
			if ((int)o->keep[i].rule->sev == sev)
				write_finding(o, &o->keep[i]);
	o->nkeep = 0;
}

/* "JD052 x3, JD038 x1": the rules that fired, in table order */
void hx_lint_rule_counts(FILE *f, const struct lint_summary *sum, bool json)
{
	bool first = true;
	for (size_t r = 0; r < LR__COUNT; r++) {
		if (!sum->per_rule[r])
			continue;
		if (json)
			fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", lint_rules[r].id, sum->per_rule[r]);
		else
			fprintf(f, "%s%s %s x%" PRIu64, first ? "" : ", ", lint_rules[r].id, lint_rules[r].name,
				sum->per_rule[r]);
		first = false;
	}
}

void hx_lint_list_rules(FILE *f, bool json)
{
	if (json)
		fputs("{ \"tool\": \"jitunwind\", \"command\": \"lint-rules\", \"schema\": 1, \"rules\": [", f);
	for (size_t i = 0; i < LR__COUNT; i++) {
		const struct lint_rule *r = &lint_rules[i];
		if (json) {
			fprintf(f, "%s\n  { \"id\": \"%s\", \"name\": \"%s\", \"severity\": \"%s\", \"perf\": ", i ? "," : "",
				r->id, r->name, lint_sev_name(r->sev));
			hx_jsonw_str(f, r->perf, HX_JSONW_LATIN1);
			fputs(" }", f);
		} else {
			fprintf(f, "%s %-22s %-7s %s\n", r->id, r->name, lint_sev_name(r->sev), r->perf);
		}
	}
	if (json)
		fputs("\n] }\n", f);
}
