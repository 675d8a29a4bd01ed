/* `jitunwind dump FILE`: the options; the walk is harness/report/dump.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/report/dump.h"
#include "unwinders/model/perfview.h"
#include "harness/cli/cmds.h"
#include <stddef.h>

struct dump_cli {
	enum pv_profile prof;
	bool json, no_code;
	struct dump_filter filter;
};

#define D_OFF(f) offsetof(struct dump_cli, f)

/* --at, --record: a number, and the filter on */
static int set_filter(void *s, const struct cli_opt *o, const char *arg, char *why, size_t wl)
{
	struct dump_cli *cl = s;
	int rc = cli_set_u64(s, o, arg, why, wl);
	if (rc)
		return rc;
	if (o->off == D_OFF(filter.at))
		cl->filter.at_set = true;
	else
		cl->filter.record_set = true;
	return 0;
}

static const struct cli_opt dump_opts[] = {
	{ "json", 0, NULL, "JSON on stdout", .set = cli_set_true, .off = D_OFF(json) },
	{ "perf-profile", 0, "P", "perf generation: " PV_PROFILE_LIST, .def = "current", .set = cli_set_profile,
	  .off = D_OFF(prof), .example = "v6.1" },
	{ "no-code", 0, NULL, "leave the code bytes out", .set = cli_set_true, .off = D_OFF(no_code) },
	{ "name", 0, "GLOB", "only the CODE_LOADs whose name matches GLOB (fnmatch, e.g. 'py::*')",
	  .set = cli_set_str, .off = D_OFF(filter.name), .example = "py::*" },
	{ "at", 0, "ADDR", "only the CODE_LOAD (or CODE_MOVE) whose code holds address ADDR", .set = set_filter,
	  .off = D_OFF(filter.at), .example = "0x1000" },
	{ "record", 0, "OFFSET", "only the record at file offset OFFSET (as lint and dump print it)",
	  .set = set_filter, .off = D_OFF(filter.record), .example = "40" },
	{ 0 },
};

static void dump_tail(FILE *f)
{
	fprintf(f, "(filters combine; each load is shown with the unwinding and debug info perf gives it)\n"
		   "exit: 0 decoded to the end, 1 stopped at a broken record, 2 not a jitdump or a bad option\n");
}

static const char *const dump_forms[] = { "[OPTIONS] FILE", NULL };

const struct cli_cmd cli_dump = {
	.name = "dump", .summary = "decode a jitdump: records, eh_frame, rows, perf's view", .forms = dump_forms,
	.opts = dump_opts, .main = hx_dump_main, .tail = dump_tail, .min_operands = 1, .max_operands = 1,
	.about = "  Decode a jitdump: every record with its file offset, the code disassembled,\n"
		 "  .eh_frame (CIEs, FDEs, CFA programs as DW_CFA_* and .cfi_* text, row tables),\n"
		 "  .eh_frame_hdr, and perf's view of each load (jitted ELF sections, MMAP2).\n",
};

int hx_dump_main(int argc, char **argv)
{
	struct dump_cli cl = { 0 };
	int first, a = cli_parse(&cli_dump, argc, argv, &cl, &first);
	if (a)
		return a == CLI_HELP ? 0 : 2;
	const char *path = argv[first];
	bool filtered = cl.filter.name || cl.filter.at_set || cl.filter.record_set;
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
	int rc = hx_dump_mem_filtered(stdout, path, m, size, cl.json, cl.prof, !cl.no_code, filtered ? &cl.filter : NULL);
	if (m)
		munmap(m, size);
	return rc;
}
