/* The real-perf columns (harness/run/perfcol.c): which perf layout a
 * jitted .so has, read from files real `perf inject -j` wrote (perf
 * 6.1.187 with the 6.8 PT_LOAD fix: the current layout, per
 * tests/golden/perfview/README) and checked against readelf's .text
 * address and PT_LOAD; files that are no jitted ELF name no profile; the
 * columns are registered under the names the manual gives them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/run/perfcol.h"
#include "harness/run/session.h"
#include "harness/case/columns.h"
#include "arches.h"
#include "unwinders/model/perfview.h"

#define GOLD "tests/golden/perfview/"

START_TEST(real_perf_files_are_current)
{
	static const char *const so[] = { "jitted-28006-0.so", "jitted-28007-0.so", "jitted-28008-2.so",
					  "jitted-28011-0.so", "jitted-28013-0.so" };
	for (size_t i = 0; i < sizeof(so) / sizeof(so[0]); i++) {
		char path[128], got[32];
		snprintf(path, sizeof(path), GOLD "%s", so[i]);
		ck_assert_msg(access(path, R_OK) == 0, "%s: run the tests from the repository root", path);
		hx_perfcol_layout_profile(path, got, sizeof(got));
		ck_assert_str_eq(got, pv_profile_name(PV_CURRENT));
		if (system("readelf --version >/dev/null 2>&1")) {
			printf("perfcol: readelf not installed, layout facts not cross-checked\n");
			continue;
		}
		/* the current layout's facts as readelf sees them: .text at 0x80,
		 * the one PT_LOAD at file offset and address 0x80 */
		char cmd[256];
		snprintf(cmd, sizeof(cmd), "readelf -lSW '%s' | grep -q '\\.text  *PROGBITS  *0000000000000080 000080' && "
			 "readelf -lW '%s' | grep -q 'LOAD  *0x000080 0x0000000000000080'", path, path);
		ck_assert_msg(system(cmd) == 0, "%s: not the current layout by readelf", path);
	}
}
END_TEST

/* negative controls: not an ELF, an ELF cut short, no such file */
START_TEST(other_files_name_none)
{
	char dir[] = "/tmp/juperfcol-XXXXXX", p[128], got[32];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/text.so", dir);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("not an ELF file at all, but long enough to be read as a header.........", f);
	fclose(f);
	hx_perfcol_layout_profile(p, got, sizeof(got));
	ck_assert_str_eq(got, "");
	snprintf(p, sizeof(p), "%s/cut.so", dir);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "head -c 40 " GOLD "jitted-28006-0.so >'%s'", p);
	ck_assert_int_eq(system(cmd), 0);
	hx_perfcol_layout_profile(p, got, sizeof(got));
	ck_assert_str_eq(got, "");
	hx_perfcol_layout_profile("/nonexistent/jitted-1-0.so", got, sizeof(got));
	ck_assert_str_eq(got, "");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* the profile comes from a jitted .so this inject wrote: one of the same pid
 * left in the dump dir (/tmp) by another run, before the inject began, is
 * not read (control: the same file touched after that moment is) */
