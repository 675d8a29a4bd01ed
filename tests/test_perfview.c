/* perf's view (unwinders/model/perfview.c): the jitted ELF checked by independent
 * readers (binutils readelf, elfutils eu-readelf, libdw's CFI), per perf
 * generation; the map tree perf builds (injected MMAP2s, later maps cutting
 * earlier ones); map_ip reads and symbols; byte comparison with files real
 * `perf inject -j` wrote (tests/golden/perfview) and, where perf works here,
 * with a fresh perf record + perf inject run. */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "trampolines/tramp.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfview.h"
#include "unwinders/view.h"
#include "tests/perfview.h"

#define CODE_BASE 0x7f1234560000ull

static struct ju_err err;

static const char *const cpython_fp[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
/* 11 bytes on x86_64, 16 on arm64 + 4: .eh_frame then sits past a pad */
static const char *const cpython_nofp[] = { "alloc 8", "call_target", "free 8", "ret", "nop" };
static const struct {
	const char *const *lines;
	size_t n;
} codes[] = { { cpython_fp, 5 }, { cpython_nofp, 5 } };

static uint64_t al8(uint64_t x)
{
	return (x + 7) & ~7ull;
}

bool pvt_have_tool(const char *name)
{
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

/* Run a command and keep its stdout (stderr dropped); returns the exit status. */
int pvt_run(char *out, size_t outlen, const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	ck_assert_msg(p, "popen %s", cmd);
	size_t n = fread(out, 1, outlen - 1, p);
	out[n] = 0;
	return pclose(p);
}

/* ---- a dump written with the project's JIT side ---- */

struct fx {
	char dir[64];
	struct tr_func *f;
	struct tr_unwind u;
	struct jd_file jd;
	uint64_t addr[4];
	size_t n;
};

static void emit(struct tr_func *f, const char *const *lines, size_t n)
{
	static struct tr_op ops[128];
	ck_assert_uint_le(n, 128);
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].line = (int)i + 1;
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0, "%s: %s", lines[i], err.msg);
	}
	ck_assert_msg(tr_emit(tr_arch_host(), ops, n, f, &err) == 0, "emit: %s", err.msg);
}

/* n loads of the code in lines at CODE_BASE + k * stride (stride 0: 0x1000),
 * each with its unwinding info if unwind, then the dump read back. */
