/* jitunwind CLI: run, record, replay, list, bench.  Exit codes (DESIGN):
 * 0 all cases met their expectations, 1 some case failed, 2 bad usage or bad
 * input, 77 nothing could run on this machine. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/run/case.h"
#include "harness/run/explain.h"
#include "harness/run/observe.h"
#include "harness/run/realreplay.h"
#include "harness/capture/host.h"
#include "harness/report/report.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "harness/realperf/toperf.h"
#include "harness/realperf/perfcol.h"
#include "harness/realperf/perfcheck.h"
#include "harness/realperf/doctor.h"
#include "harness/trace/trace.h"
#include "trampolines/tramp.h"
#include "unwinders/unwind.h"
#include "harness/capture/ksampler.h"
#include "unwinders/model/perfview.h"

int hx_bench_main(int argc, char **argv);
int hx_dump_main(int argc, char **argv);
int hx_lint_main(int argc, char **argv);
int hx_fuzzcfi_main(int argc, char **argv);

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *host_arch(void)
{
	const struct tr_arch *a = tr_arch_host();
	return a ? a->facts->name : "unknown";
}

/* "  --unwinders LIST ...": every unwinder of the table, one line each */
static void usage_unwinders(FILE *f)
{
	size_t n;
	const struct uw_unwinder *const *all = hx_columns(&n);
	char def[256];
	hx_column_defaults(host_arch(), def, sizeof(def));
	fprintf(f, "  --unwinders LIST   comma-separated (default here: %s):\n", def);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "      %-12s %s", all[i]->name, all[i]->about ? all[i]->about : "");
		if (all[i]->default_arches) {
			fprintf(f, " (default on");
			for (const char *const *a = all[i]->default_arches; *a; a++)
				fprintf(f, " %s", *a);
			fprintf(f, ")");
		}
		fprintf(f, "\n");
	}
}

static void usage_run(FILE *f)
{
	fprintf(f,
		"usage: jitunwind run [--json FILE] [--junit FILE] [--html FILE] [--tap] [--observe [--write]]\n"
		"                     [--unwinders LIST] [--jitdump-dir DIR]\n"
		"                     [--perf-profile P] [--stack-size N] [PATH...]\n"
		"  Capture every case (default cases/%s here, else the installed ones), replay each\n"
		"  sample through the unwinders and judge it against the truth and the case's [expect].\n"
		"  --json FILE        write the JSON report (schema 1)\n"
		"  --junit FILE       write JUnit XML: a testsuite per case, a testcase per unwinder\n"
		"  --html FILE        write one self-contained HTML heatmap (case x sample x unwinder)\n"
		"  --tap              print TAP (version 13) instead of the matrix\n"
		"  --observe          no judging: print per case the [expect] block it would pass with\n"
		"                     and what perf does in plain words (cases need no [expect])\n"
		"  --write            with --observe: put that block into each case file (comments kept)\n",
		host_arch());
	usage_unwinders(f);
	fprintf(f,
		"  --jitdump-dir DIR  write jit-<pid>.dump files there and keep them\n"
		"  --perf-profile P   perf generation to reproduce: current (default), v6.1, 5.x-0x40\n"
		"  --stack-size N     DWARF dump size (perf --call-graph dwarf,N; default: the case's, else 8192)\n"
		"  --perf-dump-dir D  the directory perf sees the jitdump in (default /tmp, as CPython;\n"
		"                     perf >= 6.8 gives libdw jitted unwinding info only under /tmp/jitted-)\n"
		"  --perf-data OUT    (record) also write the samples as a perf.data real perf reads\n"
		"  --perf-data-abi V  (record) the perf that reads it: 5.10, 6.1 (default) or 6.3\n"
		"  --spin-points      spin at every sample point and check the state there is the breakpoint's\n"
		"  --kernel-samples N perf_event_open samples per spin point (default 3 when kernel-fp is selected)\n"
		"  A case's [sample] host picks how the C around its trampolines is built:\n"
		"  %s (frame pointers, none, none in leaves; default fp)\n"
		"exit: 0 all cases pass, 1 a case failed, 2 bad usage or input, 77 nothing could run\n",
		hx_host_names);
	hx_vocab_print(f);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jitunwind COMMAND [ARGS]   (jitunwind COMMAND --help for more)\n"
		"  run     capture, replay and judge cases\n"
		"  record  capture cases into a samples file\n"
		"  replay  replay and judge a samples file\n"
		"  explain one sample's story: instruction, registers, CFA rows, chains\n"
		"  list    list cases\n"
		"  dump    decode a jitdump: records, eh_frame, rows, perf's view\n"
		"  lint    check jitdumps the way perf will read them\n"
		"  inject  write the jitted .so files perf inject -j would build from a jitdump\n"
		"  bench   measure capture cost and replay rates\n"
		"  perf-check  perf record the cases at every sample point, judge perf against its emulation\n"
		"  doctor  what this machine's perf will do with JIT code: facts, pitfalls, a probe\n"
		"  trace   run a real JIT under ptrace, a breakpoint at every instruction of its jitdump's code\n"
		"  fuzz-cfi  generate trampolines and CFI encodings, find where the unwinders part ways\n"
		"  --version  print the version and the JSON report's schema number\n");
}

