/* kernel-fp: the kernel's own frame-pointer walk (perf_callchain_user), as
 * the CALLCHAIN of a kernel sample taken by the harness's sampler at a spin
 * point (harness/capture/ksampler.c).  Nothing is unwound here: the chain is the
 * kernel's; it is judged against the truth like any unwinder, and `faithful`
 * compares it with the `fp` emulation on the same sample. */
#include "unwinders/unwind.h"

#include <stdio.h>

static int kfp_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		      struct uw_result *r)
{
	(void)state;
	(void)v;
	r->n = 0;
	r->why[0] = 0;
	r->stop = UW_STOP_END;
	if (!s->callchain) {
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "not a kernel sample: no CALLCHAIN (run with kernel-fp selected)");
		return 0;
	}
	for (uint32_t i = 0; i < s->ncallchain && r->n < UW_MAX_FRAMES; i++) {
		r->addr[r->n] = s->callchain[i];
		r->flags[r->n++] = 0;
	}
	/* the kernel stops at perf_event_max_stack (127) like the emulation's limit */
	if (s->ncallchain >= UW_MAX_FRAMES - 1)
		r->stop = UW_STOP_MAX;
	return 0;
}

static const char *const kfp_arches[] = { NULL };   /* never by default: it needs perf_event_open */

const struct uw_unwinder uw_kernel_fp = {
	.name = "kernel-fp", .about = "the kernel's frame-pointer walk itself (perf_event_open CALLCHAIN at spin points)",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_FP_EMU, .default_arches = kfp_arches, .quiet_why = true,
	.kernel = true, .expect_as = "fp", .unwind = kfp_unwind,
};