static void fx_make(struct fx *x, const char *const *lines, size_t nlines, size_t n, uint64_t stride,
		    bool unwind)
{
	memset(x, 0, sizeof(*x));
	snprintf(x->dir, sizeof(x->dir), "/tmp/jupv-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(x->dir));
	x->f = calloc(1, sizeof(*x->f));
	ck_assert_ptr_nonnull(x->f);
	emit(x->f, lines, nlines);
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	struct jdw w;
	ck_assert_int_eq(jdw_open(&w, x->dir, tr_arch_host()->facts->elf_mach), 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s", w.path);
	x->n = n;
	for (size_t k = 0; k < n; k++) {
		x->addr[k] = CODE_BASE + k * (stride ? stride : 0x1000);
		ck_assert_msg(tr_unwind_build(x->f, &o, x->addr[k], &x->u, &err) == 0, "%s", err.msg);
		if (unwind)
			ck_assert_int_eq(jdw_unwinding_info(&w, x->u.data, x->u.size, x->u.hdr_size,
							    x->u.mapped_size), 0);
		char name[16];
		snprintf(name, sizeof(name), k ? "tramp%zu" : "tramp", k + 1);
		ck_assert_int_eq(jdw_code_load(&w, name, x->addr[k], x->f->code, x->f->code_size, NULL), 0);
	}
	ck_assert_int_eq(jdw_close(&w), 0);
	struct ju_err je;
	ck_assert_msg(jd_open(&x->jd, path, &je) == 0, "0x%llx: %s", (unsigned long long)je.offset, je.msg);
	ck_assert_uint_eq(x->jd.nloads, n);
}

static void fx_free(struct fx *x)
{
	jd_close(&x->jd);
	free(x->f);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* ---- readelf -lSW, parsed ---- */

struct rsec {
	char name[32], type[16], flags[8];
	uint64_t addr, off, size, es;
	unsigned lk, inf, al;
};
struct rload {
	uint64_t off, vaddr, paddr, filesz, memsz, align;
	char flags[8];
};
struct relf {
	struct rsec s[16];
	size_t ns;
	struct rload p[4];
	size_t np;
	uint64_t entry;
};

static void readelf_ls(const char *path, struct relf *r)
{
	static char out[16384];
	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(pvt_run(out, sizeof(out), "readelf -hlSW '%s' 2>/dev/null", path), 0);
	char *save = NULL;
	for (char *line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *lb = strstr(line, "  ["), *rb = strchr(line, ']');
		unsigned long long v;
		if (sscanf(line, " Entry point address: %llx", &v) == 1)
			r->entry = v;
		if (lb && rb && rb > lb && atoi(lb + 3) > 0 && r->ns < 16) {
			char tok[12][40];
			int nt = 0;
			char *s2 = NULL;
			char copy[256];
			snprintf(copy, sizeof(copy), "%s", rb + 1);
			for (char *t = strtok_r(copy, " \t", &s2); t && nt < 12; t = strtok_r(NULL, " \t", &s2))
				snprintf(tok[nt++], sizeof(tok[0]), "%s", t);
			ck_assert_msg(nt == 9 || nt == 10, "section line '%s'", line);
			struct rsec *s = &r->s[r->ns++];
			snprintf(s->name, sizeof(s->name), "%s", tok[0]);
			snprintf(s->type, sizeof(s->type), "%s", tok[1]);
			s->addr = strtoull(tok[2], NULL, 16);
			s->off = strtoull(tok[3], NULL, 16);
			s->size = strtoull(tok[4], NULL, 16);
			s->es = strtoull(tok[5], NULL, 16);
			int k = 6;
			if (nt == 10)
				snprintf(s->flags, sizeof(s->flags), "%s", tok[k++]);
			s->lk = (unsigned)atoi(tok[k]);
			s->inf = (unsigned)atoi(tok[k + 1]);
			s->al = (unsigned)atoi(tok[k + 2]);
		}
		unsigned long long o, va, pa, fs, ms;
		int used = 0;
		if (sscanf(line, " LOAD %llx %llx %llx %llx %llx %n", &o, &va, &pa, &fs, &ms, &used) == 5 &&
		    r->np < 4) {
			struct rload *p = &r->p[r->np++];
			p->off = o;
			p->vaddr = va;
			p->paddr = pa;
			p->filesz = fs;
			p->memsz = ms;
			const char *al = strstr(line + used, "0x");
			ck_assert_ptr_nonnull(al);
			p->align = strtoull(al, NULL, 16);
			size_t fl = 0;
			for (const char *c = line + used; c < al && fl + 1 < sizeof(p->flags); c++)
				if (*c != ' ')
					p->flags[fl++] = *c;
		}
	}
}

static const struct rsec *sec(const struct relf *r, const char *name)
{
	for (size_t i = 0; i < r->ns; i++)
		if (!strcmp(r->s[i].name, name))
			return &r->s[i];
	return NULL;
}

static const enum pv_profile profs[] = { PV_CURRENT, PV_V61, PV_5X_0X40 };

/* ---- layout of the jitted ELF, per generation ---- */

/* The one program header of profile p's jitted-*.so; returns its vaddr (and offset). */
static uint64_t layout_phdr(const struct relf *r, enum pv_profile p, uint64_t csize)
{
	ck_assert_uint_eq(r->np, 1);
	uint64_t lv = p == PV_CURRENT ? 0x80 : 0;
	ck_assert_uint_eq(pv_load_vaddr(p), lv);
	ck_assert_uint_eq(r->p[0].off, lv);
	ck_assert_uint_eq(r->p[0].vaddr, lv);
	ck_assert_uint_eq(r->p[0].paddr, lv);
	ck_assert_uint_eq(r->p[0].filesz, csize);
	ck_assert_uint_eq(r->p[0].memsz, csize);
	ck_assert_str_eq(r->p[0].flags, "RE");
	ck_assert_uint_eq(r->p[0].align, 8);
	return lv;
}

START_TEST(layout)
{
	enum pv_profile p = profs[_i % 3];
	if (!pvt_have_tool("readelf")) {
		printf("perfview: readelf not installed, layout check skipped\n");
		return;
	}
	struct fx x;
	fx_make(&x, codes[_i / 3].lines, codes[_i / 3].n, 1, 0, true);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, p, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	const uint64_t csize = x.f->code_size, text = pv_text_addr(p);
	const uint64_t ehsize = x.u.size - x.u.hdr_size;
	ck_assert_uint_eq(text, p == PV_5X_0X40 ? 0x40 : 0x80);
	ck_assert_uint_eq(pv.nmaps, 1);
	ck_assert_uint_eq(pv.maps[0].start, x.addr[0]);
	ck_assert_uint_eq(pv.maps[0].end, x.addr[0] + al8(csize) + x.u.mapped_size);
	ck_assert_uint_eq(pv.maps[0].pgoff, text);
	const struct pv_dso *d = pv.maps[0].dso;
	ck_assert(d->jitted);
	ck_assert_ptr_eq(d->load, &x.jd.loads[0]);
	char want[4096];
	snprintf(want, sizeof(want), "%s/jitted-%u-0.so", x.dir, (unsigned)getpid());
	ck_assert_str_eq(d->path, want);
	ck_assert_str_eq(d->perf_name, want);

	struct relf r;
	readelf_ls(d->path, &r);
	static const char *const order[] = { ".text", ".eh_frame", ".eh_frame_hdr", ".shstrtab",
					     ".symtab", ".strtab", ".note.gnu.build-id" };
	ck_assert_uint_eq(r.ns, 7);
	for (size_t i = 0; i < 7; i++)
		ck_assert_str_eq(r.s[i].name, order[i]);
	const struct rsec *t = sec(&r, ".text"), *eh = sec(&r, ".eh_frame"), *hd = sec(&r, ".eh_frame_hdr");
	/* libelf lays .text out after Ehdr + Phdr: file offset 0x80 in every generation */
	ck_assert_uint_eq(t->off, 0x80);
	ck_assert_uint_eq(t->addr, text);
	ck_assert_uint_eq(t->size, csize);
	ck_assert_uint_eq(t->al, 16);
	ck_assert_str_eq(t->flags, "AX");
	ck_assert_uint_eq(eh->addr, al8(text + csize));
	ck_assert_uint_eq(eh->off, al8(0x80 + csize));
	ck_assert_uint_eq(eh->size, ehsize);
	ck_assert_uint_eq(eh->al, 8);
	ck_assert_str_eq(eh->flags, "A");
	ck_assert_uint_eq(hd->addr, eh->addr + ehsize);
	ck_assert_uint_eq(hd->off, eh->off + ehsize);
	ck_assert_uint_eq(hd->size, x.u.hdr_size);
	ck_assert_uint_eq(hd->al, 4);
	const struct rsec *st = sec(&r, ".symtab"), *nt = sec(&r, ".note.gnu.build-id");
	ck_assert_uint_eq(st->es, 0x18);
	ck_assert_uint_eq(st->lk, 6);
	ck_assert_uint_eq(st->inf, 0);      /* genelf never sets it */
	ck_assert_uint_eq(sec(&r, ".shstrtab")->size, 0x72);
	ck_assert_uint_eq(nt->size, 0x24);
	ck_assert_str_eq(nt->flags, "A");
	ck_assert_uint_eq(r.entry, text);
	uint64_t lv = layout_phdr(&r, p, csize);
	/* what perf's readers get from the section headers, by name */
	ck_assert(d->is_elf && d->has_eh_frame && d->has_eh_frame_hdr && d->has_first_load);
	ck_assert_uint_eq(d->eh_frame_addr, eh->addr);
	ck_assert_uint_eq(d->eh_frame_off, eh->off);
	ck_assert_uint_eq(d->eh_frame_size, eh->size);
	ck_assert_uint_eq(d->eh_frame_hdr_addr, hd->addr);
	ck_assert_uint_eq(d->eh_frame_hdr_off, hd->off);
	ck_assert_uint_eq(d->eh_frame_hdr_size, hd->size);
	ck_assert_uint_eq(d->first_load_vaddr, lv);
	ck_assert_uint_eq(d->first_load_offset, lv);
	ck_assert_mem_eq(d->image + eh->off, x.u.data, x.u.size);
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* Without UNWINDING_INFO: no .eh_frame sections, the map is the code alone. */
START_TEST(no_unwind)
{
	if (!pvt_have_tool("readelf")) {
		printf("perfview: readelf not installed, check skipped\n");
		return;
	}
	struct fx x;
	fx_make(&x, cpython_fp, 5, 1, 0, false);
	ck_assert(!x.jd.loads[0].has_unwind);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.maps[0].end - pv.maps[0].start, x.f->code_size);
	ck_assert(!pv.maps[0].dso->has_eh_frame && !pv.maps[0].dso->has_eh_frame_hdr);
	struct relf r;
	readelf_ls(pv.maps[0].dso->path, &r);
	static const char *const order[] = { ".text", ".shstrtab", ".symtab", ".strtab",
					     ".note.gnu.build-id" };
	ck_assert_uint_eq(r.ns, 5);
	for (size_t i = 0; i < 5; i++)
		ck_assert_str_eq(r.s[i].name, order[i]);
	ck_assert_uint_eq(sec(&r, ".symtab")->lk, 4);
	char out[4096];
	ck_assert_int_eq(pvt_run(out, sizeof(out), "readelf -hW '%s'", pv.maps[0].dso->path), 0);
	ck_assert_ptr_nonnull(strstr(out, "Section header string table index: 2"));
	ck_assert_str_eq(pv_symbolize(&pv, x.addr[0]), "tramp");
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* ---- the FDE as two independent readers see it ---- */

START_TEST(fde_range)
{
	enum pv_profile p = profs[_i % 3];
	struct fx x;
	fx_make(&x, codes[_i / 3].lines, codes[_i / 3].n, 1, 0, true);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, p, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	const char *so = pv.maps[0].dso->path;
	/* the JIT encoded its FDE against code | pad | eh_frame: in the ELF it must
	 * cover .text's address range exactly */
	uint64_t lo = pv_text_addr(p), hi = lo + x.f->code_size;
	static char out[16384];
	if (pvt_have_tool("readelf")) {
		ck_assert_int_eq(pvt_run(out, sizeof(out), "readelf --debug-dump=frames '%s' 2>/dev/null", so), 0);
		int nfde = 0;
		for (const char *s = strstr(out, "FDE cie="); s; s = strstr(s + 1, "FDE cie=")) {
			unsigned long long a, b;
			const char *pc = strstr(s, "pc=");
			ck_assert_ptr_nonnull(pc);
			ck_assert_int_eq(sscanf(pc, "pc=%llx..%llx", &a, &b), 2);
			ck_assert_uint_eq(a, lo);
			ck_assert_uint_eq(b, hi);
			nfde++;
		}
		ck_assert_int_eq(nfde, 1);
	} else {
		printf("perfview: readelf not installed, binutils FDE check skipped\n");
	}
	if (pvt_have_tool("eu-readelf")) {
		ck_assert_int_eq(pvt_run(out, sizeof(out), "eu-readelf --debug-dump=frames '%s' 2>/dev/null", so), 0);
		const char *il = strstr(out, "initial_location:"), *ar = strstr(out, "address_range:");
		ck_assert_msg(il && ar, "no FDE in eu-readelf output:\n%s", out);
		unsigned long long a, b;
		const char *o1 = strstr(il, "(offset: "), *o2 = strstr(ar, "(end offset: ");
		ck_assert(o1 && o2);
		/* eu-readelf prints file offsets here: the code's bytes sit at 0x80 in
		 * every generation, whatever address .text claims */
		ck_assert_int_eq(sscanf(o1, "(offset: %llx", &a), 1);
		ck_assert_int_eq(sscanf(o2, "(end offset: %llx", &b), 1);
		ck_assert_uint_eq(a, 0x80);
		ck_assert_uint_eq(b, 0x80 + x.f->code_size);
		/* the search table's one entry points at the code too */
		const char *tab = strstr(out, "Table:");
		ck_assert_ptr_nonnull(tab);
		const char *o3 = strstr(tab, "(offset:");
		ck_assert_ptr_nonnull(o3);
		ck_assert_int_eq(sscanf(o3, "(offset: %llx", &a), 1);
		ck_assert_uint_eq(a, 0x80);
	} else {
		printf("perfview: eu-readelf not installed, elfutils FDE check skipped\n");
	}
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* libdw's CFI on the jitted ELF gives, at every instruction, the CFA rule and
 * the return address slot the truth rows say. */
START_TEST(libdw_cfi)
{
	enum pv_profile p = profs[_i % 3];
	struct fx x;
	fx_make(&x, codes[_i / 3].lines, codes[_i / 3].n, 1, 0, true);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, p, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	elf_version(EV_CURRENT);
	int fd = open(pv.maps[0].dso->path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(e);
	ck_assert_msg(cfi, "dwarf_getcfi_elf: %s", dwarf_errmsg(-1));
	const struct tr_arch *a = tr_arch_host();
	uint64_t text = pv_text_addr(p);
	for (size_t i = 0; i < x.f->nrows; i++) {
		const struct tr_row *row = &x.f->rows[i];
		Dwarf_Frame *fr = NULL;
		ck_assert_msg(dwarf_cfi_addrframe(cfi, text + row->offset, &fr) == 0, "no frame at 0x%llx: %s",
			      (unsigned long long)(text + row->offset), dwarf_errmsg(-1));
		Dwarf_Op *ops;
		size_t nops;
		ck_assert_int_eq(dwarf_frame_cfa(fr, &ops, &nops), 0);
		ck_assert_uint_eq(nops, 1);
		ck_assert_msg(ops[0].atom == DW_OP_bregx, "offset %u: CFA op 0x%x", row->offset, ops[0].atom);
		ck_assert_msg(ops[0].number == (Dwarf_Word)row->cfa_reg && (int64_t)ops[0].number2 == row->cfa_off,
			      "offset %u: CFA r%llu%+lld, truth r%d%+lld", row->offset,
			      (unsigned long long)ops[0].number, (long long)ops[0].number2, row->cfa_reg,
			      (long long)row->cfa_off);
		if (row->ra_where == TR_RA_AT_CFA) {
			Dwarf_Op mem[3], *rops;
			size_t nr;
			ck_assert_int_eq(dwarf_frame_register(fr, a->facts->dw_ra, mem, &rops, &nr), 0);
			ck_assert_uint_ge(nr, 1);
			ck_assert_int_eq(rops[0].atom, DW_OP_call_frame_cfa);
			int64_t off = nr > 1 ? (int64_t)rops[1].number : 0;
			ck_assert_msg(nr == 1 || rops[1].atom == DW_OP_plus_uconst, "RA op 0x%x", rops[1].atom);
			ck_assert_int_eq(off, row->ra_off);
		}
		free(fr);
	}
	/* nothing covers the byte after the code */
	Dwarf_Frame *fr = NULL;
	ck_assert_int_ne(dwarf_cfi_addrframe(cfi, text + x.f->code_size, &fr), 0);
	dwarf_cfi_end(cfi);
	elf_end(e);
	close(fd);
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* ---- map_ip: symbols and reads ---- */

START_TEST(symbolize)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 1, 0, true);
	for (size_t k = 0; k < 3; k++) {
		struct pv_view pv;
		ck_assert_msg(pv_build(&pv, profs[k], NULL, 0, &x.jd, NULL, &err) == 0, "%s", err.msg);
		for (size_t i = 0; i < x.f->nrows; i++) {
			const char *s = pv_symbolize(&pv, x.addr[0] + x.f->rows[i].offset);
			if (profs[k] == PV_5X_0X40)
				/* map_ip = 0x40 + off, the symbol is at file offset 0x80:
				 * "symbols missing on Ubuntu" */
				ck_assert_msg(s == NULL, "5.x-0x40 resolved %s", s);
			else
				ck_assert_msg(s && !strcmp(s, "tramp"), "%s: %s", pv_profile_name(profs[k]),
					      s ? s : "NULL");
		}
		/* the unwinding data part of the map has no symbol */
		ck_assert_ptr_null(pv_symbolize(&pv, x.addr[0] + x.f->code_size));
		ck_assert_ptr_null(pv_symbolize(&pv, x.addr[0] - 1));
		pv_fini(&pv);
	}
	fx_free(&x);
}
END_TEST

/* A function longer than 0x40 bytes: under 5.x-0x40 its symbol (0x40) lies in
 * the PT_LOAD at 0, so perf keeps it at 0x40 and map_ip lands in it again. */
START_TEST(symbolize_5x_long_code)
{
	const char *lines[80];
	size_t n = 0;
	lines[n++] = "push_fp";
	lines[n++] = "set_fp";
	while (n < 75)
		lines[n++] = "nop";
	lines[n++] = "call_target";
	lines[n++] = "pop_fp";
	lines[n++] = "ret";
	struct fx x;
	fx_make(&x, lines, n, 1, 0, true);
	if (x.f->code_size <= 0x40) {
		printf("perfview: code of %zu bytes is not longer than 0x40 on this arch, skipped\n",
		       x.f->code_size);
		fx_free(&x);
		return;
	}
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_5X_0X40, NULL, 0, &x.jd, NULL, &err) == 0, "%s", err.msg);
	ck_assert_str_eq(pv_symbolize(&pv, x.addr[0]), "tramp");
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

START_TEST(read_map_ip)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 1, 0, true);
	for (size_t k = 0; k < 3; k++) {
		struct pv_view pv;
		ck_assert_msg(pv_build(&pv, profs[k], NULL, 0, &x.jd, NULL, &err) == 0, "%s", err.msg);
		uint8_t buf[256];
		size_t cs = x.f->code_size;
		ck_assert(pv_read(&pv, x.addr[0], buf, cs));
		if (profs[k] == PV_5X_0X40) {
			/* file offset 0x40 holds the program header, not the code */
			ck_assert(memcmp(buf, x.f->code, cs) != 0);
			ck_assert(pv_read(&pv, x.addr[0], buf, 4));
			uint32_t pt;
			memcpy(&pt, buf, 4);
			ck_assert_uint_eq(pt, PT_LOAD);
		} else {
			ck_assert_mem_eq(buf, x.f->code, cs);
			/* the unwinding data lies where the JIT put it: code + ALIGN_8(csize) */
			ck_assert(pv_read(&pv, x.addr[0] + al8(cs), buf, x.u.size));
			ck_assert_mem_eq(buf, x.u.data, x.u.size);
		}
		ck_assert(!pv_read(&pv, x.addr[0] - 8, buf, 8));
		ck_assert(!pv_read(&pv, pv.maps[0].end, buf, 1));
		/* past the end of the file */
		const struct pv_dso *d = pv.maps[0].dso;
		ck_assert(!pv_read(&pv, pv.maps[0].end - 1, buf, d->size));
		/* the private directory goes away with the view; perf's name for the
		 * file stays next to the dump */
		char dir[4096], want[4096];
		snprintf(dir, sizeof(dir), "%s", pv.dir);
		ck_assert(pv.private_dir);
		ck_assert_ptr_eq(strstr(d->path, "/tmp/jitunwind-pv-"), d->path);
		snprintf(want, sizeof(want), "%s/jitted-%u-0.so", x.dir, (unsigned)getpid());
		ck_assert_str_eq(d->perf_name, want);
		ck_assert_int_eq(access(d->path, R_OK), 0);
		pv_fini(&pv);
		ck_assert_int_ne(access(dir, F_OK), 0);
	}
	fx_free(&x);
}
END_TEST

/* Two loads closer than ALIGN_8(csize) + mapped_size: the later MMAP2 cuts
 * the first map, whose unwinding data is then out of perf's reach. */
START_TEST(overlap_cuts_first)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 2, 16, true);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	uint64_t len = al8(x.f->code_size) + x.u.mapped_size;
	ck_assert_uint_gt(len, 16);
	ck_assert_uint_eq(pv.nmaps, 2);
	ck_assert_uint_eq(pv.maps[0].start, x.addr[0]);
	ck_assert_uint_eq(pv.maps[0].end, x.addr[1]);
	ck_assert_uint_eq(pv.maps[0].pgoff, 0x80);
	ck_assert_uint_eq(pv.maps[1].start, x.addr[1]);
	ck_assert_uint_eq(pv.maps[1].end, x.addr[1] + len);
	ck_assert_ptr_ne(pv.maps[0].dso, pv.maps[1].dso);
	ck_assert_ptr_eq(pv.maps[1].dso->load, &x.jd.loads[1]);
	/* the first load's eh_frame (at +ALIGN_8(csize) = +8) now reads the second's code */
	ck_assert_ptr_eq(pv_find(&pv, x.addr[0] + al8(x.f->code_size) + 8), &pv.maps[1]);
	ck_assert_str_eq(pv_symbolize(&pv, x.addr[0]), "tramp");
	ck_assert_str_eq(pv_symbolize(&pv, x.addr[1]), "tramp2");
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* The same code_index twice: perf inject rewrites jitted-<pid>-<n>.so, and
 * its one DSO of that name serves both maps with the last load's bytes. */
START_TEST(repeated_code_index)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 2, 0, true);
	x.jd.loads[1].code_index = x.jd.loads[0].code_index;
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.ndsos, 1);
	ck_assert_uint_eq(pv.nmaps, 2);
	ck_assert_ptr_eq(pv.maps[0].dso, pv.maps[1].dso);
	ck_assert_ptr_eq(pv.maps[0].dso->load, &x.jd.loads[1]);
	ck_assert_str_eq(pv_symbolize(&pv, x.addr[0]), "tramp2");
	ck_assert_str_eq(pv_symbolize(&pv, x.addr[1]), "tramp2");
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* perf inject writes next to the dump: a dump in /tmp gives the names
 * libdw's "/tmp/jitted-" rule (perf >= 6.8) keys on, wherever ours live. */
