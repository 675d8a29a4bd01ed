/* `jitunwind lint FILE...`: any producer's jitdump the way perf reads it
 * (unwinders/lint.h), as text or JSON; `dump` is in dumpcmd.c. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
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

#include "unwinders/ehframe.h"
#include "unwinders/jitdump.h"
#include "unwinders/lint.h"
#include "unwinders/perfview.h"
#include "harness/lintcmd.h"


#define LINT_DEFAULT_PER_RULE 20

/* ---- JSON output ---- */

void hx_lj_str(FILE *f, const char *s, size_t n)
{
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", f);
		else if (ch == '\t')
			fputs("\\t", f);
		else if (ch < 0x20 || ch >= 0x7f)
			fprintf(f, "\\u%04x", ch);   /* bytes as Latin-1: always valid JSON */
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

void hx_lj_cstr(FILE *f, const char *s)
{
	if (s)
		hx_lj_str(f, s, strlen(s));
	else
		fputs("null", f);
}

void hx_lj_hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

const char *hx_lj_pname(const char *s, size_t n, char *buf, size_t cap)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < cap && i < 200; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
			buf[o++] = (char)ch;
		else
			o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", ch);
	}
	buf[o] = 0;
	return buf;
}

/* ---- lint ---- */

struct lint_out {
	FILE *f;
	const char *path;
	bool json;
	bool first;
};

static void on_finding(const struct lint_finding *x, void *arg)
{
	struct lint_out *o = arg;
	if (o->json) {
		fprintf(o->f, "%s\n        { \"id\": \"%s\", \"name\": \"%s\", \"severity\": \"%s\", \"offset\": %" PRIu64
			", \"message\": ", o->first ? "" : ",", x->rule->id, x->rule->name, lint_sev_name(x->rule->sev),
			x->offset);
		hx_lj_cstr(o->f, x->msg);
		fputs(", \"perf\": ", o->f);
		hx_lj_cstr(o->f, x->rule->perf);
		fputs(" }", o->f);
		o->first = false;
		return;
	}
	fprintf(o->f, "%s:0x%" PRIx64 ": %s: %s %s: %s\n    perf: %s\n", o->path, x->offset,
		lint_sev_name(x->rule->sev), x->rule->id, x->rule->name, x->msg, x->rule->perf);
}

