/* Reports: a table of reporters (the terminal matrix, the JSON report,
 * schema 1, CONTRACT) over one run's results. */
#ifndef HX_REPORT_H
#define HX_REPORT_H

#include <stdio.h>
#include "runner.h"

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

#endif
