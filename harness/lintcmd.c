/* `jitunwind lint FILE...` and `jitunwind dump FILE`: any producer's jitdump
 * the way perf reads it (unwinders/lint.h), as text or JSON. */
#include <capstone/capstone.h>
#include <dwarf.h>
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

int hx_dump_main(int argc, char **argv);
int hx_lint_main(int argc, char **argv);
int hx_dump_mem(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
		enum pv_profile prof, bool code);

#define LINT_DEFAULT_PER_RULE 20

/* ---- JSON output ---- */

static void jstr(FILE *f, const char *s, size_t n)
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

static void jcstr(FILE *f, const char *s)
{
	if (s)
		jstr(f, s, strlen(s));
	else
		fputs("null", f);
}

static void hex(FILE *f, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%02x", p[i]);
}

/* A printable copy of a name: bytes outside ASCII as \xNN, at most 200. */
static const char *pname(const char *s, size_t n, char *buf, size_t cap)
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
		jcstr(o->f, x->msg);
		fputs(", \"perf\": ", o->f);
		jcstr(o->f, x->rule->perf);
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
			jcstr(f, r->perf);
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
			jcstr(stdout, path);
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

/* ---- dump ---- */

static const char *rec_type(uint32_t id)
{
	static const char *const n[] = { "CODE_LOAD", "CODE_MOVE", "CODE_DEBUG_INFO", "CODE_CLOSE",
					 "CODE_UNWINDING_INFO" };
	return id < 5 ? n[id] : "UNKNOWN";
}

static const char *arch_of(uint32_t mach)
{
	return mach == 62 ? "x86_64" : mach == 183 ? "aarch64" : mach == 243 ? "riscv" : mach == 3 ? "i386" :
	       mach == 40 ? "arm" : "unknown";
}

/* DWARF register name as GNU as writes it */
static const char *dwreg(uint32_t mach, unsigned r, char *buf, size_t n, bool pct)
{
	static const char *const x86[17] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
					     "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	if (mach == 62 && r < 17)
		snprintf(buf, n, "%s%s", pct ? "%" : "", x86[r]);
	else if (mach == 183 && r < 31)
		snprintf(buf, n, "x%u", r);
	else if (mach == 183 && r == 31)
		snprintf(buf, n, "sp");
	else
		snprintf(buf, n, "r%u", r);
	return buf;
}

struct dump {
	FILE *f;
	bool json;
	uint32_t mach;
	enum pv_profile prof;
	bool code;
	csh cs;
	bool cs_ok;
	const uint8_t *data;
	bool unw_used;
	uint64_t unw_used_off;
};

/* ".cfi_escape op[, reg], len, bytes" from the "[xx yy ...]" of an expression
 * (register and length below 128 are one ULEB byte each). */
static void escape(char *out, size_t n, unsigned op, int reg, const char *h)
{
	size_t len = 0, o;
	if (!h)
		return;
	for (const char *q = h + 1; *q && *q != ']'; q++)
		if (*q != ' ' && q[-1] != ' ' && q[-1] != '[')
			continue;
		else if (*q != ' ')
			len++;
	if (reg >= 0)
		o = (size_t)snprintf(out, n, ".cfi_escape 0x%02x, 0x%02x, 0x%02zx", op, reg & 0x7f, len & 0x7f);
	else
		o = (size_t)snprintf(out, n, ".cfi_escape 0x%02x, 0x%02zx", op, len & 0x7f);
	for (const char *q = h + 1; *q && *q != ']' && o + 8 < n; q++)
		if (*q != ' ' && (q[-1] == ' ' || q[-1] == '['))
			o += (size_t)snprintf(out + o, n - o, ", 0x%c%c", q[0], q[1] && q[1] != ']' ? q[1] : '0');
}

/* ".cfi_*" text for one DW_CFA_* line from ehf_disasm_insn (empty for
 * advances and nops, which are labels or nothing in assembly). */