START_TEST(perf_name_next_to_dump)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 1, 0, true);
	snprintf(x.jd.path, sizeof(x.jd.path), "/tmp/jit-%u.dump", (unsigned)x.jd.loads[0].pid);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &x.jd, x.dir, &err) == 0, "%s", err.msg);
	char want[64];
	snprintf(want, sizeof(want), "/tmp/jitted-%u-0.so", (unsigned)x.jd.loads[0].pid);
	ck_assert_str_eq(pv.maps[0].dso->perf_name, want);
	ck_assert_ptr_eq(strstr(pv.maps[0].dso->path, x.dir), pv.maps[0].dso->path);
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* perf's maps__fixup_overlappings on file maps: table of insertions. */
static const struct {
	const char *what;
	struct { uint64_t s, e, pg; int file; const char *prot; } in[4];
	size_t nin;
	struct { uint64_t s, e, pg; int file; } out[5];
	size_t nout;
} cut[] = {
	{ "inside: before and after kept", { { 0x1000, 0x5000, 0, 0, "r-xp" }, { 0x2000, 0x3000, 0x10000, 1, "r-xp" } }, 2,
	  { { 0x1000, 0x2000, 0, 0 }, { 0x2000, 0x3000, 0x10000, 1 }, { 0x3000, 0x5000, 0x2000, 0 } }, 3 },
	{ "over the start", { { 0x1000, 0x3000, 0x100, 0, "r-xp" }, { 0x800, 0x2000, 0, 1, "r-xp" } }, 2,
	  { { 0x800, 0x2000, 0, 1 }, { 0x2000, 0x3000, 0x1100, 0 } }, 2 },
	{ "over the end", { { 0x1000, 0x3000, 0, 0, "r-xp" }, { 0x2000, 0x4000, 0, 1, "r-xp" } }, 2,
	  { { 0x1000, 0x2000, 0, 0 }, { 0x2000, 0x4000, 0, 1 } }, 2 },
	{ "swallows two", { { 0x1000, 0x2000, 0, 0, "r-xp" }, { 0x3000, 0x4000, 0, 2, "r-xp" }, { 0, 0x5000, 0, 1, "r-xp" } }, 3,
	  { { 0, 0x5000, 0, 1 } }, 1 },
	{ "spans two", { { 0x1000, 0x3000, 0, 0, "r-xp" }, { 0x3000, 0x5000, 0x7000, 2, "r-xp" }, { 0x2000, 0x4000, 0, 1, "r-xp" } }, 3,
	  { { 0x1000, 0x2000, 0, 0 }, { 0x2000, 0x4000, 0, 1 }, { 0x4000, 0x5000, 0x8000, 2 } }, 3 },
	/* --call-graph dwarf records data maps too */
	{ "data maps count", { { 0x1000, 0x3000, 0, 0, "r--p" }, { 0x4000, 0x5000, 0, 1, "r-xp" }, { 0x2000, 0x4800, 0, 2, "rw-p" } }, 3,
	  { { 0x1000, 0x2000, 0, 0 }, { 0x2000, 0x4800, 0, 2 }, { 0x4800, 0x5000, 0x800, 1 } }, 3 },
};

