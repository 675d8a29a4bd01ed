/* `jitunwind doctor`: what this machine's perf will do with JIT code (its
 * facts, the pitfalls of its generation the project knows, and a probe:
 * perf-check's record, inject and script of two CPython-shaped cases). */
#ifndef HX_DOCTOR_H
#define HX_DOCTOR_H

#include <stdbool.h>

#include "harness/outcome.h"

/* The settings of one doctor run (the CLI fills them: harness/cli/realperfcmd.c). */
struct hx_doctor_opts {
	const char *perf_cmd;       /* the perf to ask, NULL: perf on PATH */
	const char *json;           /* write the report as JSON there, or NULL */
	const char *dump_dir;       /* where the JIT writes jit-<pid>.dump */
	bool probe;                 /* record the probe's cases (else facts and pitfalls only) */
	const char *cases_dir;      /* where the host arch's cases are (the probe's are taken from it) */
	const int *exit_codes;      /* the CLI's exit code of each enum hx_cmd_kind (the report names it) */
};

/* 0 with out->kind clean (all well), findings (a pitfall applies, named)
 * or cannot-run (perf cannot work here, why); a negative errno for a --perf
 * command that cannot be run or a failed write (the message printed). */
int hx_doctor_run(const struct hx_doctor_opts *o, struct hx_cmd_outcome *out);

#endif
