/* Fixtures shared by the libunwind and libdw suites (defined in
 * test_libunwind.c): a real stack captured from the test process itself,
 * and a generated trampoline spliced on top of it as if the innermost C
 * function had called it, with its jitdump written by the project's writer. */
#ifndef UWT_H
#define UWT_H

#include <stdbool.h>
#include <stdint.h>
#include <check.h>
#include "unwinders/view.h"

#define UWT_STACK_MAX (64u << 10)

/* f1 -> f2 -> f3, f3 takes the sample right after a call. */
struct uwt_self {
	struct uw_sample s;
	uint8_t stack[UWT_STACK_MAX];
	uint64_t ra[3];               /* __builtin_return_address(0) in f3, f2, f1 */
	uint64_t ip;                  /* the sampled ip: a return address inside f3 */
	char maps[1 << 18];
	size_t maps_len;
};

void uwt_capture_self(struct uwt_self *c);
/* The host's register facts (samples, emitter and jitdump are the host's). */
const struct uw_arch *uwt_arch(void);

/* perf's view of the test process (maps of the capture, plus a jitdump). */
struct uwt_view {
	struct uw_map *maps;
	size_t nmaps;
	struct jd_file jd;
	bool have_jd;
	char dumpdir[64];             /* a private directory of the dump, removed at the end */
	char dump_path[4096], map_path[4096];   /* or the dump and perf map files to remove */
	struct pv_view pv;
	struct uw_view v;             /* arch, pv; the oracle's regions when with_oracle */
	bool oracle;
};

void uwt_view_self(struct uwt_view *w, const struct uwt_self *c, enum pv_profile prof);
void uwt_view_free(struct uwt_view *w);

/* A trampoline from case ops ("push_fp", ...), installed (on paper) at a free
 * address, its jitdump written with the unwinding options `opts` (NULL: the
 * defaults) into dumpdir (NULL: a private directory; "/tmp" as CPython does,
 * which is what perf's libdw "/tmp/jitted-" rule expects), and a sample
 * taken at row `row` as if f3 had called it at c->ip. */
struct uwt_tramp {
	struct uwt_self *c;
	uint64_t code;                /* where the code is, as the jitdump says */
	size_t row;
	uint64_t pc;
	uint64_t ret_off;             /* offset of the call's return address, or 0 */
	size_t call_row, nrows;
	uint8_t stack[UWT_STACK_MAX + 256];
	struct uw_sample s;
	struct uwt_view w;
};

/* Returns the number of rows of the code (so callers can loop). */
struct tr_unwind_opts;
size_t uwt_tramp(struct uwt_tramp *t, struct uwt_self *c, const char *const *ops, size_t nops,
		 const struct tr_unwind_opts *opts, enum pv_profile prof, const char *dumpdir, size_t row);
void uwt_tramp_free(struct uwt_tramp *t);

/* Index of v in r's frames, -1 if absent. */
int uwt_find(const struct uw_result *r, uint64_t v);
/* "0x.. 0x.. (stop: why)" for messages. */
const char *uwt_chain(const struct uw_result *r);

/* The tests both suites run, against *uwt_unwinder (set by each suite's fixture). */
extern const struct uw_unwinder *uwt_unwinder;
void uwt_add_common(TCase *tc);

#endif
