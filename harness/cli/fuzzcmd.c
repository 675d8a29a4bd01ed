/* `jitunwind fuzz-cfi`: its option table (opts.h) and the run of harness/fuzz. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "harness/cli/cmds.h"
#include "harness/fuzz/fuzzcfi.h"

#define F_OFF(f) offsetof(struct fz_opts, f)

static int set_arches(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	char list[64], names[128];
	snprintf(list, sizeof(list), "%s", arg);
	int n = 0;
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save), n++) {
		const struct tr_arch *a = tr_arch_by_name(t);
		if (!a || strcmp(a->facts->name, t) || n == 4) {
			tr_arch_names(names, sizeof(names));
			snprintf(why, wl, "expected one of %s (at most 4), got '%s'", names, t);
			return -EINVAL;
		}
	}
	if (!n || strlen(arg) >= sizeof(list)) {
		snprintf(why, wl, "expected a list of arches, got '%s'", arg);
		return -EINVAL;
	}
	return cli_set_str(s, o, arg, why, wl);
}

static void arch_names(FILE *f)
{
	char names[128];
	tr_arch_names(names, sizeof(names));
	fprintf(f, "                          the arches: %s\n", names);
}

static int set_print(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	uint64_t v;
	struct cli_opt u = *o;
	u.off = 0;
	int rc = cli_set_u64(&v, &u, arg, why, wl);
	if (rc)
		return rc;
	((struct fz_opts *)s)->print_index = (long long)v;
	return 0;
}

static const struct cli_opt fuzz_opts[] = {
	{ "seed", 0, "N", "the cases drawn: the same seed gives the same cases", .def = "1", .set = cli_set_u64,
	  .off = F_OFF(seed) },
	{ "time", 0, "S", "stop after S seconds", .def_text = "60 when --cases is not given", .set = cli_set_double,
	  .off = F_OFF(time_s), .lo = 0, .hi = 86400 * 7, .example = "1" },
	{ "cases", 0, "N", "stop after N cases (with the same seed: the same files, any --jobs)", .set = cli_set_u64,
	  .off = F_OFF(ncases), .lo = 0, .hi = 1ll << 40, .example = "1" },
	{ "jobs", 0, "N", "worker processes", .def_text = "one per CPU online, at most 16", .set = cli_set_int,
	  .off = F_OFF(jobs), .lo = 1, .hi = 16, .example = "2" },
	{ "out", 0, "DIR", "where cases go", .def = "fuzz-cfi-out", .set = cli_set_str, .off = F_OFF(out) },
	{ "arch", 0, "LIST", "the arches, comma-separated (see below); another arch runs its cross build\n"
	  "under qemu-user (build/<arch>/jitunwind, qemu-<arch>)", .def_text = "this machine's", .set = set_arches,
	  .off = F_OFF(arches), .more = arch_names },
	{ "mutate", 0, NULL, "corrupt one element of each encoded program", .set = cli_set_true, .off = F_OFF(mutate) },
	{ "minimize-runs", 0, "N", "runs one minimization may spend", .def = "120", .set = cli_set_int,
	  .off = F_OFF(min_runs), .lo = 0, .hi = 100000 },
	{ "per-signature", 0, "N", "findings minimized per signature", .def = "3", .set = cli_set_int,
	  .off = F_OFF(per_sig), .lo = 0, .hi = 64 },
	{ "print", 0, "I", "print case I as a case file with this machine's verdicts, and stop", .set = set_print,
	  .lo = 0, .hi = 1ll << 40, .example = "0" },
	{ 0 },
};

static void fuzz_tail(FILE *f)
{
	fprintf(f, "exit: 0 nothing found, 1 findings written, 2 bad usage, 77 nothing could run\n");
}

static int cmd_fuzzcfi(int argc, char **argv);
static const char *const fuzz_forms[] = { "[OPTIONS]", NULL };

const struct cli_cmd cli_fuzzcfi = {
	.name = "fuzz-cfi", .summary = "generate trampolines and CFI encodings, find where the unwinders part ways",
	.forms = fuzz_forms, .opts = fuzz_opts, .main = cmd_fuzzcfi, .tail = fuzz_tail,
	.about = "  Generate trampolines from random stack ops, encode their CFI in random valid forms\n"
		 "  (--mutate: then corrupt one element), run each case through the capture and every\n"
		 "  unwinder; write each finding, minimized, as DIR/<arch>/fuzz-<hash>.case with the\n"
		 "  verdicts observed as its [expect], and DIR/<arch>/summary.txt.\n",
};

static int cmd_fuzzcfi(int argc, char **argv)
{
	/* one worker per CPU: a seed's files are the same for any --jobs */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct fz_opts o = { .jobs = cpus < 1 ? 1 : cpus > 16 ? 16 : (int)cpus, .print_index = -1 };
	int first, rc = cli_parse(&cli_fuzzcfi, argc, argv, &o, &first);
	if (rc)
		return rc == CLI_HELP ? 0 : 2;
	struct hx_cmd_outcome out;
	return cli_exit_code(hx_fuzzcfi_run(&o, argc, argv, &out), &out);
}
