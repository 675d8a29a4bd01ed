/* `jitunwind lint FILE...`: any producer's jitdump the way perf reads it
 * (unwinders/lint/lint.h), as text or JSON; `dump` is in dumpcmd.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/lint/lint.h"
#include "unwinders/model/perfview.h"
#include "harness/case/jsonw.h"
#include "harness/report/lintout.h"
#include "harness/cli/cmds.h"
#include <stddef.h>


#define LINT_DEFAULT_PER_RULE 20
#define LINT_PER_RULE_TEXT "20"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct lint_cli {
	struct lint_opts opts;
	bool json, stats, rules, by_offset;
	enum lint_sev min;
};

#define L_OFF(f) offsetof(struct lint_cli, f)

static int set_sort(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	if (strcmp(arg, "severity") && strcmp(arg, "offset")) {
		snprintf(why, wl, "expected severity or offset, got '%s'", arg);
		return -1;
	}
	((struct lint_cli *)s)->by_offset = !strcmp(arg, "offset");
	return 0;
}

static int set_min(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o;
	static const char *const names[] = { [LINT_INFO] = "info", [LINT_WARNING] = "warning", [LINT_ERROR] = "error" };
	for (int v = LINT_INFO; v <= LINT_ERROR; v++)
		if (!strcmp(arg, names[v])) {
			((struct lint_cli *)s)->min = (enum lint_sev)v;
			return 0;
		}
	snprintf(why, wl, "expected info, warning or error, got '%s'", arg);
	return -1;
}

static int set_all(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)o, (void)arg, (void)why, (void)wl;
	((struct lint_cli *)s)->opts.max_per_rule = 0;
	return 0;
}

static const struct cli_opt lint_opts[] = {
	{ "json", 0, NULL, "JSON on stdout", .set = cli_set_true, .off = L_OFF(json) },
	{ "perf-profile", 0, "P", "perf generation: " PV_PROFILE_LIST, .def = "current", .set = cli_set_profile,
	  .off = L_OFF(opts.profile), .example = "v6.1" },
	{ "all", 0, NULL, "every finding (default: the first " LINT_PER_RULE_TEXT " per rule and file)", .set = set_all },
	{ "sort", 0, "K", "severity (errors first, then warnings, infos, each in file order) or\n"
	  "offset (file order, as the walk finds them)", .def = "severity", .set = set_sort },
	{ "min-severity", 0, "S", "show only findings of severity S or worse: info, warning, error\n"
	  "(the summary and exit code count every one)", .def = "info", .set = set_min },
	{ "stack-size", 0, "BYTES", "perf's user stack copy per sample, for JD080 (perf's --call-graph\n"
	  "dwarf default; 0: no check)", .def = "8192", .set = cli_set_u64, .off = L_OFF(opts.stack_size) },
	{ "perf-dump-dir", 0, "DIR", "the directory perf reads the dump in, for JD091", .def_text = "no check",
	  .set = cli_set_str, .off = L_OFF(opts.dump_dir), .example = "/tmp" },
	{ "stats", 0, NULL, "throughput and peak memory on stderr", .set = cli_set_true, .off = L_OFF(stats) },
	{ "rules", 0, NULL, "list the rules", .set = cli_set_true, .off = L_OFF(rules) },
	{ 0 },
};

static void lint_tail(FILE *f)
{
	fprintf(f, "exit: 0 clean (infos and warnings allowed), 1 an error-level finding, 2 a file is\n"
		   "      not readable as a jitdump\n");
}

static const char *const lint_forms[] = { "[OPTIONS] FILE...", "--rules [--json]", NULL };

const struct cli_cmd cli_lint = {
	.name = "lint", .summary = "check jitdumps the way perf will read them", .forms = lint_forms,
	.opts = lint_opts, .main = hx_lint_main, .tail = lint_tail, .max_operands = -1,
	.about = "  Check jitdumps the way perf will read them: each finding has a stable rule id,\n"
		 "  a severity, the file offset and what perf will do with it.\n",
};

/* Lint one file and write its findings and summary; its exit code. */
static int lint_one(const char *path, struct lint_cli *cl, bool first, struct lint_summary *sum)
{
	struct lint_out o = { stdout, path, cl->json, cl->by_offset, true, cl->min, NULL, 0, 0, false };
	struct ju_err err = { 0 };
	cl->opts.name = path;
	if (cl->json) {
		printf("%s\n    { \"file\": ", first ? "" : ",");
		hx_jsonw_str(stdout, path, HX_JSONW_LATIN1);
		fputs(", \"findings\": [", stdout);
	}
	int rc = lint_file(path, &cl->opts, hx_lint_on_finding, &o, sum, &err);
	hx_lint_flush(&o);
	free(o.keep);
	int ec = lint_exit_code(sum);
	if (rc && !sum->count[LINT_ERROR])
		ec = 2;   /* could not open or map it */
	uint64_t shown = 0, all = sum->count[0] + sum->count[1] + sum->count[2];
	for (size_t r = 0; r < LR__COUNT; r++)
		if (lint_rules[r].sev >= cl->min)
			shown += cl->opts.max_per_rule && sum->per_rule[r] > cl->opts.max_per_rule ?
				 cl->opts.max_per_rule : sum->per_rule[r];
	if (ec == 2) {
		/* name the file and the offset, as the rest of the CLI does */
		if (!err.msg[0])
			snprintf(err.msg, sizeof(err.msg), "%s: not a jitdump", path);
		fprintf(stderr, "jitunwind lint: %s\n", err.msg);
	}
	if (cl->json) {
		printf("\n      ], \"readable\": %s, \"bytes\": %" PRIu64 ", \"records\": %" PRIu64 ", \"loads\": %" PRIu64
		       ", \"errors\": %" PRIu64 ", \"warnings\": %" PRIu64 ", \"infos\": %" PRIu64
		       ", \"suppressed\": %" PRIu64 ", \"rules\": { ", ec == 2 ? "false" : "true", sum->bytes,
		       sum->records, sum->loads, sum->count[LINT_ERROR], sum->count[LINT_WARNING], sum->count[LINT_INFO],
		       all - shown);
		hx_lint_rule_counts(stdout, sum, true);
		printf(" }, \"exit\": %d }", ec);
	} else if (ec != 2) {
		printf("%s: %" PRIu64 " records, %" PRIu64 " loads: %" PRIu64 " error%s, %" PRIu64 " warning%s, %" PRIu64
		       " info%s", path, sum->records, sum->loads, sum->count[LINT_ERROR],
		       sum->count[LINT_ERROR] == 1 ? "" : "s", sum->count[LINT_WARNING],
		       sum->count[LINT_WARNING] == 1 ? "" : "s", sum->count[LINT_INFO], sum->count[LINT_INFO] == 1 ? "" : "s");
		if (all > shown)
			printf(" (%" PRIu64 " not shown: %s)", all - shown, cl->min > LINT_INFO ? "--min-severity, --all" : "--all shows them");
		if (all) {
			fputs(" [", stdout);
			hx_lint_rule_counts(stdout, sum, false);
			putchar(']');
		}
		putchar('\n');
	}
	return ec;
}

