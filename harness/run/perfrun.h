/* Running the real perf tool (`--perf CMD`) and reading what `perf script`
 * prints: shared by the perf column (perfcol.c) and perf-check. */
#ifndef HX_PERFRUN_H
#define HX_PERFRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "juerr.h"
#include "unwinders/unwind.h"

/* The perf command (default `perf` on PATH); may have arguments
 * ("tools/in-root sid perf"). */
void hx_perf_set_cmd(const char *cmd);
const char *hx_perf_cmd(void);
/* Whether the command was given (hx_perf_set_cmd: --perf CMD) rather than
 * the default `perf` found on PATH. */
bool hx_perf_cmd_given(void);

struct hx_perf_build {
	char version[64];          /* "6.1.192" */
	int major;
	char engine[16];           /* its DWARF unwinder: "libunwind" when built in, else "libdw" */
};
/* `perf version --build-options`, once per command: 0 with *b set, or -1
 * with why (not installed, not runnable, no DWARF unwinder built in). */
int hx_perf_probe(const struct hx_perf_build **b, char *why, size_t len);
/* After a failed probe: whether the command itself is bad (no such program,
 * or the wrapper refused its arguments: exit 2) rather than a perf that
 * cannot be used here (a root or emulator missing: exit 77, no DWARF
 * unwinder built in, another failure). */
bool hx_perf_bad_cmd(void);
/* What to do about a perf step that failed with stderr's first line err:
 * one sentence ("" when there is no advice). */
void hx_perf_advice(const char *sub, const char *err, char *out, size_t len);

/* A private directory for perf's files, $TMPDIR (or /tmp)/jitunwind-TAG-PID-XXXXXX
 * (a dead pid's of the tag removed first): DIR/home is its HOME, DIR/buildid its
 * --buildid-dir.  0, or -1 with err. */
int hx_perf_workdir(char *dir, size_t len, const char *tag, struct ju_err *err);
/* Removes it (JU_PERF_KEEP=1 keeps it). */
void hx_perf_workdir_remove(const char *dir);

/* perf ARGS... with the workdir's HOME and build-id cache; stdout to out,
 * stderr to dir/SUB.stderr (SUB: args[0]); env: "K=V" strings for the
 * process (NULL: none).
 * 0, or a negative errno (-EIO: perf failed) with why: what ran (the command and its input), the exit status,
 * perf's first line on stderr, and what to do about it (hx_perf_advice). */
int hx_perf_run(const char *dir, const char *const *args, const char *const *env, const char *out,
		char *why, size_t wl);

/* A file's bytes, NUL-terminated (malloc'd); NULL with errno set. */
char *hx_slurp(const char *path, size_t *n);

/* What `perf script -F pid,time,ip,dso --ns --show-mmap-events` printed:
 * every sample's chain, each frame placed at its address through the mmap
 * events printed before it (perf prints a frame in a DSO as its file
 * offset), values otherwise as printed (a caller frame is a return address
 * minus one in DWARF mode, a zero return address -1). */
struct hx_ps_map { uint64_t time, start, len, pgoff; char dso[160]; };
struct hx_ps_sample {
	uint32_t pid;
	uint64_t time;             /* ns, perf's clock (CLOCK_MONOTONIC with -k 1) */
	int n;
	bool unplaced;             /* a frame no mapping holds was left out */
	uint64_t addr[UW_MAX_FRAMES];
};
struct hx_ps {
	struct hx_ps_map *maps;
	size_t nmaps, capmaps;
	struct hx_ps_sample *s;
	size_t n, cap;
	char why[200];             /* the first frame that could not be placed */
	int mode;                  /* how this perf prints a DSO's frames: address (1) or file offset (2) */
};
/* Parses text (modified); 0, or -ENOMEM.  hx_ps_free after either. */
int hx_ps_parse(struct hx_ps *ps, char *text);
void hx_ps_free(struct hx_ps *ps);

#endif
