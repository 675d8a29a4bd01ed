/* The pipeline of `jitunwind run` and `record`: every case loaded and checked
 * first (a malformed one stops everything), this arch's cases captured in one
 * batch (other arches a visible skip), the samples replayed case by case into
 * results.  The CLI parses the options before and writes the reports after
 * (harness/cli/runcmd.c); `list` loads through it too. */
#ifndef HX_RUNCASES_H
#define HX_RUNCASES_H

#include <stdbool.h>
#include <stddef.h>
#include "juerr.h"
#include "harness/case/case.h"
#include "harness/capture/capture.h"
#include "harness/capture/samples.h"
#include "harness/run/runner.h"

struct hx_runset {
	/* the caller's: set before hx_runset_load */
	const struct hx_opts *o;            /* observe: the cases need no [expect] */
	bool record;                        /* record: a child per case, into out */
	const char *out;                    /* record: the samples file (-o) */
	/* a progress line (NULL: none): case i of n, its name, seconds since t0;
	 * i == n == 0 and name NULL clears it */
	void (*progress)(size_t i, size_t n, const char *name, double elapsed);
	bool progress_tty;                  /* the capture's progress too (stderr is a tty) */
	/* filled here */
	double t0;                          /* CLOCK_MONOTONIC seconds at the load */
	struct hx_case *cases;
	char **paths;
	int n;
	char dir[4096];                     /* where the dumps go (--jitdump-dir, else private) */
	bool private_dir;
	struct hx_case_res *res;            /* n results, in case order */
	struct hx_batch_case *batch;        /* the cases of this host's arch, in order */
	size_t nb;
	struct hx_samples s;                /* run: what the batch captured */
	size_t shown_k;                     /* the case the progress line shows, + 1 (0: none yet) */
};

/* The host's arch name ("unknown" when this build has none). */
const char *hx_host_arch(void);
/* Seconds on CLOCK_MONOTONIC. */
double hx_now(void);
/* The default cases: cases/<arch> here, else the installed ones. */
void hx_default_cases(char *buf, size_t n);

/* Load every case of paths (files, directories, globs; none: the default
 * cases), checked whole, names unique.  0 (n may be 0), or -errno with err. */
int hx_runset_load(struct hx_runset *r, const char *const *paths, int npaths, struct ju_err *err);
/* The dump directory (o->jitdump_dir, else a private one under /tmp). */
int hx_runset_dir(struct hx_runset *r, struct ju_err *err);
/* Results for every case; this arch's cases into the batch, the others
 * skipped with the reason; then the batch captured (run: read back; record:
 * into out).  *per_case: the capture's seconds per captured case. */
int hx_runset_capture(struct hx_runset *r, double *per_case, struct ju_err *err);
/* run: each case's samples replayed into its result (a case whose child
 * never started it says so); its seconds are its replay plus per_case. */
int hx_runset_replay(struct hx_runset *r, double per_case, struct ju_err *err);
/* The private dump directory removed (a --jitdump-dir is kept). */
void hx_runset_remove_dir(struct hx_runset *r);
void hx_runset_free(struct hx_runset *r);

#endif
