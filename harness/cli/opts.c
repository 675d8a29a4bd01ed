/* The CLI's one option layer (opts.h): the parser and the --help generator
 * over a subcommand's option table. */
#include "harness/cli/opts.h"
#include "unwinders/model/perfview.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CLI_MAX_OPTS 48
#define CLI_HELP_COL 26   /* where an option's help starts */

static const struct cli_opt cli_help_opt = { .name = "help", .shortopt = 'h', .help = "print this help and exit" };

static size_t nopts(const struct cli_cmd *c)
{
	size_t n = 0;
	while (c->opts && c->opts[n].name)
		n++;
	return n;
}

static void usage_lines(FILE *f, const struct cli_cmd *c)
{
	for (size_t i = 0; c->forms[i]; i++)
		fprintf(f, "%s jitunwind %s %s\n", i ? "      " : "usage:", c->name, c->forms[i]);
}

static void help_opt(FILE *f, const struct cli_opt *o)
{
	char left[96];
	int n = snprintf(left, sizeof(left), "  %s%c%s--%s%s%s", o->shortopt ? "-" : "", o->shortopt ? o->shortopt : ' ',
			 o->shortopt ? ", " : "  ", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	if (!o->shortopt)   /* no "-x, ": the long name where the others' is */
		n = snprintf(left, sizeof(left), "      --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	fputs(left, f);
	if (n >= CLI_HELP_COL - 1)
		fprintf(f, "\n%*s", CLI_HELP_COL, "");
	else
		fprintf(f, "%*s", CLI_HELP_COL - n, "");
	for (const char *p = o->help; *p; p++) {
		fputc(*p, f);
		if (*p == '\n')
			fprintf(f, "%*s", CLI_HELP_COL, "");
	}
	const char *def = o->def_text ? o->def_text : o->def;
	if (def)
		fprintf(f, " (default: %s)", def);
	fputc('\n', f);
	if (o->more)
		o->more(f);
}

void cli_help(FILE *f, const struct cli_cmd *c)
{
	usage_lines(f, c);
	if (c->about)
		fprintf(f, "%s", c->about);
	fprintf(f, "options:\n");
	for (size_t i = 0; c->opts && c->opts[i].name; i++)
		help_opt(f, &c->opts[i]);
	help_opt(f, &cli_help_opt);
	if (c->tail)
		c->tail(f);
}

int cli_usage_error(const struct cli_cmd *c, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "jitunwind %s: ", c->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage_lines(stderr, c);
	fprintf(stderr, "(jitunwind %s --help lists the options)\n", c->name);
	return CLI_USAGE;
}

/* the table's defaults, through the same setters as the command line */
static int apply_defaults(const struct cli_cmd *c, void *s)
{
	char why[512];
	for (size_t i = 0; c->opts && c->opts[i].name; i++) {
		const struct cli_opt *o = &c->opts[i];
		if (o->def && o->arg && o->set && o->set(s, o, o->def, why, sizeof(why))) {
			fprintf(stderr, "jitunwind %s: --%s's default %s: %s\n", c->name, o->name, o->def, why);
			return CLI_USAGE;
		}
	}
	return CLI_OK;
}

/* getopt_long's tables from ours: val = 256 + the option's index */
static void getopt_tables(const struct cli_cmd *c, struct option *lo, char *so, size_t sl)
{
	size_t n = nopts(c), k = 0;
	k += (size_t)snprintf(so + k, sl - k, "%s:h", c->options_first ? "+" : "");
	for (size_t i = 0; i < n; i++) {
		const struct cli_opt *o = &c->opts[i];
		lo[i] = (struct option){ o->name, o->arg ? required_argument : no_argument, NULL, 256 + (int)i };
		if (o->shortopt && k + 3 < sl)
			k += (size_t)snprintf(so + k, sl - k, "%c%s", o->shortopt, o->arg ? ":" : "");
	}
	lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
	lo[n + 1] = (struct option){ 0, 0, 0, 0 };
}

static const struct cli_opt *by_val(const struct cli_cmd *c, int ch)
{
	if (ch >= 256 && (size_t)(ch - 256) < nopts(c))
		return &c->opts[ch - 256];
	for (size_t i = 0; c->opts && c->opts[i].name; i++)
		if (ch && c->opts[i].shortopt == ch)
			return &c->opts[i];
	return NULL;
}

static int bad_option(const struct cli_cmd *c, char **argv, int ch)
{
	const char *arg = argv[optind - 1];
	const struct cli_opt *o = by_val(c, optopt);
	if (ch == ':' && o)
		return cli_usage_error(c, "--%s: expected %s after it", o->name, o->arg);
	if (optopt && optopt < 256)
		return cli_usage_error(c, "unknown option '-%c'", optopt);
	return cli_usage_error(c, "unknown option '%s'", arg);
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, void *s, int *first)
{
	struct option lo[CLI_MAX_OPTS + 2];
	char so[2 * CLI_MAX_OPTS + 8], why[1024];
	if (nopts(c) > CLI_MAX_OPTS || apply_defaults(c, s))
		return CLI_USAGE;
	getopt_tables(c, lo, so, sizeof(so));
	optind = 1;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		if (ch == 'h') {
			cli_help(stdout, c);
			return CLI_HELP;
		}
		const struct cli_opt *o = by_val(c, ch);
		if (!o || ch == '?' || ch == ':')
			return bad_option(c, argv, ch);
		why[0] = 0;
		if (o->set && o->set(s, o, o->arg ? optarg : NULL, why, sizeof(why)))
			return cli_usage_error(c, "--%s: %s", o->name, why);
	}
	int nop = argc - optind;
	if (nop < c->min_operands || (c->max_operands >= 0 && nop > c->max_operands)) {
		if (c->max_operands == 0)
			return cli_usage_error(c, "unexpected argument '%s'", argv[optind]);
		return cli_usage_error(c, "expected %s%d operand%s, got %d", c->max_operands < 0 ? "at least " : "",
				       c->min_operands, c->min_operands == 1 ? "" : "s", nop);
	}
	*first = optind;
	return CLI_OK;
}

/* ---- setters ---- */

#define FIELD(T, s, o) ((T *)((char *)(s) + (o)->off))

int cli_set_true(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)arg, (void)why, (void)wl;
	*FIELD(bool, s, o) = true;
	return 0;
}

