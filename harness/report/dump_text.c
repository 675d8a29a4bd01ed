/* jitunwind dump's text: one line per record field group, indented blocks
 * for code, unwinding data and perf's view. */
#include <inttypes.h>
#include <stdio.h>

#include "harness/report/dump.h"
#include "harness/report/lintout.h"

#define IND "          "

static void hexdump(FILE *f, const uint8_t *p, size_t n, uint64_t off, const char *ind)
{
	for (size_t i = 0; i < n && i < 4096; i += 16) {
		fprintf(f, "%s0x%04" PRIx64 " ", ind, off + i);
		for (size_t k = i; k < i + 16 && k < n; k++)
			fprintf(f, " %02x", p[k]);
		fputc('\n', f);
	}
}

static void nothing(struct dump *d)
{
}

static void begin(struct dump *d, const char *name, size_t size, const struct jdr_hdr *h)
{
	fprintf(d->f, "%s: %zu bytes, jitdump version %u, %s, pid %u (perf profile %s)\n", name, size, h->version,
		hx_dump_arch(h->elf_mach), h->pid, pv_profile_name(d->prof));
	fprintf(d->f, "0x%06x  header: magic 0x%08x version %u total_size %u elf_mach %u pad1 %u pid %u timestamp %"
		PRIu64 " flags 0x%" PRIx64 "\n", 0, h->magic, h->version, h->total_size, h->elf_mach, h->pad1, h->pid,
		h->timestamp, h->flags);
}

static void end(struct dump *d, size_t size, uint64_t nrecs, const struct lint_finding *stop)
{
	if (stop)
		fprintf(d->f, "0x%06" PRIx64 "  stopped (%s %s): %s\n", stop->offset, stop->rule->id, stop->rule->name,
			stop->msg);
	else
		fprintf(d->f, "0x%06zx  end of file (%" PRIu64 " records)\n", size, nrecs);
}

static void rec_begin(struct dump *d, const struct jdr_rec *r, bool first)
{
	fprintf(d->f, "0x%06" PRIx64 "  %s (id %u) total_size %u timestamp %" PRIu64 "%s\n", r->off,
		hx_dump_rec_type(r->id), r->id, r->size, r->timestamp, r->short_fixed ? "  (shorter than its fixed part)" : "");
}

static void load(struct dump *d, const struct jdr_load *l)
{
	char nb[1024];
	fprintf(d->f, "        pid %u tid %u vma 0x%" PRIx64 " code_addr 0x%" PRIx64 " code_size %" PRIu64
		" code_index %" PRIu64 " name \"%s\"\n", l->pid, l->tid, l->vma, l->code_addr, l->code_size,
		l->code_index, l->name ? hx_lj_pname(l->name, l->name_len, nb, sizeof(nb)) : "(not NUL-terminated)");
}

static void code_begin(struct dump *d, const struct jdr_load *l, uint64_t file_off)
{
	fprintf(d->f, "        code: file 0x%" PRIx64 ", %" PRIu64 " bytes\n", file_off, l->code_size);
}

static void insn(struct dump *d, const struct jdr_load *l, uint64_t a0, const uint8_t *at, size_t len,
		 const char *text, bool first)
{
	char hb[64] = "";
	for (size_t i = 0; i < len && i < 15; i++)
		snprintf(hb + 3 * i, sizeof(hb) - 3 * i, "%02x ", at[i]);
	fprintf(d->f, "%s0x%" PRIx64 " +0x%-4" PRIx64 " %-30s %s\n", IND, a0, a0 - l->code_addr, hb, text);
}

static void code_missing(struct dump *d)
{
	fprintf(d->f, "        code_size does not fit after the name\n");
}

static void debug_ref(struct dump *d, uint64_t goff, const struct jdr_debug *g)
{
	fprintf(d->f, "        debug info: the DEBUG_INFO at 0x%" PRIx64 " (code_addr 0x%" PRIx64 ")\n", goff,
		g->code_addr);
}

static void unwind_begin(struct dump *d, uint64_t uoff, bool again, bool sizes_ok)
{
	fprintf(d->f, "        unwinding info: the UNWINDING_INFO at 0x%" PRIx64 "%s\n", uoff,
		again ? " (again: eh_frame_hdr_size 0 keeps it for every later load)" : "");
	if (!sizes_ok)
		fprintf(d->f, "          sizes do not fit the record: nothing decoded\n");
}

static void unwind_none(struct dump *d)
{
	fprintf(d->f, "        no unwinding info\n");
}

