/* lint's private parts, shared by its files: lint.c (the rule walk: rules,
 * records as perf reads them, observers of the one jitdump walk), lint_hist.c
 * (the bounded histories), lint_unwind.c and lint_code.c (the checks of the
 * unwinding data and of the code against it), lint_read.c (memory, files). */
#ifndef UW_LINT_INT_H
#define UW_LINT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwinders/model/ehframe.h"
#include "unwinders/lint/lint.h"

/* ---- bounded histories (lint_hist.c): a treap of disjoint intervals in a fixed pool ---- */

struct inode {
	uint64_t start, end;
	uint64_t load_off;        /* CODE_LOAD (or MOVE) record that made the mapping */
	uint64_t code_index;
	uint64_t code_start, code_end;   /* that load's code: [code_start, code_end) */
	uint64_t unw_hash;        /* its UNWINDING_INFO's bytes hashed (unw_known: a CODE_LOAD's) */
	bool unw_known, has_unw;
	uint32_t prio, left, right;
	uint32_t older, newer;    /* insertion order, for forgetting the oldest */
};

struct itree {
	struct inode *n;          /* n[0] is the null node; grows by doubling up to cap */
	uint32_t cap, alloc, used, root, free_head;
	uint32_t oldest, newest;
	uint32_t rng;
	bool forgot;
};

int lint_it_init(struct itree *t, uint32_t cap);
void lint_it_fini(struct itree *t);
void lint_it_delete(struct itree *t, uint32_t x);
/* Insert a copy of v (its links ignored); the oldest entry goes when full. */
void lint_it_insert(struct itree *t, const struct inode *v);
/* the node with the largest start <= key, or 0 */
uint32_t lint_it_le(const struct itree *t, uint64_t key);
/* the node with the smallest start > key, or 0 */
uint32_t lint_it_gt(const struct itree *t, uint64_t key);
/* the first node overlapping [s, e), or 0 */
uint32_t lint_it_overlap(const struct itree *t, uint64_t s, uint64_t e);

/* ---- the walk's state ---- */

struct code_slot {            /* 0 load_off: empty (no record sits at offset 0) */
	uint64_t hash, load_off;
};

#define LINT_CODE_REGS 32     /* register rules the code check compares (DWARF 0..31) */

struct crow {                 /* a compact CFI row for the code check */
	uint64_t loc, end;        /* relative to the FDE's pc_begin */
	bool cfa_ok;              /* register + offset (DW_OP_bregN alone counts) */
	uint16_t cfa_reg;
	int64_t cfa_off;
	uint8_t ra_kind;
	int64_t ra_off;
	uint8_t kind[LINT_CODE_REGS];   /* enum ehf_rule_kind of each register */
	uint16_t max_reg;         /* the highest register the program named so far */
	uint32_t saved;                 /* bit r: kind[r] is EHF_OFFSET (the code check's loop) */
	int32_t off[LINT_CODE_REGS];    /* its offset for EHF_OFFSET */
};

/* The code check's rows of recent CFA programs (lint_code.c): the rows of
 * an FDE are a function of its CIE's and its own program bytes, the CIE's
 * alignments and pointer encoding and the FDE's length, relative to
 * pc_begin, when the program has no DW_CFA_set_loc and its advances cannot
 * overflow: such programs are run once and their rows kept here. */
#define LINT_RC_SLOTS 256             /* two slots per key, by two halves of its hash */
#define LINT_RC_KEY 160               /* key bytes at most (longer programs are not kept) */
#define LINT_RC_ROWS 8                /* rows at most */
struct rc_entry {
	uint64_t hash, used;          /* used: when it was last looked up (the older of two goes) */
	uint32_t key_len, nrows;      /* nrows 0: empty */
	uint8_t key[LINT_RC_KEY];
	struct crow rows[LINT_RC_ROWS];
};

/* lint_producers.c: loads with and without unwinding info (JD028, JD029) */
struct lint_prod {
	uint64_t loads_unw, loads_bare;
	uint64_t first_bare_off;
	char first_bare_name[96];
	uint64_t tid_bad, first_tid_off;   /* CODE_LOADs whose tid is at or above the kernel's pid limit (JD017) */
	uint32_t first_tid;
};

