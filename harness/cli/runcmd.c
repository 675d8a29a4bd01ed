/* run, record, replay, explain, list, inject: the case commands, their
 * option tables (opts.h) and what they do with them. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/cli/opts.h"
#include "harness/cli/cmds.h"
#include "harness/case/case.h"
#include "harness/run/explain.h"
#include "harness/run/observe.h"
#include "harness/replay/realreplay.h"
#include "harness/capture/capture.h"
#include "harness/capture/host.h"
#include "harness/report/report.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "harness/run/toperf.h"
#include "harness/run/perfcol.h"
#include "harness/run/runcases.h"
#include "trampolines/tramp.h"
#include "unwinders/unwind.h"
#include "harness/capture/ksampler.h"
#include "unwinders/model/perfview.h"

/* The settings of the case commands (one struct: their tables share options). */
struct common {
	struct hx_opts o;
	const char *json, *junit, *html;
	bool tap, write;
	const char *out;
	int npaths;
	char **paths;
	char uwbuf[256];
	const char *uw_arg;              /* --unwinders as given, NULL: the defaults */
	const char *perf_cmd;            /* --perf CMD */
	int kernel_samples;              /* --kernel-samples, 0: 3 when a kernel column is selected */
	bool spin;                       /* --spin-points */
	const char *perf_data;           /* record --perf-data OUT */
	struct hx_toperf_opts po;
	struct hx_rr_settings rr;        /* replay FILE.data */
	const char *data_only;           /* replay: an option of FILE.data's form given */
	const char *samples_only;        /* replay: an option of SAMPLES' form given */
};

/* replay: a samples file or a perf.data (FILE.data), one table for both forms */
struct replay_set {
	struct common c;                 /* first: the shared options' offsets are struct common's */
	struct hx_rr_settings rr;
};
_Static_assert(offsetof(struct replay_set, c) == 0, "the common options' offsets");


/* "  --unwinders LIST ...": every unwinder of the table, one line each */
static void usage_unwinders(FILE *f)
{
	size_t n;
	const struct uw_unwinder *const *all = hx_columns(&n);
	char def[256];
	hx_column_defaults(hx_host_arch(), def, sizeof(def));
	fprintf(f, "      default here: %s; the unwinders:\n", def);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "        %-12s %s", all[i]->name, all[i]->about ? all[i]->about : "");
		if (all[i]->default_arches && all[i]->default_arches[0]) {
			fprintf(f, " (default on");
			for (const char *const *a = all[i]->default_arches; *a; a++)
				fprintf(f, " %s", *a);
			fprintf(f, ")");
		}
		fprintf(f, "\n");
	}
}

/* the names of an --unwinders list into c->o (the columns of the table); 0 or -1 with why */
static int parse_unwinders(struct common *c, const char *list, char *why, size_t wl)
{
	char known[256];
	hx_column_list(NULL, known, sizeof(known));
	snprintf(c->uwbuf, sizeof(c->uwbuf), "%s", list);
	c->o.nuw = 0;
	for (char *save = NULL, *t = strtok_r(c->uwbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!hx_column_by_name(t)) {
			snprintf(why, wl, "unknown unwinder '%s' (known: %s)", t, known);
			return -1;
		}
		for (int u = 0; u < c->o.nuw; u++)
			if (!strcmp(c->o.unwinders[u], t)) {
				snprintf(why, wl, "names '%s' twice", t);
				return -1;
			}
		if (c->o.nuw >= HX_MAX_UW) {
			snprintf(why, wl, "at most %d unwinders", HX_MAX_UW);
			return -1;
		}
		c->o.unwinders[c->o.nuw++] = t;
	}
	if (!c->o.nuw) {
		snprintf(why, wl, "'%s' names no unwinder (known: %s)", list, known);
		return -1;
	}
	return 0;
}

static int set_unwinders(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	struct common *c = s;
	c->uw_arg = arg;
	return parse_unwinders(c, arg, why, wl);
}

