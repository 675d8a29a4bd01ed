/* perf's view of JIT code (facts section 2): the jitted-<pid>-<index>.so that
 * `perf inject -j` writes for each CODE_LOAD (tools/perf/util/genelf.c), the
 * MMAP2 it injects for it (jitdump.c: jit_repipe_code_load), the executable
 * file maps of the process, and perf's map tree rules over all of them.
 *
 * Generations (read in torvalds/linux and the stable queues):
 *  5.x-0x40  v6.0 and 5.x stable trees with "perf jit: Include program header
 *            in ELF files" (babd04386b1d) but not "perf inject: Fix
 *            GEN_ELF_TEXT_OFFSET for jit" (89b15d00527b): libelf lays .text out
 *            after the new Phdr at file offset 0x80, yet GEN_ELF_TEXT_OFFSET is
 *            still sizeof(Ehdr) = 0x40 for sh_addr, the symbol, e_entry,
 *            .eh_frame's address and the MMAP2 pgoff; PT_LOAD at 0.
 *  v6.1      v6.1-v6.7: GEN_ELF_TEXT_OFFSET = 0x80 everywhere, PT_LOAD still
 *            at p_offset = p_vaddr = 0.
 *  5.10.y    Debian 11's perf 5.10.223, read off its `perf inject -j` output
 *            and its chains (the perf column): the 5.x-0x40 text offset with
 *            PT_LOAD at p_offset = p_vaddr = 0x40 (a partial backport of
 *            1af478903fc4), and the libunwind lookup from before "perf unwind:
 *            Fix segbase for ld.lld linked objects" (v6.0): segbase = map start
 *            - pgoff + .eh_frame_hdr's sh_offset, 0x40 past the header here.
 *  current   v6.8+ ("perf genelf: Set ELF program header addresses properly",
 *            1af478903fc4) and stable trees with it (Debian 12's 6.1.y):
 *            PT_LOAD at 0x80.
 *
 * This file: the profiles, the layout of a load and perf's map tree for the
 * pid; perfview_elf.c writes the jitted ELF files, perfview_dso.c reads a
 * DSO back as perf does (perfview_int.h: what they share). */
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


static const struct {
	const char *name;
	uint64_t text_addr;   /* GEN_ELF_TEXT_OFFSET of that generation */
	bool load_at_text;    /* PT_LOAD p_offset = p_vaddr = text_addr (else 0) */
	bool regs_by_name;    /* perf_arch_reg_sp by perf_env__arch()'s name */
} pv_profiles[] = {
	[PV_CURRENT] = { "current", 0x80, true, false },
	[PV_V61] = { "v6.1", 0x80, false, false },
	[PV_5X_0X40] = { "5.x-0x40", 0x40, false, false },
	[PV_510] = { "5.10.y", 0x40, true, false },
	[PV_V612] = { "v6.12", 0x80, true, true },
};
#define PV_NPROFILES (sizeof(pv_profiles) / sizeof(pv_profiles[0]))

bool pv_valid_profile(enum pv_profile p)
{
	return (unsigned)p < PV_NPROFILES;
}

const char *pv_profile_name(enum pv_profile p)
{
	return pv_valid_profile(p) ? pv_profiles[p].name : "?";
}

const char *pv_profile_choices(void)
{
	static char buf[128];
	if (!buf[0]) {
		size_t off = 0;
		for (size_t i = 0; i < PV_NPROFILES && off < sizeof(buf); i++)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i == 0 ? "" :
						i + 1 == PV_NPROFILES ? " or " : ", ", pv_profiles[i].name);
	}
	return buf;
}

int pv_profile_parse(const char *s, enum pv_profile *p)
{
	for (size_t i = 0; s && i < PV_NPROFILES; i++)
		if (!strcmp(s, pv_profiles[i].name)) {
			*p = (enum pv_profile)i;
			return 0;
		}
	return -EINVAL;
}

