/* jitunwind dump --json: one object per record, schema 1. */
#include <inttypes.h>
#include <stdio.h>

#include "harness/report/dump.h"
#include "harness/case/jsonw.h"

static void nothing(struct dump *d)
{
}

static void close_obj(struct dump *d)
{
	fputs(" }", d->f);
}

static void close_list_obj(struct dump *d)
{
	fputs("] }", d->f);
}

static void begin(struct dump *d, const char *name, size_t size, const struct jdr_hdr *h)
{
	fprintf(d->f, "{ \"tool\": \"jitunwind\", \"command\": \"dump\", \"schema\": 1, \"file\": ");
	hx_jsonw_str(d->f, name, HX_JSONW_LATIN1);
	fprintf(d->f, ", \"size\": %zu, \"profile\": \"%s\",\n  \"header\": { \"offset\": 0, \"magic\": \"0x%08x\", "
		"\"version\": %u, \"total_size\": %u, \"elf_mach\": %u, \"arch\": \"%s\", \"pad1\": %u, \"pid\": %u, "
		"\"timestamp\": %" PRIu64 ", \"flags\": \"0x%" PRIx64 "\" },\n  \"records\": [", size,
		pv_profile_name(d->prof), h->magic, h->version, h->total_size, h->elf_mach, hx_dump_arch(h->elf_mach),
		h->pad1, h->pid, h->timestamp, h->flags);
}

static void end(struct dump *d, size_t size, uint64_t nrecs, const struct lint_finding *stop)
{
	fprintf(d->f, "\n  ],\n  \"end\": { \"offset\": %zu, \"error\": ", stop ? (size_t)stop->offset : size);
	if (stop) {
		fprintf(d->f, "{ \"id\": \"%s\", \"message\": ", stop->rule->id);
		hx_jsonw_str(d->f, stop->msg, HX_JSONW_LATIN1);
		fputs(" }", d->f);
	} else {
		fputs("null", d->f);
	}
	fputs(" } }\n", d->f);
}

static void rec_begin(struct dump *d, const struct jdr_rec *r, bool first)
{
	fprintf(d->f, "%s\n    { \"offset\": %" PRIu64 ", \"id\": %u, \"type\": \"%s\", \"total_size\": %u, "
		"\"timestamp\": %" PRIu64 ", \"short\": %s", first ? "" : ",", r->off, r->id, hx_dump_rec_type(r->id),
		r->size, r->timestamp, r->short_fixed ? "true" : "false");
}

static void load(struct dump *d, const struct jdr_load *l)
{
	fprintf(d->f, ", \"pid\": %u, \"tid\": %u, \"vma\": \"0x%" PRIx64 "\", \"code_addr\": \"0x%" PRIx64
		"\", \"code_size\": %" PRIu64 ", \"code_index\": %" PRIu64 ", \"name\": ", l->pid, l->tid, l->vma,
		l->code_addr, l->code_size, l->code_index);
	if (l->name)
		hx_jsonw_strn(d->f, l->name, l->name_len, HX_JSONW_LATIN1);
	else
		fputs("null", d->f);
}

static void code_begin(struct dump *d, const struct jdr_load *l, uint64_t file_off)
{
	fprintf(d->f, ", \"code\": { \"file_offset\": %" PRIu64 ", \"size\": %" PRIu64 ", \"bytes\": \"", file_off,
		l->code_size);
	hx_jsonw_hex(d->f, l->code, (size_t)l->code_size);
	fputs("\", \"insns\": [", d->f);
}

static void insn(struct dump *d, const struct jdr_load *l, uint64_t a0, const uint8_t *at, size_t len,
		 const char *text, bool first)
{
	fprintf(d->f, "%s{ \"offset\": %" PRIu64 ", \"addr\": \"0x%" PRIx64 "\", \"bytes\": \"", first ? "" : ", ",
		a0 - l->code_addr, a0);
	hx_jsonw_hex(d->f, at, len);
	fputs("\", \"text\": ", d->f);
	hx_jsonw_str(d->f, text, HX_JSONW_LATIN1);
	fputs(" }", d->f);
}