struct lint_ctx {
	const struct lint_opts *o;
	lint_report_fn cb;
	void *arg;
	struct lint_summary *sum;
	const uint8_t *data;
	size_t size;
	struct jdr_hdr hdr;
	uint32_t mach;            /* the machine the code checks take: elf_mach, the host's when it is 0 */
	enum pv_profile prof;
	struct jdr_pending ps;
	/* pending UNWINDING_INFO extras: the record before it, and its checks */
	bool unw_used, unw_bad, unw_after_load;
	uint64_t unw_prev_off, unw_prev_addr, unw_prev_size;
	/* pending DEBUG_INFO extras */
	bool dbg_after_load;
	uint64_t dbg_prev_addr;
	/* the record before the current one */
	bool prev_load;
	uint64_t prev_load_off, prev_code_addr, prev_code_size;
	bool have_ts;
	uint64_t last_ts, last_ts_off;
	bool closed, after_close_said, profile_said, limits_said[2], index_max;
	struct itree maps, index;
	uint64_t maps_end;        /* an upper bound of every live mapping's end */
	struct code_slot *codes;
	uint32_t ncodes, codes_used;  /* slots (a power of two, up to LINT_CODE_SLOTS), filled */
	uint64_t peek_off, peek_size, peek_hash;  /* prefetch_code_slot: the CODE_LOAD at peek_off (0: none) */
	struct crow *rows;
	size_t nrows;
	uint64_t rows_base;       /* collect_row: the FDE's pc_begin */
	struct rc_entry *rcache;  /* LINT_RC_SLOTS entries; NULL: no cache */
	uint64_t rc_clock;
	struct cm_entry *cmemo;   /* lint_code.c's memo of whole code checks; NULL: none yet */
	bool cm_off;              /* no memo (JU_LINT_MEMO=0, or it could not be allocated) */
	bool code_seen;           /* check_identical: the load's code bytes are an earlier load's */
	uint64_t cur_unw_hash;    /* the load being placed: its unwinding info hashed, whether it has one */
	bool cur_has_unw, reuse_said;
	struct fp_memo *fp_memo;  /* lint_fp.c's walk of the last load's code; NULL: none yet */
	unsigned ra_col;          /* the code check's return address column */
	unsigned lu_regs;         /* libunwind's register table size for the load's arch (JD055) */
	bool rows_over;
	/* findings reported without a where while this is set are about every
	 * instruction of the load at scope_load (its unwinding data) */
	bool scope_set;
	uint64_t scope_load;
	/* lint_file: release mapped pages behind the walk */
	bool release;
	size_t released;
	size_t populated;         /* and map pages ahead of it up to here */
	size_t fetched;           /* lint_walk_ctx: cache lines prefetched up to here */
	struct lint_prod prod;
	/* lint_salt.c: the load's bytes may not be its code (salt_candidate), are not (not_code) */
	bool salt_candidate, not_code;
	uint64_t salt_prev_off, salt_first, salt_loads, salt_size;
	uint8_t salt_head[64];    /* the first unsalted bytes of the first such load */
	uint64_t name_off;        /* lint_func_name: the load whose name is in name_buf (0: none) */
	char name_buf[LINT_FUNC_MAX];
};

/* One finding: counted, then passed on unless over max_per_rule. */
/* lint_reuse.c: a CODE_LOAD whose code lies over a live earlier load's code
 * with other unwinding information (JD062), told once per load */
void lint_reuse_check(struct lint_ctx *c, uint64_t rec_off, const struct inode *o, uint64_t start, uint64_t cend,
		      const char *name);
void lint_report(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The same about some code (where: see struct lint_where). */
void lint_report_at(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const struct lint_where *w,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* The next finding of rule id will only be counted (max_per_rule reached):
 * a check may then skip composing its message. */
bool lint_quiet(const struct lint_ctx *c, enum lint_rule_id id);
/* The walk over c->data (lint.c); -1 when it is not a jitdump. */
int lint_walk_ctx(struct lint_ctx *c);
/* lint_file: drop mapped pages well behind the walk (lint_read.c). */
void lint_release_behind(struct lint_ctx *c, size_t off);
/* The unwinding info perf attaches to a load (lint_unwind.c). */
void lint_check_unwind(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_unw *u,
		       uint64_t uoff, const struct pv_layout *ly);
/* Does this unwinding info, resolved in the layout of the load at
 * [addr, addr+size), describe exactly that code? (lint_unwind.c) */
bool lint_unw_covers(struct lint_ctx *c, const struct jdr_unw *u, uint64_t addr, uint64_t size);
/* The code of one FDE against its rows (lint_code.c). */
void lint_code_check(struct lint_ctx *c, uint64_t load_off, const uint8_t *code, uint64_t code_addr,
		     uint64_t code_size, const struct ehf_fde *fde, uint64_t fde_file_off);

/* The load's code as the kernel's frame-pointer walk meets it (lint_fp.c). */
void lint_fp_check(struct lint_ctx *c, const struct jdr_rec *r);

/* Code bytes that are not the code (lint_salt.c): before the load's checks,
 * when the code check found its rows across its instructions, at the end. */
void lint_salt_on_load(struct lint_ctx *c, const struct jdr_rec *r);
void lint_salt_found(struct lint_ctx *c, const struct jdr_rec *r);
void lint_salt_finish(struct lint_ctx *c);

/* The rules found on real producers (lint_producers.c). */
void lint_prod_on_load(struct lint_ctx *c, const struct jdr_rec *r, bool has_unwind);
void lint_prod_finish(struct lint_ctx *c);
void lint_prod_flags_note(uint64_t flags, char *buf, size_t len);

static inline bool lint_all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

static inline uint64_t lint_align8(uint64_t x)
{
	return (x + 7) & ~7ull;
}

#endif
