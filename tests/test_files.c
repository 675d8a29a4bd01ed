/* The file cache (unwinders/model/files.c): a file is mapped once however many
 * readers ask, a rewritten file is mapped again, derived data is made once,
 * and a forked capture child never sees the cache's mappings; in a pass, one
 * check per file.  Then the two
 * readers built on it: two process views of the same maps share one parsed
 * .eh_frame and map each file once, with the same answers as the first. */
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "unwinders/model/files.h"
#include "unwinders/model/perfview.h"
#include "unwinders/view.h"

static char path[64];

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void setup(void)
{
	snprintf(path, sizeof(path), "/tmp/jufiles-XXXXXX");
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	write_file("first contents");
}

static void teardown(void)
{
	uw_files_flush();
	unlink(path);
}

START_TEST(mapped_once)
{
	unsigned long n0 = uw_files_opened();
	const struct uw_file *a, *b;
	ck_assert_int_eq(uw_file_get(path, &a), 0);
	ck_assert_int_eq(uw_file_get(path, &b), 0);
	ck_assert_ptr_eq(a, b);
	ck_assert_uint_eq(uw_files_opened(), n0 + 1);
	ck_assert_uint_eq(a->size, 14);
	ck_assert_mem_eq(a->data, "first contents", 14);
	uw_file_put(a);
	uw_file_put(b);
	/* idle, still cached: served again without opening */
	ck_assert_int_eq(uw_file_get(path, &a), 0);
	ck_assert_uint_eq(uw_files_opened(), n0 + 1);
	uw_file_put(a);
}
END_TEST

/* a rewritten file (new size, new mtime) is never served stale */
START_TEST(rewritten_file)
{
	const struct uw_file *a, *b;
	ck_assert_int_eq(uw_file_get(path, &a), 0);
	write_file("second, longer contents");
	ck_assert_int_eq(uw_file_get(path, &b), 0);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(b->size, 23);
	ck_assert_mem_eq(b->data, "second, longer contents", 23);
	uw_file_put(a);
	uw_file_put(b);
}
END_TEST

/* in a pass the file checked first is served to every reader (one stat);
 * a file rewritten meanwhile is seen by the next pass and outside passes */
START_TEST(pass_checks_once)
{
	const struct uw_file *a, *b, *c, *d;
	uw_files_pass_begin();
	ck_assert_int_eq(uw_file_get(path, &a), 0);
	write_file("second, longer contents");
	ck_assert_int_eq(uw_file_get(path, &b), 0);
	ck_assert_ptr_eq(a, b);
	uw_files_pass_end();
	ck_assert_int_eq(uw_file_get(path, &c), 0);
	ck_assert_ptr_ne(a, c);
	ck_assert_mem_eq(c->data, "second, longer contents", 23);
	write_file("third");
	uw_files_pass_begin();
	ck_assert_int_eq(uw_file_get(path, &d), 0);
	uw_files_pass_end();
	ck_assert_ptr_ne(c, d);
	ck_assert_mem_eq(d->data, "third", 5);
	uw_file_put(a);
	uw_file_put(b);
	uw_file_put(c);
	uw_file_put(d);
}
END_TEST

START_TEST(not_regular)
{
	const struct uw_file *f;
	ck_assert_int_eq(uw_file_get("/dev/null", &f), -EINVAL);
	ck_assert_int_eq(uw_file_get("/tmp", &f), -EINVAL);
	ck_assert_int_eq(uw_file_get("/nonexistent/jitunwind", &f), -ENOENT);
	ck_assert_ptr_null(f);
}
END_TEST

static int nfreed;
static void count_free(void *p)
{
	nfreed++;
	free(p);
}

START_TEST(derived_once)
{
	const struct uw_file *f;
	ck_assert_int_eq(uw_file_get(path, &f), 0);
	ck_assert_ptr_null(uw_file_derived(f, UW_FILE_PV_SCAN, 0));
	nfreed = 0;
	int *mine = malloc(sizeof(int)), *late = malloc(sizeof(int));
	ck_assert_ptr_eq(uw_file_set_derived(f, UW_FILE_PV_SCAN, 0, mine, count_free), mine);
	/* a second maker loses: its copy is freed, the first one is served */
	ck_assert_ptr_eq(uw_file_set_derived(f, UW_FILE_PV_SCAN, 0, late, count_free), mine);
	ck_assert_int_eq(nfreed, 1);
	ck_assert_ptr_eq(uw_file_derived(f, UW_FILE_PV_SCAN, 0), mine);
	ck_assert_ptr_null(uw_file_derived(f, UW_FILE_PV_SCAN, 1));
	ck_assert_ptr_null(uw_file_derived(f, UW_FILE_VIEW_ELF, 0));
	uw_file_put(f);
	uw_files_flush();
	ck_assert_int_eq(nfreed, 2);
}
END_TEST

