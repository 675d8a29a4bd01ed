/* elfutils libdw fed as perf's util/unwind-libdw.c feeds it (facts section
 * 3), over perf's view (perfview.h) and the sample only.  One Dwfl per view
 * (perf caches it per map set too): modules are reported as perf's
 * __report_module meets them and kept, the thread state is attached once,
 * and each sample only re-runs the thread's frames.  Frames libdw found without CFI
 * (its x86_64 backend walks rbp when no module or no FDE covers the pc) are
 * flagged UW_F_FALLBACK.
 *
 * The next view whose process files perf maps alike (fuzz-cfi's cases: one
 * capture child, only the JIT code differs) takes the Dwfl over with the
 * modules of those files (dw_kept below); the JIT's modules go with the view
 * that reported them. */
#include "unwinders/view.h"
#include "unwinders/model/files.h"

#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "juerr.h"

#define DW_CACHE 1024   /* CFI coverage by pc, per view */

struct dw_cfi_slot {
	uint64_t pc;
	int8_t state;       /* 0 empty, 1 covered, -1 not covered */
};

/* A map whose module a later view may find already reported: a file of the
 * process (not a jitted one) with data, by its place and its file entry. */
struct dw_keymap {
	uint64_t start, end, pgoff;
	const struct uw_file *file;   /* held (uw_file_hold): the address names one file */
};

/* A view's own Dwfl and what lets a later view take it over: the key its
 * modules were reported under, the modules kept (process files only) and the
 * ELF header the thread state took its backend from. */
struct dw_kept {
	Dwfl *dwfl;
	struct dw_state *st;          /* the thread callbacks' argument: the state using it now */
	bool attached;                /* dwfl_attach_state done (with pin) */
	bool keyable;                 /* may be kept for the next view */
	Elf *pin;                     /* a bare ELF header as the backend's source */
	Elf64_Ehdr pin_hdr;
	pid_t pid;
	int profile;
	struct dw_keymap *key;
	size_t nkey;
	Dwfl_Module **mods;           /* kept modules (and their ranges, for the overlap check) */
	uint64_t *mod_lo, *mod_hi;
	size_t nmods;
};

struct dw_state {
	Dwfl *dwfl;
	struct dw_kept *kd;         /* the view's own Dwfl (dwfl, unless proc) */
	size_t nmaps;               /* of pv */
	Dwfl_Module **order;        /* modules as this view first settled on them */
	size_t norder;
	const struct pv_view *pv;
	pid_t pid;
	bool attached;
	Dwfl_Module **mod_of_map;   /* per pv map: the module perf's __report_module settled on */
	int8_t *map_tried;          /* per pv map: 1 reported, -1 perf could not report it */
	struct dw_cfi_slot cache[DW_CACHE];
	/* sharing the process's Dwfl (uw_sample.dwfl_proc) for one sample:
	 * the view's own, set aside */
	bool proc, own_attached;
	Dwfl *own;
	/* per sample */
	const struct uw_view *v;
	const struct uw_sample *s;
	struct uw_result *r;
	bool next_fallback;         /* the frame the current one unwinds to has no CFI */
	bool next_earlier;          /* ... is found with an earlier load's module (dw_earlier) */
	uint64_t fallback_pc;        /* the pc whose missing CFI made the next frame a fallback */
	bool stopped;               /* the frame callback set r->stop */
	bool mem_fail;
	uint64_t mem_fail_addr;
};

static char *dw_debuginfo_path;

static const Dwfl_Callbacks dw_offline = {
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.debuginfo_path = &dw_debuginfo_path,
	.section_address = dwfl_offline_section_address,
};

static pid_t dw_next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	/* one thread only */
	if (*thread_argp)
		return 0;
	*thread_argp = arg;
	return dwfl_pid(dwfl);
}

/* access_dso_mem: the DSO file through perf's map (map_ip), all 8 bytes or nothing. */
static bool dw_dso_read(const struct pv_view *pv, uint64_t addr, Dwarf_Word *val)
{
	uint64_t v;
	if (!pv_read(pv, addr, &v, sizeof(v)))
		return false;
	*val = v;
	return true;
}

