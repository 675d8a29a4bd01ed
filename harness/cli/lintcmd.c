/* `jitunwind lint FILE...`: any producer's jitdump the way perf reads it
 * (unwinders/lint/lint.h), as text or JSON; `dump` is in dumpcmd.c. */
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

#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/lint/lint.h"
#include "unwinders/model/perfview.h"
#include "harness/report/jsonw.h"
#include "harness/cli/lintcmd.h"


#define LINT_DEFAULT_PER_RULE 20

/* ---- text output ---- */

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

/* Findings of one file are kept and written errors first (then warnings,
 * infos; file order within a severity) unless --sort offset streams them. */
struct lint_out {
	FILE *f;
	const char *path;
	bool json, by_offset;
	bool first;
	enum lint_sev min;
	struct lint_finding *keep;
	size_t nkeep, cap;
	bool oom;
};

static void json_where(FILE *f, const struct lint_where *w)
{
	if (!w->load && !w->whole)
		return;
	fprintf(f, ", \"load\": %" PRIu64 ", \"code_offsets\": ", w->load);
	if (w->whole) {
		fputs("\"all\"", f);
		return;
	}
	fputc('[', f);
	for (unsigned i = 0; i < w->npc; i++)
		fprintf(f, "%s%" PRIu64, i ? ", " : "", w->pc[i]);
	fputc(']', f);
}

static void write_finding(struct lint_out *o, const struct lint_finding *x)
{
	if (o->json) {
		fprintf(o->f, "%s\n        { \"id\": \"%s\", \"name\": \"%s\", \"severity\": \"%s\", \"offset\": %" PRIu64
			", \"message\": ", o->first ? "" : ",", x->rule->id, x->rule->name, lint_sev_name(x->rule->sev),
			x->offset);
		hx_jsonw_str(o->f, x->msg, HX_JSONW_LATIN1);
		fputs(", \"perf\": ", o->f);
		hx_jsonw_str(o->f, x->rule->perf, HX_JSONW_LATIN1);
		json_where(o->f, &x->where);
		fputs(" }", o->f);
		o->first = false;
		return;
	}
	fprintf(o->f, "%s:0x%" PRIx64 ": %s: %s %s: %s\n    perf: %s\n", o->path, x->offset,
		lint_sev_name(x->rule->sev), x->rule->id, x->rule->name, x->msg, x->rule->perf);
}

static void on_finding(const struct lint_finding *x, void *arg)
{
	struct lint_out *o = arg;
	if (x->rule->sev < o->min)
		return;
	if (o->by_offset || o->oom) {
		write_finding(o, x);
		return;
	}
	if (o->nkeep == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		struct lint_finding *k = realloc(o->keep, cap * sizeof(*k));
		if (!k) {
			/* out of memory: what is kept first, then the rest as it comes */
			for (size_t i = 0; i < o->nkeep; i++)
				write_finding(o, &o->keep[i]);
			o->nkeep = 0;
			o->oom = true;
			write_finding(o, x);
			return;
		}
		o->keep = k;
		o->cap = cap;
	}
	o->keep[o->nkeep++] = *x;
}

/* The kept findings, errors first, each severity in file order. */
static void flush_findings(struct lint_out *o)
{
	for (int sev = LINT_ERROR; sev >= LINT_INFO; sev--)
		for (size_t i = 0; i < o->nkeep; i++)
			if ((int)o->keep[i].rule->sev == sev)
				write_finding(o, &o->keep[i]);
	o->nkeep = 0;
}

/* "JD052 x3, JD038 x1": the rules that fired, in table order */
static void rule_counts(FILE *f, const struct lint_summary *sum, bool json)
{
	bool first = true;
	for (size_t r = 0; r < LR__COUNT; r++) {
		if (!sum->per_rule[r])
			continue;
		if (json)
			fprintf(f, "%s\"%s\": %" PRIu64, first ? "" : ", ", lint_rules[r].id, sum->per_rule[r]);
		else
			fprintf(f, "%s%s %s x%" PRIu64, first ? "" : ", ", lint_rules[r].id, lint_rules[r].name,
				sum->per_rule[r]);
		first = false;
	}
}

static void usage_lint(FILE *f)
{
	fprintf(f,
		"usage: jitunwind lint [--json] [--perf-profile P] [--all] [--sort severity|offset]\n"
		"                      [--min-severity S] [--stack-size N] [--perf-dump-dir D] [--stats] FILE...\n"
		"       jitunwind lint --rules\n"
		"  Check jitdumps the way perf will read them: each finding has a stable rule id,\n"
		"  a severity, the file offset and what perf will do with it.\n"
		"  --json            JSON on stdout\n"
		"  --perf-profile P  perf generation: current (default), v6.1, 5.x-0x40\n"
		"  --all             every finding (default: the first %d per rule and file)\n"
		"  --sort K          severity (default: errors first, then warnings, infos, each\n"
		"                    in file order) or offset (file order, as the walk finds them)\n"
		"  --min-severity S  show only findings of severity S or worse: info (default),\n"
		"                    warning, error (the summary and exit code count every one)\n"
		"  --stack-size N    perf's user stack copy per sample, for JD080 (default 8192,\n"
		"                    perf's --call-graph dwarf default; 0: no check)\n"
		"  --perf-dump-dir D the directory perf reads the dump in, for JD091 (default: no check)\n"
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
			hx_jsonw_str(f, r->perf, HX_JSONW_LATIN1);
			fputs(" }", f);
		} else {
			fprintf(f, "%s %-22s %-7s %s\n", r->id, r->name, lint_sev_name(r->sev), r->perf);
		}
	}
	if (json)
		fputs("\n] }\n", f);
}

