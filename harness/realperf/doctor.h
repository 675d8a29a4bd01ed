/* `jitunwind doctor`: what this machine's perf will do with JIT code (its
 * facts, the pitfalls of its generation the project knows, and a probe:
 * perf-check's record, inject and script of two CPython-shaped cases). */
#ifndef HX_DOCTOR_H
#define HX_DOCTOR_H

#include <stdbool.h>

/* The settings of one doctor run (the CLI fills them: harness/cli/realperfcmd.c). */
struct hx_doctor_opts {
	const char *perf_cmd;       /* the perf to ask, NULL: perf on PATH */
	const char *json;           /* write the report as JSON there, or NULL */
	const char *dump_dir;       /* where the JIT writes jit-<pid>.dump */
	bool probe;                 /* record the probe's cases (else facts and pitfalls only) */
	const char *cases_dir;      /* where the host arch's cases are (the probe's are taken from it) */
};

/* 0 all well, 1 a pitfall applies (named), 2 a --perf command that cannot
 * be run, 77 perf cannot work here (why). */
int hx_doctor_run(const struct hx_doctor_opts *o);

#endif