static const struct pv_memory pv_memories[] = {
	{ "5.10 (Debian 11's 5.10.223)", 0, true, false,
	  "no jitted CFI used at all (.eh_frame_hdr 0x40 off): chains end at the JIT frame, reused or not" },
	{ "6.x (6.1.192, 6.12.117)", 6, true, false,
	  "B's pcs answered with A's cached rules: B's caller lost in every chain through B" },
	{ "7.x (sid's 7.2.13, libdw)", 7, true, true,
	  "A's module kept in the process's Dwfl: B's chains are unwound in it (B alone: they end at target)" },
};

const struct pv_memory *pv_memory_of(int major)
{
	size_t n = sizeof(pv_memories) / sizeof(pv_memories[0]), k = n - 1;
	if (major > 0)
		for (k = 0; k + 1 < n && major >= pv_memories[k + 1].from_major;)
			k++;
	return &pv_memories[k];
}

bool pv_regs_by_name(enum pv_profile p)
{
	return pv_valid_profile(p) && pv_profiles[p].regs_by_name;
}

uint64_t pv_text_addr(enum pv_profile p)
{
	return pv_valid_profile(p) ? pv_profiles[p].text_addr : 0x80;
}

uint64_t pv_load_vaddr(enum pv_profile p)
{
	return pv_valid_profile(p) && pv_profiles[p].load_at_text ? pv_profiles[p].text_addr : 0;
}

