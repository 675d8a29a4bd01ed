/* Frame-pointer unwinding with the kernel's semantics (facts section 4),
 * reading only the snapshot: the kernel reads live memory, so the FP
 * unwinder is given the whole stack copy. */
#include "view.h"

#include <elf.h>
#include <stdio.h>

/* arch/x86/events/core.c perf_callchain_user: no monotonicity check, a
 * zero return address is stored too. */
static void fp_x86_64(const struct uw_sample *s, struct uw_result *r)
{
	uint64_t fp = uw_reg(s, s->arch->perf_fp);
	while (r->n < UW_MAX_FRAMES - 1) {
		uint64_t next, ret;
		if (fp == 0) {
			r->stop = UW_STOP_END;
			return;
		}
		if (!uw_stack_read(s, fp, &next) || !uw_stack_read(s, fp + 8, &ret)) {
			r->stop = UW_STOP_MEM;
			snprintf(r->why, sizeof(r->why), "frame record at 0x%llx outside the stack copy",
				 (unsigned long long)fp);
			return;
		}
		r->addr[r->n] = ret;
		r->flags[r->n++] = 0;
		fp = next;
	}
	r->stop = UW_STOP_MAX;
}

/* arch/arm64/kernel/perf_callchain.c: stop on misalignment, on a record
 * that does not move up the stack, PAC bits stripped from lr. */
static void fp_aarch64(const struct uw_sample *s, struct uw_result *r)
{
	uint64_t tail = uw_reg(s, s->arch->perf_fp);
	while (r->n < UW_MAX_FRAMES - 1 && tail && !(tail & 7)) {
		uint64_t fp, lr;
		if (!uw_stack_read(s, tail, &fp) || !uw_stack_read(s, tail + 8, &lr)) {
			r->stop = UW_STOP_MEM;
			snprintf(r->why, sizeof(r->why), "frame record at 0x%llx outside the stack copy",
				 (unsigned long long)tail);
			return;
		}
		r->addr[r->n] = lr & 0x0000ffffffffffffull;   /* ptrauth_strip_insn_pac, 48-bit VA */
		r->flags[r->n++] = 0;
		if (tail >= fp) {
			r->stop = UW_STOP_END;
			return;
		}
		tail = fp;
	}
	r->stop = r->n >= UW_MAX_FRAMES - 1 ? UW_STOP_MAX : UW_STOP_END;
}

static int fp_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		     struct uw_result *r)
{
	r->n = 0;
	r->why[0] = 0;
	r->stop = UW_STOP_END;
	r->addr[r->n] = uw_reg(s, s->arch->perf_ip);
	r->flags[r->n++] = 0;
	if (s->arch->elf_mach == EM_AARCH64)
		fp_aarch64(s, r);
	else
		fp_x86_64(s, r);
	return 0;
}

const struct uw_unwinder uw_fp = {
	.name = "fp", .about = "the kernel's frame-pointer walk",
	.sees = UW_SEES_WHOLE, .ref = UW_REF_FP, .quiet_why = true, .unwind = fp_unwind,
};
