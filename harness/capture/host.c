/* Host builds: the table [sample] host selects from (see host.h). */
#include "harness/capture/host.h"
#include "harness/capture/capture.h"

extern const char hx_callee_trap[];
void hx_target(struct hx_ctx *ctx);

volatile uint64_t hx_host_leaf_ra;

static const struct hx_host hosts[HX_HOST_N] = {
	[HX_HOST_FP] = { hx_target, hx_call, hx_call_ret, hx_callee_trap,
			 false, true, true, true },
	[HX_HOST_NOFP] = { hx_host_nofp_target, hx_host_nofp_call, hx_host_nofp_call_ret,
			   hx_host_nofp_trap, true, false, false, false },
	[HX_HOST_NOFP_LEAF] = { hx_host_nofpleaf_target, hx_call, hx_call_ret,
				hx_host_nofpleaf_trap, true, true, true, false },
};

const struct hx_host *hx_host_get(int kind)
{
	return kind >= 0 && kind < HX_HOST_N ? &hosts[kind] : NULL;
}