static void view(struct dump *d, const struct jdr_load *l, const struct pv_layout *ly)
{
	fprintf(d->f, "        perf's view (%s): jitted-%u-%" PRIu64 ".so  .text 0x%" PRIx64 " (%" PRIu64 " bytes)",
		pv_profile_name(d->prof), l->pid, l->code_index, ly->text_addr, ly->text_size);
	if (ly->has_unwind)
		fprintf(d->f, "  .eh_frame 0x%" PRIx64 " (%" PRIu64 ")  .eh_frame_hdr 0x%" PRIx64 " (%" PRIu64 ")",
			ly->eh_addr, ly->eh_size, ly->hdr_addr, ly->hdr_size);
	fprintf(d->f, "\n          PT_LOAD offset 0x%" PRIx64 " vaddr 0x%" PRIx64 " size 0x%" PRIx64 "; MMAP2 start 0x%"
		PRIx64 " len 0x%" PRIx64 " pgoff 0x%" PRIx64 " -> [0x%" PRIx64 ", 0x%" PRIx64 ")\n", ly->load_offset,
		ly->load_vaddr, ly->load_size, ly->map_start, ly->map_len, ly->map_pgoff, ly->map_start,
		ly->map_start + ly->map_len);
}

static void move(struct dump *d, const struct jdr_move *m, uint64_t pending_mapped)
{
	fprintf(d->f, "        pid %u tid %u vma 0x%" PRIx64 " old_code_addr 0x%" PRIx64 " new_code_addr 0x%" PRIx64
		" code_size %" PRIu64 " code_index %" PRIu64 "\n", m->pid, m->tid, m->vma, m->old_code_addr,
		m->new_code_addr, m->code_size, m->code_index);
	struct jd_move jm = { .new_code_addr = m->new_code_addr, .code_size = m->code_size,
			      .mapped_size = pending_mapped };
	uint64_t start, len, pgoff;
	pv_layout_move(d->prof, &jm, &start, &len, &pgoff);
	fprintf(d->f, "        perf's view (%s): jitted-%u-%" PRIu64 ".so mapped again: MMAP2 start 0x%" PRIx64
		" len 0x%" PRIx64 " pgoff 0x%" PRIx64 " -> [0x%" PRIx64 ", 0x%" PRIx64 ")%s\n", pv_profile_name(d->prof),
		m->pid, m->code_index, start, len, pgoff, start, start + len,
		pending_mapped ? "" : " (no UNWINDING_INFO pending: the map ends with the code, its unwinding data outside)");
}

static void debug_begin(struct dump *d, const struct jdr_debug *g)
{
	fprintf(d->f, "        code_addr 0x%" PRIx64 " nr_entry %" PRIu64 " (for the next CODE_LOAD)\n",
		g->code_addr, g->nr_entry);
}

static void debug_entry(struct dump *d, uint64_t i, uint64_t a, int32_t line, int32_t disc, const char *file,
			size_t nl)
{
	char nb[1024];
	fprintf(d->f, "          0x%" PRIx64 " line %d discrim %d \"%s\"\n", a, line, disc,
		hx_lj_pname(file, nl, nb, sizeof(nb)));
}

static void debug_end(struct dump *d, uint64_t fit, uint64_t nr_entry)
{
	if (fit < nr_entry)
		fprintf(d->f, "          (%" PRIu64 " of nr_entry %" PRIu64 " fit the record)\n", fit, nr_entry);
}

static void unw_record(struct dump *d, const struct jdr_unw *u)
{
	fprintf(d->f, "        unwinding_size %" PRIu64 " eh_frame_hdr_size %" PRIu64 " mapped_size %" PRIu64
		" (%zu bytes of data; applies to the next CODE_LOAD)\n", u->unwinding_size,
		u->eh_frame_hdr_size, u->mapped_size, u->avail);
}

static void eh_begin(struct dump *d, uint64_t file_off, uint64_t addr, size_t n)
{
	fprintf(d->f, "        .eh_frame: file 0x%" PRIx64 ", %zu bytes, at 0x%" PRIx64 " in perf's layout\n",
		file_off, n, addr);
}

static void eh_error(struct dump *d, const uint8_t *p, size_t n, const struct ju_err *ee)
{
	fprintf(d->f, "%serror: .eh_frame+0x%" PRIx64 ": %s\n", IND, ee->offset, ee->msg);
	hexdump(d->f, p, n, 0, IND);
}

static void eh_table(struct dump *d, const struct ehf_table *t)
{
}

