/* Reports: the terminal matrix and the JSON report (schema 1, CONTRACT). */
#ifndef HX_REPORT_H
#define HX_REPORT_H

#include <stdio.h>
#include "runner.h"

void hx_report_table(FILE *out, const struct hx_case_res *cases, size_t n,
		     const struct hx_opts *o);
int hx_report_json(const char *path, const char *arch, const struct hx_case_res *cases,
		   size_t n, double seconds);

#endif
