/* perf-check's state, shared by its run (perfcheck.c) and its report
 * (perfcheck_report.c): options, modes, cases, sample points, disagreements. */
#ifndef HX_PERFCHECK_INT_H
#define HX_PERFCHECK_INT_H

#include "harness/realperf/perfcheck.h"
#include "harness/capture/samples.h"
#include "harness/run/perfrun.h"
#include "harness/case/judge.h"
#include "harness/run/runner.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* perf's --call-graph modes; fp mode's chain is the kernel's walk, which the
 * `fp` unwinder emulates (dwarf mode's emulation is the perf build's engine) */
static const char *const pk_mode_names[] __attribute__((unused)) = { "dwarf", "fp" };
static const char *const pk_fp_emulation __attribute__((unused)) = "fp";

struct pk_point {
	const struct hx_sample_res *sr; /* the replay: where, truth, the emulation's chain */
	uint64_t pc;
	int samples, agree;
	int ok;                         /* samples whose perf chain reached the anchor (verdict ok) */
};

struct pk_dis {                     /* one perf sample that disagrees with the emulation */
	size_t point;
	uint64_t time;
	int frame;                      /* first frame that differs */
	enum hx_verdict perf_v;
	int n;
	uint64_t printed[UW_MAX_FRAMES];
	char why[320];
};

struct pk_case {
	char name[64];
	const char *file;
	uint32_t pid;
	struct hx_case_res res;
	bool have_res;
	struct pk_point *pts;
	size_t npts;
	struct pk_dis *dis;
	size_t ndis, capdis;
	size_t samples, agree, sampled, outside;
	size_t points_agree;            /* points where every perf sample agrees */
	size_t whole;                   /* samples whose whole chain, past the anchor too, agrees */
	int perf_v[6], emu_v[6];
	char problem[512];
};

#define PK_RETRIES 2                /* more records of a case a point of which got no sample */

struct pk_run {                     /* one mode (one attempt of it) */
	enum pk_mode mode;
	int attempt;                    /* 0, then the retries of cases left unsampled */
	const char *const *paths;       /* what the workload records (none: its default) */
	int npaths;
	struct pk_run *retry;           /* the next attempt, whose cases replaced some of these */
	size_t recorded_again;          /* cases recorded again, over all retries */
	size_t retried;                 /* cases taken from retries */
	const char *emu;
	char why[600];                  /* the mode did not run to the end: why */
	char lost[200];                 /* perf record's word on lost events, if any */
	struct hx_samples smp;
	bool have_smp;
	struct hx_ps ps;
	size_t jit_frames, jit_named;   /* with o.names: frames in jitted .so files perf script printed, named */
	struct pk_case *cases;
	size_t ncases;
	size_t points, sampled, samples, agree, points_agree, whole;
	double seconds;
	bool pass;
};

struct pk {
	struct pk_opts o;
	const struct hx_perf_build *perf;
	enum pv_profile profile;
	char dir[64];
	char self[4096];
	struct pk_run runs[PK_NMODES];
	int nruns;
	double seconds;
};

/* the value perf prints for the emulation's frame f: a caller's return
 * address minus one in DWARF mode unless the engine calls it an activation
 * (a signal frame); the kernel's FP chain as it is */
static inline uint64_t printed_of(enum pk_mode m, const struct uw_result *e, int f)
{
	if (f == 0 || m == PK_FP || (e->flags[f] & UW_F_ACTIVATION))
		return e->addr[f];
	return e->addr[f] - 1;
}

/* the text report of one mode, on stdout */
void pk_print_mode(const struct pk *k, const struct pk_run *r);
/* the JSON report of every mode at path: 0 or a negative errno */
int pk_write_json(const struct pk *k, const char *path, bool pass);

#endif
