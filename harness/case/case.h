/* Case files (DESIGN "Case file"): parsed strictly, every error names file:line. */
#ifndef HX_CASE_H
#define HX_CASE_H

#include <stddef.h>
#include <stdbool.h>
#include "juerr.h"
#include "trampolines/tramp.h"

#define HX_MAX_OPS 256
#define HX_MAX_EXPECT 16
#define HX_MAX_EXC 8
#define HX_MAX_ITEMS 64
#define HX_MAX_DEPTH 8
#define HX_MAX_COLS 16           /* columns of the run layer's table (hx_columns) */
#define HX_MAX_PROFILES 8        /* perf profiles (enum pv_profile) */

/* The generated function an "at" item names (a sample point's function
 * compiled once at load: the judge compares numbers, never names). */
#define HX_FN_ANY (-1)           /* a bare offset: any generated function */
#define HX_FN_CALLEE (-2)        /* "callee": the C target (at = in-callee) */
#define HX_FN_NONE (-3)          /* a name that is no generated function */
#define HX_FN_LEAF HX_MAX_DEPTH  /* "leaf+0xN"; 0..HX_MAX_DEPTH-1: tramp, tramp2, .. */

/* The builds of the C around a trampoline a case selects ([sample] host); what
 * each is: harness/capture/host.h. */
enum hx_host_kind { HX_HOST_FP, HX_HOST_NOFP, HX_HOST_NOFP_LEAF, HX_HOST_N };
/* kind, or -EINVAL when name is none of hx_host_names */
int hx_host_parse(const char *name);
extern const char hx_host_names[];

struct hx_where {            /* one item of an "at" list */
	int offset;              /* the offset in the function (-1 for callee) */
	int gen;                 /* "@g2": only in that generation of the code; 0: in every one */
	int fn;                  /* HX_FN_ANY, HX_FN_CALLEE, HX_FN_LEAF or a trampoline's index */
	char where[32];          /* as written, for messages: "callee", "tramp2+0x3" ("": bare offset) */
	bool inner;              /* inside a range "A-B": need not start an instruction */
};

struct hx_exc {
	char verdict[32];
	struct hx_where items[HX_MAX_ITEMS];
	int nitems;
};

struct hx_expect {
	char unwinder[48];       /* "libdw", "libdw@v6.1", "libunwind@65528", "libdw@v6.1@8192" */
	char uw[24];             /* the unwinder part of the key */
	int profile;             /* enum pv_profile of the key, -1: any */
	int stack_size;          /* dump size of the key, 0: any */
	int min_version;         /* "@1.8+": holds from that version of the unwinder's library on
				    (major * 1000 + minor), 0: any */
	bool by_perf;            /* "@perf7.0+": the version is the perf that runs (hx_perf_probe):
				    what the run emulates of perf's memory follows it */
	char base[48];           /* the key without its version part */
	bool optional;           /* "?libdw = ...": may name an unwinder, profile or size that does not run */
	char verdict[32];        /* default for every sample: "ok", "ok fallback", "consistent" */
	struct hx_exc exc[HX_MAX_EXC];
	int nexc;
	int line;
};

/* Generations of the code (docs/case-format.md "Generations"): [code] is
 * the first; [code 2].. [code HX_MAX_GENS] run after it, in order, in the
 * same process, at the first's address (or where a move puts it). */
#define HX_MAX_GENS 4
#define HX_GEN_MAX_OPS 32
enum hx_gen_how {
	HX_GEN_RELOAD = 1,       /* written over, then a new UNWINDING_INFO + CODE_LOAD */
	HX_GEN_PATCH,            /* bytes rewritten in place, no record: perf keeps the last load's */
	HX_GEN_LATE,             /* written over; its records come after its samples */
	HX_GEN_MOVE,             /* the code as it is, copied to `to` with a JIT_CODE_MOVE */
};
struct hx_gen {              /* generation 2.. (index 0 is generation 2) */
	int how;                 /* enum hx_gen_how */
	int line;                /* of its [code N] header */
	int how_line, to_line;
	long long to;            /* HX_GEN_MOVE: bytes from the code's address before the move */
	bool every_insn, in_callee;   /* its `at` (the [sample] at unless given) */
	bool have_at;
	struct tr_op ops[HX_GEN_MAX_OPS];   /* none for a move */
	size_t nops;
};

