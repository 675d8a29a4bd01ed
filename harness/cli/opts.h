/* The CLI's one option layer: each subcommand declares a table of its
 * options (struct cli_opt) and its forms (struct cli_cmd); cli_parse fills
 * the subcommand's settings struct from the command line through the table,
 * cli_help prints --help from the same table.  Only harness/cli uses it. */
#ifndef HX_CLI_OPTS_H
#define HX_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "harness/outcome.h"

struct cli_opt;

/* Store arg into the settings s; -1 with why ("expected ..., got 'x'"). */
typedef int (*cli_set_fn)(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);

struct cli_opt {
	const char *name;      /* long name, without "--" */
	char shortopt;         /* its one-letter form, or 0 */
	const char *arg;       /* the argument's name ("FILE"), NULL: a flag */
	const char *help;      /* one line; '\n' continues it under the first */
	const char *def;       /* default, applied through set before the command line; NULL: none */
	const char *def_text;  /* default in words, when it depends on the machine or other options */
	const char *example;   /* a valid argument (tests/test_cli.c parses every option with it) */
	cli_set_fn set;        /* a flag: called with arg NULL */
	size_t off;            /* for the cli_set_* setters: the field's offset in the settings */
	long long lo, hi;      /* for cli_set_int/cli_set_u64: the range */
	void (*more)(FILE *f); /* extra help lines under the option (the unwinders' list) */
};

struct cli_cmd {
	const char *name;              /* "run" */
	const char *summary;           /* one line for `jitunwind --help` */
	const char *const *forms;      /* the usage lines: what follows "jitunwind NAME " */
	const char *about;             /* paragraph(s) under the usage */
	const struct cli_opt *opts;    /* ended by a NULL name */
	void (*tail)(FILE *f);         /* text after the options (exit codes, notes), or NULL */
	int (*main)(int argc, char **argv);   /* argv[0] is the command's name; returns the exit code */
	bool options_first;            /* options end at the first operand (trace: -- CMD ARGS) */
	int min_operands, max_operands;        /* max -1: any number */
};

enum { CLI_OK = 0, CLI_HELP = 1, CLI_USAGE = 2 };

/* Parse argv (argv[0] the command) into s: the table's defaults first, then
 * the options.  CLI_OK with *first the index of the first operand,
 * CLI_HELP after --help printed on stdout, CLI_USAGE after a message
 * "jitunwind CMD: ..." on stderr (exit 2). */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, void *s, int *first);
void cli_help(FILE *f, const struct cli_cmd *c);
/* "jitunwind CMD: MSG" and the usage lines on stderr; CLI_USAGE */
int cli_usage_error(const struct cli_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Setters over cli_opt.off: a bool set true / false, a const char *, an int
 * or uint64_t in lo..hi (a multiple of 8 when the option's arg is "BYTES"),
 * a double in lo..hi, a perf profile (enum pv_profile). */
int cli_set_true(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);
int cli_set_false(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);
int cli_set_str(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);
int cli_set_int(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);
int cli_set_u64(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);
int cli_set_double(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);
int cli_set_profile(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl);

/* Every subcommand, in `jitunwind --help`'s order (cmds.c). */
extern const struct cli_cmd *const cli_cmds[];
const struct cli_cmd *cli_cmd_by_name(const char *name);

/* The one place a library's result becomes an exit code: rc < 0 (the
 * library could not run to a conclusion: bad input, I/O) is 2, else the
 * outcome's row of cli_exit_codes (0 clean, 1 findings, 77 cannot run). */
int cli_exit_code(int rc, const struct hx_cmd_outcome *out);
extern const int cli_exit_codes[HX_CMD_NKINDS];

#endif
