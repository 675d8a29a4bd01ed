/* perf's map tree over time against an independent model: for every page,
 * the last mapping (by time, then file order) covering it owns it, at
 * pgoff + its distance from that mapping's start. */
#include <check.h>
#include <elf.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "unwinders/model/maptree.h"
#include "unwinders/view.h"
#include "unwinders/model/perfview.h"
#include "unwinders/uwarch.h"

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

/* perf's cut (maps__fixup_overlappings; real perf 6.1 checked on a JIT whose
 * later loads lie in the middle of and over the head of earlier ones: it
 * names and unwinds the earlier load's code past the later one, as a map
 * that stayed): an older map [0x1000, 0x5000) under each newer mapping keeps
 * its part before, and its part after at the same file offsets. */
START_TEST(cut_rule)
{
	static const struct {
		const char *what;
		uint64_t ns, ne;
		size_t n;
		struct mt_piece keep[2];
	} t[] = {
		{ "head", 0x0800, 0x2000, 1, { { 0x2000, 0x5000, 0x1000 } } },
		{ "head from its start", 0x1000, 0x2000, 1, { { 0x2000, 0x5000, 0x1000 } } },
		{ "tail", 0x4000, 0x6000, 1, { { 0x1000, 0x4000, 0 } } },
		{ "tail to its end", 0x3000, 0x5000, 1, { { 0x1000, 0x3000, 0 } } },
		{ "middle", 0x2000, 0x3000, 2, { { 0x1000, 0x2000, 0 }, { 0x3000, 0x5000, 0x2000 } } },
		{ "exact", 0x1000, 0x5000, 0, { { 0 } } },
		{ "containing", 0x0800, 0x6000, 0, { { 0 } } },
		{ "touching after", 0x5000, 0x6000, 1, { { 0x1000, 0x5000, 0 } } },
		{ "touching before", 0x0000, 0x1000, 1, { { 0x1000, 0x5000, 0 } } },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct mt_piece k[2];
		size_t n = mt_cut(0x1000, 0x5000, t[i].ns, t[i].ne, k);
		ck_assert_msg(n == t[i].n, "%s: %zu pieces, expected %zu", t[i].what, n, t[i].n);
		for (size_t j = 0; j < n; j++)
			ck_assert_msg(k[j].start == t[i].keep[j].start && k[j].end == t[i].keep[j].end &&
				      k[j].pgoff_add == t[i].keep[j].pgoff_add,
				      "%s: piece %zu [%#lx, %#lx) +%#lx", t[i].what, j, (unsigned long)k[j].start,
				      (unsigned long)k[j].end, (unsigned long)k[j].pgoff_add);
	}
}
END_TEST

/* The process view (uw_view_init) lays out the same cut: an older load's
 * part past a newer load stays that load's region (the oracle unwinds it
 * with that load's CFI, as perf does), a file map a load lands in keeps both
 * sides; perf's view (perfview.c) and the replay's map tree lay out the
 * same.  With view.c's former rule (an older region kept only its part
 * before the newer one, or nothing) the tails below had no region. */
