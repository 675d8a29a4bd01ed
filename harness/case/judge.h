/* The judge: an unwinder's chain against the truth (verdicts, DESIGN vocabulary). */
#ifndef HX_JUDGE_H
#define HX_JUDGE_H

#include <stdint.h>
#include <stdbool.h>

enum hx_verdict { HX_OK, HX_TRUNCATED, HX_SKIPPED, HX_WRONG, HX_DUPLICATE, HX_ERROR };

struct hx_judgement {
	enum hx_verdict v;
	int diverge_got;     /* index in the chain of the first divergent frame, -1 if none */
	int diverge_truth;   /* index in the truth it was compared with, -1 if none */
};

const char *hx_verdict_name(enum hx_verdict v);
void hx_judge(const uint64_t *truth, int nt, const uint64_t *got, int ng, struct hx_judgement *j);
/* Equal over the compared range: a's first `len` frames equal b's. */
bool hx_chain_prefix_eq(const uint64_t *a, int na, const uint64_t *b, int nb, int len);

#endif
