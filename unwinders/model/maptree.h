/* perf's map tree over time (the profiler side of a perf.data): every
 * MMAP/MMAP2 of a process in the order perf processes them (by time, ties in
 * file order), FORK copying the parent's tree.  A later mapping cuts an
 * earlier one it overlaps (perf's maps__fixup_overlappings: the part before
 * stays, the part after stays with its pgoff moved on); munmap is never
 * recorded, so a stale map stays until something is mapped over it.  A
 * sample is resolved against the tree as it stood at the sample's time. */
#ifndef UW_MAPTREE_H
#define UW_MAPTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_map {
	uint64_t start, end, pgoff;
	uint32_t prot;               /* PROT_* bits (MMAP: exec unless misc says data) */
	const char *path;            /* borrowed from the caller (the perf.data mapping) */
	uint64_t time, seq;          /* when perf saw it; its order among the events */
};

enum mt_kind { MT_MMAP, MT_FORK };

struct mt_event {
	enum mt_kind kind;
	uint32_t pid, ppid;          /* FORK: pid is the child, ppid the parent */
	uint64_t time, seq;
	struct mt_map map;           /* MT_MMAP */
};

struct mt_tree {
	struct mt_event *ev;
	size_t n, cap;
	bool sorted;
	uint64_t gen;                /* bumped by every event added (snapshots built before are rebuilt) */
};

/* A snapshot: non-overlapping, sorted by start. */
struct mt_snap {
	struct mt_map *maps;
	size_t n, cap;
	size_t applied;              /* events that built it: equal counts, equal trees */
	/* what mt_at built it from, so a later time only applies the events
	 * in between (a replay walks forward in time) */
	bool valid;
	uint32_t pid;
	size_t upto;
	uint64_t gen;
};

void mt_init(struct mt_tree *t);
void mt_free(struct mt_tree *t);
/* 0, or -ENOMEM.  len 0 and wrapping maps are refused with -EINVAL. */
int mt_add_mmap(struct mt_tree *t, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		uint32_t prot, const char *path, uint64_t time);
/* A new process (pid != ppid) starts with a copy of its parent's tree; a
 * new thread (pid == ppid) changes nothing. */
int mt_add_fork(struct mt_tree *t, uint32_t pid, uint32_t ppid, uint64_t time);
/* The tree of pid as it stood at time (every event with time <= at). 0 or -ENOMEM. */
int mt_at(struct mt_tree *t, uint32_t pid, uint64_t at, struct mt_snap *out);
/* How many events (of every pid) happened at or before at: the tree of
 * any pid at two times with the same count is the same tree. */
size_t mt_count_upto(struct mt_tree *t, uint64_t at);
/* The map holding addr in a snapshot, or NULL. */
const struct mt_map *mt_find(const struct mt_snap *s, uint64_t addr);
void mt_snap_free(struct mt_snap *s);

#endif
