/* fuzz-cfi's state, shared by its run (fuzzcfi.c) and its classification,
 * minimizer and written cases (fuzzcfi_min.c). */
#ifndef HX_FUZZCFI_INT_H
#define HX_FUZZCFI_INT_H

#include "harness/fuzz/fuzzcfi.h"
#include "harness/run/runner.h"
#include "juerr.h"

#define FZ_MAX_SIG 8
#define FZ_SIG_LEN 64
#define FZ_TEXT_MAX (48 << 10)
#define FZ_MAX_SIGS_RUN 256    /* distinct signatures one run tracks */
#define FZ_MAX_TASKS 1024      /* minimizations one run queues */
#define FZ_CHUNK 256            /* generated cases one capture child takes (batch capture) */
#define FZ_BATCH_CHUNKS 16      /* chunks per batch: the workers live for one batch */
#define FZ_EVAL_SHARE 0.6      /* of --time: evaluating; the rest: minimizing what was found */

struct fz_scratch;
struct fz_slot;

struct fz_ctx {
	struct fz_opts o;
	const struct tr_arch *arch;
	char dir[256];             /* this process's scratch directory (capture files) */
	struct hx_opts fuzz_uw;    /* the arch's unwinders, every machine's */
	char fuzz_names[256], fuzz_copy[256];   /* the list, and the copy fuzz_uw's names point into */
	struct hx_opts final_uw;   /* what `jitunwind run` selects here (the perf column where perf works) */
	char final_names[256], final_copy[256];
	double t0, deadline;
	bool plant;
	uint64_t batch0;           /* the batch being evaluated starts at this index */
	volatile size_t *next_chunk; /* shared with the workers: the batch's next chunk to take */
	const struct task *tasks;  /* the minimizations */
	size_t ntasks;
	double task_deadline;      /* a worker's share of the time for its current task (0: none) */
	struct fz_scratch *scr;    /* the run's big buffers */
	struct fz_slot *slots;     /* a worker's parsed cases, kept from one chunk to the next (eval_chunk) */
};

struct task {
	uint64_t index;
	char sig[64];
};

/* What one case's run says. */
struct fz_class {
	char sig[FZ_MAX_SIG][FZ_SIG_LEN];
	int nsig;
	bool any_inconsistent;
	char problem[200];
};

struct min_result {
	uint32_t runs, status;            /* status: 0 written, 1 not reproduced, 2 unstable, 3 failed */
	uint32_t ops0, ops1, insns0, insns1;
	char note[256];
};


/* Where an evaluation's time goes, in seconds (docs/measurements.md "fuzz-cfi: rate") */
struct fz_times {
	double gen;                /* drawing the case and writing its text */
	double parse;              /* the text through the case parser */
	double capture;            /* its share of its batch's capture (wall of the worker) */
	double capture_cpu;        /* its share of the capture child's CPU */
	double classify;
	struct hx_replay_times rp; /* the replay, by phase and unwinder */
};

struct eval_rec {
	uint64_t index, features;
	struct fz_times t;
	uint32_t nsamples, nsig, flags, pad;
	char aug[8];
	uint8_t fde_enc, pad2[7];
	char sig[FZ_MAX_SIG][FZ_SIG_LEN];
	char problem[200];
};
#define EF_INCONSISTENT 1u    /* the emitted CFI differs from the truth at some sample */
#define EF_ERROR 2u           /* the case did not build or run */

struct min_rec {
	uint64_t index;
	uint32_t task, pad;
	char sig[FZ_SIG_LEN];
	char name[32];
	struct min_result mr;
	uint32_t textlen;
};

/* The run's big buffers, allocated once per run (run_here; each worker
 * has its own copy after the fork) instead of static ones. */
struct fz_scratch {
	char text[FZ_TEXT_MAX];                  /* the case text being run (fz_text_buf) */
	struct hx_fz_gen merge, ops, unw, tape, insns;   /* each minimizer step's candidate */
	struct hx_fz_prog insns_prog, min_prog;
	char expect[16 << 10], about[1000], wheres[400], name[32];   /* a written case (finalize, --print) */
	struct hx_fz_gen eval_gen, min_gen, print_gen;
	struct eval_rec recs[FZ_CHUNK * FZ_BATCH_CHUNKS];   /* a batch's evaluations, in index order */
	char names[4096][32];                    /* the cases written so far (duplicates are not) */
	size_t nnames;
};

double fz_now(void);
bool fz_past_deadline(const struct fz_ctx *x);
void fz_clean_dir(const char *dir);
int fz_run_text(struct fz_ctx *x, const char *text, const struct hx_opts *o, struct hx_case_res *res,
		struct ju_err *err);
void fz_classify(const struct fz_ctx *x, const struct hx_case_res *r, struct fz_class *k);
char *fz_text_buf(struct fz_ctx *x);
void fz_minimize(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, struct min_result *mr);
int fz_observed_expect(const struct fz_ctx *x, const struct hx_case_res *r, int depth, char *buf, size_t len);
void fz_lib_versions(char *buf, size_t len);
void fz_case_name(const char *text, char *name, size_t len);
int fz_finalize(struct fz_ctx *x, struct hx_fz_gen *g, const char *sig, struct min_result *mr,
		char *text, size_t cap);

#endif
