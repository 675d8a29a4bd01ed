/* The terminal's case x unwinder matrix: two-letter verdict codes with a
 * legend, laid out to fit the terminal's width (one line per unwinder when
 * the columns do not fit), colours only on a tty without NO_COLOR; the
 * report vocabulary for --help; the progress line. */
#include "harness/report/report.h"
#include "harness/cli/version.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* verdict codes, by enum hx_verdict; the oracle's by consistent/inconsistent */
static const char *const vcode[] = { "ok", "tr", "sk", "wr", "du", "er" };

struct code {
	const char *code, *word;
};
static const struct code legend_codes[] = {
	{ "ok", "ok" }, { "tr", "truncated" }, { "sk", "skipped" }, { "wr", "wrong" },
	{ "du", "duplicate" }, { "er", "error" }, { "cs", "consistent" }, { "ic", "inconsistent" },
	{ "fb", "fallback" }, { "uf", "unfaithful" }, { "nl", "name-lost" },
};

bool hx_term_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");
	const char *term = getenv("TERM");
	if (nc && nc[0])
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fileno(f));
}

int hx_term_columns(FILE *f)
{
	const char *c = getenv("COLUMNS");
	if (c && *c) {
		char *end;
		long v = strtol(c, &end, 10);
		if (!*end && v >= 40 && v <= 1000)
			return (int)v;
	}
	struct winsize ws;
	if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
		return ws.ws_col;
	return 100;
}

static bool judges_emitted(const struct hx_uw_res *r)
{
	return r->uw && r->uw->ref == UW_REF_TRUTH;
}

/* "ok9 tr1 fb6 !2"; *used gets a bit per legend_codes entry shown; returns misses */
static int term_cell(const struct hx_case_res *c, int u, char *buf, size_t n, unsigned *used)
{
	int count[8] = { 0 }, fb = 0, bad = 0, unfaithful = 0, lost = 0;
	bool is_oracle = false, any = false;
	for (size_t i = 0; i < c->nsamples; i++) {
		if (u >= c->samples[i].nuw)
			continue;
		const struct hx_uw_res *r = &c->samples[i].uw[u];
		any = true;
		is_oracle = judges_emitted(r);
		count[r->j.v]++;
		fb += r->fallback;
		bad += !r->match;
		unfaithful += r->has_faithful && !r->faithful;
		lost += r->name_lost;
	}
	snprintf(buf, n, "-");
	if (!any)
		return 0;
	size_t len = 0;
	buf[0] = 0;
#define PUT(code, idx, k) do { if (k) { \
	len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s%d", len ? " " : "", code, k); \
	*used |= 1u << (idx); } } while (0)
	if (is_oracle) {
		int incons = 0;
		for (int v = 1; v < 6; v++)
			incons += count[v];
		PUT("cs", 6, count[0]);
		PUT("ic", 7, incons);
	} else {
		for (int v = 0; v < 6; v++)
			PUT(vcode[v], v, count[v]);
	}
	PUT("fb", 8, fb);
	PUT("uf", 9, unfaithful);
	PUT("nl", 10, lost);
#undef PUT
	if (bad && len < n)
		snprintf(buf + len, n - len, " !%d", bad);
	return bad;
}

static const char *result_word(const struct hx_case_res *c)
{
	return c->skipped ? "skip" : c->pass ? "met" : "MISSED";
}

static void put_result(FILE *out, const struct hx_case_res *c, int w, bool color)
{
	const char *word = result_word(c);
	const char *on = !color ? "" : c->skipped ? "\033[33m" : c->pass ? "\033[32m" : "\033[1;31m";
	fprintf(out, "%s%s%s%*s", on, word, color ? "\033[0m" : "", w - (int)strlen(word), "");
}

/* a cell padded to w, its "!N" in red on a colour terminal */
static void put_cell(FILE *out, const char *cell, int w, bool color)
{
	const char *bang = color ? strstr(cell, " !") : NULL;
	if (!bang && color && cell[0] == '!')
		bang = cell;
	if (bang)
		fprintf(out, "%.*s\033[1;31m%s\033[0m", (int)(bang - cell), cell, bang);
	else
		fputs(cell, out);
	fprintf(out, "%*s", w - (int)strlen(cell), "");
}