/* A perf asked for (--perf CMD, or perf/perf-fp named) that cannot run fails the
 * run: 77 unusable here, 2 a bad command; 0 otherwise.  Checked over the named
 * unwinders, or over every column of this arch when none were named. */
static int check_perf_asked(struct common *c)
{
	char all[256], why[256], pwhy[768];
	struct common t = *c;
	if (!c->uw_arg) {
		t.o.nuw = 0;
		hx_column_list(hx_host_arch(), all, sizeof(all));
		if (parse_unwinders(&t, all, why, sizeof(why)))
			return 0;
	}
	switch (hx_perfcol_check(t.o.unwinders, t.o.nuw, c->uw_arg != NULL, hx_host_arch(), pwhy, sizeof(pwhy))) {
	case HX_PERFCOL_UNUSABLE: fprintf(stderr, "jitunwind: the perf column: %s\n", pwhy); return 77;
	case HX_PERFCOL_BAD_CMD: fprintf(stderr, "jitunwind: --perf: %s\n", pwhy); return 2;
	case HX_PERFCOL_OK: break;
	}
	return 0;
}

/* The unwinders once the options are known: the named ones, else the
 * defaults, a column whose probe fails (no working perf) left out with why.
 * 0, or the exit code (2 bad unwinders or --perf command, 77 a perf asked for
 * that cannot run here). */
static int pick_columns(struct common *c)
{
	char def[256], why[256];
	if (c->perf_cmd)
		hx_perfcol_set_cmd(c->perf_cmd);
	int rc = check_perf_asked(c);
	if (rc)
		return rc;
	if (!c->uw_arg) {
		hx_column_defaults(hx_host_arch(), def, sizeof(def));
		size_t n;
		const struct uw_unwinder *const *all = hx_columns(&n);
		for (size_t i = 0; i < n; i++)
			if (all[i]->probe && all[i]->default_arches && all[i]->probe(why, sizeof(why)) &&
			    !strcmp(all[i]->default_arches[0], hx_host_arch() ? hx_host_arch() : ""))
				fprintf(stderr, "jitunwind: skip: the %s column: %s\n", all[i]->name, why);
		if (parse_unwinders(c, def, why, sizeof(why))) {
			fprintf(stderr, "jitunwind: the default unwinders %s: %s\n", def, why);
			return 2;
		}
	}
	/* the capture's kernel sampler: an unwinder that reads kernel samples turns it on */
	c->o.kcfg = (struct hx_kcfg)HX_KCFG_INIT;
	c->o.kcfg.spin = c->spin;
	c->o.kcfg.nsamples = c->kernel_samples;
	for (int u = 0; u < c->o.nuw && !c->o.kcfg.nsamples; u++)
		if (hx_column_by_name(c->o.unwinders[u])->kernel)
			c->o.kcfg.nsamples = 3;
	return 0;
}

static int set_profile(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	struct common *c = s;
	c->o.profile_set = true;
	return cli_set_profile(s, o, arg, why, wl);
}

static int set_abi(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	struct common *c = s;
	if (hx_toperf_abi(arg, &c->po.attr_size)) {
		snprintf(why, wl, "expected 5.10, 6.1 or 6.3, got '%s'", arg);
		return -1;
	}
	return 0;
}

#define C_OFF(f) offsetof(struct common, f)
#define O_JSON { "json", 0, "FILE", "write the JSON report (schema 1)", .set = cli_set_str, .off = C_OFF(json), .example = "/dev/null" }
#define O_JUNIT { "junit", 0, "FILE", "write JUnit XML: a testsuite per case, a testcase per unwinder", \
		  .set = cli_set_str, .off = C_OFF(junit), .example = "/dev/null" }
#define O_HTML { "html", 0, "FILE", "write one self-contained HTML heatmap (case x sample x unwinder)", \
		 .set = cli_set_str, .off = C_OFF(html), .example = "/dev/null" }
