/* perf's map tree over time (maptree.h). */
#include "unwinders/model/maptree.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MT_FORK_DEPTH 64      /* fork chains followed at most this deep (bounded on bad input) */

void mt_init(struct mt_tree *t)
{
	memset(t, 0, sizeof(*t));
	t->sorted = true;
}

void mt_free(struct mt_tree *t)
{
	free(t->ev);
	memset(t, 0, sizeof(*t));
}

static int push(struct mt_tree *t, const struct mt_event *e)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct mt_event *p = realloc(t->ev, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->ev = p;
		t->cap = cap;
	}
	if (t->n && t->ev[t->n - 1].time > e->time)
		t->sorted = false;
	t->gen++;
	t->ev[t->n] = *e;
	t->ev[t->n].seq = t->n;
	t->ev[t->n].map.seq = t->n;
	t->n++;
	return 0;
}

int mt_add_mmap(struct mt_tree *t, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		uint32_t prot, const char *path, uint64_t time)
{
	if (!len || start > UINT64_MAX - len)
		return -EINVAL;
	struct mt_event e = { .kind = MT_MMAP, .pid = pid, .time = time,
			      .map = { .start = start, .end = start + len, .pgoff = pgoff,
				       .prot = prot, .path = path, .time = time } };
	return push(t, &e);
}

int mt_add_fork(struct mt_tree *t, uint32_t pid, uint32_t ppid, uint64_t time)
{
	if (pid == ppid)
		return 0;
	struct mt_event e = { .kind = MT_FORK, .pid = pid, .ppid = ppid, .time = time };
	return push(t, &e);
}

/* perf orders events by time; equal times keep file order */
static int cmp_ev(const void *a, const void *b)
{
	const struct mt_event *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int reserve(struct mt_snap *s, size_t more)
{
	if (s->n + more <= s->cap)
		return 0;
	size_t cap = s->cap ? s->cap : 16;
	while (cap < s->n + more)
		cap *= 2;
	struct mt_map *p = realloc(s->maps, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	s->maps = p;
	s->cap = cap;
	return 0;
}

size_t mt_cut(uint64_t start, uint64_t end, uint64_t ns, uint64_t ne, struct mt_piece keep[2])
{
	size_t n = 0;
	if (end <= ns || ne <= start) {
		keep[n++] = (struct mt_piece){ start, end, 0 };
		return n;
	}
	if (start < ns)
		keep[n++] = (struct mt_piece){ start, ns, 0 };
	if (ne < end)
		keep[n++] = (struct mt_piece){ ne, end, ne - start };
	return n;
}

/* First map whose end lies above addr (the maps are sorted and disjoint, so
 * their ends are sorted too). */
static size_t first_ending_after(const struct mt_snap *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->maps[mid].end > addr)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

int mt_insert(struct mt_snap *s, const struct mt_map *m)
{
	if (reserve(s, 2))
		return -ENOMEM;
	size_t i = first_ending_after(s, m->start), j = i;
	while (j < s->n && s->maps[j].start < m->end)
		j++;
	/* maps [i, j) overlap m: what stays of them (at most a head of the
	 * first and a tail of the last), then m, in address order */
	struct mt_map repl[3], after = { 0 };
	size_t nr = 0;
	bool have_after = false;
	for (size_t k = i; k < j; k++) {
		struct mt_piece p[2];
		size_t np = mt_cut(s->maps[k].start, s->maps[k].end, m->start, m->end, p);
		for (size_t q = 0; q < np; q++) {
			struct mt_map piece = s->maps[k];
			piece.start = p[q].start;
			piece.end = p[q].end;
			piece.pgoff += p[q].pgoff_add;
			if (piece.end <= m->start)
				repl[nr++] = piece;
			else {
				after = piece;
				have_after = true;
			}
		}
	}
	repl[nr++] = *m;
	if (have_after)
		repl[nr++] = after;
	/* j - i + 2 >= nr and cap >= n + 2: room for the pieces */
	size_t tail = s->n - j;
	memmove(&s->maps[i + nr], &s->maps[j], tail * sizeof(*s->maps));
	memcpy(&s->maps[i], repl, nr * sizeof(*repl));
	s->n = i + nr + tail;
	return 0;
}

static int cmp_start(const void *a, const void *b)
{
	const struct mt_map *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* The tree of pid after the events [0, upto) of the sorted list. */
static int build(const struct mt_tree *t, uint32_t pid, size_t upto, struct mt_snap *out, int depth)
{
	for (size_t i = 0; i < upto; i++) {
		const struct mt_event *e = &t->ev[i];
		if (e->pid != pid)
			continue;
		int rc = 0;
		if (e->kind == MT_MMAP) {
			rc = mt_insert(out, &e->map);
		} else if (depth < MT_FORK_DEPTH && e->ppid != pid) {
			/* the child starts from its parent's tree at the fork */
			out->n = 0;
			rc = build(t, e->ppid, i, out, depth + 1);
		}
		if (rc)
			return rc;
		out->applied++;
	}
	return 0;
}

size_t mt_count_upto(struct mt_tree *t, uint64_t at)
{
	if (!t->sorted) {
		qsort(t->ev, t->n, sizeof(*t->ev), cmp_ev);
		t->sorted = true;
	}
	size_t lo = 0, hi = t->n;   /* first event after `at` */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->ev[mid].time <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The events [from, upto) of pid applied to a snapshot of its tree at
 * from: 0, 1 when one of them is a fork of pid (the tree starts anew),
 * -ENOMEM. */
static int advance(const struct mt_tree *t, uint32_t pid, size_t from, size_t upto, struct mt_snap *out)
{
	for (size_t i = from; i < upto; i++) {
		const struct mt_event *e = &t->ev[i];
		if (e->pid != pid)
			continue;
		if (e->kind != MT_MMAP) {
			if (e->ppid != pid)
				return 1;    /* a new process: its parent's tree, rebuilt */
			out->applied++;      /* a new thread changes nothing */
			continue;
		}
		if (mt_insert(out, &e->map))
			return -ENOMEM;
		out->applied++;
	}
	return 0;
}

int mt_at(struct mt_tree *t, uint32_t pid, uint64_t at, struct mt_snap *out)
{
	size_t lo = mt_count_upto(t, at);
	int rc = 1;   /* no snapshot to advance: build one */
	if (out->valid && out->pid == pid && out->gen == t->gen && out->upto <= lo) {
		rc = advance(t, pid, out->upto, lo, out);
		if (rc < 0)
			return rc;
	}
	if (rc) {
		out->n = 0;
		out->applied = 0;
		rc = build(t, pid, lo, out, 0);
	}
	out->valid = !rc;
	out->pid = pid;
	out->upto = lo;
	out->gen = t->gen;
	if (!rc && out->n)
		qsort(out->maps, out->n, sizeof(*out->maps), cmp_start);
	return rc;
}

const struct mt_map *mt_find(const struct mt_snap *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < s->maps[lo - 1].end ? &s->maps[lo - 1] : NULL;
}

void mt_snap_free(struct mt_snap *s)
{
	free(s->maps);
	memset(s, 0, sizeof(*s));
}