static void usage_lint(FILE *f)
{
	fprintf(f,
		"usage: jitunwind lint [--json] [--perf-profile P] [--all] [--stats] FILE...\n"
		"       jitunwind lint --rules\n"
		"  Check jitdumps the way perf will read them: each finding has a stable rule id,\n"
		"  a severity, the file offset and what perf will do with it.\n"
		"  --json            JSON on stdout\n"
		"  --perf-profile P  perf generation: current (default), v6.1, 5.x-0x40\n"
		"  --all             every finding (default: the first %d per rule and file)\n"
		"  --stats           throughput and peak memory on stderr\n"
		"  --rules           list the rules\n"
		"exit: 0 clean (infos and warnings allowed), 1 an error-level finding, 2 a file is\n"
		"      not readable as a jitdump\n", LINT_DEFAULT_PER_RULE);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void list_rules(FILE *f, bool json)
{
	if (json)
		fputs("{ \"tool\": \"jitunwind\", \"command\": \"lint-rules\", \"schema\": 1, \"rules\": [", f);
	for (size_t i = 0; i < LR__COUNT; i++) {
		const struct lint_rule *r = &lint_rules[i];
		if (json) {
			fprintf(f, "%s\n  { \"id\": \"%s\", \"name\": \"%s\", \"severity\": \"%s\", \"perf\": ", i ? "," : "",
				r->id, r->name, lint_sev_name(r->sev));
			hx_lj_cstr(f, r->perf);
			fputs(" }", f);
		} else {
			fprintf(f, "%s %-22s %-7s %s\n", r->id, r->name, lint_sev_name(r->sev), r->perf);
		}
	}
	if (json)
		fputs("\n] }\n", f);
}

int hx_lint_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, 0, 'j' }, { "perf-profile", required_argument, 0, 'p' },
		{ "all", no_argument, 0, 'a' }, { "stats", no_argument, 0, 's' },
		{ "rules", no_argument, 0, 'r' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	struct lint_opts opts = { PV_CURRENT, NULL, LINT_DEFAULT_PER_RULE };
	bool json = false, stats = false, rules = false;
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'j': json = true; break;
		case 'a': opts.max_per_rule = 0; break;
		case 's': stats = true; break;
		case 'r': rules = true; break;
		case 'p':
			if (pv_profile_parse(optarg, &opts.profile)) {
				fprintf(stderr, "jitunwind lint: --perf-profile %s: expected current, v6.1 or 5.x-0x40\n", optarg);
				return 2;
			}
			break;
		case 'h': usage_lint(stdout); return 0;
		default: usage_lint(stderr); return 2;
		}
	}
	if (rules) {
		list_rules(stdout, json);
		return 0;
	}
	if (optind >= argc) {
		usage_lint(stderr);
		return 2;
	}
	int status = 0;
	uint64_t tot[3] = { 0, 0, 0 }, bytes = 0;
	double t0 = now();
	if (json)
		printf("{ \"tool\": \"jitunwind\", \"command\": \"lint\", \"schema\": 1, \"profile\": \"%s\",\n  \"files\": [",
		       pv_profile_name(opts.profile));
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i];
		struct lint_out o = { stdout, path, json, true };
		struct lint_summary sum;
		char err[4352] = "";
		opts.name = path;
		if (json) {
			printf("%s\n    { \"file\": ", i > optind ? "," : "");
			hx_lj_cstr(stdout, path);
			fputs(", \"findings\": [", stdout);
		}
		int rc = lint_file(path, &opts, on_finding, &o, &sum, err, sizeof(err));
		int ec = lint_exit_code(&sum);
		if (rc && !sum.count[LINT_ERROR])
			ec = 2;   /* could not open or map it */
		if (ec > status)
			status = ec;
		for (int s = 0; s < 3; s++)
			tot[s] += sum.count[s];
		bytes += sum.bytes;
		uint64_t shown = 0, all = sum.count[0] + sum.count[1] + sum.count[2];
		for (size_t r = 0; r < LR__COUNT; r++)
			shown += opts.max_per_rule && sum.per_rule[r] > opts.max_per_rule ? opts.max_per_rule : sum.per_rule[r];
		if (ec == 2) {
			/* name the file and the offset, as the rest of the CLI does */
			if (!err[0])
				snprintf(err, sizeof(err), "%s: not a jitdump", path);
			fprintf(stderr, "jitunwind lint: %s\n", err);
		}
		if (json) {
			printf("\n      ], \"readable\": %s, \"bytes\": %" PRIu64 ", \"records\": %" PRIu64 ", \"loads\": %" PRIu64
			       ", \"errors\": %" PRIu64 ", \"warnings\": %" PRIu64 ", \"infos\": %" PRIu64
			       ", \"suppressed\": %" PRIu64 ", \"exit\": %d }", ec == 2 ? "false" : "true", sum.bytes,
			       sum.records, sum.loads, sum.count[LINT_ERROR], sum.count[LINT_WARNING], sum.count[LINT_INFO],
			       all - shown, ec);
		} else if (ec != 2) {
			printf("%s: %" PRIu64 " records, %" PRIu64 " loads: %" PRIu64 " error%s, %" PRIu64 " warning%s, %" PRIu64
			       " info%s", path, sum.records, sum.loads, sum.count[LINT_ERROR],
			       sum.count[LINT_ERROR] == 1 ? "" : "s", sum.count[LINT_WARNING],
			       sum.count[LINT_WARNING] == 1 ? "" : "s", sum.count[LINT_INFO], sum.count[LINT_INFO] == 1 ? "" : "s");
			if (all > shown)
				printf(" (%" PRIu64 " not shown: --all shows them)", all - shown);
			putchar('\n');
		}
	}
	if (json)
		printf("\n  ],\n  \"totals\": { \"errors\": %" PRIu64 ", \"warnings\": %" PRIu64 ", \"infos\": %" PRIu64
		       ", \"exit\": %d } }\n", tot[LINT_ERROR], tot[LINT_WARNING], tot[LINT_INFO], status);
	if (stats) {
		double secs = now() - t0;
		struct rusage ru;
		getrusage(RUSAGE_SELF, &ru);
		fprintf(stderr, "lint: %" PRIu64 " bytes in %.3f s: %.1f MB/s, peak RSS %.1f MB\n", bytes, secs,
			secs > 0 ? (double)bytes / secs / 1e6 : 0.0, (double)ru.ru_maxrss / 1024.0);
	}
	return status;
}
