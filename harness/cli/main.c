/* jitunwind CLI: the subcommands of cli_cmds (cmds.c), each parsing its
 * options through its table (opts.h).  Exit codes (DESIGN): 0 all cases met
 * their expectations, 1 some case failed, 2 bad usage or bad input, 77
 * nothing could run on this machine.  harness/cli is the only place that
 * chooses them. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "harness/cli/opts.h"
#include "harness/case/say.h"
#include "harness/report/report.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: jitunwind COMMAND [ARGS]   (jitunwind COMMAND --help for more)\n");
	for (size_t i = 0; cli_cmds[i]; i++)
		fprintf(f, "  %-11s %s\n", cli_cmds[i]->name, cli_cmds[i]->summary);
	fprintf(f, "  --version   print the version and the JSON report's schema number\n");
}

/* The libraries' messages (harness/case/say.h): each on stderr as its own
 * line, the progress line redrawn in place; the one place the CLI would
 * filter or restyle them. */
static void cli_say(void *ctx, enum ju_say_kind kind, const char *who, const char *text)
{
	(void)ctx;
	ju_say_print(stderr, kind, who, text);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	ju_say_sink(cli_say, NULL);
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
	const struct cli_cmd *c = cli_cmd_by_name(cmd);
	if (c)
		return c->main(argc - 1, argv + 1);
	fprintf(stderr, "jitunwind: unknown command '%s'\n", cmd);
	usage(stderr);
	return 2;
}
