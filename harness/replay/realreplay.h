/* `jitunwind replay FILE.data`: a perf.data recorded from a real JIT (with
 * --call-graph dwarf), replayed through every unwinder against perf's view
 * of the process at each sample's time.  No truth: it reports where the
 * unwinders disagree, per JIT symbol and pc offset. */
#ifndef HX_REALREPLAY_H
#define HX_REALREPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "harness/outcome.h"
#include "unwinders/model/perfview.h"

#define HX_RR_MAX_DUMPS 16

/* The settings of one replay (the CLI fills them: harness/cli/replaycmd.c). */
struct hx_rr_settings {
	const char *path;                   /* the perf.data */
	const char *json;                   /* --json FILE, or NULL */
	const char *dumps[HX_RR_MAX_DUMPS]; /* --jitdump DUMP... */
	size_t ndumps;
	const char *symfs;                  /* --symfs DIR, or NULL */
	const char *unwinders;              /* --unwinders LIST, NULL: the defaults */
	const char *perf_cmd;               /* --perf CMD, NULL: perf on PATH */
	bool no_perf, lint, stats;
	const char *lint_ignore;            /* --lint-ignore RULES */
	enum pv_profile prof;
	int top;                            /* keys shown */
	uint64_t max_views;                 /* views built per dump at other times */
};

/* Does the file start with perf.data's magic (either byte order)? */
bool hx_is_perf_data(const char *path);
/* The same, and when not, why (cannot open, short, a zero header perf never
 * finished, another magic) in why[len]. */
bool hx_perf_data_why(const char *path, char *why, size_t len);
/* 0 with out->kind clean (every unwinder agreed on every JIT sample) or
 * findings (some JIT sample's chains differ); a negative errno on bad input
 * or a failed write (the message printed). */
int hx_realreplay_run(const struct hx_rr_settings *s, struct hx_cmd_outcome *out);

#endif
