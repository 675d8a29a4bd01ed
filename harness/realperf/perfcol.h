/* The `perf` column (registry key `perf`): real perf over each case's samples. */
#ifndef HX_PERFCOL_H
#define HX_PERFCOL_H

/* The perf command (`--perf CMD`; default `perf` on PATH); may have arguments
 * ("tools/in-root sid perf"). */
void hx_perfcol_set_cmd(const char *cmd);

#endif
