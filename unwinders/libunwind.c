/* libunwind (1.6) fed as perf's util/unwind-libunwind-local.c feeds it
 * (facts section 3): a remote address space whose accessors read the sample
 * and perf's view (perfview.h) only.  Frames libunwind found without the
 * emitted CFI (x86_64: its rbp chain; aarch64: x30 after a failed
 * dwarf_step) are flagged UW_F_FALLBACK. */
#include "unwinders/view.h"

#include <libunwind.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "juerr.h"

/* libunwind-generic unwinds the arch it was built for, this build's (uw_arch_host).
 * Its register numbers are the DWARF numbers on every arch of the table (x86_64:
 * UNW_X86_64_RAX 0 .. RIP 16; aarch64: X0 0 .. SP 31, PC 32), so perf's mapping of
 * them (arch/<arch>/util/unwind-libunwind.c) is the table's perf_of_dw;
 * tests/test_libunwind.c checks it against libunwind's and the kernel's headers.
 * dwarf_search_unwind_table: exported by libunwind 1.6 but not declared in its
 * headers (facts section 3); UNW_OBJ gives it the target's prefix. */
extern int UNW_OBJ(dwarf_search_unwind_table)(unw_addr_space_t as, unw_word_t ip, unw_dyn_info_t *di,
					      unw_proc_info_t *pi, int need_unwind_info, void *arg);

/* What perf's find_proc_info returns without a map, a DSO or an
 * .eh_frame_hdr (its `ret = -EINVAL` when the .debug_frame fallback finds
 * nothing either, as for every jitted ELF). */
#define LU_NO_TABLE (-EINVAL)

/* .eh_frame_hdr pointer encodings perf's __dw_read_encoded_value knows
 * (named apart from elfutils' DW_EH_PE_* enum constants) */
enum {
	LU_PE_PTR = 0x00, LU_PE_UDATA4 = 0x03, LU_PE_UDATA8 = 0x04, LU_PE_SDATA4 = 0x0b,
	LU_PE_SDATA8 = 0x0c, LU_PE_PCREL = 0x10, LU_PE_APPL_MASK = 0x70, LU_PE_OMIT = 0xff,
};

struct lu_proc;

struct lu_state {
	unw_addr_space_t as;
	struct lu_proc *proc;       /* the process's kept address space (uw_sample.lu_proc), or NULL */
	const struct uw_arch *target;  /* libunwind's (this build's) arch */
	const struct pv_view *pv;
	uint64_t *base;             /* per DSO: perf's load base, UINT64_MAX when unmapped */
	bool arch_ok;
	/* per sample */
	const struct uw_sample *s;
	const struct pv_map *last;  /* map of the last DSO read */
	/* per step */
	bool in_step;
	uint64_t step_ip;           /* ip of the frame being unwound */
	bool fpi_ok;                /* find_proc_info found its FDE for step_ip (or step_ip - 1) */
	bool fpi_called;            /* find_proc_info was asked during the step (not: a cache hit) */
	int ip_reads;               /* reads of [step_ip]: beyond target->lu_ip_reads, the non-DWARF path's probe */
	bool mem_fail;
	uint64_t mem_fail_addr;
	bool fpi_fail;
	char fpi_why[112];
};

static int lu_dso_read(struct lu_state *st, uint64_t addr, unw_word_t *val)
{
	const struct pv_map *m = st->last;
	if (!m || addr < m->start || addr >= m->end) {
		m = pv_find(st->pv, addr);
		if (!m) {
			/* perf drops the JIT's anonymous arena after the marker, so
			 * the arena's address space past a jitted mapping (its
			 * unwinding data, with mapped_size too small) is in no map of
			 * perf's: the read fails, as any unplaceable address does.
			 * (The capture places the arena where nothing was ever
			 * mapped, so no stale map of perf's can answer there.) */
			return -EFAULT;
		}
		st->last = m;
	}
	/* perf's map_ip + dso__data_read_addr; a read that comes back short
	 * answers 1, which libunwind takes as success (perf zeroes the value):
	 * so does any read in [stack] past the dump (a DSO without data) */
	const struct pv_dso *d = m->dso;
	if (!d)
		return 1;
	uint64_t off = addr - m->start + m->pgoff;
	if (!d->image || off < m->pgoff || off > d->size || d->size - off < sizeof(*val))
		return 1;
	memcpy(val, d->image + off, sizeof(*val));
	return 0;
}