#define O_TAP { "tap", 0, NULL, "print TAP (version 13) instead of the matrix", .set = cli_set_true, .off = C_OFF(tap) }
#define O_UNWINDERS { "unwinders", 0, "LIST", "the unwinders (columns) to run, comma-separated", \
		      .def_text = "this machine's", .set = set_unwinders, .example = "oracle", .more = usage_unwinders }
#define O_PERF { "perf", 0, "CMD", "the perf of the perf columns (may carry arguments, e.g. a root's loader)", \
		 .def_text = "perf on PATH", .set = cli_set_str, .off = C_OFF(perf_cmd), .example = "perf" }
#define O_PROFILE { "perf-profile", 0, "P", "perf generation to reproduce: " PV_PROFILE_LIST, .def_text = "current", \
		    .set = set_profile, .off = C_OFF(o.profile), .example = "v6.1" }
#define O_STACK { "stack-size", 0, "BYTES", "DWARF dump size (perf --call-graph dwarf,BYTES)", \
		  .def_text = "the case's, else 8192", .set = cli_set_int, .off = C_OFF(o.stack_size), .lo = 8, .hi = 65528, \
		  .example = "4096" }
#define O_JITDUMP_DIR_DEF(dt) { "jitdump-dir", 0, "DIR", "write jit-<pid>.dump files there and keep them", \
			.def_text = dt, .set = cli_set_str, .off = C_OFF(o.jitdump_dir), .example = "/tmp" }
#define O_JITDUMP_DIR O_JITDUMP_DIR_DEF("a private directory in $TMPDIR, else /dev/shm (tmpfs), else /tmp; removed")
#define O_PERF_DUMP_DIR { "perf-dump-dir", 0, "DIR", "the directory perf sees the jitdump in (as CPython;\n" \
			  "perf >= 6.8 gives libdw jitted unwinding info only under /tmp/jitted-)", .def = "/tmp", \
			  .set = cli_set_str, .off = C_OFF(o.perf_dump_dir) }
#define O_SPIN { "spin-points", 0, NULL, "spin at every sample point and check the state there is the breakpoint's", \
		 .set = cli_set_true, .off = C_OFF(spin) }
#define O_KSAMPLES { "kernel-samples", 0, "N", "perf_event_open samples per spin point", \
		     .def_text = "3 when kernel-fp is selected, else none", .set = cli_set_int, .off = C_OFF(kernel_samples), \
		     .lo = 1, .hi = 100, .example = "2" }
#define O_OBSERVE { "observe", 0, NULL, "no judging: print per case the [expect] block it would pass with\n" \
		    "and what perf does in plain words (cases need no [expect])", .set = cli_set_true, .off = C_OFF(o.observe) }
#define O_OUTPUT(what) { "output", 'o', "FILE", what, .set = cli_set_str, .off = C_OFF(out), .example = "/dev/null" }

/* Load every case first: a malformed one stops everything with exit 2. */
static int load_cases(struct common *c, struct hx_runset *r)
{
	struct ju_err je;
	r->o = &c->o;
	if (hx_runset_load(r, (const char *const *)c->paths, c->npaths, &je)) {
		fprintf(stderr, "jitunwind: %s\n", je.msg);
		return 2;
	}
	return 0;
}

static int finish(struct hx_case_res *res, size_t n, const struct common *c, double t0, const char *arch)
{
	struct hx_report rep = { .arch = arch, .cases = res, .n = n, .o = &c->o };
	size_t pass = 0, fail = 0, skip = 0;
	for (size_t i = 0; i < n; i++)
		res[i].skipped ? skip++ : res[i].pass ? pass++ : fail++;
	double secs = hx_now() - t0;
	rep.seconds = secs;
	/* --tap: stdout is TAP only, the summary a TAP comment */
	hx_report_write(hx_reporter_by_name(c->tap ? "tap" : "terminal"), NULL, &rep);
	const struct { const char *reporter, *path; } files[] = {
		{ "json", c->json }, { "junit", c->junit }, { "html", c->html },
	};
	for (size_t k = 0; k < sizeof(files) / sizeof(files[0]); k++) {
		int rc;
		if (files[k].path && (rc = hx_report_write(hx_reporter_by_name(files[k].reporter), files[k].path, &rep))) {
			fprintf(stderr, "jitunwind: cannot write the %s report %s: %s\n", files[k].reporter,
				files[k].path, strerror(-rc));
			return 2;
		}
	}
	/* "passed" = met its [expect] (tools/matrix reads this line) */
	printf("\n%scases: %zu passed, %zu failed, %zu skipped (%.2f s); passed = met its [expect]\n",
	       c->tap ? "# " : "", pass, fail, skip, secs);
	if (fail)
		return 1;
	if (!pass && skip)
		return 77;
	return 0;
}

