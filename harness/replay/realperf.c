/* The perf column of a real recording's replay (realperf.h).  perf script
 * prints each frame as DSO + offset into it (map_ip), the return addresses
 * less one: each goes back to an address through the replay's own map tree
 * at the sample's time (a jitted .so through the CODE_LOAD perf inject made
 * it from), and the chain is compared, by address, with the column of the
 * DWARF unwinder that perf build uses (`perf version --build-options`).
 * perf runs with a private HOME and --buildid-dir in a work directory next
 * to the recording (a perf in a Debian root sees the tree only), removed
 * after (JU_PERF_KEEP=1 keeps it). */
#include "harness/replay/realperf.h"
#include "harness/run/perfrun.h"
#include "harness/replay/realreplay_int.h"
#include "harness/case/jsonw.h"
#include "harness/case/say.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#define RP_MAX_FRAMES 1024        /* per sample kept from perf's output (it stops at 127) */
#define RP_MAX_DIFFS 4096         /* disagreeing samples kept for the report */
#define RP_PERF_MAX_STACK 127     /* perf's default --max-stack (kernel.perf_event_max_stack) */
#define RP_ZERO UINT64_MAX        /* perf prints a zero return address as -1 */
#define RP_HASH_BITS 20            /* up to 2^19 DSO names (jitted .so files) */

struct rp_frame { uint64_t v; uint32_t dso; };
struct rp_smp { uint64_t time; uint32_t pid, tid, n; size_t first; };
/* a jitted .so's name, when perf mapped it (a load, or a move of it: m) */
struct rp_jname { char *name; uint64_t ts; const struct jd_load *l; const struct jd_move *m; };
struct rp_diff {
	uint64_t time, perf, emu;
	uint32_t tid, np, ne;
	int frame;
	bool jit;
};

struct hx_rp {
	char version[64], emulation[16], dir[4096];
	int emu_col;
	int absolute;                  /* perf prints addresses (1), map offsets (0), not known yet (-1) */
	bool injected_here;
	/* perf script's output */
	char **dsos;
	size_t ndsos, cdsos;
	uint32_t *hash;                /* dso name -> index + 1 (open addressing) */
	struct rp_frame *fr;
	size_t nfr, cfr;
	struct rp_smp *smp;
	size_t nsmp, csmp;
	/* jitted-<pid>-<index>.so names perf prints, by name then time */
	struct rp_jname *jn;
	size_t njn;
	/* the snapshot's maps by path, rebuilt when the snapshot changes */
	const struct mt_snap *idx_of;
	size_t idx_applied, idx_n;
	uint32_t idx_pid;
	size_t *idx, idx_cap;
	/* agreement */
	uint64_t compared, agree, missing, unplaced, jit_compared, jit_agree, no_regs;
	char unplaced_why[256];
	struct rp_diff *diffs;
	size_t ndiffs;
	uint64_t ndiff_total;
};

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

/* The index of a DSO name (added if new); UINT32_MAX when out of memory. */
static uint32_t dso_id(struct hx_rp *p, const char *s, size_t len)
{
	char name[PD_PATH_MAX];
	snprintf(name, sizeof(name), "%.*s", (int)(len < sizeof(name) ? len : sizeof(name) - 1), s);
	uint32_t mask = (1u << RP_HASH_BITS) - 1, h = hash_str(name) & mask;
	for (uint32_t probe = 0; probe <= mask; probe++, h = (h + 1) & mask) {
		uint32_t e = p->hash[h];
		if (!e)
			break;
		if (!strcmp(p->dsos[e - 1], name))
			return e - 1;
	}
	if (p->ndsos >= mask / 2 || p->hash[h])
		return UINT32_MAX;       /* more DSOs than the table holds: reported as such */
	if (p->ndsos == p->cdsos) {
		size_t c = p->cdsos ? p->cdsos * 2 : 256;
		char **d = realloc(p->dsos, c * sizeof(*d));
		if (!d)
			return UINT32_MAX;
		p->dsos = d;
		p->cdsos = c;
	}
	if (!(p->dsos[p->ndsos] = strdup(name)))
		return UINT32_MAX;
	p->hash[h] = (uint32_t)++p->ndsos;
	return (uint32_t)(p->ndsos - 1);
}

static int grow(void **a, size_t *cap, size_t need, size_t sz)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 1024;
	while (c < need)
		c *= 2;
	void *n = realloc(*a, c * sz);
	if (!n)
		return -ENOMEM;
	*a = n;
	*cap = c;
	return 0;
}