static struct dw_state *dw_arg(void *arg);

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct dw_state *st = dw_arg(arg);
	const struct uw_sample *s = st->s;
	/* profile v6.12 on an arch whose name perf maps to none: perf_arch_reg_sp's 0 */
	int sp_id = pv_regs_by_name(st->pv->profile) && s->arch->perf_name_unknown ? 0 : s->arch->perf_sp;
	if (!(s->mask >> sp_id & 1))
		return false;
	uint64_t start = uw_reg(s, sp_id), end = start + s->stack_size, v;
	if (addr + sizeof(Dwarf_Word) < addr)
		return false;
	if (addr >= start && addr + sizeof(Dwarf_Word) <= end && uw_stack_read(s, addr, &v)) {
		*result = v;
		return true;
	}
	if (dw_dso_read(st->pv, addr, result))
		return true;
	if (!st->mem_fail) {
		st->mem_fail = true;
		st->mem_fail_addr = addr;
	}
	return false;
}

/* perf's libdw__arch_set_initial_registers: DWARF registers from the perf
 * ones (x86_64: 0-16, the last being the ip; arm64: x0-x30, sp), then the pc. */
static bool dw_set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct dw_state *st = dw_arg(arg);
	const struct uw_sample *s = st->s;
	const struct uw_arch *a = s->arch;
	Dwarf_Word regs[40];
	int n = a->facts->dw_pc == a->facts->dw_ra ? a->ndw : a->facts->dw_pc;
	if (n <= 0 || n > (int)(sizeof(regs) / sizeof(regs[0])))
		return false;
	for (int d = 0; d < n; d++) {
		int p = a->perf_of_dw[d];
		regs[d] = p >= 0 && (s->mask >> p & 1) ? s->regs[p] : 0;
	}
	if (!dwfl_thread_state_registers(thread, 0, (unsigned)n, regs))
		return false;
	dwfl_thread_state_register_pc(thread, uw_reg(s, a->perf_ip));
	return true;
}

static const Dwfl_Thread_Callbacks dw_thread_cbs = {
	.next_thread = dw_next_thread,
	.memory_read = dw_memory_read,
	.set_initial_registers = dw_set_initial_registers,
};

/* The DSO's name as perf knows it (a jitted one: next to the dump). */
static const char *dw_perf_name(const struct pv_dso *d)
{
	return d->perf_name ? d->perf_name : d->path;
}

/* perf >= 6.8 reports jitted DSOs at map start: their only PT_LOAD sits at
 * the text's own offset, and dwfl_report_elf(add_p_vaddr = false) takes BASE
 * as the module's start (facts section 3).  The rule is perf's literal
 * prefix test on the DSO's name. */
static uint64_t dw_base(const struct pv_view *pv, const struct pv_map *m)
{
	bool tmp = !strncmp(dw_perf_name(m->dso), "/tmp/jitted-", 12);
	if (m->dso->jitted && m->dso->load) {
		/* a jitted DSO's injected MMAP2, still whole: the one perf layout's bases */
		struct pv_layout ly;
		pv_layout_load(pv->profile, m->dso->load, &ly);
		if (m->start == ly.map_start && m->pgoff == ly.map_pgoff)
			return tmp ? ly.dw_base_tmp : ly.dw_base_other;
	}
	/* the process's own files, and a jitted mapping cut at its front */
	if (pv->profile != PV_V61 && pv->profile != PV_510 && tmp)
		return m->start;
	return m->start - m->pgoff;
}

/* An anonymous mapping perf keeps: without a jitdump for the process
 * (perf inject -j strips a JIT process's //anon maps), e.g. CPython -X perf's
 * trampolines named by a perf map.  Its DSO is no ELF. */
static bool dw_anon_kept(const struct uw_view *v, uint64_t addr)
{
	if (!v || v->jd)
		return false;
	for (size_t i = 0; i < v->nmaps; i++) {
		const struct uw_map *m = &v->maps[i];
		if (addr >= m->start && addr < m->end && m->path &&
		    (!strncmp(m->path, "//anon", 6) || !strncmp(m->path, "[anon:", 6) || !strncmp(m->path, "/memfd:", 7)))
			return true;
	}
	return false;
}

/* The jitted files perf 7's Dwfl per process had reported modules of, by
 * base: the first one at each (dw_earlier), emptied with that Dwfl. */
struct dw_jload { uint64_t base; char *path; };

/* perf >= 7's Dwfl per process, kept across samples and views, and the
 * jitted files it reported modules of (jl) */
static struct {
	uint64_t key;
	Dwfl *dwfl;
	bool attached;
	struct dw_state *cur;         /* the state the thread callbacks read through */
	struct { struct dw_jload *e; size_t cap, n; } jl;
} dw_proc;

