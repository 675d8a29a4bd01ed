/* The perf column of `jitunwind replay FILE.data`: real perf's chain of
 * every sample (perf inject -j when the file is not injected, then perf
 * script), placed at addresses in the same map tree the replay uses, and
 * its agreement with jitunwind's emulation of that perf build. */
#ifndef HX_REALPERF_H
#define HX_REALPERF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct hx_rp;
struct rr;
struct rr_view;
struct rr_sample;
struct mt_snap;
struct uw_result;

/* Probe cmd (NULL: perf on PATH), run perf over r->path and parse its
 * chains.  0 with *out set; 0 with *out NULL when cmd is NULL and no working
 * perf is found or it cannot read the recording (a visible skip on stderr);
 * -1 with r->err. */
int hx_rp_open(struct hx_rp **out, struct rr *r, const char *cmd);
/* perf's chain of this sample into *pc (return addresses as the unwinders
 * give them), compared with the emulation's column of res.  1 perf has it,
 * 0 it has none (counted), -1 out of memory. */
int hx_rp_sample(struct hx_rp *p, const struct rr *r, const struct rr_view *v, const struct mt_snap *at,
		 const struct rr_sample *rs, bool regs, uint64_t ip, const struct uw_result *res,
		 struct uw_result *pc);
void hx_rp_report_text(const struct hx_rp *p, const struct rr *r);
void hx_rp_report_json(const struct hx_rp *p, const struct rr *r, FILE *f);
void hx_rp_free(struct hx_rp *p);

#endif