struct common {
	struct hx_opts o;
	const char *json, *junit, *html;
	bool tap, write;
	const char *out;
	int npaths;
	char **paths;
	char uwbuf[256];
	const char *perf_data;           /* record --perf-data OUT */
	struct hx_toperf_opts po;
};

static int parse_unwinders(struct common *c, const char *list)
{
	char known[256];
	hx_column_list(NULL, known, sizeof(known));
	snprintf(c->uwbuf, sizeof(c->uwbuf), "%s", list);
	c->o.nuw = 0;
	for (char *save = NULL, *t = strtok_r(c->uwbuf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!hx_column_by_name(t)) {
			fprintf(stderr, "jitunwind: unknown unwinder '%s' (known: %s)\n", t, known);
			return -1;
		}
		for (int u = 0; u < c->o.nuw; u++)
			if (!strcmp(c->o.unwinders[u], t)) {
				fprintf(stderr, "jitunwind: --unwinders names '%s' twice\n", t);
				return -1;
			}
		if (c->o.nuw >= HX_MAX_UW) {
			fprintf(stderr, "jitunwind: --unwinders: at most %d unwinders\n", HX_MAX_UW);
			return -1;
		}
		c->o.unwinders[c->o.nuw++] = t;
	}
	if (!c->o.nuw) {
		fprintf(stderr, "jitunwind: --unwinders '%s' names no unwinder (known: %s)\n", list, known);
		return -1;
	}
	return 0;
}

/* The default unwinders once --perf is known: a column whose probe fails
 * (no working perf) is left out, and says why. */
static int default_perf(struct common *c)
{
	char def[256], why[256];
	hx_column_defaults(host_arch(), def, sizeof(def));
	size_t n;
	const struct uw_unwinder *const *all = hx_columns(&n);
	for (size_t i = 0; i < n; i++)
		if (all[i]->probe && all[i]->default_arches && all[i]->probe(why, sizeof(why)) &&
		    !strcmp(all[i]->default_arches[0], host_arch() ? host_arch() : ""))
			fprintf(stderr, "jitunwind: skip: the %s column: %s\n", all[i]->name, why);
	return parse_unwinders(c, def);
}

/* The common options whose value is checked: 0, or -1 with the usage error printed. */
static int parse_value(struct common *c, int ch, const char *arg)
{
	switch (ch) {
	case 'k': {
		char *end;
		long v = strtol(arg, &end, 10);
		if (*end || v < 1 || v > 100) {
			fprintf(stderr, "jitunwind: --kernel-samples %s: expected 1..100 samples per spin point\n", arg);
			return -1;
		}
		hx_kcfg.nsamples = (int)v;
		return 0;
	}
	case 'A':
		if (hx_toperf_abi(arg, &c->po.attr_size)) {
			fprintf(stderr, "jitunwind: --perf-data-abi %s: expected 5.10, 6.1 or 6.3\n", arg);
			return -1;
		}
		return 0;
	case 'p':
		c->o.profile_set = true;
		if (pv_profile_parse(arg, &c->o.profile)) {
			fprintf(stderr, "jitunwind: --perf-profile %s: expected current, v6.1 or 5.x-0x40\n", arg);
			return -1;
		}
		return 0;
	case 's': {
		char *end;
		long v = strtol(arg, &end, 0);
		/* perf: a multiple of 8, at most 65528 (the kernel rejects others) */
		if (*end || v < 8 || v > 65528 || v % 8) {
			fprintf(stderr, "jitunwind: --stack-size %s: expected a multiple of 8 in 8..65528\n", arg);
			return -1;
		}
		c->o.stack_size = (int)v;
		return 0;
	}
	}
	return 0;
}

