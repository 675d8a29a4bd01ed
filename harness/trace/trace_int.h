/* The tracer's state shared by trace.c (the ptrace loop) and tracejd.c (the
 * jitdump, the loads and their breakpoints). */
#ifndef HX_TRACE_INT_H
#define HX_TRACE_INT_H

#include "harness/capture/capture.h"
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
	bool late;              /* its chain went through code announced after (no truth) */
};

struct tr_thread {
	pid_t tid;
	bool started;
	bool out_of_sys;        /* its last syscall stop was an exit: no syscall of its own runs now */
	struct tr_act *acts;    /* the shadow stack, outermost first */
	size_t nacts, capacts;
};

/* An address the tracer writes its breakpoint at (tracebp.c, the one owner):
 * the program's bytes kept once, beside the address, and every user counted */
struct tr_site {
	uint64_t addr;
	uint8_t orig[4];        /* the program's bytes, read when the site was made */
	bool in_mem;            /* the tracer's breakpoint is in memory now */
	bool lost;              /* the JIT rewrote it under the breakpoint: never written again */
	bool entry;             /* a load's entry (kept for the trace) */
	bool ra_ok;             /* checked: it follows a call */
	unsigned bounds;        /* planted boundaries of loads here */
	unsigned refs;          /* live activations returning here */
};

struct tr_dw;                   /* traceact.c: the native unwinder's state */
struct tr_hw;

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
	const struct hx_trace_arch *arch;   /* hx_cap_host.trace */
	const uint8_t *bp;      /* the breakpoint planted (arches.def, the host's) */
	size_t bp_len;
	bool step_lift;         /* JU_TRACE_STEP_LIFT=1: every step with the byte lifted (no step_emulate) */
	int cs_arch, cs_mode;   /* capstone's settings for the host (unwinders/uwarch.h) */
	int cs_syntax;          /* CS_OPT_SYNTAX's value (0: its default), as run writes insns */
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
	struct tr_site *sites;
	size_t nsites, capsites;
	uint32_t *skh;          /* sites' index by address: open addressing, index + 1 (0: empty) */
	size_t skcap;           /* its slots, a power of two at least twice nsites */
	uint64_t lgen;          /* bumped when a load opens or closes */
	struct tr_bpc *bpc;     /* TR_BPC_SIZE entries, or NULL (then every lookup walks the loads) */
	struct tr_dw *dw;
	size_t cs;              /* capstone's handle for the return-address check (0: not open) */
	bool bp_off;            /* every breakpoint removed for good (tr_bp_remove_all) */
	/* the maps text is read again only when it may have changed: a syscall
	 * stop (the syscalls change it), a thread possibly inside a syscall, a
	 * single-step (no syscall stop for a syscall stepped over), the size in
	 * /proc/PID/statm (a stack grown by a fault) */
	uint64_t maps_gen, maps_read_gen;
	int statm_fd;
	char statm[96];
	struct tr_hw *hw;       /* tracehw.c: the hardware breakpoints, or NULL */
};

/* trace.c: a sample's slot in the result (zeroed, not counted yet), or NULL */
struct hx_trace_sample *tr_sample_new(struct tr_state *t);
/* the slot's maps read (shared with the sample before while unchanged) and
 * the sample counted; 0 or -ENOMEM (its stack freed) */
int tr_sample_commit(struct tr_state *t, struct hx_trace_sample *s);
/* --max-samples or the maps' bound reached: sampling stopped (said) */
void tr_sample_cap(struct tr_state *t);

/* tracehw.c: --hw-breakpoints */
int tr_hw_begin(struct tr_state *t);                 /* after the start or attach; 0 or -ENOMEM */
int tr_hw_thread_new(struct tr_state *t, pid_t tid);
void tr_hw_thread_gone(struct tr_state *t, pid_t tid);   /* its ring read, its events closed */
void tr_hw_drain(struct tr_state *t);                /* every ring read: before a stop is handled */
void tr_hw_entry(struct tr_state *t, long load);     /* a load's entry trapped */
/* did the hardware take tid's hit at addr with this SP in this stop's read
 * (the same execution as its int3 trap there)? */
