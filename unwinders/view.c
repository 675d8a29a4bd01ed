/* The profiler's view: maps, JIT loads as perf maps them, CFI per region. */
#include "view.h"
#include "perfview.h"

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
		  char *err, size_t errlen)
{
	size_t cap = 0, n = 0, lineno = 0;
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
			snprintf(err, errlen, "maps line %zu: more than %d maps", lineno, UW_MAX_MAPS);
			goto fail;
		}
		char buf[4352];
		if (ll >= sizeof(buf)) {
			snprintf(err, errlen, "maps line %zu: longer than %zu bytes", lineno, sizeof(buf) - 1);
			goto fail;
		}
		memcpy(buf, line, ll);
		buf[ll] = 0;
		unsigned long long s, e, off;
		char prot[8];
		int consumed = 0;
		if (sscanf(buf, "%llx-%llx %4s %llx %*s %*s%n", &s, &e, prot, &off, &consumed) < 4 || e < s) {
			snprintf(err, errlen, "maps line %zu: expected 'start-end prot offset dev inode [path]', got '%.60s'",
				 lineno, buf);
			goto fail;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct uw_map *m = realloc(maps, cap * sizeof(*m));
			if (!m) {
				snprintf(err, errlen, "out of memory");
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
	return -1;
}

static int load_file(const char *path, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > (1ll << 31)) {
		close(fd);
		return -EINVAL;
	}
	/* mapped, not read: a replay builds many views over the same big
	 * files (node's binary is 90 MB), and only their CFI pages are read */
	void *buf = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	int e = errno;
	close(fd);
	if (buf == MAP_FAILED)
		return -e;
	*data = buf;
	*size = (size_t)st.st_size;
	return 0;
}

/* ELF region: read the file, find .eh_frame, compute the load bias. */
static void region_elf(struct uw_region *r, const struct uw_map *m, int ptr_size)
{
	int rc = load_file(m->path, &r->file, &r->file_size);
	if (rc) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: cannot read: %s", m->path, strerror(-rc));
		return;
	}
	Elf *e = elf_memory((char *)r->file, r->file_size);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: not an ELF file", m->path);
		if (e)
			elf_end(e);
		return;
	}
	size_t phnum = 0, shstrndx = 0;
	bool found_load = false;
	if (elf_getphdrnum(e, &phnum) == 0) {
		for (size_t i = 0; i < phnum && i < 4096; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (m->pgoff >= ph.p_offset && m->pgoff < ph.p_offset + ph.p_filesz) {
				r->bias = m->start - (ph.p_vaddr + (m->pgoff - ph.p_offset));
				found_load = true;
				break;
			}
		}
	}
	if (!found_load) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: no PT_LOAD covers file offset 0x%llx",
			 m->path, (unsigned long long)m->pgoff);
		elf_end(e);
		return;
	}
	if (elf_getshdrstrndx(e, &shstrndx) != 0) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: no section header string table", m->path);
		elf_end(e);
		return;
	}
	Elf_Scn *scn = NULL;
	GElf_Shdr eh = { 0 };
	bool found = false;
	size_t guard = 0;
	while ((scn = elf_nextscn(e, scn)) && guard++ < 65536) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame") && sh.sh_type == SHT_PROGBITS) {
			eh = sh;
			found = true;
			break;
		}
	}
	elf_end(e);
	if (!found) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: no .eh_frame section", m->path);
		return;
	}
	if (eh.sh_offset > r->file_size || eh.sh_size > r->file_size - eh.sh_offset) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: .eh_frame runs past the end of the file", m->path);
		return;
	}
	struct ehf_bases b = { .section = eh.sh_addr + r->bias, .ptr_size = ptr_size };
	struct ehf_err ee;
	if (ehf_parse(&r->cfi, r->file + eh.sh_offset, eh.sh_size, &b, &ee)) {
		snprintf(r->cfi_err, sizeof(r->cfi_err), "%s: .eh_frame+0x%llx: %s", m->path,
			 (unsigned long long)ee.offset, ee.msg);
		r->cfi_bad = true;
		return;
	}
	r->has_cfi = true;
}

/* JIT region: .eh_frame is the first (unwinding_size - eh_frame_hdr_size)
 * bytes of the unwinding info, resolved in genelf's layout. */
static void region_jit(struct uw_region *r, const struct jd_load *l, int ptr_size)
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
	struct ehf_bases b = { .section = l->code_addr + uw_jit_eh_off(l), .ptr_size = ptr_size };
	struct ehf_err ee;
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

int uw_view_init(struct uw_view *v, const struct uw_arch *arch,
		 const struct uw_map *maps, size_t nmaps, const struct jd_file *jd,
		 char *err, size_t errlen)
{
	memset(v, 0, sizeof(*v));
	v->arch = arch;
	v->jd = jd;
	v->maps = (struct uw_map *)maps;     /* borrowed: the caller owns them */
	v->nmaps = nmaps;
	elf_version(EV_CURRENT);
	size_t cap = nmaps + (jd ? jd->nloads : 0) + 1;
	v->regions = calloc(cap, sizeof(*v->regions));
	if (!v->regions) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* JIT loads in file order; a later mapping cuts an earlier one it overlaps */
	for (size_t i = 0; jd && i < jd->nloads; i++) {
		const struct jd_load *l = &jd->loads[i];
		uint64_t s = l->code_addr, e = l->code_addr + uw_jit_map_len(l);
		for (size_t j = 0; j < v->nregions; j++) {
			struct uw_region *o = &v->regions[j];
			if (o->start < e && s < o->end) {
				if (o->start < s)
					o->end = s;
				else
					o->start = o->end = 0;   /* fully shadowed */
			}
		}
		struct uw_region *r = &v->regions[v->nregions++];
		r->kind = UW_REGION_JIT;
		r->start = s;
		r->end = e;
		r->name = l->name;
		r->load = l;
		region_jit(r, l, 8);
	}
	size_t njit = v->nregions;
	for (size_t i = 0; i < nmaps; i++) {
		const struct uw_map *m = &maps[i];
		if (m->prot[2] != 'x' || !m->path || m->path[0] != '/')
			continue;
		bool shadowed = false;
		for (size_t j = 0; j < njit; j++)
			if (v->regions[j].start < m->end && m->start < v->regions[j].end)
				shadowed = true;
		if (shadowed)
			continue;
		struct uw_region *r = &v->regions[v->nregions++];
		r->kind = UW_REGION_ELF;
		r->start = m->start;
		r->end = m->end;
		r->name = m->path;
		region_elf(r, m, 8);
	}
	qsort(v->regions, v->nregions, sizeof(*v->regions), cmp_region);
	return 0;
}

void uw_view_fini(struct uw_view *v)
{
	for (size_t i = 0; i < v->nregions; i++) {
		ehf_table_free(&v->regions[i].cfi);
		if (v->regions[i].file)
			munmap(v->regions[i].file, v->regions[i].file_size);
	}
	free(v->regions);
	v->regions = NULL;
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
	/* regions never overlap (JIT ones were cut, shadowed ones are empty) */
	if (lo > 0 && pc < v->regions[lo - 1].end)
		return &v->regions[lo - 1];
	return NULL;
}
