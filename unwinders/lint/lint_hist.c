/* lint's bounded histories: a treap of disjoint intervals in a fixed pool that
 * grows by doubling up to its capacity and then forgets its oldest entries. */
#include "unwinders/lint/lint_int.h"

#include <stdlib.h>
#include <string.h>

int lint_it_init(struct itree *t, uint32_t cap)
{
	memset(t, 0, sizeof(*t));
	t->alloc = cap < 64 ? cap : 64;
	t->n = calloc((size_t)t->alloc + 1, sizeof(*t->n));
	if (!t->n)
		return -ENOMEM;
	t->cap = cap;
	t->rng = 0x9e3779b9u;
	return 0;
}

/* room for node used + 1; false when the pool cannot grow (full or no memory) */
static bool lint_it_grow(struct itree *t)
{
	if (t->used < t->alloc)
		return true;
	if (t->alloc >= t->cap)
		return false;
	uint32_t na = t->alloc * 2 < t->cap ? t->alloc * 2 : t->cap;
	struct inode *nn = realloc(t->n, ((size_t)na + 1) * sizeof(*nn));
	if (!nn)
		return false;
	t->n = nn;
	t->alloc = na;
	return true;
}

void lint_it_fini(struct itree *t)
{
	free(t->n);
	t->n = NULL;
}

static uint32_t lint_it_rand(struct itree *t)
{
	t->rng ^= t->rng << 13;
	t->rng ^= t->rng >> 17;
	t->rng ^= t->rng << 5;
	return t->rng;
}

/* split by key: l gets starts < key, r the rest; depth is the treap's (O(log n)) */
static void lint_it_split(struct itree *t, uint32_t x, uint64_t key, uint32_t *l, uint32_t *r)
{
	if (!x) {
		*l = *r = 0;
		return;
	}
	if (t->n[x].start < key) {
		lint_it_split(t, t->n[x].right, key, &t->n[x].right, r);
		*l = x;
	} else {
		lint_it_split(t, t->n[x].left, key, l, &t->n[x].left);
		*r = x;
	}
}

static uint32_t lint_it_merge(struct itree *t, uint32_t a, uint32_t b)
{
	if (!a || !b)
		return a ? a : b;
	if (t->n[a].prio > t->n[b].prio) {
		t->n[a].right = lint_it_merge(t, t->n[a].right, b);
		return a;
	}
	t->n[b].left = lint_it_merge(t, a, t->n[b].left);
	return b;
}

static void lint_it_unlink_order(struct itree *t, uint32_t x)
{
	struct inode *n = &t->n[x];
	if (n->older)
		t->n[n->older].newer = n->newer;
	else
		t->oldest = n->newer;
	if (n->newer)
		t->n[n->newer].older = n->older;
	else
		t->newest = n->older;
}

/* Starts are unique (the intervals are disjoint and not empty): x is found
 * by its start, and its children merged in its place. */
void lint_it_delete(struct itree *t, uint32_t x)
{
	uint64_t key = t->n[x].start;
	uint32_t *link = &t->root;
	while (*link && *link != x)
		link = key < t->n[*link].start ? &t->n[*link].left : &t->n[*link].right;
	if (*link)
		*link = lint_it_merge(t, t->n[x].left, t->n[x].right);
	lint_it_unlink_order(t, x);
	t->n[x].left = t->free_head;   /* free list through .left */
	t->free_head = x;
	t->used--;
}

/* Insert a copy of v (its links ignored); the oldest entry goes when full. */
void lint_it_insert(struct itree *t, const struct inode *v)
{
	uint32_t x;
	if (t->free_head) {
		x = t->free_head;
		t->free_head = t->n[x].left;
	} else if (lint_it_grow(t)) {
		x = t->used + 1;
	} else {
		t->forgot = true;
		lint_it_delete(t, t->oldest);
		x = t->free_head;
		t->free_head = t->n[x].left;
	}
	t->used++;
	t->n[x] = *v;
	t->n[x].prio = lint_it_rand(t);
	t->n[x].left = t->n[x].right = 0;
	t->n[x].older = t->newest;
	t->n[x].newer = 0;
	if (t->newest)
		t->n[t->newest].newer = x;
	else
		t->oldest = x;
	t->newest = x;
	/* down to where x's priority puts it; only the subtree there is split */
	uint32_t *link = &t->root;
	while (*link && t->n[*link].prio > t->n[x].prio)
		link = v->start < t->n[*link].start ? &t->n[*link].left : &t->n[*link].right;
	lint_it_split(t, *link, v->start, &t->n[x].left, &t->n[x].right);
	*link = x;
}

/* the node with the largest start <= key, or 0 */
uint32_t lint_it_le(const struct itree *t, uint64_t key)
{
	uint32_t x = t->root, best = 0;
	while (x) {
		if (t->n[x].start <= key) {
			best = x;
			x = t->n[x].right;
		} else {
			x = t->n[x].left;
		}
	}
	return best;
}

/* the node with the smallest start > key, or 0 */
uint32_t lint_it_gt(const struct itree *t, uint64_t key)
{
	uint32_t x = t->root, best = 0;
	while (x) {
		if (t->n[x].start > key) {
			best = x;
			x = t->n[x].left;
		} else {
			x = t->n[x].right;
		}
	}
	return best;
}

/* the first node overlapping [s, e), or 0 */
uint32_t lint_it_overlap(const struct itree *t, uint64_t s, uint64_t e)
{
	uint32_t x = lint_it_le(t, s);
	if (x && t->n[x].end > s)
		return x;
	x = lint_it_gt(t, s);
	return x && t->n[x].start < e ? x : 0;
}
