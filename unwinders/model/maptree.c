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

/* Insert m, cutting what it overlaps: the head of an older map before m
 * stays, its tail after m stays with pgoff advanced by what was cut. */
static int insert(struct mt_snap *s, const struct mt_map *m)
{
	if (reserve(s, 2))
		return -ENOMEM;
	size_t w = 0, n = s->n;
	struct mt_map tail = { 0 };
	bool have_tail = false;
	for (size_t i = 0; i < n; i++) {
		struct mt_map o = s->maps[i];
		if (o.end <= m->start || m->end <= o.start) {
			s->maps[w++] = o;
			continue;
		}
		if (o.end > m->end) {   /* at most one map spans past m's end */
			tail = o;
			tail.pgoff += m->end - o.start;
			tail.start = m->end;
			have_tail = true;
		}
		if (o.start < m->start) {
			o.end = m->start;
			s->maps[w++] = o;
		}
	}
	s->n = w;
	/* w <= n and cap >= n + 2: room for m and the tail */
	s->maps[s->n++] = *m;
	if (have_tail)
		s->maps[s->n++] = tail;
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
			rc = insert(out, &e->map);
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
 * from: -1 when one of them is a fork of pid (the tree starts anew). */
static int advance(const struct mt_tree *t, uint32_t pid, size_t from, size_t upto, struct mt_snap *out)
{
	for (size_t i = from; i < upto; i++) {
		const struct mt_event *e = &t->ev[i];
		if (e->pid != pid)
			continue;
		if (e->kind != MT_MMAP) {
			if (e->ppid != pid)
				return -1;   /* a new process: its parent's tree, rebuilt */
			out->applied++;      /* a new thread changes nothing */
			continue;
		}
		if (insert(out, &e->map))
			return -ENOMEM;
		out->applied++;
	}
	return 0;
}

int mt_at(struct mt_tree *t, uint32_t pid, uint64_t at, struct mt_snap *out)
{
	size_t lo = mt_count_upto(t, at);
	int rc = -1;
	if (out->valid && out->pid == pid && out->gen == t->gen && out->upto <= lo) {
		rc = advance(t, pid, out->upto, lo, out);
		if (rc == -ENOMEM)
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
