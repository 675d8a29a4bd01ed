/* x86_64 inline assembly for the capture's C (the C target's callee trap, the
 * host builds' leaf): a breakpoint the harness stops at must sit inside that C
 * function's own frame, so it is compiled in, not taken from a table.  Included
 * as HX_CAPTURE_ARCH_H (Makefile: harness/capture_<arch>.h of the build). */
#ifndef HX_CAPTURE_X86_64_H
#define HX_CAPTURE_X86_64_H

#include <stdint.h>

/* the breakpoint, then a jump to itself (cc; eb fe): the spin point the
 * capture resumes past, or spins on */
#define HX_ARCH_TRAP_SPIN "int3\n1:\n\tjmp 1b"

/* a leaf's return address, as its caller's call pushed it */
#define HX_ARCH_LEAF_RA() ((uint64_t)(uintptr_t)__builtin_return_address(0))

/* the frame-pointer register as a GNU C register variable: where the nofp
 * build's interpreter keeps its state (host_nofp.c).  With frame pointers on,
 * GCC refuses it ("bp cannot be used in asm here"), so a nofp build cannot
 * silently keep them. */
#define HX_ARCH_STATE_IN_FP "rbp"

/* 0: the stack's place is left as it is (the kernel randomizes it anyway;
 * x86_64 signs no return address) */
#define HX_ARCH_STACK_DEPTH 0u

/* 1: breakpoints are restored through /proc/self/mem (tr_arena_direct), the
 * capture running natively on this arch */
#define HX_ARCH_DIRECT_PATCH 1

/* 1: MADV_DONTFORK keeps a mapping out of a capture child (its maps, what
 * perf is told of), so hx_capture_samples keeps its samples memfd mapped
 * from one batch to the next (batch.c) */
#define HX_ARCH_DONTFORK 1

#endif