int pv_jitted_path(char *buf, size_t len, const char *dir, const struct jd_load *l)
{
	int n = snprintf(buf, len, "%s/jitted-%d-%" PRIu64 ".so", dir, (int)l->pid, l->code_index);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

void pv_layout(enum pv_profile prof, uint64_t code_addr, uint64_t code_size,
	       const struct pv_unwind_sizes *u, struct pv_layout *out)
{
	memset(out, 0, sizeof(*out));
	/* section addresses and the MMAP2 pgoff follow GEN_ELF_TEXT_OFFSET of the
	 * generation; libelf lays .text (sh_addralign 16) out after the Ehdr and
	 * the one Phdr, at file offset 0x80, in all of them */
	out->text_addr = pv_text_addr(prof);
	out->text_size = code_size;
	out->text_off = align_up(sizeof(Elf64_Ehdr) + sizeof(Elf64_Phdr), 16);
	out->has_unwind = u != NULL;
	if (u) {
		/* perf reads .eh_frame first, then the header (facts section 1) */
		uint64_t hs = u->eh_frame_hdr_size <= u->unwinding_size ? u->eh_frame_hdr_size : 0;
		out->eh_addr = align_up(out->text_addr + code_size, 8);
		out->eh_size = u->unwinding_size - hs;
		out->hdr_addr = out->eh_addr + out->eh_size;
		out->hdr_size = hs;
		out->eh_off = align_up(out->text_off + code_size, 8);
		out->hdr_off = align_up(out->eh_off + out->eh_size, 4);
	}
	out->load_offset = out->load_vaddr = pv_load_vaddr(prof);
	out->load_size = code_size;
	/* jit_repipe_code_load: len = mapped_size ? ALIGN_8(csize) + mapped_size : csize */
	out->map_start = code_addr;
	out->map_pgoff = out->text_addr;
	uint64_t ms = u ? u->mapped_size : 0;
	out->map_len = ms ? align_up(code_size, 8) + ms : code_size;
	uint64_t base = code_addr - out->map_pgoff;
	out->rt_text = base + out->text_addr;
	out->rt_eh = base + out->eh_addr;
	out->rt_hdr = base + out->hdr_addr;
	/* the PT_LOAD's vaddr (0x80 or 0) rounds down to 0 on any page size */
	out->lu_base = prof == PV_V61 ? code_addr : base;
	/* 5.10.y: segbase = base + sh_offset, i.e. base + sh_addr + (offset - addr) */
	if (prof == PV_510 && u)
		out->lu_base = base + (out->hdr_off - out->hdr_addr);
	/* the /tmp/jitted- rule of libdw is v6.8's */
	out->dw_base_tmp = prof == PV_V61 || prof == PV_510 ? base : code_addr;
	out->dw_base_other = base;
}

void pv_layout_load(enum pv_profile prof, const struct jd_load *l, struct pv_layout *out)
{
	struct pv_unwind_sizes u = { l->unwinding_size, l->eh_frame_hdr_size, l->mapped_size };
	pv_layout(prof, l->code_addr, l->code_size, l->has_unwind ? &u : NULL, out);
}

void pv_layout_move(enum pv_profile prof, const struct jd_move *m, uint64_t *start, uint64_t *len, uint64_t *pgoff)
{
	*start = m->new_code_addr;
	*pgoff = pv_text_addr(prof);
	*len = m->mapped_size ? align_up(m->code_size, 8) + m->mapped_size : m->code_size;
}

/* ---- perf's map tree for the pid ---- */

struct pv_builder {
	struct pv_view *pv;
	size_t cap_dsos, cap_maps;
	/* the jitted DSOs by code_index (open addressing, index + 1; 0 empty):
	 * a long dump's thousands of loads each look theirs up */
	uint32_t *jix;
	size_t njix;
	const char *dump_dir;       /* where perf takes the jitdump to be; NULL: its own path */
};

static struct pv_dso *find_file_dso(struct pv_view *pv, const char *path)
{
	for (size_t i = 0; i < pv->ndsos; i++)
		if (!pv->dsos[i].jitted && !strcmp(pv->dsos[i].path, path))
			return &pv->dsos[i];
	return NULL;
}

/* The jitted file's name is a function of (pid, code_index): compare those. */
static uint32_t *jix_slot(struct pv_builder *b, const struct jd_load *l)
{
	size_t mask = b->njix - 1, i = (size_t)((l->code_index ^ (uint64_t)l->pid << 40) * 0x9e3779b97f4a7c15ull >> 20) & mask;
	for (size_t k = 0; k < b->njix; k++, i = (i + 1) & mask) {
		uint32_t x = b->jix[i];
		if (!x)
			return &b->jix[i];
		const struct pv_dso *d = &b->pv->dsos[x - 1];
		if (d->load->code_index == l->code_index && d->load->pid == l->pid)
			return &b->jix[i];
	}
	return NULL;
}

static struct pv_dso *find_jitted_dso(struct pv_builder *b, const struct jd_load *l)
{
	struct pv_view *pv = b->pv;
	if (b->jix) {
		uint32_t *x = jix_slot(b, l);
		return x && *x ? &pv->dsos[*x - 1] : NULL;
	}
	for (size_t i = pv->ndsos; i-- > 0;) {
		const struct pv_dso *d = &pv->dsos[i];
		if (d->jitted && d->load->code_index == l->code_index && d->load->pid == l->pid)
			return &pv->dsos[i];
	}
	return NULL;
}

/* First map whose end lies above addr (maps are sorted and disjoint, so ends are too). */
static size_t first_ending_after(const struct pv_view *pv, uint64_t addr)
{
	size_t lo = 0, hi = pv->nmaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (pv->maps[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Insert nm; earlier maps it overlaps keep what perf's cut leaves of them (mt_cut). */
static int insert_map(struct pv_builder *b, const struct pv_map *nm, struct ju_err *err)
{
	struct pv_view *pv = b->pv;
	if (nm->end <= nm->start)
		return 0;
	if (pv->nmaps + 3 > PV_MAX_MAPS) {
		ju_errf(err, EINVAL, 0, "more than %u maps", PV_MAX_MAPS);
		return -ERANGE;
	}
	if (pv->nmaps + 3 > b->cap_maps) {
		size_t nc = b->cap_maps ? b->cap_maps * 2 : 64;
		struct pv_map *m = realloc(pv->maps, nc * sizeof(*m));
		if (!m) {
			ju_errf(err, EINVAL, 0, "out of memory");
			return -ENOMEM;
		}
		pv->maps = m;
		b->cap_maps = nc;
	}
	size_t i = first_ending_after(pv, nm->start), j = i;
	while (j < pv->nmaps && pv->maps[j].start < nm->end)
		j++;
	/* maps [i, j) overlap nm: what stays of them (at most a head of the
	 * first and a tail of the last: they are disjoint), then nm, in order */
	struct pv_map repl[3], after = { 0 };
	size_t nr = 0;
	bool have_after = false;
	for (size_t k = i; k < j; k++) {
		struct mt_piece p[2];
		size_t np = mt_cut(pv->maps[k].start, pv->maps[k].end, nm->start, nm->end, p);
		for (size_t q = 0; q < np; q++) {
			struct pv_map piece = pv->maps[k];
			piece.start = p[q].start;
			piece.end = p[q].end;
			piece.pgoff += p[q].pgoff_add;
			if (piece.end <= nm->start)
				repl[nr++] = piece;
			else {
				after = piece;
				have_after = true;
			}
		}
	}
	repl[nr++] = *nm;
	if (have_after)
		repl[nr++] = after;
	size_t tail = pv->nmaps - j;
	memmove(&pv->maps[i + nr], &pv->maps[j], tail * sizeof(*pv->maps));
	memcpy(&pv->maps[i], repl, nr * sizeof(*repl));
	pv->nmaps = i + nr + tail;
	return 0;
}

static struct pv_dso *new_dso(struct pv_builder *b, const char *path, bool jitted,
			      struct ju_err *err)
{
	struct pv_view *pv = b->pv;
	if (pv->ndsos >= b->cap_dsos) {
		ju_errf(err, EINVAL, 0, "internal: DSO table full");
		errno = ENOSPC;
		return NULL;
	}
	struct pv_dso *d = &pv->dsos[pv->ndsos];
	memset(d, 0, sizeof(*d));
	size_t n = strlen(path);
	if (n >= sizeof(d->path)) {
		ju_errf(err, EINVAL, 0, "path longer than %zu bytes: %.80s...", sizeof(d->path) - 1, path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	memcpy(d->path, path, n + 1);
	d->jitted = jitted;
	pv->ndsos++;
	return d;
}

/* File maps as perf has them with --call-graph dwarf, which records every
 * mapping (seen here with perf 6.1: r--p and rw-p segments too, where
 * .eh_frame_hdr of -z separate-code binaries lives).  Anonymous ones carry no
 * file data for perf's readers, so they are left out. */
static bool perf_keeps_file_map(const struct uw_map *m)
{
	static const char *const anon[] = { "//anon", "/dev/zero", "/anon_hugepage", "/memfd:",
					    "/SYSV" };
	if (!m->path || m->path[0] != '/' || m->end <= m->start)
		return false;
	for (size_t i = 0; i < sizeof(anon) / sizeof(anon[0]); i++)
		if (!strncmp(m->path, anon[i], strlen(anon[i])))
			return false;
	return true;
}

/* The kernel's named pseudo maps: with mmap_data (--call-graph dwarf) it
 * reports them (and every growth of the stack) as MMAP2 records by these
 * names, which perf inject -j never strips (it strips //anon after a
 * jitdump's marker).  perf has a map there, but a DSO without data. */
static bool perf_keeps_pseudo_map(const struct uw_map *m)
{
	return m->path && m->end > m->start && (!strcmp(m->path, "[stack]") || !strcmp(m->path, "[heap]"));
}

static int add_file_maps(struct pv_builder *b, const struct uw_map *maps, size_t nmaps,
			 struct ju_err *err)
{
	int rc;
	for (size_t i = 0; i < nmaps; i++) {
		const struct uw_map *m = &maps[i];
		if (perf_keeps_pseudo_map(m)) {
			struct pv_map pm = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .dso = NULL };
			if ((rc = insert_map(b, &pm, err)))
				return rc;
			continue;
		}
		if (!perf_keeps_file_map(m))
			continue;
		struct pv_dso *d = find_file_dso(b->pv, m->path);
		if (!d) {
			d = new_dso(b, m->path, false, err);
			if (!d)
				return -errno;
			if (!(d->perf_name = strdup(m->path))) {
				ju_errf(err, EINVAL, 0, "out of memory");
				return -ENOMEM;
			}
			if ((rc = pv_dso_load(d, true, err)))
				return rc;
		}
		struct pv_map pm = { .start = m->start, .end = m->end, .pgoff = m->pgoff, .dso = d };
		if ((rc = insert_map(b, &pm, err)))
			return rc;
	}
	return 0;
}

/* Where perf inject puts the file: dirname of the dump as perf opened it. */
static char *perf_jitted_name(const struct jd_file *jd, const char *dump_dir,
			      const struct jd_load *l, const char *written)
{
	if (dump_dir) {
		char name[sizeof(jd->path) + 64];
		if (pv_jitted_path(name, sizeof(name), strcmp(dump_dir, "/") ? dump_dir : "", l))
			return NULL;
		return strdup(name);
	}
	const char *slash = strrchr(jd->path, '/');
	if (!jd->path[0])
		return strdup(written);
	char dir[sizeof(jd->path)];
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == jd->path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - jd->path), jd->path);
	char name[sizeof(jd->path) + 64];
	if (pv_jitted_path(name, sizeof(name), strcmp(dir, "/") ? dir : "", l))
		return NULL;
	return strdup(name);
}

static int add_jit_load(struct pv_builder *b, const struct jd_file *jd, const struct jd_load *l,
			struct ju_err *err)
{
	struct pv_view *pv = b->pv;
	int rc;
	char path[sizeof(pv->dsos[0].path)];
	if (pv_jitted_path(path, sizeof(path), pv->dir, l)) {
		ju_errf(err, EINVAL, 0, "jitdump offset 0x%" PRIx64 ": jitted file path too long", l->file_off);
		return -ENAMETOOLONG;
	}
	struct pv_layout ly;
	pv_layout_load(pv->profile, l, &ly);
	uint64_t len = ly.map_len;
	if (l->code_size > UINT64_MAX - 8 || len < l->code_size || l->code_addr > UINT64_MAX - len) {
		ju_errf(err, EINVAL, 0, "jitdump offset 0x%" PRIx64 ": CODE_LOAD '%s' at 0x%" PRIx64
			 " + 0x%" PRIx64 " wraps around the address space", l->file_off,
			 l->name ? l->name : "", l->code_addr, len);
		return -EINVAL;
	}
	if ((rc = pv_write_jitted_elf(path, pv->profile, l, (uint16_t)jd->elf_mach, err))) {
		ju_err_prefix(err, "jitdump offset 0x%" PRIx64 ": CODE_LOAD '%s': ", l->file_off,
			      l->name ? l->name : "");
		return rc;
	}
	/* the same code_index again overwrites the file: perf's DSO of that
	 * name then has the last load's bytes for every map of it */
	struct pv_dso *d = find_jitted_dso(b, l);
	bool fresh = !d;
	if (!d && !(d = new_dso(b, path, true, err))) {
		rc = -errno;
		ju_err_prefix(err, "jitdump offset 0x%" PRIx64 ": ", l->file_off);
		return rc;
	}
	d->load = l;
	uint32_t *slot = fresh && b->jix ? jix_slot(b, l) : NULL;
	if (slot)
		*slot = (uint32_t)(d - pv->dsos) + 1;
	if (!d->perf_name && !(d->perf_name = perf_jitted_name(jd, b->dump_dir, l, path))) {
		ju_errf(err, EINVAL, 0, "jitdump offset 0x%" PRIx64 ": out of memory", l->file_off);
		return -ENOMEM;
	}
	if ((rc = pv_dso_load(d, false, err))) {
		ju_err_prefix(err, "jitdump offset 0x%" PRIx64 ": ", l->file_off);
		return rc;
	}
	struct pv_map pm = { .start = ly.map_start, .end = ly.map_start + len, .pgoff = ly.map_pgoff, .dso = d };
	if ((rc = insert_map(b, &pm, err))) {
		ju_err_prefix(err, "jitdump offset 0x%" PRIx64 ": ", l->file_off);
		return rc;
	}
	return 0;
}

/* jit_repipe_code_move: no file written; the MMAP2 of the load's file
 * (jitted-<pid>-<code_index>.so) at the new address, pgoff the text offset,
 * sized by the UNWINDING_INFO pending then (jd_move.mapped_size), over the
 * tree as any map; the old map stays.  A code_index no load wrote names a
 * file perf cannot open: a map without data. */
static int add_jit_move(struct pv_builder *b, const struct jd_move *m, struct ju_err *err)
{
	if (getenv("JU_NO_PERF_MOVE"))   /* tests only: the negative control */
		return 0;
	struct jd_load key = { .pid = m->pid, .code_index = m->code_index };
	uint64_t start, len, pgoff;
	pv_layout_move(b->pv->profile, m, &start, &len, &pgoff);
	if (m->code_size > UINT64_MAX - 8 || len < m->code_size || start > UINT64_MAX - len) {
		ju_errf(err, EINVAL, 0, "jitdump offset 0x%" PRIx64 ": CODE_MOVE to 0x%" PRIx64 " + 0x%" PRIx64
			 " wraps around the address space", m->file_off, m->new_code_addr, len);
		return -EINVAL;
	}
	struct pv_map pm = { .start = start, .end = start + len, .pgoff = pgoff, .dso = find_jitted_dso(b, &key) };
	int rc = insert_map(b, &pm, err);
	if (rc)
		ju_err_prefix(err, "jitdump offset 0x%" PRIx64 ": ", m->file_off);
	return rc;
}

/* The loads and moves in file order, as perf inject -j injects them. */
static int add_jit_loads(struct pv_builder *b, const struct jd_file *jd, struct ju_err *err)
{
	int rc;
	if (jd->elf_mach > UINT16_MAX) {
		ju_errf(err, EINVAL, 0, "jitdump offset 0xc: elf_mach %u is not an ELF machine", jd->elf_mach);
		return -EINVAL;
	}
	size_t k = 0;
	for (size_t i = 0; i <= jd->nloads; i++) {
		for (; k < jd->nmoves && jd->moves[k].nloads_before <= i; k++)
			if ((rc = add_jit_move(b, &jd->moves[k], err)))
				return rc;
		if (i < jd->nloads && (rc = add_jit_load(b, jd, &jd->loads[i], err)))
			return rc;
	}
	return 0;
}

int pv_build(struct pv_view *pv, enum pv_profile prof, const struct uw_map *maps, size_t nmaps,
	     const struct jd_file *jd, const char *outdir, struct ju_err *err)
{
	return pv_build_at(pv, prof, maps, nmaps, jd, outdir, NULL, err);
}

int pv_build_at(struct pv_view *pv, enum pv_profile prof, const struct uw_map *maps, size_t nmaps,
		const struct jd_file *jd, const char *outdir, const char *dump_dir,
		struct ju_err *err)
{
	int rc;
	memset(pv, 0, sizeof(*pv));
	if (!pv_valid_profile(prof)) {
		ju_errf(err, EINVAL, 0, "unknown perf profile %d", (int)prof);
		return -EINVAL;
	}
	pv->profile = prof;
	if (outdir) {
		struct stat st;
		if (strlen(outdir) >= sizeof(pv->dir)) {
			ju_errf(err, EINVAL, 0, "output directory name too long");
			return -ENAMETOOLONG;
		}
		int serr = stat(outdir, &st) < 0 ? errno : 0;
		if (serr || !S_ISDIR(st.st_mode)) {
			ju_errf(err, EINVAL, 0, "%s: %s", outdir, serr ? strerror(serr) : "not a directory");
			return serr ? -serr : -ENOTDIR;
		}
		snprintf(pv->dir, sizeof(pv->dir), "%s", outdir);
	} else if (jd && (jd->nloads || jd->nmoves)) {
		/* only when there is a file to write: no empty directories left behind */
		snprintf(pv->dir, sizeof(pv->dir), "/tmp/jitunwind-pv-XXXXXX");
		if (!mkdtemp(pv->dir)) {
			int e = errno;
			ju_errf(err, EINVAL, 0, "cannot create a directory under /tmp: %s", strerror(e));
			pv->dir[0] = 0;
			return -e;
		}
		pv->private_dir = true;
	}
	struct pv_builder b = { .pv = pv, .dump_dir = dump_dir };
	size_t nl = jd ? jd->nloads : 0, nmv = jd ? jd->nmoves : 0;
	if (nmaps > PV_MAX_MAPS || nl > PV_MAX_MAPS || nmv > PV_MAX_MAPS) {
		ju_errf(err, EINVAL, 0, "too many maps (%zu) or loads (%zu)", nmaps, nl);
		rc = -ERANGE;
		goto fail;
	}
	/* every map and load may bring a DSO: size the table once so map->dso stays valid */
	b.cap_dsos = nmaps + nl;
	if (b.cap_dsos) {
		pv->dsos = calloc(b.cap_dsos, sizeof(*pv->dsos));
		if (!pv->dsos) {
			ju_errf(err, EINVAL, 0, "out of memory for %zu DSOs", b.cap_dsos);
			rc = -ENOMEM;
			goto fail;
		}
	}
	/* a table twice the loads (a power of two); without one, the scan */
	for (b.njix = 64; b.njix < 2 * nl; b.njix *= 2)
		;
	b.jix = nl > 64 ? calloc(b.njix, sizeof(*b.jix)) : NULL;
	/* perf sees the process's file maps first, then the MMAP2s it injects in load order */
	if ((rc = add_file_maps(&b, maps, nmaps, err)))
		goto fail;
	if (jd && (rc = add_jit_loads(&b, jd, err)))
		goto fail;
	free(b.jix);
	return 0;
fail:
	free(b.jix);
	pv_fini(pv);
	return rc;
}

void pv_fini(struct pv_view *pv)
{
	for (size_t i = 0; i < pv->ndsos; i++) {
		struct pv_dso *d = &pv->dsos[i];
		if (pv->private_dir && d->jitted)
			unlink(d->path);
		pv_dso_clear(d);
		free(d->perf_name);
	}
	if (pv->private_dir && pv->dir[0])
		rmdir(pv->dir);
	free(pv->dsos);
	free(pv->maps);
	memset(pv, 0, sizeof(*pv));
}

const struct pv_map *pv_find(const struct pv_view *pv, uint64_t addr)
{
	size_t i = first_ending_after(pv, addr);
	if (i < pv->nmaps && pv->maps[i].start <= addr)
		return &pv->maps[i];
	return NULL;
}

bool pv_read(const struct pv_view *pv, uint64_t addr, void *buf, size_t n)
{
	const struct pv_map *m = pv_find(pv, addr);
	if (!m || !m->dso || !m->dso->image)
		return false;
	uint64_t off = addr - m->start + m->pgoff;
	if (off < m->pgoff || off > m->dso->size || n > m->dso->size - off)
		return false;
	memcpy(buf, m->dso->image + off, n);
	return true;
}

const char *pv_symbolize(const struct pv_view *pv, uint64_t addr)
{
	const struct pv_map *m = pv_find(pv, addr);
	if (!m || !m->dso || !m->dso->nsyms)
		return NULL;
	/* map_ip: a file offset, compared with file-relative symbols */
	uint64_t off = addr - m->start + m->pgoff;
	const struct pv_dso *d = m->dso;
	size_t lo = 0, hi = d->nsyms;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->syms[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct pv_sym *s = &d->syms[lo - 1];
	return off < s->end ? s->name : NULL;
}