static void cfi_text(const struct dump *d, const char *dw, char *out, size_t n)
{
	unsigned a, b;
	long long v;
	int k = 0;
	char ra[24], rb[24];
	out[0] = 0;
	if (sscanf(dw, "DW_CFA_def_cfa r%u%lld%n", &a, &v, &k) == 2 && !dw[k])
		snprintf(out, n, ".cfi_def_cfa %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_def_cfa_sf r%u%lld%n", &a, &v, &k) == 2 && !dw[k])
		snprintf(out, n, ".cfi_def_cfa %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_def_cfa_offset%*[_sf] %lld", &v) == 1 ||
		 sscanf(dw, "DW_CFA_def_cfa_offset %lld", &v) == 1)
		snprintf(out, n, ".cfi_def_cfa_offset %lld", v);
	else if (sscanf(dw, "DW_CFA_def_cfa_register r%u", &a) == 1)
		snprintf(out, n, ".cfi_def_cfa_register %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (sscanf(dw, "DW_CFA_%*[a-z_GNU] r%u at cfa%lld", &a, &v) == 2)
		snprintf(out, n, ".cfi_offset %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_%*[a-z_] r%u is cfa%lld", &a, &v) == 2)
		snprintf(out, n, ".cfi_val_offset %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_register r%u in r%u", &a, &b) == 2)
		snprintf(out, n, ".cfi_register %s, %s", dwreg(d->mach, a, ra, sizeof(ra), true),
			 dwreg(d->mach, b, rb, sizeof(rb), true));
	else if (sscanf(dw, "DW_CFA_restore%*[_extended] r%u", &a) == 1 || sscanf(dw, "DW_CFA_restore r%u", &a) == 1)
		snprintf(out, n, ".cfi_restore %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (sscanf(dw, "DW_CFA_undefined r%u", &a) == 1)
		snprintf(out, n, ".cfi_undefined %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (sscanf(dw, "DW_CFA_same_value r%u", &a) == 1)
		snprintf(out, n, ".cfi_same_value %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (!strcmp(dw, "DW_CFA_remember_state"))
		snprintf(out, n, ".cfi_remember_state");
	else if (!strcmp(dw, "DW_CFA_restore_state"))
		snprintf(out, n, ".cfi_restore_state");
	else if (!strcmp(dw, "DW_CFA_AARCH64_negate_ra_state"))
		snprintf(out, n, ".cfi_negate_ra_state");
	else if (!strncmp(dw, "DW_CFA_def_cfa_expression [", 27))
		escape(out, n, 0x0f, -1, strchr(dw, '['));
	else if (sscanf(dw, "DW_CFA_expression r%u [", &a) == 1)
		escape(out, n, 0x10, (int)a, strchr(dw, '['));
	else if (sscanf(dw, "DW_CFA_val_expression r%u [", &a) == 1)
		escape(out, n, 0x16, (int)a, strchr(dw, '['));
	else if (sscanf(dw, "DW_CFA_GNU_args_size %lld", &v) == 1)
		snprintf(out, n, ".cfi_escape 0x2e, 0x%02llx", v & 0x7f);
}

/* One CFA program: each instruction's offset, DW_CFA text and .cfi text. */
static void dump_program(struct dump *d, const uint8_t *insns, size_t len, uint64_t off,
			 const struct ehf_cie *cie, uint64_t loc, const char *ind)
{
	size_t pos = 0;
	bool first = true;
	if (d->json)
		fputs("[", d->f);
	for (unsigned k = 0; pos < len && k < 100000; k++) {
		size_t at = pos;
		char dw[480], cf[480];
		struct ehf_err ee;
		if (ehf_disasm_insn(insns, len, &pos, cie, dw, sizeof(dw), &ee)) {
			if (d->json) {
				fprintf(d->f, "%s{ \"offset\": %" PRIu64 ", \"error\": ", first ? "" : ", ", off + at);
				jcstr(d->f, ee.msg);
				fputs(" }", d->f);
			} else {
				fprintf(d->f, "%s0x%04" PRIx64 "  error: %s\n", ind, off + at, ee.msg);
			}
			break;
		}
		cfi_text(d, dw, cf, sizeof(cf));
		uint64_t delta;
		char note[64] = "";
		if (sscanf(dw, "DW_CFA_advance_loc%*[124] %" SCNu64, &delta) == 1 ||
		    sscanf(dw, "DW_CFA_advance_loc %" SCNu64, &delta) == 1) {
			loc += delta;
			snprintf(note, sizeof(note), "-> 0x%" PRIx64, loc);
		}
		if (d->json) {
			fprintf(d->f, "%s{ \"offset\": %" PRIu64 ", \"bytes\": \"", first ? "" : ", ", off + at);
			hex(d->f, insns + at, pos - at);
			fputs("\", \"dwarf\": ", d->f);
			jcstr(d->f, dw);
			fputs(", \"cfi\": ", d->f);
			jcstr(d->f, cf[0] ? cf : NULL);
			fputs(" }", d->f);
		} else if (cf[0] || note[0]) {
			fprintf(d->f, "%s0x%04" PRIx64 "  %-34s %s%s\n", ind, off + at, dw, cf, note);
		} else {
			fprintf(d->f, "%s0x%04" PRIx64 "  %s\n", ind, off + at, dw);
		}
		first = false;
	}
	if (d->json)
		fputs("]", d->f);
}

static void rule_text(const struct dump *d, const struct ehf_rule *ru, char *out, size_t n)
{
	char r[24];
	switch (ru->kind) {
	case EHF_UNDEF: snprintf(out, n, "undef"); break;
	case EHF_SAME: snprintf(out, n, "same"); break;
	case EHF_OFFSET: snprintf(out, n, "cfa%+" PRId64, ru->off); break;
	case EHF_VAL_OFFSET: snprintf(out, n, "val(cfa%+" PRId64 ")", ru->off); break;
	case EHF_REGISTER: snprintf(out, n, "%s", dwreg(d->mach, ru->reg, r, sizeof(r), false)); break;
	case EHF_EXPRESSION: snprintf(out, n, "expr(%zu bytes)", ru->expr_len); break;
	case EHF_VAL_EXPRESSION: snprintf(out, n, "val_expr(%zu bytes)", ru->expr_len); break;
	default: snprintf(out, n, "?"); break;
	}
}

/* A row as text: "cfa=rsp+8 rip=cfa-8" (registers with a rule the program set). */
static void row_text(const struct dump *d, const struct ehf_row *row, char *out, size_t n)
{
	char r[24], t[48];
	size_t o;
	if (!row->cfa_defined)
		o = (size_t)snprintf(out, n, "cfa=undefined");
	else if (row->cfa_kind == EHF_CFA_EXPR)
		o = (size_t)snprintf(out, n, "cfa=expr(%zu bytes)", row->cfa_expr_len);
	else
		o = (size_t)snprintf(out, n, "cfa=%s%+" PRId64, dwreg(d->mach, row->cfa_reg, r, sizeof(r), false),
				     row->cfa_off);
	for (unsigned i = 0; i < EHF_NREGS && o < n; i++) {
		if (row->reg[i].kind == EHF_INITIAL)
			continue;
		rule_text(d, &row->reg[i], t, sizeof(t));
		o += (size_t)snprintf(out + o, n - o, " %s=%s", dwreg(d->mach, i, r, sizeof(r), false), t);
	}
	if (row->ra_signed && o < n)
		snprintf(out + o, n - o, " ra_signed");
}

struct rows_arg {
	struct dump *d;
	bool first;
	const char *ind;
};

static int print_row(const struct ehf_row *row, void *arg)
{
	struct rows_arg *a = arg;
	char t[1024];
	row_text(a->d, row, t, sizeof(t));
	if (a->d->json) {
		fprintf(a->d->f, "%s{ \"loc\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", \"row\": ", a->first ? "" : ", ",
			row->loc, row->end);
		jcstr(a->d->f, t);
		fputs(" }", a->d->f);
	} else {
		fprintf(a->d->f, "%s[0x%" PRIx64 ", 0x%" PRIx64 ")  %s\n", a->ind, row->loc, row->end, t);
	}
	a->first = false;
	return 0;
}

static void hexdump(FILE *f, const uint8_t *p, size_t n, uint64_t off, const char *ind)
{
	for (size_t i = 0; i < n && i < 4096; i += 16) {
		fprintf(f, "%s0x%04" PRIx64 " ", ind, off + i);
		for (size_t k = i; k < i + 16 && k < n; k++)
			fprintf(f, " %02x", p[k]);
		fputc('\n', f);
	}
}

static void dump_eh_frame(struct dump *d, const uint8_t *p, size_t n, uint64_t file_off, uint64_t addr)
{
	struct ehf_table t;
	struct ehf_bases b = { addr, 0, 0, 8 };
	struct ehf_err ee;
	const char *ind = "          ";
	int rc = ehf_parse(&t, p, n, &b, &ee);
	if (d->json) {
		fprintf(d->f, "{ \"file_offset\": %" PRIu64 ", \"addr\": \"0x%" PRIx64 "\", \"size\": %zu", file_off, addr, n);
		if (rc) {
			fprintf(d->f, ", \"error\": { \"offset\": %" PRIu64 ", \"message\": ", ee.offset);
			jcstr(d->f, ee.msg);
			fputs(" }, \"bytes\": \"", d->f);
			hex(d->f, p, n);
			fputs("\" }", d->f);
			return;
		}
		fprintf(d->f, ", \"terminated\": %s, \"cies\": [", t.terminated ? "true" : "false");
	} else {
		fprintf(d->f, "        .eh_frame: file 0x%" PRIx64 ", %zu bytes, at 0x%" PRIx64 " in perf's layout\n",
			file_off, n, addr);
		if (rc) {
			fprintf(d->f, "%serror: .eh_frame+0x%" PRIx64 ": %s\n", ind, ee.offset, ee.msg);
			hexdump(d->f, p, n, 0, ind);
			return;
		}
	}
	for (size_t i = 0; i < t.ncies; i++) {
		const struct ehf_cie *c = &t.cies[i];
		if (d->json) {
			fprintf(d->f, "%s\n          { \"offset\": %" PRIu64 ", \"version\": %u, \"augmentation\": ", i ? "," : "",
				c->offset, c->version);
			jcstr(d->f, c->aug);
			fprintf(d->f, ", \"code_align\": %" PRIu64 ", \"data_align\": %" PRId64 ", \"ra\": %u, \"fde_enc\": "
				"\"0x%02x\", \"lsda_enc\": \"0x%02x\", \"signal\": %s, \"program\": ", c->code_align,
				c->data_align, c->ra_reg, c->fde_enc, c->lsda_enc, c->signal ? "true" : "false");
			dump_program(d, c->insns, c->insns_len, c->insns_off, c, 0, "");
			fputs(" }", d->f);
		} else {
			fprintf(d->f, "%sCIE 0x%" PRIx64 ": version %u \"%s\" code_align %" PRIu64 " data_align %" PRId64
				" ra r%u fde_enc 0x%02x%s\n", ind, c->offset, c->version, c->aug, c->code_align,
				c->data_align, c->ra_reg, c->fde_enc, c->signal ? " signal" : "");
			dump_program(d, c->insns, c->insns_len, c->insns_off, c, 0, "            ");
		}
	}
	if (d->json)
		fputs("], \"fdes\": [", d->f);
	for (size_t i = 0; i < t.nfdes; i++) {
		const struct ehf_fde *fd = &t.fdes[i];
		if (d->json) {
			fprintf(d->f, "%s\n          { \"offset\": %" PRIu64 ", \"cie\": %" PRIu64 ", \"pc_begin\": \"0x%" PRIx64
				"\", \"pc_end\": \"0x%" PRIx64 "\", \"program\": ", i ? "," : "", fd->offset, fd->cie->offset,
				fd->pc_begin, fd->pc_end);
			dump_program(d, fd->insns, fd->insns_len, fd->insns_off, fd->cie, fd->pc_begin, "");
			fputs(", \"rows\": [", d->f);
		} else {
			fprintf(d->f, "%sFDE 0x%" PRIx64 ": CIE 0x%" PRIx64 " pc [0x%" PRIx64 ", 0x%" PRIx64 ")\n", ind,
				fd->offset, fd->cie->offset, fd->pc_begin, fd->pc_end);
			dump_program(d, fd->insns, fd->insns_len, fd->insns_off, fd->cie, fd->pc_begin, "            ");
			fprintf(d->f, "%s  rows:\n", ind);
		}
		struct rows_arg ra = { d, true, "              " };
		if (ehf_rows(fd, print_row, &ra, &ee) < 0) {
			if (d->json) {
				fprintf(d->f, "%s{ \"error\": ", ra.first ? "" : ", ");
				jcstr(d->f, ee.msg);
				fputs(" }", d->f);
			} else {
				fprintf(d->f, "            error: %s\n", ee.msg);
			}
		}
		if (d->json)
			fputs("] }", d->f);
	}
	if (d->json)
		fputs("] }", d->f);
	else
		fprintf(d->f, "%s%s\n", ind, t.terminated ? "zero terminator" : "no zero terminator");
	ehf_table_free(&t);
}

static void dump_hdr(struct dump *d, const uint8_t *p, size_t n, uint64_t file_off, uint64_t addr)
{
	struct ehf_hdr h;
	struct ehf_err ee;
	const char *ind = "          ";
	int rc = ehf_parse_hdr(p, n, addr, &h, &ee);
	if (d->json) {
		fprintf(d->f, "{ \"file_offset\": %" PRIu64 ", \"addr\": \"0x%" PRIx64 "\", \"size\": %zu", file_off, addr, n);
		if (rc) {
			fprintf(d->f, ", \"error\": { \"offset\": %" PRIu64 ", \"message\": ", ee.offset);
			jcstr(d->f, ee.msg);
			fputs(" }, \"bytes\": \"", d->f);
			hex(d->f, p, n);
			fputs("\" }", d->f);
			return;
		}
		fprintf(d->f, ", \"version\": %u, \"eh_frame_ptr_enc\": \"0x%02x\", \"eh_frame_ptr\": \"0x%" PRIx64
			"\", \"fde_count_enc\": \"0x%02x\", \"fde_count\": %" PRIu64 ", \"table_enc\": \"0x%02x\", \"table\": [",
			h.version, h.eh_frame_ptr_enc, h.eh_frame_ptr, h.fde_count_enc, h.fde_count, h.table_enc);
	} else {
		fprintf(d->f, "        .eh_frame_hdr: file 0x%" PRIx64 ", %zu bytes, at 0x%" PRIx64 " in perf's layout\n",
			file_off, n, addr);
		if (rc) {
			fprintf(d->f, "%serror: .eh_frame_hdr+0x%" PRIx64 ": %s\n", ind, ee.offset, ee.msg);
			hexdump(d->f, p, n, 0, ind);
			return;
		}
		fprintf(d->f, "%sversion %u, eh_frame_ptr_enc 0x%02x -> 0x%" PRIx64 ", fde_count_enc 0x%02x -> %" PRIu64
			", table_enc 0x%02x%s\n", ind, h.version, h.eh_frame_ptr_enc, h.eh_frame_ptr, h.fde_count_enc,
			h.fde_count, h.table_enc, h.has_table ? "" : " (no table)");
	}
	struct ehf_bases b = { addr, 0, addr, 8 };
	for (uint64_t i = 0; h.has_table && i < h.fde_count && i < 100000; i++) {
		size_t pos = (size_t)(h.table_off + i * h.entry_size);
		uint64_t loc, fa;
		if (ehf_read_encoded(p, n, &pos, h.table_enc, &b, &loc, &ee) ||
		    ehf_read_encoded(p, n, &pos, h.table_enc, &b, &fa, &ee))
			break;
		if (d->json)
			fprintf(d->f, "%s{ \"initial_loc\": \"0x%" PRIx64 "\", \"fde\": \"0x%" PRIx64 "\" }", i ? ", " : "",
				loc, fa);
		else
			fprintf(d->f, "%s[%" PRIu64 "] initial_loc 0x%" PRIx64 " fde 0x%" PRIx64 "\n", ind, i, loc, fa);
	}
	if (d->json)
		fputs("] }", d->f);
}

static void dump_code(struct dump *d, const struct jdr_load *l, uint64_t file_off)
{
	const char *ind = "          ";
	if (d->json) {
		fprintf(d->f, "{ \"file_offset\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": \"", file_off, l->code_size);
		hex(d->f, l->code, (size_t)l->code_size);
		fputs("\", \"insns\": [", d->f);
	} else {
		fprintf(d->f, "        code: file 0x%" PRIx64 ", %" PRIu64 " bytes\n", file_off, l->code_size);
	}
	const uint8_t *p = l->code;
	size_t left = (size_t)l->code_size;
	uint64_t addr = l->code_addr;
	cs_insn *in = d->cs_ok ? cs_malloc(d->cs) : NULL;
	bool first = true;
	for (unsigned k = 0; left && k < (1u << 22); k++) {
		const uint8_t *at = p;
		uint64_t a0 = addr;
		char text[256];
		size_t len;
		if (in && cs_disasm_iter(d->cs, &p, &left, &addr, in)) {
			snprintf(text, sizeof(text), "%s%s%s", in->mnemonic, in->op_str[0] ? " " : "", in->op_str);
			len = in->size;
		} else {
			snprintf(text, sizeof(text), ".byte 0x%02x", *p);
			len = 1;
			p++;
			left--;
			addr++;
		}
		if (d->json) {
			fprintf(d->f, "%s{ \"offset\": %" PRIu64 ", \"addr\": \"0x%" PRIx64 "\", \"bytes\": \"", first ? "" : ", ",
				a0 - l->code_addr, a0);
			hex(d->f, at, len);
			fputs("\", \"text\": ", d->f);
			jcstr(d->f, text);
			fputs(" }", d->f);
		} else {
			char hb[64] = "";
			for (size_t i = 0; i < len && i < 15; i++)
				snprintf(hb + 3 * i, sizeof(hb) - 3 * i, "%02x ", at[i]);
			fprintf(d->f, "%s0x%" PRIx64 " +0x%-4" PRIx64 " %-30s %s\n", ind, a0, a0 - l->code_addr, hb, text);
		}
		first = false;
	}
	if (in)
		cs_free(in, 1);
	if (d->json)
		fputs("] }", d->f);
}

static void dump_view(struct dump *d, const struct jdr_load *l, const struct pv_layout *ly)
{
	if (d->json) {
		fprintf(d->f, "{ \"profile\": \"%s\", \"so\": \"jitted-%u-%" PRIu64 ".so\", \"text\": { \"addr\": \"0x%" PRIx64
			"\", \"size\": %" PRIu64 " }", pv_profile_name(d->prof), l->pid, l->code_index, ly->text_addr,
			ly->text_size);
		if (ly->has_unwind)
			fprintf(d->f, ", \"eh_frame\": { \"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 " }, \"eh_frame_hdr\":"
				" { \"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 " }", ly->eh_addr, ly->eh_size, ly->hdr_addr,
				ly->hdr_size);
		fprintf(d->f, ", \"pt_load\": { \"offset\": \"0x%" PRIx64 "\", \"vaddr\": \"0x%" PRIx64 "\", \"size\": %"
			PRIu64 " }, \"mmap2\": { \"start\": \"0x%" PRIx64 "\", \"len\": \"0x%" PRIx64 "\", \"pgoff\": \"0x%"
			PRIx64 "\" }, \"runtime\": { \"text\": \"0x%" PRIx64 "\"", ly->load_offset, ly->load_vaddr,
			ly->load_size, ly->map_start, ly->map_len, ly->map_pgoff, ly->rt_text);
		if (ly->has_unwind)
			fprintf(d->f, ", \"eh_frame\": \"0x%" PRIx64 "\", \"eh_frame_hdr\": \"0x%" PRIx64 "\"", ly->rt_eh,
				ly->rt_hdr);
		fputs(" } }", d->f);
		return;
	}
	fprintf(d->f, "        perf's view (%s): jitted-%u-%" PRIu64 ".so  .text 0x%" PRIx64 " (%" PRIu64 " bytes)",
		pv_profile_name(d->prof), l->pid, l->code_index, ly->text_addr, ly->text_size);
	if (ly->has_unwind)
		fprintf(d->f, "  .eh_frame 0x%" PRIx64 " (%" PRIu64 ")  .eh_frame_hdr 0x%" PRIx64 " (%" PRIu64 ")",
			ly->eh_addr, ly->eh_size, ly->hdr_addr, ly->hdr_size);
	fprintf(d->f, "\n          PT_LOAD offset 0x%" PRIx64 " vaddr 0x%" PRIx64 " size 0x%" PRIx64 "; MMAP2 start 0x%"
		PRIx64 " len 0x%" PRIx64 " pgoff 0x%" PRIx64 " -> [0x%" PRIx64 ", 0x%" PRIx64 ")\n", ly->load_offset,
		ly->load_vaddr, ly->load_size, ly->map_start, ly->map_len, ly->map_pgoff, ly->map_start,
		ly->map_start + ly->map_len);
}

