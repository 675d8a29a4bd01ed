/* lint's checks of the unwinding info perf attaches to a load: the split into
 * .eh_frame and .eh_frame_hdr, the records' framing, the FDEs against the
 * code in perf's layout, the header's search table (JD033-JD050, JD054). */
#include "unwinders/lint/lint_int.h"
#include "unwinders/uwarch.h"

#include <dwarf.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
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

/* perf's .eh_frame_hdr parsed where perf puts it: unw_check_split parses
 * it, check_hdr reports on it (the same bytes at the same address) */
struct hdr_parse {
	bool ok;
	struct ehf_hdr h;
	struct ju_err ee;        /* !ok: why */
};

static void check_hdr(struct lint_ctx *c, uint64_t uoff, const uint8_t *hd, size_t hs,
		      const struct pv_layout *ly, const struct ehf_table *t, bool have_table,
		      const struct hdr_parse *hp)
{
	struct ehf_hdr h = hp->h;
	struct ju_err ee;
	uint64_t hdr_file = uoff + JD_UNW_FIXED + (ly->eh_size);
	if (!hp->ok) {
		lint_report(c, LR_HDR_PARSE, hdr_file + hp->ee.offset, ".eh_frame_hdr+0x%" PRIx64 ": %s", hp->ee.offset,
			    hp->ee.msg);
		return;
	}
	const char *why;
	if ((why = perf_enc_problem(h.eh_frame_ptr_enc, false)))
		lint_report(c, LR_HDR_ENCODING, hdr_file + 1, "eh_frame_ptr_enc 0x%02x: %s, so fde_count and the table "
		       "are read from the wrong bytes", h.eh_frame_ptr_enc, why);
	if ((why = perf_enc_problem(h.fde_count_enc, true)))
		lint_report(c, LR_HDR_ENCODING, hdr_file + 2, "fde_count_enc 0x%02x: %s", h.fde_count_enc, why);
	if (h.has_table && h.fde_count && h.table_enc != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
		lint_report(c, LR_HDR_ENCODING, hdr_file + 3, "table_enc 0x%02x: libunwind reads the table as "
		       "datarel|sdata4 (0x3b) pairs, so these %zu-byte entries are misread", h.table_enc, h.entry_size);
	if (h.eh_frame_ptr != ly->rt_eh)
		lint_report(c, LR_HDR_EH_FRAME_PTR, hdr_file + 4, "eh_frame_ptr resolves to 0x%" PRIx64 ", .eh_frame is at "
		       "0x%" PRIx64 " in perf's layout (%+" PRId64 ")", h.eh_frame_ptr, ly->rt_eh,
		       (int64_t)(h.eh_frame_ptr - ly->rt_eh));
	size_t nf = have_table ? t->nfdes : 0;
	if (!h.has_table || !h.fde_count) {
		if (nf)
			lint_report(c, LR_HDR_NO_TABLE, hdr_file + 2, ".eh_frame_hdr has %s (fde_count_enc 0x%02x, "
			       "table_enc 0x%02x) for %zu FDE%s", h.has_table ? "an empty table" : "no search table",
			       h.fde_count_enc, h.table_enc, nf, nf == 1 ? "" : "s");
		return;
	}
	if (!have_table)
		return;
	if (h.fde_count != nf) {
		lint_report(c, LR_HDR_TABLE, hdr_file + 8, "fde_count %" PRIu64 ", .eh_frame has %zu FDE%s", h.fde_count,
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
			lint_report(c, LR_HDR_TABLE, hdr_file + h.table_off + i * h.entry_size, "entry %zu: %s", i, ee.msg);
			return;
		}
		const struct ehf_fde *f = &t->fdes[i];
		uint64_t want_fa = ly->rt_eh + f->offset;
		if (i && loc < prev) {
			lint_report(c, LR_HDR_TABLE, hdr_file + h.table_off + i * h.entry_size, "entry %zu: initial_loc "
			       "0x%" PRIx64 " is below the previous entry's: the table is not sorted", i, loc);
			return;
		}
		if (loc != f->pc_begin || fa != want_fa) {
			lint_report(c, LR_HDR_TABLE, hdr_file + h.table_off + i * h.entry_size, "entry %zu: {initial_loc "
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
bool lint_unw_covers(struct lint_ctx *c, const struct jdr_unw *u, uint64_t addr, uint64_t size)
{
	if (u->eh_frame_hdr_size > u->unwinding_size || u->unwinding_size > u->avail)
		return false;
	struct pv_layout ly;
	lint_layout(c->prof, addr, size, u, &ly);
	struct ehf_table t;
	struct ehf_bases b = { ly.rt_eh, 0, 0, 8 };
	struct ju_err ee;
	if (ehf_parse(&t, u->data, (size_t)(u->unwinding_size - u->eh_frame_hdr_size), &b, &ee))
		return false;
	bool fits = covers_exactly(&t, addr, size);
	ehf_table_free(&t);
	return fits;
}

/* mapped_size against the data perf maps (JD049, JD050). */
static void unw_check_mapped(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_unw *u, uint64_t uoff,
			     const struct pv_layout *ly)
{
	size_t es = (size_t)(u->unwinding_size - u->eh_frame_hdr_size);
	if (u->mapped_size == 0 && es)
		lint_report(c, LR_MAPPED_ZERO, uoff + JD_UNW_MAPPED_SIZE, "UNWINDING_INFO for the CODE_LOAD at 0x%" PRIx64 " has mapped_size "
		       "0: perf maps [0x%" PRIx64 ", +0x%" PRIx64 "), its .eh_frame would be at 0x%" PRIx64, r->off,
		       ly->map_start, ly->map_len, ly->rt_eh);
	else if (u->mapped_size && u->mapped_size < u->unwinding_size)
		lint_report(c, LR_MAPPED_SMALL, uoff + JD_UNW_MAPPED_SIZE, "mapped_size %" PRIu64 " is below unwinding_size %" PRIu64
		       ": the last %" PRIu64 " bytes (the end of .eh_frame_hdr) lie outside perf's mapping",
		       u->mapped_size, u->unwinding_size, u->unwinding_size - u->mapped_size);
}

/* Header first (LLVM ORC): a header parses at the start of the data and the
 * rest frames as .eh_frame records, while perf's split does not parse.  Its
 * eh_frame_ptr is pc-relative to the header (pointing right behind it) or, as
 * LLVM 19's JITLoaderPerf writes it, an absolute address with no search table
 * (JD035).  true: reported. */
static bool unw_hdr_first(struct lint_ctx *c, const uint8_t *d, size_t us, size_t hs, uint64_t data_file)
{
	struct ehf_hdr h;
	struct ju_err ee;
	struct framing rest;
	if (ehf_parse_hdr(d, hs, 0x10000, &h, &ee))
		return false;
	frame_walk(d + hs, us - hs, &rest);
	bool pcrel = h.eh_frame_ptr == 0x10000 + hs;
	if (!pcrel && !rest.ok)
		return false;
	char how[96];
	if (pcrel)
		snprintf(how, sizeof(how), "whose eh_frame_ptr points right after it");
	else
		snprintf(how, sizeof(how), "with an absolute eh_frame_ptr 0x%" PRIx64 "%s", h.eh_frame_ptr,
			 h.has_table ? "" : " and no search table");
	lint_report(c, LR_HDR_FIRST, data_file, "the unwinding data starts with a %zu-byte .eh_frame_hdr %s, then "
		    "%zu bytes of .eh_frame records: header-first order; perf takes the first %zu bytes (the header "
		    "included) as .eh_frame and the last %zu as .eh_frame_hdr, so neither parses and the load's "
		    "jitted .so has no usable CFI", hs, how, us - hs, us - hs, hs);
	return true;
}

/* perf's split of the data into .eh_frame and .eh_frame_hdr, and the framing
 * of .eh_frame's records (JD035-JD039).  false: the data cannot be read on. */
static bool unw_check_split(struct lint_ctx *c, const struct jdr_unw *u, uint64_t uoff, const struct pv_layout *ly,
			    struct hdr_parse *hp)
{
	uint64_t data_file = uoff + JD_UNW_FIXED;
	size_t us = (size_t)u->unwinding_size, hs = (size_t)u->eh_frame_hdr_size, es = us - hs;
	const uint8_t *d = u->data;
	struct ehf_hdr h;
	struct ju_err ee;
	bool perf_hdr_ok = hs && !ehf_parse_hdr(d + es, hs, ly->rt_hdr, &hp->h, &hp->ee);
	hp->ok = perf_hdr_ok;
	if (hs && !perf_hdr_ok && unw_hdr_first(c, d, us, hs, data_file))
		return false;
	struct framing fw;
	frame_walk(d, es, &fw);
	if (hs && (!perf_hdr_ok || !fw.ok)) {
		/* where do the records really stop, and does a header parse there? */
		struct framing whole;
		frame_walk(d, us, &whole);
		size_t w = whole.ok ? whole.end : whole.bad_off;
		if (w != es && w < us && !ehf_parse_hdr(d + w, us - w, ly->rt_eh + w, &h, &ee)) {
			lint_report(c, LR_HDR_SIZE_MISMATCH, uoff + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size %zu puts the end of .eh_frame at "
			       "+0x%zx, but its records end at +0x%zx, where a %zu-byte .eh_frame_hdr parses", hs, es, w,
			       us - w);
			return false;
		}
	}
	if (!fw.ok) {
		lint_report(c, LR_EH_FRAME_PARSE, data_file + fw.bad_off, ".eh_frame+0x%zx: record length 0x%" PRIx64
		       " runs past the end of .eh_frame (%zu bytes)", fw.bad_off, fw.bad_len, es);
		return false;
	}
	if (fw.terminated && !lint_all_zero(d + fw.end, es - fw.end))
		lint_report(c, LR_TERMINATOR_MISPLACED, data_file + fw.term_off, ".eh_frame+0x%zx: zero terminator with %zu "
		       "more bytes of .eh_frame after it", fw.term_off, es - fw.end);
	else if (!fw.terminated && es)
		lint_report(c, LR_NO_TERMINATOR, data_file + es, ".eh_frame of %zu bytes has no zero terminator", es);
	return true;
}

/* FDEs that straddle the code (JD045): the shift, and what it suggests. */
static void unw_report_coverage(struct lint_ctx *c, const struct jdr_rec *r, const struct ehf_table *t,
				uint64_t data_file)
{
	const struct jdr_load *l = &r->u.load;
	uint64_t ca = l->code_addr, ce = l->code_addr + l->code_size;
	const struct ehf_fde *f0 = &t->fdes[0];
	int64_t shift = (int64_t)(f0->pc_begin - ca);
	char hint[200] = "";
	uint64_t pad = lint_align8(l->code_size) - l->code_size;
	if (pad && shift == (int64_t)pad)
		snprintf(hint, sizeof(hint), ": %" PRId64 " bytes = ALIGN_8(code_size) - code_size, "
			 ".eh_frame was encoded as if it sat right after the code", shift);
	else if ((c->prof == PV_5X_0X40 || c->prof == PV_510) && shift == 0x40)
		snprintf(hint, sizeof(hint), ": the 0x40 of the %s profile", pv_profile_name(c->prof));
	lint_report(c, LR_FDE_COVERAGE, data_file + f0->offset, "FDE at .eh_frame+0x%" PRIx64 " covers "
	       "[0x%" PRIx64 ", 0x%" PRIx64 ") in perf's layout, the code of the CODE_LOAD at 0x%"
	       PRIx64 " is [0x%" PRIx64 ", 0x%" PRIx64 ") (shifted %+" PRId64 "%s)", f0->offset,
	       f0->pc_begin, f0->pc_end, r->off, ca, ce, shift, hint);
}

/* Code bytes no FDE covers (JD046), then the code check of every FDE. */
static void unw_check_gaps(struct lint_ctx *c, const struct jdr_rec *r, const struct ehf_table *t,
			   uint64_t data_file)
{
	const struct jdr_load *l = &r->u.load;
	uint64_t ca = l->code_addr, ce = l->code_addr + l->code_size;
	uint64_t at = ca, gap_at = 0, gaps = 0;
	struct lint_where w = { .load = r->off };
	for (size_t i = 0; i <= t->nfdes; i++) {
		const struct ehf_fde *f = i < t->nfdes ? &t->fdes[i] : NULL;
		if (f && (f->pc_end <= ca || f->pc_begin >= ce))
			continue;
		uint64_t next = f ? f->pc_begin : ce;   /* past the last FDE: the code's end */
		if (next > at) {
			if (!gaps)
				gap_at = at;
			gaps += next - at;
			if (w.npc < LINT_MAX_PCS) {
				w.pc[w.npc] = at - ca;
				w.span[w.npc++] = next - at;
			}
		}
		if (f && f->pc_end > at)
			at = f->pc_end;
	}
	/* the finding is about those bytes: a lost frame elsewhere in the load
	 * is not explained by it (replay --lint) */
	if (gaps)
		lint_report_at(c, LR_FDE_GAP, data_file + t->fdes[0].offset, &w, "%" PRIu64 " of the %" PRIu64
			       " code bytes of the CODE_LOAD at 0x%" PRIx64 " have no FDE, the first at +0x%" PRIx64,
			       gaps, l->code_size, r->off, gap_at - ca);
	for (size_t i = 0; i < t->nfdes && l->code; i++)
		lint_code_check(c, r->off, l->code, ca, l->code_size, &t->fdes[i], data_file + t->fdes[i].offset);
}

/* The FDEs of perf's .eh_frame against the load's code (JD045-JD048, JD054). */
static void unw_check_fdes(struct lint_ctx *c, const struct jdr_rec *r, const struct ehf_table *t,
			   uint64_t data_file)
{
	const struct jdr_load *l = &r->u.load;
	uint64_t ca = l->code_addr, ce = l->code_addr + l->code_size;
	for (size_t i = 0; i < t->nfdes; i++) {
		const struct ehf_fde *f = &t->fdes[i];
		if ((f->cie->fde_enc & 0x70) == DW_EH_PE_absptr) {
			lint_report(c, LR_FDE_ABSOLUTE, data_file + f->offset, "FDE at .eh_frame+0x%" PRIx64 " has an "
			       "absolute pc_begin 0x%" PRIx64 " (CIE encoding 0x%02x): %s", f->offset, f->pc_begin,
			       f->cie->fde_enc, f->pc_begin == ca ? "the process address, which libdw (ELF "
			       "addresses + bias) will not find" : "not the process address of the code, which "
			       "libunwind looks up");
			break;
		}
	}
	if (!t->nfdes) {
		lint_report(c, LR_NO_FDE, data_file, ".eh_frame for the CODE_LOAD at 0x%" PRIx64 " (%s) holds %zu CIE%s "
		       "and no FDE", r->off, l->name ? l->name : "?", t->ncies, t->ncies == 1 ? "" : "s");
		const struct uw_arch *a = uw_arch_by_mach((uint16_t)c->mach);
		if (a && a->libdw_no_fp)
			lint_report(c, LR_NO_FDE_NO_FALLBACK, data_file, "the CODE_LOAD at 0x%" PRIx64 " (%s) has no FDE, "
				    "and %s perf's libdw has no frame-pointer fallback: its chains end at the pc",
				    r->off, l->name ? l->name : "?", a->facts->name);
		return;
	}
	bool straddle = false, any = false, reported_outside = false;
	for (size_t i = 0; i < t->nfdes; i++) {
		const struct ehf_fde *f = &t->fdes[i];
		if (f->pc_end <= ca || f->pc_begin >= ce) {
			if (!reported_outside) {
				reported_outside = true;
				lint_report(c, LR_FDE_OUTSIDE, data_file + f->offset, "FDE at .eh_frame+0x%"
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
	if (straddle || !any)
		unw_report_coverage(c, r, t, data_file);
	else
		unw_check_gaps(c, r, t, data_file);
}

/* The unwinding info perf attaches to a load. */
static void check_unwind(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_unw *u,
			 uint64_t uoff, const struct pv_layout *ly)
{
	const struct jdr_load *l = &r->u.load;
	if (c->unw_bad || !u->unwinding_size)
		return;
	uint64_t data_file = uoff + JD_UNW_FIXED;
	size_t hs = (size_t)u->eh_frame_hdr_size, es = (size_t)u->unwinding_size - hs;
	unw_check_mapped(c, r, u, uoff, ly);
	struct hdr_parse hp;
	if (!unw_check_split(c, u, uoff, ly, &hp))
		return;
	struct ehf_table t;
	struct ehf_bases b = { ly->rt_eh, 0, 0, 8 };
	struct ju_err ee;
	bool have_table = false;
	if (ehf_parse(&t, u->data, es, &b, &ee)) {
		lint_report(c, LR_EH_FRAME_PARSE, data_file + ee.offset, ".eh_frame+0x%" PRIx64 ": %s", ee.offset, ee.msg);
	} else if (c->unw_after_load && !covers_exactly(&t, l->code_addr, l->code_size) &&
		   lint_unw_covers(c, u, c->unw_prev_addr, c->unw_prev_size)) {
		/* it describes the load before it, not this one */
		lint_report_at(c, LR_UNWIND_AFTER_LOAD, uoff, &(struct lint_where){ .load = c->unw_prev_off, .whole = true },
		       "UNWINDING_INFO follows the CODE_LOAD at 0x%" PRIx64 " it describes; perf gives it to the next one, the CODE_LOAD at 0x%" PRIx64 " ('%.60s')",
		       c->unw_prev_off, r->off, l->name);
		ehf_table_free(&t);
		return;
	} else {
		have_table = true;
		unw_check_fdes(c, r, &t, data_file);
	}
	if (hs)
		check_hdr(c, uoff, u->data + es, hs, ly, &t, have_table, &hp);
	if (have_table)
		ehf_table_free(&t);
}

/* Every finding about a load's unwinding data concerns all of its code
 * (the code check names its instructions itself). */
void lint_check_unwind(struct lint_ctx *c, const struct jdr_rec *r, const struct jdr_unw *u,
		       uint64_t uoff, const struct pv_layout *ly)
{
	c->scope_set = true;
	c->scope_load = r->off;
	check_unwind(c, r, u, uoff, ly);
	c->scope_set = false;
}