static struct dw_jload *dw_jl_slot(uint64_t base)
{
	size_t mask = dw_proc.jl.cap - 1, i = (size_t)((base >> 4) * 0x9e3779b97f4a7c15ull) & mask;
	for (size_t k = 0; k < dw_proc.jl.cap; k++, i = (i + 1) & mask)
		if (!dw_proc.jl.e[i].path || dw_proc.jl.e[i].base == base)
			return &dw_proc.jl.e[i];
	return NULL;
}

static void dw_jl_clear(void)
{
	for (size_t i = 0; i < dw_proc.jl.cap; i++)
		free(dw_proc.jl.e[i].path);
	free(dw_proc.jl.e);
	memset(&dw_proc.jl, 0, sizeof(dw_proc.jl));
}

static const char *dw_jl_first(uint64_t base)
{
	const struct dw_jload *e = dw_proc.jl.cap ? dw_jl_slot(base) : NULL;
	return e && e->path ? e->path : NULL;
}

/* remember path at base unless a file is there already (out of memory: not remembered) */
static void dw_jl_note(uint64_t base, const char *path)
{
	if (dw_jl_first(base))
		return;
	if (2 * (dw_proc.jl.n + 1) > dw_proc.jl.cap) {
		size_t cap = dw_proc.jl.cap ? 2 * dw_proc.jl.cap : 64;
		struct dw_jload *old = dw_proc.jl.e, *e = calloc(cap, sizeof(*e));
		size_t ocap = dw_proc.jl.cap;
		if (!e)
			return;
		dw_proc.jl.e = e;
		dw_proc.jl.cap = cap;
		for (size_t i = 0; i < ocap; i++)
			if (old[i].path)
				*dw_jl_slot(old[i].base) = old[i];
		free(old);
	}
	struct dw_jload *e = dw_jl_slot(base);
	if (e && (e->path = strdup(path))) {
		e->base = base;
		dw_proc.jl.n++;
	}
}

/* The module perf's __report_module settles on for map m: the Dwfl's module
 * at addr if it starts at the map's base, else one reported there (perf's
 * short name; the file is read where the view wrote it); NULL when that
 * fails. */
static Dwfl_Module *dw_module_at(struct dw_state *st, const struct pv_map *m, uint64_t addr)
{
	uint64_t base = dw_base(st->pv, m);
	Dwfl_Module *mod = dwfl_addrmodule(st->dwfl, addr);
	Dwarf_Addr start = 0;
	if (mod && (!dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL) || start != base))
		mod = NULL;
	if (!mod && m->dso->is_elf) {
		const char *name = dw_perf_name(m->dso), *slash = strrchr(name, '/');
		mod = dwfl_report_elf(st->dwfl, slash ? slash + 1 : name, m->dso->path, -1, base, false);
	}
	if (mod && st->proc && m->dso->jitted)
		dw_jl_note(base, m->dso->path);
	return mod;
}

/* The modules in the order a new Dwfl would have created them in this view
 * (at most one per map). */
static void dw_note_order(struct dw_state *st, Dwfl_Module *mod)
{
	if (!mod)
		return;
	for (size_t k = 0; k < st->norder; k++)
		if (st->order[k] == mod)
			return;
	if (st->norder < st->nmaps)
		st->order[st->norder++] = mod;
}

/* perf's __report_module(addr): nothing to do without a map (but an
 * anonymous map perf keeps is one: dwfl_report_elf of a non-ELF fails); in
 * [stack] or [heap] dwfl_report_elf of the pseudo file fails, so entry()
 * does and the chain ends before that frame; else the module covering addr
 * must start at the map's base, or one is reported there.  Modules
 * accumulate in the cached Dwfl; each map's outcome is kept, since reporting
 * it again gives the same answer (but not in perf 7's Dwfl per process,
 * which other views' samples fill too). */
static bool dw_report(struct dw_state *st, uint64_t addr)
{
	const struct pv_map *m = pv_find(st->pv, addr);
	if (!m)
		return !dw_anon_kept(st->v, addr);
	if (!m->dso)
		return false;
	if (st->proc) {
		Dwfl_Module *mod = dw_module_at(st, m, addr);
		return mod && dwfl_addrmodule(st->dwfl, addr) == mod;
	}
	size_t i = (size_t)(m - st->pv->maps);
	if (!st->map_tried[i]) {
		st->mod_of_map[i] = dw_module_at(st, m, addr);
		st->map_tried[i] = st->mod_of_map[i] ? 1 : -1;
		dw_note_order(st, st->mod_of_map[i]);
	}
	return st->mod_of_map[i] && dwfl_addrmodule(st->dwfl, addr) == st->mod_of_map[i];
}