START_TEST(file_map_cuts)
{
	char dir[] = "/tmp/jupvm-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char paths[3][64];
	for (int i = 0; i < 3; i++) {
		snprintf(paths[i], sizeof(paths[i]), "%s/f%d", dir, i);
		FILE *fp = fopen(paths[i], "w");
		ck_assert_ptr_nonnull(fp);
		fprintf(fp, "file %d", i);
		fclose(fp);
	}
	struct uw_map maps[4];
	memset(maps, 0, sizeof(maps));
	for (size_t i = 0; i < cut[_i].nin; i++) {
		maps[i].start = cut[_i].in[i].s;
		maps[i].end = cut[_i].in[i].e;
		maps[i].pgoff = cut[_i].in[i].pg;
		snprintf(maps[i].prot, sizeof(maps[i].prot), "%s", cut[_i].in[i].prot);
		maps[i].path = paths[cut[_i].in[i].file];
	}
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, maps, cut[_i].nin, NULL, NULL, &err) == 0, "%s", err.msg);
	ck_assert_msg(pv.nmaps == cut[_i].nout, "%s: %zu maps", cut[_i].what, pv.nmaps);
	for (size_t i = 0; i < pv.nmaps; i++) {
		const struct pv_map *m = &pv.maps[i];
		ck_assert_msg(m->start == cut[_i].out[i].s && m->end == cut[_i].out[i].e &&
			      m->pgoff == cut[_i].out[i].pg && !strcmp(m->dso->path, paths[cut[_i].out[i].file]),
			      "%s: map %zu is 0x%llx-0x%llx @0x%llx %s", cut[_i].what, i,
			      (unsigned long long)m->start, (unsigned long long)m->end,
			      (unsigned long long)m->pgoff, m->dso->path);
		ck_assert(!m->dso->is_elf);
	}
	/* one DSO per path, read once */
	for (size_t i = 0; i < pv.ndsos; i++)
		for (size_t j = i + 1; j < pv.ndsos; j++)
			ck_assert_str_ne(pv.dsos[i].path, pv.dsos[j].path);
	pv_fini(&pv);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A file whose text segment has p_vaddr != p_offset (lld lays executables
 * out so): perf turns the symbol into a file offset with the PT_LOAD holding
 * it, and map_ip lands in it. */