/* words wrapped at cols */
static void legend(FILE *out, unsigned used, bool any_miss, int cols)
{
	if (!used)
		return;
	fprintf(out, "\n[expect]: met = every sample met the case's [expect] (not: perf unwinds it).\n");
	int col = fprintf(out, "cells count samples:");
	for (size_t i = 0; i < sizeof(legend_codes) / sizeof(legend_codes[0]) + 1; i++) {
		char w[48];
		if (i < sizeof(legend_codes) / sizeof(legend_codes[0]) && (used & (1u << i)))
			snprintf(w, sizeof(w), "%s=%s", legend_codes[i].code, legend_codes[i].word);
		else if (i == sizeof(legend_codes) / sizeof(legend_codes[0]) && any_miss)
			snprintf(w, sizeof(w), "!N=N samples missed [expect]");
		else
			continue;
		if (col + 1 + (int)strlen(w) > cols) {
			fprintf(out, "\n ");
			col = 1;
		}
		col += fprintf(out, " %s", w);
	}
	fprintf(out, "\n(jitunwind run --help explains each word)\n");
}

#define CELL_LEN 96

void hx_term_matrix(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o)
{
	bool color = hx_term_color(out);
	int cols = hx_term_columns(out);
	int namew = 4, resw = 8, uww[HX_MAX_UW];
	unsigned used = 0;
	bool miss = false;
	char cell[CELL_LEN];
	for (int u = 0; u < o->nuw; u++)
		uww[u] = (int)strlen(o->unwinders[u]);
	for (size_t i = 0; i < n; i++) {
		int l = (int)strlen(cases[i].name);
		namew = l > namew ? l : namew;
		for (int u = 0; u < o->nuw; u++) {
			miss |= term_cell(&cases[i], u, cell, sizeof(cell), &used) > 0;
			l = (int)strlen(cell);
			uww[u] = l > uww[u] ? l : uww[u];
		}
	}
	if (namew > 32)
		namew = 32;
	int width = namew + 1 + resw;
	for (int u = 0; u < o->nuw; u++)
		width += 3 + uww[u];
	if (width <= cols) {
		fprintf(out, "%-*s %-*s", namew, "case", resw, "[expect]");
		for (int u = 0; u < o->nuw; u++)
			fprintf(out, " | %-*s", u == o->nuw - 1 ? 0 : uww[u], o->unwinders[u]);
		fprintf(out, "\n");
		for (size_t i = 0; i < n; i++) {
			fprintf(out, "%-*s ", namew, cases[i].name);
			put_result(out, &cases[i], resw, color);
			for (int u = 0; u < o->nuw; u++) {
				term_cell(&cases[i], u, cell, sizeof(cell), &used);
				fprintf(out, " | ");
				put_cell(out, cell, u == o->nuw - 1 ? (int)strlen(cell) : uww[u], color);
			}
			fprintf(out, "\n");
		}
	} else {
		/* one line per unwinder: the width is that of the widest cell */
		int unw = 4;
		for (int u = 0; u < o->nuw; u++)
			unw = (int)strlen(o->unwinders[u]) > unw ? (int)strlen(o->unwinders[u]) : unw;
		fprintf(out, "%-*s %-*s %-*s samples\n", namew, "case", resw, "[expect]", unw, "unwinder");
		for (size_t i = 0; i < n; i++) {
			const char *name = cases[i].name;
			if ((int)strlen(name) > namew) {
				fprintf(out, "%s\n", name);
				name = "";
			}
			for (int u = 0; u < o->nuw; u++) {
				term_cell(&cases[i], u, cell, sizeof(cell), &used);
				if (u == 0) {
					fprintf(out, "%-*s ", namew, name);
					put_result(out, &cases[i], resw, color);
				} else {
					fprintf(out, "%*s", namew + 1 + resw, "");
				}
				fprintf(out, " %-*s ", unw, o->unwinders[u]);
				put_cell(out, cell, (int)strlen(cell), color);
				fprintf(out, "\n");
			}
		}
	}
	legend(out, used, miss, cols);
}