/* Whether libdw's __libdwfl_frame_unwind finds CFI for pc: a module, then an
 * FDE in its .eh_frame or .debug_frame.  Without, it walks frame pointers. */
static bool dw_has_cfi(struct dw_state *st, uint64_t pc)
{
	struct dw_cfi_slot *slot = &st->cache[(pc ^ pc >> 12) % DW_CACHE];
	if (slot->state && slot->pc == pc)
		return slot->state > 0;
	bool ok = false;
	Dwfl_Module *mod = dwfl_addrmodule(st->dwfl, pc);
	if (!mod)
		return false;   /* not cached: a later report may bring one */
	for (int pass = 0; pass < 2 && !ok; pass++) {
		Dwarf_Addr bias = 0;
		Dwarf_CFI *cfi = pass ? dwfl_module_dwarf_cfi(mod, &bias) : dwfl_module_eh_cfi(mod, &bias);
		Dwarf_Frame *fr = NULL;
		if (cfi && dwarf_cfi_addrframe(cfi, pc - bias, &fr) == 0)
			ok = true;
		free(fr);
	}
	slot->pc = pc;
	slot->state = ok ? 1 : -1;
	return ok;
}

/* perf 7's Dwfl per process keeps the modules earlier loads reported at an
 * address (dropped only when perf removes a map: maps__remove, never when a
 * load's MMAP2 is inserted over another), and libdwfl's answers at that
 * address follow from them: a chain through a load at a base an earlier
 * load's module was reported at is unwound in a Dwfl that holds both.  true
 * so, with r->earlier_why told once. */
static bool dw_earlier(struct dw_state *st, uint64_t addr, struct uw_result *r)
{
	const struct pv_map *m = st->proc ? pv_find(st->pv, addr) : NULL;
	const char *file = m && m->dso && m->dso->jitted ? dw_jl_first(dw_base(st->pv, m)) : NULL;
	if (!file || !strcmp(file, m->dso->path))
		return false;
	if (!r->earlier_why[0]) {
		const char *was = strrchr(file, '/'), *now = strrchr(m->dso->path, '/');
		snprintf(r->earlier_why, sizeof(r->earlier_why),
			 "frame %d at 0x%llx: perf's Dwfl for the process holds %s's module reported there before %s's", r->n,
			 (unsigned long long)addr, was ? was + 1 : file, now ? now + 1 : m->dso->path);
	}
	return true;
}

__attribute__((format(printf, 3, 4)))
static int dw_stop(struct dw_state *st, enum uw_stop stop, const char *fmt, ...)
{
	va_list ap;
	st->stopped = true;
	st->r->stop = stop;
	va_start(ap, fmt);
	vsnprintf(st->r->why, sizeof(st->r->why), fmt, ap);
	va_end(ap);
	return DWARF_CB_ABORT;
}

/* perf's frame_callback: report the pc's module, ask for isactivation (which
 * unwinds this frame, the first excepted), then entry(pc or pc - 1). */
static int dw_frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dw_state *st = arg;
	struct uw_result *r = st->r;
	Dwarf_Addr pc;
	bool act, first = r->n == 0;
	st->mem_fail = false;
	if (!dwfl_frame_pc(state, &pc, NULL))
		return dw_stop(st, UW_STOP_ERROR, "dwfl_frame_pc: %s", dwfl_errmsg(-1));
	dw_report(st, pc);
	/* libdw unwinds a caller's frame from pc - 1: is there CFI there? */
	bool cfi = first || dw_has_cfi(st, pc - 1);
	if (!dwfl_frame_pc(state, &pc, &act))
		return dw_stop(st, UW_STOP_ERROR, "dwfl_frame_pc: %s", dwfl_errmsg(-1));
	uint64_t adj = act ? pc : pc - 1;
	if (!dw_report(st, adj))
		return dw_stop(st, UW_STOP_NO_INFO, "perf reports no module covering 0x%llx%s",
			       (unsigned long long)adj,
			       pv_find(st->pv, adj) && !pv_find(st->pv, adj)->dso ? " (its map is [stack] or [heap])" : "");
	if (first)
		cfi = dw_has_cfi(st, pc);
	/* perf stores pc - 1 for non-activation frames: undone */
	r->addr[r->n] = pc;
	r->flags[r->n] = !first && st->next_fallback ? UW_F_FALLBACK : 0;
	if (!first && st->next_earlier)
		r->flags[r->n] |= UW_F_EARLIER_RULES;
	st->next_earlier = dw_earlier(st, adj, r);
	if (!first && act)
		r->flags[r->n] |= UW_F_ACTIVATION;
	if ((r->flags[r->n] & UW_F_FALLBACK) && !r->fallback_why[0])
		snprintf(r->fallback_why, sizeof(r->fallback_why),
			 "frame %d: no CFI for 0x%llx in perf's view (libdw walked frame pointers)", r->n,
			 (unsigned long long)st->fallback_pc);
	r->n++;
	st->next_fallback = !cfi;
	st->fallback_pc = first ? pc : pc - 1;
	if (r->n >= UW_MAX_FRAMES)
		return dw_stop(st, UW_STOP_MAX, "frame limit %d", UW_MAX_FRAMES);
	return DWARF_CB_OK;
}