/* "\t    ADDR (DSO)": one frame of the current sample */
static int parse_frame(struct hx_rp *p, const char *line, const char *lend)
{
	/* a NUL-terminated copy: the output is mapped, and its last line may
	 * end the mapping */
	char buf[PD_PATH_MAX + 64];
	size_t n = (size_t)(lend - line) < sizeof(buf) - 1 ? (size_t)(lend - line) : sizeof(buf) - 1;
	memcpy(buf, line, n);
	buf[n] = 0;
	const char *l = buf, *end = buf + n;
	while (l < end && (*l == ' ' || *l == '\t'))
		l++;
	char *e;
	uint64_t v = strtoull(l, &e, 16);
	if (e == l || e >= end)
		return 0;
	const char *o = memchr(e, '(', (size_t)(end - e)), *c = end;
	while (c > e && c[-1] != ')')
		c--;
	if (!o || c <= o + 1)
		return 0;
	struct rp_smp *s = &p->smp[p->nsmp - 1];
	if (s->n >= RP_MAX_FRAMES)
		return 0;
	uint32_t d = dso_id(p, o + 1, (size_t)(c - 1 - (o + 1)));
	if (d == UINT32_MAX || grow((void **)&p->fr, &p->cfr, p->nfr + 1, sizeof(*p->fr)))
		return -ENOMEM;
	p->fr[p->nfr++] = (struct rp_frame){ v, d };
	s->n++;
	return 0;
}

/* perf script -F pid,tid,time,ip,dso --ns: "PID/TID SEC.NSEC:" then the
 * frames, one a line (or one frame on the same line without a chain). */
static int parse_script(struct hx_rp *p, const char *t, size_t len)
{
	const char *end = t + len;
	for (const char *l = t; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		const char *le = nl ? nl : end;
		char line[256];
		snprintf(line, sizeof(line), "%.*s", (int)(le - l < 255 ? le - l : 255), l);
		unsigned pid, tid;
		unsigned long long sec, ns;
		int off = 0;
		if (line[0] != '\t' && sscanf(line, " %u/%u %llu.%llu:%n", &pid, &tid, &sec, &ns, &off) == 4) {
			if (grow((void **)&p->smp, &p->csmp, p->nsmp + 1, sizeof(*p->smp)))
				return -ENOMEM;
			p->smp[p->nsmp++] = (struct rp_smp){ .time = sec * 1000000000ull + ns, .pid = pid,
							     .tid = tid, .first = p->nfr };
			if (parse_frame(p, l + off, le))
				return -ENOMEM;   /* parse_frame fails only for memory */
		} else if (p->nsmp && (line[0] == '\t' || line[0] == ' ') && parse_frame(p, l, le)) {
			return -ENOMEM;
		}
		l = nl ? nl + 1 : end;
	}
	return 0;
}

static int cmp_rsmp(const void *a, const void *b)
{
	const struct rp_smp *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

static int cmp_jn(const void *a, const void *b)
{
	const struct rp_jname *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->ts > y->ts) - (x->ts < y->ts);
}

/* every load under the name perf inject gives its .so */
static int jitted_names(struct hx_rp *p, const struct rr *r)
{
	size_t n = 0;
	for (size_t d = 0; d < r->ndumps; d++)
		n += r->jd[d].nloads + r->jd[d].nmoves;
	if (!(p->jn = calloc(n ? n : 1, sizeof(*p->jn))))
		return -ENOMEM;
	for (size_t d = 0; d < r->ndumps; d++)
		for (size_t i = 0; i < r->jd[d].nloads; i++) {
			char b[PD_PATH_MAX + 64];
			const char *dir = r->dump_dir[d];
			const struct jd_load *l = &r->jd[d].loads[i];
			if (pv_jitted_path(b, sizeof(b), strcmp(dir, "/") ? dir : "", l))
				continue;
			if (!(p->jn[p->njn].name = strdup(b)))
				return -ENOMEM;
			p->jn[p->njn].ts = r->clock_ok ? l->timestamp : 0;
			p->jn[p->njn++].l = l;
		}
	/* a move maps the file of its code_index again, at the new address */
	for (size_t d = 0; d < r->ndumps; d++)
		for (size_t i = 0; i < r->jd[d].nmoves; i++) {
			char b[PD_PATH_MAX + 64];
			const char *dir = r->dump_dir[d];
			const struct jd_move *m = &r->jd[d].moves[i];
			struct jd_load key = { .pid = m->pid, .code_index = m->code_index };
			if (pv_jitted_path(b, sizeof(b), strcmp(dir, "/") ? dir : "", &key))
				continue;
			if (!(p->jn[p->njn].name = strdup(b)))
				return -ENOMEM;
			p->jn[p->njn].ts = r->clock_ok ? m->timestamp : 0;
			p->jn[p->njn++].m = m;
		}
	qsort(p->jn, p->njn, sizeof(*p->jn), cmp_jn);
	return 0;
}

