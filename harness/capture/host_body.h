/* The C side of a host build, compiled once per build with that build's
 * flags (host_nofp.c, host_nofpleaf.c; Makefile: per-object flags).
 * HX_HOST_FN(x) names this build's functions, HX_HOST_TRAP its breakpoint
 * label, HX_HOST_CALL the function that calls the next trampoline, and
 * HX_HOST_STATE_IN_FP says the target keeps the interpreter state in the
 * frame-pointer register (where the arch names one: host_nofp.c).  The
 * arch's inline assembly comes from harness/capture_<arch>.h. */
#include "harness/capture/host.h"

#include HX_CAPTURE_ARCH_H

/* A leaf: no calls, so -momit-leaf-frame-pointer gives it no frame record;
 * the sample is taken at its breakpoint.  It spins `loops` times first (a
 * clock would be a call), so a real profiler's samples land in it. */
__attribute__((noinline, noclone)) void HX_HOST_FN(leaf)(uint64_t loops)
{
	for (uint64_t i = 0; i < loops; i++)
		__asm__ volatile("" ::: "memory");
	hx_host_leaf_ra = HX_ARCH_LEAF_RA();
	/* the breakpoint and its spin (capture.c resumes past both) */
	__asm__ volatile(".globl " HX_HOST_TRAP "\n" HX_HOST_TRAP ":\n\t" HX_ARCH_TRAP_SPIN "\n" ::: "memory");
}

/* The interpreter: called by the trampoline, calls the next level's
 * trampoline (through HX_HOST_CALL) or the leaf. */
__attribute__((noinline, noclone)) void HX_HOST_FN(target)(struct hx_ctx *ctx)
{
#ifdef HX_HOST_STATE_IN_FP
	/* the frame-pointer register is a general register here: it holds the
	 * interpreter's state pointer from here to the end (the compiler saves
	 * the caller's value and describes that in the CFI) */
	volatile uint64_t state[2] = { HX_HOST_STATE0, HX_HOST_STATE1 };
	/* where the arch's FP walk finds a record from the FP (its <arch>.h says
	 * where the psABI puts it below the FP) */
#ifndef HX_ARCH_STATE_FP_OFF
#define HX_ARCH_STATE_FP_OFF 0
#endif
	register volatile uint64_t *st __asm__(HX_HOST_STATE_IN_FP) =
		(volatile uint64_t *)((volatile char *)state + HX_ARCH_STATE_FP_OFF);
	__asm__ volatile("" : "+r"(st) :: "memory");
#endif
	void *tramp;
	uint64_t *slot;
	int k = hx_host_enter(ctx, __builtin_return_address(0), &tramp, &slot);
	if (k > 0) {
		HX_HOST_CALL(ctx, tramp, slot, (void *)HX_HOST_FN(target));
		hx_host_leave(ctx, k);
	} else {
		uint64_t loops;
		if (hx_host_in_callee(ctx, &loops))
			HX_HOST_FN(leaf)(loops);
	}
#ifdef HX_HOST_STATE_IN_FP
	__asm__ volatile("" : "+r"(st) :: "memory");
#endif
	__asm__ volatile("" ::: "memory");
}