static struct dw_kept *dw_keep;       /* the last view's Dwfl, for the next alike */
static unsigned long dw_begun;        /* views' own Dwfls begun (tests) */

unsigned long uw_libdw_dwfls_begun(void)
{
	return dw_begun;
}

static void dw_kept_free(struct dw_kept *kd)
{
	if (!kd)
		return;
	if (kd->dwfl)
		dwfl_end(kd->dwfl);       /* the thread state's backend first: it points at pin */
	if (kd->pin)
		elf_end(kd->pin);
	for (size_t i = 0; i < kd->nkey; i++)
		uw_file_put(kd->key[i].file);
	free(kd->key);
	free(kd->mods);
	free(kd->mod_lo);
	free(kd->mod_hi);
	free(kd);
}

/* In a forked child (uw_files_child): the kept Dwfl and its files' mappings
 * are the parent's, none of the child's maps. */
static void dw_forget(void)
{
	dw_kept_free(dw_keep);
	dw_keep = NULL;
}

void uw_libdw_forget(void)
{
	dw_forget();
}

/* A process file's map, whose module may outlive the view. */
static bool dw_key_map(const struct pv_map *m)
{
	return m->dso && !m->dso->jitted && m->dso->is_elf;
}

/* The view's key: every key map, with its file held.  false: the view has a
 * file perf reads that no file entry names, its Dwfl is not kept. */
static bool dw_make_key(struct dw_kept *kd, const struct pv_view *pv)
{
	kd->key = calloc(pv->nmaps ? pv->nmaps : 1, sizeof(*kd->key));
	if (!kd->key)
		return false;
	for (size_t i = 0; i < pv->nmaps; i++) {
		const struct pv_map *m = &pv->maps[i];
		if (!dw_key_map(m))
			continue;
		if (!m->dso->file)
			return false;
		uw_file_hold(m->dso->file);
		kd->key[kd->nkey++] = (struct dw_keymap){ m->start, m->end, m->pgoff, m->dso->file };
	}
	return true;
}

/* Whether the kept Dwfl's modules are what this view would report: the same
 * pid, profile and key maps, and no other map of the view (a JIT's, a pseudo
 * map) inside a kept module's range. */
static bool dw_keep_fits(const struct dw_kept *k, const struct dw_kept *kd, const struct pv_view *pv)
{
	if (k->pid != kd->pid || k->profile != kd->profile || k->nkey != kd->nkey ||
	    memcmp(k->key, kd->key, kd->nkey * sizeof(*kd->key)))
		return false;
	for (size_t i = 0; i < pv->nmaps; i++) {
		const struct pv_map *m = &pv->maps[i];
		for (size_t j = 0; !dw_key_map(m) && j < k->nmods; j++)
			if (m->start < k->mod_hi[j] && k->mod_lo[j] < m->end)
				return false;
	}
	return true;
}

/* At the view's end: only the process files' modules stay (those kept
 * before and those this view reported for key maps), the JIT's are removed
 * (dwfl_report_begin .. _end).  false: the Dwfl cannot be kept. */
