/* The names a case may give: the columns it keys expectations by (columns.h),
 * the host builds it samples under ([sample] host, case.h). */
#include "harness/case/columns.h"
#include "harness/case/case.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

const char *const hx_col_no_arches[] = { NULL };

/* real perf runs only where the run probes it (harness/run/perfcol.c) */
static int probed_by_run(char *why, size_t n)
{
	if (n)
		snprintf(why, n, "real perf is probed by the run, not the case layer");
	return -ENODEV;
}

static const char *no_version(void)
{
	return NULL;
}

static const struct uw_unwinder perf_meta = { HX_COL_PERF_META, .probe = probed_by_run, .lib_version = no_version };
static const struct uw_unwinder perf_fp_meta = { HX_COL_PERF_FP_META, .lib_version = no_version };
static const struct uw_unwinder *const perf_columns[] = { &perf_meta, &perf_fp_meta };
#define NPERF (sizeof(perf_columns) / sizeof(perf_columns[0]))

const struct uw_unwinder *hx_case_column(const char *name)
{
	const struct uw_unwinder *u = uw_unwinder_by_name(name);
	return u ? u : uw_table_find(perf_columns, NPERF, name);
}

void hx_case_column_list(const char *arch, char *buf, size_t len)
{
	char perf[64];
	uw_unwinder_list(arch, buf, len);
	uw_table_list(perf_columns, NPERF, arch, false, perf, sizeof(perf));
	size_t off = strlen(buf);
	if (perf[0] && off < len)
		snprintf(buf + off, len - off, "%s%s", off ? "," : "", perf);
}

int hx_case_column_index(const char *name)
{
	size_t n;
	const struct uw_unwinder *const *uws = uw_unwinders(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(uws[i]->name, name))
			return (int)i;
	for (size_t i = 0; i < NPERF; i++)
		if (!strcmp(perf_columns[i]->name, name))
			return (int)(n + i);
	return -ENOENT;
}

size_t hx_case_ncolumns(void)
{
	size_t n;
	uw_unwinders(&n);
	return n + NPERF;
}

const char hx_host_names[] = "fp, nofp, nofp-leaf";

int hx_host_parse(const char *name)
{
	static const char *const names[HX_HOST_N] = {
		[HX_HOST_FP] = "fp", [HX_HOST_NOFP] = "nofp", [HX_HOST_NOFP_LEAF] = "nofp-leaf",
	};
	for (int k = 0; k < HX_HOST_N; k++)
		if (!strcmp(name, names[k]))
			return k;
	return -EINVAL;
}
