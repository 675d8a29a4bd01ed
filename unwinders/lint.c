/* jitdump linter: perf's reading of a dump (tools/perf/util/jitdump.c,
 * genelf.c, unwind-libunwind-local.c; facts sections 1, 2, 7), one bounded
 * streaming walk, findings with stable ids. */
#include "unwinders/lint.h"

#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwinders/decode.h"
#include "unwinders/ehframe.h"

#define RELEASE_CHUNK ((size_t)8 << 20)    /* lint_file drops mapped pages every 8 MiB */

const struct lint_rule lint_rules[LR__COUNT] = {
	[LR_NOT_JITDUMP] = { "JD001", "not-a-jitdump", LINT_ERROR,
		"perf inject -j cannot open it as a jitdump and injects nothing for this process." },
	[LR_VERSION] = { "JD002", "version", LINT_ERROR,
		"perf rejects a dump whose version is above 1 and injects nothing for this process." },
	[LR_HEADER_SIZE] = { "JD003", "header-size", LINT_ERROR,
		"perf reads records from offset 40 whatever total_size says, and rejects the dump when total_size is above 80." },
	[LR_HEADER_FLAGS] = { "JD004", "header-flags", LINT_ERROR,
		"perf rejects a dump with any flag bit but ARCH_TIMESTAMP and injects nothing." },
	[LR_ARCH_TIMESTAMP] = { "JD005", "arch-timestamp", LINT_WARNING,
		"perf converts these stamps with the recording's TSC conversion and rejects the dump when the recording has none." },
	[LR_ELF_MACH] = { "JD006", "elf-mach", LINT_INFO,
		"perf ignores elf_mach (genelf writes its own machine), but other readers pick the architecture from it." },
	[LR_FILE_NAME] = { "JD007", "file-name", LINT_INFO,
		"perf inject -j only opens a dump whose mmapped file is named jit-<pid>.dump, pid being the process that mapped it." },
	[LR_RECORD_TRUNCATED] = { "JD010", "record-truncated", LINT_ERROR,
		"perf stops reading at a record that runs past the end of the file: it and everything after it are lost." },
	[LR_RECORD_SIZE] = { "JD011", "record-size", LINT_ERROR,
		"perf stops reading at a total_size below 16, and takes fields a short record lacks from the bytes of an earlier record." },
	[LR_RECORD_UNKNOWN] = { "JD012", "record-unknown", LINT_WARNING,
		"perf skips a record whose id is above 4, with a warning." },
	[LR_AFTER_CLOSE] = { "JD014", "after-close", LINT_INFO,
		"perf ignores CODE_CLOSE and keeps reading the records after it." },
	[LR_TIMESTAMP_BACKWARDS] = { "JD015", "timestamp-backwards", LINT_WARNING,
		"perf injects each MMAP2 at its record's timestamp, so records out of time order change which mapping a sample is resolved against." },
	[LR_RECORD_PID] = { "JD016", "record-pid", LINT_WARNING,
		"perf injects the MMAP2 and names the .so with the record's pid, so samples of the dump's process never resolve to this code." },
	[LR_LOAD_NAME] = { "JD020", "load-name", LINT_ERROR,
		"perf reads the name with strlen from offset 56 and runs past the record when it is not NUL-terminated inside it." },
	[LR_LOAD_CODE_SIZE] = { "JD021", "load-code-size", LINT_ERROR,
		"perf takes the code as the record's last code_size bytes (code_size held in an int), so a size that does not fit after the name gives it the name or header bytes as code." },
	[LR_LOAD_TRAILING] = { "JD022", "load-trailing-bytes", LINT_ERROR,
		"perf takes the code as the record's last code_size bytes, so padding written after the code shifts perf's copy: it starts inside the real code and ends with the padding." },
	[LR_LOAD_EMPTY] = { "JD023", "load-empty", LINT_WARNING,
		"perf maps a zero-length DSO that no sample can hit." },
	[LR_LOAD_VMA] = { "JD024", "load-vma", LINT_INFO,
		"perf maps code_addr and ignores vma." },
	[LR_IDENTICAL_CODE] = { "JD025", "identical-code", LINT_WARNING,
		"perf gives both jitted .so files the same build-id (SHA-1 of the code) and may merge them, showing one load's symbol for the other's samples." },
	[LR_DUPLICATE_INDEX] = { "JD026", "duplicate-index", LINT_ERROR,
		"perf writes both loads to jitted-<pid>-<code_index>.so: the later file replaces the earlier, whose samples then resolve against the wrong code and symbol." },
	[LR_ADDR_WRAP] = { "JD027", "addr-wrap", LINT_ERROR,
		"perf's mapping for this load wraps around the address space and cannot be placed in its map tree." },
	[LR_UNWIND_AFTER_LOAD] = { "JD030", "unwind-after-load", LINT_ERROR,
		"perf attaches unwinding info to the NEXT CODE_LOAD, so info written after its load is lost for it (and given to whatever load follows)." },
	[LR_UNWIND_NO_LOAD] = { "JD031", "unwind-no-load", LINT_ERROR,
		"perf keeps unwinding info until a CODE_LOAD follows; none does, so nothing uses it." },
	[LR_UNWIND_OVERWRITTEN] = { "JD032", "unwind-overwritten", LINT_WARNING,
		"perf replaces pending unwinding info with the next UNWINDING_INFO record: the earlier one is never used." },
	[LR_UNWIND_SIZE] = { "JD033", "unwind-size", LINT_ERROR,
		"perf copies total_size - 40 bytes but hands genelf unwinding_size and eh_frame_hdr_size as written, so genelf reads past its copy or computes a negative .eh_frame size." },
	[LR_HDR_SIZE_ZERO] = { "JD034", "hdr-size-zero", LINT_ERROR,
		"with eh_frame_hdr_size 0 perf writes an empty .eh_frame_hdr, so its libunwind path finds no FDE, and it keeps this info for every later CODE_LOAD." },
	[LR_HDR_FIRST] = { "JD035", "hdr-first", LINT_ERROR,
		"perf takes .eh_frame as the FIRST unwinding_size - eh_frame_hdr_size bytes and .eh_frame_hdr as the rest, so header-first data (LLVM ORC's order) is misparsed and the unwinding info is lost." },
	[LR_HDR_SIZE_MISMATCH] = { "JD036", "hdr-size-mismatch", LINT_ERROR,
		"perf splits the data at unwinding_size - eh_frame_hdr_size, so a wrong eh_frame_hdr_size cuts .eh_frame short or starts .eh_frame_hdr inside it." },
	[LR_EH_FRAME_PARSE] = { "JD037", "eh-frame-parse", LINT_ERROR,
		"perf's DWARF unwinders cannot use this .eh_frame and find no unwinding info for the code it should describe." },
	[LR_NO_TERMINATOR] = { "JD038", "no-terminator", LINT_INFO,
		"perf's unwinders use the section size and need no zero terminator; readers that walk .eh_frame alone (libgcc) stop only at one." },
	[LR_TERMINATOR_MISPLACED] = { "JD039", "terminator-misplaced", LINT_ERROR,
		"readers stop at the first zero length, so the records after it are never seen." },
	[LR_HDR_PARSE] = { "JD040", "hdr-parse", LINT_ERROR,
		"perf's libunwind path reads its search table from .eh_frame_hdr and finds no FDE when the header does not parse." },
	[LR_HDR_ENCODING] = { "JD041", "hdr-encoding", LINT_ERROR,
		"perf decodes eh_frame_ptr and fde_count itself (absolute or pcrel, 4 or 8 bytes) and hands libunwind the table as datarel|sdata4 pairs, so other encodings misread the count or the table." },
	[LR_HDR_NO_TABLE] = { "JD042", "hdr-no-table", LINT_WARNING,
		"perf hands libunwind a table of fde_count entries, 0 here, so its libunwind path finds no FDE; only libdw, which scans .eh_frame, unwinds this code." },
	[LR_HDR_TABLE] = { "JD043", "hdr-table", LINT_ERROR,
		"libunwind binary-searches this table as perf hands it over, so an entry that does not match its FDE finds the wrong FDE or none." },
	[LR_HDR_EH_FRAME_PTR] = { "JD044", "hdr-eh-frame-ptr", LINT_WARNING,
		"perf skips eh_frame_ptr, but readers that follow it (libgcc, libdw without section headers) look for .eh_frame at the wrong address." },
	[LR_FDE_COVERAGE] = { "JD045", "fde-coverage", LINT_ERROR,
		"perf resolves FDE addresses in its genelf layout (.eh_frame at ALIGN_8(0x80 + code_size)); an FDE that straddles the code's bounds there gives samples another instruction's rows, and none to the pcs left out." },
	[LR_FDE_GAP] = { "JD046", "fde-gap", LINT_INFO,
		"samples at pcs no FDE covers get no DWARF unwinding: perf falls back to frame pointers or stops there." },
	[LR_FDE_OUTSIDE] = { "JD047", "fde-outside", LINT_WARNING,
		"this FDE describes addresses outside the load's code in perf's layout, which belong to other mappings or to the unwinding data itself." },
	[LR_NO_FDE] = { "JD048", "no-fde", LINT_INFO,
		"perf's DWARF unwinders find no FDE for this code and fall back to frame pointers or stop." },
	[LR_MAPPED_ZERO] = { "JD049", "mapped-size-zero", LINT_ERROR,
		"with mapped_size 0 perf's mapping ends with the code, the unwinding data lies outside it, and DWARF unwinders silently fall back to frame pointers." },
	[LR_MAPPED_SMALL] = { "JD050", "mapped-size-small", LINT_ERROR,
		"perf maps ALIGN_8(code_size) + mapped_size bytes, so the unwinding data past that end cannot be read and lookups in it fail." },
	[LR_MAPPING_OVERLAP] = { "JD051", "mapping-overlap", LINT_ERROR,
		"perf's map tree cuts an earlier mapping where a later one starts: the earlier load loses its unwinding data, or its code is resolved against the later load's DSO." },
	[LR_CFA_VS_CODE] = { "JD052", "cfa-vs-code", LINT_ERROR,
		"perf's DWARF unwinders compute the CFA from these rows and read the return address from the wrong stack slot." },
	[LR_RA_RULE] = { "JD053", "ra-rule", LINT_WARNING,
		"perf's DWARF unwinders take the caller's pc from this rule: on x86_64 anything but the slot at CFA-8 ends or corrupts the chain." },
	[LR_FDE_ABSOLUTE] = { "JD054", "fde-absolute", LINT_WARNING,
		"perf feeds libunwind process addresses but hands libdw the jitted ELF's own (.text at 0x80), so an absolute FDE address matches only one of them and the other unwinder finds no FDE." },
	[LR_UNWIND_EMPTY] = { "JD056", "unwind-empty", LINT_INFO,
		"perf writes an empty .eh_frame for this load, so DWARF unwinding of it falls back to frame pointers." },
	[LR_MOVE_UNKNOWN] = { "JD060", "move-unknown", LINT_ERROR,
		"perf maps jitted-<pid>-<code_index>.so at the new address, and no earlier CODE_LOAD wrote that file." },
	[LR_MOVE_MISMATCH] = { "JD061", "move-mismatch", LINT_WARNING,
		"perf maps the moved .so by code_index alone, so an old_code_addr that is not that load's suggests the wrong index." },
	[LR_DEBUG_AFTER_LOAD] = { "JD070", "debug-after-load", LINT_ERROR,
		"perf gives DEBUG_INFO to the NEXT CODE_LOAD, so line info written after its load lands on another load or nowhere." },
	[LR_DEBUG_NO_LOAD] = { "JD071", "debug-no-load", LINT_WARNING,
		"perf keeps DEBUG_INFO for the next CODE_LOAD; none follows, so it is never used." },
	[LR_DEBUG_MISMATCH] = { "JD072", "debug-mismatch", LINT_WARNING,
		"perf gives DEBUG_INFO to the next CODE_LOAD whatever its code_addr says." },
	[LR_DEBUG_ENTRIES] = { "JD073", "debug-entries", LINT_ERROR,
		"perf trusts nr_entry and genelf walks that many entries, reading past the record when they do not fit in it." },
	[LR_DEBUG_OVERWRITTEN] = { "JD074", "debug-overwritten", LINT_WARNING,
		"perf replaces pending DEBUG_INFO with the next DEBUG_INFO record: the earlier one is never used." },
	[LR_DEBUG_RANGE] = { "JD075", "debug-range", LINT_INFO,
		"line entries outside the load's code describe no instruction of perf's jitted .so." },
	[LR_PERF_PROFILE] = { "JD090", "perf-profile", LINT_WARNING,
		"this perf generation mishandles every jitted DSO in the way the message says, whatever the dump contains." },
	[LR_LIMIT] = { "JD099", "lint-limit", LINT_INFO,
		"not perf's doing: lint's bounded history forgot its oldest entries, so checks between records far apart may miss a pair." },
};