int cli_set_false(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)arg, (void)why, (void)wl;
	*FIELD(bool, s, o) = false;
	return 0;
}

int cli_set_str(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	(void)why, (void)wl;
	*FIELD(const char *, s, o) = arg;
	return 0;
}

/* a number in lo..hi (decimal or 0x...); BYTES: a multiple of 8 */
static int number(const struct cli_opt *o, const char *arg, long long *v, char *why, size_t wl)
{
	char *end;
	errno = 0;
	long long x = strtoll(arg, &end, 0);
	bool bytes = o->arg && !strcmp(o->arg, "BYTES");
	if (errno || end == arg || *end || x < o->lo || x > o->hi || (bytes && x % 8)) {
		snprintf(why, wl, "expected %s in %lld..%lld, got '%s'", bytes ? "a multiple of 8 bytes" : "a number",
			 o->lo, o->hi, arg);
		return -ERANGE;
	}
	*v = x;
	return 0;
}

int cli_set_int(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	long long v;
	int rc = number(o, arg, &v, why, wl);
	if (rc)
		return rc;
	*FIELD(int, s, o) = (int)v;
	return 0;
}

int cli_set_u64(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	char *end;
	errno = 0;
	unsigned long long x = strtoull(arg, &end, 0);
	if (errno || end == arg || *end || arg[0] == '-' || x < (unsigned long long)o->lo ||
	    (o->hi > 0 && x > (unsigned long long)o->hi)) {
		if (o->hi > 0)
			snprintf(why, wl, "expected a number in %lld..%lld, got '%s'", o->lo, o->hi, arg);
		else
			snprintf(why, wl, "expected a number (0x... for hex), got '%s'", arg);
		return -ERANGE;
	}
	*FIELD(uint64_t, s, o) = x;
	return 0;
}

int cli_set_double(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	char *end;
	double x = strtod(arg, &end);
	if (end == arg || *end || x < (double)o->lo || x > (double)o->hi) {
		snprintf(why, wl, "expected a number in %lld..%lld, got '%s'", o->lo, o->hi, arg);
		return -ERANGE;
	}
	*FIELD(double, s, o) = x;
	return 0;
}

int cli_set_profile(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	if (pv_profile_parse(arg, FIELD(enum pv_profile, s, o))) {
		snprintf(why, wl, "expected %s, got '%s'", pv_profile_choices(), arg);
		return -EINVAL;
	}
	return 0;
}

const struct cli_cmd *cli_cmd_by_name(const char *name)
{
	for (size_t i = 0; cli_cmds[i]; i++)
		if (!strcmp(cli_cmds[i]->name, name))
			return cli_cmds[i];
	return NULL;
}

/* outcome -> exit code (DESIGN: 0 all met, 1 some failed, 77 nothing could run here) */
const int cli_exit_codes[HX_CMD_NKINDS] = {
	[HX_CMD_CLEAN] = 0,
	[HX_CMD_FINDINGS] = 1,
	[HX_CMD_CANNOT_RUN] = 77,
};

int cli_exit_code(int rc, const struct hx_cmd_outcome *out)
{
	if (rc < 0 || !out || (unsigned)out->kind >= HX_CMD_NKINDS)
		return 2;
	return cli_exit_codes[out->kind];
}