static int lu_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_state *st = arg;
	const struct uw_sample *s = st->s;
	if (write) {
		*valp = 0;
		return 0;
	}
	if (st->in_step && addr == st->step_ip)
		st->ip_reads++;
	int sp_id = s->arch->perf_sp;
	if (!(s->mask >> sp_id & 1))
		return -EINVAL;
	uint64_t start = uw_reg(s, sp_id), end = start + s->stack_size;
	if (addr + sizeof(unw_word_t) < addr)
		return -EINVAL;
	uint64_t v;
	/* the stack copy, without its last word (perf's `>= end`) */
	if (addr >= start && addr + sizeof(unw_word_t) < end && uw_stack_read(s, addr, &v)) {
		*valp = v;
		return 0;
	}
	int ret = lu_dso_read(st, addr, valp);
	if (ret) {
		*valp = 0;
		if (ret < 0 && !st->mem_fail) {
			st->mem_fail = true;
			st->mem_fail_addr = addr;
		}
	}
	return ret;
}

static int lu_access_reg(unw_addr_space_t as, unw_regnum_t regnum, unw_word_t *valp, int write,
			 void *arg)
{
	struct lu_state *st = arg;
	if (write)
		return 0;
	const struct uw_arch *a = st->target;
	int id = regnum >= 0 && regnum < a->ndw ? a->perf_of_dw[regnum] : -1;
	if (a->lu_pc && regnum == a->lu_pc)
		id = a->perf_ip;
	if (id < 0 || id >= UW_PERF_REGS || !(st->s->mask >> id & 1))
		return -EINVAL;
	*valp = st->s->regs[id];
	return 0;
}

static int lu_access_fpreg(unw_addr_space_t as, unw_regnum_t num, unw_fpreg_t *val, int write,
			   void *arg)
{
	return -UNW_EINVAL;
}

static int lu_resume(unw_addr_space_t as, unw_cursor_t *cu, void *arg)
{
	return -UNW_EINVAL;
}

static int lu_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *bufp, size_t len,
			    unw_word_t *offp, void *arg)
{
	return -UNW_ENOINFO;
}

static int lu_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *dil, void *arg)
{
	return -UNW_ENOINFO;
}

static void lu_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
}

/* perf's __dw_read_encoded_value, quirks included (pcrel is relative to
 * perf's own buffer: only eh_frame_ptr is ever pcrel, and it is skipped). */
static int lu_read_enc(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t *val)
{
	const uint8_t *cur = *p;
	*val = 0;
	if (enc == LU_PE_OMIT)
		return 0;
	if (enc == LU_PE_PTR) {
		if (end - cur < 8)
			return -EINVAL;
		memcpy(val, cur, 8);
		*p = cur + 8;
		return 0;
	}
	switch (enc & LU_PE_APPL_MASK) {
	case 0:
		break;
	case LU_PE_PCREL:
		*val = (uint64_t)(uintptr_t)cur;
		break;
	default:
		return -EINVAL;
	}
	if ((enc & 0x07) == 0)
		enc |= LU_PE_UDATA4;
	switch (enc & 0x0f) {
	case LU_PE_SDATA4: {
		int32_t x;
		if (end - cur < 4)
			return -EINVAL;
		memcpy(&x, cur, 4);
		*val += (uint64_t)(int64_t)x;
		cur += 4;
		break;
	}
	case LU_PE_UDATA4: {
		uint32_t x;
		if (end - cur < 4)
			return -EINVAL;
		memcpy(&x, cur, 4);
		*val += x;
		cur += 4;
		break;
	}
	case LU_PE_SDATA8:
	case LU_PE_UDATA8: {
		uint64_t x;
		if (end - cur < 8)
			return -EINVAL;
		memcpy(&x, cur, 8);
		*val += x;
		cur += 8;
		break;
	}
	default:
		return -EINVAL;
	}
	*p = cur;
	return 0;
}

