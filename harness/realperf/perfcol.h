/* The `perf` column (registry key `perf`): real perf over each case's samples. */
#ifndef HX_PERFCOL_H
#define HX_PERFCOL_H

/* The perf command (`--perf CMD`; default `perf` on PATH); may have arguments
 * ("tools/in-root sid perf"). */
void hx_perfcol_set_cmd(const char *cmd);

#include <stddef.h>

/* The perf profile whose jitted-ELF layout (.text sh_addr, the PT_LOAD's
 * p_vaddr) the jitted .so at path has, as a name ("current", "v6.1", ...);
 * "" when none has it or the file cannot be read. */
void hx_perfcol_layout_profile(const char *path, char *out, size_t len);

#endif
