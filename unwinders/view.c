/* The profiler's view: maps, JIT loads as perf maps them, CFI per region. */
#include "unwinders/view.h"
#include "unwinders/model/perfview.h"
#include "unwinders/model/files.h"
#include "unwinders/model/maptree.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "juerr.h"

#define UW_MAX_MAPS 65536

/* The process view places a load as current perf does (pv_layout). */
uint64_t uw_jit_eh_off(const struct jd_load *l)
{
	struct pv_layout ly;
	pv_layout_load(PV_CURRENT, l, &ly);
	return ly.rt_eh - ly.rt_text;
}

uint64_t uw_jit_map_len(const struct jd_load *l)
{
	struct pv_layout ly;
	pv_layout_load(PV_CURRENT, l, &ly);
	return ly.map_len;
}

void uw_maps_free(struct uw_map *maps, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(maps[i].path);
	free(maps);
}

int uw_maps_parse(const char *text, size_t len, struct uw_map **out, size_t *nout,
		  struct ju_err *err)
{
	size_t cap = 0, n = 0, lineno = 0;
	int rc = -EINVAL;   /* malformed, unless the allocation failed */
	struct uw_map *maps = NULL;
	size_t pos = 0;
	while (pos < len) {
		const char *line = text + pos;
		const char *nl = memchr(line, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - line) : len - pos;
		pos += ll + (nl ? 1 : 0);
		lineno++;
		if (ll == 0)
			continue;
		if (n >= UW_MAX_MAPS) {
			ju_errf(err, EINVAL, 0, "maps line %zu: more than %d maps", lineno, UW_MAX_MAPS);
			goto fail;
		}
		char buf[4352];
		if (ll >= sizeof(buf)) {
			ju_errf(err, EINVAL, 0, "maps line %zu: longer than %zu bytes", lineno, sizeof(buf) - 1);
			goto fail;
		}
		memcpy(buf, line, ll);
		buf[ll] = 0;
		unsigned long long s, e, off;
		char prot[8];
		int consumed = 0;
		if (sscanf(buf, "%llx-%llx %4s %llx %*s %*s%n", &s, &e, prot, &off, &consumed) < 4 || e < s) {
			ju_errf(err, EINVAL, 0, "maps line %zu: expected 'start-end prot offset dev inode [path]', got '%.60s'",
				 lineno, buf);
			goto fail;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct uw_map *m = realloc(maps, cap * sizeof(*m));
			if (!m) {
				ju_errf(err, EINVAL, 0, "out of memory");
				rc = -ENOMEM;
				goto fail;
			}
			maps = m;
		}
		const char *p = buf + consumed;
		while (*p == ' ' || *p == '\t')
			p++;
		struct uw_map *m = &maps[n];
		m->start = s;
		m->end = e;
		m->pgoff = off;
		memcpy(m->prot, prot, 4);
		m->prot[4] = 0;
		m->path = *p ? strdup(p) : NULL;
		n++;
	}
	*out = maps;
	*nout = n;
	return 0;
fail:
	uw_maps_free(maps, n);
	return rc;
}

/* What the oracle needs of one ELF file, found once per file: its PT_LOADs
 * and its .eh_frame section (or why there is none). */
#define VIEW_MAX_LOADS 64
struct view_elf {
	bool is_elf, has_shstr, has_eh, eh_in_file;
	size_t nloads;
	struct { uint64_t offset, filesz, vaddr; } load[VIEW_MAX_LOADS];
	uint64_t eh_addr, eh_off, eh_size;
};

/* A parsed .eh_frame at one section address (or the parse error). */
struct view_cfi {
	bool ok;
	struct ehf_table t;
	struct ju_err ee;
};

static void view_cfi_free(void *p)
{
	struct view_cfi *c = p;
	if (c->ok)
		ehf_table_free(&c->t);
	free(c);
}

static void view_elf_scan(const struct uw_file *f, struct view_elf *x)
{
	Elf *e = elf_memory((char *)(uintptr_t)f->data, f->size);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		return;
	}
	x->is_elf = true;
	size_t phnum = 0, shstrndx = 0;
	if (elf_getphdrnum(e, &phnum) == 0)
		for (size_t i = 0; i < phnum && i < 4096 && x->nloads < VIEW_MAX_LOADS; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			x->load[x->nloads].offset = ph.p_offset;
			x->load[x->nloads].filesz = ph.p_filesz;
			x->load[x->nloads++].vaddr = ph.p_vaddr;
		}
	x->has_shstr = elf_getshdrstrndx(e, &shstrndx) == 0;
	Elf_Scn *scn = NULL;
	size_t guard = 0;
	while (x->has_shstr && (scn = elf_nextscn(e, scn)) && guard++ < 65536) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame") && sh.sh_type == SHT_PROGBITS) {
			x->has_eh = true;
			x->eh_addr = sh.sh_addr;
			x->eh_off = sh.sh_offset;
			x->eh_size = sh.sh_size;
			x->eh_in_file = sh.sh_offset <= f->size && sh.sh_size <= f->size - sh.sh_offset;
			break;
		}
	}
	elf_end(e);
}