static void dump_unwind(struct dump *d, const struct jdr_unw *u, uint64_t uoff, bool again,
			const struct pv_layout *ly)
{
	uint64_t data_off = uoff + 40;
	bool sizes_ok = u->unwinding_size <= u->avail && u->eh_frame_hdr_size <= u->unwinding_size;
	if (d->json) {
		fprintf(d->f, "{ \"record\": %" PRIu64 ", \"reused\": %s, \"sizes_ok\": %s", uoff, again ? "true" : "false",
			sizes_ok ? "true" : "false");
		if (sizes_ok) {
			fputs(", \"eh_frame\": ", d->f);
			dump_eh_frame(d, u->data, (size_t)ly->eh_size, data_off, ly->rt_eh);
			if (ly->hdr_size) {
				fputs(", \"eh_frame_hdr\": ", d->f);
				dump_hdr(d, u->data + ly->eh_size, (size_t)ly->hdr_size, data_off + ly->eh_size, ly->rt_hdr);
			}
		}
		fputs(" }", d->f);
		return;
	}
	fprintf(d->f, "        unwinding info: the UNWINDING_INFO at 0x%" PRIx64 "%s\n", uoff,
		again ? " (again: eh_frame_hdr_size 0 keeps it for every later load)" : "");
	if (!sizes_ok) {
		fprintf(d->f, "          sizes do not fit the record: nothing decoded\n");
		return;
	}
	dump_eh_frame(d, u->data, (size_t)ly->eh_size, data_off, ly->rt_eh);
	if (ly->hdr_size)
		dump_hdr(d, u->data + ly->eh_size, (size_t)ly->hdr_size, data_off + ly->eh_size, ly->rt_hdr);
}

