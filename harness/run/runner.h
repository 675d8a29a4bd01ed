/* Runner: capture each case in a forked child, replay its samples through
 * the unwinders, judge against the truth and the case's expectations. */
#ifndef HX_RUNNER_H
#define HX_RUNNER_H

#include <stdio.h>
#include "harness/case/case.h"
#include "harness/capture/capture.h"
#include "harness/case/judge.h"
#include "harness/capture/samples.h"
#include "harness/run/session.h"
#include "unwinders/unwind.h"
#include "unwinders/model/perfview.h"

#define HX_MAX_UW HX_SESS_MAX_UW

struct hx_opts {
	const char *unwinders[HX_MAX_UW];   /* selected report keys, in order */
	int nuw;
	const char *jitdump_dir;            /* NULL: private mkdtemp directory */
	int stack_size;                     /* DWARF dump size; 0: the case's, else 8192 */
	enum pv_profile profile;            /* perf generation whose view is reproduced */
	bool profile_set;                   /* --perf-profile given: overrides the case's profiles */
	const char *perf_dump_dir;          /* where perf takes the jitdump to be (NULL: /tmp) */
	bool observe;                       /* run --observe: cases need no [expect] */
	const char *jitted_dir;             /* where perf's view writes the jitted .so files
					     * (NULL: a private directory under /tmp) */
	struct hx_replay_times *times;      /* NULL, or where hx_replay_group adds its phases' time */
	/* NULL, or the group's case as the caller parsed it (hx_case_parse_ex with
	 * HX_CASE_NO_EXPECT when observe, else 0): used instead of parsing the
	 * group's text again when its text and path are the group's */
	const struct hx_case *parsed;
	struct hx_kcfg kcfg;                /* capture: spin points and the kernel sampler */
};

/* does a column's result meet an [expect] verdict ("ok" needs the verdict and
 * no fallback, "ok fallback" both; "consistent"/"inconsistent" the oracle's) */
bool hx_expect_matches(const char *expected, const struct hx_uw_res *u, bool is_oracle);

struct hx_sample_res {
	char where[48];
	int offset;                         /* -1 in C code */
	char insn[48];
	int stack_size;                     /* DWARF dump size this replay used */
	char profile[16];                   /* perf profile this replay used */
	uint64_t truth[HX_MAX_TRUTH];
	int nt;
	char tsym[HX_MAX_TRUTH][HX_SYM_LEN];/* the truth's symbols as perf names them ("": none) */
	uint64_t pc;                        /* the sampled ip */
	uint32_t src;                       /* index of the group's sample it replays */
	const char *truth_of;               /* NULL: a truth; else the column whose chain it is (trace:
					     * a sample without a truth, judged for agreement with it) */
	char cfa_row[160];                  /* the emitted CFI's row at pc (harness/case/cfarow.c) */
	char true_row[160];                 /* the generator's row there (hx_true_row_text) */
	struct hx_uw_res uw[HX_MAX_UW];
	int nuw;
};

struct hx_case_res {
	char name[64];
	char file[1024];
	char about[1024];
	bool pass;
	bool skipped;
	char profile[16];
	bool has_symbols;
	bool consistent;
	char problem[512];                  /* crash, setup error, missing expectation */
	struct hx_sample_res *samples;
	size_t nsamples;
	double seconds;
};

/* Replay one group of a samples file. 0, or -errno on bad input (err set). */
int hx_replay_group(const struct hx_group *g, uint32_t elf_mach, const struct hx_opts *o,
		    struct hx_case_res *res, char *err, size_t errlen);
void hx_case_res_free(struct hx_case_res *r);

#endif
