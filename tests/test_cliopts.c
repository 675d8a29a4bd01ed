/* The CLI's one option layer (harness/cli/opts.h) kept true: for every
 * subcommand, its option table against what `--help` prints (both ways,
 * with the defaults), against what the parser accepts (every option of the
 * table parses; one that is not is refused, exit 2), and against the manual
 * (docs/jitunwind.1 names every option of every command in its section). */
#include <check.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness/cli/opts.h"
#include "harness/realperf/perfcheck.h"
#include "trampolines/tramp.h"

static char outbuf[1 << 17];

/* `jitunwind ARGS` with stdout+stderr in outbuf; its exit code */
static int ju(const char *args)
{
	const char *b = getenv("JU_BIN");
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", b ? b : "./jitunwind", args);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(outbuf, 1, sizeof(outbuf) - 1, p);
	outbuf[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static const struct cli_opt *opt_named(const struct cli_cmd *c, const char *name)
{
	for (size_t i = 0; c->opts[i].name; i++)
		if (!strcmp(c->opts[i].name, name))
			return &c->opts[i];
	return NULL;
}

/* The option lines of --help ("  -o, --output FILE  ...", "      --tap  ..."): each names
 * an option of the table, with its default; every option of the table has one. */
START_TEST(help_is_the_table)
{
	regex_t re;
	ck_assert_int_eq(regcomp(&re, "^  (-[a-zA-Z], |    )--([a-z0-9-]+)", REG_EXTENDED | REG_NEWLINE), 0);
	for (size_t k = 0; cli_cmds[k]; k++) {
		const struct cli_cmd *c = cli_cmds[k];
		char args[128];
		snprintf(args, sizeof(args), "%s --help", c->name);
		ck_assert_int_eq(ju(args), 0);
		size_t seen = 0, n = 0;
		while (c->opts[n].name)
			n++;
		bool found[64] = { false };
		regmatch_t m[3];
		for (const char *p = outbuf; !regexec(&re, p, 3, m, 0); p += m[0].rm_eo) {
			char name[64];
			snprintf(name, sizeof(name), "%.*s", (int)(m[2].rm_eo - m[2].rm_so), p + m[2].rm_so);
			if (!strcmp(name, "help"))
				continue;
			const struct cli_opt *o = opt_named(c, name);
			ck_assert_msg(o, "%s --help lists --%s, which its table does not have", c->name, name);
			found[o - c->opts] = true;
			seen++;
			/* its default, as the table says */
			const char *def = o->def_text ? o->def_text : o->def;
			const char *eol = strchr(p + m[0].rm_eo, '\n');
			const char *nextopt = strstr(p + m[0].rm_eo, "\n  -");
			char want[160];
			snprintf(want, sizeof(want), "(default: %s)", def ? def : "");
			const char *d = strstr(p + m[0].rm_eo, want);
			ck_assert_msg(!def || (d && (!nextopt || d < nextopt)), "%s --help: --%s without %s", c->name, name, want);
			(void)eol;
		}
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(found[i], "%s: --%s is in the table but not in --help", c->name, c->opts[i].name);
		ck_assert_uint_eq(seen, n);
		ck_assert_ptr_nonnull(strstr(outbuf, "  -h, --help"));
		for (size_t f = 0; c->forms[f]; f++) {
			char form[256];
			snprintf(form, sizeof(form), "jitunwind %s %s\n", c->name, c->forms[f]);
			ck_assert_msg(strstr(outbuf, form), "%s --help lacks its form '%s'", c->name, form);
		}
	}
	regfree(&re);
}
END_TEST

/* a valid argument for o: its example, else its default */
static const char *example(const struct cli_opt *o)
{
	if (o->example)
		return o->example;
	if (o->def)
		return o->def;
	/* --arch: the arches are named in the arch table only */
	return tr_arch_host() ? tr_arch_host()->facts->name : NULL;
}

static int parse(const struct cli_cmd *c, const char *opt, const char *arg)
{
	static _Alignas(16) char settings[1 << 16];
	char *argv[8];
	int argc = 0, first;
	argv[argc++] = (char *)c->name;
	if (opt)
		argv[argc++] = (char *)opt;
	if (arg)
		argv[argc++] = (char *)arg;
	if (c->options_first)
		argv[argc++] = (char *)"--";
	for (int i = 0; i < (c->min_operands ? c->min_operands : c->options_first) && argc < 7; i++)
		argv[argc++] = (char *)"x";
	argv[argc] = NULL;
	memset(settings, 0, sizeof(settings));
	return cli_parse(c, argc, argv, settings, &first);
}

START_TEST(parser_is_the_table)
{
	for (size_t k = 0; cli_cmds[k]; k++) {
		const struct cli_cmd *c = cli_cmds[k];
		ck_assert_int_eq(parse(c, NULL, NULL), CLI_OK);
		for (size_t i = 0; c->opts[i].name; i++) {
			const struct cli_opt *o = &c->opts[i];
			char lopt[64], sopt[4];
			snprintf(lopt, sizeof(lopt), "--%s", o->name);
			const char *a = o->arg ? example(o) : NULL;
			ck_assert_msg(!o->arg || a, "%s --%s: no example argument to parse", c->name, o->name);
			ck_assert_msg(parse(c, lopt, a) == CLI_OK, "%s: %s %s refused", c->name, lopt, a ? a : "");
			if (o->shortopt) {
				snprintf(sopt, sizeof(sopt), "-%c", o->shortopt);
				ck_assert_msg(parse(c, sopt, a) == CLI_OK, "%s: %s refused", c->name, sopt);
			}
			/* a value the option does not take: refused */
			if (o->arg && (o->lo || o->hi))
				ck_assert_msg(parse(c, lopt, "not-a-number") == CLI_USAGE, "%s %s took a word", c->name, lopt);
		}
		ck_assert_int_eq(parse(c, "--no-such-option", NULL), CLI_USAGE);
		ck_assert_int_eq(parse(c, "-Z", NULL), CLI_USAGE);
		/* the binary: an option not in the table is refused with exit 2, named */
		char args[128];
		snprintf(args, sizeof(args), "%s --no-such-option%s", c->name, c->options_first ? " -- true" : "");
		ck_assert_msg(ju(args) == 2 && strstr(outbuf, "unknown option '--no-such-option'"), "%s: %s", c->name,
			      outbuf);
	}
}
END_TEST

/* a bad value: "jitunwind CMD: --OPT: expected ..., got 'x'", exit 2 */
START_TEST(bad_value_wording)
{
	ck_assert_int_eq(ju("run --stack-size x"), 2);
	ck_assert_msg(strstr(outbuf, "jitunwind run: --stack-size: expected a multiple of 8 bytes in 8..65528, got 'x'"),
		      "%s", outbuf);
	ck_assert_int_eq(ju("lint --sort size x.dump"), 2);
	ck_assert_msg(strstr(outbuf, "jitunwind lint: --sort: expected severity or offset, got 'size'"), "%s", outbuf);
	ck_assert_int_eq(ju("dump --json"), 2);
	ck_assert_msg(strstr(outbuf, "jitunwind dump: expected 1 operand, got 0"), "%s", outbuf);
	ck_assert_int_eq(ju("fuzz-cfi --jobs"), 2);
	ck_assert_msg(strstr(outbuf, "jitunwind fuzz-cfi: --jobs: expected N after it"), "%s", outbuf);
}
END_TEST

/* perf-check's table applies the library's defaults (PK_OPTS_DEFAULTS, doctor's probe) */
START_TEST(perfcheck_defaults_agree)
{
	const struct cli_cmd *c = cli_cmd_by_name("perf-check");
	struct pk_opts o = { 0 }, want = PK_OPTS_DEFAULTS;
	char *argv[] = { (char *)"perf-check", NULL };
	int first;
	ck_assert_int_eq(cli_parse(c, 1, argv, &o, &first), CLI_OK);
	ck_assert(o.mode_on[PK_DWARF] == want.mode_on[PK_DWARF] && o.mode_on[PK_FP] == want.mode_on[PK_FP]);
	ck_assert_int_eq(o.stack_size, want.stack_size);
	ck_assert_int_eq(o.spin_us, want.spin_us);
	ck_assert_int_eq(o.period_us, want.period_us);
	ck_assert(o.min_agree == want.min_agree);
	ck_assert_str_eq(o.dump_dir, want.dump_dir);
}
END_TEST

/* docs/jitunwind.1: every option of every command under ".SS CMD" */
START_TEST(manual_names_every_option)
{
	FILE *f = fopen("docs/jitunwind.1", "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(outbuf, 1, sizeof(outbuf) - 1, f);
	outbuf[n] = 0;
	fclose(f);
	for (size_t k = 0; cli_cmds[k]; k++) {
		const struct cli_cmd *c = cli_cmds[k];
		char ss[64];
		snprintf(ss, sizeof(ss), "\n.SS %s\n", c->name);
		const char *sec = strstr(outbuf, ss);
		ck_assert_msg(sec, "docs/jitunwind.1 has no section '.SS %s'", c->name);
		const char *end = strstr(sec + 1, "\n.S");
		for (size_t i = 0; c->opts[i].name; i++) {
			char want[80], esc[80];
			size_t e = 0;
			for (const char *p = c->opts[i].name; *p && e + 3 < sizeof(esc); p++) {
				if (*p == '-')
					esc[e++] = '\\';
				esc[e++] = *p;
			}
			esc[e] = 0;
			snprintf(want, sizeof(want), "\\-\\-%s\"", esc);
			const char *at = strstr(sec, want);
			ck_assert_msg(at && (!end || at < end), "docs/jitunwind.1: section %s does not name --%s", c->name,
				      c->opts[i].name);
		}
	}
}
END_TEST

Suite *suite_cliopts(void);
Suite *suite_cliopts(void)
{
	Suite *s = suite_create("cliopts");
	TCase *tc = tcase_create("cliopts");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, help_is_the_table);
	tcase_add_test(tc, parser_is_the_table);
	tcase_add_test(tc, bad_value_wording);
	tcase_add_test(tc, perfcheck_defaults_agree);
	tcase_add_test(tc, manual_names_every_option);
	suite_add_tcase(s, tc);
	return s;
}
