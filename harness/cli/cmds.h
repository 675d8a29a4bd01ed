/* The subcommands' tables (opts.h), one per subcommand, in harness/cli/. */
#ifndef HX_CLI_CMDS_H
#define HX_CLI_CMDS_H

#include "harness/cli/opts.h"

extern const struct cli_cmd cli_run, cli_record, cli_replay, cli_explain, cli_list, cli_dump, cli_lint,
	cli_inject, cli_bench, cli_perfcheck, cli_doctor, cli_trace, cli_fuzzcfi;

int hx_dump_main(int argc, char **argv);
int hx_lint_main(int argc, char **argv);

#endif