/* The file's scan, made by the first region that maps it. */
static const struct view_elf *view_elf_of(const struct uw_file *f)
{
	const struct view_elf *x = uw_file_derived(f, UW_FILE_VIEW_ELF, 0);
	if (x)
		return x;
	struct view_elf *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	view_elf_scan(f, n);
	return uw_file_set_derived(f, UW_FILE_VIEW_ELF, 0, n, free);
}

/* The file's .eh_frame parsed at section address `section`, made once. */
static const struct view_cfi *view_cfi_of(const struct uw_file *f, const struct view_elf *x,
					  uint64_t section, int ptr_size)
{
	const struct view_cfi *c = uw_file_derived(f, UW_FILE_VIEW_CFI, section);
	if (c)
		return c;
	struct view_cfi *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	struct ehf_bases b = { .section = section, .ptr_size = ptr_size };
	n->ok = ehf_parse(&n->t, f->data + x->eh_off, x->eh_size, &b, &n->ee) == 0;
	return uw_file_set_derived(f, UW_FILE_VIEW_CFI, section, n, view_cfi_free);
}

/* ELF region: the file (mapped once per run), its .eh_frame, the load bias. */
static void region_elf(struct uw_region *r, const struct uw_map *m, int ptr_size)
{
	int rc = uw_file_get(m->path, &r->file);
	if (!rc && (r->file->size == 0 || r->file->size > (1ull << 31)))
		rc = -EINVAL;
	if (rc) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: cannot read: %s", m->path, strerror(-rc));
		return;
	}
	const struct view_elf *x = view_elf_of(r->file);
	if (!x) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: out of memory", m->path);
		return;
	}
	if (!x->is_elf) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: not an ELF file", m->path);
		return;
	}
	bool found_load = false;
	for (size_t i = 0; i < x->nloads && !found_load; i++)
		if (m->pgoff >= x->load[i].offset && m->pgoff < x->load[i].offset + x->load[i].filesz) {
			r->bias = m->start - (x->load[i].vaddr + (m->pgoff - x->load[i].offset));
			found_load = true;
		}
	if (!found_load) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: no PT_LOAD covers file offset 0x%llx",
			 m->path, (unsigned long long)m->pgoff);
		return;
	}
	if (!x->has_shstr) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: no section header string table", m->path);
		return;
	}
	if (!x->has_eh) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: no .eh_frame section", m->path);
		return;
	}
	if (!x->eh_in_file) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: .eh_frame runs past the end of the file", m->path);
		return;
	}
	const struct view_cfi *c = view_cfi_of(r->file, x, x->eh_addr + r->bias, ptr_size);
	if (!c) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: out of memory", m->path);
		return;
	}
	if (!c->ok) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: .eh_frame+0x%llx: %s", m->path,
			 (unsigned long long)c->ee.offset, c->ee.msg);
		r->cfi_bad = true;
		return;
	}
	r->cfi = c->t;      /* shared with the file: not freed with the region */
	r->cfi_shared = true;
	r->has_cfi = true;
}

/* JIT region: .eh_frame is the first (unwinding_size - eh_frame_hdr_size)
 * bytes of the unwinding info, resolved in genelf's layout. */
static void region_jit(struct uw_region *r, const struct jd_load *l, uint64_t code_addr, int ptr_size)
{
	if (!l->has_unwind) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "no CODE_UNWINDING_INFO precedes this CODE_LOAD");
		return;
	}
	uint64_t eh_size = l->unwinding_size - l->eh_frame_hdr_size;
	if (eh_size == 0) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "empty .eh_frame");
		return;
	}
	/* mapped_size only decides what perf's mapping covers: how an unwinder
	 * reaches the data (libunwind through the map, libdw from the ELF file),
	 * not what the data says; the oracle reads what was emitted */
	struct ehf_bases b = { .section = code_addr + uw_jit_eh_off(l), .ptr_size = ptr_size };
	struct ju_err ee;
	if (ehf_parse(&r->cfi, l->unwind, eh_size, &b, &ee)) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "jitdump+0x%llx: .eh_frame+0x%llx: %s",
			 (unsigned long long)l->unwind_file_off, (unsigned long long)ee.offset, ee.msg);
		r->cfi_bad = true;
		return;
	}
	r->has_cfi = true;
}

