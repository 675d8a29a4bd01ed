/* Reports: a table of reporters (the terminal matrix, the JSON report,
 * schema 1, CONTRACT) over one run's results. */
#ifndef HX_REPORT_H
#define HX_REPORT_H

#include <stdio.h>
#include "harness/run/runner.h"

struct hx_report {
	const char *arch;                   /* the arch the samples were taken on */
	const struct hx_case_res *cases;
	size_t n;
	const struct hx_opts *o;
	double seconds;
};

struct hx_reporter {
	const char *name;                   /* "terminal", "json" */
	/* 0, or -errno */
	int (*write)(FILE *f, const struct hx_report *r);
};

const struct hx_reporter *hx_reporter_by_name(const char *name);
/* Write one report to path (NULL: stdout). 0, or -errno. */
int hx_report_write(const struct hx_reporter *rep, const char *path, const struct hx_report *r);

/* The terminal (harness/report/report_term.c): colours only on a tty without
 * NO_COLOR; the width from COLUMNS, else the tty's, else 100. */
bool hx_term_color(FILE *f);
int hx_term_columns(FILE *f);
void hx_term_matrix(FILE *out, const struct hx_case_res *cases, size_t n, const struct hx_opts *o);
/* a sample of the case's first profile and stack size (the matrix's cells count only
 * those; the others get rows of their own below it) */
bool hx_term_default_sample(const struct hx_case_res *c, const struct hx_sample_res *sr);
/* text wrapped at cols (at blanks; a longer word is cut), continuation lines indented */
void hx_term_wrap(FILE *out, const char *text, int cols, int indent);
/* the verdicts, flags and stop reasons, for --help */
void hx_vocab_print(FILE *f);
void hx_version_print(FILE *f);
/* a progress line on stderr (tty only, after a second); name NULL clears it */
void hx_progress(size_t i, size_t n, const char *name, double elapsed);

/* The other reporters, one file each (harness/report_<name>.c). */
int hx_report_junit(FILE *f, const struct hx_report *r);
int hx_report_tap(FILE *f, const struct hx_report *r);
int hx_report_html(FILE *f, const struct hx_report *r);
/* shared by them: XML-escaped text; the first sample of unwinder u that
 * missed [expect] (NULL: none) and how many did; one line saying how */
void hx_xml_str(FILE *f, const char *s);
const struct hx_sample_res *hx_first_miss(const struct hx_case_res *c, int u, int *nmiss);
void hx_miss_text(const struct hx_sample_res *sr, const struct hx_uw_res *r, char *buf, size_t n);

#endif
