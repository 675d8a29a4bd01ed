/* perf's view of a JIT_CODE_MOVE (part of suite perfview, tests/test_perfview.c):
 * jit_repipe_code_move writes no file and maps the moved load's jitted .so
 * again at the new address, pgoff the text offset, its length from the
 * UNWINDING_INFO pending at the move (docs/perf-remembers.md "A move"; real
 * perf's chains over such a map: cases/<arch>/gen-move.case's perf column). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trampolines/tramp.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfview.h"
#include "tests/perfview.h"

#define X 0x7f1234560000ull
#define Y (X + 0x1000)

static struct ju_err err;

/* The dump: UNWINDING_INFO + CODE_LOAD "tramp" at X, then (pending) an
 * UNWINDING_INFO with eh_frame_hdr_size 0, which perf keeps after a load,
 * then CODE_MOVE of code_index index to Y; read back by the strict reader. */
struct mv {
	char dir[64];
	struct tr_func f;
	struct tr_unwind u;
	struct jd_file jd;
};

static void mv_make(struct mv *m, bool pending, uint64_t index)
{
	static const char *const lines[] = { "alloc 8", "call_target", "free 8", "ret" };
	memset(m, 0, sizeof(*m));
	snprintf(m->dir, sizeof(m->dir), "/tmp/jupvm-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(m->dir));
	struct tr_op ops[4];
	memset(ops, 0, sizeof(ops));
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(tr_op_parse(lines[i], &ops[i], &err), 0);
	ck_assert_msg(tr_emit(tr_arch_host(), ops, 4, &m->f, &err) == 0, "%s", err.msg);
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	ck_assert_msg(tr_unwind_build(&m->f, &o, X, &m->u, &err) == 0, "%s", err.msg);
	struct jdw w;
	ck_assert_int_eq(jdw_open(&w, m->dir, tr_arch_host()->facts->elf_mach), 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s", w.path);
	ck_assert_int_eq(jdw_unwinding_info(&w, m->u.data, m->u.size, m->u.hdr_size, m->u.mapped_size), 0);
	ck_assert_int_eq(jdw_code_load(&w, "tramp", X, m->f.code, m->f.code_size, NULL), 0);
	if (pending)   /* .eh_frame alone (no header): still pending after any load */
		ck_assert_int_eq(jdw_unwinding_info(&w, m->u.data, m->u.size - m->u.hdr_size, 0, 0x200), 0);
	ck_assert_int_eq(jdw_code_move(&w, X, Y, m->f.code_size, index), 0);
	ck_assert_int_eq(jdw_close(&w), 0);
	struct ju_err je;
	ck_assert_msg(jd_open(&m->jd, path, &je) == 0, "0x%llx: %s", (unsigned long long)je.offset, je.msg);
	ck_assert_uint_eq(m->jd.nloads, 1);
	ck_assert_uint_eq(m->jd.nmoves, 1);
}

static void mv_free(struct mv *m)
{
	jd_close(&m->jd);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", m->dir);
	ck_assert_int_eq(system(cmd), 0);
}

static uint64_t al8(uint64_t v)
{
	return (v + 7) & ~7ull;
}

/* Nothing pending: the moved map is the code alone, its .eh_frame (after
 * the code in the file) outside every map; the old map stays as it was. */
START_TEST(move_maps_the_file_again)
{
	struct mv m;
	mv_make(&m, false, 0);
	const struct jd_move *mo = &m.jd.moves[0];
	ck_assert_uint_eq(mo->mapped_size, 0);
	ck_assert_uint_eq(mo->nloads_before, 1);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &m.jd, m.dir, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.ndsos, 1);     /* no file for the move */
	ck_assert_uint_eq(pv.nmaps, 2);
	ck_assert_uint_eq(pv.maps[0].start, X);
	ck_assert_uint_eq(pv.maps[0].end, X + al8(m.f.code_size) + m.u.mapped_size);
	ck_assert_uint_eq(pv.maps[1].start, Y);
	ck_assert_uint_eq(pv.maps[1].end, Y + m.f.code_size);
	ck_assert_uint_eq(pv.maps[1].pgoff, pv_text_addr(PV_CURRENT));
	ck_assert_ptr_eq(pv.maps[0].dso, pv.maps[1].dso);
	ck_assert_str_eq(pv_symbolize(&pv, Y + 1), "tramp");
	uint8_t b[2];
	ck_assert(pv_read(&pv, Y, b, 2) && !memcmp(b, m.f.code, 2));
	ck_assert_ptr_null(pv_find(&pv, Y + al8(m.f.code_size)));   /* where its .eh_frame would be */
	pv_fini(&pv);
	/* 5.x-0x40: the text offset of that generation */
	ck_assert_msg(pv_build(&pv, PV_5X_0X40, NULL, 0, &m.jd, m.dir, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.maps[1].pgoff, 0x40);
	pv_fini(&pv);
	mv_free(&m);
}
END_TEST

/* An UNWINDING_INFO pending at the move sizes the moved map: ALIGN_8(code)
 * + its mapped_size (jit_repipe_code_move reads jd->unwinding_mapped_size). */
START_TEST(move_sized_by_pending)
{
	struct mv m;
	mv_make(&m, true, 0);
	ck_assert_uint_eq(m.jd.moves[0].mapped_size, 0x200);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &m.jd, m.dir, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.nmaps, 2);
	ck_assert_uint_eq(pv.maps[1].start, Y);
	ck_assert_uint_eq(pv.maps[1].end, Y + al8(m.f.code_size) + 0x200);
	ck_assert_ptr_eq(pv_find(&pv, Y + al8(m.f.code_size)), &pv.maps[1]);
	pv_fini(&pv);
	mv_free(&m);
}
END_TEST

/* A move of a code_index no load wrote: perf maps a file it cannot open. */
START_TEST(move_of_unknown_index)
{
	struct mv m;
	mv_make(&m, false, 7);
	struct pv_view pv;
	ck_assert_msg(pv_build(&pv, PV_CURRENT, NULL, 0, &m.jd, m.dir, &err) == 0, "%s", err.msg);
	ck_assert_uint_eq(pv.nmaps, 2);
	ck_assert_uint_eq(pv.maps[1].start, Y);
	ck_assert_ptr_null(pv.maps[1].dso);
	ck_assert_ptr_null(pv_symbolize(&pv, Y));
	pv_fini(&pv);
	mv_free(&m);
}
END_TEST

void perfview_add_move(TCase *tc)
{
	tcase_add_test(tc, move_maps_the_file_again);
	tcase_add_test(tc, move_sized_by_pending);
	tcase_add_test(tc, move_of_unknown_index);
}