static void dump_debug(struct dump *d, const struct jdr_debug *g)
{
	size_t pos = 0;
	uint64_t i = 0;
	if (d->json)
		fputs("[", d->f);
	for (; i < g->nr_entry && i < 1000000 && g->len - pos >= 17; i++) {
		const uint8_t *e = g->entries + pos;
		const uint8_t *nul = memchr(e + 16, 0, g->len - pos - 16);
		if (!nul)
			break;
		uint64_t a;
		int32_t line, disc;
		memcpy(&a, e, 8);
		memcpy(&line, e + 8, 4);
		memcpy(&disc, e + 12, 4);
		size_t nl = (size_t)(nul - (e + 16));
		char nb[1024];
		if (d->json) {
			fprintf(d->f, "%s{ \"addr\": \"0x%" PRIx64 "\", \"line\": %d, \"discrim\": %d, \"file\": ", i ? ", " : "",
				a, line, disc);
			jstr(d->f, (const char *)(e + 16), nl);
			fputs(" }", d->f);
		} else {
			fprintf(d->f, "          0x%" PRIx64 " line %d discrim %d \"%s\"\n", a, line, disc,
				pname((const char *)(e + 16), nl, nb, sizeof(nb)));
		}
		pos = (size_t)(nul - g->entries) + 1;
	}
	if (d->json)
		fputs("]", d->f);
	else if (i < g->nr_entry)
		fprintf(d->f, "          (%" PRIu64 " of nr_entry %" PRIu64 " fit the record)\n", i, g->nr_entry);
}