/* record's last words, and -o's perf.data (--perf-data).  0 or 2. */
static int record_finish(struct common *c, const struct hx_runset *r)
{
	printf("recorded %d case(s) into %s; jitdumps in %s\n", r->n, c->out, r->dir);
	if (!c->perf_data)
		return 0;
	struct ju_err err;
	c->po.stack_size = (uint32_t)c->o.stack_size;
	if (hx_toperf_write(c->out, c->perf_data, &c->po, &err)) {
		fprintf(stderr, "jitunwind: %s\n", err.msg);
		return 2;
	}
	printf("wrote %s (perf inject -j -i %s -o OUT, then perf script)\n", c->perf_data, c->perf_data);
	return 0;
}

/* run's report: --observe's [expect] blocks, else the reporters. */
static int run_report(struct common *c, struct hx_runset *r)
{
	if (!c->o.observe)
		return finish(r->res, (size_t)r->n, c, r->t0, hx_host_arch());
	struct ju_err err;
	if (hx_observe_run(stdout, r->res, (size_t)r->n, &c->o, hx_host_arch(), c->write, &err)) {
		fprintf(stderr, "jitunwind: %s\n", err.msg);
		return 2;
	}
	return 0;
}

static int cmd_run_or_record(int argc, char **argv, const struct cli_cmd *cmd, bool record)
{
	struct common c = { 0 };
	struct hx_runset r = { .record = record, .progress = hx_progress, .progress_tty = isatty(2) };
	struct ju_err je;
	int first, rc = cli_parse(cmd, argc, argv, &c, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	c.paths = argv + first;
	c.npaths = argc - first;
	if (record && !c.out)
		return cli_usage_error(cmd, "-o SAMPLES is required");
	if ((rc = pick_columns(&c)))
		return rc;
	r.out = c.out;
	if ((rc = load_cases(&c, &r)))
		return rc;
	if (r.n == 0) {
		fprintf(stderr, "jitunwind: no .case files found\n");
		return 2;
	}
	int status = 0;
	double per_case;
	if (hx_runset_dir(&r, &je) || hx_runset_capture(&r, &per_case, &je) ||
	    (!record && hx_runset_replay(&r, per_case, &je))) {
		fprintf(stderr, "jitunwind: %s\n", je.msg);
		status = 2;
	}
	hx_progress(0, 0, NULL, 0);
	if (!status && record)
		status = record_finish(&c, &r);
	hx_runset_remove_dir(&r);
	if (!status && !record)
		status = run_report(&c, &r);
	hx_runset_free(&r);
	return status;
}

/* replay SAMPLES: judge a samples file as run does */
static int replay_samples(struct common *c)
{
	int rc;
	if ((rc = pick_columns(c)))
		return rc;
	double t0 = hx_now();
	char err[1024];
	struct hx_samples s;
	if (hx_samples_read(&s, c->paths[0], err, sizeof(err))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		return 2;
	}
	struct hx_case_res *res = calloc(s.ngroups ? s.ngroups : 1, sizeof(*res));
	int status = 0;
	for (size_t i = 0; i < s.ngroups && res; i++) {
		if ((rc = hx_replay_group(&s.groups[i], s.elf_mach, &c->o, &res[i], err, sizeof(err)))) {
			fprintf(stderr, "jitunwind: %s\n", err);
			status = 2;
			break;
		}
	}
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)s.elf_mach);
	if (!status)
		status = finish(res, s.ngroups, c, t0, a ? a->facts->name : "unknown");
	for (size_t i = 0; i < s.ngroups && res; i++)
		hx_case_res_free(&res[i]);
	free(res);
	hx_samples_free(&s);
	return status;
}