START_TEST(stale_jitted_files_name_none)
{
	char dir[] = "/tmp/juperfcol-XXXXXX", p[128], got[32], cmd[300];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/jitted-4242-0.so", dir);
	snprintf(cmd, sizeof(cmd), "cp " GOLD "jitted-28006-0.so '%s' && touch -d '2020-01-01' '%s'", p, p);
	ck_assert_int_eq(system(cmd), 0);
	struct timespec t0;
	clock_gettime(CLOCK_REALTIME_COARSE, &t0);
	hx_perfcol_fresh_profile(dir, 4242, &t0, got, sizeof(got));
	ck_assert_str_eq(got, "");
	snprintf(cmd, sizeof(cmd), "touch '%s'", p);
	ck_assert_int_eq(system(cmd), 0);
	hx_perfcol_fresh_profile(dir, 4242, &t0, got, sizeof(got));
	ck_assert_str_eq(got, pv_profile_name(PV_CURRENT));
	/* another pid's file is never ours */
	hx_perfcol_fresh_profile(dir, 424, &t0, got, sizeof(got));
	ck_assert_str_eq(got, "");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* the columns the manual documents (docs/unwinders.md: `perf`, `perf-fp`) */
START_TEST(columns_registered)
{
	FILE *f = fopen("docs/unwinders.md", "r");
	ck_assert_ptr_nonnull(f);
	static char manual[1 << 20];
	size_t n = fread(manual, 1, sizeof(manual) - 1, f);
	manual[n] = 0;
	fclose(f);
	static const char *const cols[] = { "perf", "perf-fp" };
	for (size_t i = 0; i < 2; i++) {
		char q[32];
		snprintf(q, sizeof(q), "`%s`", cols[i]);
		ck_assert_msg(strstr(manual, q), "%s not in docs/unwinders.md", q);
		const struct uw_unwinder *u = hx_column_by_name(cols[i]);
		ck_assert_msg(u, "column %s not registered", cols[i]);
		ck_assert_str_eq(u->name, cols[i]);
	}
	ck_assert_ptr_null(hx_column_by_name("perf-dwarf"));
}
END_TEST

/* A sample goes to the perf run that holds it.  perf-fp's one run holds
 * every sample, whatever the size of the whole stack the column is handed
 * (arm64's capture starts 256 KiB below the stack's top: with the DWARF rule
 * no run held it and perf-fp said "not a sample of this case's perf.data"
 * for each of trixie-arm64's 231 replays); DWARF mode takes the smallest dump
 * size that holds the copy, and none when every size is smaller. */
START_TEST(sample_goes_to_its_run)
{
	const int fp[] = { 65528 }, dwarf[] = { 65528, 8192, 512 };
	ck_assert_int_eq(hx_perfcol_pick_run(fp, 1, true, 300u << 10), 0);
	ck_assert_int_eq(hx_perfcol_pick_run(fp, 1, true, 4096), 0);
	ck_assert_int_eq(hx_perfcol_pick_run(fp, 0, true, 4096), -1);
	ck_assert_int_eq(hx_perfcol_pick_run(dwarf, 3, false, 8192), 1);
	ck_assert_int_eq(hx_perfcol_pick_run(dwarf, 3, false, 100), 2);
	ck_assert_int_eq(hx_perfcol_pick_run(dwarf, 3, false, 9000), 0);
	ck_assert_int_eq(hx_perfcol_pick_run(dwarf, 3, false, 300u << 10), -1);
}
END_TEST


/* The case layer checks [expect] keys against its own description of the
 * columns (harness/case/columns.c): every column of the run's table is there
 * with the same name, reference, default arches, machine dependence and
 * version keying, and nothing else is; the lists the messages print agree. */
START_TEST(case_layer_knows_the_columns)
{
	size_t n;
	const struct uw_unwinder *const *cols = hx_columns(&n);
	ck_assert_uint_gt(n, 2);
	for (size_t i = 0; i < n; i++) {
		const struct uw_unwinder *c = hx_case_column(cols[i]->name);
		ck_assert_msg(c != NULL, "%s: unknown to the case layer", cols[i]->name);
		ck_assert_str_eq(c->name, cols[i]->name);
		ck_assert_int_eq(hx_case_column_index(cols[i]->name), (int)i);
		ck_assert_int_eq(c->ref, cols[i]->ref);
		ck_assert_int_eq(c->sees, cols[i]->sees);
		ck_assert_int_eq(!c->probe, !cols[i]->probe);
		ck_assert_int_eq(!c->lib_version, !cols[i]->lib_version);
		for (int a = 0; a < ARCH_COUNT; a++)
			ck_assert_int_eq(uw_unwinder_default_on(c, arch_facts[a].name),
					 uw_unwinder_default_on(cols[i], arch_facts[a].name));
	}
	ck_assert_uint_eq(hx_case_ncolumns(), n);
	ck_assert_int_eq(hx_case_column_index("perf2"), -ENOENT);
	ck_assert_ptr_null(hx_case_column("perf2"));
	ck_assert_ptr_null(hx_case_column(""));
	char want[256], got[256];
	hx_column_list(NULL, want, sizeof(want));
	hx_case_column_list(NULL, got, sizeof(got));
	ck_assert_str_eq(got, want);
	for (int a = 0; a < ARCH_COUNT; a++) {
		hx_column_list(arch_facts[a].name, want, sizeof(want));
		hx_case_column_list(arch_facts[a].name, got, sizeof(got));
		ck_assert_str_eq(got, want);
	}
}
END_TEST

Suite *suite_perfcol(void);
Suite *suite_perfcol(void)
{
	Suite *s = suite_create("perfcol");
	TCase *tc = tcase_create("perfcol");
	tcase_set_timeout(tc, 60);   /* readelf per file: seconds under qemu-user */
	tcase_add_test(tc, real_perf_files_are_current);
	tcase_add_test(tc, other_files_name_none);
	tcase_add_test(tc, stale_jitted_files_name_none);
	tcase_add_test(tc, columns_registered);
	tcase_add_test(tc, case_layer_knows_the_columns);
	tcase_add_test(tc, sample_goes_to_its_run);
	suite_add_tcase(s, tc);
	return s;
}
