/* elfutils libdw fed as perf's util/unwind-libdw.c feeds it (facts section
 * 3), over perf's view (perfview.h) and the sample only.  One Dwfl per view
 * (perf caches it per map set too): modules are reported as perf's
 * __report_module meets them and kept, the thread state is attached once,
 * and each sample only re-runs the thread's frames.  Frames libdw found without CFI
 * (its x86_64 backend walks rbp when no module or no FDE covers the pc) are
 * flagged UW_F_FALLBACK. */
#include "view.h"

#include <elfutils/libdwfl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DW_CACHE 1024   /* CFI coverage by pc, per view */

struct dw_cfi_slot {
	uint64_t pc;
	int8_t state;       /* 0 empty, 1 covered, -1 not covered */
};

struct dw_state {
	Dwfl *dwfl;
	const struct pv_view *pv;
	pid_t pid;
	bool attached;
	Dwfl_Module **mod_of_map;   /* per pv map: the module perf's __report_module settled on */
	int8_t *map_tried;          /* per pv map: 1 reported, -1 perf could not report it */
	struct dw_cfi_slot cache[DW_CACHE];
	/* per sample */
	const struct uw_sample *s;
	struct uw_result *r;
	bool next_fallback;         /* the frame the current one unwinds to has no CFI */
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

static bool dw_memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct dw_state *st = arg;
	const struct uw_sample *s = st->s;
	int sp_id = s->arch->perf_sp;
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
	struct dw_state *st = arg;
	const struct uw_sample *s = st->s;
	const struct uw_arch *a = s->arch;
	Dwarf_Word regs[40];
	int n = a->dw_pc == a->dw_ra ? a->ndw : a->dw_pc;
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

/* perf's __report_module(addr): nothing to do without a map; in [stack] or
 * [heap] dwfl_report_elf of the pseudo file fails, so entry() does and the
 * chain ends before that frame; else the module covering addr must start at
 * the map's base, or one is reported there.  Modules accumulate in the
 * cached Dwfl; each map's outcome is kept, since reporting it again gives
 * the same answer. */
static bool dw_report(struct dw_state *st, uint64_t addr)
{
	const struct pv_map *m = pv_find(st->pv, addr);
	if (!m)
		return true;
	if (!m->dso)
		return false;
	size_t i = (size_t)(m - st->pv->maps);
	if (!st->map_tried[i]) {
		uint64_t base = dw_base(st->pv, m);
		Dwfl_Module *mod = dwfl_addrmodule(st->dwfl, addr);
		Dwarf_Addr start = 0;
		if (mod && (!dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL) ||
			    start != base))
			mod = NULL;
		if (!mod && m->dso->is_elf) {
			/* perf's short name; the file is read where the view wrote it */
			const char *name = dw_perf_name(m->dso), *slash = strrchr(name, '/');
			mod = dwfl_report_elf(st->dwfl, slash ? slash + 1 : name, m->dso->path, -1, base,
					      false);
		}
		st->mod_of_map[i] = mod;
		st->map_tried[i] = mod ? 1 : -1;
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

static void dw_close(void *state)
{
	struct dw_state *st = state;
	if (!st)
		return;
	if (st->dwfl)
		dwfl_end(st->dwfl);
	free(st->mod_of_map);
	free(st->map_tried);
	free(st);
}

static int dw_open(const struct uw_view *v, void **state, char *err, size_t errlen)
{
	struct dw_state *st = calloc(1, sizeof(*st));
	*state = st;
	if (!st) {
		snprintf(err, errlen, "libdw: out of memory");
		return -1;
	}
	if (!v || !v->pv)
		return 0;   /* every sample then says "no perf view" */
	const struct pv_view *pv = v->pv;
	st->pv = pv;
	st->pid = v->jd && v->jd->pid ? (pid_t)v->jd->pid : 1;
	size_t n = pv->nmaps ? pv->nmaps : 1;
	st->mod_of_map = calloc(n, sizeof(*st->mod_of_map));
	st->map_tried = calloc(n, sizeof(*st->map_tried));
	st->dwfl = dwfl_begin(&dw_offline);
	if (!st->mod_of_map || !st->map_tried || !st->dwfl) {
		snprintf(err, errlen, "libdw: dwfl_begin: %s", dwfl_errmsg(-1));
		dw_close(st);
		*state = NULL;
		return -1;
	}
	return 0;
}

static int dw_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		     struct uw_result *r)
{
	struct dw_state *st = state;
	r->fallback_why[0] = 0;
	r->n = 0;
	r->why[0] = 0;
	r->stop = UW_STOP_END;
	if (!st || !st->pv || !v || v->pv != st->pv) {
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "no perf view");
		return 0;
	}
	uint64_t ip = uw_reg(s, s->arch->perf_ip);
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
	if (!dw_report(st, ip)) {
		r->stop = UW_STOP_NO_INFO;
		snprintf(r->why, sizeof(r->why), "perf reports no module covering the sampled ip 0x%llx",
			 (unsigned long long)ip);
		return 0;
	}
	if (!st->attached) {
		/* once: the thread callbacks read the current sample through st */
		st->attached = dwfl_attach_state(st->dwfl, NULL, st->pid, &dw_thread_cbs, st);
		if (!st->attached) {
			r->stop = UW_STOP_ERROR;
			snprintf(r->why, sizeof(r->why), "dwfl_attach_state: %s", dwfl_errmsg(-1));
			return 0;
		}
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