static int cmd_explain(int argc, char **argv)
{
	struct common c = { 0 };
	int first, rc = cli_parse(&cli_explain, argc, argv, &c, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	c.paths = argv + first;
	if ((rc = pick_columns(&c)))
		return rc;
	char err[1024];
	rc = hx_explain(stdout, &c.o, c.paths[0], c.paths[1], err, sizeof(err));
	if (rc)
		fprintf(stderr, "jitunwind: %s\n", err);
	return rc == -ENOTSUP ? 77 : rc ? 2 : 0;
}

static int cmd_list(int argc, char **argv)
{
	struct common c = { 0 };
	int first, rc = cli_parse(&cli_list, argc, argv, &c, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	c.paths = argv + first;
	c.npaths = argc - first;
	struct hx_runset r = { 0 };
	if ((rc = load_cases(&c, &r)))
		return rc;
	for (int i = 0; i < r.n; i++)
		printf("%-26s %-8s %s\n", r.cases[i].name, r.cases[i].arch, r.cases[i].about);
	hx_runset_free(&r);
	return 0;
}

static int cmd_inject(int argc, char **argv)
{
	struct common c = { 0 };
	int first, rc = cli_parse(&cli_inject, argc, argv, &c, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	c.paths = argv + first;
	if (!c.out)
		return cli_usage_error(&cli_inject, "-o DIR is required");
	struct jd_file jd;
	struct ju_err je;
	if (jd_open(&jd, c.paths[0], &je)) {
		fprintf(stderr, "jitunwind: %s: offset 0x%llx: %s\n", c.paths[0], (unsigned long long)je.offset, je.msg);
		return 2;
	}
	if (mkdir(c.out, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "jitunwind: %s: %s\n", c.out, strerror(errno));
		jd_close(&jd);
		return 2;
	}
	int status = 0;
	for (size_t i = 0; i < jd.nloads; i++) {
		const struct jd_load *l = &jd.loads[i];
		struct ju_err err;
		char path[4352];
		snprintf(path, sizeof(path), "%s/jitted-%u-%llu.so", c.out, l->pid, (unsigned long long)l->code_index);
		if (pv_write_jitted_elf(path, c.o.profile, l, (uint16_t)jd.elf_mach, &err)) {
			fprintf(stderr, "jitunwind: %s: %s\n", path, err.msg);
			status = 2;
			break;
		}
		printf("%s  %s at 0x%llx, %llu bytes%s\n", path, l->name, (unsigned long long)l->code_addr,
		       (unsigned long long)l->code_size, l->has_unwind ? ", with unwinding info" : "");
	}
	jd_close(&jd);
	return status;
}


/* ---- replay: SAMPLES or FILE.data ---- */

#define RP_OFF(f) offsetof(struct replay_set, f)

/* an option of one form only: remembered, refused with the other form */
static int set_data_only(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	struct replay_set *r = s;
	r->c.data_only = o->name;
	if (!o->arg)
		return cli_set_true(s, o, arg, why, wl);
	if (o->off == RP_OFF(rr.top))
		return cli_set_int(s, o, arg, why, wl);
	if (o->off == RP_OFF(rr.max_views))
		return cli_set_u64(s, o, arg, why, wl);
	return cli_set_str(s, o, arg, why, wl);
}

static int set_samples_only(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	struct replay_set *r = s;
	r->c.samples_only = o->name;
	return o->arg ? (o->off == C_OFF(o.stack_size) ? cli_set_int : cli_set_str)(s, o, arg, why, wl) :
			cli_set_true(s, o, arg, why, wl);
}

static int set_replay_perf(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o, (void)why, (void)wl;
	struct replay_set *r = s;
	r->c.perf_cmd = r->rr.perf_cmd = arg;
	return 0;
}

static int set_jitdump(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	struct replay_set *r = s;
	r->c.data_only = "jitdump";
	if (r->rr.ndumps == HX_RR_MAX_DUMPS) {
		snprintf(why, wl, "more than %d jitdumps", HX_RR_MAX_DUMPS);
		return -1;
	}
	r->rr.dumps[r->rr.ndumps++] = arg;
	return 0;
}

static const struct cli_opt replay_opts[] = {
	O_JSON,
	{ "junit", 0, "FILE", "(SAMPLES) write JUnit XML: a testsuite per case, a testcase per unwinder",
	  .set = set_samples_only, .off = C_OFF(junit), .example = "/dev/null" },
	{ "html", 0, "FILE", "(SAMPLES) write one self-contained HTML heatmap", .set = set_samples_only,
	  .off = C_OFF(html), .example = "/dev/null" },
	{ "tap", 0, NULL, "(SAMPLES) print TAP (version 13) instead of the matrix", .set = set_samples_only,
	  .off = C_OFF(tap) },
	O_UNWINDERS,
	O_PROFILE,
	{ "stack-size", 0, "BYTES", "(SAMPLES) DWARF dump size (perf --call-graph dwarf,BYTES)",
	  .def_text = "the recorded one", .set = set_samples_only, .off = C_OFF(o.stack_size), .lo = 8, .hi = 65528,
	  .example = "4096" },
	{ "jitdump", 0, "DUMP", "(FILE.data) a jitdump of the recording, repeatable (up to 16);\n"
	  "else found through the jit-<pid>.dump marker mappings or the maps perf inject -j added",
	  .set = set_jitdump, .example = "jit-1.dump" },
	{ "symfs", 0, "DIR", "(FILE.data) read the recorded files under DIR (as perf --symfs)",
	  .set = set_data_only, .off = RP_OFF(rr.symfs), .example = "/" },
	{ "perf", 0, "CMD", "the perf of the perf column (may carry arguments, e.g. a root's loader); with\n"
	  "FILE.data the perf that made the recording: its perf script chain per sample is the\n"
	  "perf column, with its agreement with jitunwind's emulation of that perf build",
	  .def_text = "perf on PATH", .set = set_replay_perf, .example = "perf" },
	{ "no-perf", 0, NULL, "(FILE.data) leave the perf column out", .set = set_data_only, .off = RP_OFF(rr.no_perf) },
	{ "top", 0, "N", "(FILE.data) JIT symbol + offset keys shown", .def_text = "50", .set = set_data_only,
	  .off = RP_OFF(rr.top), .lo = 0, .hi = 1000000, .example = "10" },
	{ "max-views", 0, "N", "(FILE.data) accepted and ignored: every sample now replays exactly as\n"
	  "against perf's view at its own time (it was a budget of such views)", .def_text = "none",
	  .set = set_data_only, .off = RP_OFF(rr.max_views), .example = "4" },
	{ "lint", 0, NULL, "(FILE.data) lint each dump and line its findings up with every pc where a\n"
	  "DWARF unwinder loses a JIT frame's caller", .set = set_data_only, .off = RP_OFF(rr.lint) },
	{ "lint-ignore", 0, "RULES", "(FILE.data) with --lint: leave these rules (ids or names, comma\n"
	  "separated) out of that pairing", .set = set_data_only, .off = RP_OFF(rr.lint_ignore), .example = "JD001" },
	{ "stats", 0, NULL, "(FILE.data) wall time, samples per second, CPU time and peak memory on stderr",
	  .set = set_data_only, .off = RP_OFF(rr.stats) },
	{ 0 },
};

/* Does the file start with a samples file's magic? */
static bool is_samples_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char m[8];
	bool yes = f && fread(m, 1, 8, f) == 8 && !memcmp(m, HX_SAMPLES_MAGIC, 8);
	if (f)
		fclose(f);
	return yes;
}

static int cmd_replay(int argc, char **argv);

static void replay_tail(FILE *f)
{
	fprintf(f, "exit: 0 (FILE.data: every unwinder's chains agree on every JIT sample), 1 a case failed\n"
		   "  (FILE.data: some chains differ, or samples sat in JIT code no jitdump or perf map names),\n"
		   "  2 bad usage or input\n");
}

static const char *const replay_forms[] = { "[OPTIONS] SAMPLES", "[OPTIONS] FILE.data", NULL };

const struct cli_cmd cli_replay = {
	.name = "replay", .summary = "replay and judge a samples file, or replay a real JIT's perf.data",
	.forms = replay_forms, .opts = replay_opts, .main = cmd_replay, .min_operands = 1, .max_operands = 1,
	.about = "  SAMPLES: a samples file written by `jitunwind record`, judged as run judges.\n"
		 "  FILE.data: a perf.data (perf record -k 1 --call-graph dwarf) of a real JIT: every sample\n"
		 "  through every unwinder against perf's view at the sample's time, per JIT symbol and pc\n"
		 "  offset; /tmp/perf-<pid>.map names anonymous code.  Options marked (SAMPLES) or\n"
		 "  (FILE.data) apply to that form only.\n",
	.tail = replay_tail,
};

static int cmd_replay(int argc, char **argv)
{
	struct replay_set r = { .rr = { .top = 50, .max_views = 16 } };
	int first, rc = cli_parse(&cli_replay, argc, argv, &r, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	r.c.paths = argv + first;
	r.c.npaths = 1;
	/* a perf.data of a real JIT (its magic), else a samples file */
	char why[160];
	if (!hx_perf_data_why(r.c.paths[0], why, sizeof(why))) {
		if (!is_samples_file(r.c.paths[0])) {
			fprintf(stderr, "jitunwind: %s: not a perf.data file (%s) nor a jitunwind samples "
				"file (magic \"%s\")\n", r.c.paths[0], why, HX_SAMPLES_MAGIC);
			return 2;
		}
		if (r.c.data_only)
			return cli_usage_error(&cli_replay, "--%s: only with a perf.data (FILE.data); %s is not one",
					       r.c.data_only, r.c.paths[0]);
		return replay_samples(&r.c);
	}
	if (r.c.samples_only)
		return cli_usage_error(&cli_replay, "--%s: only with a samples file (SAMPLES), not with the perf.data %s",
				       r.c.samples_only, r.c.paths[0]);
	r.rr.path = r.c.paths[0];
	r.rr.json = r.c.json;
	r.rr.unwinders = r.c.uw_arg;
	r.rr.prof = r.c.o.profile;
	struct hx_cmd_outcome out;
	return cli_exit_code(hx_realreplay_run(&r.rr, &out), &out);
}

/* ---- the tables of run, record, explain, list, inject ---- */

static void run_tail(FILE *f)
{
	fprintf(f, "A case's [sample] host picks how the C around its trampolines is built:\n"
		   "  %s (frame pointers, none, none in leaves; default fp)\n"
		   "exit: 0 all cases pass, 1 a case failed, 2 bad usage or input, 77 nothing could run\n",
		hx_host_names);
	hx_vocab_print(f);
}

static const struct cli_opt run_opts[] = {
	O_JSON, O_JUNIT, O_HTML, O_TAP, O_OBSERVE,
	{ "write", 0, NULL, "with --observe: put that block into each case file (comments kept)",
	  .set = cli_set_true, .off = C_OFF(write) },
	O_UNWINDERS, O_PERF, O_JITDUMP_DIR, O_PROFILE, O_STACK, O_PERF_DUMP_DIR, O_SPIN, O_KSAMPLES,
	{ 0 },
};

static int cmd_run(int argc, char **argv);
static int cmd_record(int argc, char **argv);
static const char *const run_forms[] = { "[OPTIONS] [PATH...]", NULL };

const struct cli_cmd cli_run = {
	.name = "run", .summary = "capture, replay and judge cases", .forms = run_forms, .opts = run_opts,
	.main = cmd_run, .max_operands = -1, .tail = run_tail,
	.about = "  Capture every case (PATH: case files or directories; default cases/<this arch> here, else\n"
		 "  the installed ones), replay each sample through the unwinders and judge it against the\n"
		 "  truth and the case's [expect].\n",
};

static const struct cli_opt record_opts[] = {
	O_OUTPUT("the samples file to write (required)"),
	{ "perf-data", 0, "OUT", "also write the samples as a perf.data real perf reads", .set = cli_set_str,
	  .off = C_OFF(perf_data), .example = "/dev/null" },
	{ "perf-data-abi", 0, "V", "the perf that reads it: 5.10, 6.1 or 6.3", .def = "6.1", .set = set_abi },
	O_UNWINDERS, O_PERF, O_JITDUMP_DIR_DEF("a new /tmp/jitunwind-XXXXXX, kept"), O_PROFILE, O_STACK,
	O_PERF_DUMP_DIR, O_SPIN, O_KSAMPLES, { 0 },
};

static const char *const record_forms[] = { "-o SAMPLES [OPTIONS] [PATH...]", NULL };

const struct cli_cmd cli_record = {
	.name = "record", .summary = "capture cases into a samples file", .forms = record_forms,
	.opts = record_opts, .main = cmd_record, .max_operands = -1,
	.about = "  Capture every case (as run does) into SAMPLES, for `jitunwind replay`; the jitdumps stay\n"
		 "  in --jitdump-dir.\n",
};

static int cmd_run(int argc, char **argv)
{
	return cmd_run_or_record(argc, argv, &cli_run, false);
}

static int cmd_record(int argc, char **argv)
{
	return cmd_run_or_record(argc, argv, &cli_record, true);
}

static const struct cli_opt explain_opts[] = {
	O_UNWINDERS, O_PERF, O_PROFILE, O_STACK, O_JITDUMP_DIR, O_PERF_DUMP_DIR, O_SPIN, O_KSAMPLES, { 0 },
};

static const char *const explain_forms[] = { "[OPTIONS] CASE WHERE", NULL };

const struct cli_cmd cli_explain = {
	.name = "explain", .summary = "one sample's story: instruction, registers, CFA rows, chains",
	.forms = explain_forms, .opts = explain_opts, .main = cmd_explain, .min_operands = 2, .max_operands = 2,
	.about = "  Capture and replay CASE, then tell the story of sample point WHERE (tramp+0x7, 7, callee;\n"
		 "  in a case whose code has generations tramp+0x4@g2):\n"
		 "  instruction, registers, the emitted CFI row and the true one, each unwinder's chain\n"
		 "  next to the truth with perf's symbols, its stop reason and first divergent frame.\n",
};

static const struct cli_opt list_opts[] = {
	{ "observe", 0, NULL, "list cases without an [expect] too", .set = cli_set_true, .off = C_OFF(o.observe) },
	{ 0 },
};

static const char *const list_forms[] = { "[OPTIONS] [PATH...]", NULL };

const struct cli_cmd cli_list = {
	.name = "list", .summary = "list cases", .forms = list_forms, .opts = list_opts, .main = cmd_list,
	.max_operands = -1, .about = "  List the cases (name, arch, about).\n",
};

static const struct cli_opt inject_opts[] = {
	O_OUTPUT("the directory to write the .so files into (required)"), O_PROFILE, { 0 },
};

static const char *const inject_forms[] = { "-o DIR [OPTIONS] DUMP", NULL };

const struct cli_cmd cli_inject = {
	.name = "inject", .summary = "write the jitted .so files perf inject -j would build from a jitdump",
	.forms = inject_forms, .opts = inject_opts, .main = cmd_inject, .min_operands = 1, .max_operands = 1,
	.about = "  Write the jitted-<pid>-<index>.so files `perf inject -j` would build from DUMP.\n",
};
