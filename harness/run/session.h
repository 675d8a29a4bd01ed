/* One replay session: perf's two views of a process (the file maps with
 * the jitdump's loads cut in, and the jitted DSOs perf inject writes, for a
 * profile), the selected unwinders' states, and per sample every selected
 * unwinder's chain, judged into one result.  `run`, `bench`, `fuzz-cfi` and
 * `replay FILE.data` replay through it. */
#ifndef HX_SESSION_H
#define HX_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "harness/case/judge.h"
#include "unwinders/unwind.h"
#include "unwinders/view.h"
#include "unwinders/model/perfview.h"
#include "harness/run/scratch.h"

#define HX_SESS_MAX_UW 8
#define HX_SYM_LEN 40
#define HX_SESS_MAX_TRUTH 64

struct hx_group;   /* samples.h */

/* Seconds (CLOCK_MONOTONIC: cheap enough per unwind) a replay spends per
 * phase, added up over calls: what fuzz-cfi's summary reports. */
struct hx_replay_times {
	double load;                        /* the case parsed again, jitdump, maps, process view */
	double pv;                          /* perf's view: jitted ELF files written and read back */
	double oracle;                      /* the oracle over the whole stack and each dump (`emitted`) */
	double open[HX_SESS_MAX_UW];        /* each selected unwinder's state, opened and closed */
	double unwind[HX_SESS_MAX_UW];      /* each selected unwinder's unwinds */
	double total;                       /* the whole call (the rest: judging, symbols, expectations) */
};

struct hx_sess_cfg {
	const struct uw_arch *arch;
	const struct uw_map *maps;          /* the process's file maps (copied by the views) */
	size_t nmaps;
	const struct jd_file *jd;           /* the jitdump's loads (NULL: none) */
	enum pv_profile profile;            /* perf generation whose view is built */
	bool no_pv;                         /* no perf view (bench's FP-only sessions: never) */
	const char *jitted_dir;             /* where the jitted .so files go (NULL: private under /tmp) */
	/* where perf takes the jitdump to be: perf writes jitted-<pid>-<n>.so
	 * next to it, and its libdw path (>= 6.8) uses them only under
	 * /tmp/jitted- (a case's dump is taken to be where CPython writes it, /tmp) */
	const char *dump_dir;
	const struct uw_unwinder *uws[HX_SESS_MAX_UW];   /* selected; NULL: not in this build */
	const char *names[HX_SESS_MAX_UW];  /* their report keys (NULL: uws[u]->name) */
	int nuw;
	/* the run layer's columns that replay the capture through real perf */
	const struct hx_group *capture;     /* the samples replayed (NULL: none) */
	const int *dump_sizes;              /* the dump sizes they are replayed at */
	int ndump_sizes;
	struct hx_replay_times *times;      /* NULL, or where the phases' time is added
					     * (s->cfg.times may change between calls) */
	double (*clock)(void);              /* the times' clock in seconds (NULL: CLOCK_MONOTONIC) */
};

struct hx_sess {
	struct hx_sess_cfg cfg;
	struct uw_view view;
	bool have_view;
	struct pv_view pv;
	bool have_pv;
	char pv_err[600];                   /* why there is no perf view ("" when there is one) */
	char pvdir[HX_SCRATCH_PATH];        /* its jitted .so files without cfg.jitted_dir (scratch.h) */
	const struct uw_unwinder *uws[HX_SESS_MAX_UW];   /* NULL: not available (open_err says why) */
	void *state[HX_SESS_MAX_UW];
	char open_err[HX_SESS_MAX_UW][512];
	bool skipped[HX_SESS_MAX_UW];       /* its opener skipped it here (open_err says why): not judged */
	struct uw_result scratch;           /* a reference chain (faithful) */
};

/* The truth a sample is judged against (NULL addr: none, as in a real recording). */
struct hx_sess_truth {
	const uint64_t *addr;               /* return addresses, [0] the pc */
	const uint8_t *fpflag;              /* HX_FP_* per frame (samples.h) */
	int n;
};

/* One unwinder's chain on one sample and how it is judged. */
struct hx_uw_res {
	const char *name;
	const struct uw_unwinder *uw;       /* its policy (NULL: not in this build) */
	struct uw_result r;
	struct hx_judgement j;
	bool has_faithful, faithful;
	bool fallback;
	bool consistent;                    /* oracle: chain == truth */
	bool name_lost;                     /* a JIT frame perf would print as [unknown] */
	int nsym;                           /* symbols of the first nsym frames */
	char sym[HX_SESS_MAX_TRUTH][HX_SYM_LEN]; /* "" where perf prints [unknown] */
	char expected[32];                  /* "": no expectation (the run's [expect]) */
	bool match;
};

/* One sample as the unwinders get it: full = the whole stack (what the
 * kernel reads live), dump = perf's --call-graph dwarf copy. */
