/* The columns a case's [expect] may name, as the case layer knows them: this
 * side's unwinders (unwinders/registry.c) and real perf's two columns.  The
 * case layer sits below the run, whose column table (harness/run/perfcol.c)
 * opens real perf; both take the perf columns' descriptions from the macros
 * here, and test_perfcol.c holds the two tables to each other. */
#ifndef HX_COLUMNS_H
#define HX_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>
#include "unwinders/unwind.h"

/* perf-fp is never on by default: a run under emulation finds this
 * machine's perf, which cannot unwind arm64 */
extern const char *const hx_col_no_arches[];

#define HX_COL_PERF_META \
	.name = "perf", \
	.about = "real perf (--perf CMD): perf inject -j + perf script over the case's samples as a perf.data", \
	.sees = UW_SEES_DUMP, .ref = UW_REF_EMULATION, \
	.default_arches = uw_arches_perf_cases,   /* where the cases carry perf's expectations */ \
	.quiet_why = true
#define HX_COL_PERF_FP_META \
	.name = "perf-fp", \
	.about = "real perf (--perf CMD), arm64 --call-graph fp with the LR record: perf script over the kernel's FP chain", \
	.sees = UW_SEES_WHOLE, .ref = UW_REF_EMULATION, .default_arches = hx_col_no_arches, .quiet_why = true

/* The column named name (NULL: none).  For real perf's columns a description
 * only: its probe says the run probes perf, its lib_version gives none; what
 * the case layer reads is whether they are set (machine-dependent, keyed by
 * perf's version). */
const struct uw_unwinder *hx_case_column(const char *name);
/* Comma-separated names: every column (arch NULL), or those every machine
 * runs by default on arch, as hx_column_list in the run's table. */
void hx_case_column_list(const char *arch, char *buf, size_t len);
/* its index in the run's column table (this side's unwinders in the
 * registry's order, then perf, perf-fp); -ENOENT for none */
int hx_case_column_index(const char *name);
/* how many columns the table has */
size_t hx_case_ncolumns(void);

#endif