/* 0 ok, 1 help printed, 2 usage error */
static int parse_common(int argc, char **argv, struct common *c, bool want_out, void (*help)(FILE *))
{
	static const struct option lo[] = {
		{ "json", required_argument, 0, 'j' }, { "unwinders", required_argument, 0, 'u' },
		{ "jitdump-dir", required_argument, 0, 'd' }, { "help", no_argument, 0, 'h' },
		{ "output", required_argument, 0, 'o' }, { "perf-profile", required_argument, 0, 'p' },
		{ "stack-size", required_argument, 0, 's' }, { "perf-dump-dir", required_argument, 0, 'D' },
		{ "junit", required_argument, 0, 'J' }, { "html", required_argument, 0, 'H' },
		{ "tap", no_argument, 0, 'T' }, { "observe", no_argument, 0, 'O' },
		{ "write", no_argument, 0, 'W' },
		{ "perf-data", required_argument, 0, 'P' }, { "perf-data-abi", required_argument, 0, 'A' },
		{ "kernel-samples", required_argument, 0, 'k' }, { "spin-points", no_argument, 0, 'S' },
		{ "perf", required_argument, 0, 'f' }, { 0, 0, 0, 0 },
	};
	memset(c, 0, sizeof(*c));
	char def[256];
	hx_column_list(host_arch(), def, sizeof(def));
	if (parse_unwinders(c, def))
		return 2;
	optind = 1;
	int ch;
	bool named = false;
	while ((ch = getopt_long(argc, argv, "ho:", lo, NULL)) != -1) {
		switch (ch) {
		case 'j': c->json = optarg; break;
		case 'J': c->junit = optarg; break;
		case 'H': c->html = optarg; break;
		case 'T': c->tap = true; break;
		case 'O': c->o.observe = true; break;
		case 'W': c->write = true; break;
		case 'u':
			if (parse_unwinders(c, optarg))
				return 2;
			named = true;
			break;
		case 'f': hx_perfcol_set_cmd(optarg); break;
		case 'd': c->o.jitdump_dir = optarg; break;
		case 'S': hx_kcfg.spin = true; break;
		case 'k':
		case 'A':
		case 'p':
		case 's':
			if (parse_value(c, ch, optarg))
				return 2;
			break;
		case 'D': c->o.perf_dump_dir = optarg; break;
		case 'P': c->perf_data = optarg; break;
		case 'o':
			if (!want_out) {
				help(stderr);
				return 2;
			}
			c->out = optarg;
			break;
		case 'h': help(stdout); return 1;
		default: help(stderr); return 2;
		}
	}
	/* an unwinder that reads kernel samples turns the sampler on */
	for (int u = 0; u < c->o.nuw && !hx_kcfg.nsamples; u++)
		if (hx_column_by_name(c->o.unwinders[u])->kernel)
			hx_kcfg.nsamples = 3;
	if (!named && default_perf(c))
		return 2;
	c->npaths = argc - optind;
	c->paths = argv + optind;
	return 0;
}

static int rm_private_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *de;
	char p[4352];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (unlink(p) < 0 && errno == EISDIR)
			rm_private_dir(p);     /* a case's own dump directory */
	}
	closedir(d);
	return rmdir(dir);
}

