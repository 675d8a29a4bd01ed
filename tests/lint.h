/* Suite lint's parts (tests/test_lint.c, tests/lint_*.c): the jitdump
 * builders and the lint-a-buffer helpers (tests/lint_jb.c), one crafted dump
 * per rule (tests/lint_mk.c), the CLI and the harness's own dumps
 * (tests/lint_cli.c). */
#ifndef JU_TESTS_LINT_H
#define JU_TESTS_LINT_H

#include <check.h>
#include <dirent.h>
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/case/case.h"
#include "trampolines/tramp.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/lint/lint.h"
#include "unwinders/model/perfview.h"
#include "unwinders/uwarch.h"
#include "unwinders/view.h"


#define PID 4242u
#define ADDR 0x7f0000001000ull

struct jb {
	uint8_t *p;
	size_t n, cap;
	uint64_t ts;
};

struct got {
	size_t n;
	const struct lint_rule *r[512];
	char msg[512][480];
	uint64_t off[512];
	struct lint_where where[512];
};

struct ctx {
	enum pv_profile prof;
	const char *name;
	size_t cut;              /* bytes to cut off the end */
};

typedef void (*mk_fn)(struct jb *b, bool bad, struct ctx *c);

static inline void p32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }

static inline void p64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

extern const char *const fp_ops[];
extern const char *const nofp_ops[];
extern const char *const big_ops[];
extern struct tr_func *F, *F11, *FB, *FA;   /* lt_setup: fp, nofp, big frame, aarch64 fp */
extern struct got lt_G;              /* what the last lt_lint_buf found */
extern const char *lt_lint_dir;      /* lint_opts.dump_dir of the next lt_lint_buf */

void jb_put(struct jb *b, const void *d, size_t n);
void jb_zero(struct jb *b, size_t n);
void jb_hdr(struct jb *b, uint32_t magic, uint32_t version, uint32_t total, uint32_t mach, uint64_t flags);
void jb_std(struct jb *b);
size_t jb_prefix(struct jb *b, uint32_t id, uint32_t total);
size_t jb_load_pid(struct jb *b, uint32_t pid, const char *name, uint64_t addr, const uint8_t *code,
			  size_t n, uint64_t index);
size_t jb_load(struct jb *b, const char *name, uint64_t addr, const uint8_t *code, size_t n, uint64_t index);
size_t jb_unw(struct jb *b, const uint8_t *d, size_t dlen, uint64_t us, uint64_t hs, uint64_t ms);
void jb_close(struct jb *b);
void jb_move(struct jb *b, uint64_t old, uint64_t neu, uint64_t size, uint64_t index);
void jb_debug(struct jb *b, uint64_t code_addr, uint64_t nr, size_t have, uint64_t entry_addr);
struct tr_func *lt_emit_for(const struct tr_arch *a, const char *const *lines, size_t n);
struct tr_func *lt_emit(const char *const *lines, size_t n);
void lt_opts_clean(struct tr_unwind_opts *o);
void lt_unw(const struct tr_func *f, const struct tr_unwind_opts *o, uint64_t addr, struct tr_unwind *u);
void jb_func(struct jb *b, const struct tr_func *f, const struct tr_unwind_opts *o, const char *name,
		    uint64_t addr, uint64_t index);
void lt_collect(const struct lint_finding *f, void *arg);
struct lint_summary lt_lint_buf(const uint8_t *p, size_t n, enum pv_profile prof, const char *name);
bool lt_fired(const char *id);
void lt_show(char *out, size_t cap);
void lt_base(struct jb *b);
void mk_magic(struct jb *b, bool bad, struct ctx *c);
void mk_version(struct jb *b, bool bad, struct ctx *c);
void mk_hdrsize(struct jb *b, bool bad, struct ctx *c);
void mk_flags(struct jb *b, bool bad, struct ctx *c);
void mk_archts(struct jb *b, bool bad, struct ctx *c);
void mk_mach(struct jb *b, bool bad, struct ctx *c);
void mk_dumpdir(struct jb *b, bool bad, struct ctx *c);
void mk_fname(struct jb *b, bool bad, struct ctx *c);
void mk_truncated(struct jb *b, bool bad, struct ctx *c);
void mk_recsize(struct jb *b, bool bad, struct ctx *c);
void mk_unknown(struct jb *b, bool bad, struct ctx *c);
void mk_afterclose(struct jb *b, bool bad, struct ctx *c);
void mk_tsback(struct jb *b, bool bad, struct ctx *c);
void mk_pid(struct jb *b, bool bad, struct ctx *c);
void mk_name(struct jb *b, bool bad, struct ctx *c);
void mk_codesize(struct jb *b, bool bad, struct ctx *c);
void mk_trailing(struct jb *b, bool bad, struct ctx *c);
void mk_empty(struct jb *b, bool bad, struct ctx *c);
void mk_vma(struct jb *b, bool bad, struct ctx *c);
void mk_dupindex(struct jb *b, bool bad, struct ctx *c);
void mk_wrap(struct jb *b, bool bad, struct ctx *c);
void mk_after(struct jb *b, bool bad, struct ctx *c);
void mk_after2(struct jb *b, bool bad, struct ctx *c);
void mk_noload(struct jb *b, bool bad, struct ctx *c);
void mk_overwritten(struct jb *b, bool bad, struct ctx *c);
void mk_unw_with(struct jb *b, const struct tr_func *f, const struct tr_unwind_opts *o,
			void (*damage)(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms));