struct hx_sess_sample {
	const struct uw_sample *full, *dump;
	struct hx_sess_truth truth;
	bool judge;                         /* judge against the truth and the references */
	int only;                           /* -1: every selected unwinder; else that one only */
};

/* Per sample, when judged: the oracle's chains, the references. */
struct hx_sess_ref {
	struct uw_result oracle_full;       /* over the whole stack: decides `emitted` */
	struct uw_result oracle_dump;       /* over the dump: the DWARF unwinders' reference */
	struct hx_judgement emitted;        /* oracle_full against the truth */
};

/* Build both views and open the selected unwinders' states.  0, or a
 * negative errno with e set (the process view could not be built).  A perf
 * view that cannot be built (pv_err) or an unwinder whose state cannot be
 * opened (open_err, uws[u] NULL) is not a failure of the session. */
int hx_sess_open(struct hx_sess *s, const struct hx_sess_cfg *cfg, struct ju_err *e);
/* Perf's view and the states again under another profile. */
void hx_sess_reprofile(struct hx_sess *s, enum pv_profile p);
void hx_sess_close(struct hx_sess *s);

/* The oracle over the whole stack, judged against the truth: `emitted`
 * (once per sample; hx_sess_sample at each dump size reads it from ref). */
void hx_sess_emitted(struct hx_sess *s, const struct uw_sample *full, const struct hx_sess_truth *t,
		     struct hx_sess_ref *ref);
/* Selected unwinder u on one sample: its own unwind over the stack its
 * policy sees (full: the whole stack, dump: perf's copy); an unwinder not
 * available gives an error chain.  hx_sess_sample's loop runs it for each;
 * bench times it alone. */
void hx_sess_unwind(struct hx_sess *s, int u, const struct uw_sample *full, const struct uw_sample *dump,
		    struct uw_result *r);
/* Every selected unwinder (or in->only) on one sample, in order, into
 * out[0..nuw-1] (name, uw, the chain); judged when in->judge (ref from
 * hx_sess_emitted: verdict against the truth, fallback, faithful against the
 * references, perf's symbols). */
void hx_sess_sample(struct hx_sess *s, const struct hx_sess_sample *in, struct hx_sess_ref *ref,
		    struct hx_uw_res *out);

/* A chain without a truth to judge it by (a real recording): what perf
 * would print from its first JIT frame on.  The first frame past the JIT
 * code decides: in a mapped file, full (fallback if a frame on the way was
 * found without CFI); nowhere perf knows, or a JIT frame perf prints as
 * [unknown], name lost; the chain ends in JIT code (or never reaches it):
 * truncated. */
enum hx_outcome { HX_OUT_FULL, HX_OUT_TRUNC, HX_OUT_FALLBACK, HX_OUT_LOST, HX_OUT_N };
const char *hx_outcome_name(enum hx_outcome o);
/* Is a (a pc, or a return address minus one) JIT code, and does perf name
 * it (named)?  NULL to hx_sess_outcome: the jitted DSOs of perf's view. */
typedef bool (*hx_jit_at_fn)(const void *ctx, uint64_t a, bool *named);
/* The index of the chain's first frame in JIT code, -ENOENT if none. */
int hx_sess_first_jit(const struct hx_sess *s, const struct uw_result *c, hx_jit_at_fn jit_at, const void *ctx);
enum hx_outcome hx_sess_outcome(const struct hx_sess *s, const struct uw_result *c, hx_jit_at_fn jit_at,
				const void *ctx);

/* The run layer's columns: the unwinders of unwinders/registry.c, then
 * those that replay the capture through a real profiler (perfcol.c). */
const struct uw_unwinder *const *hx_columns(size_t *n);
const struct uw_unwinder *hx_column_by_name(const char *name);
/* Comma-separated names (uw_unwinder_list, uw_unwinder_defaults over the columns). */
void hx_column_list(const char *arch, char *buf, size_t len);
void hx_column_defaults(const char *arch, char *buf, size_t len);

/* What a column that replays the capture opens its state with. */
struct hx_col_in {
	const struct uw_view *v;
	const struct hx_group *capture;     /* NULL: none (it says so) */
	const int *dump_sizes;
	int ndump_sizes;
};
/* A column's opener over the capture (perfcol.c), or NULL: a plain
 * unwinder, opened with its own open over the views.  0 opened, -1 failed,
 * 1 skipped for this capture (err says why: a visible skip, not a failure). */
typedef int (*hx_col_open_fn)(const struct hx_col_in *in, void **state, struct ju_err *err);
hx_col_open_fn hx_column_opener(const struct uw_unwinder *uw);

/* where the chain reaches the truth's last frame (its length if never) */
int hx_sess_anchor_len(const struct uw_result *c, const struct hx_sess_truth *t);

#endif
