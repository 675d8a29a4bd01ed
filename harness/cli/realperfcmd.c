/* `jitunwind perf-check` and `jitunwind doctor`: their option tables
 * (opts.h) and the runs of harness/realperf. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "harness/cli/cmds.h"
#include "harness/run/runcases.h"
#include "harness/realperf/doctor.h"
#include "harness/realperf/perfcheck.h"
#include "harness/run/session.h"
#include "unwinders/unwind.h"

#define PK_OFF(f) offsetof(struct pk_opts, f)

static int set_modes(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	static const char *const names[PK_NMODES] = { [PK_DWARF] = "dwarf", [PK_FP] = "fp" };
	struct pk_opts *k = s;
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", arg);
	k->mode_on[PK_DWARF] = k->mode_on[PK_FP] = false;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int m = 0;
		while (m < PK_NMODES && strcmp(t, names[m]))
			m++;
		if (m == PK_NMODES)
			break;
		k->mode_on[m] = true;
	}
	if (strlen(arg) >= sizeof(buf) || !(k->mode_on[PK_DWARF] || k->mode_on[PK_FP]) ||
	    strspn(arg, "dwarfp,") != strlen(arg) || strstr(arg, ",,")) {
		snprintf(why, wl, "expected dwarf, fp or dwarf,fp, got '%s'", arg);
		return -EINVAL;
	}
	return 0;
}

static int set_pk_profile(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	((struct pk_opts *)s)->profile_set = true;
	return cli_set_profile(s, o, arg, why, wl);
}

static int set_emulation(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	if (!hx_column_by_name(arg)) {
		snprintf(why, wl, "no such unwinder, got '%s'", arg);
		return -ENOENT;
	}
	return cli_set_str(s, o, arg, why, wl);
}

static const struct cli_opt perfcheck_opts[] = {
	{ "json", 0, "FILE", "write the report as JSON", .set = cli_set_str, .off = PK_OFF(json), .example = "/dev/null" },
	{ "perf", 0, "CMD", "the perf to run", .def_text = "perf on PATH", .set = cli_set_str, .off = PK_OFF(perf_cmd),
	  .example = "perf" },
	{ "modes", 0, "LIST", "dwarf, fp or both", .def = "dwarf,fp", .set = set_modes },
	{ "stack-size", 0, "BYTES", "DWARF dump size (perf --call-graph dwarf,BYTES)", .def = "8192", .set = cli_set_int,
	  .off = PK_OFF(stack_size), .lo = 8, .hi = 65528 },
	{ "spin-us", 0, "N", "CPU time the child spins at each point", .def = "500", .set = cli_set_int,
	  .off = PK_OFF(spin_us), .lo = 100, .hi = 100000 },
	{ "period-us", 0, "N", "cpu-clock sample period", .def = "100", .set = cli_set_int, .off = PK_OFF(period_us),
	  .lo = 10, .hi = 10000 },
	{ "min-agreement", 0, "PCT", "agreement with the emulation each mode needs", .def = "99",
	  .set = cli_set_double, .off = PK_OFF(min_agree), .lo = 0, .hi = 100 },
	{ "perf-profile", 0, "P", "the emulation's perf profile", .def_text = "current for perf >= 6, else 5.x-0x40",
	  .set = set_pk_profile, .off = PK_OFF(profile), .example = "v6.1" },
	{ "emulation", 0, "U", "dwarf mode's emulation", .def_text = "the perf build's engine, libunwind or libdw",
	  .set = set_emulation, .off = PK_OFF(emulation), .example = "libdw" },
	{ "jitdump-dir", 0, "DIR", "where the cases write their jitdumps (as CPython)", .def = "/tmp",
	  .set = cli_set_str, .off = PK_OFF(dump_dir) },
	{ 0 },
};

static void perfcheck_tail(FILE *f)
{
	fprintf(f, "exit: 0 every point sampled and agreement reached, 1 not, 2 bad usage or input,\n"
		   "      77 no perf or perf_event_open refused\n");
}

static int cmd_perfcheck(int argc, char **argv);
static const char *const perfcheck_forms[] = { "[OPTIONS] [PATH...]", NULL };

const struct cli_cmd cli_perfcheck = {
	.name = "perf-check", .summary = "perf record the cases at every sample point, judge perf against its emulation",
	.forms = perfcheck_forms, .opts = perfcheck_opts, .main = cmd_perfcheck, .tail = perfcheck_tail,
	.max_operands = -1,
	.about = "  perf record the cases (default cases/<host arch>) while the capture spins at every sample\n"
		 "  point, in --call-graph dwarf and fp mode; perf inject -j, perf script; judge every perf\n"
		 "  sample at a spin point against the truth and against jitunwind's emulation of that perf.\n",
};

static int cmd_perfcheck(int argc, char **argv)
{
	struct pk_opts o = { 0 };
	int first, rc = cli_parse(&cli_perfcheck, argc, argv, &o, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	o.paths = argv + first;
	o.npaths = argc - first;
	struct hx_cmd_outcome out;
	return cli_exit_code(hx_perfcheck_run(&o, &out), &out);
}

#define DR_OFF(f) offsetof(struct hx_doctor_opts, f)

static const struct cli_opt doctor_opts[] = {
	{ "perf", 0, "CMD", "the perf to ask (may carry arguments)", .def_text = "perf on PATH", .set = cli_set_str,
	  .off = DR_OFF(perf_cmd), .example = "perf" },
	{ "json", 0, "FILE", "write the facts, pitfalls and probe as JSON", .set = cli_set_str, .off = DR_OFF(json),
	  .example = "/dev/null" },
	{ "jitdump-dir", 0, "DIR", "where the JIT writes jit-<pid>.dump (as CPython)", .def = "/tmp",
	  .set = cli_set_str, .off = DR_OFF(dump_dir) },
	{ "no-probe", 0, NULL, "facts and pitfalls only (no perf record of the cases)", .set = cli_set_false,
	  .off = DR_OFF(probe) },
	{ 0 },
};

static void doctor_tail(FILE *f)
{
	fprintf(f, "exit: 0 all well, 1 a pitfall applies (named), 2 bad usage (a --perf command that\n"
		   "      cannot be run), 77 perf cannot work here (why)\n");
}

static int cmd_doctor(int argc, char **argv);
static const char *const doctor_forms[] = { "[OPTIONS]", NULL };

const struct cli_cmd cli_doctor = {
	.name = "doctor", .summary = "what this machine's perf will do with JIT code: facts, pitfalls, a probe",
	.forms = doctor_forms, .opts = doctor_opts, .main = cmd_doctor, .tail = doctor_tail,
	.about = "  What this machine's perf will do with JIT code.  Facts, each with how it was found:\n"
		 "  perf's version and DWARF engine (perf version --build-options), whether\n"
		 "  perf_event_open works (kernel.perf_event_paranoid, CAP_PERFMON/CAP_SYS_ADMIN,\n"
		 "  container), the jitdump directory (writable, noexec: a JIT's PROT_EXEC marker mmap\n"
		 "  fails there), the build-id cache, addr2line (libbfd, llvm or the external one),\n"
		 "  perf record -k 1 (the CLOCK_MONOTONIC time perf inject -j needs).  Then the\n"
		 "  pitfalls of this perf's generation, one line each with what to do, and a probe:\n"
		 "  perf-check's record, inject -j and script of a CPython-shaped trampoline with CFI\n"
		 "  and one without, in dwarf and fp mode: do JIT names show, do chains reach the\n"
		 "  anchor at the callee, and if not which step lost them (record, inject, the .so's\n"
		 "  symbols, the unwinder).\n",
};

/* doctor's probe takes its cases from the default cases directory */
static int cmd_doctor(int argc, char **argv)
{
	char dir[4200];
	struct hx_doctor_opts o = { .probe = true, .cases_dir = dir, .exit_codes = cli_exit_codes };
	int first, rc = cli_parse(&cli_doctor, argc, argv, &o, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	hx_default_cases(dir, sizeof(dir));
	struct hx_cmd_outcome out;
	return cli_exit_code(hx_doctor_run(&o, &out), &out);
}