static int make_dir(const struct common *c, char *dir, size_t n, bool *private_dir)
{
	if (c->o.jitdump_dir) {
		snprintf(dir, n, "%s", c->o.jitdump_dir);
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			fprintf(stderr, "jitunwind: %s: %s\n", dir, strerror(errno));
			return -1;
		}
		*private_dir = false;
		return 0;
	}
	snprintf(dir, n, "/tmp/jitunwind-XXXXXX");
	if (!mkdtemp(dir)) {
		fprintf(stderr, "jitunwind: mkdtemp: %s\n", strerror(errno));
		return -1;
	}
	*private_dir = true;
	return 0;
}

/* The default cases: cases/<arch> here (a source tree), else the installed
 * ones, <bindir>/../share/jitunwind/cases/<arch> (make install), else the
 * ones beside the binary (a source tree's binary run from elsewhere). */
static void default_cases(char *buf, size_t n)
{
	struct stat st;
	snprintf(buf, n, "cases/%s", host_arch());
	if (stat(buf, &st) == 0)
		return;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return;
	exe[len] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = 0;
	static const char *const rel[] = { "../share/jitunwind/cases", "cases" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(buf, n, "%s/%s/%s", exe, rel[i], host_arch());
		if (stat(buf, &st) == 0)
			return;
	}
	snprintf(buf, n, "cases/%s", host_arch());
}

static void trace_usage(FILE *f)
{
	fprintf(f,
		"usage: jitunwind trace [--jitdump FILE] [--time S] [--hits N] [--stack-size N]\n"
		"                       [--samples-text F] [--unwinders LIST] [--perf-profile P] [--perf CMD]\n"
		"                       [--json F] [--junit F] [--html F] [--tap] -- CMD [ARGS...]\n"
		"Run CMD under ptrace (every thread), read the jitdump it writes as it grows (the marker\n"
		"mapping of jit-<pid>.dump, or --jitdump FILE), plant a one-shot breakpoint at every\n"
		"instruction boundary of every CODE_LOAD (decoded from the process's memory) and take a\n"
		"sample as perf would at each hit: registers, --stack-size bytes of stack (default 8192),\n"
		"the maps.  The report: per JIT function, boundaries sampled / boundaries in the load and\n"
		"those never executed; code in memory that differs from the dump's is a finding.\n"
		"  --hits N     sample each boundary up to N times (default 1)\n"
		"  --time S     end the trace, and the process, after S seconds\n"
		"  --samples-text F  one line per sample: tid, pc, sp, bp, cx, the first stack words\n"
		"x86_64 only for now.  exit: 0 traced, 2 bad usage, a CMD that cannot start, a jitdump\n"
		"that is not one or that never appeared, 77 ptrace refused or no tracer for this arch\n");
}

static int trace_opt(struct hx_trace_cfg *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	if (*i + 1 >= argc)
		return -1;
	const char *v = argv[++*i];
	char *end;
	if (!strcmp(a, "--jitdump")) {
		c->jitdump = v;
		return 0;
	}
	if (!strcmp(a, "--samples-text")) {
		c->samples_text = v;
		return 0;
	}
	if (!strcmp(a, "--time")) {
		c->time_s = strtod(v, &end);
		return *end || c->time_s <= 0 ? -1 : 0;
	}
	unsigned long n = strtoul(v, &end, 10);
	if (*end || !n || *v == '-')
		return -1;
	if (!strcmp(a, "--hits"))
		c->hits = (unsigned)n;
	else if (!strcmp(a, "--stack-size"))
		c->stack_size = n;
	else
		return -1;
	return 0;
}

