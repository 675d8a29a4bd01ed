/* The C side of a host build, compiled once per build with that build's
 * flags (host_nofp.c, host_nofpleaf.c; Makefile: per-object flags).
 * HX_HOST_FN(x) names this build's functions, HX_HOST_TRAP its breakpoint
 * label, HX_HOST_CALL the function that calls the next trampoline, and
 * HX_HOST_STATE_IN_FP says the target keeps the interpreter state in the
 * frame-pointer register (x86_64; see host_nofp.c for aarch64). */
#include "host.h"

/* With frame pointers on, GCC refuses rbp as a register variable ("bp cannot
 * be used in asm here"): the nofp build cannot silently keep them on x86_64;
 * tests/test_host.c checks the rest. */

/* the breakpoint, then a jump to itself (the spin point the capture resumes
 * past, or spins on): the build's harness/trap_<arch>.h (Makefile: HX_TRAP_H) */
#include HX_TRAP_H

/* A leaf: no calls, so -momit-leaf-frame-pointer gives it no frame record;
 * the sample is taken at its breakpoint.  It spins `loops` times first (a
 * clock would be a call), so a real profiler's samples land in it. */
__attribute__((noinline, noclone)) void HX_HOST_FN(leaf)(uint64_t loops)
{
	for (uint64_t i = 0; i < loops; i++)
		__asm__ volatile("" ::: "memory");
#if defined(__aarch64__)
	/* x30 as is: __builtin_return_address strips PAC bits with xpaclri,
	 * which clobbers x30 and so makes GCC save it in a frame record */
	uint64_t ra;
	__asm__ volatile("mov %0, x30" : "=r"(ra));
	hx_host_leaf_ra = ra;
#else
	hx_host_leaf_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
#endif
	__asm__ volatile(".globl " HX_HOST_TRAP "\n" HX_HOST_TRAP ":\n\t" HX_TRAP_SPIN "\n" ::: "memory");
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
	register volatile uint64_t *st __asm__(HX_HOST_STATE_IN_FP) = state;
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
