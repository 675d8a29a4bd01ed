/* Capture: run one case in the (already forked) child and write its
 * samples, maps, functions and truth to out_fd. */
#ifndef HX_CAPTURE_H
#define HX_CAPTURE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
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
	/* A jump to itself (x86_64 `jmp .`, arm64 `b .`): a spin point's bytes */
	const uint8_t *spin;
	size_t spin_len;
	/* Tests only (spin.c's negative control): flip a bit of a callee-saved
	 * register, one no code at a spin point may see changed */
	void (*tamper)(ucontext_t *uc);
};
extern const struct hx_cap_arch hx_cap_host;

/* stubs_<arch>.S: hx_call(ctx, tramp, slot, target) stores its own return
 * address in *slot, then calls tramp(ctx, ..., target) with target as the
 * 4th argument (CPython's trampoline signature). */
void hx_call(void *ctx, void *tramp, uint64_t *slot, void *target);
extern const char hx_call_ret[];

/* Spin points (harness/spin.c; README "Spin points"): after a breakpoint's
 * sample the child spins at that pc with the sample point's exact state until
 * released (SIGUSR1: from the parent's kernel sampler, or the child's own
 * timer), and checks then that registers and stack are unchanged. */
#define HX_SPIN_SIG SIGUSR1
struct hx_spin_msg {              /* child -> parent, one write (< PIPE_BUF) */
	uint64_t pc;
	uint32_t func, offset, ntruth, pad;
	uint64_t truth[64];
	uint8_t fpflag[64];
};
/* In the child, before hx_capture_case: spin at every sample point; req_fd >= 0:
 * tell the parent there and wait for its HX_SPIN_SIG, else release by timer. */
void hx_spin_configure(bool on, int req_fd);
bool hx_spin_enabled(void);
/* Installs the release handler (after sigaltstack).  0 or -errno. */
int hx_spin_install(struct tr_arena *a, void (*check)(ucontext_t *uc));
/* From the trap handler: spin at addr (arena code, patched with the spin
 * bytes; NULL: the code there already spins) once the handler returns; the
 * release goes on at resume.  Async-signal-safe; 0 or -errno. */
int hx_spin_begin(uint8_t *addr, uint64_t resume, const struct hx_spin_msg *m);
/* Compares two SAMPLE payloads (breakpoint vs spin); 0 if equal, else 1 and
 * what differs in msg. */
int hx_spin_diff(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, char *msg, size_t ml);

#endif