static bool dw_prune(struct dw_state *st)
{
	struct dw_kept *kd = st->kd;
	size_t nmaps = st->pv->nmaps, cap = kd->nmods + nmaps + 1, n = 0;
	Dwfl_Module **mods = calloc(cap, sizeof(*mods));
	uint64_t *lo = calloc(cap, sizeof(*lo)), *hi = calloc(cap, sizeof(*hi));
	const char **names = calloc(cap, sizeof(*names));
	bool ok = mods && lo && hi && names;
	for (size_t i = 0; ok && i < kd->nmods + nmaps; i++) {
		Dwfl_Module *mod = NULL;
		if (i < kd->nmods)
			mod = kd->mods[i];
		else if (dw_key_map(&st->pv->maps[i - kd->nmods]))
			mod = st->mod_of_map[i - kd->nmods];
		bool seen = !mod;
		for (size_t j = 0; !seen && j < n; j++)
			seen = mods[j] == mod;
		if (seen)
			continue;
		Dwarf_Addr a, b;
		names[n] = dwfl_module_info(mod, NULL, &a, &b, NULL, NULL, NULL, NULL);
		lo[n] = a;
		hi[n] = b;
		mods[n++] = mod;
		ok = names[n - 1] != NULL;
	}
	if (ok) {
		dwfl_report_begin(kd->dwfl);
		for (size_t j = 0; j < n; j++)
			ok &= dwfl_report_module(kd->dwfl, names[j], lo[j], hi[j]) == mods[j];
		ok &= dwfl_report_end(kd->dwfl, NULL, NULL) == 0;
	}
	free(names);
	free(kd->mods);
	free(kd->mod_lo);
	free(kd->mod_hi);
	kd->mods = mods;
	kd->mod_lo = lo;
	kd->mod_hi = hi;
	kd->nmods = ok ? n : 0;
	return ok;
}

static void dw_close(void *state)
{
	struct dw_state *st = state;
	if (!st)
		return;
	struct dw_kept *kd = st->kd;
	/* kept: unless a forked child could not be made to give its mappings
	 * up (libelf maps the files without MADV_DONTFORK: a capture child
	 * would list them in its maps, and perf would be told of them) */
	if (kd && kd->keyable && kd->dwfl && st->mod_of_map && !uw_files_on_child(dw_forget) && dw_prune(st)) {
		kd->st = NULL;
		dw_kept_free(dw_keep);
		dw_keep = kd;
	} else {
		dw_kept_free(kd);
	}
	free(st->mod_of_map);
	free(st->map_tried);
	free(st->order);
	free(st);
}

/* A new Dwfl for the view (kd's, begun again when a kept one does not fit). */
static int dw_begin(struct dw_state *st)
{
	struct dw_kept *kd = st->kd;
	Dwfl *d = dwfl_begin(&dw_offline);
	if (!d)
		return -ENOMEM;
	dw_begun++;
	if (kd->dwfl)
		dwfl_end(kd->dwfl);
	if (kd->pin)
		elf_end(kd->pin);
	kd->pin = NULL;
	kd->dwfl = st->dwfl = d;
	kd->attached = false;
	kd->nmods = 0;
	memset(st->mod_of_map, 0, st->nmaps * sizeof(*st->mod_of_map));
	memset(st->map_tried, 0, st->nmaps * sizeof(*st->map_tried));
	memset(st->cache, 0, sizeof(st->cache));
	st->norder = 0;
	return 0;
}

static int dw_open(const struct uw_view *v, void **state, struct ju_err *err)
{
	struct dw_state *st = calloc(1, sizeof(*st));
	*state = st;
	if (!st) {
		ju_errf(err, EINVAL, 0, "libdw: out of memory");
		return -ENOMEM;
	}
	if (!v || !v->pv)
		return 0;   /* every sample then says "no perf view" */
	const struct pv_view *pv = v->pv;
	st->pv = pv;
	st->pid = v->jd && v->jd->pid ? (pid_t)v->jd->pid : 1;
	size_t n = pv->nmaps ? pv->nmaps : 1;
	st->nmaps = n;
	st->mod_of_map = calloc(n, sizeof(*st->mod_of_map));
	st->map_tried = calloc(n, sizeof(*st->map_tried));
	st->order = calloc(n, sizeof(*st->order));
	struct dw_kept *kd = calloc(1, sizeof(*kd));
	if (kd) {
		kd->pid = st->pid;
		kd->profile = (int)pv->profile;
		kd->keyable = dw_make_key(kd, pv);
	}
	if (kd && kd->keyable && dw_keep && dw_keep_fits(dw_keep, kd, pv)) {
		/* the same key: the kept Dwfl (its modules, its thread state) */
		dw_kept_free(kd);
		kd = dw_keep;
		dw_keep = NULL;
	}
	st->kd = kd;
	if (kd) {
		kd->st = st;
		st->dwfl = kd->dwfl;
	}
	if (!st->mod_of_map || !st->map_tried || !st->order || !kd || (!kd->dwfl && dw_begin(st))) {
		ju_errf(err, EINVAL, 0, "libdw: dwfl_begin: %s", dwfl_errmsg(-1));
		dw_close(st);
		*state = NULL;
		return -ENOMEM;
	}
	return 0;
}