bool tr_hw_fresh(struct tr_state *t, pid_t tid, uint64_t addr, uint64_t sp);
/* tid resumes at addr after its int3 trap there: a hit at addr next is the
 * same execution's, dropped */
void tr_hw_resume_at(struct tr_state *t, pid_t tid, uint64_t addr);
void tr_hw_place(struct tr_state *t);                /* after a stop: the slots moved and armed */
void tr_hw_end(struct tr_state *t);                  /* the rings read, every event closed */
void tr_hw_free(struct tr_state *t);

/* tracejd.c */
int tr_jd_poll(struct tr_state *t);                  /* find / read more; 0 or -errno */
int tr_jd_finish(struct tr_state *t);                /* the last read, the whole records kept */
/* the boundary at addr of an open load, planted or not */
struct hx_trace_bp *tr_bp_find(struct tr_state *t, uint64_t addr, struct hx_trace_load **l);

/* tracebp.c: the one owner of the tracer's bytes */
int tr_mem_read(struct tr_state *t, uint64_t addr, void *buf, size_t n);
int tr_mem_write(struct tr_state *t, uint64_t addr, const void *buf, size_t n);
struct tr_site *tr_site_find(struct tr_state *t, uint64_t addr);
/* the site at addr, made if new (its original read now); 0, -EEXIST a
 * breakpoint byte not ours is there, -EIO, -ENOMEM.  *out stays valid until
 * the next tr_site_get */
int tr_site_get(struct tr_state *t, uint64_t addr, struct tr_site **out);
/* the byte as the site's users want it (the live byte checked first) */
int tr_site_sync(struct tr_state *t, struct tr_site *k);
/* the original back for a single-step (tr_site_sync puts the breakpoint back) */
int tr_site_lift(struct tr_state *t, struct tr_site *k);
int tr_bp_sync(struct tr_state *t, uint64_t addr);
/* does a user still want addr's breakpoint (one to step over and put back)? */
bool tr_bp_wanted(struct tr_state *t, uint64_t addr);
int tr_bp_plant(struct tr_state *t, struct hx_trace_bp *b);   /* -EEXIST: not ours there */
int tr_bp_remove(struct tr_state *t, struct hx_trace_bp *b);
/* a load's entry breakpoint (kept for the whole trace); 0 or -errno */
int tr_entry_add(struct tr_state *t, uint64_t addr);
void tr_bp_remove_all(struct tr_state *t);
/* the originals written through memfd (a forked child's memory) wherever the
 * tracer's breakpoint is in memory now; 0 or the first -errno */
int tr_sites_unplant_fd(struct tr_state *t, int memfd);
/* buf (n bytes of memory at addr) with the originals under planted breakpoints */
void tr_site_unplant(struct tr_state *t, uint64_t addr, uint8_t *buf, size_t n);

/* traceact.c: truth by execution */
/* a trap of tid at addr with registers s: pop the activations SP left,
 * push one at a load's entry.  0 or -errno */
int tr_act_on_trap(struct tr_state *t, pid_t tid, uint64_t addr, const struct hx_trace_sample *s);
/* s's truth from tid's shadow stack */
void tr_act_truth(struct tr_state *t, pid_t tid, struct hx_trace_sample *s);
void tr_act_thread_gone(struct tr_state *t, struct tr_thread *th);
void tr_act_free(struct tr_state *t);
/* load li was announced: live activations whose native chain went through
 * its code (unwound there before it was known) lose their truth */
void tr_act_late(struct tr_state *t, size_t li);
/* the load (index) that holds addr, -ENOENT if none */
long tr_load_at(const struct tr_state *t, uint64_t addr);

#endif
