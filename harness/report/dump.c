/* jitunwind dump: every record of a jitdump as perf reads it (the one walk,
 * jdwalk.c), with the code disassembled (capstone), .eh_frame and
 * .eh_frame_hdr decoded and perf's view of each load (pv_layout).  This file
 * is the walk: what is shown and in what order; dump_text.c and dump_json.c
 * write it; the `dump` command (harness/cli/dumpcmd.c) parses its options. */
#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/report/dump.h"
#include "harness/case/say.h"
#include "unwinders/uwarch.h"
#include "unwinders/model/perfview.h"
#include <stddef.h>

const char *hx_dump_rec_type(uint32_t id)
{
	static const char *const n[] = { "CODE_LOAD", "CODE_MOVE", "CODE_DEBUG_INFO", "CODE_CLOSE",
					 "CODE_UNWINDING_INFO" };
	return id < 5 ? n[id] : "UNKNOWN";
}

/* elf_mach 0 is read as the host's, as perf reads it (genelf writes the
 * machine perf was built for) */
static uint32_t dump_mach(uint32_t elf_mach)
{
	const struct uw_arch *host = uw_arch_host();
	return elf_mach || !host ? elf_mach : host->facts->elf_mach;
}

const char *hx_dump_arch(uint32_t mach)
{
	const char *n = uw_mach_name(dump_mach(mach));
	return n ? n : "unknown";
}

/* DWARF register name as GNU as writes it */
static const char *dwreg(uint32_t mach, unsigned r, char *buf, size_t n, bool pct)
{
	return uw_dw_name(uw_arch_by_mach(mach <= UINT16_MAX ? (uint16_t)mach : 0), r, pct, buf, n);
}

/* ".cfi_escape op[, reg], len, bytes" from the "[xx yy ...]" of an expression
 * (register and length below 128 are one ULEB byte each). */
static void escape(char *out, size_t n, unsigned op, int reg, const char *h)
{
	size_t len = 0, o;
	if (!h)
		return;
	for (const char *q = h + 1; *q && *q != ']'; q++)
		if (*q != ' ' && q[-1] != ' ' && q[-1] != '[')
			continue;
		else if (*q != ' ')
			len++;
	if (reg >= 0)
		o = (size_t)snprintf(out, n, ".cfi_escape 0x%02x, 0x%02x, 0x%02zx", op, reg & 0x7f, len & 0x7f);
	else
		o = (size_t)snprintf(out, n, ".cfi_escape 0x%02x, 0x%02zx", op, len & 0x7f);
	for (const char *q = h + 1; *q && *q != ']' && o + 8 < n; q++)
		if (*q != ' ' && (q[-1] == ' ' || q[-1] == '['))
			o += (size_t)snprintf(out + o, n - o, ", 0x%c%c", q[0], q[1] && q[1] != ']' ? q[1] : '0');
}

/* ".cfi_*" text for one DW_CFA_* line from ehf_disasm_insn (empty for
 * advances and nops, which are labels or nothing in assembly). */
