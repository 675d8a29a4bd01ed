/* Capture: run one case in the (already forked) child and write its
 * samples, maps, functions and truth to out_fd. */
#ifndef HX_CAPTURE_H
#define HX_CAPTURE_H

#include <stdint.h>
#include <ucontext.h>
#include "case.h"

/* Runs in the child. Returns 0 when the case ran to its end; on setup errors
 * writes an ERROR record and returns -1. Crashes are written as CRASH records
 * by the signal handler, which then _exit()s. */
int hx_capture_case(const struct hx_case *c, const char *case_path, const char *dumpdir, int out_fd);

/* Per-arch glue (capture_<arch>.c and stubs_<arch>.S). */
struct hx_ctx;
void hx_arch_regs(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64]);
uint64_t hx_arch_pc(const ucontext_t *uc);
uint64_t hx_arch_sp(const ucontext_t *uc);
/* Address of the breakpoint instruction that trapped (x86_64: pc - 1). */
uint64_t hx_arch_trap_addr(const ucontext_t *uc);
/* Resume at the breakpoint's address (restored bytes) */
void hx_arch_resume_at(ucontext_t *uc, uint64_t addr);
/* After the callee's own trap instruction: where execution continues. */
void hx_arch_skip_trap(ucontext_t *uc);
extern const uint8_t hx_arch_bkpt[];
extern const size_t hx_arch_bkpt_len;

/* stubs_<arch>.S: hx_call(ctx, tramp, slot, target) stores its own return
 * address in *slot, then calls tramp(ctx, ..., target) with target as the
 * 4th argument (CPython's trampoline signature). */
void hx_call(void *ctx, void *tramp, uint64_t *slot, void *target);
extern const char hx_call_ret[];

#endif
