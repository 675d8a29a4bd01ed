/* `jitunwind replay FILE.data` (realreplay.h).  The perf.data's MMAP/MMAP2/
 * FORK events and the jitdump's CODE_LOADs (as the MMAP2s perf inject would
 * add, at their timestamps) make one map tree over time (maptree.h).  Samples
 * replay in time order against perf's view built at the end of the
 * recording; a sample any of whose frames resolves differently in the tree
 * as it stood at its own time (a stale or not-yet-made map) replays again
 * against a view built at that time.  The recording is read by
 * realreplay_read.c, the report written by realreplay_report.c. */
#include "harness/replay/realreplay.h"
#include "harness/run/session.h"
#include "harness/run/pidtmp.h"
#include "harness/run/scratch.h"
#include "harness/replay/realreplay_int.h"
#include "harness/replay/realperf.h"
#include "harness/replay/replaylint.h"
#include "harness/case/jsonw.h"
#include "harness/case/say.h"
#include "harness/case/cfarow.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RR_CTX_USER 0xfffffffffffffe00ull   /* PERF_CONTEXT_USER */
#define RR_CTX_MAX 0xfffffffffffff001ull    /* callchain context markers are >= this */
#define RR_RELEASE_STEP (1u << 20)          /* in the replay, once past this much */

