/* Private to the replay of real recordings (realreplay.c, its perf column
 * realperf.c and its lint pairing replaylint.c): the replay's state. */
#ifndef HX_REALREPLAY_INT_H
#define HX_REALREPLAY_INT_H

#include "harness/replay/realreplay.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/maptree.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"
#include "unwinders/view.h"
#include "harness/run/session.h"

#include <stdbool.h>
#include <stdint.h>

#define RR_MAX_DUMPS HX_RR_MAX_DUMPS
#define RR_MAX_UW 8
#define RR_NCOL (RR_MAX_UW + 2)      /* the unwinders, kernel-fp, perf */
#define RR_KEY_LOADS 4               /* loads of one key lint findings are looked up in */

struct rr_sample { uint64_t off, time; uint32_t pid, tid; };
/* an exec (PERF_RECORD_COMM with PERF_RECORD_MISC_COMM_EXEC): perf flushes the
 * process's libunwind cache there (unwind__flush_access) */
struct rr_exec { uint64_t off, time; uint32_t pid; };

struct rr_key {                 /* one JIT symbol + pc offset */
	const char *name;
	uint64_t off;
	uint64_t samples;
	uint64_t out[RR_NCOL][HX_OUT_N];       /* by enum hx_outcome (session.h) */
	int div;                      /* first divergent frame, -1: all agree */
	char div_desc[400];
	char cfa[200];
	char why[RR_MAX_UW][UW_STOP_NAME_LEN + UW_WHY_LEN];   /* each unwinder's stop at the first sample, whole */
	uint64_t earlier;             /* samples a chain of which took an earlier load's rules (UW_F_EARLIER_RULES) */
	char earlier_why[32 + UW_WHY_LEN];   /* the first of them: column, frame, which load */
	bool pmap;                    /* a perf map symbol (no jitdump load, no unwinding info) */
	size_t dump;                  /* the dump of its loads */
	uint64_t load_off[RR_KEY_LOADS];   /* CODE_LOAD file offsets seen under this key */
	unsigned nloads;
};

struct rr_pmap_sym { uint64_t start, end; char *name; };

struct rr_pmap {                /* /tmp/perf-<pid>.map as perf reads it */
	uint32_t pid;
	char *path;
	struct rr_pmap_sym *syms;     /* sorted by start */
	size_t n;
};

struct rr_view {
	struct mt_snap snap;          /* the tree it was built from */
	struct uw_map *maps;
	size_t nmaps;
	struct jd_file jd;            /* a prefix of a dump's loads (borrowed records) */
	struct hx_sess sess;          /* perf's two views, the unwinders' states */
	bool built;
	uint32_t pid;
	uint64_t time;                /* the time it stands at (UINT64_MAX: the recording's end) */
};

/* Where a frame's address lies in JIT code: a jitdump load (in perf's
 * view) or a perf map symbol over an anonymous mapping. */
struct rr_jit {
	const char *name;
	uint64_t start;               /* the code's first address */
	bool named;                   /* perf gives it a symbol */
	const struct jd_load *load;   /* NULL for a perf map symbol */
};

/* lowest_of's memory: a path's lowest map start and base in a snapshot state */
#define RR_LOW_CACHE 32
struct rr_low {
	const struct mt_snap *snap;
	size_t applied, n;
	uint32_t pid;
	const char *path;             /* borrowed: the snapshot's map's */
	uint64_t start, base;
};

struct hx_rp;                   /* realperf.c */
struct rr_chg;                  /* realreplay_exact.c */
#define RR_CHG_PROCS 8
struct hx_rl;                   /* replaylint.c */