START_TEST(view_cuts_as_perf)
{
	static const uint8_t code[0x200];
	struct jd_load l[] = {
		{ .code_addr = 0x10000, .code_size = 0x100, .code = code, .name = "old_middle", .code_index = 1 },
		{ .code_addr = 0x10040, .code_size = 0x20, .code = code, .name = "new_middle", .code_index = 2 },
		{ .code_addr = 0x20000, .code_size = 0x100, .code = code, .name = "old_head", .code_index = 3 },
		{ .code_addr = 0x1ff80, .code_size = 0x100, .code = code, .name = "new_head", .code_index = 4 },
		{ .code_addr = 0x30000, .code_size = 0x100, .code = code, .name = "old_exact", .code_index = 5 },
		{ .code_addr = 0x30000, .code_size = 0x100, .code = code, .name = "new_exact", .code_index = 6 },
		{ .code_addr = 0x40000, .code_size = 0x80, .code = code, .name = "old_inside", .code_index = 7 },
		{ .code_addr = 0x3ff00, .code_size = 0x200, .code = code, .name = "new_containing", .code_index = 8 },
		{ .code_addr = 0x50800, .code_size = 0x100, .code = code, .name = "in_file", .code_index = 9 },
	};
	struct jd_file jd = { .loads = l, .nloads = sizeof(l) / sizeof(l[0]) };
	struct uw_map m = { .start = 0x50000, .end = 0x52000, .pgoff = 0, .prot = "r-xp",
			    .path = (char *)"/nonexistent/jitunwind-file" };
	static const struct { uint64_t pc; const char *name; } want[] = {
		{ 0x10000, "old_middle" }, { 0x1003f, "old_middle" }, { 0x10040, "new_middle" },
		{ 0x1005f, "new_middle" }, { 0x10060, "old_middle" }, { 0x100ff, "old_middle" },
		{ 0x1ff80, "new_head" }, { 0x2007f, "new_head" }, { 0x20080, "old_head" },
		{ 0x200ff, "old_head" }, { 0x30000, "new_exact" }, { 0x300ff, "new_exact" },
		{ 0x3ff00, "new_containing" }, { 0x40000, "new_containing" }, { 0x400ff, "new_containing" },
		{ 0x507ff, "/nonexistent/jitunwind-file" }, { 0x50800, "in_file" },
		{ 0x50900, "/nonexistent/jitunwind-file" }, { 0x51fff, "/nonexistent/jitunwind-file" },
	};
	static const uint64_t none[] = { 0xffff, 0x10100, 0x20100, 0x30100, 0x40100, 0x52000 };
	struct uw_view v;
	struct ju_err err;
	ck_assert_int_eq(uw_view_init(&v, uw_arch_by_mach(EM_X86_64), &m, 1, &jd, &err), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct uw_region *r = uw_view_find(&v, want[i].pc);
		ck_assert_msg(r && !strcmp(r->name, want[i].name), "pc %#lx: %s, expected %s",
			      (unsigned long)want[i].pc, r ? r->name : "no region", want[i].name);
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		ck_assert_ptr_null(uw_view_find(&v, none[i]));
	/* regions are disjoint and sorted: the pieces and nothing else */
	ck_assert_uint_eq(v.nregions, 10);
	for (size_t i = 1; i < v.nregions; i++)
		ck_assert_uint_le(v.regions[i - 1].end, v.regions[i].start);
	uw_view_fini(&v);

	/* perf's view for the unwinders (pv_build, its jitted .so files) and the
	 * replay's map tree (the same maps as MMAP2 events, then the loads) agree
	 * with it, a tail at the file offset of the same address */
	char dir[] = "/tmp/jitunwind-mapcut-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, &m, 1, &jd, dir, &err) == 0, "%s", err.msg);
	struct mt_tree t;
	struct mt_snap s = { 0 };
	mt_init(&t);
	ck_assert_int_eq(mt_add_mmap(&t, 1, m.start, m.end - m.start, m.pgoff, 5, m.path, 0), 0);
	for (size_t i = 0; i < jd.nloads; i++)
		ck_assert_int_eq(mt_add_mmap(&t, 1, l[i].code_addr, l[i].code_size, 0x80, 5, l[i].name, 1 + i), 0);
	ck_assert_int_eq(mt_at(&t, 1, jd.nloads, &s), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct pv_map *pm = pv_find(&pv, want[i].pc);
		const char *pn = pm && pm->dso ? pm->dso->jitted ? pm->dso->load->name : pm->dso->path : "none";
		const struct mt_map *mm = mt_find(&s, want[i].pc);
		ck_assert_msg(!strcmp(pn, want[i].name), "pv: pc %#lx: %s, expected %s",
			      (unsigned long)want[i].pc, pn, want[i].name);
		ck_assert_msg(mm && !strcmp(mm->path, want[i].name), "maptree: pc %#lx: %s, expected %s",
			      (unsigned long)want[i].pc, mm ? mm->path : "none", want[i].name);
		ck_assert_uint_eq(pm->pgoff - pm->start, mm->pgoff - mm->start);
	}
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		ck_assert_ptr_null(pv_find(&pv, none[i]));
		ck_assert_ptr_null(mt_find(&s, none[i]));
	}
	ck_assert_uint_eq(pv.nmaps, 10);
	ck_assert_uint_eq(s.n, 10);
	mt_snap_free(&s);
	mt_free(&t);
	pv_fini(&pv);
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
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
	tcase_add_test(tc, cut_rule);
	tcase_add_test(tc, view_cuts_as_perf);
	tcase_add_test(tc, cut_head_tail_middle);
	tcase_add_test(tc, stale_until_covered);
	tcase_add_test(tc, time_order_and_fork);
	tcase_add_loop_test(tc, random_against_pages, 0, 8);
	suite_add_tcase(s, tc);
	return s;
}