static int cmp_smp(const void *a, const void *b)
{
	const struct rr_sample *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_exec(const void *a, const void *b)
{
	const struct rr_exec *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static struct jd_file *dump_of(struct rr *r, uint32_t pid, size_t *idx)
{
	for (size_t i = 0; i < r->ndumps; i++)
		if (r->jd[i].pid == pid) {
			*idx = i;
			return &r->jd[i];
		}
	return NULL;
}

static void view_fini(struct rr *r, struct rr_view *v)
{
	if (!v->built)
		return;
	hx_sess_close(&v->sess);
	uw_maps_free(v->maps, v->nmaps);
	v->maps = NULL;
	v->nmaps = 0;
	v->built = false;
}

/* Where views write their jitted .so files: one directory in memory
 * (/dev/shm/jitunwind-rr-PID-XXXXXX) for every view of the replay (a load's
 * file is the same in every view that has it), removed at the end; NULL:
 * perf view's own.  A replay killed before its end (a timeout's SIGKILL)
 * leaves its directory, up to 1.5 GB of memory: the next replay removes
 * those whose pid is gone. */
static const char *view_dir(struct rr *r)
{
	if (!r->pvdir[0] && !r->pvdir_failed) {
		hx_pidtmp_sweep("/dev/shm", "jitunwind-rr");
		r->pvdir_failed = hx_pidtmp_make(r->pvdir, sizeof(r->pvdir), "/dev/shm", "jitunwind-rr", true) < 0;
		if (!r->pvdir_failed)
			hx_scratch_register(r->pvdir);   /* removed if a signal ends the replay */
	}
	return r->pvdir[0] ? r->pvdir : NULL;
}

/* perf's view of pid at time t: the file maps of the tree, then the loads
 * and moves with a timestamp up to t (as perf inject adds them, in dump order). */
static int view_build(struct rr *r, struct rr_view *v, uint32_t pid, uint64_t t)
{
	view_fini(r, v);
	if (mt_at(&r->mt, pid, t, &v->snap) || mt_at(&r->mtf, pid, t, &r->fsnap))
		goto oom;
	v->maps = calloc(r->fsnap.n + 1, sizeof(*v->maps));
	if (!v->maps)
		goto oom;
	/* the loads cut these maps in pv_build and uw_view_init (in load order) */
	for (size_t i = 0; i < r->fsnap.n; i++) {
		const struct mt_map *m = &r->fsnap.maps[i];
		struct uw_map *u = &v->maps[v->nmaps];
		u->start = m->start;
		u->end = m->end;
		u->pgoff = m->pgoff;
		snprintf(u->prot, sizeof(u->prot), "%c%c%cp", m->prot & 1 ? 'r' : '-', m->prot & 2 ? 'w' : '-',
			 m->prot & 4 ? 'x' : '-');
		/* anonymous maps keep their name: perf has no file for them; the
		 * vDSO is perf's build-id cache's copy (realreplay_read.c find_vdso) */
		const char *vd = !strcmp(m->path, "[vdso]") && r->vdso[0] ? r->vdso : NULL;
		if (!(u->path = vd ? strdup(vd) : hx_rr_anon_path(m->path) ? strdup(m->path) : hx_rr_with_symfs(r, m->path)))
			goto oom;
		v->nmaps++;
	}
	size_t di = 0;
	struct jd_file *jd = dump_of(r, pid, &di);

	memset(&v->jd, 0, sizeof(v->jd));
	if (jd) {
		v->jd = *jd;
		size_t k = 0;
		while (k < jd->nloads && (!r->clock_ok || jd->loads[k].timestamp <= t))
			k++;
		v->jd.nloads = k;
		for (k = 0; k < jd->nmoves && (!r->clock_ok || jd->moves[k].timestamp <= t);)
			k++;
		v->jd.nmoves = k;
	}
	struct hx_sess_cfg cfg = { .arch = r->arch, .maps = v->maps, .nmaps = v->nmaps, .jd = jd ? &v->jd : NULL,
				   .profile = r->prof, .jitted_dir = view_dir(r), .dump_dir = jd ? r->dump_dir[di] : NULL,
				   .nuw = (int)r->nu };
	memcpy(cfg.uws, r->uws, r->nu * sizeof(r->uws[0]));
	struct ju_err e;
	const char *file = r->path;
	int rc = hx_sess_open(&v->sess, &cfg, &e);
	if (rc == 0 && !v->sess.have_pv) {
		/* perf's view is the replay's reference: no view, no replay */
		snprintf(e.msg, sizeof(e.msg), "%s", v->sess.pv_err);
		hx_sess_close(&v->sess);
		file = jd ? r->dump_path[di] : r->path;
		rc = -EINVAL;
	}
	if (rc) {
		snprintf(r->err, sizeof(r->err), "%s: %s", file, e.msg);
		uw_maps_free(v->maps, v->nmaps);
		v->maps = NULL;
		return rc;
	}
	v->built = true;
	v->pid = pid;
	v->time = t;
	r->nviews++;
	r->nviews_dump += jd != NULL;
	return 0;
oom:
	snprintf(r->err, sizeof(r->err), "out of memory");
	return -ENOMEM;
}

static void to_uw_sample(const struct rr *r, const struct pd_sample *p, struct uw_sample *s)
{
	memset(s, 0, sizeof(*s));
	s->arch = r->arch;
	s->abi = p->abi;
	s->mask = p->mask;
	for (int i = 0; i < UW_PERF_REGS && i < 64; i++)
		s->regs[i] = p->regs[i];
	s->stack_addr = uw_reg(s, r->arch->perf_sp);
	s->stack = p->stack;
	s->stack_size = p->dyn_size;
}

/* The user part of the recorded callchain (the kernel's FP walk), handed
 * to the kernel-fp unwinder of the table as a kernel sample's CALLCHAIN. */
static void user_chain(const struct pd_sample *p, uint64_t *buf, uint32_t *n)
{
	bool user = false;
	*n = 0;
	for (uint64_t i = 0; i < p->nr && *n < UW_MAX_FRAMES; i++) {
		uint64_t a = pd_u64(p->ips + 8 * i);
		if (a >= RR_CTX_MAX)
			user = a == RR_CTX_USER;
		else if (user)
			buf[(*n)++] = a;
	}
}

/* a recording's own user callchain (--call-graph fp) read as kernel-fp reads one */
extern const struct uw_unwinder uw_kernel_fp;

static void kernel_chain(const struct uw_sample *s, struct uw_result *res)
{
	memset(res, 0, offsetof(struct uw_result, why));
	uw_kernel_fp.unwind(NULL, NULL, s, res);
}

bool hx_rr_jit_at(const struct rr *r, const struct rr_view *v, uint64_t a, struct rr_jit *j)
{
	const struct pv_map *m = pv_find(&v->sess.pv, a);
	memset(j, 0, sizeof(*j));
	if (m && m->dso && m->dso->jitted && m->dso->load) {
		j->load = m->dso->load;
		j->name = j->load->name ? j->load->name : "?";
		j->start = j->load->code_addr;
		j->named = pv_symbolize(&v->sess.pv, a) != NULL;
		return true;
	}
	if (m)
		return false;
	/* perf keeps no file for an anonymous map: a perf map names its code */
	const struct rr_pmap_sym *ps = hx_rr_pmap_find(r, v->pid, a);
	if (!ps)
		return false;
	j->name = ps->name;
	j->start = ps->start;
	j->named = true;
	return true;
}

struct rr_at { const struct rr *r; const struct rr_view *v; };

/* the session's JIT lookup, with the perf maps' symbols over anonymous maps */
static bool rr_jit_cb(const void *ctx, uint64_t a, bool *named)
{
	const struct rr_at *x = ctx;
	struct rr_jit j;
	if (!hx_rr_jit_at(x->r, x->v, a, &j))
		return false;
	*named = j.named;
	return true;
}

static int first_jit(const struct rr *r, const struct rr_view *v, const struct uw_result *c)
{
	struct rr_at x = { r, v };
	return hx_sess_first_jit(&v->sess, c, rr_jit_cb, &x);
}

/* A chain from a JIT pc: the session's outcome (session.h). */
enum hx_outcome hx_rr_classify(const struct rr *r, const struct rr_view *v, const struct uw_result *c)
{
	struct rr_at x = { r, v };
	return hx_sess_outcome(&v->sess, c, rr_jit_cb, &x);
}

/* perf keeps anonymous maps without a DSO: nothing to unwind or name with */
bool hx_rr_anon_path(const char *p)
{
	return p[0] != '/' || !strncmp(p, "//anon", 6) || !strncmp(p, "/dev/zero", 9) ||
	       !strncmp(p, "/anon_hugepage", 14) || !strncmp(p, "/memfd:", 7) || !strncmp(p, "/SYSV", 5);
}

static struct rr_key *key_of(struct rr *r, const char *name, uint64_t off)
{
	for (size_t i = 0; i < r->nkeys; i++)   /* few distinct keys per recording */
		if (r->keys[i].off == off && !strcmp(r->keys[i].name, name))
			return &r->keys[i];
	if (r->nkeys == r->ckeys) {
		size_t c = r->ckeys ? r->ckeys * 2 : 64;
		struct rr_key *p = realloc(r->keys, c * sizeof(*p));
		if (!p)
			return NULL;
		r->keys = p;
		r->ckeys = c;
	}
	struct rr_key *k = &r->keys[r->nkeys++];
	memset(k, 0, sizeof(*k));
	k->name = name;
	k->off = off;
	k->div = -1;
	return k;
}

/* The loads a key stands for (V8 loads one function again and again),
 * where lint findings about it are looked up. */
static void key_load(const struct rr *r, struct rr_key *k, const struct jd_load *l)
{
	if (!l)
		return;
	for (size_t d = 0; d < r->ndumps; d++)
		if (l >= r->jd[d].loads && l < r->jd[d].loads + r->jd[d].nloads)
			k->dump = d;
	for (unsigned i = 0; i < k->nloads; i++)
		if (k->load_off[i] == l->file_off)
			return;
	if (k->nloads < RR_KEY_LOADS)
		k->load_off[k->nloads++] = l->file_off;
}

/* The row the oracle reads at pc, from the emitted CFI. */
static void cfa_row(const struct uw_view *v, uint64_t pc, char *b, size_t n)
{
	const struct uw_region *reg = uw_view_find(v, pc);
	const struct ehf_fde *fde = reg && reg->has_cfi ? ehf_find_fde(&reg->cfi, pc) : NULL;
	struct ehf_row row;
	struct ju_err ee;
	if (!fde) {
		snprintf(b, n, "%s", reg && reg->cfi_err[0] ? reg->cfi_err : "no FDE");
		return;
	}
	if (ehf_row_at(fde, pc, &row, &ee)) {
		snprintf(b, n, "FDE: %s", ee.msg);
		return;
	}
	hx_row_text(v->arch, &row, HX_ROW_REPLAY, b, n);
}

const char *hx_rr_col_name(const struct rr *r, size_t u)
{
	return u < r->nu ? r->uws[u]->name : u == r->nu ? uw_kernel_fp.name : "perf";
}

int hx_rr_column(const struct rr *r, const char *name)
{
	for (size_t u = 0; u < r->nu; u++)
		if (!strcmp(r->uws[u]->name, name))
			return (int)u;
	return -ENOENT;
}

/* The first frame where the chains differ (a chain that ended differs
 * from one that goes on); -1 if they all agree. */
static int diverge(const struct rr *r, const struct uw_result *res, size_t ncol, char *d, size_t dl)
{
	int maxn = 0;
	for (size_t u = 0; u < ncol; u++)
		if (res[u].n > maxn)
			maxn = res[u].n;
	for (int i = 0; i < maxn; i++) {
		bool same = true;
		for (size_t u = 1; u < ncol; u++) {
			bool a = i < res[0].n, b = i < res[u].n;
			if (a != b || (a && res[0].addr[i] != res[u].addr[i]))
				same = false;
		}
		if (same)
			continue;
		size_t l = (size_t)snprintf(d, dl, "frame %d:", i);
		for (size_t u = 0; u < ncol && l < dl; u++)
			l += i < res[u].n ? (size_t)snprintf(d + l, dl - l, " %s=0x%" PRIx64, hx_rr_col_name(r, u), res[u].addr[i])
					  : (size_t)snprintf(d + l, dl - l, " %s=end", hx_rr_col_name(r, u));
		return i;
	}
	return -1;
}

static void run_all(struct rr *r, struct rr_view *v, const struct uw_sample *s,
		    bool regs, bool kfp, struct uw_result *res)
{
	struct hx_sess_sample in = { .full = s, .dump = s, .only = -1 };
	if (regs)
		hx_sess_sample(&v->sess, &in, NULL, r->ures);
	for (size_t u = 0; regs && u < r->nu; u++)
		res[u] = r->ures[u].r;
	if (kfp)
		kernel_chain(s, &res[r->nu]);
}

/* A native pc under JIT frames (CPython's trampolines): keyed by the innermost
 * JIT return address, the reference's (the oracle's: judged against the truth,
 * UW_REF_TRUTH) if it has one.  true with *kpc and *jx set, false if none. */
static bool jit_under(struct rr *r, struct rr_view *cur, const struct uw_result *res, size_t c0, size_t ncol,
		      uint64_t *kpc, struct rr_jit *jx)
{
	int j = -1;
	size_t pick = ncol;
	for (size_t u = c0; u < r->nu; u++)
		if (r->uws[u]->ref == UW_REF_TRUTH)
			pick = u;
	for (size_t t = 0; t <= ncol - c0 && j < 0; t++) {
		size_t u = t == 0 ? pick : c0 + t - 1;
		if (u >= ncol)
			continue;
		if ((j = first_jit(r, cur, &res[u])) >= 0)
			*kpc = res[u].addr[j];
	}
	return j >= 0 && hx_rr_jit_at(r, cur, *kpc - 1, jx);
}

/* A key's first sample: the JIT code's row (at the pc, or at the call a return
 * address follows: row_pc) and each unwinder's stop. */
static void key_first(struct rr *r, struct rr_view *cur, struct rr_key *k, const struct rr_jit *jx,
		      uint64_t row_pc, const struct uw_result *res, size_t c0)
{
	if (jx->load)
		cfa_row(&cur->sess.view, row_pc, k->cfa, sizeof(k->cfa));
	else
		snprintf(k->cfa, sizeof(k->cfa), "none (a perf map symbol: no unwinding info)");
	k->pmap = !jx->load;
	for (size_t u = c0; u < r->nu; u++)
		snprintf(k->why[u], sizeof(k->why[u]), "%s%s%s", uw_stop_name(res[u].stop),
			 res[u].why[0] ? ": " : "", res[u].why);
}

static int replay_sample(struct rr *r, struct rr_view *fin, struct rr_view *tv, const struct mt_snap *at,
			 const struct rr_sample *rs, struct uw_result *res, const struct pd_event *evp);

/* One sample against perf's view of its process at its own time. */
static int replay_one(struct rr *r, struct rr_view *fin, struct rr_view *tv, const struct mt_snap *at,
		      const struct rr_sample *rs, struct uw_result *res)
{
	struct pd_iter it = { rs->off };
	struct pd_event ev;
	struct ju_err je;
	int rc = pd_next(&r->pf, &it, &ev, &je);
	if (rc != 1)
		return snprintf(r->err, sizeof(r->err), "%s", je.msg), rc < 0 ? rc : -EINVAL;
	rc = replay_sample(r, fin, tv, at, rs, res, &ev);
	/* samples come in time order, close to file order: the pages behind
	 * this one go (a later sample in them reads them back) */
	if (rs->off > r->released + RR_RELEASE_STEP) {
		hx_rr_release(r, r->released, rs->off);
		r->released = rs->off;
	}
	return rc;
}

/* A view of the sample's process that answers it as perf's view at the
 * sample's own time does: the one at the recording's end (fin) or the last
 * one built (tv) where nothing the sample can reach changed in between
 * (hx_rr_same_over: realreplay_exact.c), else one built at its time.  No
 * sample is resolved against another moment's view; two views live at a
 * time, and the jitted .so files are written once for all (view_dir).
 * The view, or NULL with r->err. */
static struct rr_view *view_at(struct rr *r, struct rr_view *fin, struct rr_view *tv, const struct mt_snap *at,
			       const struct rr_sample *rs, const struct uw_sample *s)
{
	r->nstale++;             /* undone below for the end's view */
	if (tv->built && tv->pid == rs->pid && tv->snap.applied == at->applied)
		return tv;
	/* without timestamps to order loads by, or with a code_index loaded
	 * twice (its file's bytes change under an earlier map), by state only */
	bool by_words = r->clock_ok && !r->index_reused;
	if (by_words) {
		if (fin->built && fin->pid != rs->pid)
			view_fini(r, fin);
		if (!fin->built && view_build(r, fin, rs->pid, UINT64_MAX))
			return NULL;
		/* past the process's last change, the end's view is the sample's own */
		if (fin->snap.applied == at->applied || hx_rr_same_over(r, rs->pid, rs->time, UINT64_MAX, s)) {
			r->nstale--;
			return fin;
		}
		if (tv->built && tv->pid == rs->pid && hx_rr_same_over(r, rs->pid, tv->time, rs->time, s))
			return tv;
	}
	if (view_build(r, tv, rs->pid, rs->time))
		return NULL;
	return tv;
}

/* Does a dump load one code_index twice? */
static bool code_index_reused(const struct jd_file *jd)
{
	uint64_t *ix = malloc((jd->nloads + 1) * sizeof(*ix));
	bool dup = !ix;          /* out of memory: taken to, the safe answer */
	for (size_t i = 0; ix && i < jd->nloads; i++)
		ix[i] = jd->loads[i].code_index;
	if (ix)
		qsort(ix, jd->nloads, sizeof(*ix), cmp_u64);
	for (size_t i = 1; ix && i < jd->nloads && !dup; i++)
		dup = ix[i] == ix[i - 1];
	free(ix);
	return dup;
}

/* A sample some chain of which took an earlier load's rules at a pc (perf's
 * state across samples): counted, the first one's story kept per key. */
static void note_earlier(struct rr *r, struct rr_key *k, const struct uw_result *res, size_t c0)
{
	for (size_t u = c0; u < r->nu; u++) {
		if (!res[u].earlier_why[0])
			continue;
		if (!k->earlier++)
			snprintf(k->earlier_why, sizeof(k->earlier_why), "%s: %s", hx_rr_col_name(r, u),
				 res[u].earlier_why);
		r->nearlier++;
		return;
	}
}

/* A pc in anonymous executable memory no load or perf map names: JIT code
 * perf cannot name or unwind; counted, and the first of a process with no
 * dump and no perf map kept for the report's why (hx_rr_anon_why). */
static void note_anon(struct rr *r, const struct mt_snap *at, uint32_t pid, uint64_t pc)
{
	const struct mt_map *m = mt_find(at, pc);
	if (!m || !(m->prot & PROT_EXEC) || !hx_rr_anon_path(m->path))
		return;
	/* the kernel's own code pages: DSOs to perf, never a JIT's */
	if (!strcmp(m->path, "[vdso]") || !strcmp(m->path, "[vsyscall]") || !strcmp(m->path, "[uprobes]"))
		return;
	r->nanon++;
	size_t di;
	if (dump_of(r, pid, &di))
		return;
	for (size_t k = 0; k < r->npmaps; k++)
		if (r->pmaps[k].pid == pid)
			return;
	if (!r->nanon_bare++) {
		r->anon_pid = pid;
		r->anon_pc = pc;
		r->anon_start = m->start;
		r->anon_end = m->end;
	}
}

void hx_rr_anon_why(const struct rr *r, char *b, size_t n)
{
	b[0] = 0;
	if (!r->nanon_bare)
		return;
	snprintf(b, n, "%" PRIu64 " sample(s) sat in anonymous executable memory of a process with no jitdump and no "
		 "perf map (first: pid %u, pc 0x%" PRIx64 " in the //anon map 0x%" PRIx64 "-0x%" PRIx64 "): JIT code "
		 "perf can neither name nor unwind. Likely cause: the JIT never mapped its jit-%u.dump with PROT_EXEC "
		 "(perf record finds a jitdump only through that mmap, and perf inject -j only then turns the loads "
		 "into maps)%s; a dump at hand can be named with --jitdump",
		 r->nanon_bare, r->anon_pid, r->anon_pc, r->anon_start, r->anon_end, r->anon_pid,
		 r->clock_ok ? "" : ", and perf record ran without -k 1 (the clock is not CLOCK_MONOTONIC: "
				    "perf inject -j then fails, \"jitted code must be sampled with perf record -k 1\")");
}

static int replay_sample(struct rr *r, struct rr_view *fin, struct rr_view *tv, const struct mt_snap *at,
			 const struct rr_sample *rs, struct uw_result *res, const struct pd_event *evp)
{
	const struct pd_event ev = *evp;
	const struct pd_sample *p = &ev.sample;
	bool regs = p->abi && p->stack && p->dyn_size;
	struct uw_sample s;
	to_uw_sample(r, p, &s);
	uint64_t chain[UW_MAX_FRAMES];
	uint32_t nchain = 0;
	user_chain(p, chain, &nchain);
	s.callchain = chain;
	s.ncallchain = nchain;
	/* perf >= 7 keeps one Dwfl per process all recording long; perf 6
	 * makes one per sample (a key per sample) */
	s.dwfl_proc = r->dwfl_per_sample ? rs->off + 1 : (uint64_t)rs->pid + 1;
	/* with --call-graph dwarf the kernel records no user callchain */
	bool kfp = nchain > 0 && !pd_attr_flag(ev.attr, PD_ATTR_EXCLUDE_CALLCHAIN_USER);
	if (!regs) {
		r->nnoregs++;
		if (!kfp)
			return 0;
	}
	/* --call-graph fp: the recorded chain is the only column */
	uint64_t pc = regs ? uw_reg(&s, r->arch->perf_ip) : chain[0];
	size_t c0 = regs ? 0 : r->nu, ncol = r->nu + kfp;
	struct rr_view *cur = view_at(r, fin, tv, at, rs, &s);
	if (!cur)
		return -1;
	/* the columns that keep perf's state of the process (libunwind's
	 * address space and cache) keep it per pid, in sample order */
	s.lu_proc = r->lu_per_sample ? 0 : (uint64_t)rs->pid + 1;
	run_all(r, cur, &s, regs, kfp, res);
	s.lu_proc = 0;
	/* real perf's chain of the same sample, placed in the same tree */
	bool pf = r->perf && hx_rp_sample(r->perf, r, cur, at, rs, regs, pc, res, &res[r->nu + 1]) == 1;
	struct rr_jit jx;
	uint64_t kpc = pc;
	if (!hx_rr_jit_at(r, cur, pc, &jx)) {
		if (!jit_under(r, cur, res, c0, ncol, &kpc, &jx)) {
			note_anon(r, at, rs->pid, pc);
			return 0;
		}
		r->nunder++;
	} else {
		r->njit++;
	}
	struct rr_key *k = key_of(r, jx.name, kpc - jx.start);
	if (!k) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		return -ENOMEM;
	}
	if (!k->samples++)
		key_first(r, cur, k, &jx, kpc == pc ? pc : kpc - 1, res, c0);
	key_load(r, k, jx.load);
	for (size_t u = c0; u < ncol; u++)
		k->out[u][hx_rr_classify(r, cur, &res[u])]++;
	note_earlier(r, k, res, c0);
	if (pf)
		k->out[r->nu + 1][hx_rr_classify(r, cur, &res[r->nu + 1])]++;
	int lrc = r->lint && regs ? hx_rl_sample(r->lint, r, cur, &s, res) : 0;
	if (lrc < 0)
		return lrc;
	char dd[sizeof(k->div_desc)];
	int dv = c0 ? -1 : diverge(r, res, ncol, dd, sizeof(dd));
	if (dv >= 0) {
		r->ndiverge++;
		if (k->div < 0 || dv < k->div) {
			k->div = dv;
			snprintf(k->div_desc, sizeof(k->div_desc), "%s", dd);
		}
	}
	return 0;
}

static int replay_all(struct rr *r)
{
	if (r->nsmp)
		qsort(r->smp, r->nsmp, sizeof(*r->smp), cmp_smp);
	struct rr_view fin = { 0 }, tv = { 0 };
	struct mt_snap at = { 0 };
	struct uw_result *res = calloc(RR_NCOL, sizeof(*res));
	r->ures = calloc(RR_MAX_UW, sizeof(*r->ures));
	uint32_t at_pid = 0;
	size_t at_count = 0;
	bool have_at = false;
	int rc = res && r->ures ? 0 : -1;
	if (rc)
		snprintf(r->err, sizeof(r->err), "out of memory");
	if (r->nexe)
		qsort(r->exe, r->nexe, sizeof(*r->exe), cmp_exec);
	for (size_t d = 0; d < r->ndumps; d++)
		r->index_reused |= code_index_reused(&r->jd[d]);
	size_t e = 0;
	for (size_t i = 0; !rc && i < r->nsmp; i++) {
		const struct rr_sample *rs = &r->smp[i];
		/* perf's flush at each exec before this sample */
		for (; e < r->nexe && (r->exe[e].time < rs->time ||
				       (r->exe[e].time == rs->time && r->exe[e].off < rs->off)); e++)
			uw_libunwind_flush((uint64_t)r->exe[e].pid + 1);
		size_t cnt = mt_count_upto(&r->mt, rs->time);
		if (!have_at || rs->pid != at_pid || cnt != at_count) {
			if (mt_at(&r->mt, rs->pid, rs->time, &at)) {
				snprintf(r->err, sizeof(r->err), "out of memory");
				rc = -1;
				break;
			}
			at_pid = rs->pid;
			at_count = cnt;
			have_at = true;
		}
		rc = replay_one(r, &fin, &tv, &at, rs, res);
	}
	view_fini(r, &fin);
	view_fini(r, &tv);
	uw_libunwind_forget();
	mt_snap_free(&fin.snap);
	mt_snap_free(&tv.snap);
	hx_rr_exact_free(r);
	mt_snap_free(&at);
	free(res);
	free(r->ures);
	r->ures = NULL;
	return rc;
}

static int pick_unwinders(struct rr *r, const char *list)
{
	size_t n;
	const struct uw_unwinder *const *all = hx_columns(&n);
	for (size_t i = 0; i < n && r->nu < RR_MAX_UW; i++) {
		bool on = uw_unwinder_default_on(all[i], r->arch->facts->name);
		if (list) {
			char pat[64];
			snprintf(pat, sizeof(pat), ",%s,", all[i]->name);
			char l2[512];
			snprintf(l2, sizeof(l2), ",%s,", list);
			on = strstr(l2, pat) != NULL;
		}
		/* a real profiler's case column (perf) replays a case's capture:
		 * a recording has its own perf column (--perf) */
		if (on && all[i]->ref == UW_REF_EMULATION) {
			if (list)
				ju_say(JU_SAY_WARNING, "jitunwind", "replay: the perf column of a recording is --perf CMD");
			on = false;
		}
		if (on)
			r->uws[r->nu++] = all[i];
	}
	if (!r->nu) {
		ju_say(JU_SAY_ERROR, "jitunwind", "--unwinders %s: no unwinder of this build", list ? list : "");
		return -EINVAL;
	}
	return 0;
}

static void rr_free(struct rr *r)
{
	for (size_t i = 0; i < r->ndumps; i++) {
		jd_close(&r->jd[i]);
		free(r->dump_path[i]);
		free(r->dump_dir[i]);
		free(r->recorded[i]);
	}
	for (size_t i = 0; i < r->nrefused; i++)
		free(r->refused[i]);
	mt_free(&r->mt);
	mt_free(&r->mtf);
	mt_snap_free(&r->fsnap);
	free(r->is_jit);
	free(r->rebased);
	free(r->smp);
	free(r->exe);
	free(r->keys);
	for (size_t i = 0; i < r->npmaps; i++) {
		for (size_t k = 0; k < r->pmaps[i].n; k++)
			free(r->pmaps[i].syms[k].name);
		free(r->pmaps[i].syms);
		free(r->pmaps[i].path);
	}
	if (r->pvdir[0])
		hx_scratch_remove(r->pvdir);
	if (r->vdso_own)
		unlink(r->vdso);
	hx_rp_free(r->perf);
	hx_rl_free(r->lint);
	pd_close(&r->pf);
}

int hx_realreplay_run(const struct hx_rr_settings *set, struct hx_cmd_outcome *out)
{
	struct rr *r = calloc(1, sizeof(*r));
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	*out = (struct hx_cmd_outcome){ .kind = HX_CMD_CLEAN };
	if (!r)
		return -ENOMEM;
	r->json = set->json;
	r->symfs = set->symfs;
	r->prof = set->prof;
	r->top = set->top;
	r->max_views = set->max_views;
	r->path = set->path;
	mt_init(&r->mt);
	mt_init(&r->mtf);
	int status = -EINVAL;
	if (hx_rr_read_events(r, set->dumps, (int)set->ndumps) || pick_unwinders(r, set->unwinders) ||
	    (!set->no_perf && hx_rp_open(&r->perf, r, set->perf_cmd)) ||
	    (set->lint && hx_rl_open(&r->lint, r, set->lint_ignore))) {
		if (r->err[0])
			ju_say(JU_SAY_ERROR, "jitunwind", "%s", r->err);
	} else if (replay_all(r)) {
		ju_say(JU_SAY_ERROR, "jitunwind", "%s", r->err);
	} else {
		status = hx_rr_report(r, set->stats, &t0, out);
	}
	rr_free(r);
	free(r);
	return status;
}