static void code_missing(struct dump *d)
{
	fputs(", \"code\": null", d->f);
}

static void debug_ref(struct dump *d, uint64_t goff, const struct jdr_debug *g)
{
	fprintf(d->f, ", \"debug_info\": { \"record\": %" PRIu64 ", \"code_addr\": \"0x%" PRIx64 "\" }", goff,
		g->code_addr);
}

static void unwind_begin(struct dump *d, uint64_t uoff, bool again, bool sizes_ok)
{
	fprintf(d->f, ", \"unwinding\": { \"record\": %" PRIu64 ", \"reused\": %s, \"sizes_ok\": %s", uoff,
		again ? "true" : "false", sizes_ok ? "true" : "false");
	if (sizes_ok)
		fputs(", \"eh_frame\": ", d->f);
}

static void unwind_hdr(struct dump *d)
{
	fputs(", \"eh_frame_hdr\": ", d->f);
}

static void view(struct dump *d, const struct jdr_load *l, const struct pv_layout *ly)
{
	fprintf(d->f, ", \"perf\": { \"profile\": \"%s\", \"so\": \"jitted-%u-%" PRIu64 ".so\", \"text\": { \"addr\": \"0x%"
		PRIx64 "\", \"size\": %" PRIu64 " }", pv_profile_name(d->prof), l->pid, l->code_index, ly->text_addr,
		ly->text_size);
	if (ly->has_unwind)
		fprintf(d->f, ", \"eh_frame\": { \"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 " }, \"eh_frame_hdr\":"
			" { \"addr\": \"0x%" PRIx64 "\", \"size\": %" PRIu64 " }", ly->eh_addr, ly->eh_size, ly->hdr_addr,
			ly->hdr_size);
	fprintf(d->f, ", \"pt_load\": { \"offset\": \"0x%" PRIx64 "\", \"vaddr\": \"0x%" PRIx64 "\", \"size\": %"
		PRIu64 " }, \"mmap2\": { \"start\": \"0x%" PRIx64 "\", \"len\": \"0x%" PRIx64 "\", \"pgoff\": \"0x%"
		PRIx64 "\" }, \"runtime\": { \"text\": \"0x%" PRIx64 "\"", ly->load_offset, ly->load_vaddr,
		ly->load_size, ly->map_start, ly->map_len, ly->map_pgoff, ly->rt_text);
	if (ly->has_unwind)
		fprintf(d->f, ", \"eh_frame\": \"0x%" PRIx64 "\", \"eh_frame_hdr\": \"0x%" PRIx64 "\"", ly->rt_eh,
			ly->rt_hdr);
	fputs(" } }", d->f);
}

static void move(struct dump *d, const struct jdr_move *m, uint64_t pending_mapped)
{
	fprintf(d->f, ", \"pid\": %u, \"tid\": %u, \"vma\": \"0x%" PRIx64 "\", \"old_code_addr\": \"0x%" PRIx64
		"\", \"new_code_addr\": \"0x%" PRIx64 "\", \"code_size\": %" PRIu64 ", \"code_index\": %" PRIu64,
		m->pid, m->tid, m->vma, m->old_code_addr, m->new_code_addr, m->code_size, m->code_index);
	struct jd_move jm = { .new_code_addr = m->new_code_addr, .code_size = m->code_size,
			      .mapped_size = pending_mapped };
	uint64_t start, len, pgoff;
	pv_layout_move(d->prof, &jm, &start, &len, &pgoff);
	fprintf(d->f, ", \"perf\": { \"profile\": \"%s\", \"so\": \"jitted-%u-%" PRIu64 ".so\", \"mmap2\": { \"start\": \"0x%"
		PRIx64 "\", \"len\": \"0x%" PRIx64 "\", \"pgoff\": \"0x%" PRIx64 "\" } }", pv_profile_name(d->prof), m->pid,
		m->code_index, start, len, pgoff);
}

