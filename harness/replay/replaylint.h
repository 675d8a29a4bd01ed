/* `jitunwind replay --lint`: lint meets replay.  Every pc where a DWARF
 * unwinder (libunwind, libdw) loses a JIT frame's caller in the replay is
 * lined up with the lint findings on the same dump that name that pc (or
 * its whole load): explained (rule id + offset) or unexplained. */
#ifndef HX_REPLAYLINT_H
#define HX_REPLAYLINT_H

#include <stdint.h>
#include <stdio.h>

struct hx_rl;
struct rr;
struct rr_view;
struct uw_result;
struct uw_sample;

/* Lint every dump of the replay (its perf profile, the recording's stack
 * size, the directory perf read it in).  ignore: rule ids or names, comma
 * separated, left out of the pairing (NULL: none).  0, or -1 with r->err. */
int hx_rl_open(struct hx_rl **out, struct rr *r, const char *ignore);
/* Note where the DWARF columns of res lose a JIT frame's caller.  0 or -1 (out of memory). */
int hx_rl_sample(struct hx_rl *l, const struct rr *r, const struct rr_view *v, const struct uw_sample *s,
		 const struct uw_result *res);
void hx_rl_report_text(const struct hx_rl *l, const struct rr *r);
void hx_rl_report_json(const struct hx_rl *l, const struct rr *r, FILE *f);
/* How many loss pcs no finding explains. */
unsigned long hx_rl_unexplained(const struct hx_rl *l);
void hx_rl_free(struct hx_rl *l);

#endif