/* unwind_spec_ehframe: perf reads a fixed 20-byte header (4 encoding bytes,
 * two 8-byte slots) from the file and takes fde_count from it. */
static int lu_spec_ehframe(const struct pv_dso *d, uint64_t *table_off, uint64_t *fde_count)
{
	uint8_t hdr[20];
	uint64_t off = d->eh_frame_hdr_off, skip;
	if (off > d->size || d->size - off < sizeof(hdr))
		return -EINVAL;
	memcpy(hdr, d->image + off, sizeof(hdr));
	const uint8_t *p = hdr + 4, *end = hdr + sizeof(hdr);
	if (lu_read_enc(&p, end, hdr[1], &skip) || lu_read_enc(&p, end, hdr[2], fde_count))
		return -EINVAL;
	*table_off = (uint64_t)(p - hdr);
	return 0;
}

__attribute__((format(printf, 2, 3)))
static void lu_why(struct lu_state *st, const char *fmt, ...)
{
	va_list ap;
	st->fpi_fail = true;
	va_start(ap, fmt);
	vsnprintf(st->fpi_why, sizeof(st->fpi_why), fmt, ap);
	va_end(ap);
}

static int lu_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			     int need_unwind_info, void *arg)
{
	struct lu_state *st = arg;
	if (st->in_step)
		st->fpi_called = true;
	const struct pv_map *m = pv_find(st->pv, ip);
	if (!m || !m->dso) {
		lu_why(st, "no map for 0x%llx in perf's view", (unsigned long long)ip);
		return LU_NO_TABLE;
	}
	const struct pv_dso *d = m->dso;
	uint64_t table_off, fde_count;
	if (!d->has_eh_frame_hdr || !d->eh_frame_hdr_off || !d->image) {
		lu_why(st, "no .eh_frame_hdr for 0x%llx in %s", (unsigned long long)ip,
		       d->perf_name ? d->perf_name : d->path);
		return LU_NO_TABLE;
	}
	if (lu_spec_ehframe(d, &table_off, &fde_count)) {
		lu_why(st, "unreadable .eh_frame_hdr for 0x%llx in %s", (unsigned long long)ip,
		       d->perf_name ? d->perf_name : d->path);
		return -EINVAL;
	}
	uint64_t segbase = st->base[d - st->pv->dsos] + d->eh_frame_hdr_addr;
	unw_dyn_info_t di;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->start;
	di.end_ip = m->end;
	di.u.rti.segbase = segbase;
	di.u.rti.table_data = segbase + table_off;
	/* struct table_entry is two 32-bit words; table_len counts machine words */
	di.u.rti.table_len = fde_count * 8 / sizeof(unw_word_t);
	int ret = UNW_OBJ(dwarf_search_unwind_table)(as, ip, &di, pi, need_unwind_info, arg);
	if (ret >= 0) {
		if (st->in_step && (ip == st->step_ip || ip + 1 == st->step_ip))
			st->fpi_ok = true;
	} else {
		lu_why(st, "no FDE found for 0x%llx through the .eh_frame_hdr of %s", (unsigned long long)ip,
		       d->perf_name ? d->perf_name : d->path);
	}
	return ret;
}

/* The accessors, followed by zeroed slots for those later libunwinds added
 * at the struct's end (1.7's get_proc_offset, 1.8's ptrauth_insn_mask): a
 * binary built against 1.6's headers and run on a root's 1.8
 * (tools/perf-gens) has unw_create_addr_space copy 1.8's larger struct, which
 * must read NULL there, not the bytes of whatever the linker put next. */
