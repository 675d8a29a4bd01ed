/* jitunwind explain CASE WHERE: one sample's story. */
#ifndef HX_EXPLAIN_H
#define HX_EXPLAIN_H

#include <stdio.h>
#include "harness/run/runner.h"

/* Capture and replay the case, print every replay of sample point WHERE
 * ("tramp+0x7", "7", "callee"). 0; -EINVAL bad case (err), -ENOENT no such
 * sample point (err lists them), -ENOTSUP another arch's case. */
int hx_explain(FILE *out, const struct hx_opts *o, const char *path, const char *where, char *err,
	       size_t errlen);

#endif
