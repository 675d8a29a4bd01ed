/* Host builds (issue 14): how the C around a trampoline was compiled.  The
 * function that calls the trampoline, the C target it calls (an
 * interpreter's eval loop) and the C leaf the target calls exist in three
 * builds, chosen per case by [sample] host:
 *   fp        as the rest of the harness (-fno-omit-frame-pointer
 *             -mno-omit-leaf-frame-pointer): hx_call, hx_target (capture.c);
 *   nofp      -fomit-frame-pointer (host_nofp.c, host_stubs_<arch>.S): the
 *             frame-pointer register holds the interpreter's state pointer,
 *             whose two words are a tagged counter and an opcode word, not a
 *             frame record, so a walk that trusts it goes wrong;
 *   nofp-leaf frame pointers kept except in leaves (-momit-leaf-frame-pointer,
 *             host_nofpleaf.c); the sample is taken in the C leaf. */
#ifndef HX_HOST_H
#define HX_HOST_H

#include <stdbool.h>
#include <stdint.h>
#include "harness/case/case.h"   /* enum hx_host_kind, the names a case selects by */


/* The interpreter state the nofp build keeps in rbp/x29: a tagged (odd)
 * counter where a frame record has the caller's frame pointer, an opcode word
 * where it has the return address. */
#define HX_HOST_STATE0 0x2bull
#define HX_HOST_STATE1 0x640053ull

struct hx_ctx;
typedef void hx_call_fn(void *ctx, void *tramp, uint64_t *slot, void *target);

struct hx_host {
	void (*target)(struct hx_ctx *);   /* the C target the trampoline calls */
	hx_call_fn *call;                  /* the function that calls the trampoline */
	const char *call_ret;              /* its return address after the trampoline */
	const char *trap;                  /* the in-callee breakpoint */
	bool leaf;                         /* the in-callee sample is in a C leaf */
	/* who builds a frame record (the FP convention reports their RAs) */
	bool call_fp, target_fp, leaf_fp;
};

const struct hx_host *hx_host_get(int kind);

/* capture.c: the C target's bookkeeping, shared by every host build.
 * hx_host_enter records the target's return address and returns the next
 * level to call (its trampoline and truth slot filled in), or 0. */
int hx_host_enter(struct hx_ctx *ctx, void *ra, void **tramp, uint64_t **slot);
void hx_host_leave(struct hx_ctx *ctx, int k);
/* true when the innermost target is to call its leaf; *loops: how long the
 * leaf spins first (JU_SPIN_MS, about a nanosecond a loop; tools/perf-e2e) */
bool hx_host_in_callee(struct hx_ctx *ctx, uint64_t *loops);

/* the leaf's return address into the target, recorded by the leaf */
extern volatile uint64_t hx_host_leaf_ra;

void hx_host_nofp_target(struct hx_ctx *ctx);
void hx_host_nofp_leaf(uint64_t loops);
void hx_host_nofpleaf_target(struct hx_ctx *ctx);
void hx_host_nofpleaf_leaf(uint64_t loops);
hx_call_fn hx_host_nofp_call;
extern const char hx_host_nofp_call_ret[];
extern const char hx_host_nofp_trap[], hx_host_nofpleaf_trap[];

#endif
