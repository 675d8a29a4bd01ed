/* `jitunwind bench`: its option table (opts.h) and the run of harness/bench;
 * the list of every subcommand (cli_cmds). */
#include <stddef.h>
#include <stdio.h>

#include "harness/bench/bench.h"
#include "harness/cli/cmds.h"

#define B_OFF(f) offsetof(struct hx_bench_opts, f)

static const struct cli_opt bench_opts[] = {
	{ "no-run", 0, NULL, "leave out the whole runs (they run `jitunwind run` as a child)", .set = cli_set_true,
	  .off = B_OFF(no_run) },
	{ "no-fuzz", 0, NULL, "leave out fuzz-cfi's rate (`jitunwind fuzz-cfi --cases " HX_BENCH_FUZZ_N
	  " --jobs 2`, a child)", .set = cli_set_true, .off = B_OFF(no_fuzz) },
	{ "lint", 0, "DUMP", "measure lint's throughput on DUMP", .set = cli_set_str, .off = B_OFF(lint),
	  .example = "jit-1.dump" },
	{ 0 },
};

static int cmd_bench(int argc, char **argv);
static const char *const bench_forms[] = { "[OPTIONS] [PATH...]", NULL };

const struct cli_cmd cli_bench = {
	.name = "bench", .summary = "measure capture cost and replay rates", .forms = bench_forms,
	.opts = bench_opts, .main = cmd_bench, .max_operands = -1,
	.about = "  Capture cost per sample, replay rate per unwinder, the whole run (without and with\n"
		 "  the perf column), fuzz-cfi's rate, lint throughput on DUMP: each beside its target,\n"
		 "  met or not.\n",
};

static int cmd_bench(int argc, char **argv)
{
	struct hx_bench_opts o = { 0 };
	int first, rc = cli_parse(&cli_bench, argc, argv, &o, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	o.paths = argv + first;
	o.npaths = argc - first;
	struct hx_cmd_outcome out;
	return cli_exit_code(hx_bench_run(&o, &out), &out);
}

/* every subcommand, in `jitunwind --help`'s order */
const struct cli_cmd *const cli_cmds[] = {
	&cli_run, &cli_record, &cli_replay, &cli_explain, &cli_list, &cli_dump, &cli_lint, &cli_inject,
	&cli_bench, &cli_perfcheck, &cli_doctor, &cli_trace, &cli_fuzzcfi, NULL,
};
