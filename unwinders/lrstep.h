/* arm64's LR-plus-single-step unwinder (lrstep.c), its parts exposed for tests. */
#ifndef UW_LRSTEP_H
#define UW_LRSTEP_H

#include "unwinders/unwind.h"

extern const struct uw_unwinder uw_lrstep, uw_lrstep_dw;

/* The sample perf's leaf step sees in FP mode: LR only, PC = fp_pc (the
 * kernel chain's first entry), SP = 0, no stack.  mask 0 if s has no LR. */
void uw_lrstep_leaf_sample(const struct uw_sample *s, uint64_t fp_pc, struct uw_sample *out);
/* get_leaf_frame_caller's answer from the engine's chain: its entry 1 as
 * perf holds it (ip - 1) when at least 2 entries came back, else 0 (why set). */
uint64_t uw_lrstep_leaf(const struct uw_result *dw, char *why, size_t whylen);
/* thread__resolve_callchain_sample's splice: leaf (ip - 1, 0 = none) goes
 * before the FP chain's entry 1 unless equal to it; frames in r are
 * reported with ip - 1 undone. */
void uw_lrstep_splice(const struct uw_result *fp, uint64_t leaf, uint32_t leaf_flags,
		      struct uw_result *r);
/* The whole unwinder over one engine (libunwind, libdw, or the oracle in tests). */
int uw_lrstep_unwind_with(const struct uw_unwinder *eng, void *est, const struct uw_view *v,
			  const struct uw_sample *s, struct uw_result *r);

#endif
