/* The terminal's case x unwinder matrix: two-letter verdict codes with a
 * legend, laid out to fit the terminal's width (a cell's words wrap within
 * its column; one line per unwinder only when even that does not fit), the
 * cells counting each case's first profile and stack size (the others in a
 * table of their own), colours only on a tty without NO_COLOR; text wrapped
 * at the width; the report vocabulary for --help; the progress line. */
#include "harness/report/report.h"
#include "harness/version.h"
#include "harness/case/say.h"

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

#define CELL_LEN 96

/* a row of the matrix: a case under its default profile and stack size
 * (prof NULL), or under one other profile and stack size */
struct mrow {
	const struct hx_case_res *c;
	const char *prof;
	int stack;
};

bool hx_term_default_sample(const struct hx_case_res *c, const struct hx_sample_res *sr)
{
	return !strcmp(sr->profile, c->profile) && sr->stack_size == c->samples[0].stack_size;
}

static bool row_has(const struct mrow *row, const struct hx_sample_res *sr)
{
	if (!row->prof)
		return hx_term_default_sample(row->c, sr);
	return !strcmp(sr->profile, row->prof) && sr->stack_size == row->stack;
}

/* "ok9 tr1 fb6 !2"; *used gets a bit per legend_codes entry shown; returns misses */
static int term_cell(const struct mrow *row, int u, char *buf, size_t n, unsigned *used)
{
	const struct hx_case_res *c = row->c;
	int count[8] = { 0 }, fb = 0, bad = 0, unfaithful = 0, lost = 0;
	bool is_oracle = false, any = false;
	for (size_t i = 0; i < c->nsamples; i++) {
		if (u >= c->samples[i].nuw || !row_has(row, &c->samples[i]))
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

static const char *row_result(const struct mrow *row)
{
	const struct hx_case_res *c = row->c;
	if (c->skipped)
		return "skip";
	if (!row->prof)
		return c->pass ? "met" : "MISSED";
	for (size_t i = 0; i < c->nsamples; i++)
		for (int u = 0; u < c->samples[i].nuw && row_has(row, &c->samples[i]); u++)
			if (!c->samples[i].uw[u].match)
				return "MISSED";
	return "met";
}

/* the row's label: the case's name, or "  perf v6.1, stack 65528" under it */
static void row_label(const struct mrow *row, char *buf, size_t n)
{
	if (!row->prof) {
		snprintf(buf, n, "%s", row->c->name);
		return;
	}
	bool prof = strcmp(row->prof, row->c->profile) != 0;
	bool stack = row->stack != row->c->samples[0].stack_size;
	snprintf(buf, n, "  %s%s%s%.0d", prof ? "perf " : "", prof ? row->prof : "",
		 prof && stack ? ", stack " : stack ? "stack " : "", stack ? row->stack : 0);
}

/* a result word or a cell's text appended to a line, padded to w unless last;
 * on a colour terminal the result coloured and a cell's "!N" in red */
static size_t put_word(char *line, size_t len, size_t n, const char *text, int w, bool color, bool last)
{
	const char *on = "", *bang = NULL;
	if (color && (!strcmp(text, "met") || !strcmp(text, "MISSED") || !strcmp(text, "skip")))
		on = text[0] == 's' ? "\033[33m" : text[0] == 'm' ? "\033[32m" : "\033[1;31m";
	else if (color)
		bang = text[0] == '!' ? text : strstr(text, " !");
	int pre = bang ? (int)(bang - text) : 0;
	if (on[0])
		len += (size_t)snprintf(line + len, len < n ? n - len : 0, "%s%s\033[0m", on, text);
	else if (bang)
		len += (size_t)snprintf(line + len, len < n ? n - len : 0, "%.*s\033[1;31m%s\033[0m", pre, text, bang);
	else
		len += (size_t)snprintf(line + len, len < n ? n - len : 0, "%s", text);
	if (!last)
		len += (size_t)snprintf(line + len, len < n ? n - len : 0, "%*s", w - (int)strlen(text), "");
	return len < n ? len : n - 1;
}

/* line k of a cell's words wrapped at w (words are never longer than w) */
static bool cell_line(const char *cell, int w, int k, char *out, size_t n)
{
	int line = 0;
	size_t len = 0;
	out[0] = 0;
	for (const char *p = cell; *p; ) {
		while (*p == ' ')
			p++;
		size_t wl = strcspn(p, " ");
		if (!wl)
			break;
		if (len && (int)(len + 1 + wl) > w) {
			line++;
			len = 0;
		}
		if (line == k && len + 1 + wl < n) {
			len += (size_t)snprintf(out + len, n - len, "%s%.*s", len ? " " : "", (int)wl, p);
		} else if (line > k) {
			break;
		} else {
			len += (len ? 1 : 0) + wl;
		}
		p += wl;
	}
	return line >= k;
}

struct layout {
	int namew, resw, w[HX_MAX_UW];
};

static int lay_width(const struct layout *l, int nuw)
{
	int t = l->namew + 1 + l->resw;
	for (int u = 0; u < nuw; u++)
		t += 3 + l->w[u];
	return t;
}

static int longest_word(const char *s)
{
	int m = 0;
	for (const char *p = s; *p; ) {
		int l = (int)strcspn(p, " ");
		m = l > m ? l : m;
		p += l;
		p += *p == ' ';
	}
	return m;
}

/* columns that fit cols: each cell as wide as its text, then the widest
 * narrowed (their words wrap onto more lines), then long names on their own
 * line; false when even that does not fit */
static bool layout(const struct mrow *rows, size_t nrows, const struct hx_opts *o, int cols,
		   struct layout *l, unsigned *used, bool *miss)
{
	int minw[HX_MAX_UW];
	char cell[CELL_LEN], label[96];
	l->namew = 4;
	l->resw = 8;
	for (int u = 0; u < o->nuw; u++)
		l->w[u] = minw[u] = (int)strlen(o->unwinders[u]);
	for (size_t i = 0; i < nrows; i++) {
		row_label(&rows[i], label, sizeof(label));
		l->namew = (int)strlen(label) > l->namew ? (int)strlen(label) : l->namew;
		for (int u = 0; u < o->nuw; u++) {
			*miss |= term_cell(&rows[i], u, cell, sizeof(cell), used) > 0;
			int len = (int)strlen(cell), wl = longest_word(cell);
			l->w[u] = len > l->w[u] ? len : l->w[u];
			minw[u] = wl > minw[u] ? wl : minw[u];
		}
	}
	if (l->namew > 32)
		l->namew = 32;
	for (int guard = 0; lay_width(l, o->nuw) > cols && guard < 100 * HX_MAX_UW; guard++) {
		int best = -1;
		for (int u = 0; u < o->nuw; u++)
			if (l->w[u] > minw[u] && (best < 0 || l->w[u] - minw[u] > l->w[best] - minw[best]))
				best = u;
		if (best < 0)
			break;
		l->w[best]--;
	}
	int over = lay_width(l, o->nuw) - cols;
	if (over > 0 && l->namew - over >= 12)
		l->namew -= over;
	return lay_width(l, o->nuw) <= cols;
}

static void put_line(FILE *out, char *line, size_t len)
{
	while (len && line[len - 1] == ' ')
		len--;
	line[len] = 0;
	fprintf(out, "%s\n", line);
}

/* one row: its cells' words wrapped within their columns */
static void table_row(FILE *out, const struct mrow *row, const struct hx_opts *o, const struct layout *l,
		      bool color, unsigned *used)
{
	char cells[HX_MAX_UW][CELL_LEN], part[CELL_LEN], label[96], line[2048];
	row_label(row, label, sizeof(label));
	if ((int)strlen(label) > l->namew) {
		fprintf(out, "%s\n", label);
		label[0] = 0;
	}
	for (int u = 0; u < o->nuw; u++)
		term_cell(row, u, cells[u], sizeof(cells[u]), used);
	for (int k = 0; k < 8; k++) {
		bool more = false;
		size_t len = (size_t)snprintf(line, sizeof(line), "%-*s ", l->namew, k ? "" : label);
		len = put_word(line, len, sizeof(line), k ? "" : row_result(row), l->resw, color, false);
		for (int u = 0; u < o->nuw; u++) {
			more |= cell_line(cells[u], l->w[u], k, part, sizeof(part));
			len += (size_t)snprintf(line + len, sizeof(line) - len, " | ");
			len = put_word(line, len, sizeof(line), part, l->w[u], color, u == o->nuw - 1);
		}
		if (!more)
			break;
		put_line(out, line, len);
	}
}

static void table_head(FILE *out, const struct hx_opts *o, const struct layout *l)
{
	char line[2048];
	size_t len = (size_t)snprintf(line, sizeof(line), "%-*s %-*s", l->namew, "case", l->resw, "[expect]");
	for (int u = 0; u < o->nuw && len < sizeof(line); u++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " | %-*s", l->w[u], o->unwinders[u]);
	put_line(out, line, len < sizeof(line) ? len : sizeof(line) - 1);
}

/* one line per unwinder, for a terminal too narrow for the columns */
static void per_unwinder(FILE *out, const struct mrow *rows, size_t nrows, const struct hx_opts *o,
			 bool color, unsigned *used)
{
	int unw = 8, namew = 4;
	char cell[CELL_LEN], label[96], line[2048];
	for (int u = 0; u < o->nuw; u++)
		unw = (int)strlen(o->unwinders[u]) > unw ? (int)strlen(o->unwinders[u]) : unw;
	fprintf(out, "%-*s %-8s %-*s samples\n", namew, "case", "[expect]", unw, "unwinder");
	for (size_t i = 0; i < nrows; i++) {
		row_label(&rows[i], label, sizeof(label));
		fprintf(out, "%s\n", label);
		for (int u = 0; u < o->nuw; u++) {
			term_cell(&rows[i], u, cell, sizeof(cell), used);
			size_t len = (size_t)snprintf(line, sizeof(line), "%-*s ", namew, "");
			len = put_word(line, len, sizeof(line), u ? "" : row_result(&rows[i]), 8, color, false);
			len += (size_t)snprintf(line + len, sizeof(line) - len, " %-*s ", unw, o->unwinders[u]);
			len = put_word(line, len, sizeof(line), cell, 0, color, true);
			put_line(out, line, len);
		}
	}
}

static void table(FILE *out, const struct mrow *rows, size_t nrows, const struct hx_opts *o, int cols,
		  unsigned *used, bool *miss)
{
	bool color = hx_term_color(out);
	struct layout l;
	if (!layout(rows, nrows, o, cols, &l, used, miss)) {
		per_unwinder(out, rows, nrows, o, color, used);
		return;
	}
	table_head(out, o, &l);
	const struct hx_case_res *last = NULL;
	for (size_t i = 0; i < nrows; i++) {
		if (rows[i].prof && rows[i].c != last)
			fprintf(out, "%s\n", rows[i].c->name);
		last = rows[i].c;
		table_row(out, &rows[i], o, &l, color, used);
	}
}

/* the rows of the other profiles and stack sizes of the cases that have them */
static size_t other_rows(const struct hx_case_res *cases, size_t n, struct mrow *rows, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const struct hx_case_res *c = &cases[i];
		for (size_t s = 0; s < c->nsamples && k < max; s++) {
			const struct hx_sample_res *sr = &c->samples[s];
			bool seen = hx_term_default_sample(c, sr);
			for (size_t j = 0; j < k && !seen; j++)
				seen = rows[j].c == c && !strcmp(rows[j].prof, sr->profile) && rows[j].stack == sr->stack_size;
			if (!seen)
				rows[k++] = (struct mrow){ c, sr->profile, sr->stack_size };
		}
	}
	return k;
}

/* words wrapped at cols */
static void legend(FILE *out, unsigned used, bool any_miss, int cols)
{
	if (!used)
		return;
	hx_term_wrap(out, "\n[expect]: met = every sample met the case's [expect] (not: perf unwinds it).", cols, 0);
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

void hx_term_matrix(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o)
{
	int cols = hx_term_columns(out);
	unsigned used = 0;
	bool miss = false;
	struct mrow *rows = calloc(n ? n : 1, sizeof(*rows));
	struct mrow other[64];
	if (!rows) {
		fprintf(out, "(no memory for the matrix)\n");
		return;
	}
	for (size_t i = 0; i < n; i++)
		rows[i] = (struct mrow){ &cases[i], NULL, 0 };
	table(out, rows, n, o, cols, &used, &miss);
	size_t nother = other_rows(cases, n, other, sizeof(other) / sizeof(other[0]));
	if (nother) {
		hx_term_wrap(out, "\nthe same cases under their other perf profiles and stack sizes (above: "
				  "each case's first):", cols, 0);
		table(out, other, nother, o, cols, &used, &miss);
	}
	free(rows);
	legend(out, used, miss, cols);
}

void hx_term_wrap(FILE *out, const char *text, int cols, int indent)
{
	int col = 0;
	if (indent > cols / 2)
		indent = cols / 2;
	for (const char *p = text; *p; ) {
		size_t lead = strspn(p, " ");
		size_t wl = strcspn(p + lead, " \n");
		if (p[lead] == '\n') {
			fputc('\n', out);
			col = 0;
			p += lead + 1;
			continue;
		}
		if (!wl)
			break;
		if (col > indent && col + (int)lead + (int)wl > cols) {
			fprintf(out, "\n%*s", indent, "");
			col = indent;
			lead = 0;
		}
		col += fprintf(out, "%*s", (int)lead, "");
		p += strspn(p, " ");
		/* a word longer than the line: cut where the line ends */
		for (int guard = 0; col + (int)wl > cols && col < cols && guard < 1000; guard++) {
			int part = cols - col;
			fprintf(out, "%.*s\n%*s", part, p, indent, "");
			p += part;
			wl -= (size_t)part;
			col = indent;
		}
		col += fprintf(out, "%.*s", (int)wl, p);
		p += wl;
	}
	fputc('\n', out);
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

/* "[3/27] name", the sink's progress line: only when stderr is a tty, once a second has passed */
void hx_progress(size_t i, size_t n, const char *name, double elapsed)
{
	static bool shown;
	if (!isatty(2))
		return;
	if (!name) {
		if (shown)
			ju_say(JU_SAY_PROGRESS, NULL, "%s", "");
		shown = false;
		return;
	}
	if (elapsed < 1.0)
		return;
	ju_say(JU_SAY_PROGRESS, NULL, "[%zu/%zu] %.60s", i + 1, n, name);
	shown = true;
}
