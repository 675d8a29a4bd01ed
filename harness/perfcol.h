/* The `perf` column (registry key `perf`): real perf over each case's samples. */
#ifndef HX_PERFCOL_H
#define HX_PERFCOL_H

#include <stddef.h>

/* The perf command (`--perf CMD`; default `perf` on PATH); may have arguments
 * ("tools/in-root sid perf"). */
void hx_perfcol_set_cmd(const char *cmd);

/* Probe the perf command CMD (NULL: perf on PATH; it becomes the command
 * hx_perf_exec runs): its version and the DWARF unwinder it is built with,
 * whose jitunwind emulation is the reference ("libunwind" or "libdw").
 * 0, or -1 with why. */
int hx_perf_probe(const char *cmd, char *version, size_t vl, char *emulation, size_t el,
		  char *why, size_t wl);
/* Run the probed perf command with args (NULL-terminated), stdout and
 * stderr to files, HOME set if home: its exit status, 127 when it cannot
 * be run, -1 on a failed fork. */
int hx_perf_exec(const char *const *args, const char *out, const char *errf, const char *home);

#endif
