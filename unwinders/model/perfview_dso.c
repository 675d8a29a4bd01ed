/* A DSO read back by section name as perf does: its symbols (dso__load_sym)
 * and its .eh_frame_hdr, kept per file (files.h). */
#include "arches.h"
#include "unwinders/model/perfview.h"
#include "unwinders/model/perfview_int.h"
#include "unwinders/model/maptree.h"
#include "unwinders/model/files.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "juerr.h"

/* ---- reading a DSO back, by section name as perf does ---- */

static int read_file(const char *path, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0 ||
	    (uint64_t)st.st_size > PV_MAX_FILE) {
		close(fd);
		return -EINVAL;
	}
	size_t n = (size_t)st.st_size;
	uint8_t *buf = malloc(n ? n : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : -EIO;
			free(buf);
			close(fd);
			return e;
		}
		got += (size_t)r;
	}
	close(fd);
	*data = buf;
	*size = got;
	return 0;
}

struct pv_rawsym {            /* a candidate before duplicates are folded */
	struct pv_sym s;
	uint64_t size;
	unsigned char type, bind;
	size_t order;
};

static int rawsym_cmp(const void *a, const void *b)
{
	const struct pv_rawsym *x = a, *y = b;
	if (x->s.start != y->s.start)
		return x->s.start < y->s.start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static size_t leading_underscores(const char *s)
{
	size_t n = 0;
	while (s[n] == '_' && n < 64)
		n++;
	return n;
}

/* perf's choose_best_symbol: sized, then typed (upstream 2025), then not
 * weak, then global, then fewer leading underscores, then the longer name;
 * true if a beats b. */
static bool sym_better(const struct pv_rawsym *a, const struct pv_rawsym *b)
{
	if ((a->size != 0) != (b->size != 0))
		return a->size != 0;
	if ((a->type == STT_NOTYPE) != (b->type == STT_NOTYPE))
		return b->type == STT_NOTYPE;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return a->bind != STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	size_t ua = leading_underscores(a->s.name), ub = leading_underscores(b->s.name);
	if (ua != ub)
		return ua < ub;
	return strlen(a->s.name) > strlen(b->s.name);
}

/* The PT_LOAD holding vaddr (perf's elf_read_program_header). */
static bool load_for_vaddr(Elf *e, size_t phnum, uint64_t vaddr, GElf_Phdr *out)
{
	for (size_t i = 0; i < phnum && i < PV_MAX_PHDRS; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		uint64_t sz = ph.p_memsz > ph.p_filesz ? ph.p_memsz : ph.p_filesz;
		if (sz && vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < sz) {
			*out = ph;
			return true;
		}
	}
	return false;
}

/* Symbols of one table (.symtab or .dynsym), turned into file offsets as perf
 * does for user DSOs (dso__load_sym: adjust_symbols is always set for them):
 * st_value - (p_vaddr - p_offset) of the PT_LOAD holding it, else
 * st_value - (sh_addr - sh_offset) of its section. */
static int load_symtab(struct pv_dso *d, Elf *e, Elf_Scn *symscn, const GElf_Shdr *symsh,
		       size_t shstrndx, size_t phnum, struct pv_rawsym **raw, size_t *nraw,
		       size_t *cap)
{
	if (symsh->sh_entsize != sizeof(Elf64_Sym) && symsh->sh_entsize != sizeof(Elf32_Sym))
		return 0;
	Elf_Data *data = elf_getdata(symscn, NULL);
	GElf_Ehdr eh;
	uint16_t mach = gelf_getehdr(e, &eh) ? eh.e_machine : 0;
	Elf_Scn *strscn = elf_getscn(e, symsh->sh_link);
	GElf_Shdr strsh;
	if (!data || !strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type == SHT_NOBITS ||
	    strsh.sh_offset > d->size || strsh.sh_size > d->size - strsh.sh_offset)
		return 0;
	const char *strs = (const char *)d->image + strsh.sh_offset;
	size_t n = data->d_size / symsh->sh_entsize;
	for (size_t i = 1; i < n && i < PV_MAX_SYMS; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		unsigned type = GELF_ST_TYPE(sym.st_info);
		if (!sym.st_name || sym.st_name >= strsh.sh_size || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE)
			continue;
		if (!memchr(strs + sym.st_name, 0, strsh.sh_size - sym.st_name) ||
		    arch_mapping_symbol(mach, strs + sym.st_name))
			continue;
		Elf_Scn *sec = elf_getscn(e, sym.st_shndx);
		GElf_Shdr sh;
		if (!sec || !gelf_getshdr(sec, &sh) || !(sh.sh_flags & SHF_ALLOC))
			continue;
		/* functions; untyped labels only inside text sections (elf_sec__is_text) */
		if (type == STT_NOTYPE) {
			const char *secname = elf_strptr(e, shstrndx, sh.sh_name);
			if (!secname || !strstr(secname, "text"))
				continue;
		} else if (type != STT_FUNC && type != STT_GNU_IFUNC) {
			continue;
		}
		uint64_t v = sym.st_value;
		GElf_Phdr ph;
		if (load_for_vaddr(e, phnum, v, &ph))
			v -= ph.p_vaddr - ph.p_offset;
		else
			v -= sh.sh_addr - sh.sh_offset;
		if (*nraw == *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			struct pv_rawsym *r = realloc(*raw, nc * sizeof(*r));
			if (!r)
				return -ENOMEM;
			*raw = r;
			*cap = nc;
		}
		struct pv_rawsym *r = &(*raw)[(*nraw)++];
		r->s.start = v;
		r->s.end = v + sym.st_size;
		r->s.name = strs + sym.st_name;
		r->size = sym.st_size;
		r->type = (unsigned char)type;
		r->bind = (unsigned char)GELF_ST_BIND(sym.st_info);
		r->order = *nraw;
	}
	return 0;
}

/* Fold duplicates (perf's symbols__fixup_duplicate) and give zero-sized
 * symbols the next one's start as end (symbols__fixup_end). */
static int finish_syms(struct pv_dso *d, struct pv_rawsym *raw, size_t nraw)
{
	if (!nraw)
		return 0;
	qsort(raw, nraw, sizeof(*raw), rawsym_cmp);
	d->syms = malloc(nraw * sizeof(*d->syms));
	if (!d->syms)
		return -ENOMEM;
	size_t n = 0;
	for (size_t i = 0; i < nraw; i++) {
		size_t best = i;
		while (i + 1 < nraw && raw[i + 1].s.start == raw[best].s.start) {
			i++;
			if (sym_better(&raw[i], &raw[best]))
				best = i;
		}
		d->syms[n++] = raw[best].s;
	}
	for (size_t i = 0; i < n; i++) {
		if (d->syms[i].end != d->syms[i].start)
			continue;
		d->syms[i].end = i + 1 < n ? d->syms[i + 1].start
					   : align_up(d->syms[i].start + 1, 4096) + 4096;
	}
	d->nsyms = n;
	return 0;
}

/* Fill the section fields and the symbols from d->image.  A file that is not
 * an ELF stays a DSO without them (perf keeps such maps too). */
static int scan_dso(struct pv_dso *d, struct ju_err *err)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		ju_errf(err, EINVAL, 0, "libelf: %s", elf_errmsg(-1));
		return -EIO;
	}
	Elf *e = elf_memory((char *)(uintptr_t)d->image, d->size);
	if (!e)
		return 0;
	GElf_Ehdr ehdr;
	size_t shstrndx = 0, phnum = 0;
	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &ehdr) || elf_getshdrstrndx(e, &shstrndx) ||
	    elf_getphdrnum(e, &phnum)) {
		elf_end(e);
		return 0;
	}
	d->is_elf = true;
	for (size_t i = 0; i < phnum && i < PV_MAX_PHDRS; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
			d->has_first_load = true;
			d->first_load_vaddr = ph.p_vaddr;
			d->first_load_offset = ph.p_offset;
			break;
		}
	}
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr symsh = { 0 }, dynsh = { 0 };
	size_t guard = 0;
	/* the first section of each name wins, as in perf's elf_section_by_name */
	while ((scn = elf_nextscn(e, scn)) && guard++ < PV_MAX_SECTIONS) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *name = elf_strptr(e, shstrndx, sh.sh_name);
		if (!name)
			continue;
		bool in_file = sh.sh_type != SHT_NOBITS && sh.sh_offset <= d->size &&
			       sh.sh_size <= d->size - sh.sh_offset;
		if (!strcmp(name, ".eh_frame_hdr") && !d->has_eh_frame_hdr && in_file) {
			d->has_eh_frame_hdr = true;
			d->eh_frame_hdr_addr = sh.sh_addr;
			d->eh_frame_hdr_off = sh.sh_offset;
			d->eh_frame_hdr_size = sh.sh_size;
		} else if (!strcmp(name, ".eh_frame") && !d->has_eh_frame && in_file) {
			d->has_eh_frame = true;
			d->eh_frame_addr = sh.sh_addr;
			d->eh_frame_off = sh.sh_offset;
			d->eh_frame_size = sh.sh_size;
		} else if (!strcmp(name, ".symtab") && !symtab && sh.sh_type == SHT_SYMTAB) {
			symtab = scn;
			symsh = sh;
		} else if (!strcmp(name, ".dynsym") && !dynsym && sh.sh_type == SHT_DYNSYM) {
			dynsym = scn;
			dynsh = sh;
		}
	}
	/* perf loads .symtab, then .dynsym too (dso__load_sym) */
	struct pv_rawsym *raw = NULL;
	size_t nraw = 0, cap = 0;
	int rc = 0;
	if (symtab)
		rc = load_symtab(d, e, symtab, &symsh, shstrndx, phnum, &raw, &nraw, &cap);
	if (!rc && dynsym)
		rc = load_symtab(d, e, dynsym, &dynsh, shstrndx, phnum, &raw, &nraw, &cap);
	if (!rc)
		rc = finish_syms(d, raw, nraw);
	free(raw);
	elf_end(e);
	if (rc) {
		ju_errf(err, EINVAL, 0, "%s: symbols: %s", d->path, strerror(-rc));
		return rc;
	}
	return 0;
}