static struct {
	unw_accessors_t acc;
	void (*later[4])(void);
} lu_accessors = { .acc = {
	.find_proc_info = lu_find_proc_info,
	.put_unwind_info = lu_put_unwind_info,
	.get_dyn_info_list_addr = lu_get_dyn_info_list_addr,
	.access_mem = lu_access_mem,
	.access_reg = lu_access_reg,
	.access_fpreg = lu_access_fpreg,
	.resume = lu_resume,
	.get_proc_name = lu_get_proc_name,
} };

/* perf's address spaces of the processes replayed (uw_sample.lu_proc): each
 * with UNW_CACHE_GLOBAL, as perf's _unwind__prepare_access sets it, kept
 * across views and samples.  A replay walks one process at a time, so a few
 * slots hold them; the oldest goes when a new process needs one. */
#define LU_PROCS 8
/* per pc, the load whose rules the cache took there (libunwind's cache is
 * keyed by the pc alone and holds 128 of them: a clash here only forgets) */
#define LU_SEEN 256
struct lu_seen {
	uint64_t ip, stamp, index;
	char name[40];
};
static struct lu_proc {
	uint64_t key;
	unw_addr_space_t as;
	unsigned long used;
	struct lu_seen seen[LU_SEEN];
} lu_procs[LU_PROCS];
static unsigned long lu_proc_clock;

static struct lu_proc *lu_proc_of(uint64_t key)
{
	struct lu_proc *slot = &lu_procs[0];
	for (size_t i = 0; i < LU_PROCS; i++) {
		if (lu_procs[i].as && lu_procs[i].key == key) {
			lu_procs[i].used = ++lu_proc_clock;
			return &lu_procs[i];
		}
		if (lu_procs[i].used < slot->used)
			slot = &lu_procs[i];
	}
	unw_addr_space_t as = unw_create_addr_space(&lu_accessors.acc, 0);
	if (!as)
		return NULL;
	unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
	if (slot->as)
		unw_destroy_addr_space(slot->as);
	memset(slot, 0, sizeof(*slot));
	slot->key = key;
	slot->as = as;
	slot->used = ++lu_proc_clock;
	return slot;
}

/* The load perf's view has at ip: a jitted DSO's CODE_LOAD (timestamp,
 * code index, name), or a file (0, 0, its name). */
static void lu_load_at(const struct lu_state *st, uint64_t ip, struct lu_seen *o)
{
	const struct pv_map *m = pv_find(st->pv, ip);
	const struct pv_dso *d = m ? m->dso : NULL;
	memset(o, 0, sizeof(*o));
	o->ip = ip;
	if (d && d->jitted && d->load) {
		o->stamp = d->load->timestamp;
		o->index = d->load->code_index;
		snprintf(o->name, sizeof(o->name), "%s", d->load->name ? d->load->name : "?");
	} else {
		snprintf(o->name, sizeof(o->name), "%s", d ? (d->perf_name ? d->perf_name : d->path) : "no map");
	}
}

/* After a step at st->step_ip in a process: a lookup fills the cache there
 * with the view's load; a cache hit (no lookup) that took another load's
 * rules flags the frame.  true: flagged. */
/* The slot of ip in a process's seen table: ip's own, or the first free one
 * of LU_SEEN_PROBE from its hash (insert), else the hash's own (overwritten).
 * Not ip % LU_SEEN: a fixed-width arch's pcs are 4-byte aligned and a chain's
 * step pcs shared a slot there, losing the entry a later load's sample needs. */
#define LU_SEEN_PROBE 8
static struct lu_seen *lu_seen_slot(struct lu_proc *p, uint64_t ip, bool insert)
{
	uint64_t h = ip * 0x9E3779B97F4A7C15ULL;
	size_t home = (size_t)(h >> 56) % LU_SEEN;
	for (size_t k = 0; k < LU_SEEN_PROBE; k++) {
		struct lu_seen *e = &p->seen[(home + k) % LU_SEEN];
		if (e->ip == ip || (insert && !e->ip))
			return e;
	}
	return insert ? &p->seen[home] : NULL;
}

