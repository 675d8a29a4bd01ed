/* When a view of perf built at one time answers a sample taken at another
 * exactly as the view at the sample's own time would (realreplay_int.h,
 * hx_rr_same_over).  Per process, the addresses each mapping event changed
 * and when: a view built at t0 and the tree at t differ only inside the
 * ranges mapped in between, so a sample none of whose words (the pc, the
 * registers, every word of the stack dump, the kernel's chain) lies in such
 * a range resolves every address it can reach alike in both -- its chains,
 * and what perf's state learns from them.  A file mapped at more than one
 * base in the recording (an exec's image, the vDSO) moves that DSO's base
 * for every map of it: mapped in between, it is never the same. */
#include "harness/replay/realreplay_int.h"

#include <stdlib.h>
#include <string.h>

struct rr_chg_ev { uint64_t start, end, time; };

struct rr_chg {                 /* one process's changes */
	uint32_t pid;
	uint64_t lo, hi;              /* the ranges' hull */
	uint64_t *bound;              /* segment boundaries, sorted, unique (nbound) */
	size_t nbound;
	size_t *first;                /* segment k's times: times[first[k], first[k + 1]) */
	uint64_t *times;              /* sorted within a segment */
	uint64_t *ftimes;             /* file mappings' times, sorted */
	size_t nftimes;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_ev_time(const void *a, const void *b)
{
	const struct rr_chg_ev *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time;
}

/* the segment holding a (bound[k] <= a < bound[k + 1]), or nbound */
static size_t seg_of(const struct rr_chg *c, uint64_t a)
{
	size_t lo = 0, hi = c->nbound;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->bound[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : c->nbound;
}

/* Segments [seg_of(start), seg_of(end)) get the event's time: counted
 * (fill false) into first[], or written. */
static void paint(struct rr_chg *c, const struct rr_chg_ev *e, size_t ne, bool fill, size_t *pos)
{
	for (size_t i = 0; i < ne; i++) {
		size_t k = seg_of(c, e[i].start), end = seg_of(c, e[i].end);
		for (; k < end && k + 1 < c->nbound; k++) {
			if (fill)
				c->times[pos[k]++] = e[i].time;
			else
				c->first[k + 1]++;
		}
	}
}

static int chg_index(struct rr_chg *c, struct rr_chg_ev *e, size_t ne)
{
	c->lo = UINT64_MAX;
	c->hi = 0;
	if (!(c->bound = malloc((2 * ne + 1) * sizeof(*c->bound))))
		return -ENOMEM;
	for (size_t i = 0; i < ne; i++) {
		c->bound[c->nbound++] = e[i].start;
		c->bound[c->nbound++] = e[i].end;
		c->lo = e[i].start < c->lo ? e[i].start : c->lo;
		c->hi = e[i].end > c->hi ? e[i].end : c->hi;
	}
	qsort(c->bound, c->nbound, sizeof(*c->bound), cmp_u64);
	size_t u = 0;
	for (size_t i = 0; i < c->nbound; i++)
		if (!u || c->bound[i] != c->bound[u - 1])
			c->bound[u++] = c->bound[i];
	c->nbound = u;
	if (!(c->first = calloc(u + 1, sizeof(*c->first))))
		return -ENOMEM;
	qsort(e, ne, sizeof(*e), cmp_ev_time);   /* each segment's times come sorted */
	paint(c, e, ne, false, NULL);
	for (size_t k = 0; k < u; k++)
		c->first[k + 1] += c->first[k];
	size_t *pos = malloc((u + 1) * sizeof(*pos));
	c->times = malloc((c->first[u] + 1) * sizeof(*c->times));
	if (!pos || !c->times) {
		free(pos);
		return -ENOMEM;
	}
	memcpy(pos, c->first, (u + 1) * sizeof(*pos));
	paint(c, e, ne, true, pos);
	free(pos);
	return 0;
}

static int cmp_ev_start(const void *a, const void *b)
{
	const struct rr_chg_ev *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* An anonymous mapping changes nothing where only anonymous maps or none
 * were (perf keeps no DSO for either) unless a perf map names code there:
 * it counts where it overlaps a JIT load's or a file's range (of any time),
 * the pieces appended to e.  f: those ranges, sorted by start. */
static size_t anon_pieces(const struct rr_chg_ev *f, size_t nf, const struct rr_chg_ev *a, struct rr_chg_ev *e,
			  size_t cap)
{
	size_t n = 0, lo = 0, hi = nf;
	while (lo < hi) {          /* the first range starting at or after a->start */
		size_t mid = lo + (hi - lo) / 2;
		if (f[mid].start < a->start)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges overlap each other: one before may reach in, walk back over those
	 * (bounded by nf) */
	size_t i = lo;
	while (i > 0 && f[i - 1].end > a->start && lo - i < nf)
		i--;
	for (; i < nf && f[i].start < a->end; i++) {
		uint64_t s = f[i].start > a->start ? f[i].start : a->start, t = f[i].end < a->end ? f[i].end : a->end;
		if (s >= t)
			continue;
		if (n == cap) {          /* more than cap pieces: the whole anonymous range */
			e[0] = *a;
			return 1;
		}
		e[n++] = (struct rr_chg_ev){ s, t, a->time };
	}
	return n;
}

/* pid's changes from the map tree (JIT loads and file maps by range,
 * anonymous maps where they cover what was not anonymous, files mapped at
 * more than one base by time alone).  0, or -1
 * out of memory. */
static int chg_build(const struct rr *r, uint32_t pid, struct rr_chg *c)
{
	memset(c, 0, sizeof(*c));
	c->pid = pid;
	size_t ne = 0, na = 0, nf = 0;
	struct rr_chg_ev *e = malloc((r->mt.n + 1) * sizeof(*e)), *a = malloc((r->mt.n + 1) * sizeof(*a));
	struct rr_chg_ev *f = malloc((r->mt.n + 1) * sizeof(*f));
	c->ftimes = malloc((r->mt.n + 1) * sizeof(*c->ftimes));
	bool pmap = false;
	for (size_t i = 0; i < r->npmaps; i++)
		pmap |= r->pmaps[i].pid == pid;
	int rc = -1;
	if (!e || !a || !f || !c->ftimes)
		goto out;
	for (size_t i = 0; i < r->mt.n; i++) {
		const struct mt_event *v = &r->mt.ev[i];
		if (v->kind != MT_MMAP || v->pid != pid)
			continue;
		struct rr_chg_ev x = { v->map.start, v->map.end, v->time };
		bool jit = r->is_jit[v->map.seq], anon = !jit && hx_rr_anon_path(v->map.path);
		if (anon && !pmap)
			a[na++] = x;
		else if (jit || anon || !(hx_rr_rebased(r, v->map.path) || !strcmp(v->map.path, "[vdso]")))
			e[ne++] = x;
		else
			c->ftimes[c->nftimes++] = v->time;
		if (!anon)
			f[nf++] = x;
	}
	qsort(f, nf, sizeof(*f), cmp_ev_start);
	for (size_t i = 0; i < na; i++) {
		/* its pieces (at most 64, else the whole range): e grows for them */
		struct rr_chg_ev tmp[64];
		size_t k = anon_pieces(f, nf, &a[i], tmp, 64);
		struct rr_chg_ev *g = realloc(e, (ne + k + 1) * sizeof(*e));
		if (!g)
			goto out;
		e = g;
		memcpy(e + ne, tmp, k * sizeof(*tmp));
		ne += k;
	}
	qsort(c->ftimes, c->nftimes, sizeof(*c->ftimes), cmp_u64);
	rc = chg_index(c, e, ne);
out:
	free(e);
	free(a);
	free(f);
	return rc;
}

static void chg_free(struct rr_chg *c)
{
	free(c->bound);
	free(c->first);
	free(c->times);
	free(c->ftimes);
	memset(c, 0, sizeof(*c));
}

/* a time in (t0, t1] among sorted t[0, n) */
static bool any_between(const uint64_t *t, size_t n, uint64_t t0, uint64_t t1)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid] <= t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && t[lo] <= t1;
}

static bool word_changed(const struct rr_chg *c, uint64_t w, uint64_t t0, uint64_t t1)
{
	if (w < c->lo || w >= c->hi)
		return false;
	size_t k = seg_of(c, w);
	if (k + 1 >= c->nbound)
		return false;
	return any_between(c->times + c->first[k], c->first[k + 1] - c->first[k], t0, t1);
}

void hx_rr_exact_free(struct rr *r)
{
	for (size_t i = 0; r->chg && i < RR_CHG_PROCS; i++)
		chg_free(&r->chg[i]);
	free(r->chg);
	r->chg = NULL;
}

/* pid's changes, indexed once (a few processes kept) */
static const struct rr_chg *chg_of(struct rr *r, uint32_t pid)
{
	if (!r->chg && !(r->chg = calloc(RR_CHG_PROCS, sizeof(*r->chg))))
		return NULL;
	for (size_t i = 0; i < RR_CHG_PROCS; i++)
		if (r->chg[i].bound && r->chg[i].pid == pid)
			return &r->chg[i];
	struct rr_chg *c = &r->chg[r->chg_next++ % RR_CHG_PROCS];
	chg_free(c);
	if (chg_build(r, pid, c) || !c->bound) {
		chg_free(c);
		return NULL;
	}
	return c;
}

bool hx_rr_same_over(struct rr *r, uint32_t pid, uint64_t t0, uint64_t t1, const struct uw_sample *s)
{
	if (t0 == t1)
		return true;
	if (t0 > t1) {
		uint64_t x = t0;
		t0 = t1;
		t1 = x;
	}
	const struct rr_chg *c = chg_of(r, pid);
	if (!c)
		return false;        /* out of memory: a view at the sample's time */
	if (any_between(c->ftimes, c->nftimes, t0, t1))
		return false;
	for (int i = 0; i < UW_PERF_REGS && i < 64; i++)
		if ((s->mask >> i & 1) && word_changed(c, s->regs[i], t0, t1))
			return false;
	for (uint32_t i = 0; i < s->ncallchain; i++)
		if (word_changed(c, s->callchain[i], t0, t1))
			return false;
	for (uint64_t o = 0; s->stack && o + 8 <= s->stack_size; o += 8) {
		uint64_t w;
		memcpy(&w, s->stack + o, 8);
		if (word_changed(c, w, t0, t1))
			return false;
	}
	return true;
}