static void dump_record(struct dump *d, const struct jdr_rec *r, struct jdr_pending *ps, bool first)
{
	char nb[1024];
	FILE *f = d->f;
	const struct jdr_unw *u;
	const struct jdr_debug *g;
	uint64_t uoff = 0, goff = 0;
	jdr_pending_step(ps, r, &u, &uoff, &g, &goff);
	/* an info with eh_frame_hdr_size 0 stays for every later load */
	bool again = u && d->unw_used && d->unw_used_off == uoff;
	if (u) {
		d->unw_used = true;
		d->unw_used_off = uoff;
	}
	if (d->json)
		fprintf(f, "%s\n    { \"offset\": %" PRIu64 ", \"id\": %u, \"type\": \"%s\", \"total_size\": %u, \"timestamp\": %"
			PRIu64 ", \"short\": %s", first ? "" : ",", r->off, r->id, rec_type(r->id), r->size, r->timestamp,
			r->short_fixed ? "true" : "false");
	else
		fprintf(f, "0x%06" PRIx64 "  %s (id %u) total_size %u timestamp %" PRIu64 "%s\n", r->off, rec_type(r->id),
			r->id, r->size, r->timestamp, r->short_fixed ? "  (shorter than its fixed part)" : "");
	if (r->short_fixed) {
		if (d->json)
			fputs(" }", f);
		return;
	}
	switch (r->id) {
	case JD_CODE_LOAD: {
		const struct jdr_load *l = &r->u.load;
		if (d->json) {
			fprintf(f, ", \"pid\": %u, \"tid\": %u, \"vma\": \"0x%" PRIx64 "\", \"code_addr\": \"0x%" PRIx64
				"\", \"code_size\": %" PRIu64 ", \"code_index\": %" PRIu64 ", \"name\": ", l->pid, l->tid, l->vma,
				l->code_addr, l->code_size, l->code_index);
			if (l->name)
				jstr(f, l->name, l->name_len);
			else
				fputs("null", f);
		} else {
			fprintf(f, "        pid %u tid %u vma 0x%" PRIx64 " code_addr 0x%" PRIx64 " code_size %" PRIu64
				" code_index %" PRIu64 " name \"%s\"\n", l->pid, l->tid, l->vma, l->code_addr, l->code_size,
				l->code_index, l->name ? pname(l->name, l->name_len, nb, sizeof(nb)) : "(not NUL-terminated)");
		}
		if (l->code && d->code) {
			uint64_t co = (uint64_t)(l->code - d->data);
			if (d->json)
				fputs(", \"code\": ", f);
			dump_code(d, l, co);
		} else if (!l->code && l->name) {
			if (d->json)
				fputs(", \"code\": null", f);
			else
				fprintf(f, "        code_size does not fit after the name\n");
		}
		if (g) {
			if (d->json)
				fprintf(f, ", \"debug_info\": { \"record\": %" PRIu64 ", \"code_addr\": \"0x%" PRIx64 "\" }", goff,
					g->code_addr);
			else
				fprintf(f, "        debug info: the DEBUG_INFO at 0x%" PRIx64 " (code_addr 0x%" PRIx64 ")\n", goff,
					g->code_addr);
		}
		struct pv_layout ly;
		lint_layout(d->prof, l->code_addr, l->code_size, u, &ly);
		if (u) {
			if (d->json)
				fputs(", \"unwinding\": ", f);
			dump_unwind(d, u, uoff, again, &ly);
		} else if (!d->json) {
			fprintf(f, "        no unwinding info\n");
		}
		if (d->json)
			fputs(", \"perf\": ", f);
		dump_view(d, l, &ly);
		break;
	}
	case JD_CODE_MOVE: {
		const struct jdr_move *m = &r->u.move;
		if (d->json)
			fprintf(f, ", \"pid\": %u, \"tid\": %u, \"vma\": \"0x%" PRIx64 "\", \"old_code_addr\": \"0x%" PRIx64
				"\", \"new_code_addr\": \"0x%" PRIx64 "\", \"code_size\": %" PRIu64 ", \"code_index\": %" PRIu64,
				m->pid, m->tid, m->vma, m->old_code_addr, m->new_code_addr, m->code_size, m->code_index);
		else
			fprintf(f, "        pid %u tid %u vma 0x%" PRIx64 " old_code_addr 0x%" PRIx64 " new_code_addr 0x%" PRIx64
				" code_size %" PRIu64 " code_index %" PRIu64 "\n", m->pid, m->tid, m->vma, m->old_code_addr,
				m->new_code_addr, m->code_size, m->code_index);
		break;
	}
	case JD_CODE_DEBUG_INFO: {
		const struct jdr_debug *dg = &r->u.debug;
		if (d->json) {
			fprintf(f, ", \"code_addr\": \"0x%" PRIx64 "\", \"nr_entry\": %" PRIu64 ", \"entries\": ", dg->code_addr,
				dg->nr_entry);
		} else {
			fprintf(f, "        code_addr 0x%" PRIx64 " nr_entry %" PRIu64 " (for the next CODE_LOAD)\n",
				dg->code_addr, dg->nr_entry);
		}
		dump_debug(d, dg);
		break;
	}
	case JD_CODE_UNWINDING_INFO: {
		const struct jdr_unw *uw = &r->u.unw;
		if (d->json)
			fprintf(f, ", \"unwinding_size\": %" PRIu64 ", \"eh_frame_hdr_size\": %" PRIu64 ", \"mapped_size\": %"
				PRIu64 ", \"data_size\": %zu", uw->unwinding_size, uw->eh_frame_hdr_size, uw->mapped_size,
				uw->avail);
		else
			fprintf(f, "        unwinding_size %" PRIu64 " eh_frame_hdr_size %" PRIu64 " mapped_size %" PRIu64
				" (%zu bytes of data; applies to the next CODE_LOAD)\n", uw->unwinding_size,
				uw->eh_frame_hdr_size, uw->mapped_size, uw->avail);
		break;
	}
	default:
		break;
	}
	if (d->json)
		fputs(" }", f);
}