static bool lu_seen_step(struct lu_state *st, struct uw_result *r)
{
	struct lu_seen now;
	lu_load_at(st, st->step_ip, &now);
	if (st->fpi_called) {
		*lu_seen_slot(st->proc, st->step_ip, true) = now;
		return false;
	}
	const struct lu_seen *e = lu_seen_slot(st->proc, st->step_ip, false);
	if (!e || (e->stamp == now.stamp && e->index == now.index))
		return false;
	if (!r->earlier_why[0])
		snprintf(r->earlier_why, sizeof(r->earlier_why),
			 "frame %d from 0x%llx: libunwind's cache kept the rules of %s (code_index %llu) there, not %s's",
			 r->n, (unsigned long long)st->step_ip, e->name, (unsigned long long)e->index, now.name);
	return true;
}

void uw_libunwind_flush(uint64_t proc)
{
	for (size_t i = 0; i < LU_PROCS; i++)
		if (lu_procs[i].as && (!proc || lu_procs[i].key == proc)) {
			unw_flush_cache(lu_procs[i].as, 0, 0);
			memset(lu_procs[i].seen, 0, sizeof(lu_procs[i].seen));
		}
}

void uw_libunwind_forget(void)
{
	for (size_t i = 0; i < LU_PROCS; i++)
		if (lu_procs[i].as)
			unw_destroy_addr_space(lu_procs[i].as);
	memset(lu_procs, 0, sizeof(lu_procs));
}

/* A jitted DSO whose injected MMAP2 is still whole in the map tree: its base
 * is the one perf layout's (perfview.c pv_layout), not recomputed here. */
static bool lu_layout_base(const struct pv_view *pv, const struct pv_dso *d, uint64_t *base)
{
	if (!d->jitted || !d->load)
		return false;
	struct pv_layout ly;
	pv_layout_load(pv->profile, d->load, &ly);
	for (size_t i = 0; i < pv->nmaps; i++)
		if (pv->maps[i].dso == d && pv->maps[i].start == ly.map_start && pv->maps[i].pgoff == ly.map_pgoff) {
			*base = ly.lu_base;
			return true;
		}
	return false;
}

/* perf's read_unwind_spec_eh_frame: base = the lowest (start - pgoff) over
 * the DSO's maps (v6.1-v6.7: start alone), less the first PT_LOAD's p_vaddr
 * rounded down to a page.  Jitted DSOs take it from their layout; the rule
 * is applied here to the process's own files and to a jitted mapping a later
 * one cut at its front (perf's map tree keeps the tail). */
static int lu_bases(struct lu_state *st)
{
	const struct pv_view *pv = st->pv;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	if (!page || (page & (page - 1)))
		page = 4096;
	st->base = calloc(pv->ndsos ? pv->ndsos : 1, sizeof(*st->base));
	bool *done = calloc(pv->ndsos ? pv->ndsos : 1, sizeof(*done));
	if (!st->base || !done) {
		free(done);
		return -ENOMEM;
	}
	for (size_t i = 0; i < pv->ndsos; i++) {
		st->base[i] = UINT64_MAX;
		done[i] = lu_layout_base(pv, &pv->dsos[i], &st->base[i]);
	}
	for (size_t i = 0; i < pv->nmaps; i++) {
		const struct pv_map *m = &pv->maps[i];
		if (!m->dso || m->dso < pv->dsos || m->dso >= pv->dsos + pv->ndsos)
			continue;
		uint64_t b = pv->profile == PV_V61 ? m->start : m->start - m->pgoff;
		size_t k = (size_t)(m->dso - pv->dsos);
		if (!done[k] && b < st->base[k])
			st->base[k] = b;
	}
	for (size_t i = 0; i < pv->ndsos; i++)
		if (!done[i] && st->base[i] != UINT64_MAX)
			st->base[i] -= pv->dsos[i].first_load_vaddr & ~(page - 1);
	free(done);
	return 0;
}