struct rr {
	const char *path, *symfs, *json;
	enum pv_profile prof;
	int top;
	struct pd_file pf;
	const struct uw_arch *arch;
	const struct uw_unwinder *uws[RR_MAX_UW];
	size_t nu;
	char *dump_path[RR_MAX_DUMPS], *dump_dir[RR_MAX_DUMPS], *recorded[RR_MAX_DUMPS];
	struct jd_file jd[RR_MAX_DUMPS];
	size_t ndumps;
	char *refused[RR_MAX_DUMPS];  /* dumps the recording names whose header perf refuses */
	size_t nrefused;
	struct rr_pmap pmaps[RR_MAX_DUMPS];
	size_t npmaps;
	struct mt_tree mt;            /* file maps and JIT loads: what perf resolves against */
	struct mt_tree mtf;           /* file maps only: pv_build and uw_view cut them with the loads */
	struct mt_snap fsnap;
	uint8_t *is_jit;              /* by maptree seq */
	/* files mapped at more than one base (start - pgoff) in the recording (a
	 * process that execs maps its libraries again): sorted, borrowed paths */
	const char **rebased;
	size_t nrebased;
	struct rr_low low[RR_LOW_CACHE];
	size_t low_next;
	size_t is_jit_cap;
	struct rr_sample *smp;
	size_t nsmp, csmp;
	struct rr_exec *exe;
	size_t nexe, cexe;
	struct rr_key *keys;
	size_t nkeys, ckeys;
	uint64_t njit, nunder, nstale, ninexact, max_views, nviews, nviews_dump, ndiverge, nnoregs, ninjected;
	uint64_t nearlier;            /* JIT samples with an earlier load's rules in some chain */
	/* samples whose pc sits in anonymous executable memory no load or perf
	 * map names (nanon), of a process with no dump and no perf map
	 * (nanon_bare: JIT code perf cannot see; the first of them kept) */
	uint64_t nanon, nanon_bare;
	uint32_t anon_pid;
	uint64_t anon_pc, anon_start, anon_end;
	bool clock_ok;
	uint64_t stack_size;          /* the attr's sample_stack_user */
	uint64_t released;            /* file pages before this offset dropped (replay_one) */
	bool lu_per_sample;           /* the perf column's libunwind path keeps nothing across samples (pv_memory_of) */
	bool dwfl_per_sample;         /* the perf column's perf is older than 7: its libdw path
				       * makes a Dwfl per sample (else one per process) */
	struct hx_rp *perf;           /* the real perf column (--perf), NULL without */
	struct hx_rl *lint;           /* replay --lint, NULL without */
	struct hx_uw_res *ures;       /* the session's chains of one sample (RR_MAX_UW) */
	char pvdir[64];               /* the views' jitted .so files (view_dir) */
	bool pvdir_failed;
	/* the recording's vDSO as perf finds it: HEADER_BUILD_ID's [vdso] entry in
	 * the build-id cache ($PERF_BUILDID_DIR, else ~/.debug); "" none */
	char vdso_bid[2 * 20 + 1];    /* its build-id in hex ("" none recorded) */
	char vdso[4200];              /* the cached file, if readable; or this process's own copy */
	bool vdso_own;                /* vdso is this process's vDSO (no build-id recorded), removed at the end */
	struct rr_chg *chg;           /* realreplay_exact.c: each process's changes (RR_CHG_PROCS) */
	size_t chg_next;
	bool index_reused;            /* a dump loads one code_index twice: a later load changes an earlier map's bytes */
	char err[1024];
};

/* realreplay_read.c: the perf.data's events, the dumps and the perf maps
 * into r (r->path open); 0, or -1 with r->err. */
int hx_rr_read_events(struct rr *r, const char *const *dumps, int ndumps);
/* is path one of r->rebased? */
bool hx_rr_rebased(const struct rr *r, const char *path);
/* p under --symfs (a copy to free), NULL when out of memory */
char *hx_rr_with_symfs(const struct rr *r, const char *p);
/* the perf map symbol of pid holding a, or NULL */
const struct rr_pmap_sym *hx_rr_pmap_find(const struct rr *r, uint32_t pid, uint64_t a);
/* drop the recording's pages between file offsets a and b (read once) */
void hx_rr_release(const struct rr *r, uint64_t a, uint64_t b);
/* realreplay_report.c: the keys reported (text, --json, --stats); 2 the
 * JSON cannot be written, 1 the unwinders diverged, else 0. */
struct timespec;
int hx_rr_report(struct rr *r, bool stats, const struct timespec *t0, struct hx_cmd_outcome *out);
/* column u's name: an unwinder's, kernel-fp or perf */
const char *hx_rr_col_name(const struct rr *r, size_t u);
/* The JIT code at a (a return address minus one for callers), if any. */
bool hx_rr_jit_at(const struct rr *r, const struct rr_view *v, uint64_t a, struct rr_jit *j);
/* The outcome of a chain from a JIT pc (hx_sess_outcome with the perf maps). */
enum hx_outcome hx_rr_classify(const struct rr *r, const struct rr_view *v, const struct uw_result *c);
/* The column name of the perf column's emulation ("libunwind", "libdw"), its index, or -1. */
int hx_rr_column(const struct rr *r, const char *name);
/* why samples sat in JIT code perf cannot see (r->nanon_bare): the likely
 * cause, from what the recording holds; "" when none did */
void hx_rr_anon_why(const struct rr *r, char *b, size_t n);
/* Does a view of pid's maps at t0 answer the sample as one at t1 would (none
 * of its words in a range mapped in between, no file mapped in between)?
 * false when it cannot tell (out of memory). */
bool hx_rr_same_over(struct rr *r, uint32_t pid, uint64_t t0, uint64_t t1, const struct uw_sample *s);
void hx_rr_exact_free(struct rr *r);
/* "anonymous": perf keeps no file for such a mapping */
bool hx_rr_anon_path(const char *p);

#endif
