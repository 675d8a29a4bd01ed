/* Verdicts by aligning the chain with the truth, frame by frame. Frames
 * below the anchor (after the truth's last frame) are not compared. */
#include "harness/case/judge.h"

const char *hx_verdict_name(enum hx_verdict v)
{
	static const char *const n[] = { "ok", "truncated", "skipped", "wrong", "duplicate", "error" };
	return (unsigned)v < 6 ? n[v] : "?";
}

/* severity when several anomalies occur in one chain */
static int rank(enum hx_verdict v)
{
	static const int r[] = { [HX_OK] = 0, [HX_TRUNCATED] = 1, [HX_SKIPPED] = 2,
				 [HX_DUPLICATE] = 3, [HX_WRONG] = 4, [HX_ERROR] = 5 };
	return r[v];
}

static void note(struct hx_judgement *j, enum hx_verdict v, int g, int t)
{
	if (j->diverge_got < 0) {
		j->diverge_got = g;
		j->diverge_truth = t;
	}
	if (rank(v) > rank(j->v))
		j->v = v;
}

void hx_judge(const uint64_t *truth, int nt, const uint64_t *got, int ng, struct hx_judgement *j)
{
	j->v = HX_OK;
	j->diverge_got = j->diverge_truth = -1;
	if (nt <= 0)
		return;
	/* a zero return address ends a chain (the kernel stores it, perf prints
	 * it as ip - 1 = [unknown]): it is no frame */
	while (ng > 0 && got[ng - 1] == 0)
		ng--;
	if (ng <= 0) {
		note(j, HX_ERROR, 0, 0);
		return;
	}
	int i = 0, k = 0;
	while (i < nt && k < ng) {
		if (got[k] == truth[i]) {
			i++;
			k++;
			continue;
		}
		if (i > 0 && got[k] == truth[i - 1]) {
			note(j, HX_DUPLICATE, k, i);
			k++;
			continue;
		}
		int m;
		for (m = i + 1; m < nt; m++)
			if (truth[m] == got[k])
				break;
		if (m < nt) {
			note(j, HX_SKIPPED, k, i);
			i = m;
			continue;
		}
		note(j, HX_WRONG, k, i);
		break;
	}
	if (i < nt && k >= ng)
		note(j, HX_TRUNCATED, k, i);
	if (ng <= 1 && nt > 1)
		j->v = HX_ERROR;
}

bool hx_chain_prefix_eq(const uint64_t *a, int na, const uint64_t *b, int nb, int len)
{
	if (na < len || nb < len)
		return false;
	for (int i = 0; i < len; i++)
		if (a[i] != b[i])
			return false;
	return true;
}
