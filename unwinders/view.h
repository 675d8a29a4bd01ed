/* The profiler's view of the process at sample time: the maps of the
 * samples file, the jitdump's loads mapped as perf maps them, and the
 * unwinding info (.eh_frame) of every executable region, parsed once. */
#ifndef UW_VIEW_H
#define UW_VIEW_H

#include "unwinders/unwind.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfview.h"
#include "unwinders/model/files.h"
#include "juerr.h"

enum uw_region_kind { UW_REGION_JIT, UW_REGION_ELF };

struct uw_region {
	enum uw_region_kind kind;
	uint64_t start, end;          /* as perf maps it */
	const char *name;             /* jit symbol name or file path */
	/* JIT: the load; ELF: the file image */
	const struct jd_load *load;
	const struct uw_file *file;   /* ELF: the file, mapped once per run (files.h) */
	uint64_t bias;                /* ELF: runtime address - link-time address */
	bool has_cfi;
	bool cfi_bad;                 /* the data is there but does not parse */
	char cfi_err[240];            /* why there is no CFI (parse error text) */
	struct ehf_table cfi;
	bool cfi_shared;              /* cfi belongs to the file's cache entry */
	uint8_t *eh_copy;             /* ELF: .eh_frame bytes */
};

struct uw_view {
	const struct uw_arch *arch;
	struct uw_map *maps;
	size_t nmaps;
	const struct jd_file *jd;
	struct uw_region *regions;    /* sorted by start, disjoint: loads cut file maps and earlier loads as perf does (mt_cut) */
	size_t nregions;
	const struct pv_view *pv;     /* perf's view (perfview.h), for libunwind and libdw; may be NULL */
	struct uw_row_cache *rows;    /* the oracle's rows by pc (oracle.c), made as it meets them; may be NULL */
};

/* Parse "/proc/self/maps" text. 0, or -1 with a message. */
int uw_maps_parse(const char *text, size_t len, struct uw_map **maps, size_t *n,
		  struct ju_err *err);
void uw_maps_free(struct uw_map *maps, size_t n);

/* 0, or a negative errno (-ENOMEM) with a message. */
int uw_view_init(struct uw_view *v, const struct uw_arch *arch,
		 const struct uw_map *maps, size_t nmaps, const struct jd_file *jd,
		 struct ju_err *err);
void uw_view_fini(struct uw_view *v);
struct uw_row_cache *uw_row_cache_new(void);
void uw_row_cache_free(struct uw_row_cache *c);
const struct uw_region *uw_view_find(const struct uw_view *v, uint64_t pc);

/* perf's mapping length for a load (facts section 2). */
uint64_t uw_jit_map_len(const struct jd_load *l);
uint64_t uw_jit_eh_off(const struct jd_load *l);

/* Dwfls the libdw unwinder began for views' own use since the start: a view
 * whose process files are mapped as the last one's takes that one's over
 * (tests). */
unsigned long uw_libdw_dwfls_begun(void);
/* Drops the Dwfl kept for the next view (a caller about to fork a capture
 * child whose pid no kept Dwfl can match: cheaper here than in the child,
 * where freeing it writes copy-on-write pages). */
void uw_libdw_forget(void);
/* The Dwfl kept for process proc (uw_sample.dwfl_proc) is dropped. */
void uw_libdw_flush(uint64_t proc);

/* perf's unwind__flush_access at an exec of process proc (its
 * uw_sample.lu_proc; 0: every process kept): libunwind's cache of the
 * address space kept for it is emptied, as unw_flush_cache does in perf. */
void uw_libunwind_flush(uint64_t proc);
/* Drops every address space kept for a process (the end of a replay). */
void uw_libunwind_forget(void);

#endif