static int cmd_trace(int argc, char **argv)
{
	struct hx_trace_cfg c = { .hits = 1, .stack_size = 8192, .log = stderr };
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			trace_usage(stdout);
			return 0;
		}
		int own = hx_trace_opt(&c, argc, argv, &i);   /* judging and reports: tracecmd.c */
		if (own < 0 || (own > 0 && trace_opt(&c, argc, argv, &i))) {
			fprintf(stderr, "jitunwind trace: bad option or value at '%s'\n", argv[i]);
			trace_usage(stderr);
			return 2;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "jitunwind trace: no command after --\n");
		trace_usage(stderr);
		return 2;
	}
	c.argv = argv + i + 1;
	struct hx_trace_result r;
	int e = hx_trace_run(&c, &r);
	if (e == -EPERM || e == -ENOSYS) {
		printf("SKIP trace: %s\n", r.why);
		return 77;
	}
	if (!e || e == -ESRCH || e == -EBADMSG)
		hx_trace_report(stdout, &r);
	int judged = e ? 0 : hx_trace_judge_report(&c, &r);
	if (!e && c.samples_text) {
		FILE *f = fopen(c.samples_text, "w");
		if (!f || hx_trace_samples_text(f, &r) || fclose(f)) {
			fprintf(stderr, "jitunwind trace: cannot write %s\n", c.samples_text);
			e = -EIO;
			snprintf(r.why, sizeof(r.why), "cannot write %s", c.samples_text);
		}
	}
	if (e)
		fprintf(stderr, "jitunwind trace: %s\n", r.why[0] ? r.why : strerror(-e));
	hx_trace_result_free(&r);
	return e ? 2 : judged == 2 ? 2 : 0;   /* verdicts not ok are the report's, not a failure */
}

/* doctor's probe takes its cases from the default cases directory */
static int cmd_doctor(int argc, char **argv)
{
	char dir[4200];
	default_cases(dir, sizeof(dir));
	return hx_doctor_main(argc, argv, dir);
}