void dmg_usize(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_hs0(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_hs_big(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_cie_version(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_hdr_version(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void add32(uint8_t *p, int32_t d);
void dmg_table(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_ehptr(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_ms0(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_ms16(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_empty(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_after_term(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void dmg_no_fde(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms);
void mk_hdrfirst(struct jb *b, bool bad, struct ctx *c);
void mk_noterm(struct jb *b, bool bad, struct ctx *c);
void mk_tableenc(struct jb *b, bool bad, struct ctx *c);
void mk_notable(struct jb *b, bool bad, struct ctx *c);
void mk_unaligned(struct jb *b, bool bad, struct ctx *c);
void mk_gap(struct jb *b, bool bad, struct ctx *c);
void mk_outside(struct jb *b, bool bad, struct ctx *c);
void mk_absolute(struct jb *b, bool bad, struct ctx *c);
void mk_overlap(struct jb *b, bool bad, struct ctx *c);
void mk_cfa(struct jb *b, bool bad, struct ctx *c);
void mk_cfa_a64(struct jb *b, bool bad, struct ctx *c);
void mk_cfa_rv(struct jb *b, bool bad, struct ctx *c);
void mk_ra_rv(struct jb *b, bool bad, struct ctx *c);
void mk_ra(struct jb *b, bool bad, struct ctx *c);
void mk_below_sp(struct jb *b, bool bad, struct ctx *c);
void mk_saved_early(struct jb *b, bool bad, struct ctx *c);
void mk_ra_code(struct jb *b, bool bad, struct ctx *c);
void jb_code_prog(struct jb *b, const uint8_t *code, size_t n, const uint8_t *prog, size_t plen);
void mk_undecoded(struct jb *b, bool bad, struct ctx *c);
void mk_past_libunwind(struct jb *b, bool bad, struct ctx *c);
void mk_deep_edge(struct jb *b, bool bad, struct ctx *c);
void mk_deep(struct jb *b, bool bad, struct ctx *c);
void jb_debug_name(struct jb *b, const char *name, size_t nlen, size_t tail);
void mk_dbg_name(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_tail(struct jb *b, bool bad, struct ctx *c);
void mk_move_unknown(struct jb *b, bool bad, struct ctx *c);
void mk_move_mismatch(struct jb *b, bool bad, struct ctx *c);
void mk_reuse(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_after(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_noload(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_mismatch(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_entries(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_over(struct jb *b, bool bad, struct ctx *c);
void mk_dbg_range(struct jb *b, bool bad, struct ctx *c);
void mk_profile(struct jb *b, bool bad, struct ctx *c);
void mk_limit(struct jb *b, bool bad, struct ctx *c);
void mk_nounw_some(struct jb *b, bool bad, struct ctx *c);
void mk_nounw_all(struct jb *b, bool bad, struct ctx *c);
void mk_unrelocated(struct jb *b, bool bad, struct ctx *c);
void mk_unrelocated_a64(struct jb *b, bool bad, struct ctx *c);
void mk_tid(struct jb *b, bool bad, struct ctx *c);
void mk_usize(struct jb *b, bool bad, struct ctx *c);
void mk_hs0(struct jb *b, bool bad, struct ctx *c);
void mk_hsbig(struct jb *b, bool bad, struct ctx *c);
void mk_cie(struct jb *b, bool bad, struct ctx *c);
void mk_hdrver(struct jb *b, bool bad, struct ctx *c);
void mk_table(struct jb *b, bool bad, struct ctx *c);
void mk_ehptr(struct jb *b, bool bad, struct ctx *c);
void mk_ms0(struct jb *b, bool bad, struct ctx *c);
void mk_ms16(struct jb *b, bool bad, struct ctx *c);
void mk_unwempty(struct jb *b, bool bad, struct ctx *c);
void mk_term_misplaced(struct jb *b, bool bad, struct ctx *c);
void mk_nofde(struct jb *b, bool bad, struct ctx *c);
void mk_nofde_rv(struct jb *b, bool bad, struct ctx *c);
void lt_setup(void);
void mk_v8(struct jb *b, bool bad, struct ctx *c);

/* the tests defined in the parts, added to the suite's tcases */
void lint_add_mk_tests(TCase *rules);
void lint_add_cli(TCase *cli);
void lint_add_memo(TCase *rules);
void lint_add_fp_tests(TCase *rules);
void lint_add_salt_tests(TCase *rules);
void mk_salted(struct jb *b, bool bad, struct ctx *c);
void mk_fp_noframe(struct jb *b, bool bad, struct ctx *c);
void mk_fp_clobbered(struct jb *b, bool bad, struct ctx *c);
void mk_fp_window(struct jb *b, bool bad, struct ctx *c);

#endif