static void cie_begin(struct dump *d, const struct ehf_cie *c, size_t i)
{
	fprintf(d->f, "%sCIE 0x%" PRIx64 ": version %u \"%s\" code_align %" PRIu64 " data_align %" PRId64
		" ra r%u fde_enc 0x%02x%s\n", IND, c->offset, c->version, c->aug, c->code_align,
		c->data_align, c->ra_reg, c->fde_enc, c->signal ? " signal" : "");
}

static void fde_begin(struct dump *d, const struct ehf_fde *fd, size_t i)
{
	fprintf(d->f, "%sFDE 0x%" PRIx64 ": CIE 0x%" PRIx64 " pc [0x%" PRIx64 ", 0x%" PRIx64 ")\n", IND,
		fd->offset, fd->cie->offset, fd->pc_begin, fd->pc_end);
}

static void fde_rows(struct dump *d)
{
	fprintf(d->f, "%s  rows:\n", IND);
}

static void row(struct dump *d, const struct ehf_row *r, const char *text, bool first)
{
	fprintf(d->f, "%s[0x%" PRIx64 ", 0x%" PRIx64 ")  %s\n", "              ", r->loc, r->end, text);
}

static void rows_error(struct dump *d, const char *msg, bool first)
{
	fprintf(d->f, "            error: %s\n", msg);
}

static void eh_end(struct dump *d, bool terminated)
{
	fprintf(d->f, "%s%s\n", IND, terminated ? "zero terminator" : "no zero terminator");
}

static void prog_insn(struct dump *d, const char *ind, uint64_t off, const uint8_t *bytes, size_t len,
		      const char *dw, const char *cf, const char *note, bool first)
{
	if (cf[0] || note[0])
		fprintf(d->f, "%s0x%04" PRIx64 "  %-34s %s%s\n", ind, off, dw, cf, note);
	else
		fprintf(d->f, "%s0x%04" PRIx64 "  %s\n", ind, off, dw);
}

static void prog_error(struct dump *d, const char *ind, uint64_t off, const char *msg, bool first)
{
	fprintf(d->f, "%s0x%04" PRIx64 "  error: %s\n", ind, off, msg);
}

static void hdr_begin(struct dump *d, uint64_t file_off, uint64_t addr, size_t n)
{
	fprintf(d->f, "        .eh_frame_hdr: file 0x%" PRIx64 ", %zu bytes, at 0x%" PRIx64 " in perf's layout\n",
		file_off, n, addr);
}

static void hdr_error(struct dump *d, const uint8_t *p, size_t n, const struct ju_err *ee)
{
	fprintf(d->f, "%serror: .eh_frame_hdr+0x%" PRIx64 ": %s\n", IND, ee->offset, ee->msg);
	hexdump(d->f, p, n, 0, IND);
}

static void hdr_fields(struct dump *d, const struct ehf_hdr *h)
{
	fprintf(d->f, "%sversion %u, eh_frame_ptr_enc 0x%02x -> 0x%" PRIx64 ", fde_count_enc 0x%02x -> %" PRIu64
		", table_enc 0x%02x%s\n", IND, h->version, h->eh_frame_ptr_enc, h->eh_frame_ptr, h->fde_count_enc,
		h->fde_count, h->table_enc, h->has_table ? "" : " (no table)");
}

static void hdr_entry(struct dump *d, uint64_t i, uint64_t loc, uint64_t fa)
{
	fprintf(d->f, "%s[%" PRIu64 "] initial_loc 0x%" PRIx64 " fde 0x%" PRIx64 "\n", IND, i, loc, fa);
}

const struct dump_emitter hx_dump_text = {
	.begin = begin, .end = end, .rec_begin = rec_begin, .rec_end = nothing,
	.load = load, .code_begin = code_begin, .insn = insn, .code_end = nothing, .code_missing = code_missing,
	.debug_ref = debug_ref, .unwind_begin = unwind_begin, .unwind_hdr = nothing, .unwind_end = nothing,
	.unwind_none = unwind_none, .view = view,
	.move = move, .debug_begin = debug_begin, .debug_entry = debug_entry, .debug_end = debug_end,
	.unw_record = unw_record,
	.eh_begin = eh_begin, .eh_error = eh_error, .eh_table = eh_table, .cie_begin = cie_begin,
	.cie_end = nothing, .fdes_begin = nothing, .fde_begin = fde_begin, .fde_rows = fde_rows, .row = row,
	.rows_error = rows_error, .fde_end = nothing, .eh_end = eh_end,
	.prog_begin = nothing, .prog_insn = prog_insn, .prog_error = prog_error, .prog_end = nothing,
	.hdr_begin = hdr_begin, .hdr_error = hdr_error, .hdr_fields = hdr_fields, .hdr_entry = hdr_entry,
	.hdr_end = nothing,
};