START_TEST(symbols_vaddr_ne_offset)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 1, 0, true);
	char path[128];
	snprintf(path, sizeof(path), "%s/moved.so", x.dir);
	ck_assert_msg(pv_write_jitted_elf(path, PV_CURRENT, &x.jd.loads[0], tr_arch_host()->facts->elf_mach, &err) == 0, "%s", err.msg);
	/* move the segment, .text and the symbol up by 0x10000, keep the file layout */
	const uint64_t delta = 0x10000;
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDWR);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_RDWR, NULL);
	ck_assert_ptr_nonnull(e);
	elf_flagelf(e, ELF_C_SET, ELF_F_LAYOUT);
	GElf_Phdr ph;
	ck_assert_ptr_nonnull(gelf_getphdr(e, 0, &ph));
	ph.p_vaddr += delta;
	ph.p_paddr += delta;
	ck_assert(gelf_update_phdr(e, 0, &ph));
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		ck_assert_ptr_nonnull(gelf_getshdr(scn, &sh));
		if (sh.sh_flags & SHF_EXECINSTR) {
			sh.sh_addr += delta;
			ck_assert(gelf_update_shdr(scn, &sh));
		}
		if (sh.sh_type == SHT_SYMTAB) {
			Elf_Data *d = elf_getdata(scn, NULL);
			GElf_Sym sym;
			ck_assert_ptr_nonnull(gelf_getsym(d, 1, &sym));
			sym.st_value += delta;
			ck_assert(gelf_update_sym(d, 1, &sym));
			elf_flagdata(d, ELF_C_SET, ELF_F_DIRTY);
		}
	}
	ck_assert_int_ge(elf_update(e, ELF_C_WRITE), 0);
	elf_end(e);
	close(fd);
	/* mapped from file offset 0: the code (file offset 0x80) runs at start + 0x80 */
	const uint64_t start = 0x555500000000ull;
	struct uw_map m = { .start = start, .end = start + 0x1000, .pgoff = 0, .prot = "r-xp", .path = path };
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, &m, 1, NULL, NULL, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.maps[0].dso->first_load_vaddr, 0x80 + delta);
	ck_assert_uint_eq(pv.maps[0].dso->first_load_offset, 0x80);
	ck_assert_uint_eq(pv.maps[0].dso->nsyms, 1);
	ck_assert_uint_eq(pv.maps[0].dso->syms[0].start, 0x80);
	for (size_t i = 0; i < x.f->nrows; i++)
		ck_assert_str_eq(pv_symbolize(&pv, start + 0x80 + x.f->rows[i].offset), "tramp");
	ck_assert_ptr_null(pv_symbolize(&pv, start + 0x80 + x.f->code_size));
	ck_assert_ptr_null(pv_symbolize(&pv, start + 0x7f));
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* ---- the running test binary and libc, through perf's view ---- */

