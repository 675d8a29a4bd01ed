/* Case files (DESIGN "Case file"): parsed strictly, every error names file:line. */
#ifndef HX_CASE_H
#define HX_CASE_H

#include <stddef.h>
#include <stdbool.h>
#include "trampolines/tramp.h"

#define HX_MAX_OPS 256
#define HX_MAX_EXPECT 16
#define HX_MAX_EXC 8
#define HX_MAX_ITEMS 64
#define HX_MAX_DEPTH 8

struct hx_where {            /* one item of an "at" list */
	int offset;              /* >= 0: any generated function at this offset */
	char where[32];          /* else an exact where: "callee", "tramp2+0x3" */
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
	char base[48];           /* the key without its version part */
	bool optional;           /* "?libdw = ...": may name an unwinder, profile or size that does not run */
	char verdict[32];        /* default for every sample: "ok", "ok fallback", "consistent" */
	struct hx_exc exc[HX_MAX_EXC];
	int nexc;
	int line;
};

struct hx_case {
	char path[1024];
	char name[64];
	char arch[16];
	char about[1024];
	struct tr_op ops[HX_MAX_OPS];
	size_t nops;
	/* [leaf]: a generated leaf the trampoline's call_target calls instead of
	 * the C target; it returns to the trampoline (depth 1, every-insn only) */
	struct tr_op leaf_ops[HX_MAX_OPS];
	size_t nleaf;
	bool has_leaf;
	struct tr_unwind_opts unw;
	bool every_insn, in_callee;
	int depth;
	bool unwind_after_load;  /* [unwind] order = after-load: UNWINDING_INFO follows its CODE_LOAD */
	int host;                /* [sample] host: enum hx_host_kind (harness/capture/host.h) */
	int stride;              /* [sample] stride: bytes between trampolines (0: no overlap) */
	int profiles[3];         /* [sample] profiles: perf generations to replay under (enum pv_profile) */
	int nprofiles;
	int stack_sizes[4];      /* DWARF dump sizes to replay with ([sample] stack_size) */
	int nstack_sizes;
	struct hx_expect expect[HX_MAX_EXPECT];
	int nexpect;
	char *text;              /* the file's bytes, NUL-terminated (owned) */
	size_t text_len;
};

/* Parse a case from text (path is used in messages). 0, or -1 with
 * "path:line: message" in err. */
int hx_case_parse(struct hx_case *c, const char *path, const char *text, size_t len,
		  char *err, size_t errlen);
int hx_case_load(struct hx_case *c, const char *path, char *err, size_t errlen);
/* HX_CASE_NO_EXPECT: a missing or empty [expect] is accepted (run --observe) */
#define HX_CASE_NO_EXPECT 1u
int hx_case_parse_ex(struct hx_case *c, const char *path, const char *text, size_t len,
		     unsigned flags, char *err, size_t errlen);
int hx_case_load_ex(struct hx_case *c, const char *path, unsigned flags, char *err, size_t errlen);
/* Two cases of one run may not share a name (their samples files would
 * overwrite each other). 0, or -1 with both files named in err. */
int hx_case_unique(const struct hx_case *cases, int n, char *err, size_t errlen);
void hx_case_free(struct hx_case *c);

/* The expectation for one unwinder at one sample under a perf profile and a
 * dump size: the most specific of "name@profile@size", "name@profile",
 * "name@size", "name"; NULL if the case has none. */
/* "1.8.1" -> 1008 (major * 1000 + minor), -1 if it is no version */
int hx_case_version_code(const char *v);
const char *hx_case_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			   int stack_size, const char *where, int offset);
bool hx_case_has_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			int stack_size);

/* Collect *.case files under each path (file or directory), sorted. */
int hx_case_glob(const char *const *paths, int npaths, char ***out, int *n,
		 char *err, size_t errlen);

#endif