static struct dw_state *dw_arg(void *arg)
{
	return arg == (void *)&dw_proc ? dw_proc.cur : ((struct dw_kept *)arg)->st;
}

static int dw_use_proc(struct dw_state *st, uint64_t key)
{
	if (dw_proc.key != key || !dw_proc.dwfl) {
		Dwfl *d = dwfl_begin(&dw_offline);
		if (!d)
			return -ENOMEM;
		if (dw_proc.dwfl)
			dwfl_end(dw_proc.dwfl);
		dw_jl_clear();
		dw_proc.dwfl = d;
		dw_proc.key = key;
		dw_proc.attached = false;
	}
	st->own = st->dwfl;
	st->own_attached = st->attached;
	st->dwfl = dw_proc.dwfl;
	st->attached = dw_proc.attached;
	st->proc = true;
	dw_proc.cur = st;
	memset(st->cache, 0, sizeof(st->cache));   /* another state's modules may answer now */
	return 0;
}

/* The Dwfl kept for process proc is dropped (a new replay of that process). */
void uw_libdw_flush(uint64_t proc)
{
	if (dw_proc.dwfl && dw_proc.key == proc) {
		dwfl_end(dw_proc.dwfl);
		dw_proc.dwfl = NULL;
		dw_proc.attached = false;
	}
}

static int dw_unwind_in(struct dw_state *st, const struct uw_sample *s, struct uw_result *r, uint64_t ip);

static int dw_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		     struct uw_result *r)
{
	struct dw_state *st = state;
	r->fallback_why[0] = 0;
	r->earlier_why[0] = 0;
	r->n = 0;
	r->why[0] = 0;
	r->stop = UW_STOP_END;
	if (st)
		st->next_earlier = false;
	if (!st || !st->pv || !v || v->pv != st->pv) {
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "no perf view");
		return 0;
	}
	uint64_t ip = uw_reg(s, s->arch->perf_ip);
	st->v = v;
	if (!s->dwfl_proc && s->dwfl_fresh && st->norder) {
		st->attached = false;
		if (dw_begin(st)) {
			r->stop = UW_STOP_ERROR;
			snprintf(r->why, sizeof(r->why), "dwfl_begin: %s", dwfl_errmsg(-1));
			return 0;
		}
	}
	if (s->dwfl_proc && dw_use_proc(st, s->dwfl_proc)) {
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "dwfl_begin: %s", dwfl_errmsg(-1));
		return 0;
	}
	int rc = dw_unwind_in(st, s, r, ip);
	if (st->proc) {
		/* back to the view's own Dwfl */
		dw_proc.attached = st->attached;
		st->dwfl = st->own;
		st->attached = st->own_attached;
		st->proc = false;
	}
	return rc;
}

/* The ELF a new Dwfl's dwfl_attach_state(NULL) takes the backend from: its
 * first module's (creation order) that is no vDSO and no deleted file. */
static Elf *dw_first_elf(const struct dw_state *st)
{
	for (size_t k = 0; k < st->norder; k++) {
		const char *name = dwfl_module_info(st->order[k], NULL, NULL, NULL, NULL, NULL, NULL, NULL);
		size_t len = name ? strlen(name) : 0;
		if (!name || !strncmp(name, "[vdso: ", 7) || (len >= 10 && !strcmp(name + len - 10, " (deleted)")))
			continue;
		Dwarf_Addr bias;
		Elf *e = dwfl_module_getelf(st->order[k], &bias);
		if (e)
			return e;
	}
	return NULL;
}

/* The backend's inputs (ebl_openbackend reads the ELF header alone): a
 * 64-bit header without sections or segments.  false: not one. */
static bool dw_pin_hdr(Elf *e, Elf64_Ehdr *out)
{
	GElf_Ehdr h;
	if (!gelf_getehdr(e, &h) || h.e_ident[EI_CLASS] != ELFCLASS64)
		return false;
	memset(out, 0, sizeof(*out));
	memcpy(out->e_ident, h.e_ident, EI_NIDENT);
	out->e_type = h.e_type;
	out->e_machine = h.e_machine;
	out->e_version = h.e_version;
	out->e_flags = h.e_flags;
	out->e_ehsize = sizeof(*out);
	return true;
}

/* Thread state for the view.  Proc: perf 7's, as it attaches.  Own: with the
 * backend of the ELF a new Dwfl would take (dw_first_elf), from a copy of its
 * header that the Dwfl keeps, so that the thread state may outlive the JIT's
 * modules; a kept Dwfl is already attached and fits if that header is the
 * same.  1 attached, 0 failed, -ESTALE a kept Dwfl that does not fit. */