static int cmp_region(const void *a, const void *b)
{
	const struct uw_region *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The load a CODE_MOVE moves: the last one of its pid and code_index
 * before it (perf maps that load's file), or NULL. */
static const struct jd_load *moved_load(const struct jd_file *jd, const struct jd_move *m)
{
	for (size_t i = m->nloads_before < jd->nloads ? m->nloads_before : jd->nloads; i-- > 0;)
		if (jd->loads[i].code_index == m->code_index && jd->loads[i].pid == m->pid)
			return &jd->loads[i];
	return NULL;
}

/* What perf has mapped where: the executable file maps, then the loads and
 * moves in file order, each cutting what it overlaps (mt_insert).  A
 * piece's seq names its source: below nmaps a file map, below nmaps +
 * nloads load seq - nmaps, else move seq - nmaps - nloads (the moved code,
 * its emitted CFI read at the new address as perf's map of the file puts it). */
static int view_layout(const struct uw_map *maps, size_t nmaps, const struct jd_file *jd,
		       struct mt_snap *s)
{
	for (size_t i = 0; i < nmaps; i++) {
		const struct uw_map *m = &maps[i];
		if (m->prot[2] != 'x' || !m->path || m->path[0] != '/' || m->end <= m->start)
			continue;
		struct mt_map p = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .seq = i };
		if (mt_insert(s, &p))
			return -ENOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; jd && i <= jd->nloads; i++) {
		/* the moves before load i, then it */
		for (; k < jd->nmoves && jd->moves[k].nloads_before <= i; k++) {
			const struct jd_move *m = &jd->moves[k];
			if (!moved_load(jd, m))
				continue;     /* no file of that code_index: nothing perf could read */
			uint64_t start, len, pgoff;
			pv_layout_move(PV_CURRENT, m, &start, &len, &pgoff);
			struct mt_map p = { .start = start, .end = start + len, .seq = nmaps + jd->nloads + k };
			if (p.end > p.start && mt_insert(s, &p))
				return -ENOMEM;
		}
		if (i == jd->nloads)
			break;
		const struct jd_load *l = &jd->loads[i];
		struct mt_map p = { .start = l->code_addr, .end = l->code_addr + uw_jit_map_len(l),
				    .seq = nmaps + i };
		if (p.end <= p.start)
			continue;     /* nothing mapped (or wrapping: perf inject refuses it) */
		if (mt_insert(s, &p))
			return -ENOMEM;
	}
	return 0;
}

int uw_view_init(struct uw_view *v, const struct uw_arch *arch,
		 const struct uw_map *maps, size_t nmaps, const struct jd_file *jd,
		 struct ju_err *err)
{
	memset(v, 0, sizeof(*v));
	v->arch = arch;
	v->jd = jd;
	v->maps = (struct uw_map *)maps;     /* borrowed: the caller owns them */
	v->nmaps = nmaps;
	elf_version(EV_CURRENT);
	struct mt_snap s = { 0 };
	if (view_layout(maps, nmaps, jd, &s) ||
	    !(v->regions = calloc(s.n + 1, sizeof(*v->regions)))) {
		mt_snap_free(&s);
		ju_errf(err, EINVAL, 0, "out of memory");
		return -ENOMEM;
	}
	for (size_t k = 0; k < s.n; k++) {
		const struct mt_map *p = &s.maps[k];
		struct uw_region *r = &v->regions[v->nregions++];
		if (p->seq < nmaps) {
			r->kind = UW_REGION_ELF;
			r->name = maps[p->seq].path;
			region_elf(r, &maps[p->seq], 8);     /* the bias of the whole map */
		} else if (p->seq < nmaps + jd->nloads) {
			const struct jd_load *l = &jd->loads[p->seq - nmaps];
			r->kind = UW_REGION_JIT;
			r->name = l->name;
			r->load = l;
			region_jit(r, l, l->code_addr, 8);
		} else {
			const struct jd_move *m = &jd->moves[p->seq - nmaps - jd->nloads];
			const struct jd_load *l = moved_load(jd, m);
			r->kind = UW_REGION_JIT;
			r->name = l->name;
			r->load = l;
			region_jit(r, l, m->new_code_addr, 8);
		}
		r->start = p->start;
		r->end = p->end;
	}
	mt_snap_free(&s);
	qsort(v->regions, v->nregions, sizeof(*v->regions), cmp_region);
	v->rows = uw_row_cache_new();     /* NULL: the oracle computes every row */
	return 0;
}

void uw_view_fini(struct uw_view *v)
{
	for (size_t i = 0; i < v->nregions; i++) {
		if (!v->regions[i].cfi_shared)
			ehf_table_free(&v->regions[i].cfi);
		uw_file_put(v->regions[i].file);
	}
	free(v->regions);
	v->regions = NULL;
	uw_row_cache_free(v->rows);
	v->rows = NULL;
}

const struct uw_region *uw_view_find(const struct uw_view *v, uint64_t pc)
{
	size_t lo = 0, hi = v->nregions;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v->regions[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* regions never overlap (view_layout cut them) */
	if (lo > 0 && pc < v->regions[lo - 1].end)
		return &v->regions[lo - 1];
	return NULL;
}