static char *map_file(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	char *t = NULL;
	if (fd >= 0 && !fstat(fd, &st) && st.st_size > 0) {
		t = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (t == MAP_FAILED)
			t = NULL;
		else
			*len = (size_t)st.st_size;
	}
	if (fd >= 0)
		close(fd);
	return t;
}

/* next to the recording (a perf in a Debian root sees the tree only), else
 * perfrun.c's temporary one */
/* perf's private build-id cache gets the recording's vDSO, as the user's
 * perf finds it in theirs (realreplay_read.c find_vdso): [vdso]/<id>/vdso
 * and the .build-id/<xx>/<rest> link perf looks it up by. */
static int seed_vdso(const struct hx_rp *p, const struct rr *r)
{
	char d[5][PD_PATH_MAX + 128], f[PD_PATH_MAX + 160];
	const char *id = r->vdso_bid;
	/* parents first */
	snprintf(d[0], sizeof(d[0]), "%s/buildid", p->dir);
	snprintf(d[1], sizeof(d[1]), "%s/buildid/[vdso]", p->dir);
	snprintf(d[2], sizeof(d[2]), "%s/buildid/[vdso]/%s", p->dir, id);
	snprintf(d[3], sizeof(d[3]), "%s/buildid/.build-id", p->dir);
	snprintf(d[4], sizeof(d[4]), "%s/buildid/.build-id/%.2s", p->dir, id);
	for (int i = 0; i < 5; i++)
		if (mkdir(d[i], 0700) && errno != EEXIST)
			return ju_errno();
	snprintf(f, sizeof(f), "%s/buildid/[vdso]/%s/vdso", p->dir, id);
	size_t n = 0;
	char *img = hx_slurp(r->vdso, &n);
	FILE *o = img ? fopen(f, "wb") : NULL;
	bool ok = o && fwrite(img, 1, n, o) == n;
	if (o && fclose(o))
		ok = false;
	free(img);
	if (!ok)
		return -EIO;
	char target[64];
	snprintf(target, sizeof(target), "../../[vdso]/%s", id);
	snprintf(f, sizeof(f), "%s/%s", d[4], id + 2);
	return symlink(target, f);
}

static int work_dir(struct hx_rp *p, const struct rr *r)
{
	const char *sl = strrchr(r->path, '/');
	snprintf(p->dir, sizeof(p->dir), "%.*s/.jitunwind-perf-XXXXXX", sl ? (int)(sl - r->path) : 1,
		 sl ? r->path : ".");
	if (!mkdtemp(p->dir)) {
		struct ju_err err;
		return hx_perf_workdir(p->dir, sizeof(p->dir), "perf", &err);
	}
	char home[PD_PATH_MAX + 8];
	snprintf(home, sizeof(home), "%s/home", p->dir);
	if (mkdir(home, 0700))
		return ju_errno();
	return r->vdso[0] && r->vdso_bid[0] ? seed_vdso(p, r) : 0;
}