/* /proc/self/maps of a forked child lists none of the cache's mappings: a
 * capture child's maps are what perf is told of (MADV_DONTFORK, and
 * uw_files_child for qemu-user, which ignores it) */
START_TEST(not_in_child)
{
	const struct uw_file *f;
	ck_assert_int_eq(uw_file_get(path, &f), 0);
	int p[2];
	ck_assert_int_eq(pipe(p), 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		uw_files_child();   /* as the capture's child does */
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "grep -c '%s' /proc/%d/maps >&%d", path, (int)getpid(), p[1]);
		_exit(system(cmd) >= 0 ? 0 : 1);
	}
	close(p[1]);
	char buf[32] = "";
	ck_assert_int_gt(read(p[0], buf, sizeof(buf) - 1), 0);
	close(p[0]);
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(atoi(buf), 0);
	/* the control: the parent's own maps do list it */
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "grep -q '%s' /proc/%d/maps", path, (int)getpid());
	ck_assert_int_eq(system(cmd), 0);
	uw_file_put(f);
}
END_TEST

Suite *suite_files(void);

/* This test binary, mapped executable as any process's binary is. */
static size_t self_maps(struct uw_map **maps)
{
	int fd = open("/proc/self/maps", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	static char text[1 << 16];
	ssize_t n = read(fd, text, sizeof(text) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	size_t nm;
	struct ju_err err;
	ck_assert_msg(uw_maps_parse(text, (size_t)n, maps, &nm, &err) == 0, "%s", err.msg);
	return nm;
}

START_TEST(views_share)
{
	struct uw_map *maps;
	size_t nm = self_maps(&maps);
	const struct uw_arch *a = uw_arch_by_mach(EM_X86_64);
	if (!a)
		a = uw_arch_by_mach(EM_AARCH64);
	struct uw_view v1, v2;
	struct pv_view p1, p2;
	struct ju_err err;
	unsigned long n0 = uw_files_opened();
	ck_assert_int_eq(uw_view_init(&v1, a, maps, nm, NULL, &err), 0);
	ck_assert_int_eq(pv_build(&p1, PV_CURRENT, maps, nm, NULL, NULL, &err), 0);
	unsigned long n1 = uw_files_opened();
	ck_assert_uint_gt(n1, n0);
	ck_assert_int_eq(uw_view_init(&v2, a, maps, nm, NULL, &err), 0);
	ck_assert_int_eq(pv_build(&p2, PV_CURRENT, maps, nm, NULL, NULL, &err), 0);
	ck_assert_uint_eq(uw_files_opened(), n1);
	/* the same regions, sharing one parsed table each */
	ck_assert_uint_eq(v1.nregions, v2.nregions);
	size_t with_cfi = 0;
	for (size_t i = 0; i < v1.nregions; i++) {
		ck_assert_int_eq(v1.regions[i].has_cfi, v2.regions[i].has_cfi);
		ck_assert_str_eq(v1.regions[i].cfi_err, v2.regions[i].cfi_err);
		if (!v1.regions[i].has_cfi)
			continue;
		with_cfi++;
		ck_assert_ptr_eq(v1.regions[i].cfi.fdes, v2.regions[i].cfi.fdes);
		ck_assert_uint_eq(v1.regions[i].bias, v2.regions[i].bias);
	}
	ck_assert_uint_gt(with_cfi, 0);
	/* perf's view: the same symbols, shared, for this suite's function */
	uint64_t pc = (uint64_t)(uintptr_t)&suite_files;
	const char *s1 = pv_symbolize(&p1, pc), *s2 = pv_symbolize(&p2, pc);
	ck_assert_ptr_nonnull(s1);
	ck_assert_str_eq(s1, "suite_files");
	ck_assert_ptr_eq(s1, s2);
	uw_view_fini(&v1);
	uw_view_fini(&v2);
	pv_fini(&p1);
	pv_fini(&p2);
	uw_maps_free(maps, nm);
}
END_TEST

Suite *suite_files(void)
{
	Suite *s = suite_create("files");
	TCase *tc = tcase_create("cache");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, mapped_once);
	tcase_add_test(tc, rewritten_file);
	tcase_add_test(tc, pass_checks_once);
	tcase_add_test(tc, not_regular);
	tcase_add_test(tc, derived_once);
	tcase_add_test(tc, not_in_child);
	tcase_add_test(tc, views_share);
	suite_add_tcase(s, tc);
	return s;
}
