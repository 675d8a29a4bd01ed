/* The `perf` column (registry key `perf`): real perf over each case's samples. */
#ifndef HX_PERFCOL_H
#define HX_PERFCOL_H

#include <stdbool.h>

struct uw_arch;

/* The perf command (`--perf CMD`; default `perf` on PATH); may have arguments
 * ("tools/in-root sid perf"). */
void hx_perfcol_set_cmd(const char *cmd);
/* perf major.minor finds sample registers by the arch's name, which knows none
 * of arch (uw_arch.perf_name_unknown): perf 6.5 up to its ELF-machine register
 * rework (7.x has it); such a perf is profile v6.12 there */
bool hx_perf_regs_by_name(const struct uw_arch *arch, int major, int minor);

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether the run asked for real perf and can have it.  Asked for: a perf
 * column named in --unwinders, or --perf CMD with a selection (the default
 * one) that holds a perf column.  Not asked for, a perf that is not found is
 * a visible skip of the column (the caller says so). */
enum hx_perfcol_status {
	HX_PERFCOL_OK,           /* usable, or not asked for */
	HX_PERFCOL_UNUSABLE,     /* asked for; this machine cannot run it (why says how to fix it) */
	HX_PERFCOL_BAD_CMD,      /* asked for; the command is no program or refused its arguments */
};
/* names: the selection (named: given by --unwinders; else the default one,
 * whose perf columns are those default on arch). */
enum hx_perfcol_status hx_perfcol_check(const char *const *names, int n, bool named, const char *arch,
					char *why, size_t len);

/* The perf profile whose jitted-ELF layout (.text sh_addr, the PT_LOAD's
 * p_vaddr) the jitted .so at path has, as a name ("current", "v6.1", ...);
 * "" when none has it or the file cannot be read. */
void hx_perfcol_layout_profile(const char *path, char *out, size_t len);
/* ...of the first jitted-PID-N.so in dir written since `since` ("" when none) */
struct timespec;
void hx_perfcol_fresh_profile(const char *dir, uint32_t pid, const struct timespec *since, char *out, size_t len);

/* Which of a case's n perf runs (dump sizes) answers a sample whose stack
 * copy is stack_size bytes: DWARF mode the smallest size >= it, fp mode (one
 * run, no stack in the file) the first whatever the size; -1 none. */
int hx_perfcol_pick_run(const int *sizes, int n, bool fp, uint64_t stack_size);

#endif