/* inject when the recording has dumps and no injected maps; then script */
static int run_perf(struct hx_rp *p, struct rr *r)
{
	char data[PD_PATH_MAX + 32], out[PD_PATH_MAX + 32];
	snprintf(data, sizeof(data), "%s", r->path);
	if (r->ndumps && !r->ninjected) {
		if (r->symfs) {
			snprintf(r->err, sizeof(r->err),
				 "the perf column: %s is not injected, and perf inject -j reads the dump at its "
				 "recorded path %s, not under --symfs: inject it where it was recorded "
				 "(perf inject -j) and replay the injected file", r->path, r->recorded[0]);
			return -EINVAL;
		}
		snprintf(data, sizeof(data), "%s/perf.jit.data", p->dir);
		snprintf(out, sizeof(out), "%s/inject.txt", p->dir);
		const char *inj[] = { "inject", "-j", "-i", r->path, "-o", data, NULL };
		char why[700];
		int prc = hx_perf_run(p->dir, inj, NULL, out, why, sizeof(why));
		if (prc) {
			snprintf(r->err, sizeof(r->err), "the perf column: %s", why);
			return prc;
		}
		p->injected_here = true;
	}
	snprintf(out, sizeof(out), "%s/script.txt", p->dir);
	const char *scr[16] = { "script", "-i", data, "-F", "pid,tid,time,ip,dso", "--ns", "--no-inline" };
	int n = 7;
	if (r->symfs) {
		scr[n++] = "--symfs";
		scr[n++] = r->symfs;
	}
	scr[n] = NULL;
	char why[700];
	int prc = hx_perf_run(p->dir, scr, NULL, out, why, sizeof(why));
	if (prc) {
		snprintf(r->err, sizeof(r->err), "the perf column: %s", why);
		return prc;
	}
	size_t len = 0;
	char *t = map_file(out, &len);
	int rc = t ? parse_script(p, t, len) : 0;
	if (t)
		munmap(t, len);
	if (rc) {
		snprintf(r->err, sizeof(r->err), "the perf column: out of memory, or more than %u DSO names in perf "
			 "script's output", 1u << (RP_HASH_BITS - 1));
		return rc < 0 ? rc : -ENOMEM;
	}
	if (p->nsmp)
		qsort(p->smp, p->nsmp, sizeof(*p->smp), cmp_rsmp);
	return 0;
}

int hx_rp_open(struct hx_rp **out, struct rr *r, const char *cmd)
{
	*out = NULL;
	struct hx_rp *p = calloc(1, sizeof(*p));
	char why[768];
	if (!p || !(p->hash = calloc(1u << RP_HASH_BITS, sizeof(*p->hash)))) {
		free(p);
		snprintf(r->err, sizeof(r->err), "out of memory");
		return -ENOMEM;
	}
	struct utsname un;
	if (!cmd && !uname(&un) && strcmp(un.machine, r->arch->facts->name)) {
		/* Debian's perf unwinds its own arch only (no cross-arch libunwind) */
		ju_say(JU_SAY_SKIP, "jitunwind", "skip: the perf column: the perf of this %s machine does not unwind a %s "
			"recording (--perf CMD names one that does)", un.machine, r->arch->facts->name);
		hx_rp_free(p);
		return 0;
	}
	const struct hx_perf_build *b;
	hx_perf_set_cmd(cmd ? cmd : "perf");
	if (hx_perf_probe(&b, why, sizeof(why))) {
		hx_rp_free(p);
		if (!cmd) {
			ju_say(JU_SAY_SKIP, "jitunwind", "skip: the perf column: %s", why);
			return 0;
		}
		snprintf(r->err, sizeof(r->err), "--perf %s: %s", cmd, why);
		return -ENODEV;
	}
	snprintf(p->version, sizeof(p->version), "%s", b->version);
	snprintf(p->emulation, sizeof(p->emulation), "%s", b->engine);
	p->emu_col = hx_rr_column(r, p->emulation);
	p->absolute = -1;
	r->dwfl_per_sample = !pv_memory_of(b->major)->dw_per_process;
	r->lu_per_sample = !pv_memory_of(b->major)->lu_per_process;
	if (work_dir(p, r) || jitted_names(p, r)) {
		int rc = p->dir[0] ? ju_errno() : -ENOMEM;
		snprintf(r->err, sizeof(r->err), "the perf column: %s", p->dir[0] ? strerror(-rc) : "out of memory");
		hx_rp_free(p);
		return rc;
	}
	int rc = run_perf(p, r);
	if (rc) {
		hx_rp_free(p);
		if (cmd)
			return rc;
		/* perf found on PATH that cannot read this recording (one a newer
		 * perf wrote: "incompatible file format"): a visible skip */
		ju_say(JU_SAY_SKIP, "jitunwind", "skip: %s", r->err);
		r->err[0] = 0;
		return 0;
	}
	*out = p;
	return 0;
}

static int cmp_idx_path(const void *a, const void *b, void *arg)
{
	const struct mt_snap *s = arg;
	const struct mt_map *x = &s->maps[*(const size_t *)a], *y = &s->maps[*(const size_t *)b];
	int c = strcmp(x->path, y->path);
	return c ? c : (x->pgoff > y->pgoff) - (x->pgoff < y->pgoff);
}