/* Load every case first: a malformed one stops everything with exit 2. */
static int load_cases(struct common *c, struct hx_case **cases, char ***paths, int *n)
{
	char err[1024];
	const char *defp[1];
	char def[4200];
	const char *const *pp = (const char *const *)c->paths;
	int np = c->npaths;
	if (!np) {
		default_cases(def, sizeof(def));
		defp[0] = def;
		pp = defp;
		np = 1;
	}
	if (hx_case_glob(pp, np, paths, n, err, sizeof(err))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		for (int k = 0; k < *n; k++)
			free((*paths)[k]);
		free(*paths);
		return 2;
	}
	*cases = calloc(*n ? (size_t)*n : 1, sizeof(**cases));
	if (!*cases)
		return 2;
	for (int i = 0; i < *n; i++) {
		if (hx_case_load_ex(&(*cases)[i], (*paths)[i], c->o.observe ? HX_CASE_NO_EXPECT : 0, err, sizeof(err))) {
			fprintf(stderr, "jitunwind: %s\n", err);
			for (int k = 0; k < *n; k++) {
				if (k <= i)
					hx_case_free(&(*cases)[k]);
				free((*paths)[k]);
			}
			free(*cases);
			free(*paths);
			return 2;
		}
	}
	if (hx_case_unique(*cases, *n, err, sizeof(err))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		for (int k = 0; k < *n; k++) {
			hx_case_free(&(*cases)[k]);
			free((*paths)[k]);
		}
		free(*cases);
		free(*paths);
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
	double secs = now() - t0;
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

/* a case of another arch is a visible skip, not a failure */
static bool skip_other_arch(const struct hx_case *c, const char *path, struct hx_case_res *r)
{
	if (!strcmp(c->arch, host_arch()))
		return false;
	r->skipped = true;
	snprintf(r->name, sizeof(r->name), "%s", c->name);
	snprintf(r->file, sizeof(r->file), "%s", path);
	snprintf(r->problem, sizeof(r->problem), "case arch %s cannot run on this %s host (use make check ARCH=%s)",
		 c->arch, host_arch(), c->arch);
	return true;
}

/* One run or record: its cases and where their results go. */
struct run_ctx {
	struct common c;
	bool record;
	double t0;
	struct hx_case *cases;
	char **paths;
	int n;
	char dir[4096];
	struct hx_case_res *res;
	struct hx_batch_case *batch;     /* the cases of this host's arch, in order */
	size_t nb;
	struct hx_samples s;             /* run: what the batch captured */
	size_t shown_k;                  /* the case the progress line shows, + 1 (0: none yet) */
};

/* hx_batch_run.progress: the case the capture is on, as "[i/n] name" */
static void run_progress(void *arg, size_t k)
{
	struct run_ctx *r = arg;
	if (r->shown_k == k + 1)
		return;   /* drawn already: redrawn when the capture moves on */
	size_t i = (size_t)(r->batch[k].c - r->cases);
	double t = now() - r->t0;
	hx_progress(i, (size_t)r->n, r->cases[i].name, t);
	if (t >= 1.0)   /* hx_progress draws from the first second on */
		r->shown_k = k + 1;
}

/* The batch of this host's arch's cases; the others become visible skips. */
static int run_batch(struct run_ctx *r)
{
	r->res = calloc((size_t)r->n, sizeof(*r->res));
	r->batch = calloc((size_t)r->n, sizeof(*r->batch));
	if (!r->res || !r->batch) {
		fprintf(stderr, "jitunwind: out of memory\n");
		return 2;
	}
	for (int i = 0; i < r->n; i++)
		if (!skip_other_arch(&r->cases[i], r->paths[i], &r->res[i]))
			r->batch[r->nb++] = (struct hx_batch_case){ .c = &r->cases[i], .path = r->paths[i] };
	return 0;
}

/* One batch: run's child captures every case in turn into a samples file
 * read back here; record's children (a process per case, as separate
 * programs: its perf.data, its dumps) capture into -o.  0 or 2.  Inlined:
 * cmd_run calls the batch directly, so the capture's stack has the callers
 * above its anchor the goldens list (capture.c, HX_ABOVE_ANCHOR). */
static inline __attribute__((always_inline)) int run_capture(struct run_ctx *r)
{
	char err[1024], sp[4352];
	snprintf(sp, sizeof(sp), "%s/all.samples", r->dir);
	struct hx_batch_run br = { .per_child = r->record ? 1 : 0 };
	if (isatty(2)) {
		br.progress = run_progress;
		br.progress_arg = r;
	}
	int status = 0;
	if (hx_batch_dirs(r->batch, r->nb, r->dir, br.per_child, err, sizeof(err)) ||
	    hx_capture_to_file(r->batch, r->nb, r->record ? r->c.out : sp, &br, err, sizeof(err)) ||
	    (!r->record && hx_samples_read(&r->s, sp, err, sizeof(err)))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		status = 2;
	}
	if (!r->record)
		unlink(sp);
	return status;
}

/* Replay the groups in case order (a case whose child never started it has
 * none); each case's time is its replay plus its share of the capture.  0 or 2. */
static int run_replay(struct run_ctx *r, double capture_per_case)
{
	char err[1024];
	for (int i = 0, g = 0; i < r->n; i++) {
		double t1 = now();
		hx_progress((size_t)i, (size_t)r->n, r->cases[i].name, t1 - r->t0);
		struct hx_case_res *res = &r->res[i];
		if (res->skipped)
			continue;
		if ((size_t)g >= r->s.ngroups || strcmp(r->s.groups[g].case_path, r->paths[i])) {
			snprintf(res->name, sizeof(res->name), "%s", r->cases[i].name);
			snprintf(res->file, sizeof(res->file), "%s", r->paths[i]);
			snprintf(res->problem, sizeof(res->problem), "the capture did not start");
			continue;
		}
		if (hx_replay_group(&r->s.groups[g++], r->s.elf_mach, &r->c.o, res, err, sizeof(err))) {
			fprintf(stderr, "jitunwind: %s\n", err);
			return 2;
		}
		res->seconds = capture_per_case + now() - t1;
	}
	return 0;
}

/* record's last words, and -o's perf.data (--perf-data).  0 or 2. */
static int record_finish(struct run_ctx *r)
{
	struct common *c = &r->c;
	printf("recorded %d case(s) into %s; jitdumps in %s\n", r->n, c->out, r->dir);
	if (!c->perf_data)
		return 0;
	char err[1024];
	c->po.stack_size = (uint32_t)c->o.stack_size;
	if (hx_toperf_write(c->out, c->perf_data, &c->po, err, sizeof(err))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		return 2;
	}
	printf("wrote %s (perf inject -j -i %s -o OUT, then perf script)\n", c->perf_data, c->perf_data);
	return 0;
}

/* run's report: --observe's [expect] blocks, else the reporters. */
static int run_report(struct run_ctx *r)
{
	if (!r->c.o.observe)
		return finish(r->res, (size_t)r->n, &r->c, r->t0, host_arch());
	char err[1024];
	if (hx_observe_run(stdout, r->res, (size_t)r->n, &r->c.o, host_arch(), r->c.write, err, sizeof(err))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		return 2;
	}
	return 0;
}

static void run_free(struct run_ctx *r)
{
	hx_samples_free(&r->s);
	if (r->batch)
		hx_batch_dirs_free(r->batch, r->nb);
	free(r->batch);
	for (int i = 0; i < r->n; i++) {
		if (r->res)
			hx_case_res_free(&r->res[i]);
		hx_case_free(&r->cases[i]);
		free(r->paths[i]);
	}
	free(r->res);
	free(r->cases);
	free(r->paths);
}

static int cmd_run(int argc, char **argv, bool record)
{
	struct run_ctx r = { .record = record };
	int rc = parse_common(argc, argv, &r.c, record, usage_run);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (record && !r.c.out) {
		fprintf(stderr, "jitunwind record: -o SAMPLES is required\n");
		return 2;
	}
	r.t0 = now();
	if ((rc = load_cases(&r.c, &r.cases, &r.paths, &r.n)))
		return rc;
	if (r.n == 0) {
		fprintf(stderr, "jitunwind: no .case files found\n");
		return 2;
	}
	bool priv;
	if (make_dir(&r.c, r.dir, sizeof(r.dir), &priv))
		return 2;
	if (record)
		priv = false;
	int status = run_batch(&r);
	double tc = now();
	if (!status)
		status = run_capture(&r);
	tc = r.nb ? (now() - tc) / (double)r.nb : 0;
	if (!status && !record)
		status = run_replay(&r, tc);
	hx_progress(0, 0, NULL, 0);
	if (!status && record)
		status = record_finish(&r);
	if (priv)
		rm_private_dir(r.dir);
	if (!status && !record)
		status = run_report(&r);
	run_free(&r);
	return status;
}

static void usage_replay(FILE *f)
{
	fprintf(f, "usage: jitunwind replay [--json FILE] [--junit FILE] [--html FILE] [--tap] [--unwinders LIST]\n"
		   "                        [--perf-profile P] [--stack-size N] SAMPLES\n"
		   "  Replay a samples file written by `jitunwind record` and judge it.\n");
	usage_unwinders(f);
}

static int cmd_replay(int argc, char **argv)
{
	struct common c;
	int rc = parse_common(argc, argv, &c, false, usage_replay);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (c.npaths != 1) {
		usage_replay(stderr);
		return 2;
	}
	double t0 = now();
	char err[1024];
	struct hx_samples s;
	if (hx_samples_read(&s, c.paths[0], err, sizeof(err))) {
		fprintf(stderr, "jitunwind: %s\n", err);
		return 2;
	}
	struct hx_case_res *res = calloc(s.ngroups ? s.ngroups : 1, sizeof(*res));
	int status = 0;
	for (size_t i = 0; i < s.ngroups && res; i++) {
		if ((rc = hx_replay_group(&s.groups[i], s.elf_mach, &c.o, &res[i], err, sizeof(err)))) {
			fprintf(stderr, "jitunwind: %s\n", err);
			status = 2;
			break;
		}
	}
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)s.elf_mach);
	if (!status)
		status = finish(res, s.ngroups, &c, t0, a ? a->facts->name : "unknown");
	for (size_t i = 0; i < s.ngroups && res; i++)
		hx_case_res_free(&res[i]);
	free(res);
	hx_samples_free(&s);
	return status;
}

