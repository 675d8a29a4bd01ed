/* Capture: run one case in the (already forked) child and write its
 * samples, maps, functions and truth to out_fd. */
#ifndef HX_CAPTURE_H
#define HX_CAPTURE_H

#include <stdint.h>
#include <ucontext.h>
#include "case.h"
#include "trampolines/tramp.h"

/* Runs in the child. Returns 0 when the case ran to its end; on setup errors
 * writes an ERROR record and returns -1. Crashes are written as CRASH records
 * by the signal handler, which then _exit()s. */
int hx_capture_case(const struct hx_case *c, const char *case_path, const char *dumpdir, int out_fd);

/* The capture side's arch table: one entry, the host's (capture_<arch>.c;
 * ucontext layouts exist only for the arch the code runs on). */
struct hx_cap_arch {
	const struct tr_arch *tr;  /* the JIT side's arch: name, breakpoint bytes */
	/* ucontext -> perf's user register layout (abi, sample mask, by perf id) */
	void (*regs)(const ucontext_t *uc, uint64_t *abi, uint64_t *mask, uint64_t regs[64]);
	uint64_t (*pc)(const ucontext_t *uc);
	uint64_t (*sp)(const ucontext_t *uc);
	/* Address of the breakpoint instruction that trapped (x86_64: pc - 1). */
	uint64_t (*trap_addr)(const ucontext_t *uc);
	/* Resume at the breakpoint's address (restored bytes) */
	void (*resume_at)(ucontext_t *uc, uint64_t addr);
	/* After the callee's own trap instruction: where execution continues. */
	void (*skip_trap)(ucontext_t *uc);
};
extern const struct hx_cap_arch hx_cap_host;

/* stubs_<arch>.S: hx_call(ctx, tramp, slot, target) stores its own return
 * address in *slot, then calls tramp(ctx, ..., target) with target as the
 * 4th argument (CPython's trampoline signature). */
void hx_call(void *ctx, void *tramp, uint64_t *slot, void *target);
extern const char hx_call_ret[];

#endif