static int index_snap(struct hx_rp *p, const struct mt_snap *at, uint32_t pid)
{
	if (p->idx_of == at && p->idx_applied == at->applied && p->idx_n == at->n && p->idx_pid == pid)
		return 0;
	if (grow((void **)&p->idx, &p->idx_cap, at->n + 1, sizeof(*p->idx)))
		return -ENOMEM;
	for (size_t i = 0; i < at->n; i++)
		p->idx[i] = i;
	if (at->n)
		qsort_r(p->idx, at->n, sizeof(*p->idx), cmp_idx_path, (void *)at);
	p->idx_of = at;
	p->idx_applied = at->applied;
	p->idx_n = at->n;
	p->idx_pid = pid;
	return 0;
}

/* The address of a file offset in a file map of the tree at the sample's time */
static bool place_file(const struct hx_rp *p, const struct mt_snap *at, const char *dso, uint64_t v, uint64_t *a)
{
	size_t lo = 0, hi = at->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(at->maps[p->idx[mid]].path, dso) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* a file mapped twice (a process that execs keeps its old image's maps
	 * in perf's tree, as perf does: COMM exec flushes no map): the newest */
	const struct mt_map *best = NULL;
	for (; lo < at->n && !strcmp(at->maps[p->idx[lo]].path, dso); lo++) {
		const struct mt_map *m = &at->maps[p->idx[lo]];
		/* newest in time: a recording's events are in file order per
		 * ring buffer flush, not in time order (seq is the file's) */
		if (v >= m->pgoff && v - m->pgoff < m->end - m->start &&
		    (!best || m->time > best->time || (m->time == best->time && m->seq > best->seq)))
			best = m;
	}
	if (best)
		*a = best->start + (v - best->pgoff);
	return best != NULL;
}

/* a jitted .so: the newest load of that name (or move of it) made by the
 * sample's time: perf prints an address in the file, the same for the old
 * map and the moved one; the code ran where it was last put */
static bool place_jitted(const struct hx_rp *p, const struct rr *r, const char *dso, uint64_t t, uint64_t v,
			 uint64_t *a)
{
	size_t lo = 0, hi = p->njn;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(p->jn[mid].name, dso) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct rp_jname *best = NULL;
	for (; lo < p->njn && !strcmp(p->jn[lo].name, dso); lo++)
		if (!best || p->jn[lo].ts <= t)
			best = &p->jn[lo];
	if (!best)
		return false;
	struct pv_layout ly;
	if (best->m) {
		uint64_t len;
		pv_layout_move(r->prof, best->m, &ly.map_start, &len, &ly.map_pgoff);
	} else {
		pv_layout_load(r->prof, best->l, &ly);
	}
	*a = ly.map_start + v - ly.map_pgoff;
	return true;
}

static bool kernel_dso(const char *d, uint64_t v)
{
	return !strncmp(d, "[kernel", 7) || !strncmp(d, "[guest", 6) ||
	       (!strcmp(d, "[unknown]") && v >= 0xffff800000000000ull && v != RP_ZERO);
}

/* perf's chain of one printed sample as the unwinders give chains: the pc,
 * then return addresses (perf printed them less one; -1 is a zero one). */
static int place_chain(struct hx_rp *p, const struct rr *r, const struct mt_snap *at, const struct rp_smp *s,
		       uint64_t ip, struct uw_result *pc)
{
	memset(pc, 0, offsetof(struct uw_result, why));
	if (index_snap(p, at, s->pid))
		return -ENOMEM;
	bool ok = true;
	for (uint32_t i = 0; i < s->n && pc->n < UW_MAX_FRAMES; i++) {
		const struct rp_frame *f = &p->fr[s->first + i];
		const char *d = p->dsos[f->dso];
		uint64_t a = 0;
		/* the kernel's part comes first; after a user frame, an address
		 * in the kernel's range is a user frame (garbage) perf printed */
		if (pc->n == 0 && kernel_dso(d, f->v))
			continue;
		/* perf 6 prints map offsets, perf 7 addresses: the sampled ip says which */
		if (p->absolute < 0 && pc->n == 0 && strcmp(d, "[unknown]"))
			p->absolute = f->v == ip;
		bool placed = p->absolute > 0 ? (a = f->v, true) : f->v == RP_ZERO || !strcmp(d, "[unknown]") ? (a = f->v, true)
			      : strstr(d, "/jitted-") ? place_jitted(p, r, d, s->time, f->v, &a)
			      : place_file(p, at, d, f->v, &a) ||
				((hx_rr_anon_path(d) || !strncmp(d, "/tmp/perf-", 10) || d[0] == '[') &&
				 (a = f->v, true));
		if (!placed && ok) {
			ok = false;
			if (!p->unplaced_why[0])
				snprintf(p->unplaced_why, sizeof(p->unplaced_why),
					 "time %" PRIu64 " tid %u: no map of %s holds offset 0x%" PRIx64, s->time, s->tid, d, f->v);
		}
		if (pc->n > 0)
			a = a == RP_ZERO ? 0 : a + 1;
		pc->addr[pc->n++] = a;
	}
	pc->stop = UW_STOP_END;
	return ok ? 1 : 0;
}

static const struct rp_smp *find_smp(const struct hx_rp *p, uint64_t t, uint32_t tid)
{
	struct rp_smp key = { .time = t, .tid = tid };
	return p->nsmp ? bsearch(&key, p->smp, p->nsmp, sizeof(*p->smp), cmp_rsmp) : NULL;
}

/* chain length less a trailing zero return address, within perf's max stack */
static uint32_t eff_len(const struct uw_result *c)
{
	uint32_t n = (uint32_t)c->n;
	if (n > RP_PERF_MAX_STACK)
		n = RP_PERF_MAX_STACK;
	while (n > 1 && c->addr[n - 1] == 0)
		n--;
	return n;
}

static bool touches_jit(const struct rr *r, const struct rr_view *v, const struct uw_result *c)
{
	struct rr_jit j;
	for (int i = 0; i < c->n; i++)
		if (hx_rr_jit_at(r, v, c->addr[i] - (i ? 1 : 0), &j))
			return true;
	return false;
}

/* The emulation's chain as perf prints it, in place_chain's terms: perf
 * stores each return address less one and prints no entry whose address is
 * then 0 (unwind-libunwind-local.c and unwind-libdw.c: `ips[j] ? entry() : 0`),
 * so a return address of 1 leaves no frame; an activation (the frame its
 * unwinder stepped to through a signal frame: the interrupted pc) it stores as
 * it is, so place_chain, which adds one to every frame after the first, sees
 * it one higher. */
static void as_printed(const struct uw_result *e, struct uw_result *o)
{
	memcpy(o, e, offsetof(struct uw_result, why));
	o->n = 0;
	for (int i = 0; i < e->n && i < UW_MAX_FRAMES; i++) {
		bool act = i > 0 && (e->flags[i] & UW_F_ACTIVATION);
		if (i == 0 || e->addr[i] != 1 || act) {
			o->addr[o->n] = e->addr[i] + act;
			o->flags[o->n++] = e->flags[i];
		}
	}
}

static void compare(struct hx_rp *p, const struct rr *r, const struct rr_view *v, const struct rr_sample *rs,
		    const struct uw_result *emu, const struct uw_result *pc)
{
	struct uw_result shown;
	const struct uw_result *e = &shown;
	as_printed(emu, &shown);
	uint32_t ne = eff_len(e), np = eff_len(pc);
	int at = -1;
	for (uint32_t i = 0; i < (ne > np ? ne : np) && at < 0; i++)
		if (i >= ne || i >= np || e->addr[i] != pc->addr[i])
			at = (int)i;
	bool jit = touches_jit(r, v, e) || touches_jit(r, v, pc);
	p->compared++;
	p->jit_compared += jit;
	if (at < 0) {
		p->agree++;
		p->jit_agree += jit;
		return;
	}
	p->ndiff_total++;
	if (p->ndiffs >= RP_MAX_DIFFS)
		return;
	struct rp_diff *d = realloc(p->diffs, (p->ndiffs + 1) * sizeof(*d));
	if (!d)
		return;
	p->diffs = d;
	p->diffs[p->ndiffs++] = (struct rp_diff){ .time = rs->time, .tid = rs->tid, .frame = at, .np = np, .ne = ne,
						  .perf = (uint32_t)at < np ? pc->addr[at] : 0,
						  .emu = (uint32_t)at < ne ? e->addr[at] : 0, .jit = jit };
}

int hx_rp_sample(struct hx_rp *p, const struct rr *r, const struct rr_view *v, const struct mt_snap *at,
		 const struct rr_sample *rs, bool regs, uint64_t ip, const struct uw_result *res,
		 struct uw_result *pc)
{
	const struct rp_smp *s = find_smp(p, rs->time, rs->tid);
	if (!regs) {
		p->no_regs++;
		return 0;
	}
	if (!s) {
		p->missing++;
		return 0;
	}
	int rc = place_chain(p, r, at, s, ip, pc);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		p->unplaced++;
		return 1;
	}
	if (p->emu_col >= 0)
		compare(p, r, v, rs, &res[p->emu_col], pc);
	return 1;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

void hx_rp_report_text(const struct hx_rp *p, const struct rr *r)
{
	printf("  perf column: perf %s (DWARF unwinding with %s), %zu chains printed%s\n", p->version, p->emulation,
	       p->nsmp, p->injected_here ? " (after perf inject -j)" : "");
	if (p->emu_col < 0) {
		printf("    no %s column selected: no agreement computed\n", p->emulation);
		return;
	}
	printf("    agreement with jitunwind's %s emulation: %" PRIu64 "/%" PRIu64 " samples (%.2f %%); "
	       "JIT samples %" PRIu64 "/%" PRIu64 " (%.2f %%); %" PRIu64 " without a chain from perf, %" PRIu64
	       " with a frame not placed%s%s\n", p->emulation, p->agree, p->compared, pct(p->agree, p->compared),
	       p->jit_agree, p->jit_compared, pct(p->jit_agree, p->jit_compared), p->missing, p->unplaced,
	       p->unplaced_why[0] ? " (first: " : "", p->unplaced_why[0] ? p->unplaced_why : "");
	if (p->unplaced_why[0])
		printf(")\n");
	for (size_t i = 0; i < p->ndiffs && (r->top <= 0 || (int)i < r->top); i++) {
		const struct rp_diff *d = &p->diffs[i];
		printf("    differs: time %" PRIu64 " tid %u%s: frame %d: perf=0x%" PRIx64 " %s=0x%" PRIx64
		       " (perf %u frames, %s %u)\n", d->time, d->tid, d->jit ? " (JIT)" : "", d->frame, d->perf,
		       p->emulation, d->emu, d->np, p->emulation, d->ne);
	}
}

void hx_rp_report_json(const struct hx_rp *p, const struct rr *r, FILE *f)
{
	fprintf(f, "{\"version\":");
	hx_jsonw_str(f, p->version, 0);
	fprintf(f, ",\"emulation\":\"%s\",\"injected_here\":%s,\"printed\":%zu,\"compared\":%" PRIu64
		",\"agree\":%" PRIu64 ",\"agreement\":%.4f,\"jit_compared\":%" PRIu64 ",\"jit_agree\":%" PRIu64
		",\"missing\":%" PRIu64 ",\"unplaced\":%" PRIu64 ",\"unplaced_first\":", p->emulation,
		p->injected_here ? "true" : "false", p->nsmp, p->compared, p->agree,
		p->compared ? (double)p->agree / (double)p->compared : 0.0, p->jit_compared, p->jit_agree, p->missing,
		p->unplaced);
	hx_jsonw_str(f, p->unplaced_why[0] ? p->unplaced_why : NULL, HX_JSONW_LATIN1);
	fprintf(f, ",\"differ\":[");
	for (size_t i = 0; i < p->ndiffs; i++) {
		const struct rp_diff *d = &p->diffs[i];
		fprintf(f, "%s{\"time\":%" PRIu64 ",\"tid\":%u,\"jit\":%s,\"frame\":%d,\"perf\":%" PRIu64
			",\"emulation\":%" PRIu64 ",\"perf_frames\":%u,\"emulation_frames\":%u}", i ? "," : "", d->time,
			d->tid, d->jit ? "true" : "false", d->frame, d->perf, d->emu, d->np, d->ne);
	}
	fprintf(f, "]}");
}

void hx_rp_free(struct hx_rp *p)
{
	if (!p)
		return;
	hx_perf_workdir_remove(p->dir);
	for (size_t i = 0; i < p->ndsos; i++)
		free(p->dsos[i]);
	for (size_t i = 0; i < p->njn; i++)
		free(p->jn[i].name);
	free(p->dsos);
	free(p->hash);
	free(p->fr);
	free(p->smp);
	free(p->jn);
	free(p->idx);
	free(p->diffs);
	free(p);
}
