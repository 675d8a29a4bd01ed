/* aarch64 inline assembly for the capture's C (the C target's callee trap, the
 * host builds' leaf): a breakpoint the harness stops at must sit inside that C
 * function's own frame, so it is compiled in, not taken from a table.  Included
 * as HX_CAPTURE_ARCH_H (Makefile: harness/capture_<arch>.h of the build). */
#ifndef HX_CAPTURE_AARCH64_H
#define HX_CAPTURE_AARCH64_H

#include <stdint.h>

/* the breakpoint, then a jump to itself: the spin point the capture resumes
 * past, or spins on */
#define HX_ARCH_TRAP_SPIN "brk #0\n1:\n\tb 1b"

/* a leaf's return address: x30 as is.  __builtin_return_address strips PAC
 * bits with xpaclri, which clobbers x30 and so makes GCC save it in a frame
 * record, and the leaf would have one. */
#define HX_ARCH_LEAF_RA() ({ uint64_t ra_; __asm__ volatile("mov %0, x30" : "=r"(ra_)); ra_; })

/* No HX_ARCH_STATE_IN_FP: GCC for aarch64 never allocates x29, even with
 * -fomit-frame-pointer, so the nofp build's C leaves x29 alone and the
 * trampoline's caller (hx_host_nofp_call, stubs_aarch64.S) holds the state
 * in it. */

/* How far below the stack's top the capture child starts each batch.  qemu-user
 * maps the guest stack at the same place in every run, but the environment
 * above it moves SP by its size; SP is the modifier of every PAC signature,
 * and one in about 128 signatures has a zero PAC field (the return address
 * then reads right unstripped), so a verdict past a signed return address
 * would follow the environment (a make check saw hybrid-pac-nofp-leaf-*'s
 * lr-step go "ok" where the case says "wrong").  Starting at a fixed depth
 * gives every sample the same stack addresses, and with QEMU_RAND_SEED the
 * same keys, in every environment. */
#define HX_ARCH_STACK_DEPTH (256u << 10)

/* 0: breakpoints are restored by tr_patch's mprotect pair.  The aarch64
 * capture runs under qemu-user here, whose translated code goes stale on a
 * write it cannot see through page protections (a forced write through
 * /proc/self/mem is one) */
#define HX_ARCH_DIRECT_PATCH 0

/* 0: qemu-user ignores MADV_DONTFORK (a forked child keeps the mapping and
 * lists it in its maps), so hx_capture_samples maps a memfd per batch and
 * unmaps it when the samples are freed, as before the kept memfd */
#define HX_ARCH_DONTFORK 0

#endif