static void lu_close(void *state)
{
	struct lu_state *st = state;
	if (!st)
		return;
	if (st->as)
		unw_destroy_addr_space(st->as);
	free(st->base);
	free(st);
}

static int lu_open(const struct uw_view *v, void **state, struct ju_err *err)
{
	*state = NULL;
	if (!uw_arch_host()) {
		ju_errf(err, EINVAL, 0, "libunwind: this build's arch is not in the arch table");
		return -ENOTSUP;
	}
	struct lu_state *st = calloc(1, sizeof(*st));
	if (!st) {
		ju_errf(err, EINVAL, 0, "libunwind: out of memory");
		return -ENOMEM;
	}
	st->target = uw_arch_host();
	*state = st;
	if (!v || !v->pv)
		return 0;   /* every sample then says "no perf view" */
	st->pv = v->pv;
	st->arch_ok = !v->arch || v->arch->facts->elf_mach == st->target->facts->elf_mach;
	st->as = unw_create_addr_space(&lu_accessors.acc, 0);
	if (!st->as || lu_bases(st)) {
		ju_errf(err, EINVAL, 0, "libunwind: cannot create the address space");
		lu_close(st);
		*state = NULL;
		return -ENOMEM;
	}
	/* a sample without a process (uw_sample.lu_proc 0): nothing survives
	 * it, and every step asks find_proc_info */
	unw_set_caching_policy(st->as, UNW_CACHE_NONE);
	return 0;
}

static void lu_fail(struct uw_result *r, enum uw_stop stop, const char *why)
{
	r->stop = stop;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

/* Stop reason of a step that returned ret < 0. */
static void lu_stop(struct lu_state *st, int ret, struct uw_result *r)
{
	unsigned long long ip = st->step_ip;
	if (st->mem_fail) {
		r->stop = UW_STOP_MEM;
		if (st->fpi_fail)
			snprintf(r->why, sizeof(r->why), "%s: read of 0x%llx outside the stack copy and perf's maps",
				 st->fpi_why, (unsigned long long)st->mem_fail_addr);
		else
			snprintf(r->why, sizeof(r->why), "unwinding 0x%llx: read of 0x%llx outside the stack copy and perf's maps",
				 ip, (unsigned long long)st->mem_fail_addr);
	} else if (ret == -UNW_ENOINFO || st->fpi_fail) {
		r->stop = UW_STOP_NO_INFO;
		if (st->fpi_fail)
			snprintf(r->why, sizeof(r->why), "%s", st->fpi_why);
		else
			snprintf(r->why, sizeof(r->why), "no unwind info for 0x%llx", ip);
	} else {
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "unw_step at 0x%llx: %s (%d)", ip,
			 ret >= -UNW_ENOINFO ? unw_strerror(ret) : strerror(-ret), ret);
	}
}

/* libunwind 1.6 blocks every signal around each use of its memory pool
 * and locks (lock_acquire: sigprocmask, mutex, sigprocmask back): some
 * twenty system calls per sample, most of a replay's time.  The blocking is
 * for unwinding the local process from a signal handler; here libunwind
 * walks a copied stack through accessors, never from a handler.  So while a
 * replay walk runs on this thread, sigprocmask (which libunwind calls
 * through the PLT: this executable's definition wins) is answered without
 * the system call; everywhere else it is libc's. */
static __thread bool lu_walking;

int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	if (lu_walking) {
		if (old)
			sigemptyset(old);
		return 0;
	}
	int e = pthread_sigmask(how, set, old);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

static int lu_walk(struct lu_state *st, const struct uw_sample *s, struct uw_result *r);

static int lu_unwind(void *state, const struct uw_view *v, const struct uw_sample *s,
		     struct uw_result *r)
{
	struct lu_state *st = state;
	r->n = 0;
	r->why[0] = 0;
	r->stop = UW_STOP_END;
	if (!st || !st->pv || !v || v->pv != st->pv) {
		lu_fail(r, UW_STOP_ERROR, "no perf view");
		return 0;
	}
	if (!st->arch_ok || s->arch->facts->elf_mach != st->target->facts->elf_mach) {
		lu_fail(r, UW_STOP_ERROR, "libunwind of this build cannot unwind another arch's samples");
		return 0;
	}
	lu_walking = true;
	int rc = lu_walk(st, s, r);
	lu_walking = false;
	return rc;
}