static char *read_self_maps(size_t *len)
{
	FILE *fp = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(fp);
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	ck_assert_ptr_nonnull(buf);
	size_t r;
	while ((r = fread(buf + n, 1, cap - n, fp)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			ck_assert_ptr_nonnull(buf);
		}
	}
	fclose(fp);
	*len = n;
	return buf;
}

Suite *suite_perfview(void);

START_TEST(self_symbols)
{
	size_t len;
	char *text = read_self_maps(&len);
	struct uw_map *maps;
	size_t n;
	ck_assert_msg(uw_maps_parse(text, len, &maps, &n, &err) == 0, "%s", err.msg);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, maps, n, NULL, NULL, &err) == 0, "%s", err.msg);
	/* a PIE executable's .symtab */
	uint64_t fn = (uint64_t)(uintptr_t)suite_perfview;
	const char *s = pv_symbolize(&pv, fn);
	ck_assert_msg(s && !strcmp(s, "suite_perfview"), "got %s", s ? s : "NULL");
	ck_assert_str_eq(pv_symbolize(&pv, fn + 1), "suite_perfview");
	/* map_ip reads the file's bytes of the function */
	uint8_t buf[16];
	ck_assert(pv_read(&pv, fn, buf, sizeof(buf)));
	ck_assert_mem_eq(buf, (const void *)(uintptr_t)fn, sizeof(buf));
	/* a shared library's .dynsym */
	uint64_t gp = (uint64_t)(uintptr_t)getpid;
	s = pv_symbolize(&pv, gp);
	/* glibc's getpid is a weak alias of __getpid: perf keeps the non-weak one */
	ck_assert_msg(s && strstr(s, "getpid"), "getpid resolved to %s", s ? s : "NULL");
	const struct pv_map *m = pv_find(&pv, gp);
	ck_assert_ptr_nonnull(m);
	ck_assert(m->dso->is_elf && m->dso->has_eh_frame_hdr && !m->dso->jitted);
	ck_assert_str_eq(m->dso->perf_name, m->dso->path);
	/* .eh_frame_hdr sits in a read-only segment of -z separate-code binaries:
	 * perf's readers reach it through that segment's map */
	const struct pv_dso *self = pv_find(&pv, fn)->dso;
	ck_assert(self->has_eh_frame_hdr);
	uint64_t bias = 0;
	for (size_t i = 0; i < pv.nmaps; i++)
		if (pv.maps[i].dso == self && pv.maps[i].pgoff == self->first_load_offset)
			bias = pv.maps[i].start - (self->first_load_vaddr & ~0xfffull);
	uint8_t hdr[4];
	ck_assert(pv_read(&pv, bias + self->eh_frame_hdr_addr, hdr, sizeof(hdr)));
	ck_assert_mem_eq(hdr, self->image + self->eh_frame_hdr_off, sizeof(hdr));
	ck_assert_uint_eq(hdr[0], 1);           /* .eh_frame_hdr version */
	/* the stack is no file map: perf has [stack] (the kernel reports it with
	 * mmap_data), but its DSO has no data to read or report */
	int local = 0;
	const struct pv_map *st = pv_find(&pv, (uint64_t)(uintptr_t)&local);
	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_null(st->dso);
	ck_assert(!pv_read(&pv, (uint64_t)(uintptr_t)&local, buf, 4));
	ck_assert_ptr_null(pv_symbolize(&pv, (uint64_t)(uintptr_t)&local));
	pv_fini(&pv);
	uw_maps_free(maps, n);
	free(text);
}
END_TEST