/* "r6" in an unwinder's message as "r6 (bp)": DWARF numbers with perf's names */
void hx_term_regnames(const struct uw_arch *a, const char *in, char *out, size_t n)
{
	size_t o = 0;
	for (const char *p = in; *p && o + 1 < n; p++) {
		out[o++] = *p;
		bool word_start = p == in || !isalnum((unsigned char)p[-1]);
		if (!a || *p != 'r' || !word_start || !isdigit((unsigned char)p[1]))
			continue;
		char *end;
		long reg = strtol(p + 1, &end, 10);
		if (isalnum((unsigned char)*end) || reg < 0 || reg >= 40)
			continue;
		int perf = a->perf_of_dw[reg];
		const char *name = reg == a->dw_pc ? "return address" :
				   perf >= 0 && perf < UW_PERF_REGS ? a->perf_reg_names[perf] : NULL;
		for (p++; p < end && o + 1 < n; p++)
			out[o++] = *p;
		p--;
		if (name && o + 1 < n)
			o += (size_t)snprintf(out + o, n - o, " (%s)", name);
		if (o >= n)
			o = n - 1;
	}
	out[o] = 0;
}

void hx_vocab_print(FILE *f)
{
	fprintf(f,
		"Reading the report:\n"
		"  [expect] column: met = every sample met the case's [expect] block; it says the\n"
		"    harness agrees with the case, NOT that perf unwinds the code (read the cells).\n"
		"    MISSED = some sample did not; skip = the case cannot run here.\n"
		"  verdicts (an unwinder's chain against the true call chain, by address):\n"
		"    ok (ok)           every true frame, in order, nothing extra\n"
		"    truncated (tr)    a correct prefix, then the chain stops early\n"
		"    skipped (sk)      a true frame is missing, later frames are right\n"
		"    wrong (wr)        a frame that is not in the true chain\n"
		"    duplicate (du)    one frame reported twice\n"
		"    error (er)        no usable chain beyond the sampled ip\n"
		"    consistent (cs) / inconsistent (ic): the oracle, which follows the emitted CFI\n"
		"                      exactly, agrees / disagrees with the truth\n"
		"  flags:\n"
		"    fallback (fb)     a frame found without the emitted CFI (frame pointers, heuristics)\n"
		"    unfaithful (uf)   the unwinder's chain differs from what its own method predicts\n"
		"                      (the oracle's chain, or the FP convention): a bug in it or in us\n"
		"    name-lost (nl)    a JIT frame perf would print as [unknown]\n"
		"    !N                N samples of this cell did not meet [expect]\n"
		"  stop reasons (why a chain ended):\n"
		"    end               a zero return address or the end of the chain\n"
		"    no-unwind-info    no CFI covers the pc in perf's view\n"
		"    outside-snapshot  a read fell outside the copied stack and perf's maps\n"
		"    bad-unwind-info   the CFI could not be used (parse error, unknown register rule)\n"
		"    max-frames        the frame limit; no-progress: the CFA did not move\n"
		"    unwinder-error    the unwinder library failed\n"
		"  rN in messages is DWARF register N, shown with perf's name, e.g. r6 (bp), r7 (sp),\n"
		"    r16 (return address) on x86_64; r29 (x29), r30 (lr), r31 (sp) on aarch64.\n");
}

void hx_version_print(FILE *f)
{
	fprintf(f, "jitunwind %s (report schema %d)\n", HX_VERSION, HX_REPORT_SCHEMA);
}

/* "[3/27] name" on stderr, only on a tty and only once a second has passed */
void hx_progress(size_t i, size_t n, const char *name, double elapsed)
{
	static bool shown;
	if (!isatty(2))
		return;
	if (!name) {
		if (shown)
			fprintf(stderr, "\r\033[K");
		shown = false;
		return;
	}
	if (elapsed < 1.0)
		return;
	fprintf(stderr, "\r\033[K[%zu/%zu] %.60s", i + 1, n, name);
	shown = true;
}