static int lu_walk(struct lu_state *st, const struct uw_sample *s, struct uw_result *r)
{
	st->s = s;
	st->last = NULL;
	r->fallback_why[0] = 0;
	r->earlier_why[0] = 0;
	st->in_step = false;
	st->mem_fail = st->fpi_fail = false;
	r->addr[r->n] = uw_reg(s, s->arch->perf_ip);
	r->flags[r->n++] = 0;
	st->proc = s->lu_proc ? lu_proc_of(s->lu_proc) : NULL;
	unw_addr_space_t as = st->proc ? st->proc->as : s->lu_proc ? NULL : st->as;
	if (!as) {
		lu_fail(r, UW_STOP_ERROR, "libunwind: cannot create the process's address space");
		return 0;
	}
	unw_cursor_t c;
	int ret = unw_init_remote(&c, as, st);
	if (ret) {
		r->stop = UW_STOP_ERROR;
		snprintf(r->why, sizeof(r->why), "unw_init_remote: %s (%d)",
			 ret >= -UNW_ENOINFO ? unw_strerror(ret) : strerror(-ret), ret);
		return 0;
	}
	for (;;) {
		if (r->n >= UW_MAX_FRAMES) {
			r->stop = UW_STOP_MAX;
			break;
		}
		unw_word_t ip;
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
			ip = r->addr[r->n - 1];
		st->step_ip = ip;
		st->fpi_ok = st->fpi_called = st->mem_fail = st->fpi_fail = false;
		st->ip_reads = 0;
		st->in_step = true;
		ret = unw_step(&c);
		st->in_step = false;
		if (ret <= 0) {
			if (ret < 0)
				lu_stop(st, ret, r);
			break;
		}
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0) {
			lu_fail(r, UW_STOP_ERROR, "unw_get_reg(UNW_REG_IP) failed after a step");
			break;
		}
		/* perf stores ip - 1 here unless unw_is_signal_frame: undone */
		r->addr[r->n] = ip;
		/* a step find_proc_info was not asked for took its rules from the
		 * process's cache (lu_proc): DWARF rules, if perhaps another load's */
		bool dwarf = st->fpi_ok || (s->lu_proc && !st->fpi_called);
		r->flags[r->n] = (!dwarf || st->ip_reads > st->target->lu_ip_reads) ? UW_F_FALLBACK : 0;
		if (unw_is_signal_frame(&c) > 0)
			r->flags[r->n] |= UW_F_ACTIVATION;
		if (st->proc && lu_seen_step(st, r))
			r->flags[r->n] |= UW_F_EARLIER_RULES;
		if ((r->flags[r->n] & UW_F_FALLBACK) && !r->fallback_why[0])
			snprintf(r->fallback_why, sizeof(r->fallback_why), "frame %d from 0x%llx: %s", r->n,
				 (unsigned long long)st->step_ip,
				 st->fpi_fail ? st->fpi_why : "libunwind's frame-chain path");
		r->n++;
	}
	return 0;
}

#define LU_STR2(x) #x
#define LU_STR(x) LU_STR2(x)
/* the headers this build compiled against: each matrix leg builds its own */
static const char *lu_lib_version(void)
{
	return LU_STR(UNW_VERSION_MAJOR) "." LU_STR(UNW_VERSION_MINOR);
}

const struct uw_unwinder uw_libunwind = {
	.name = "libunwind", .about = "libunwind, fed as perf's unwind-libunwind-local.c feeds it",
	.sees = UW_SEES_DUMP, .ref = UW_REF_ORACLE,
	.open = lu_open, .unwind = lu_unwind, .close = lu_close, .lib_version = lu_lib_version,
	.proc_state = true, .bench_rate = 100e3,
};