struct lint_cli {
	struct lint_opts opts;
	bool json, stats, rules, by_offset;
	enum lint_sev min;
};

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-')
		return -1;
	*v = x;
	return 0;
}

/* 0, or 2 after a message (exit code of a bad command line), 1 for --help */
static int lint_args(int argc, char **argv, struct lint_cli *cl)
{
	static const struct option lo[] = {
		{ "json", no_argument, 0, 'j' }, { "perf-profile", required_argument, 0, 'p' },
		{ "all", no_argument, 0, 'a' }, { "stats", no_argument, 0, 's' },
		{ "rules", no_argument, 0, 'r' }, { "help", no_argument, 0, 'h' },
		{ "sort", required_argument, 0, 'o' }, { "min-severity", required_argument, 0, 'm' },
		{ "stack-size", required_argument, 0, 'k' }, { "perf-dump-dir", required_argument, 0, 'D' },
		{ 0, 0, 0, 0 },
	};
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'j': cl->json = true; break;
		case 'a': cl->opts.max_per_rule = 0; break;
		case 's': cl->stats = true; break;
		case 'r': cl->rules = true; break;
		case 'p':
			if (pv_profile_parse(optarg, &cl->opts.profile)) {
				fprintf(stderr, "jitunwind lint: --perf-profile %s: expected %s\n", optarg, pv_profile_choices());
				return 2;
			}
			break;
		case 'o':
			if (strcmp(optarg, "severity") && strcmp(optarg, "offset")) {
				fprintf(stderr, "jitunwind lint: --sort %s: expected severity or offset\n", optarg);
				return 2;
			}
			cl->by_offset = !strcmp(optarg, "offset");
			break;
		case 'm':
			if (!strcmp(optarg, "info") || !strcmp(optarg, "warning") || !strcmp(optarg, "error")) {
				cl->min = optarg[0] == 'i' ? LINT_INFO : optarg[0] == 'w' ? LINT_WARNING : LINT_ERROR;
				break;
			}
			fprintf(stderr, "jitunwind lint: --min-severity %s: expected info, warning or error\n", optarg);
			return 2;
		case 'k':
			if (parse_u64(optarg, &cl->opts.stack_size)) {
				fprintf(stderr, "jitunwind lint: --stack-size %s: expected a byte count\n", optarg);
				return 2;
			}
			break;
		case 'D': cl->opts.dump_dir = optarg; break;
		case 'h': usage_lint(stdout); return 1;
		default: usage_lint(stderr); return 2;
		}
	}
	return 0;
}

/* Lint one file and write its findings and summary; its exit code. */
static int lint_one(const char *path, struct lint_cli *cl, bool first, struct lint_summary *sum)
{
	struct lint_out o = { stdout, path, cl->json, cl->by_offset, true, cl->min, NULL, 0, 0, false };
	char err[4352] = "";
	cl->opts.name = path;
	if (cl->json) {
		printf("%s\n    { \"file\": ", first ? "" : ",");
		hx_jsonw_str(stdout, path, HX_JSONW_LATIN1);
		fputs(", \"findings\": [", stdout);
	}
	int rc = lint_file(path, &cl->opts, on_finding, &o, sum, err, sizeof(err));
	flush_findings(&o);
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
		if (!err[0])
			snprintf(err, sizeof(err), "%s: not a jitdump", path);
		fprintf(stderr, "jitunwind lint: %s\n", err);
	}
	if (cl->json) {
		printf("\n      ], \"readable\": %s, \"bytes\": %" PRIu64 ", \"records\": %" PRIu64 ", \"loads\": %" PRIu64
		       ", \"errors\": %" PRIu64 ", \"warnings\": %" PRIu64 ", \"infos\": %" PRIu64
		       ", \"suppressed\": %" PRIu64 ", \"rules\": { ", ec == 2 ? "false" : "true", sum->bytes,
		       sum->records, sum->loads, sum->count[LINT_ERROR], sum->count[LINT_WARNING], sum->count[LINT_INFO],
		       all - shown);
		rule_counts(stdout, sum, true);
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
			rule_counts(stdout, sum, false);
			putchar(']');
		}
		putchar('\n');
	}
	return ec;
}

int hx_lint_main(int argc, char **argv)
{
	struct lint_cli cl = { .opts = { PV_CURRENT, NULL, LINT_DEFAULT_PER_RULE, 8192 }, .min = LINT_INFO };
	int a = lint_args(argc, argv, &cl);
	if (a)
		return a == 1 ? 0 : a;
	if (cl.rules) {
		list_rules(stdout, cl.json);
		return 0;
	}
	if (optind >= argc) {
		usage_lint(stderr);
		return 2;
	}
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