struct hx_case {
	char path[1024];
	char name[64];
	char arch[16];
	char about[1024];
	struct tr_op ops[HX_MAX_OPS];
	struct hx_gen gens[HX_MAX_GENS - 1];   /* not zeroed (case_clear): ngens counts them */
	size_t nops;
	int ngens;               /* generations after the first (0: the code loads once) */
	/* [leaf]: a generated leaf the trampoline's call_target calls instead of
	 * the C target; it returns to the trampoline (depth 1, every-insn only) */
	struct tr_op leaf_ops[HX_MAX_OPS];
	size_t nleaf;
	bool has_leaf;
	struct tr_unwind_opts unw;
	bool every_insn, in_callee;
	int depth;
	bool unwind_after_load;  /* [unwind] order = after-load: UNWINDING_INFO follows its CODE_LOAD */
	int host;                /* [sample] host: enum hx_host_kind (the builds: harness/capture/host.h) */
	int stride;              /* [sample] stride: bytes between trampolines (0: no overlap) */
	int profiles[3];         /* [sample] profiles: perf generations to replay under (enum pv_profile) */
	int nprofiles;
	int stack_sizes[4];      /* DWARF dump sizes to replay with ([sample] stack_size) */
	int nstack_sizes;
	struct hx_expect expect[HX_MAX_EXPECT];
	int nexpect;
	/* [expect] compiled at load (caseset.c): per column of the run layer's
	 * table and perf profile, the expectations that may apply, most specific
	 * first (profile and size, profile, size, none; then the highest library
	 * version); a sample's lookup takes the first whose size and version fit */
	unsigned char xtab[HX_MAX_COLS][HX_MAX_PROFILES][HX_MAX_EXPECT];
	unsigned char nxtab[HX_MAX_COLS][HX_MAX_PROFILES];
	char *text;              /* the file's bytes, NUL-terminated (owned) */
	size_t text_len;
};

/* Parse a case from text (path is used in messages). 0, or a negative errno
 * with "path:line: message" in err (hx_case_parse: in err's buffer, for tests
 * and fuzz; the rest of the harness calls hx_case_parse_ex). */
int hx_case_parse(struct hx_case *c, const char *path, const char *text, size_t len,
		  char *err, size_t errlen);
int hx_case_load(struct hx_case *c, const char *path, struct ju_err *err);
/* HX_CASE_NO_EXPECT: a missing or empty [expect] is accepted (run --observe) */
#define HX_CASE_NO_EXPECT 1u
int hx_case_parse_ex(struct hx_case *c, const char *path, const char *text, size_t len,
		     unsigned flags, struct ju_err *err);
int hx_case_load_ex(struct hx_case *c, const char *path, unsigned flags, struct ju_err *err);
/* Zero c as the parser starts it (its big op and expect arrays are left). */
void hx_case_clear(struct hx_case *c);
/* Two cases of one run may not share a name (their samples files would
 * overwrite each other). 0, or -EEXIST with both files named in err. */
int hx_case_unique(const struct hx_case *cases, int n, struct ju_err *err);
void hx_case_free(struct hx_case *c);

/* "1.8.1" -> 1008 (major * 1000 + minor), -EINVAL if it is no version */
int hx_case_version_code(const char *v);

/* One [expect] line ("libdw = ok; truncated at 0xb") into c's expectations,
 * read as the case parser reads [expect] (c->path and line name it in
 * messages); 0, or -EINVAL with "path:line: message" in err.  hx_case_compile
 * after the last. */
int hx_case_expect_line(struct hx_case *c, const char *text, int line, struct ju_err *err);
/* Compile c's [expect] into its table (hx_case_parse does; after a change of
 * c->expect call it again).  0, or a negative errno with "path:line: message" in err. */
int hx_case_compile(struct hx_case *c, struct ju_err *err);
/* A sample point's function from its printed name ("tramp", "tramp2",
 * "leaf"; "callee" for the C target): HX_FN_*, or HX_FN_NONE. */
int hx_case_fn_id(const char *name);
/* The expectation for column col (its index in hx_columns) under profile
 * (enum pv_profile) and a dump size: the most specific of
 * "name@profile@size", "name@profile", "name@size", "name" the unwinder's
 * library version reaches; NULL if the case has none. */
const struct hx_expect *hx_case_find(const struct hx_case *c, int col, int profile, int stack_size);
/* Its verdict at one sample point (fn: HX_FN_*; offset: -1 for callee), in
 * generation gen of the code (1: the first; items without "@gN" apply to all). */
const char *hx_case_verdict_at(const struct hx_expect *x, int fn, int offset);
const char *hx_case_verdict_gen(const struct hx_expect *x, int fn, int offset, int gen);
/* The ops of generation gen (1: [code]); a move's are its previous ones. */
const struct tr_op *hx_case_gen_ops(const struct hx_case *c, int gen, size_t *nops);

/* The same by names, for tests and tools: unwinder, profile name (NULL:
 * current), where as printed ("tramp2+0x3", "callee"). */
const char *hx_case_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			   int stack_size, const char *where, int offset);
bool hx_case_has_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			int stack_size);

/* Collect *.case files under each path (file or directory), sorted. */
int hx_case_glob(const char *const *paths, int npaths, char ***out, int *n,
		 struct ju_err *err);

#endif
