/* jitunwind dump's parts: the walk (dumpcmd.c) decides what is shown, in
 * what order; an emitter (dump_text.c, dump_json.c) only writes it. */
#ifndef HX_DUMP_H
#define HX_DUMP_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "unwinders/model/ehframe.h"
#include "unwinders/model/jdwalk.h"
#include "unwinders/lint/lint.h"
#include "unwinders/model/perfview.h"

struct dump_emitter;

/* Which records dump shows (every one when none is set): a CODE_LOAD whose
 * name matches a glob, whose code (or a CODE_MOVE whose new range) holds an
 * address, the record at a file offset.  Set ones must all hold. */
struct dump_filter {
	const char *name;
	bool at_set, record_set;
	uint64_t at, record;
};

struct dump {
	FILE *f;
	const struct dump_emitter *em;
	uint32_t mach;
	enum pv_profile prof;
	bool code;
	csh cs;
	bool cs_ok;
	const uint8_t *data;
	bool unw_used;
	uint64_t unw_used_off;
	const struct dump_filter *filter;   /* NULL: every record */
};

/* One call per thing shown; `first` says whether a list item is the first. */
struct dump_emitter {
	void (*begin)(struct dump *d, const char *name, size_t size, const struct jdr_hdr *h);
	/* stop: the finding the walk stopped at, or NULL at the end of the file */
	void (*end)(struct dump *d, size_t size, uint64_t nrecs, const struct lint_finding *stop);
	void (*rec_begin)(struct dump *d, const struct jdr_rec *r, bool first);
	void (*rec_end)(struct dump *d);
	/* CODE_LOAD */
	void (*load)(struct dump *d, const struct jdr_load *l);
	void (*code_begin)(struct dump *d, const struct jdr_load *l, uint64_t file_off);
	void (*insn)(struct dump *d, const struct jdr_load *l, uint64_t addr, const uint8_t *bytes, size_t len,
		     const char *text, bool first);
	void (*code_end)(struct dump *d);
	void (*code_missing)(struct dump *d);
	void (*debug_ref)(struct dump *d, uint64_t goff, const struct jdr_debug *g);
	void (*unwind_begin)(struct dump *d, uint64_t uoff, bool again, bool sizes_ok);
	void (*unwind_hdr)(struct dump *d);   /* between .eh_frame and .eh_frame_hdr */
	void (*unwind_end)(struct dump *d);
	void (*unwind_none)(struct dump *d);
	void (*view)(struct dump *d, const struct jdr_load *l, const struct pv_layout *ly);
	/* the other records */
	/* CODE_MOVE; pending_mapped: the mapped_size of the UNWINDING_INFO pending then (0: none),
	 * which sizes perf's map of the move */
	void (*move)(struct dump *d, const struct jdr_move *m, uint64_t pending_mapped);
	void (*debug_begin)(struct dump *d, const struct jdr_debug *g);
	void (*debug_entry)(struct dump *d, uint64_t i, uint64_t addr, int32_t line, int32_t disc,
			    const char *file, size_t len);
	void (*debug_end)(struct dump *d, uint64_t fit, uint64_t nr_entry);
	void (*unw_record)(struct dump *d, const struct jdr_unw *u);
	/* .eh_frame */
	void (*eh_begin)(struct dump *d, uint64_t file_off, uint64_t addr, size_t n);
	void (*eh_error)(struct dump *d, const uint8_t *p, size_t n, const struct ju_err *ee);
	void (*eh_table)(struct dump *d, const struct ehf_table *t);
	void (*cie_begin)(struct dump *d, const struct ehf_cie *c, size_t i);
	void (*cie_end)(struct dump *d);
	void (*fdes_begin)(struct dump *d);
	void (*fde_begin)(struct dump *d, const struct ehf_fde *fd, size_t i);
	void (*fde_rows)(struct dump *d);
	void (*row)(struct dump *d, const struct ehf_row *row, const char *text, bool first);
	void (*rows_error)(struct dump *d, const char *msg, bool first);
	void (*fde_end)(struct dump *d);
	void (*eh_end)(struct dump *d, bool terminated);
	/* a CFA program (ind: the text's indent) */
	void (*prog_begin)(struct dump *d);
	void (*prog_insn)(struct dump *d, const char *ind, uint64_t off, const uint8_t *bytes, size_t len,
			  const char *dw, const char *cfi, const char *note, bool first);
	void (*prog_error)(struct dump *d, const char *ind, uint64_t off, const char *msg, bool first);
	void (*prog_end)(struct dump *d);
	/* .eh_frame_hdr */
	void (*hdr_begin)(struct dump *d, uint64_t file_off, uint64_t addr, size_t n);
	void (*hdr_error)(struct dump *d, const uint8_t *p, size_t n, const struct ju_err *ee);
	void (*hdr_fields)(struct dump *d, const struct ehf_hdr *h);
	void (*hdr_entry)(struct dump *d, uint64_t i, uint64_t loc, uint64_t fde);
	void (*hdr_end)(struct dump *d);
};
extern const struct dump_emitter hx_dump_text, hx_dump_json;

/* Names the emitters share (dumpcmd.c). */
const char *hx_dump_rec_type(uint32_t id);
const char *hx_dump_arch(uint32_t mach);

/* Decode data (named name in messages) to out; 0 to the end, 1 stopped at a
 * broken record, 2 not a jitdump. */
int hx_dump_mem(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
		enum pv_profile prof, bool code);
/* The same, showing only the records filter selects (NULL: all). */
int hx_dump_mem_filtered(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
			 enum pv_profile prof, bool code, const struct dump_filter *filter);

#endif