static void usage_explain(FILE *f)
{
	fprintf(f, "usage: jitunwind explain [--unwinders LIST] [--perf-profile P] [--stack-size N] CASE WHERE\n"
		   "  Capture and replay CASE, then tell the story of sample point WHERE (tramp+0x7, 7, callee):\n"
		   "  instruction, registers, the emitted CFI row and the true one, each unwinder's chain\n"
		   "  next to the truth with perf's symbols, its stop reason and first divergent frame.\n");
	usage_unwinders(f);
}

static int cmd_explain(int argc, char **argv)
{
	struct common c;
	int rc = parse_common(argc, argv, &c, false, usage_explain);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (c.npaths != 2) {
		usage_explain(stderr);
		return 2;
	}
	char err[1024];
	rc = hx_explain(stdout, &c.o, c.paths[0], c.paths[1], err, sizeof(err));
	if (rc)
		fprintf(stderr, "jitunwind: %s\n", err);
	return rc == -ENOTSUP ? 77 : rc ? 2 : 0;
}

static void usage_list(FILE *f)
{
	fprintf(f, "usage: jitunwind list [PATH...]\n  List the cases (name, arch, about).\n");
}

static int cmd_list(int argc, char **argv)
{
	struct common c;
	int rc = parse_common(argc, argv, &c, false, usage_list);
	if (rc)
		return rc == 1 ? 0 : 2;
	struct hx_case *cases;
	char **paths;
	int n;
	if ((rc = load_cases(&c, &cases, &paths, &n)))
		return rc;
	for (int i = 0; i < n; i++) {
		printf("%-26s %-8s %s\n", cases[i].name, cases[i].arch, cases[i].about);
		hx_case_free(&cases[i]);
		free(paths[i]);
	}
	free(cases);
	free(paths);
	return 0;
}