/* ---- build-id: SHA-1 of the code bytes (FIPS 180-4 vectors) ---- */

static const struct {
	const char *code;
	const char *sha1;
} vec[] = {
	{ "", "da39a3ee5e6b4b0d3255bfef95601890afd80709" },
	{ "abc", "a9993e364706816aba3e25717850c26c9cd0d89d" },
	{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1" },
	{ "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	  "a49b2446a02c645bf419f995b67091253a04a259" },
};

START_TEST(build_id)
{
	if (!pvt_have_tool("readelf")) {
		printf("perfview: readelf not installed, build-id check skipped\n");
		return;
	}
	char dir[] = "/tmp/jupvb-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct jd_load l = { .pid = 1, .code_addr = 0x1000, .code_size = strlen(vec[_i].code),
			     .code = (const uint8_t *)vec[_i].code, .name = "f" };
	char path[128], out[4096];
	snprintf(path, sizeof(path), "%s/f.so", dir);
	ck_assert_msg(pv_write_jitted_elf(path, PV_CURRENT, &l, EM_X86_64, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pvt_run(out, sizeof(out), "readelf -nW '%s'", path), 0);
	const char *b = strstr(out, "Build ID: ");
	ck_assert_ptr_nonnull(b);
	ck_assert_msg(!strncmp(b + 10, vec[_i].sha1, 40), "got %.40s", b + 10);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* ---- names and errors ---- */

START_TEST(profiles)
{
	for (size_t i = 0; i < 3; i++) {
		enum pv_profile p;
		ck_assert_int_eq(pv_profile_parse(pv_profile_name(profs[i]), &p), 0);
		ck_assert_int_eq(p, profs[i]);
	}
	ck_assert_str_eq(pv_profile_name(PV_CURRENT), "current");
	ck_assert_str_eq(pv_profile_name(PV_V61), "v6.1");
	ck_assert_str_eq(pv_profile_name(PV_5X_0X40), "5.x-0x40");
	enum pv_profile p = PV_CURRENT;
	ck_assert_int_eq(pv_profile_parse("6.1", &p), -EINVAL);
	ck_assert_int_eq(pv_profile_parse(NULL, &p), -EINVAL);
	ck_assert_int_eq(pv_profile_parse("", &p), -EINVAL);
}
END_TEST

START_TEST(errors)
{
	struct fx x;
	fx_make(&x, cpython_fp, 5, 1, 0, true);
	struct pv_view pv;
	ck_assert_int_eq(pv_build(&pv, PV_CURRENT, NULL, 0, &x.jd, "/nonexistent/pvdir", &err), -ENOENT);
	ck_assert_msg(strstr(err.msg, "/nonexistent/pvdir"), "%s", err.msg);
	ck_assert_int_eq(pv_build(&pv, (enum pv_profile)7, NULL, 0, &x.jd, NULL, &err), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "profile"));
	/* a load perf's genelf cannot take: the message names the dump offset */
	struct jd_load big = x.jd.loads[0];
	big.code_size = 1ull << 32;
	ck_assert_int_eq(pv_write_jitted_elf("/tmp/never-written.so", PV_CURRENT, &big, EM_X86_64, &err), -ERANGE);
	ck_assert_msg(strstr(err.msg, "jitdump offset"), "%s", err.msg);
	ck_assert_int_ne(access("/tmp/never-written.so", F_OK), 0);
	ck_assert_int_eq(pv_write_jitted_elf("/nonexistent/dir/f.so", PV_CURRENT, &x.jd.loads[0], EM_X86_64,
					     &err), -ENOENT);
	ck_assert_msg(strstr(err.msg, "cannot create"), "%s", err.msg);
	/* a load whose mapping wraps the address space */
	x.jd.loads[0].code_addr = UINT64_MAX - 4;
	ck_assert_int_eq(pv_build(&pv, PV_CURRENT, NULL, 0, &x.jd, NULL, &err), -EINVAL);
	ck_assert_msg(strstr(err.msg, "jitdump offset 0x") && strstr(err.msg, "wraps"), "%s", err.msg);
	/* an empty view: no directory made */
	ck_assert_int_eq(pv_build(&pv, PV_V61, NULL, 0, NULL, NULL, &err), 0);
	ck_assert(!pv.private_dir && !pv.dir[0]);
	ck_assert_ptr_null(pv_find(&pv, 0x1000));
	ck_assert_ptr_null(pv_symbolize(&pv, 0x1000));
	uint8_t b;
	ck_assert(!pv_read(&pv, 0x1000, &b, 1));
	pv_fini(&pv);
	fx_free(&x);
}
END_TEST

/* PV_PROFILE_LIST (the options' help texts) names the table's profiles in its
 * order: the messages' list with its last ", " as " or " */
START_TEST(profile_list_is_the_table)
{
	char want[256];
	snprintf(want, sizeof(want), "%s", PV_PROFILE_LIST);
	char *last = strrchr(want, ',');
	ck_assert_ptr_nonnull(last);
	char tail[128];
	snprintf(tail, sizeof(tail), " or%s", last + 1);
	snprintf(last, sizeof(want) - (size_t)(last - want), "%s", tail);
	ck_assert_str_eq(want, pv_profile_choices());
}
END_TEST

Suite *suite_perfview(void)
{
	Suite *s = suite_create("perfview");
	TCase *tc = tcase_create("elf");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, layout, 0, 6);
	tcase_add_test(tc, no_unwind);
	tcase_add_test(tc, profile_list_is_the_table);
	tcase_add_loop_test(tc, fde_range, 0, 6);
	tcase_add_loop_test(tc, libdw_cfi, 0, 6);
	tcase_add_loop_test(tc, build_id, 0, (int)(sizeof(vec) / sizeof(vec[0])));
	perfview_add_inject(tc, NULL);
	suite_add_tcase(s, tc);
	tc = tcase_create("maps");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, symbolize);
	tcase_add_test(tc, symbolize_5x_long_code);
	tcase_add_test(tc, read_map_ip);
	tcase_add_test(tc, overlap_cuts_first);
	tcase_add_test(tc, repeated_code_index);
	tcase_add_test(tc, perf_name_next_to_dump);
	tcase_add_loop_test(tc, file_map_cuts, 0, (int)(sizeof(cut) / sizeof(cut[0])));
	tcase_add_test(tc, symbols_vaddr_ne_offset);
	tcase_add_test(tc, self_symbols);
	tcase_add_test(tc, profiles);
	tcase_add_test(tc, errors);
	perfview_add_move(tc);
	suite_add_tcase(s, tc);
	tc = tcase_create("perf");
	tcase_set_timeout(tc, 120);
	perfview_add_inject(NULL, tc);
	suite_add_tcase(s, tc);
	return s;
}
