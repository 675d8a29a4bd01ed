/* The tracer's state shared by trace.c (the ptrace loop) and tracejd.c (the
 * jitdump, the loads and their breakpoints). */
#ifndef HX_TRACE_INT_H
#define HX_TRACE_INT_H

#include "harness/trace/trace.h"

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
	struct tr_thread { pid_t tid; bool started; } *tids;
	size_t ntids, captids;
	bool execd;             /* the exec of CMD itself was seen */
};

/* tracejd.c */
int tr_jd_poll(struct tr_state *t);                  /* find / read more; 0 or -errno */
/* the boundary at addr of an open load, planted or not */
struct hx_trace_bp *tr_bp_find(struct tr_state *t, uint64_t addr, struct hx_trace_load **l);
int tr_bp_plant(struct tr_state *t, struct hx_trace_bp *b);
int tr_bp_remove(struct tr_state *t, struct hx_trace_bp *b);
void tr_bp_remove_all(struct tr_state *t);
int tr_mem_read(struct tr_state *t, uint64_t addr, void *buf, size_t n);

#endif
