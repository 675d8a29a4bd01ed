/* riscv64 inline assembly for the capture's C (the C target's callee trap, the
 * host builds' leaf): a breakpoint the harness stops at must sit inside that C
 * function's own frame, so it is compiled in, not taken from a table.  Included
 * as HX_CAPTURE_ARCH_H (Makefile: harness/capture_<arch>.h of the build). */
#ifndef HX_CAPTURE_RISCV64_H
#define HX_CAPTURE_RISCV64_H

#include <stdint.h>

/* the breakpoint, then a jump to itself: the spin point the capture resumes
 * past, or spins on.  .option norvc: a 4-byte ebreak (the JIT side writes
 * 4-byte words; skip_trap steps over 4 bytes) */
#define HX_ARCH_TRAP_SPIN ".option push\n\t.option norvc\n\tebreak\n1:\n\tj 1b\n\t.option pop"

/* a leaf's return address: ra, as its caller's jalr left it */
#define HX_ARCH_LEAF_RA() ({ uint64_t ra_; __asm__ volatile("mv %0, ra" : "=r"(ra_)); ra_; })

/* GCC for riscv64 allocates s0 in -fomit-frame-pointer code (the nofp
 * target keeps its ctx there otherwise), so as on x86_64 the interpreter
 * keeps its state pointer in the frame-pointer register.  The kernel's
 * riscv64 walk reads the record below FP, so s0 points 16 bytes above the
 * state {tagged counter, opcode word}, which it then reads as {fp, ra}. */
#define HX_ARCH_STATE_IN_FP "s0"
#define HX_ARCH_STATE_FP_OFF 16

/* 0: the stack is where qemu-user puts it; riscv64 signs no return address */
#define HX_ARCH_STACK_DEPTH 0u

/* 0: breakpoints are restored by tr_patch's mprotect pair: the riscv64
 * capture runs under qemu-user, whose translated code goes stale on a write
 * it cannot see through page protections */
#define HX_ARCH_DIRECT_PATCH 0

/* 0: qemu-user ignores MADV_DONTFORK (see the aarch64 header) */
#define HX_ARCH_DONTFORK 0

#endif