const char *lint_sev_name(enum lint_sev s)
{
	return s == LINT_ERROR ? "error" : s == LINT_WARNING ? "warning" : "info";
}

const struct lint_rule *lint_rule_find(const char *s)
{
	for (size_t i = 0; i < LR__COUNT; i++)
		if (lint_rules[i].id && (!strcmp(s, lint_rules[i].id) || !strcmp(s, lint_rules[i].name)))
			return &lint_rules[i];
	return NULL;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static uint64_t align8(uint64_t x)
{
	return (x + 7) & ~7ull;
}

void lint_walk_error(const struct jdr_err *e, struct lint_finding *f)
{
	enum lint_rule_id id = e->kind == JDR_SIZE_SMALL ? LR_RECORD_SIZE :
			       e->kind == JDR_PREFIX_TRUNCATED || e->kind == JDR_PAST_END ? LR_RECORD_TRUNCATED :
			       LR_NOT_JITDUMP;
	f->rule = &lint_rules[id];
	f->offset = e->offset;
	jdr_err_msg(e, f->msg, sizeof(f->msg));
}

/* ---- perf's view ---- */

void lint_layout(enum pv_profile prof, uint64_t code_addr, uint64_t code_size,
		 const struct jdr_unw *u, struct pv_layout *out)
{
	struct pv_unwind_sizes us = { 0, 0, 0 };
	if (u)
		us = (struct pv_unwind_sizes){ u->unwinding_size, u->eh_frame_hdr_size, u->mapped_size };
	pv_layout(prof, code_addr, code_size, u ? &us : NULL, out);
}

/* ---- bounded histories: a treap of disjoint intervals in a fixed pool ---- */

struct inode {
	uint64_t start, end;
	uint64_t load_off;        /* CODE_LOAD (or MOVE) record that made the mapping */
	uint64_t code_index;
	uint64_t code_start, code_end;   /* that load's code: [code_start, code_end) */
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

static int it_init(struct itree *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	t->alloc = cap < 64 ? cap : 64;
	t->n = calloc((size_t)t->alloc + 1, sizeof(*t->n));
	if (!t->n)
		return -1;
	t->cap = cap;
	t->rng = 0x9e3779b9u;
	return 0;
}

/* room for node used + 1; false when the pool cannot grow (full or no memory) */
static bool it_grow(struct itree *t)
{
	if (t->used < t->alloc)
		return true;
	if (t->alloc >= t->cap)
		return false;
	uint32_t na = t->alloc * 2 < t->cap ? t->alloc * 2 : t->cap;
	struct inode *nn = realloc(t->n, ((size_t)na + 1) * sizeof(*nn));
	if (!nn)
		return false;
	t->n = nn;
	t->alloc = na;
	return true;
}

static void it_fini(struct itree *t)
{
	free(t->n);
	t->n = NULL;
}

static uint32_t it_rand(struct itree *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 17;
	t->rng ^= t->rng << 5;
	return t->rng;
}

/* split by key: l gets starts < key, r the rest; depth is the treap's (O(log n)) */
static void it_split(struct itree *t, uint32_t x, uint64_t key, uint32_t *l, uint32_t *r)
{
	if (!x) {
		*l = *r = 0;
		return;
	}
	if (t->n[x].start < key) {
		it_split(t, t->n[x].right, key, &t->n[x].right, r);
		*l = x;
	} else {
		it_split(t, t->n[x].left, key, l, &t->n[x].left);
		*r = x;
	}
}

static uint32_t it_merge(struct itree *t, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (t->n[a].prio > t->n[b].prio) {
		t->n[a].right = it_merge(t, t->n[a].right, b);
		return a;
	}
	t->n[b].left = it_merge(t, a, t->n[b].left);
	return b;
}

static void it_unlink_order(struct itree *t, uint32_t x)
{
	struct inode *n = &t->n[x];
	if (n->older)
		t->n[n->older].newer = n->newer;
	else
		t->oldest = n->newer;
	if (n->newer)
		t->n[n->newer].older = n->older;
	else
		t->newest = n->older;
}

static void it_delete(struct itree *t, uint32_t x)
{
	uint64_t key = t->n[x].start;
	uint32_t l, m, r;
	it_split(t, t->root, key, &l, &m);
	it_split(t, m, key + 1, &m, &r);
	t->root = it_merge(t, l, r);
	it_unlink_order(t, x);
	t->n[x].left = t->free_head;   /* free list through .left */
	t->free_head = x;
	t->used--;
}

/* Insert a copy of v (its links ignored); the oldest entry goes when full. */
static void it_insert(struct itree *t, const struct inode *v)
{
	uint32_t x;
	if (t->free_head) {
		x = t->free_head;
		t->free_head = t->n[x].left;
	} else if (it_grow(t)) {
		x = t->used + 1;
	} else {
		t->forgot = true;
		it_delete(t, t->oldest);
		x = t->free_head;
		t->free_head = t->n[x].left;
	}
	t->used++;
	t->n[x] = *v;
	t->n[x].prio = it_rand(t);
	t->n[x].left = t->n[x].right = 0;
	t->n[x].older = t->newest;
	t->n[x].newer = 0;
	if (t->newest)
		t->n[t->newest].newer = x;
	else
		t->oldest = x;
	t->newest = x;
	uint32_t l, r;
	it_split(t, t->root, v->start, &l, &r);
	t->root = it_merge(t, it_merge(t, l, x), r);
}

/* the node with the largest start <= key, or 0 */
static uint32_t it_le(const struct itree *t, uint64_t key)
{
	uint32_t x = t->root, best = 0;
	while (x) {
		if (t->n[x].start <= key) {
			best = x;
			x = t->n[x].right;
		} else {
			x = t->n[x].left;
		}
	}
	return best;
}

/* the node with the smallest start > key, or 0 */
static uint32_t it_gt(const struct itree *t, uint64_t key)
{
	uint32_t x = t->root, best = 0;
	while (x) {
		if (t->n[x].start > key) {
			best = x;
			x = t->n[x].left;
		} else {
			x = t->n[x].right;
		}
	}
	return best;
}

/* the first node overlapping [s, e), or 0 */
static uint32_t it_overlap(const struct itree *t, uint64_t s, uint64_t e)
{
	uint32_t x = it_le(t, s);
	if (x && t->n[x].end > s)
		return x;
	x = it_gt(t, s);
	return x && t->n[x].start < e ? x : 0;
}

/* ---- the linting walk ---- */

struct code_slot {            /* 0 load_off: empty (no record sits at offset 0) */
	uint64_t hash, load_off;
};

struct crow {                 /* a compact CFI row for the code check */
	uint64_t loc, end;
	bool cfa_ok;              /* register + offset (DW_OP_bregN alone counts) */
	uint16_t cfa_reg;
	int64_t cfa_off;
	uint8_t ra_kind;
	int64_t ra_off;
};

struct lint_ctx {
	const struct lint_opts *o;
	lint_report_fn cb;
	void *arg;
	struct lint_summary *sum;
	const uint8_t *data;
	size_t size;
	struct jdr_hdr hdr;
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
	bool closed, after_close_said, profile_said, limits_said[3], index_max;
	struct itree maps, index;
	uint64_t maps_end;        /* an upper bound of every live mapping's end */
	struct code_slot *codes;
	uint32_t ncodes, codes_used;  /* slots (a power of two, up to LINT_CODE_SLOTS), filled */
	struct crow *rows;
	size_t nrows;
	unsigned ra_col;          /* the code check's return address column */
	bool rows_over;
	/* lint_file: release mapped pages behind the walk */
	bool release;
	size_t released;
};

static void report(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report(struct lint_ctx *c, enum lint_rule_id id, uint64_t off, const char *fmt, ...)
{
	const struct lint_rule *r = &lint_rules[id];
	c->sum->count[r->sev]++;
	uint64_t k = ++c->sum->per_rule[id];
	if (c->o->max_per_rule && k > c->o->max_per_rule)
		return;
	struct lint_finding f;
	va_list ap;
	f.rule = r;
	f.offset = off;
	va_start(ap, fmt);
	vsnprintf(f.msg, sizeof(f.msg), fmt, ap);
	va_end(ap);
	if (c->cb)
		c->cb(&f, c->arg);
}

static uint64_t hash_code(const uint8_t *p, uint64_t n)
{
	uint64_t h = 0x243f6a8885a308d3ull ^ n;
	uint64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	uint64_t w = 0;
	for (uint64_t k = 0; i < n; i++, k++)
		w |= (uint64_t)p[i] << (8 * k);
	h = (h ^ w) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 32);
}

static const char *mach_name(uint32_t m)
{
	switch (m) {
	case 3: return "i386";
	case 8: return "mips";
	case 20: return "ppc";
	case 21: return "ppc64";
	case 22: return "s390";
	case 40: return "arm";
	case 62: return "x86_64";
	case 183: return "aarch64";
	case 243: return "riscv";
	case 258: return "loongarch";
	default: return NULL;
	}
}

static void check_header(struct lint_ctx *c)
{
	const struct jdr_hdr *h = &c->hdr;
	if (h->version > 1)   /* perf takes 0 too */
		report(c, LR_VERSION, JD_HDR_VERSION, "version %u, expected 1: perf rejects the whole dump", h->version);
	if (h->total_size != JD_HDR_SIZE)
		report(c, LR_HEADER_SIZE, JD_HDR_TOTAL_SIZE, "header total_size %u, expected 40: %s", h->total_size,
		       h->total_size > 80 ? "perf's skip of the extra bytes fails and it rejects the dump" :
		       h->total_size > JD_HDR_SIZE ? "perf reads the extra header bytes as the first record" :
		       "perf reads the first record at offset 40 anyway");
	if (h->flags & ~1ull)
		report(c, LR_HEADER_FLAGS, JD_HDR_FLAGS, "flags 0x%" PRIx64 ": unknown bits 0x%" PRIx64, h->flags,
		       h->flags & ~(uint64_t)1);
	if (h->flags & 1)
		report(c, LR_ARCH_TIMESTAMP, 32, "JITDUMP_FLAGS_ARCH_TIMESTAMP is set: timestamps are TSC values, "
		       "not CLOCK_MONOTONIC");
	if (!mach_name(h->elf_mach))
		report(c, LR_ELF_MACH, JD_HDR_ELF_MACH, "elf_mach %u is not a machine perf supports", h->elf_mach);
	if (c->o->name) {
		const char *b = strrchr(c->o->name, '/');
		b = b ? b + 1 : c->o->name;
		unsigned pid = 0;
		int n = 0;
		if (sscanf(b, "jit-%u.dump%n", &pid, &n) != 1 || b[n] || pid != h->pid)
			report(c, LR_FILE_NAME, 0, "file name '%s' is not jit-%u.dump (the header's pid)", b, h->pid);
	}
	if (!c->profile_said && c->prof != PV_CURRENT) {
		c->profile_said = true;
		if (c->prof == PV_V61)
			report(c, LR_PERF_PROFILE, 0, "profile v6.1: perf v6.1-v6.7 computes libunwind's base as the map "
			       "start without -pgoff and writes PT_LOAD at 0, so every .eh_frame_hdr lookup is 0x80 off: "
			       "its libunwind path unwinds no jitted code; libdw is fed correctly");
		else
			report(c, LR_PERF_PROFILE, 0, "profile 5.x-0x40: perf gives the jitted .so section addresses and "
			       "an MMAP2 pgoff of 0x40 while libelf lays .text out at file offset 0x80, so every pc in JIT "
			       "code is read 0x40 bytes early from the file and misses its symbol (CPython's 'symbols "
			       "missing on Ubuntu' bug)");
	}
}

static int collect_row(const struct ehf_row *row, void *arg)
{
	struct lint_ctx *c = arg;
	if (c->nrows >= LINT_MAX_ROWS) {
		c->rows_over = true;
		return 1;
	}
	struct crow *r = &c->rows[c->nrows++];
	memset(r, 0, sizeof(*r));
	r->loc = row->loc;
	r->end = row->end;
	if (row->cfa_defined && row->cfa_kind == EHF_CFA_REG_OFF) {
		r->cfa_ok = true;
		r->cfa_reg = row->cfa_reg;
		r->cfa_off = row->cfa_off;
	} else if (row->cfa_defined && row->cfa_expr_len >= 2 && row->cfa_expr[0] >= DW_OP_breg0 &&
		   row->cfa_expr[0] <= DW_OP_breg31) {
		/* DW_OP_bregN off alone is register + offset */
		size_t pos = 1;
		uint64_t v = 0;
		unsigned sh = 0;
		uint8_t b = 0x80;
		while (pos < row->cfa_expr_len && sh < 63 && (b & 0x80)) {
			b = row->cfa_expr[pos++];
			v |= (uint64_t)(b & 0x7f) << sh;
			sh += 7;
		}
		if (!(b & 0x80) && pos == row->cfa_expr_len) {
			if (sh < 64 && (b & 0x40))
				v |= ~(uint64_t)0 << sh;
			r->cfa_ok = true;
			r->cfa_reg = (uint16_t)(row->cfa_expr[0] - DW_OP_breg0);
			r->cfa_off = (int64_t)v;
		}
	}
	r->ra_kind = row->reg[c->ra_col].kind;
	r->ra_off = row->reg[c->ra_col].off;
	return 0;
}

/* What the code check found in one FDE: the first CFA disagreement and the
 * first bad return address rule, with their counts. */
struct cc_result {
	size_t bad, ra_bad;
	uint64_t first_pc, ra_pc;
	int64_t first_row, first_code;
	unsigned first_reg;
	bool first_popped;
	uint8_t ra_kind;
};

/* Compare the row in force at pc with the state the code leaves. */
static void cc_compare(const struct uw_decoder *dc, const struct crow *row, const struct uw_cfa_state *st,
		       uint64_t pc, struct cc_result *res)
{
	if (row->cfa_ok) {
		bool known = row->cfa_reg == dc->sp ? st->sp_known : row->cfa_reg == dc->fp ? st->fp_known : false;
		int64_t want = row->cfa_reg == dc->sp ? st->sp_d : st->fp_d;
		bool popped = row->cfa_reg == dc->fp && st->fp_popped;
		if (((known && row->cfa_off != want) || popped) && !res->bad++) {
			res->first_pc = pc;
			res->first_row = row->cfa_off;
			res->first_code = want;
			res->first_reg = row->cfa_reg;
			res->first_popped = popped;
		}
	}
	/* x86_64: the return address is always at CFA-8 (arm64's moves from x30 to the stack) */
	if (dc->ra_at_cfa && !(row->ra_kind == EHF_OFFSET && row->ra_off == dc->ra_cfa_off) && !res->ra_bad++) {
		res->ra_pc = pc;
		res->ra_kind = row->ra_kind;
	}
}

/* Follow the code over [s, e) with the decoder, comparing every row in force
 * at an instruction boundary; after a no-fall-through instruction the state
 * is taken again from the next row. */
static void cc_follow(struct lint_ctx *c, const struct uw_decoder *dc, const uint8_t *code, uint64_t code_addr,
		      uint64_t s, uint64_t e, struct cc_result *res)
{
	struct uw_cfa_state st = { 0 };
	bool resync = true;
	if (s == code_addr) {
		/* function entry: CFA = rsp + 8 (the return address just pushed), sp + 0 on arm64 */
		st.sp_known = true;
		st.sp_d = dc->entry_cfa;
		resync = false;
	}
	size_t ri = 0;
	uint64_t pc = s;
	for (unsigned k = 0; k < LINT_MAX_INSNS && pc < e; k++) {
		while (ri < c->nrows && c->rows[ri].end <= pc)
			ri++;
		const struct crow *row = ri < c->nrows && c->rows[ri].loc <= pc ? &c->rows[ri] : NULL;
		if (row && resync) {
			st = (struct uw_cfa_state){ 0 };
			if (row->cfa_ok && row->cfa_reg == dc->sp) {
				st.sp_known = true;
				st.sp_d = row->cfa_off;
			} else if (row->cfa_ok && row->cfa_reg == dc->fp) {
				st.fp_known = true;
				st.fp_d = row->cfa_off;
			}
			resync = false;
		}
		if (row)
			cc_compare(dc, row, &st, pc, res);
		struct uw_insn x;
		size_t len = dc->decode(code + (pc - code_addr), (size_t)(e - pc), &x);
		if (!len)
			break;
		uw_eff_apply(&st, &x);
		if (x.end)
			resync = true;
		pc += len;
	}
}

static void cc_report(struct lint_ctx *c, const struct uw_decoder *dc, uint64_t load_off, uint64_t code_addr,
		      uint64_t fo, const struct cc_result *r)
{
	const char *reg = dc->reg_name(r->first_reg);
	size_t bad = r->bad, ra_bad = r->ra_bad;
	if (bad && r->first_popped)
		report(c, LR_CFA_VS_CODE, fo, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " the CFI says CFA = %s%+"
		       PRId64 " but the frame pointer was restored to the caller's value before it (%zu instruction boundar%s "
		       "disagree%s)", load_off, r->first_pc - code_addr, reg, r->first_row, bad,
		       bad == 1 ? "y" : "ies", bad == 1 ? "s" : "");
	else if (bad)
		report(c, LR_CFA_VS_CODE, fo, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " the CFI says CFA = %s%+"
		       PRId64 " but the instructions before it leave CFA = %s%+" PRId64 " (%zu instruction boundar%s "
		       "disagree%s)", load_off, r->first_pc - code_addr, reg, r->first_row, reg,
		       r->first_code, bad, bad == 1 ? "y" : "ies", bad == 1 ? "s" : "");
	uint8_t k = r->ra_kind;
	if (ra_bad)
		report(c, LR_RA_RULE, fo, "the CODE_LOAD at 0x%" PRIx64 ": at +0x%" PRIx64 " the return address (r16) "
		       "rule is %s, not 'at cfa-8' (%zu instruction boundar%s)", load_off, r->ra_pc - code_addr,
		       k == EHF_UNDEF ? "undefined" : k == EHF_SAME ? "same value" :
		       k == EHF_INITIAL ? "unset" : k == EHF_OFFSET ? "at another offset" : "not an offset",
		       ra_bad, ra_bad == 1 ? "y" : "ies");
}

/* Follow the code of one FDE with the stack-height model and compare every
 * row in force at an instruction boundary. */
static void code_check(struct lint_ctx *c, uint64_t load_off, const uint8_t *code, uint64_t code_addr,
		       uint64_t code_size, const struct ehf_fde *fde, uint64_t fde_file_off)
{
	const struct uw_decoder *dc = uw_decoder_for(c->hdr.elf_mach);
	if (!dc)
		return;
	c->ra_col = dc->ra;
	uint64_t s = fde->pc_begin > code_addr ? fde->pc_begin : code_addr;
	uint64_t e = fde->pc_end < code_addr + code_size ? fde->pc_end : code_addr + code_size;
	if (s >= e)
		return;
	c->nrows = 0;
	c->rows_over = false;
	struct ehf_err ee;
	if (ehf_rows(fde, collect_row, c, &ee) < 0) {
		report(c, LR_EH_FRAME_PARSE, fde_file_off, "the CFA program of the FDE for %s+0x%" PRIx64
		       " fails: %s", "code", s - code_addr, ee.msg);
		return;
	}
	if (c->rows_over || !c->nrows)
		return;
	struct cc_result res = { 0 };
	cc_follow(c, dc, code, code_addr, s, e, &res);
	cc_report(c, dc, load_off, code_addr, fde_file_off, &res);
}

/* Framing of .eh_frame records: where a record runs past `size`, where the
 * zero terminator is.  Every step consumes at least 4 bytes. */
struct framing {
	bool ok;                  /* every record fits */
	size_t end;               /* after the last whole record (or the terminator) */
	bool terminated;
	size_t term_off;
	size_t bad_off;           /* !ok: the record that does not fit */
	uint64_t bad_len;
};

static void frame_walk(const uint8_t *d, size_t size, struct framing *f)
{
	memset(f, 0, sizeof(*f));
	size_t off = 0;
	while (off < size) {
		if (size - off < 4) {
			f->bad_off = off;
			f->bad_len = 4;
			f->end = off;
			return;
		}
		uint32_t len = rd32(d + off);
		if (len == 0) {
			f->ok = true;
			f->terminated = true;
			f->term_off = off;
			f->end = off + 4;
			return;
		}
		if (len == 0xffffffffu || len > size - off - 4) {
			f->bad_off = off;
			f->bad_len = len;
			f->end = off;
			return;
		}
		off += 4 + (size_t)len;
	}
	f->ok = true;
	f->end = off;
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* Can perf's unwind_spec_ehframe read an eh_frame_ptr / fde_count with this
 * encoding?  (__dw_read_encoded_value: omit; absptr as a pointer; absolute or
 * pcrel with format 0 taken as udata4, or data4/data8.) */
static const char *perf_enc_problem(uint8_t enc, bool count)
{
	if (enc == DW_EH_PE_omit || enc == DW_EH_PE_absptr)
		return NULL;
	unsigned app = enc & 0x70, fmt = enc & 0x0f;
	if (app != DW_EH_PE_absptr && app != DW_EH_PE_pcrel)
		return "perf accepts only absolute or pcrel values here and leaves the rest unread";
	if (fmt == 0)
		return "perf reads format 0 as 4 bytes, the encoding says 8";
	if (fmt != DW_EH_PE_udata4 && fmt != DW_EH_PE_sdata4 && fmt != DW_EH_PE_udata8 && fmt != DW_EH_PE_sdata8)
		return "perf reads only 4- and 8-byte values here and leaves this one unread";
	if (count && app == DW_EH_PE_pcrel)
		return "perf adds its own buffer's address to a pcrel fde_count";
	return NULL;
}

static void check_hdr(struct lint_ctx *c, uint64_t uoff, const uint8_t *hd, size_t hs,
		      const struct pv_layout *ly, const struct ehf_table *t, bool have_table)
{
	struct ehf_hdr h;
	struct ehf_err ee;
	uint64_t hdr_file = uoff + JD_UNW_FIXED + (ly->eh_size);
	if (ehf_parse_hdr(hd, hs, ly->rt_hdr, &h, &ee)) {
		report(c, LR_HDR_PARSE, hdr_file + ee.offset, ".eh_frame_hdr+0x%" PRIx64 ": %s", ee.offset, ee.msg);
		return;
	}
	const char *why;
	if ((why = perf_enc_problem(h.eh_frame_ptr_enc, false)))
		report(c, LR_HDR_ENCODING, hdr_file + 1, "eh_frame_ptr_enc 0x%02x: %s, so fde_count and the table "
		       "are read from the wrong bytes", h.eh_frame_ptr_enc, why);
	if ((why = perf_enc_problem(h.fde_count_enc, true)))
		report(c, LR_HDR_ENCODING, hdr_file + 2, "fde_count_enc 0x%02x: %s", h.fde_count_enc, why);
	if (h.has_table && h.fde_count && h.table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		report(c, LR_HDR_ENCODING, hdr_file + 3, "table_enc 0x%02x: libunwind reads the table as "
		       "datarel|sdata4 (0x3b) pairs, so these %zu-byte entries are misread", h.table_enc, h.entry_size);
	if (h.eh_frame_ptr != ly->rt_eh)
		report(c, LR_HDR_EH_FRAME_PTR, hdr_file + 4, "eh_frame_ptr resolves to 0x%" PRIx64 ", .eh_frame is at "
		       "0x%" PRIx64 " in perf's layout (%+" PRId64 ")", h.eh_frame_ptr, ly->rt_eh,
		       (int64_t)(h.eh_frame_ptr - ly->rt_eh));
	size_t nf = have_table ? t->nfdes : 0;
	if (!h.has_table || !h.fde_count) {
		if (nf)
			report(c, LR_HDR_NO_TABLE, hdr_file + 2, ".eh_frame_hdr has %s (fde_count_enc 0x%02x, "
			       "table_enc 0x%02x) for %zu FDE%s", h.has_table ? "an empty table" : "no search table",
			       h.fde_count_enc, h.table_enc, nf, nf == 1 ? "" : "s");
		return;
	}
	if (!have_table)
		return;
	if (h.fde_count != nf) {
		report(c, LR_HDR_TABLE, hdr_file + 8, "fde_count %" PRIu64 ", .eh_frame has %zu FDE%s", h.fde_count,
		       nf, nf == 1 ? "" : "s");
		return;
	}
	struct ehf_bases b = { ly->rt_hdr, 0, ly->rt_hdr, 8 };
	uint64_t prev = 0;
	for (size_t i = 0; i < nf; i++) {
		size_t pos = (size_t)h.table_off + i * h.entry_size;
		uint64_t loc, fa;
		if (ehf_read_encoded(hd, hs, &pos, h.table_enc, &b, &loc, &ee) ||
		    ehf_read_encoded(hd, hs, &pos, h.table_enc, &b, &fa, &ee)) {
			report(c, LR_HDR_TABLE, hdr_file + h.table_off + i * h.entry_size, "entry %zu: %s", i, ee.msg);
			return;
		}
		const struct ehf_fde *f = &t->fdes[i];
		uint64_t want_fa = ly->rt_eh + f->offset;
		if (i && loc < prev) {
			report(c, LR_HDR_TABLE, hdr_file + h.table_off + i * h.entry_size, "entry %zu: initial_loc "
			       "0x%" PRIx64 " is below the previous entry's: the table is not sorted", i, loc);
			return;
		}
		if (loc != f->pc_begin || fa != want_fa) {
			report(c, LR_HDR_TABLE, hdr_file + h.table_off + i * h.entry_size, "entry %zu: {initial_loc "
			       "0x%" PRIx64 ", fde 0x%" PRIx64 "}, the FDE at .eh_frame+0x%" PRIx64 " starts at 0x%" PRIx64
			       " and sits at 0x%" PRIx64 " in perf's layout", i, loc, fa, f->offset, f->pc_begin, want_fa);
			return;
		}
		prev = loc;
	}
}

/* An FDE table resolved against a load: do its FDEs cover [a, a+n)? */
static bool covers_exactly(const struct ehf_table *t, uint64_t a, uint64_t n)
{
	if (!t->nfdes)
		return false;
	uint64_t lo = t->fdes[0].pc_begin, hi = 0;
	for (size_t i = 0; i < t->nfdes; i++)
		if (t->fdes[i].pc_end > hi)
			hi = t->fdes[i].pc_end;
	return lo == a && hi == a + n;
}

/* Does this unwinding info, resolved in the layout of the load at
 * [addr, addr+size), describe exactly that code? */
static bool unw_covers(struct lint_ctx *c, const struct jdr_unw *u, uint64_t addr, uint64_t size)
{
	if (u->eh_frame_hdr_size > u->unwinding_size || u->unwinding_size > u->avail)
		return false;
	struct pv_layout ly;
	lint_layout(c->prof, addr, size, u, &ly);
	struct ehf_table t;
	struct ehf_bases b = { ly.rt_eh, 0, 0, 8 };
	struct ehf_err ee;
	if (ehf_parse(&t, u->data, (size_t)(u->unwinding_size - u->eh_frame_hdr_size), &b, &ee))
		return false;
	bool fits = covers_exactly(&t, addr, size);
	ehf_table_free(&t);
	return fits;
}

/* The unwinding info perf attaches to a load. */
static void check_unwind(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_unw *u,
			 uint64_t uoff, const struct pv_layout *ly)
{
	const struct jdr_load *l = &r->u.load;
	if (c->unw_bad || !u->unwinding_size)
		return;
	uint64_t data_file = uoff + JD_UNW_FIXED;
	size_t us = (size_t)u->unwinding_size, hs = (size_t)u->eh_frame_hdr_size, es = us - hs;
	const uint8_t *d = u->data;
	if (u->mapped_size == 0 && es)
		report(c, LR_MAPPED_ZERO, uoff + JD_UNW_MAPPED_SIZE, "UNWINDING_INFO for the CODE_LOAD at 0x%" PRIx64 " has mapped_size "
		       "0: perf maps [0x%" PRIx64 ", +0x%" PRIx64 "), its .eh_frame would be at 0x%" PRIx64, r->off,
		       ly->map_start, ly->map_len, ly->rt_eh);
	else if (u->mapped_size && u->mapped_size < u->unwinding_size)
		report(c, LR_MAPPED_SMALL, uoff + JD_UNW_MAPPED_SIZE, "mapped_size %" PRIu64 " is below unwinding_size %" PRIu64
		       ": the last %" PRIu64 " bytes (the end of .eh_frame_hdr) lie outside perf's mapping",
		       u->mapped_size, u->unwinding_size, u->unwinding_size - u->mapped_size);

	/* header first (LLVM ORC): a valid header at the start whose eh_frame_ptr
	 * points right behind it, while perf's split does not parse */
	struct ehf_hdr h;
	struct ehf_err ee;
	bool perf_hdr_ok = hs && !ehf_parse_hdr(d + es, hs, ly->rt_hdr, &h, &ee);
	if (hs && !perf_hdr_ok && !ehf_parse_hdr(d, hs, 0x10000, &h, &ee) && h.eh_frame_ptr == 0x10000 + hs) {
		report(c, LR_HDR_FIRST, data_file, "the unwinding data starts with a %zu-byte .eh_frame_hdr whose "
		       "eh_frame_ptr points right after it: header-first order; perf parses its first %zu bytes as "
		       ".eh_frame", hs, es);
		return;
	}
	struct framing fw;
	frame_walk(d, es, &fw);
	if (hs && (!perf_hdr_ok || !fw.ok)) {
		/* where do the records really stop, and does a header parse there? */
		struct framing whole;
		frame_walk(d, us, &whole);
		size_t w = whole.ok ? whole.end : whole.bad_off;
		if (w != es && w < us && !ehf_parse_hdr(d + w, us - w, ly->rt_eh + w, &h, &ee)) {
			report(c, LR_HDR_SIZE_MISMATCH, uoff + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size %zu puts the end of .eh_frame at "
			       "+0x%zx, but its records end at +0x%zx, where a %zu-byte .eh_frame_hdr parses", hs, es, w,
			       us - w);
			return;
		}
	}
	if (!fw.ok) {
		report(c, LR_EH_FRAME_PARSE, data_file + fw.bad_off, ".eh_frame+0x%zx: record length 0x%" PRIx64
		       " runs past the end of .eh_frame (%zu bytes)", fw.bad_off, fw.bad_len, es);
		return;
	}
	if (fw.terminated && !all_zero(d + fw.end, es - fw.end))
		report(c, LR_TERMINATOR_MISPLACED, data_file + fw.term_off, ".eh_frame+0x%zx: zero terminator with %zu "
		       "more bytes of .eh_frame after it", fw.term_off, es - fw.end);
	else if (!fw.terminated && es)
		report(c, LR_NO_TERMINATOR, data_file + es, ".eh_frame of %zu bytes has no zero terminator", es);

	struct ehf_table t;
	struct ehf_bases b = { ly->rt_eh, 0, 0, 8 };
	bool have_table = false;
	if (ehf_parse(&t, d, es, &b, &ee)) {
		report(c, LR_EH_FRAME_PARSE, data_file + ee.offset, ".eh_frame+0x%" PRIx64 ": %s", ee.offset, ee.msg);
	} else if (c->unw_after_load && !covers_exactly(&t, l->code_addr, l->code_size) &&
		   unw_covers(c, u, c->unw_prev_addr, c->unw_prev_size)) {
		/* it describes the load before it, not this one */
		report(c, LR_UNWIND_AFTER_LOAD, uoff, "UNWINDING_INFO follows the CODE_LOAD at 0x%" PRIx64 " it "
		       "describes; perf gives it to the next one, the CODE_LOAD at 0x%" PRIx64 " ('%.60s')",
		       c->unw_prev_off, r->off, l->name);
		ehf_table_free(&t);
		return;
	} else {
		have_table = true;
		uint64_t ca = l->code_addr, ce = l->code_addr + l->code_size;
		for (size_t i = 0; i < t.nfdes; i++) {
			const struct ehf_fde *f = &t.fdes[i];
			if ((f->cie->fde_enc & 0x70) == DW_EH_PE_absptr) {
				report(c, LR_FDE_ABSOLUTE, data_file + f->offset, "FDE at .eh_frame+0x%" PRIx64 " has an "
				       "absolute pc_begin 0x%" PRIx64 " (CIE encoding 0x%02x): %s", f->offset, f->pc_begin,
				       f->cie->fde_enc, f->pc_begin == ca ? "the process address, which libdw (ELF "
				       "addresses + bias) will not find" : "not the process address of the code, which "
				       "libunwind looks up");
				break;
			}
		}
		if (!t.nfdes) {
			report(c, LR_NO_FDE, data_file, ".eh_frame for the CODE_LOAD at 0x%" PRIx64 " (%s) holds %zu CIE%s "
			       "and no FDE", r->off, l->name ? l->name : "?", t.ncies, t.ncies == 1 ? "" : "s");
		} else {
			bool straddle = false, any = false, reported_outside = false;
			for (size_t i = 0; i < t.nfdes; i++) {
				const struct ehf_fde *f = &t.fdes[i];
				if (f->pc_end <= ca || f->pc_begin >= ce) {
					if (!reported_outside) {
						reported_outside = true;
						report(c, LR_FDE_OUTSIDE, data_file + f->offset, "FDE at .eh_frame+0x%"
						       PRIx64 " covers [0x%" PRIx64 ", 0x%" PRIx64 "), outside the code "
						       "[0x%" PRIx64 ", 0x%" PRIx64 ") of the CODE_LOAD at 0x%" PRIx64,
						       f->offset, f->pc_begin, f->pc_end, ca, ce, r->off);
					}
					continue;
				}
				any = true;
				if (f->pc_begin < ca || f->pc_end > ce)
					straddle = true;
			}
			const struct ehf_fde *f0 = &t.fdes[0];
			if (straddle || !any) {
				int64_t shift = (int64_t)(f0->pc_begin - ca);
				char hint[200] = "";
				uint64_t pad = align8(l->code_size) - l->code_size;
				if (pad && shift == (int64_t)pad)
					snprintf(hint, sizeof(hint), ": %" PRId64 " bytes = ALIGN_8(code_size) - code_size, "
						 ".eh_frame was encoded as if it sat right after the code", shift);
				else if (c->prof == PV_5X_0X40 && shift == 0x40)
					snprintf(hint, sizeof(hint), ": the 0x40 of the 5.x-0x40 profile");
				report(c, LR_FDE_COVERAGE, data_file + f0->offset, "FDE at .eh_frame+0x%" PRIx64 " covers "
				       "[0x%" PRIx64 ", 0x%" PRIx64 ") in perf's layout, the code of the CODE_LOAD at 0x%"
				       PRIx64 " is [0x%" PRIx64 ", 0x%" PRIx64 ") (shifted %+" PRId64 "%s)", f0->offset,
				       f0->pc_begin, f0->pc_end, r->off, ca, ce, shift, hint);
			} else {
				/* gaps among FDEs inside the code */
				uint64_t at = ca, gap_at = 0, gaps = 0;
				for (size_t i = 0; i < t.nfdes; i++) {
					const struct ehf_fde *f = &t.fdes[i];
					if (f->pc_end <= ca || f->pc_begin >= ce)
						continue;
					if (f->pc_begin > at) {
						if (!gaps)
							gap_at = at;
						gaps += f->pc_begin - at;
					}
					if (f->pc_end > at)
						at = f->pc_end;
				}
				if (at < ce) {
					if (!gaps)
						gap_at = at;
					gaps += ce - at;
				}
				if (gaps)
					report(c, LR_FDE_GAP, data_file + f0->offset, "%" PRIu64 " of the %" PRIu64 " code "
					       "bytes of the CODE_LOAD at 0x%" PRIx64 " have no FDE, the first at +0x%" PRIx64,
					       gaps, l->code_size, r->off, gap_at - ca);
				for (size_t i = 0; i < t.nfdes && l->code; i++)
					code_check(c, r->off, l->code, ca, l->code_size, &t.fdes[i],
						   data_file + t.fdes[i].offset);
			}
		}
	}
	if (hs)
		check_hdr(c, uoff, d + es, hs, ly, &t, have_table);
	if (have_table)
		ehf_table_free(&t);
}

static void limit_said(struct lint_ctx *c, int which, uint64_t off)
{
	static const char *const what[3] = { "live mappings", "code_index intervals", "code hashes" };
	static const unsigned cap[3] = { LINT_MAX_MAPS, LINT_MAX_INDEX, LINT_CODE_SLOTS };
	if (c->limits_said[which])
		return;
	c->limits_said[which] = true;
	report(c, LR_LIMIT, off, "more than %u %s: the oldest are forgotten from here on", cap[which], what[which]);
}

/* Place a mapping in perf's map tree (the treap holds its disjoint pieces):
 * report what the new one does to the live ones, then cut them. */
static void place_mapping(struct lint_ctx *c, uint64_t rec_off, uint64_t start, uint64_t len,
			  uint64_t code_size, uint64_t index, const char *name)
{
	if (!len)
		return;
	uint64_t end = start + len, cend = start + code_size;
	bool said_tail = false, said_code = false;
	char what[96] = "";
	/* JITs mostly place code upwards: past every live mapping, nothing to cut */
	bool past = c->maps.used && start >= c->maps_end;
	for (unsigned guard = 0; !past && guard < 4 * LINT_MAX_MAPS; guard++) {
		uint32_t x = it_overlap(&c->maps, start, end);
		if (!x)
			break;
		struct inode o = c->maps.n[x];
		bool code_hit = start < o.code_end && o.code_start < cend;   /* code over code: reuse */
		if (!code_hit && !what[0]) {
			if (name)
				snprintf(what, sizeof(what), "the CODE_LOAD '%.40s'", name);
			else
				snprintf(what, sizeof(what), "the CODE_MOVE");
		}
		if (!code_hit) {
			if (o.start < start && start < o.end && o.code_end <= start && !said_tail) {
				said_tail = true;
				report(c, LR_MAPPING_OVERLAP, rec_off, "%s maps [0x%" PRIx64 ", 0x%" PRIx64 "), inside the "
				       "mapping [0x%" PRIx64 ", 0x%" PRIx64 ") of the CODE_LOAD at 0x%" PRIx64 ": perf cuts that "
				       "one at 0x%" PRIx64 " and loses the %" PRIu64 " bytes of its unwinding data after it",
				       what, start, end, o.start, o.end, o.load_off, start, o.end - start);
			} else if (o.code_start < end && start < o.code_end && !said_code) {
				said_code = true;
				report(c, LR_MAPPING_OVERLAP, rec_off, "%s maps [0x%" PRIx64 ", 0x%" PRIx64 "), over the code "
				       "[0x%" PRIx64 ", 0x%" PRIx64 ") of the CODE_LOAD at 0x%" PRIx64 ": perf resolves "
				       "samples there against this load's DSO", what, start, end, o.code_start,
				       o.code_end, o.load_off);
			} else if (!said_tail && !said_code && o.code_end <= start) {
				said_tail = true;
				report(c, LR_MAPPING_OVERLAP, rec_off, "%s maps [0x%" PRIx64 ", 0x%" PRIx64 "), over the "
				       "unwinding data mapped at [0x%" PRIx64 ", 0x%" PRIx64 ") for the CODE_LOAD at 0x%"
				       PRIx64, what, start, end, o.start, o.end, o.load_off);
			}
		}
		/* cut: keep the parts outside [start, end) */
		it_delete(&c->maps, x);
		if (o.start < start) {
			struct inode a = o;
			a.end = start;
			it_insert(&c->maps, &a);
		}
		if (o.end > end) {
			struct inode b = o;
			b.start = end;
			it_insert(&c->maps, &b);
		}
	}
	struct inode n = { .start = start, .end = end, .load_off = rec_off, .code_index = index,
			   .code_start = start, .code_end = cend };
	it_insert(&c->maps, &n);
	if (end > c->maps_end || c->maps.used == 1)
		c->maps_end = end;
	if (c->maps.forgot)
		limit_said(c, 0, rec_off);
}

/* code_index seen: intervals [start, end) of indices.  true if already seen. */
static bool index_seen(struct lint_ctx *c, uint64_t idx, bool add, uint64_t off)
{
	struct itree *t = &c->index;
	if (idx == UINT64_MAX) {
		/* [idx, idx + 1) would wrap: one flag instead */
		bool seen = c->index_max;
		c->index_max |= add;
		return seen;
	}
	uint32_t x = it_le(t, idx);
	if (x && idx < t->n[x].end)
		return true;
	if (!add)
		return false;
	uint32_t nx = it_gt(t, idx);
	if (x && t->n[x].end == idx && idx != UINT64_MAX) {
		t->n[x].end = idx + 1;
		if (nx && t->n[nx].start == idx + 1) {
			uint64_t e = t->n[nx].end;
			it_delete(t, nx);
			t->n[x].end = e;
		}
		return false;
	}
	if (nx && t->n[nx].start == idx + 1) {
		/* the key shrinks by one and stays between its neighbours */
		t->n[nx].start = idx;
		return false;
	}
	struct inode n = { .start = idx, .end = idx + 1 };
	it_insert(t, &n);
	if (t->forgot)
		limit_said(c, 1, off);
	return false;
}

static void check_identical(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	if (!c->codes || !l->code || !l->code_size)
		return;
	uint64_t h = hash_code(l->code, l->code_size);
	if (c->codes_used * 2 >= c->ncodes && c->ncodes < LINT_CODE_SLOTS) {
		/* double and re-place: slots remember their hash */
		uint32_t nn = c->ncodes * 2;
		struct code_slot *ns = calloc(nn, sizeof(*ns));
		if (ns) {
			c->codes_used = 0;
			for (uint32_t i = 0; i < c->ncodes; i++) {
				if (!c->codes[i].load_off)
					continue;
				struct code_slot *d = &ns[c->codes[i].hash & (nn - 1)];
				c->codes_used += !d->load_off;
				*d = c->codes[i];
			}
			free(c->codes);
			c->codes = ns;
			c->ncodes = nn;
		}
	}
	struct code_slot *s = &c->codes[h & (c->ncodes - 1)];
	if (s->load_off && s->hash == h) {
		/* the earlier load, read back from the map (decoded as before) */
		struct jdr_iter it = { c->data, c->size, (size_t)s->load_off, c->hdr, 0 };
		struct jdr_rec o;
		struct jdr_err f;
		const struct jdr_load *ol = &o.u.load;
		if (jdr_next(&it, &o, &f) > 0 && ol->code && ol->code_size == l->code_size &&
		    !memcmp(ol->code, l->code, (size_t)l->code_size)) {
			if (ol->name_len != l->name_len || memcmp(ol->name, l->name, l->name_len))
				report(c, LR_IDENTICAL_CODE, r->off, "CODE_LOAD '%.60s' has the same %" PRIu64 " code bytes "
				       "as '%.60s' (the CODE_LOAD at 0x%" PRIx64 ")", l->name, l->code_size, ol->name,
				       s->load_off);
			return;
		}
	}
	if (s->load_off && s->hash != h && c->ncodes >= LINT_CODE_SLOTS)
		limit_said(c, 2, r->off);
	c->codes_used += !s->load_off;
	s->hash = h;
	s->load_off = r->off;
}

static void check_debug_for_load(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_debug *d,
				  uint64_t doff)
{
	const struct jdr_load *l = &r->u.load;
	if (d->code_addr != l->code_addr) {
		if (c->dbg_after_load && d->code_addr == c->dbg_prev_addr)
			report(c, LR_DEBUG_AFTER_LOAD, doff, "DEBUG_INFO for code_addr 0x%" PRIx64 " follows the CODE_LOAD "
			       "of that address; perf gives it to the CODE_LOAD at 0x%" PRIx64 " (code_addr 0x%" PRIx64 ")",
			       d->code_addr, r->off, l->code_addr);
		else
			report(c, LR_DEBUG_MISMATCH, doff, "DEBUG_INFO for code_addr 0x%" PRIx64 " is given to the next "
			       "CODE_LOAD at 0x%" PRIx64 ", whose code_addr is 0x%" PRIx64, d->code_addr, r->off,
			       l->code_addr);
	}
	/* entries: {u64 addr, i32 lineno, i32 discrim, name\0}, checked at the record */
	size_t pos = 0, out = 0;
	uint64_t first = 0;
	for (uint64_t i = 0; i < d->nr_entry && pos + 16 < d->len; i++) {
		uint64_t a = rd64(d->entries + pos);
		const uint8_t *nul = memchr(d->entries + pos + 16, 0, d->len - pos - 16);
		if (!nul)
			break;
		if (a < l->code_addr || a >= l->code_addr + l->code_size) {
			if (!out++)
				first = a;
		}
		pos = (size_t)(nul - d->entries) + 1;
	}
	if (out)
		report(c, LR_DEBUG_RANGE, doff, "%zu line entr%s outside the code [0x%" PRIx64 ", 0x%" PRIx64 ") of the "
		       "CODE_LOAD at 0x%" PRIx64 ", the first at 0x%" PRIx64, out, out == 1 ? "y lies" : "ies lie",
		       l->code_addr, l->code_addr + l->code_size, r->off, first);
}

static void on_load(struct lint_ctx *c, const struct jdr_rec *r)
{
	const struct jdr_load *l = &r->u.load;
	c->sum->loads++;
	const struct jdr_unw *u;
	const struct jdr_debug *d;
	uint64_t uoff = 0, doff = 0;
	/* a sticky (eh_frame_hdr_size 0) info already checked against its first load */
	bool again = c->ps.unw_set && c->unw_used;
	jdr_pending_step(&c->ps, r, &u, &uoff, &d, &doff);
	if (u)
		c->unw_used = true;
	if (r->short_fixed) {
		report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_LOAD total_size %u, below its 56-byte fixed part and the "
		       "name's NUL", r->size);
		return;
	}
	if (!l->name) {
		report(c, LR_LOAD_NAME, r->off + JD_LOAD_FIXED, "CODE_LOAD name is not NUL-terminated inside the record "
		       "(%u bytes)", r->size);
		return;
	}
	if (l->pid != c->hdr.pid)
		report(c, LR_RECORD_PID, r->off + JD_LOAD_PID, "CODE_LOAD '%.60s' has pid %u, the header's is %u", l->name,
		       l->pid, c->hdr.pid);
	if (!l->code) {
		report(c, LR_LOAD_CODE_SIZE, r->off + JD_LOAD_CODE_SIZE, "CODE_LOAD '%.60s': code_size %" PRIu64 " does not fit the %zu "
		       "bytes after the name", l->name, l->code_size, (size_t)r->size - JD_LOAD_FIXED - l->name_len - 1);
		return;
	}
	if (l->code_size > INT32_MAX)
		report(c, LR_LOAD_CODE_SIZE, r->off + JD_LOAD_CODE_SIZE, "CODE_LOAD '%.60s': code_size %" PRIu64 " does not fit perf's "
		       "int", l->name, l->code_size);
	if (l->gap) {
		const uint8_t *g = (const uint8_t *)l->name + l->name_len + 1;
		if (!all_zero(g, l->gap) && all_zero(r->p + r->size - l->gap, l->gap))
			report(c, LR_LOAD_TRAILING, r->off + r->size - l->gap, "CODE_LOAD '%.60s': the %zu bytes after the "
			       "name are not zero and the record's last %zu bytes are: the code seems to follow the name "
			       "with padding after it, and perf's copy of it starts %zu bytes late", l->name, l->gap,
			       l->gap, l->gap);
	}
	if (!l->code_size)
		report(c, LR_LOAD_EMPTY, r->off + JD_LOAD_CODE_SIZE, "CODE_LOAD '%.60s' has code_size 0", l->name);
	if (l->vma != l->code_addr)
		report(c, LR_LOAD_VMA, r->off + JD_LOAD_VMA, "CODE_LOAD '%.60s': vma 0x%" PRIx64 " != code_addr 0x%" PRIx64,
		       l->name, l->vma, l->code_addr);
	if (index_seen(c, l->code_index, true, r->off))
		report(c, LR_DUPLICATE_INDEX, r->off + JD_LOAD_CODE_INDEX, "CODE_LOAD '%.60s' reuses code_index %" PRIu64, l->name,
		       l->code_index);
	check_identical(c, r);
	if (d)
		check_debug_for_load(c, r, d, doff);
	struct pv_layout ly;
	lint_layout(c->prof, l->code_addr, l->code_size, u, &ly);
	if (ly.map_start + ly.map_len < ly.map_start) {
		report(c, LR_ADDR_WRAP, r->off + JD_LOAD_CODE_ADDR, "CODE_LOAD '%.60s': [0x%" PRIx64 ", +0x%" PRIx64 ") wraps around",
		       l->name, ly.map_start, ly.map_len);
	} else {
		place_mapping(c, r->off, ly.map_start, ly.map_len, l->code_size, l->code_index, l->name);
	}
	if (u && !again && !c->unw_bad)
		check_unwind(c, r, u, uoff, &ly);
}

static void on_unwind(struct lint_ctx *c, const struct jdr_rec *r)
{
	if (r->short_fixed) {
		report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_UNWINDING_INFO total_size %u, below its 40-byte fixed part",
		       r->size);
		return;
	}
	const struct jdr_unw *u = &r->u.unw;
	if (c->ps.unw_set && !c->unw_used)
		report(c, LR_UNWIND_OVERWRITTEN, c->ps.unw_off, "UNWINDING_INFO is replaced by the one at 0x%" PRIx64
		       " before any CODE_LOAD", r->off);
	c->unw_bad = false;
	if (u->unwinding_size > u->avail) {
		report(c, LR_UNWIND_SIZE, r->off + JD_UNW_UNWINDING_SIZE, "unwinding_size %" PRIu64 " runs past the record's %zu bytes of "
		       "data", u->unwinding_size, u->avail);
		c->unw_bad = true;
	} else if (u->eh_frame_hdr_size > u->unwinding_size) {
		report(c, LR_UNWIND_SIZE, r->off + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size %" PRIu64 " is larger than unwinding_size %"
		       PRIu64, u->eh_frame_hdr_size, u->unwinding_size);
		c->unw_bad = true;
	} else if (!u->unwinding_size) {
		report(c, LR_UNWIND_EMPTY, r->off + JD_UNW_UNWINDING_SIZE, "unwinding_size 0");
	} else if (!u->eh_frame_hdr_size) {
		report(c, LR_HDR_SIZE_ZERO, r->off + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size 0 with %" PRIu64 " bytes of unwinding data",
		       u->unwinding_size);
	}
	c->unw_after_load = c->prev_load;
	c->unw_prev_off = c->prev_load_off;
	c->unw_prev_addr = c->prev_code_addr;
	c->unw_prev_size = c->prev_code_size;
	c->unw_used = false;
	jdr_pending_step(&c->ps, r, NULL, NULL, NULL, NULL);
}

static void on_debug(struct lint_ctx *c, const struct jdr_rec *r)
{
	if (r->short_fixed) {
		report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_DEBUG_INFO total_size %u, below its 32-byte fixed part",
		       r->size);
		return;
	}
	const struct jdr_debug *d = &r->u.debug;
	if (c->ps.dbg_set)
		report(c, LR_DEBUG_OVERWRITTEN, c->ps.dbg_off, "DEBUG_INFO is replaced by the one at 0x%" PRIx64
		       " before any CODE_LOAD", r->off);
	/* each entry is at least 17 bytes: the loop ends within len / 17 steps */
	size_t pos = 0;
	uint64_t i = 0;
	for (; i < d->nr_entry; i++) {
		if (d->len - pos < 17)
			break;
		const uint8_t *nul = memchr(d->entries + pos + 16, 0, d->len - pos - 16);
		if (!nul)
			break;
		pos = (size_t)(nul - d->entries) + 1;
	}
	if (i < d->nr_entry)
		report(c, LR_DEBUG_ENTRIES, r->off + JD_DEBUG_NR_ENTRY, "nr_entry %" PRIu64 ", but only %" PRIu64 " whole entr%s fit the "
		       "record's %zu bytes", d->nr_entry, i, i == 1 ? "y" : "ies", d->len);
	c->dbg_after_load = c->prev_load;
	c->dbg_prev_addr = c->prev_code_addr;
	jdr_pending_step(&c->ps, r, NULL, NULL, NULL, NULL);
}

static void on_move(struct lint_ctx *c, const struct jdr_rec *r)
{
	if (r->short_fixed) {
		report(c, LR_RECORD_SIZE, r->off + JD_REC_TOTAL_SIZE, "CODE_MOVE total_size %u, below its 64 bytes", r->size);
		return;
	}
	const struct jdr_move *m = &r->u.move;
	if (m->pid != c->hdr.pid)
		report(c, LR_RECORD_PID, r->off + JD_MOVE_PID, "CODE_MOVE has pid %u, the header's is %u", m->pid, c->hdr.pid);
	if (!index_seen(c, m->code_index, false, r->off)) {
		report(c, LR_MOVE_UNKNOWN, r->off + JD_MOVE_CODE_INDEX, "CODE_MOVE of code_index %" PRIu64 ", which no earlier CODE_LOAD "
		       "has", m->code_index);
	} else {
		uint32_t x = it_le(&c->maps, m->old_code_addr);
		const struct inode *o = x ? &c->maps.n[x] : NULL;
		if (!o || m->old_code_addr >= o->end || o->code_index != m->code_index)
			report(c, LR_MOVE_MISMATCH, r->off + JD_MOVE_OLD_CODE_ADDR, "CODE_MOVE of code_index %" PRIu64 ": old_code_addr 0x%"
			       PRIx64 " is not where that load is mapped", m->code_index, m->old_code_addr);
		else if (o->code_end - o->code_start != m->code_size)
			report(c, LR_MOVE_MISMATCH, r->off + JD_MOVE_CODE_SIZE, "CODE_MOVE of code_index %" PRIu64 ": code_size %" PRIu64
			       ", the load has %" PRIu64, m->code_index, m->code_size, o->code_end - o->code_start);
	}
	/* jit_repipe_code_move sizes the mapping with the PENDING unwinding info */
	struct pv_layout ly;
	lint_layout(c->prof, m->new_code_addr, m->code_size, c->ps.unw_set ? &c->ps.unw : NULL, &ly);
	uint64_t len = ly.map_len;
	if (m->new_code_addr + len < m->new_code_addr)
		report(c, LR_ADDR_WRAP, r->off + JD_MOVE_NEW_CODE_ADDR, "CODE_MOVE to 0x%" PRIx64 " of 0x%" PRIx64 " bytes wraps around",
		       m->new_code_addr, len);
	else
		place_mapping(c, r->off, m->new_code_addr, len, m->code_size, m->code_index, NULL);
}

static void finish(struct lint_ctx *c)
{
	if (c->ps.unw_set && !c->unw_used && !c->unw_bad) {
		if (c->unw_after_load)
			report(c, LR_UNWIND_AFTER_LOAD, c->ps.unw_off, "UNWINDING_INFO follows the CODE_LOAD at 0x%" PRIx64
			       "%s, and no CODE_LOAD comes after it", c->unw_prev_off,
			       unw_covers(c, &c->ps.unw, c->unw_prev_addr, c->unw_prev_size) ? ", which it describes" : "");
		else
			report(c, LR_UNWIND_NO_LOAD, c->ps.unw_off, "no CODE_LOAD follows this UNWINDING_INFO");
	}
	if (c->ps.dbg_set) {
		if (c->dbg_after_load && c->ps.dbg.code_addr == c->dbg_prev_addr)
			report(c, LR_DEBUG_AFTER_LOAD, c->ps.dbg_off, "DEBUG_INFO for code_addr 0x%" PRIx64 " follows the "
			       "CODE_LOAD of that address, and no CODE_LOAD comes after it", c->ps.dbg.code_addr);
		else
			report(c, LR_DEBUG_NO_LOAD, c->ps.dbg_off, "no CODE_LOAD follows this DEBUG_INFO");
	}
}

static void release_behind(struct lint_ctx *c, size_t off)
{
	if (!c->release || off - c->released < RELEASE_CHUNK)
		return;
	/* stay a large folio (up to 2 MiB) behind: a fault near the walk maps the
	 * whole folio again, and what it maps below `released` would stay */
	size_t lag = (size_t)2 << 20;
	size_t to = off > 2 * lag ? (off - lag) & ~(lag - 1) : 0;
	if (to > c->released) {
		/* clean file pages: dropping them only costs a refault if read again */
		madvise((void *)(uintptr_t)(c->data + c->released), to - c->released, MADV_DONTNEED);
		c->released = to;
	}
}

static int lint_walk(struct lint_ctx *c)
{
	struct jdr_iter it;
	struct jdr_err we;
	struct lint_finding f;
	if (jdr_init(&it, c->data, c->size, &we)) {
		lint_walk_error(&we, &f);
		c->sum->unreadable = true;
		c->sum->fatal_offset = f.offset;
		snprintf(c->sum->fatal, sizeof(c->sum->fatal), "%s", f.msg);
		c->sum->count[LINT_ERROR]++;
		c->sum->per_rule[LR_NOT_JITDUMP]++;
		if (c->cb)
			c->cb(&f, c->arg);
		return -1;
	}
	c->hdr = it.hdr;
	check_header(c);
	struct jdr_rec r;
	for (;;) {
		int rc = jdr_next(&it, &r, &we);
		if (rc == 0)
			break;
		if (rc < 0) {
			lint_walk_error(&we, &f);
			report(c, (enum lint_rule_id)(f.rule - lint_rules), f.offset, "%s", f.msg);
			break;
		}
		c->sum->records++;
		if (c->have_ts && r.timestamp < c->last_ts)
			report(c, LR_TIMESTAMP_BACKWARDS, r.off + JD_REC_TIMESTAMP, "timestamp %" PRIu64 " is %" PRIu64 " ns before the "
			       "record at 0x%" PRIx64, r.timestamp, c->last_ts - r.timestamp, c->last_ts_off);
		c->have_ts = true;
		c->last_ts = r.timestamp;
		c->last_ts_off = r.off;
		if (c->closed && !c->after_close_said) {
			c->after_close_said = true;
			report(c, LR_AFTER_CLOSE, r.off, "record id %u after CODE_CLOSE", r.id);
		}
		bool was_load = false;
		switch (r.id) {
		case JD_CODE_LOAD:
			on_load(c, &r);
			was_load = !r.short_fixed && r.u.load.name && r.u.load.code;
			if (was_load) {
				c->prev_load_off = r.off;
				c->prev_code_addr = r.u.load.code_addr;
				c->prev_code_size = r.u.load.code_size;
			}
			break;
		case JD_CODE_MOVE:
			on_move(c, &r);
			break;
		case JD_CODE_DEBUG_INFO:
			on_debug(c, &r);
			break;
		case JD_CODE_CLOSE:
			c->closed = true;
			break;
		case JD_CODE_UNWINDING_INFO:
			on_unwind(c, &r);
			break;
		default:
			report(c, LR_RECORD_UNKNOWN, r.off, "record id %u (%u bytes)", r.id, r.size);
			break;
		}
		c->prev_load = was_load;
		release_behind(c, it.off);
	}
	finish(c);
	return 0;
}

static int lint_run(const uint8_t *data, size_t size, const struct lint_opts *o, lint_report_fn cb,
		    void *arg, struct lint_summary *sum, bool release)
{
	static const struct lint_opts defo = { PV_CURRENT, NULL, 0 };
	struct lint_ctx *c = calloc(1, sizeof(*c));
	memset(sum, 0, sizeof(*sum));
	sum->bytes = size;
	if (!c)
		return -ENOMEM;
	c->o = o ? o : &defo;
	c->prof = c->o->profile;
	c->cb = cb;
	c->arg = arg;
	c->sum = sum;
	c->data = data;
	c->size = size;
	c->release = release;
	int rc = -ENOMEM;
	c->ncodes = 256;
	c->codes = calloc(c->ncodes, sizeof(*c->codes));
	c->rows = calloc(LINT_MAX_ROWS, sizeof(*c->rows));
	if (c->codes && c->rows && !it_init(&c->maps, LINT_MAX_MAPS) && !it_init(&c->index, LINT_MAX_INDEX))
		rc = lint_walk(c);
	it_fini(&c->maps);
	it_fini(&c->index);
	free(c->codes);
	free(c->rows);
	free(c);
	return rc;
}

int lint_mem(const uint8_t *data, size_t size, const struct lint_opts *o,
	     lint_report_fn cb, void *arg, struct lint_summary *sum)
{
	return lint_run(data, size, o, cb, arg, sum, false);
}

int lint_file(const char *path, const struct lint_opts *o, lint_report_fn cb, void *arg,
	      struct lint_summary *sum, char *err, size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "%s: offset 0x0: cannot open: %s", path, strerror(errno));
		sum->unreadable = true;
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: offset 0x0: not a regular file", path);
		close(fd);
		sum->unreadable = true;
		return -1;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *data = NULL;
	void *m = NULL;
	if (size) {
		m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			snprintf(err, errlen, "%s: offset 0x0: cannot mmap: %s", path, strerror(errno));
			close(fd);
			sum->unreadable = true;
			return -1;
		}
		madvise(m, size, MADV_SEQUENTIAL);
		data = m;
	}
	close(fd);
	int rc = lint_run(data, size, o, cb, arg, sum, true);
	if (m)
		munmap(m, size);
	if (rc == -ENOMEM) {
		snprintf(err, errlen, "%s: out of memory", path);
		return -1;
	}
	if (rc < 0)
		snprintf(err, errlen, "%s: offset 0x%" PRIx64 ": %s", path, sum->fatal_offset, sum->fatal);
	return rc < 0 ? -1 : 0;
}

int lint_exit_code(const struct lint_summary *sum)
{
	if (sum->unreadable)
		return 2;
	return sum->count[LINT_ERROR] ? 1 : 0;
}
