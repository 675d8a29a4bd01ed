/* The harness's own kernel sampler (docs/unwinders.md "Spin points and kernel-fp"):
 * while the capture child spins at a sample point, a perf_event_open
 * cpu-clock event on the child collects samples there. */
#ifndef HX_KSAMPLER_H
#define HX_KSAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "juerr.h"

/* What the sampler spent (make bench): spin points served, time from
 * enabling the event to the last sample or the time limit. */
struct hx_kstats { uint64_t points, ns; };

/* The capture's settings for spin points and the kernel sampler, passed in
 * (struct hx_batch_run's kcfg; NULL there: HX_KCFG_INIT, both off). */
struct hx_kcfg {
	bool spin;             /* spin at every sample point (the child releases itself) */
	int nsamples;          /* kernel samples wanted per spin point; 0: no sampler */
	uint64_t period_ns;    /* cpu-clock sample period */
	int timeout_ms;        /* per spin point: no sample by then is reported */
	int spin_tamper;       /* tests only (spin.c's negative control): 1 changes a
				* register, 2 a stack byte during each spin */
	struct hx_kstats *stats;   /* optional, out: added to by the sampler */
};
#define HX_KCFG_INIT { .period_ns = 100000, .timeout_ms = 500 }

/* Parent side: serve the child's spin points from req_fd until EOF, writing
 * kernel SAMPLE records (or one KSKIP record) to out_fd; stack_user: the
 * user stack dump size asked for (perf's --call-graph dwarf,N).  0, or -errno with
 * err set for a failure of the harness itself (not for a refusal). */
int hx_ksample_serve(pid_t child, uint32_t stack_user, const struct hx_kcfg *cfg, int req_fd, int out_fd,
		     struct ju_err *err);

/* One PERF_RECORD_SAMPLE body of the sampler's event (b, n bytes after its
 * header; off: its position in the ring's stream, for messages), decoded by
 * perfdata's codec under a (the attr the sampler opened) and, when it is
 * the spin point m's (its pc, the child's pid, user registers), written as
 * a kernel SAMPLE payload (samples.h) into out (HX_KS_OUT_MAX bytes), its
 * length in *outlen: 1.  0: another point's sample; -EINVAL with err
 * naming the offset: a record the decoder refuses. */
struct pd_attr;
struct uw_arch;
struct hx_spin_msg;
#define HX_KS_STACK 65528                  /* the most perf_event_open takes */
#define HX_KS_OUT_MAX (HX_KS_STACK + 4096 + 8 * 128)
int hx_ksample_record(const struct pd_attr *a, const struct uw_arch *arch, const uint8_t *b, size_t n,
		      uint64_t off, pid_t child, const struct hx_spin_msg *m,
		      uint8_t *out, size_t *outlen, char *err, size_t errlen);

#endif
