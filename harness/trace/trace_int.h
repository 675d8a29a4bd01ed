/* The tracer's state shared by trace.c (the ptrace loop) and tracejd.c (the
 * jitdump, the loads and their breakpoints). */
#ifndef HX_TRACE_INT_H
#define HX_TRACE_INT_H

#include "harness/trace/trace.h"

/* One live activation of a JIT function (its entry breakpoint pushed it): the
 * return address and the SP at entry (pointing at it on x86_64), and the
 * native chain from that return address (libdw over all of memory). */
struct tr_act {
	uint64_t ra, sp;
	size_t load;
	uint64_t chain[HX_TRACE_MAX_TRUTH];
	uint64_t chain_sp[HX_TRACE_MAX_TRUTH];  /* SP once chain[f]'s frame is returned to (0: not known) */
	int nchain;
};

struct tr_thread {
	pid_t tid;
	bool started;
	struct tr_act *acts;    /* the shadow stack, outermost first */
	size_t nacts, capacts;
};

/* A breakpoint kept across hits: a load's entry (sticky for the trace) or a
 * live activation's return address (refs: activations returning there). */
struct tr_sticky {
	uint64_t addr;
	uint8_t orig;
	unsigned refs;
	bool entry;
	bool ra_ok;             /* checked: it follows a call */
};

struct tr_dw;                   /* traceact.c: the native unwinder's state */

/* tr_bp_find's answers by address (a JIT of thousands of loads traps at the
 * same entries and return addresses over and over): valid while gen is the
 * state's lgen + 1 (a load opened or closed since makes it stale) */
#define TR_BPC_SIZE 4096
struct tr_bpc {
	uint64_t addr, gen;
	int32_t load, bp;       /* load -1: no boundary there */
};

struct tr_state {
	const struct hx_trace_cfg *cfg;
	struct hx_trace_result *res;
	const struct hx_trace_arch *arch;
	pid_t pid;
	int memfd;              /* /proc/PID/mem */
	int jdfd;               /* the jitdump, -1 until found */
	uint8_t *jd;            /* its bytes read so far */
	size_t jdlen, jdcap;
	uint64_t jdoff;         /* where the next record starts; 0: header not yet read */
	bool jd_bad;            /* the header is not a jitdump's */
	struct tr_thread *tids;
	size_t ntids, captids;
	bool execd;             /* the exec of CMD itself was seen */
	bool attached;          /* --pid: seized, to be detached (never killed) at the end */
	struct tr_sticky *sticky;
	size_t nsticky, capsticky;
	uint32_t *skh;          /* sticky's index by address: open addressing, index + 1 (0: empty) */
	size_t skcap;           /* its slots, a power of two at least twice nsticky */
	uint64_t lgen;          /* bumped when a load opens or closes */
	struct tr_bpc *bpc;     /* TR_BPC_SIZE entries, or NULL (then every lookup walks the loads) */
	struct tr_dw *dw;
	size_t cs;              /* capstone's handle for the return-address check (0: not open) */
};

/* tracejd.c */
int tr_jd_poll(struct tr_state *t);                  /* find / read more; 0 or -errno */
/* the boundary at addr of an open load, planted or not */
struct hx_trace_bp *tr_bp_find(struct tr_state *t, uint64_t addr, struct hx_trace_load **l);
int tr_bp_plant(struct tr_state *t, struct hx_trace_bp *b);
int tr_bp_remove(struct tr_state *t, struct hx_trace_bp *b);
void tr_bp_remove_all(struct tr_state *t);
int tr_mem_read(struct tr_state *t, uint64_t addr, void *buf, size_t n);
int tr_mem_write(struct tr_state *t, uint64_t addr, const void *buf, size_t n);

/* traceact.c: truth by execution */
struct tr_sticky *tr_sticky_find(struct tr_state *t, uint64_t addr);
/* a load's entry breakpoint (kept for the whole trace); 0 or -errno */
int tr_entry_add(struct tr_state *t, uint64_t addr);
/* the byte at addr as it should be now: the breakpoint if any wants it */
int tr_bp_sync(struct tr_state *t, uint64_t addr);
/* does a breakpoint still want addr (one to step over and put back)? */
bool tr_bp_wanted(struct tr_state *t, uint64_t addr);
/* a trap of tid at addr with registers s: pop the activations SP left,
 * push one at a load's entry.  0 or -errno */
int tr_act_on_trap(struct tr_state *t, pid_t tid, uint64_t addr, const struct hx_trace_sample *s);
/* s's truth from tid's shadow stack */
void tr_act_truth(struct tr_state *t, pid_t tid, struct hx_trace_sample *s);
void tr_act_thread_gone(struct tr_state *t, struct tr_thread *th);
void tr_act_free(struct tr_state *t);
/* the load (index) that holds addr, -1 if none */
long tr_load_at(const struct tr_state *t, uint64_t addr);

#endif
