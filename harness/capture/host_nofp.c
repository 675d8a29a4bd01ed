/* Host build "nofp": interpreter-like C built with -fomit-frame-pointer
 * (Makefile).  Where GCC allocates the frame-pointer register, the target keeps
 * its state pointer in it (HX_ARCH_STATE_IN_FP: x86_64's rbp, each arch's
 * <arch>.h), as optimized interpreters use rbp as a general register.  GCC for aarch64
 * never allocates x29, even with -fomit-frame-pointer, so there the C leaves
 * x29 alone and the trampoline's caller (hx_host_nofp_call, written as
 * compiled code that does allocate x29) holds the state in it. */
#define HX_HOST_FN(x) hx_host_nofp_##x
#define HX_HOST_TRAP "hx_host_nofp_trap"
#define HX_HOST_CALL hx_host_nofp_call
#include HX_CAPTURE_ARCH_H
#ifdef HX_ARCH_STATE_IN_FP
#define HX_HOST_STATE_IN_FP HX_ARCH_STATE_IN_FP
#endif
#include "harness/capture/host_body.h"