static void debug_begin(struct dump *d, const struct jdr_debug *g)
{
	fprintf(d->f, ", \"code_addr\": \"0x%" PRIx64 "\", \"nr_entry\": %" PRIu64 ", \"entries\": [", g->code_addr,
		g->nr_entry);
}

static void debug_entry(struct dump *d, uint64_t i, uint64_t a, int32_t line, int32_t disc, const char *file,
			size_t nl)
{
	fprintf(d->f, "%s{ \"addr\": \"0x%" PRIx64 "\", \"line\": %d, \"discrim\": %d, \"file\": ", i ? ", " : "",
		a, line, disc);
	hx_jsonw_strn(d->f, file, nl, HX_JSONW_LATIN1);
	fputs(" }", d->f);
}

static void debug_end(struct dump *d, uint64_t fit, uint64_t nr_entry)
{
	fputs("]", d->f);
}

static void unw_record(struct dump *d, const struct jdr_unw *u)
{
	fprintf(d->f, ", \"unwinding_size\": %" PRIu64 ", \"eh_frame_hdr_size\": %" PRIu64 ", \"mapped_size\": %"
		PRIu64 ", \"data_size\": %zu", u->unwinding_size, u->eh_frame_hdr_size, u->mapped_size, u->avail);
}

static void section_begin(struct dump *d, uint64_t file_off, uint64_t addr, size_t n)
{
	fprintf(d->f, "{ \"file_offset\": %" PRIu64 ", \"addr\": \"0x%" PRIx64 "\", \"size\": %zu", file_off, addr, n);
}

static void section_error(struct dump *d, const uint8_t *p, size_t n, const struct ju_err *ee)
{
	fprintf(d->f, ", \"error\": { \"offset\": %" PRIu64 ", \"message\": ", ee->offset);
	hx_jsonw_str(d->f, ee->msg, HX_JSONW_LATIN1);
	fputs(" }, \"bytes\": \"", d->f);
	hx_jsonw_hex(d->f, p, n);
	fputs("\" }", d->f);
}

static void eh_table(struct dump *d, const struct ehf_table *t)
{
	fprintf(d->f, ", \"terminated\": %s, \"cies\": [", t->terminated ? "true" : "false");
}

static void cie_begin(struct dump *d, const struct ehf_cie *c, size_t i)
{
	fprintf(d->f, "%s\n          { \"offset\": %" PRIu64 ", \"version\": %u, \"augmentation\": ", i ? "," : "",
		c->offset, c->version);
	hx_jsonw_str(d->f, c->aug, HX_JSONW_LATIN1);
	fprintf(d->f, ", \"code_align\": %" PRIu64 ", \"data_align\": %" PRId64 ", \"ra\": %u, \"fde_enc\": "
		"\"0x%02x\", \"lsda_enc\": \"0x%02x\", \"signal\": %s, \"program\": ", c->code_align,
		c->data_align, c->ra_reg, c->fde_enc, c->lsda_enc, c->signal ? "true" : "false");
}

static void fdes_begin(struct dump *d)
{
	fputs("], \"fdes\": [", d->f);
}

static void fde_begin(struct dump *d, const struct ehf_fde *fd, size_t i)
{
	fprintf(d->f, "%s\n          { \"offset\": %" PRIu64 ", \"cie\": %" PRIu64 ", \"pc_begin\": \"0x%" PRIx64
		"\", \"pc_end\": \"0x%" PRIx64 "\", \"program\": ", i ? "," : "", fd->offset, fd->cie->offset,
		fd->pc_begin, fd->pc_end);
}

static void fde_rows(struct dump *d)
{
	fputs(", \"rows\": [", d->f);
}

static void row(struct dump *d, const struct ehf_row *r, const char *text, bool first)
{
	fprintf(d->f, "%s{ \"loc\": \"0x%" PRIx64 "\", \"end\": \"0x%" PRIx64 "\", \"row\": ", first ? "" : ", ",
		r->loc, r->end);
	hx_jsonw_str(d->f, text, HX_JSONW_LATIN1);
	fputs(" }", d->f);
}