static void usage_inject(FILE *f)
{
	fprintf(f, "usage: jitunwind inject DUMP -o DIR [--perf-profile P]\n"
		   "  Write the jitted-<pid>-<index>.so files `perf inject -j` would build from DUMP.\n");
}

static int cmd_inject(int argc, char **argv)
{
	struct common c;
	int rc = parse_common(argc, argv, &c, true, usage_inject);
	if (rc)
		return rc == 1 ? 0 : 2;
	if (c.npaths != 1 || !c.out) {
		usage_inject(stderr);
		return 2;
	}
	struct jd_file jd;
	struct jd_err je;
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
		char path[4352], err[512];
		snprintf(path, sizeof(path), "%s/jitted-%u-%llu.so", c.out, l->pid, (unsigned long long)l->code_index);
		if (pv_write_jitted_elf(path, c.o.profile, l, (uint16_t)jd.elf_mach, err, sizeof(err))) {
			fprintf(stderr, "jitunwind: %s: %s\n", path, err);
			status = 2;
			break;
		}
		printf("%s  %s at 0x%llx, %llu bytes%s\n", path, l->name, (unsigned long long)l->code_addr,
		       (unsigned long long)l->code_size, l->has_unwind ? ", with unwinding info" : "");
	}
	jd_close(&jd);
	return status;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Large blocks (a case, a replay's state, perf's view) come and go once
	 * per case: from a heap that keeps its pages rather than from fresh
	 * mappings, whose page faults cost more than the work done in them. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		hx_version_print(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1, false);
	if (!strcmp(cmd, "record"))
		return cmd_run(argc - 1, argv + 1, true);
	if (!strcmp(cmd, "replay")) {
		/* a perf.data of a real JIT (its magic), else a samples file */
		for (int i = 2; i < argc; i++)
			if (argv[i][0] != '-' && hx_is_perf_data(argv[i]))
				return hx_realreplay_main(argc - 1, argv + 1);
		return cmd_replay(argc - 1, argv + 1);
	}
	if (!strcmp(cmd, "list"))
		return cmd_list(argc - 1, argv + 1);
	if (!strcmp(cmd, "explain"))
		return cmd_explain(argc - 1, argv + 1);
	if (!strcmp(cmd, "dump"))
		return hx_dump_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "lint"))
		return hx_lint_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "inject"))
		return cmd_inject(argc - 1, argv + 1);
	if (!strcmp(cmd, "bench"))
		return hx_bench_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "perf-check"))
		return hx_perfcheck_main(argc - 1, argv + 1);
	if (!strcmp(cmd, "doctor"))
		return cmd_doctor(argc - 1, argv + 1);
	if (!strcmp(cmd, "trace"))
		return cmd_trace(argc - 1, argv + 1);
	if (!strcmp(cmd, "fuzz-cfi"))
		return hx_fuzzcfi_main(argc - 1, argv + 1);
	fprintf(stderr, "jitunwind: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