static void cfi_text(const struct dump *d, const char *dw, char *out, size_t n)
{
	unsigned a, b;
	long long v;
	int k = 0;
	char ra[24], rb[24];
	out[0] = 0;
	if (sscanf(dw, "DW_CFA_def_cfa r%u%lld%n", &a, &v, &k) == 2 && !dw[k])
		snprintf(out, n, ".cfi_def_cfa %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_def_cfa_sf r%u%lld%n", &a, &v, &k) == 2 && !dw[k])
		snprintf(out, n, ".cfi_def_cfa %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_def_cfa_offset%*[_sf] %lld", &v) == 1 ||
		 sscanf(dw, "DW_CFA_def_cfa_offset %lld", &v) == 1)
		snprintf(out, n, ".cfi_def_cfa_offset %lld", v);
	else if (sscanf(dw, "DW_CFA_def_cfa_register r%u", &a) == 1)
		snprintf(out, n, ".cfi_def_cfa_register %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (sscanf(dw, "DW_CFA_%*[a-z_GNU] r%u at cfa%lld", &a, &v) == 2)
		snprintf(out, n, ".cfi_offset %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_%*[a-z_] r%u is cfa%lld", &a, &v) == 2)
		snprintf(out, n, ".cfi_val_offset %s, %lld", dwreg(d->mach, a, ra, sizeof(ra), true), v);
	else if (sscanf(dw, "DW_CFA_register r%u in r%u", &a, &b) == 2)
		snprintf(out, n, ".cfi_register %s, %s", dwreg(d->mach, a, ra, sizeof(ra), true),
			 dwreg(d->mach, b, rb, sizeof(rb), true));
	else if (sscanf(dw, "DW_CFA_restore%*[_extended] r%u", &a) == 1 || sscanf(dw, "DW_CFA_restore r%u", &a) == 1)
		snprintf(out, n, ".cfi_restore %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (sscanf(dw, "DW_CFA_undefined r%u", &a) == 1)
		snprintf(out, n, ".cfi_undefined %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (sscanf(dw, "DW_CFA_same_value r%u", &a) == 1)
		snprintf(out, n, ".cfi_same_value %s", dwreg(d->mach, a, ra, sizeof(ra), true));
	else if (!strcmp(dw, "DW_CFA_remember_state"))
		snprintf(out, n, ".cfi_remember_state");
	else if (!strcmp(dw, "DW_CFA_restore_state"))
		snprintf(out, n, ".cfi_restore_state");
	else if (!strcmp(dw, "DW_CFA_AARCH64_negate_ra_state"))
		snprintf(out, n, ".cfi_negate_ra_state");
	else if (!strncmp(dw, "DW_CFA_def_cfa_expression [", 27))
		escape(out, n, 0x0f, -1, strchr(dw, '['));
	else if (sscanf(dw, "DW_CFA_expression r%u [", &a) == 1)
		escape(out, n, 0x10, (int)a, strchr(dw, '['));
	else if (sscanf(dw, "DW_CFA_val_expression r%u [", &a) == 1)
		escape(out, n, 0x16, (int)a, strchr(dw, '['));
	else if (sscanf(dw, "DW_CFA_GNU_args_size %lld", &v) == 1)
		snprintf(out, n, ".cfi_escape 0x2e, 0x%02llx", v & 0x7f);
}

/* One CFA program: each instruction's offset, DW_CFA text and .cfi text. */
static void dump_program(struct dump *d, const uint8_t *insns, size_t len, uint64_t off,
			 const struct ehf_cie *cie, uint64_t loc, const char *ind)
{
	size_t pos = 0;
	bool first = true;
	d->em->prog_begin(d);
	for (unsigned k = 0; pos < len && k < 100000; k++) {
		size_t at = pos;
		char dw[480], cf[480];
		struct ju_err ee;
		if (ehf_disasm_insn(insns, len, &pos, cie, dw, sizeof(dw), &ee)) {
			d->em->prog_error(d, ind, off + at, ee.msg, first);
			break;
		}
		cfi_text(d, dw, cf, sizeof(cf));
		uint64_t delta;
		char note[64] = "";
		if (sscanf(dw, "DW_CFA_advance_loc%*[124] %" SCNu64, &delta) == 1 ||
		    sscanf(dw, "DW_CFA_advance_loc %" SCNu64, &delta) == 1) {
			loc += delta;
			snprintf(note, sizeof(note), "-> 0x%" PRIx64, loc);
		}
		d->em->prog_insn(d, ind, off + at, insns + at, pos - at, dw, cf, note, first);
		first = false;
	}
	d->em->prog_end(d);
}

static const char *dump_name(const void *ctx, unsigned dw, char *tmp, size_t n)
{
	const struct dump *d = ctx;
	return dwreg(d->mach, dw, tmp, n, false);
}

/* A row as text: "cfa=rsp+8 rip=cfa-8" (registers with a rule the program set). */
static void row_text(const struct dump *d, const struct ehf_row *row, char *out, size_t n)
{
	const struct ehf_row_fmt f = { .cfa = "cfa", .cfa_undefined = "cfa=undefined", .undef = "undef",
				       .name = dump_name, .ctx = d, .nregs = EHF_NREGS, .val_paren = true,
				       .expr_len = true, .same = true, .ra_signed = true };
	ehf_row_text(row, &f, out, n);
}

struct rows_arg {
	struct dump *d;
	bool first;
};

static int print_row(const struct ehf_row *row, void *arg)
{
	struct rows_arg *a = arg;
	char t[1024];
	row_text(a->d, row, t, sizeof(t));
	a->d->em->row(a->d, row, t, a->first);
	a->first = false;
	return 0;
}

static void dump_eh_frame(struct dump *d, const uint8_t *p, size_t n, uint64_t file_off, uint64_t addr)
{
	const struct dump_emitter *em = d->em;
	struct ehf_table t;
	struct ehf_bases b = { addr, 0, 0, 8 };
	struct ju_err ee;
	em->eh_begin(d, file_off, addr, n);
	if (ehf_parse(&t, p, n, &b, &ee)) {
		em->eh_error(d, p, n, &ee);
		return;
	}
	em->eh_table(d, &t);
	for (size_t i = 0; i < t.ncies; i++) {
		const struct ehf_cie *c = &t.cies[i];
		em->cie_begin(d, c, i);
		dump_program(d, c->insns, c->insns_len, c->insns_off, c, 0, "            ");
		em->cie_end(d);
	}
	em->fdes_begin(d);
	for (size_t i = 0; i < t.nfdes; i++) {
		const struct ehf_fde *fd = &t.fdes[i];
		em->fde_begin(d, fd, i);
		dump_program(d, fd->insns, fd->insns_len, fd->insns_off, fd->cie, fd->pc_begin, "            ");
		em->fde_rows(d);
		struct rows_arg ra = { d, true };
		if (ehf_rows(fd, print_row, &ra, &ee) < 0)
			em->rows_error(d, ee.msg, ra.first);
		em->fde_end(d);
	}
	em->eh_end(d, t.terminated);
	ehf_table_free(&t);
}

static void dump_hdr(struct dump *d, const uint8_t *p, size_t n, uint64_t file_off, uint64_t addr)
{
	struct ehf_hdr h;
	struct ju_err ee;
	d->em->hdr_begin(d, file_off, addr, n);
	if (ehf_parse_hdr(p, n, addr, &h, &ee)) {
		d->em->hdr_error(d, p, n, &ee);
		return;
	}
	d->em->hdr_fields(d, &h);
	struct ehf_bases b = { addr, 0, addr, 8 };
	for (uint64_t i = 0; h.has_table && i < h.fde_count && i < 100000; i++) {
		size_t pos = (size_t)(h.table_off + i * h.entry_size);
		uint64_t loc, fa;
		if (ehf_read_encoded(p, n, &pos, h.table_enc, &b, &loc, &ee) ||
		    ehf_read_encoded(p, n, &pos, h.table_enc, &b, &fa, &ee))
			break;
		d->em->hdr_entry(d, i, loc, fa);
	}
	d->em->hdr_end(d);
}

static void dump_code(struct dump *d, const struct jdr_load *l, uint64_t file_off)
{
	d->em->code_begin(d, l, file_off);
	const uint8_t *p = l->code;
	size_t left = (size_t)l->code_size;
	uint64_t addr = l->code_addr;
	cs_insn *in = d->cs_ok ? cs_malloc(d->cs) : NULL;
	bool first = true;
	for (unsigned k = 0; left && k < (1u << 22); k++) {
		const uint8_t *at = p;
		uint64_t a0 = addr;
		char text[256];
		size_t len;
		if (in && cs_disasm_iter(d->cs, &p, &left, &addr, in)) {
			snprintf(text, sizeof(text), "%s%s%s", in->mnemonic, in->op_str[0] ? " " : "", in->op_str);
			len = in->size;
		} else {
			snprintf(text, sizeof(text), ".byte 0x%02x", *p);
			len = 1;
			p++;
			left--;
			addr++;
		}
		d->em->insn(d, l, a0, at, len, text, first);
		first = false;
	}
	if (in)
		cs_free(in, 1);
	d->em->code_end(d);
}

static void dump_unwind(struct dump *d, const struct jdr_unw *u, uint64_t uoff, bool again,
			const struct pv_layout *ly)
{
	uint64_t data_off = uoff + JD_UNW_FIXED;
	bool sizes_ok = u->unwinding_size <= u->avail && u->eh_frame_hdr_size <= u->unwinding_size;
	d->em->unwind_begin(d, uoff, again, sizes_ok);
	if (sizes_ok) {
		dump_eh_frame(d, u->data, (size_t)ly->eh_size, data_off, ly->rt_eh);
		if (ly->hdr_size) {
			d->em->unwind_hdr(d);
			dump_hdr(d, u->data + ly->eh_size, (size_t)ly->hdr_size, data_off + ly->eh_size, ly->rt_hdr);
		}
	}
	d->em->unwind_end(d);
}

/* entries: {u64 addr, i32 lineno, i32 discrim, name\0}, each at least 17 bytes */
static void dump_debug(struct dump *d, const struct jdr_debug *g)
{
	size_t pos = 0;
	uint64_t i = 0;
	d->em->debug_begin(d, g);
	for (; i < g->nr_entry && i < 1000000 && g->len - pos >= 17; i++) {
		const uint8_t *e = g->entries + pos;
		const uint8_t *nul = memchr(e + JD_DEBUG_ENTRY_NAME, 0, g->len - pos - JD_DEBUG_ENTRY_NAME);
		if (!nul)
			break;
		uint64_t a;
		int32_t line, disc;
		memcpy(&a, e, 8);
		memcpy(&line, e + 8, 4);
		memcpy(&disc, e + 12, 4);
		d->em->debug_entry(d, i, a, line, disc, (const char *)(e + JD_DEBUG_ENTRY_NAME),
				   (size_t)(nul - (e + JD_DEBUG_ENTRY_NAME)));
		pos = (size_t)(nul - g->entries) + 1;
	}
	d->em->debug_end(d, i, g->nr_entry);
}

/* A CODE_LOAD with what perf attaches to it and perf's view of it. */
static void dump_load(struct dump *d, const struct jdr_rec *r, const struct jdr_unw *u, uint64_t uoff,
		      bool again, const struct jdr_debug *g, uint64_t goff)
{
	const struct jdr_load *l = &r->u.load;
	d->em->load(d, l);
	if (l->code && d->code)
		dump_code(d, l, (uint64_t)(l->code - d->data));
	else if (!l->code && l->name)
		d->em->code_missing(d);
	if (g)
		d->em->debug_ref(d, goff, g);
	struct pv_layout ly;
	lint_layout(d->prof, l->code_addr, l->code_size, u, &ly);
	if (u)
		dump_unwind(d, u, uoff, again, &ly);
	else
		d->em->unwind_none(d);
	d->em->view(d, l, &ly);
}

/* Does the filter select this record? */
static bool selected(const struct dump_filter *f, const struct jdr_rec *r)
{
	if (!f)
		return true;
	if (f->record_set && r->off != f->record)
		return false;
	bool load = r->id == JD_CODE_LOAD && !r->short_fixed;
	if (f->name && !(load && r->u.load.name && !fnmatch(f->name, r->u.load.name, 0)))
		return false;
	if (f->at_set) {
		uint64_t a = 0, n = 0;
		if (load) {
			a = r->u.load.code_addr;
			n = r->u.load.code_size;
		} else if (r->id == JD_CODE_MOVE && !r->short_fixed) {
			a = r->u.move.new_code_addr;
			n = r->u.move.code_size;
		} else {
			return false;
		}
		if (f->at < a || f->at - a >= n)
			return false;
	}
	return true;
}

/* first: no record shown yet; false when this one is shown */
static void dump_record(struct dump *d, const struct jdr_rec *r, struct jdr_pending *ps, bool *first)
{
	const struct jdr_unw *u;
	const struct jdr_debug *g;
	uint64_t uoff = 0, goff = 0;
	jdr_pending_step(ps, r, &u, &uoff, &g, &goff);
	/* the walk goes on over what is not shown: perf's pending info depends on it */
	if (!selected(d->filter, r))
		return;
	/* an info with eh_frame_hdr_size 0 stays for every later load */
	bool again = u && d->unw_used && d->unw_used_off == uoff;
	if (u) {
		d->unw_used = true;
		d->unw_used_off = uoff;
	}
	d->em->rec_begin(d, r, *first);
	*first = false;
	if (!r->short_fixed) {
		switch (r->id) {
		case JD_CODE_LOAD:
			dump_load(d, r, u, uoff, again, g, goff);
			break;
		case JD_CODE_MOVE:
			d->em->move(d, &r->u.move, ps->unw_set ? ps->unw.mapped_size : 0);
			break;
		case JD_CODE_DEBUG_INFO:
			dump_debug(d, &r->u.debug);
			break;
		case JD_CODE_UNWINDING_INFO:
			d->em->unw_record(d, &r->u.unw);
			break;
		default:
			break;
		}
	}
	d->em->rec_end(d);
}

int hx_dump_mem(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
		enum pv_profile prof, bool code)
{
	return hx_dump_mem_filtered(out, name, data, size, json, prof, code, NULL);
}

int hx_dump_mem_filtered(FILE *out, const char *name, const uint8_t *data, size_t size, bool json,
			 enum pv_profile prof, bool code, const struct dump_filter *filter)
{
	struct dump d = { .f = out, .em = json ? &hx_dump_json : &hx_dump_text, .prof = prof, .code = code,
			  .data = data, .filter = filter };
	struct jdr_iter it;
	struct ju_err we;
	struct lint_finding fin;
	if (jdr_init(&it, data, size, &we)) {
		lint_walk_error(&we, &fin);
		ju_say(JU_SAY_ERROR, "jitunwind dump", "%s: offset 0x%" PRIx64 ": %s", name, fin.offset, fin.msg);
		return 2;
	}
	const struct jdr_hdr *h = &it.hdr;
	d.mach = dump_mach(h->elf_mach);
	const struct uw_arch *arch = d.mach <= UINT16_MAX ? uw_arch_by_mach((uint16_t)d.mach) : NULL;
	if (code && arch && arch->has_cs && cs_open((cs_arch)arch->cs_arch, (cs_mode)arch->cs_mode, &d.cs) == CS_ERR_OK) {
		if (arch->cs_att)
			cs_option(d.cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
		d.cs_ok = true;
	}
	d.em->begin(&d, name, size, h);
	if (!h->elf_mach && arch && d.em == &hx_dump_text)
		fprintf(out, "          elf_mach 0: read as %s, this host's machine, as perf does (its jitted .so files get "
			"the machine perf was built for)\n", arch->facts->name);
	struct jdr_pending ps;
	memset(&ps, 0, sizeof(ps));
	struct jdr_rec r;
	bool first = true;
	int rc;
	while ((rc = jdr_next(&it, &r, &we)) > 0)
		dump_record(&d, &r, &ps, &first);
	if (rc < 0)
		lint_walk_error(&we, &fin);
	d.em->end(&d, size, it.nrecs, rc < 0 ? &fin : NULL);
	if (d.cs_ok)
		cs_close(&d.cs);
	return rc < 0 ? 1 : 0;
}
