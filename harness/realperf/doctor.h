/* `jitunwind doctor`: what this machine's perf will do with JIT code (its
 * facts, the pitfalls of its generation the project knows, and a probe:
 * perf-check's record, inject and script of two CPython-shaped cases). */
#ifndef HX_DOCTOR_H
#define HX_DOCTOR_H

/* argv[0] is "doctor"; cases_dir: where the host arch's cases are (the
 * probe's cases are taken from it).  Exit codes: 0 all well, 1 a pitfall
 * applies (named), 2 bad usage (a --perf command that cannot be run),
 * 77 perf cannot work here (why). */
int hx_doctor_main(int argc, char **argv, const char *cases_dir);

#endif
