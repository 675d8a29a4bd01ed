/* `jitunwind bench` (make bench): capture cost, replay rates, the whole run,
 * fuzz-cfi's rate, lint throughput, each beside its target. */
#ifndef HX_BENCH_H
#define HX_BENCH_H

#include <stdbool.h>

#include "harness/outcome.h"

#define HX_BENCH_FUZZ_N "8192"   /* cases the fuzz-cfi figure evaluates: two batches of 4,096 (its workers live for one) */

/* The settings of one bench (the CLI fills them: harness/cli/benchcmd.c). */
struct hx_bench_opts {
	bool no_run, no_fuzz;
	const char *lint;            /* --lint DUMP, or NULL */
	char **paths;                /* the cases, none: cases/<arch> */
	int npaths;
};

/* 0 (out->kind clean: a missed target is reported, not failed), or a
 * negative errno when the cases cannot be loaded or captured or the work
 * directory cannot be removed (the message printed). */
int hx_bench_run(const struct hx_bench_opts *o, struct hx_cmd_outcome *out);

#endif