static int dw_attach(struct dw_state *st)
{
	if (st->proc) {
		st->attached = dwfl_attach_state(st->dwfl, NULL, st->pid, &dw_thread_cbs, (void *)&dw_proc);
		return st->attached;
	}
	struct dw_kept *kd = st->kd;
	Elf *first = dw_first_elf(st);
	Elf64_Ehdr h;
	bool have = first && dw_pin_hdr(first, &h);
	if (kd->attached) {
		if (!have || memcmp(&h, &kd->pin_hdr, sizeof(h)))
			return -ESTALE;
		st->attached = true;
		return 1;
	}
	if (have) {
		kd->pin_hdr = h;
		elf_version(EV_CURRENT);
		kd->pin = elf_memory((char *)&kd->pin_hdr, sizeof(kd->pin_hdr));
	}
	if (!kd->pin)
		kd->keyable = false;
	/* the thread callbacks read the current sample through kd->st */
	kd->attached = st->attached = dwfl_attach_state(st->dwfl, kd->pin, st->pid, &dw_thread_cbs, kd);
	return st->attached;
}

static int dw_unwind_in(struct dw_state *st, const struct uw_sample *s, struct uw_result *r, uint64_t ip)
{
	/* perf reports the sampled ip's module, then attaches (EM_NONE: the arch
	 * comes from the modules); its Dwfl is new for each sample, so without a
	 * module for the ip the attach fails and nothing is unwound */
	const struct pv_map *m = pv_find(st->pv, ip);
	if (!m || !m->dso) {
		r->stop = UW_STOP_NO_INFO;
		snprintf(r->why, sizeof(r->why), "no DSO maps the sampled ip 0x%llx: perf's Dwfl has no module to attach with",
			 (unsigned long long)ip);
		return 0;
	}
	for (int pass = 0;; pass++) {
		if (!dw_report(st, ip)) {
			r->stop = UW_STOP_NO_INFO;
			snprintf(r->why, sizeof(r->why), "perf reports no module covering the sampled ip 0x%llx",
				 (unsigned long long)ip);
			return 0;
		}
		int a = st->attached ? 1 : dw_attach(st);
		if (a > 0)
			break;
		/* a kept Dwfl whose backend differs: this view's own, as new */
		if (a < 0 && pass == 0 && !dw_begin(st))
			continue;
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "dwfl_attach_state: %s", dwfl_errmsg(-1));
		return 0;
	}
	st->s = s;
	st->r = r;
	st->stopped = st->mem_fail = st->next_fallback = false;
	int rc = dwfl_getthread_frames(st->dwfl, st->pid, dw_frame_cb, st);
	if (st->stopped)
		return 0;
	if (rc == 0) {
		/* libdw takes a return address it cannot read for the outermost frame */
		if (st->mem_fail) {
			r->stop = UW_STOP_MEM;
			snprintf(r->why, sizeof(r->why), "unwinding 0x%llx: read of 0x%llx outside the stack copy and perf's maps ended the chain",
				 (unsigned long long)(r->n ? r->addr[r->n - 1] : ip),
				 (unsigned long long)st->mem_fail_addr);
		}
		return 0;
	}
	int e = dwfl_errno();
	if (st->mem_fail) {
		r->stop = UW_STOP_MEM;
		snprintf(r->why, sizeof(r->why), "unwinding 0x%llx: read of 0x%llx outside the stack copy and perf's maps",
			 (unsigned long long)(r->n ? r->addr[r->n - 1] : ip),
			 (unsigned long long)st->mem_fail_addr);
	} else {
		const char *msg = dwfl_errmsg(e);
		r->stop = msg && (strstr(msg, "DWARF") || strstr(msg, "no matching")) ? UW_STOP_NO_INFO
										  : UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "unwinding 0x%llx: %s",
			 (unsigned long long)(r->n ? r->addr[r->n - 1] : ip), msg ? msg : "?");
	}
	return 0;
}

/* the elfutils this process runs with */
static const char *dw_lib_version(void)
{
	return dwfl_version(NULL);
}

const struct uw_unwinder uw_libdw = {
	.name = "libdw", .about = "elfutils' DWARF unwinder, fed as perf's unwind-libdw.c feeds it",
	.sees = UW_SEES_DUMP, .ref = UW_REF_ORACLE,
	.open = dw_open, .unwind = dw_unwind, .close = dw_close, .lib_version = dw_lib_version,
	.signal_self = true, .bench_rate = 300e3,
};