void pv_dso_clear(struct pv_dso *d)
{
	if (d->file)
		uw_file_put(d->file);
	else
		free((void *)(uintptr_t)d->image);
	if (!d->syms_shared)
		free(d->syms);
	d->file = NULL;
	d->image = NULL;
	d->syms = NULL;
	d->syms_shared = false;
	d->size = 0;
	d->nsyms = 0;
	d->is_elf = d->has_first_load = false;
	d->has_eh_frame = d->has_eh_frame_hdr = false;
	d->eh_frame_hdr_addr = d->eh_frame_hdr_off = d->eh_frame_hdr_size = 0;
	d->eh_frame_addr = d->eh_frame_off = d->eh_frame_size = 0;
	d->first_load_vaddr = d->first_load_offset = 0;
}

static void scan_free(void *p)
{
	struct pv_dso *x = p;
	free(x->syms);
	free(x);
}

/* A file of the process maps, mapped once per run (files.h) and scanned once:
 * d gets the file's data and shares its symbols.  Gone, too large or not an
 * ELF (the jitdump marker, locale archives): a DSO without data, as in perf. */
static int dso_load_mapped(struct pv_dso *d, struct ju_err *err)
{
	const struct uw_file *f;
	if (uw_file_get(d->path, &f))
		return 0;
	if (f->size > PV_MAX_FILE || f->size < SELFMAG || memcmp(f->data, ELFMAG, SELFMAG)) {
		uw_file_put(f);
		return 0;
	}
	const struct pv_dso *x = uw_file_derived(f, UW_FILE_PV_SCAN, 0);
	if (!x) {
		struct pv_dso *n = calloc(1, sizeof(*n));
		if (!n) {
			uw_file_put(f);
			ju_errf(err, EINVAL, 0, "%s: out of memory", d->path);
			return -ENOMEM;
		}
		snprintf(n->path, sizeof(n->path), "%s", d->path);
		n->image = f->data;
		n->size = f->size;
		int rc = scan_dso(n, err);
		if (rc) {
			scan_free(n);
			uw_file_put(f);
			return rc;
		}
		x = uw_file_set_derived(f, UW_FILE_PV_SCAN, 0, n, scan_free);
		if (!x) {
			uw_file_put(f);
			ju_errf(err, EINVAL, 0, "%s: out of memory", d->path);
			return -ENOMEM;
		}
	}
	char path[sizeof(d->path)];
	memcpy(path, d->path, sizeof(path));
	char *perf_name = d->perf_name;
	bool jitted = d->jitted;
	const struct jd_load *load = d->load;
	*d = *x;
	memcpy(d->path, path, sizeof(path));
	d->perf_name = perf_name;
	d->jitted = jitted;
	d->load = load;
	d->file = f;
	d->syms_shared = true;
	return 0;
}

/* Read the file behind d (again) and scan it.  mapped: a file of the process
 * maps (dso_load_mapped); else a jitted file this view wrote, read into memory
 * (it may be written again while this view lives). */
int pv_dso_load(struct pv_dso *d, bool mapped, struct ju_err *err)
{
	pv_dso_clear(d);
	if (mapped)
		return dso_load_mapped(d, err);
	uint8_t *image = NULL;
	int rc = read_file(d->path, &image, &d->size);
	if (rc) {
		ju_errf(err, EINVAL, 0, "%s: cannot read back: %s", d->path, strerror(-rc));
		return rc;
	}
	d->image = image;
	return scan_dso(d, err);
}