int hx_lint_main(int argc, char **argv)
{
	struct lint_cli cl = { .opts = { .max_per_rule = LINT_DEFAULT_PER_RULE } };
	int optind, a = cli_parse(&cli_lint, argc, argv, &cl, &optind);
	if (a)
		return a == CLI_HELP ? 0 : 2;
	if (cl.rules) {
		hx_lint_list_rules(stdout, cl.json);
		return 0;
	}
	if (optind >= argc)
		return cli_usage_error(&cli_lint, "expected a FILE");
	int status = 0;
	uint64_t tot[3] = { 0, 0, 0 }, bytes = 0;
	double t0 = now();
	if (cl.json)
		printf("{ \"tool\": \"jitunwind\", \"command\": \"lint\", \"schema\": 1, \"profile\": \"%s\",\n  \"files\": [",
		       pv_profile_name(cl.opts.profile));
	for (int i = optind; i < argc; i++) {
		struct lint_summary sum;
		int ec = lint_one(argv[i], &cl, i == optind, &sum);
		if (ec > status)
			status = ec;
		for (int s = 0; s < 3; s++)
			tot[s] += sum.count[s];
		bytes += sum.bytes;
	}
	if (cl.json)
		printf("\n  ],\n  \"totals\": { \"errors\": %" PRIu64 ", \"warnings\": %" PRIu64 ", \"infos\": %" PRIu64
		       ", \"exit\": %d } }\n", tot[LINT_ERROR], tot[LINT_WARNING], tot[LINT_INFO], status);
	if (cl.stats) {
		double secs = now() - t0;
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "lint: %" PRIu64 " bytes in %.3f s: %.1f MB/s, peak RSS %.1f MB\n", bytes, secs,
			secs > 0 ? (double)bytes / secs / 1e6 : 0.0, (double)ru.ru_maxrss / 1024.0);
	}
	return status;
}