static void rows_error(struct dump *d, const char *msg, bool first)
{
	fprintf(d->f, "%s{ \"error\": ", first ? "" : ", ");
	hx_jsonw_str(d->f, msg, HX_JSONW_LATIN1);
	fputs(" }", d->f);
}

static void eh_end(struct dump *d, bool terminated)
{
	fputs("] }", d->f);
}

static void prog_begin(struct dump *d)
{
	fputs("[", d->f);
}

static void prog_insn(struct dump *d, const char *ind, uint64_t off, const uint8_t *bytes, size_t len,
		      const char *dw, const char *cf, const char *note, bool first)
{
	fprintf(d->f, "%s{ \"offset\": %" PRIu64 ", \"bytes\": \"", first ? "" : ", ", off);
	hx_jsonw_hex(d->f, bytes, len);
	fputs("\", \"dwarf\": ", d->f);
	hx_jsonw_str(d->f, dw, HX_JSONW_LATIN1);
	fputs(", \"cfi\": ", d->f);
	hx_jsonw_str(d->f, cf[0] ? cf : NULL, HX_JSONW_LATIN1);
	fputs(" }", d->f);
}

static void prog_error(struct dump *d, const char *ind, uint64_t off, const char *msg, bool first)
{
	fprintf(d->f, "%s{ \"offset\": %" PRIu64 ", \"error\": ", first ? "" : ", ", off);
	hx_jsonw_str(d->f, msg, HX_JSONW_LATIN1);
	fputs(" }", d->f);
}

static void prog_end(struct dump *d)
{
	fputs("]", d->f);
}

static void hdr_fields(struct dump *d, const struct ehf_hdr *h)
{
	fprintf(d->f, ", \"version\": %u, \"eh_frame_ptr_enc\": \"0x%02x\", \"eh_frame_ptr\": \"0x%" PRIx64
		"\", \"fde_count_enc\": \"0x%02x\", \"fde_count\": %" PRIu64 ", \"table_enc\": \"0x%02x\", \"table\": [",
		h->version, h->eh_frame_ptr_enc, h->eh_frame_ptr, h->fde_count_enc, h->fde_count, h->table_enc);
}

static void hdr_entry(struct dump *d, uint64_t i, uint64_t loc, uint64_t fa)
{
	fprintf(d->f, "%s{ \"initial_loc\": \"0x%" PRIx64 "\", \"fde\": \"0x%" PRIx64 "\" }", i ? ", " : "", loc, fa);
}

const struct dump_emitter hx_dump_json = {
	.begin = begin, .end = end, .rec_begin = rec_begin, .rec_end = close_obj,
	.load = load, .code_begin = code_begin, .insn = insn, .code_end = close_list_obj,
	.code_missing = code_missing, .debug_ref = debug_ref, .unwind_begin = unwind_begin,
	.unwind_hdr = unwind_hdr, .unwind_end = close_obj, .unwind_none = nothing, .view = view,
	.move = move, .debug_begin = debug_begin, .debug_entry = debug_entry, .debug_end = debug_end,
	.unw_record = unw_record,
	.eh_begin = section_begin, .eh_error = section_error, .eh_table = eh_table, .cie_begin = cie_begin,
	.cie_end = close_obj, .fdes_begin = fdes_begin, .fde_begin = fde_begin, .fde_rows = fde_rows, .row = row,
	.rows_error = rows_error, .fde_end = close_list_obj, .eh_end = eh_end,
	.prog_begin = prog_begin, .prog_insn = prog_insn, .prog_error = prog_error, .prog_end = prog_end,
	.hdr_begin = section_begin, .hdr_error = section_error, .hdr_fields = hdr_fields, .hdr_entry = hdr_entry,
	.hdr_end = close_list_obj,
};