int hx_dump_mem(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
		enum pv_profile prof, bool code)
{
	struct dump d = { out, json, 0, prof, code, 0, false, data, false, 0 };
	struct jdr_iter it;
	struct jdr_err we;
	struct lint_finding fin;
	if (jdr_init(&it, data, size, &we)) {
		lint_walk_error(&we, &fin);
		fprintf(stderr, "jitunwind dump: %s: offset 0x%" PRIx64 ": %s\n", name, fin.offset, fin.msg);
		return 2;
	}
	const struct jdr_hdr *h = &it.hdr;
	d.mach = h->elf_mach;
	if (code && h->elf_mach == 62 && cs_open(CS_ARCH_X86, CS_MODE_64, &d.cs) == CS_ERR_OK) {
		cs_option(d.cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
		d.cs_ok = true;
	} else if (code && h->elf_mach == 183 && cs_open(CS_ARCH_ARM64, CS_MODE_ARM, &d.cs) == CS_ERR_OK) {
		d.cs_ok = true;
	}
	if (json) {
		fprintf(out, "{ \"tool\": \"jitunwind\", \"command\": \"dump\", \"schema\": 1, \"file\": ");
		jcstr(out, name);
		fprintf(out, ", \"size\": %zu, \"profile\": \"%s\",\n  \"header\": { \"offset\": 0, \"magic\": \"0x%08x\", "
			"\"version\": %u, \"total_size\": %u, \"elf_mach\": %u, \"arch\": \"%s\", \"pad1\": %u, \"pid\": %u, "
			"\"timestamp\": %" PRIu64 ", \"flags\": \"0x%" PRIx64 "\" },\n  \"records\": [", size,
			pv_profile_name(prof), h->magic, h->version, h->total_size, h->elf_mach, arch_of(h->elf_mach), h->pad1,
			h->pid, h->timestamp, h->flags);
	} else {
		fprintf(out, "%s: %zu bytes, jitdump version %u, %s, pid %u (perf profile %s)\n", name, size, h->version,
			arch_of(h->elf_mach), h->pid, pv_profile_name(prof));
		fprintf(out, "0x%06x  header: magic 0x%08x version %u total_size %u elf_mach %u pad1 %u pid %u timestamp %"
			PRIu64 " flags 0x%" PRIx64 "\n", 0, h->magic, h->version, h->total_size, h->elf_mach, h->pad1, h->pid,
			h->timestamp, h->flags);
	}
	struct jdr_pending ps;
	memset(&ps, 0, sizeof(ps));
	struct jdr_rec r;
	bool first = true;
	int rc, status = 0;
	while ((rc = jdr_next(&it, &r, &we)) > 0) {
		dump_record(&d, &r, &ps, first);
		first = false;
	}
	if (rc < 0) {
		lint_walk_error(&we, &fin);
		status = 1;
	}
	if (json) {
		fprintf(out, "\n  ],\n  \"end\": { \"offset\": %zu, \"error\": ", rc < 0 ? (size_t)fin.offset : size);
		if (rc < 0) {
			fprintf(out, "{ \"id\": \"%s\", \"message\": ", fin.rule->id);
			jcstr(out, fin.msg);
			fputs(" }", out);
		} else {
			fputs("null", out);
		}
		fputs(" } }\n", out);
	} else if (rc < 0) {
		fprintf(out, "0x%06" PRIx64 "  stopped (%s %s): %s\n", fin.offset, fin.rule->id, fin.rule->name, fin.msg);
	} else {
		fprintf(out, "0x%06zx  end of file (%" PRIu64 " records)\n", size, it.nrecs);
	}
	if (d.cs_ok)
		cs_close(&d.cs);
	return status;
}

static void usage_dump(FILE *f)
{
	fprintf(f,
		"usage: jitunwind dump [--json] [--perf-profile P] [--no-code] FILE\n"
		"  Decode a jitdump: every record with its file offset, the code disassembled,\n"
		"  .eh_frame (CIEs, FDEs, CFA programs as DW_CFA_* and .cfi_* text, row tables),\n"
		"  .eh_frame_hdr, and perf's view of each load (jitted ELF sections, MMAP2).\n"
		"  --json            JSON on stdout\n"
		"  --perf-profile P  perf generation: current (default), v6.1, 5.x-0x40\n"
		"  --no-code         leave the code bytes out\n"
		"exit: 0 decoded to the end, 1 stopped at a broken record, 2 not a jitdump\n");
}

int hx_dump_main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "json", no_argument, 0, 'j' }, { "perf-profile", required_argument, 0, 'p' },
		{ "no-code", no_argument, 0, 'n' }, { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	enum pv_profile prof = PV_CURRENT;
	bool json = false, code = true;
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'j': json = true; break;
		case 'n': code = false; break;
		case 'p':
			if (pv_profile_parse(optarg, &prof)) {
				fprintf(stderr, "jitunwind dump: --perf-profile %s: expected current, v6.1 or 5.x-0x40\n", optarg);
				return 2;
			}
			break;
		case 'h': usage_dump(stdout); return 0;
		default: usage_dump(stderr); return 2;
		}
	}
	if (argc - optind != 1) {
		usage_dump(stderr);
		return 2;
	}
	const char *path = argv[optind];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "jitunwind dump: %s: offset 0x0: cannot open: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 2;
	}
	size_t size = (size_t)st.st_size;
	void *m = NULL;
	if (size) {
		m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			fprintf(stderr, "jitunwind dump: %s: offset 0x0: cannot mmap: %s\n", path, strerror(errno));
			close(fd);
			return 2;
		}
	}
	close(fd);
	int rc = hx_dump_mem(stdout, path, m, size, json, prof, code);
	if (m)
		munmap(m, size);
	return rc;
}
