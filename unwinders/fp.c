/* Frame-pointer unwinding with the kernel's semantics (facts section 4),
 * reading only the snapshot: the kernel reads live memory, so the FP
 * unwinder is given the whole stack copy. */
#include "unwinders/view.h"

#include <stdio.h>

/* The kernel's walk, with the arch's record layout and stop rules
 * (uw_arch.fp): x86_64 stores every record's return address, zero too,
 * until a zero FP; arm64 also stops on a misaligned record and on one that
 * does not move up the stack, and strips PAC bits; an arch may read the record
 * below the FP (next_off < 0) and take the first return address from the live
 * link register (first_ra_live).  Each arch's record says which. */
static void fp_walk(const struct uw_sample *s, struct uw_result *r)
{
	const struct uw_fp_layout *L = &s->arch->fp;
	uint64_t fp = uw_reg(s, s->arch->perf_fp);
	bool first = true;
	while (r->n < UW_MAX_FRAMES - 1) {
		uint64_t next, ret;
		bool live = first && L->first_ra_live;
		if (!live && (fp == 0 || (L->align && fp % L->align))) {
			r->stop = UW_STOP_END;
			return;
		}
		if (!uw_stack_read(s, fp + (uint64_t)L->next_off, &next) ||
		    !uw_stack_read(s, fp + (uint64_t)L->ra_off, &ret)) {
			r->stop = UW_STOP_MEM;
			uw_why_hex(r->why, sizeof(r->why), "frame record at ", fp + (uint64_t)L->next_off,
				   " outside the stack copy");
			return;
		}
		if (live)
			ret = uw_reg(s, s->arch->perf_lr);
		first = false;
		if (L->zero_ra_ends && !ret) {
			r->stop = UW_STOP_END;
			return;
		}
		r->addr[r->n] = ret & L->ra_mask;
		r->flags[r->n++] = 0;
		if (L->monotonic && fp >= next) {
			r->stop = UW_STOP_END;
			return;
		}
		fp = next;
	}
	r->stop = UW_STOP_MAX;
}

static int fp_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		     struct uw_result *r)
{
	r->n = 0;
	r->why[0] = 0;
	r->stop = UW_STOP_END;
	r->addr[r->n] = uw_reg(s, s->arch->perf_ip);
	r->flags[r->n++] = 0;
	fp_walk(s, r);
	return 0;
}

const struct uw_unwinder uw_fp = {
	.name = "fp", .about = "the kernel's frame-pointer walk",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_FP, .quiet_why = true, .unwind = fp_unwind,
	.bench_rate = 10e6,
};
