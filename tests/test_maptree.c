/* perf's map tree over time against an independent model: for every page,
 * the last mapping (by time, then file order) covering it owns it, at
 * pgoff + its distance from that mapping's start. */
#include <check.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/model/maptree.h"

#define PG 0x1000u

START_TEST(cut_head_tail_middle)
{
	struct mt_tree t;
	struct mt_snap s = { 0 };
	mt_init(&t);
	ck_assert_int_eq(mt_add_mmap(&t, 7, 0x10000, 0x10000, 0x100000, 5, "a", 1), 0);
	ck_assert_int_eq(mt_add_mmap(&t, 7, 0x14000, 0x2000, 0, 5, "b", 2), 0);   /* middle */
	ck_assert_int_eq(mt_at(&t, 7, 2, &s), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(s.maps[0].start, 0x10000);
	ck_assert_uint_eq(s.maps[0].end, 0x14000);
	ck_assert_str_eq(s.maps[1].path, "b");
	ck_assert_uint_eq(s.maps[2].start, 0x16000);
	ck_assert_uint_eq(s.maps[2].end, 0x20000);
	ck_assert_uint_eq(s.maps[2].pgoff, 0x106000);   /* the tail keeps its file offset */
	/* before b was mapped, a stood whole: the sample at time 1 sees a */
	ck_assert_int_eq(mt_at(&t, 7, 1, &s), 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(mt_find(&s, 0x15000)->path, "a");
	/* before anything: nothing; another pid: nothing */
	ck_assert_int_eq(mt_at(&t, 7, 0, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(mt_at(&t, 8, 9, &s), 0);
	ck_assert_ptr_null(mt_find(&s, 0x15000));
	mt_snap_free(&s);
	mt_free(&t);
}
END_TEST

/* munmap is never recorded: a stale map outlives the code it described
 * until a later mapping covers the address */
START_TEST(stale_until_covered)
{
	struct mt_tree t;
	struct mt_snap s = { 0 };
	mt_init(&t);
	mt_add_mmap(&t, 1, 0x40000, 0x1000, 0, 5, "jitted-1-1.so", 10);
	mt_add_mmap(&t, 1, 0x40800, 0x1000, 0, 5, "jitted-1-2.so", 30);
	ck_assert_int_eq(mt_at(&t, 1, 20, &s), 0);
	ck_assert_str_eq(mt_find(&s, 0x40900)->path, "jitted-1-1.so");
	ck_assert_int_eq(mt_at(&t, 1, 30, &s), 0);
	ck_assert_str_eq(mt_find(&s, 0x40900)->path, "jitted-1-2.so");
	ck_assert_str_eq(mt_find(&s, 0x40400)->path, "jitted-1-1.so");   /* its head stays */
	ck_assert_uint_eq(mt_find(&s, 0x40400)->end, 0x40800);
	mt_snap_free(&s);
	mt_free(&t);
}
END_TEST

/* events arrive out of time order (perf sorts them by time, ties in file order) */
START_TEST(time_order_and_fork)
{
	struct mt_tree t;
	struct mt_snap s = { 0 };
	mt_init(&t);
	mt_add_mmap(&t, 1, 0x1000, PG, 0, 5, "late", 50);
	mt_add_mmap(&t, 1, 0x1000, PG, 0, 5, "early", 5);
	mt_add_mmap(&t, 1, 0x1000, PG, 0, 5, "tie-first", 60);
	mt_add_mmap(&t, 1, 0x1000, PG, 0, 5, "tie-second", 60);
	ck_assert_int_eq(mt_at(&t, 1, 49, &s), 0);
	ck_assert_str_eq(mt_find(&s, 0x1000)->path, "early");
	ck_assert_int_eq(mt_at(&t, 1, 50, &s), 0);
	ck_assert_str_eq(mt_find(&s, 0x1000)->path, "late");
	ck_assert_int_eq(mt_at(&t, 1, 60, &s), 0);
	ck_assert_str_eq(mt_find(&s, 0x1000)->path, "tie-second");
	/* a child forked at 55 inherits "late" and then maps its own */
	ck_assert_int_eq(mt_add_fork(&t, 2, 1, 55), 0);
	mt_add_mmap(&t, 2, 0x2000, PG, 0, 5, "child", 56);
	ck_assert_int_eq(mt_at(&t, 2, 100, &s), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(mt_find(&s, 0x1000)->path, "late");
	ck_assert_str_eq(mt_find(&s, 0x2000)->path, "child");
	/* the parent never sees the child's map; a thread (pid == ppid) is no fork */
	ck_assert_int_eq(mt_at(&t, 1, 100, &s), 0);
	ck_assert_ptr_null(mt_find(&s, 0x2000));
	ck_assert_int_eq(mt_add_fork(&t, 1, 1, 70), 0);
	ck_assert_int_eq(mt_at(&t, 1, 100, &s), 0);
	ck_assert_uint_eq(s.n, 1);
	/* empty and wrapping maps are refused */
	ck_assert_int_eq(mt_add_mmap(&t, 1, 0x1000, 0, 0, 5, "x", 1), -22);
	ck_assert_int_eq(mt_add_mmap(&t, 1, UINT64_MAX - 10, PG, 0, 5, "x", 1), -22);
	mt_snap_free(&s);
	mt_free(&t);
}
END_TEST

/* random maps over 64 pages against the page model, at every time */
START_TEST(random_against_pages)
{
	enum { NPG = 64, NMAP = 40 };
	static const char *names[NMAP];
	static char buf[NMAP][8];
	unsigned seed = 12345u + (unsigned)_i;
	struct { uint64_t s, e, pg, t; } m[NMAP];
	struct mt_tree t;
	struct mt_snap s = { 0 };
	mt_init(&t);
	for (int i = 0; i < NMAP; i++) {
		uint64_t a = (uint64_t)(rand_r(&seed) % NPG), l = 1 + (uint64_t)(rand_r(&seed) % 12);
		if (a + l > NPG)
			l = NPG - a;
		m[i].s = a * PG;
		m[i].e = (a + l) * PG;
		m[i].pg = (uint64_t)(rand_r(&seed) % 100) * PG;
		m[i].t = (uint64_t)(rand_r(&seed) % 20);
		snprintf(buf[i], sizeof(buf[i]), "m%d", i);
		names[i] = buf[i];
		ck_assert_int_eq(mt_add_mmap(&t, 3, m[i].s, m[i].e - m[i].s, m[i].pg, 5, names[i], m[i].t), 0);
	}
	for (uint64_t at = 0; at < 21; at++) {
		ck_assert_int_eq(mt_at(&t, 3, at, &s), 0);
		for (size_t k = 1; k < s.n; k++)
			ck_assert_uint_le(s.maps[k - 1].end, s.maps[k].start);
		for (uint64_t p = 0; p < NPG; p++) {
			int own = -1;   /* last by (time, index) with time <= at covering p */
			for (int i = 0; i < NMAP; i++)
				if (m[i].t <= at && m[i].s <= p * PG && p * PG < m[i].e &&
				    (own < 0 || m[i].t >= m[own].t))
					own = i;
			const struct mt_map *f = mt_find(&s, p * PG + 8);
			if (own < 0) {
				ck_assert_ptr_null(f);
				continue;
			}
			ck_assert_ptr_nonnull(f);
			ck_assert_str_eq(f->path, names[own]);
			ck_assert_uint_eq(f->pgoff + (p * PG - f->start), m[own].pg + (p * PG - m[own].s));
		}
	}
	mt_snap_free(&s);
	mt_free(&t);
}
END_TEST

Suite *suite_maptree(void);
Suite *suite_maptree(void)
{
	Suite *s = suite_create("maptree");
	TCase *tc = tcase_create("tree");
	tcase_add_test(tc, cut_head_tail_middle);
	tcase_add_test(tc, stale_until_covered);
	tcase_add_test(tc, time_order_and_fork);
	tcase_add_loop_test(tc, random_against_pages, 0, 8);
	suite_add_tcase(s, tc);
	return s;
}
