/* The process view an unwinder is given (unwinders/view.c): maps text parsed
 * as the kernel writes it, checked against the dynamic linker's own answer
 * (dladdr) for this process; ELF regions found by pc with the load bias
 * dladdr reports and .eh_frame where readelf sees one; jitdump loads mapped
 * with perf's MMAP2 length (tools/perf/util/jitdump.c: ALIGN_8(code size) +
 * unwinding_mapped_size when there is unwinding info, else the code size),
 * computed here by hand from the golden dumps real perf read. */
#include <check.h>
#include <errno.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwinders/uwarch.h"
#include "unwinders/view.h"

static char *self_maps(size_t *len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	size_t cap = 1 << 20;
	char *t = malloc(cap);
	ck_assert_ptr_nonnull(t);
	*len = fread(t, 1, cap - 1, f);
	t[*len] = 0;
	fclose(f);
	return t;
}

/* libc's qsort: a function in a shared object, where dladdr knows the base */
static void *libc_fn(Dl_info *di)
{
	void *pc = dlsym(RTLD_DEFAULT, "qsort");
	ck_assert_ptr_nonnull(pc);
	ck_assert_int_ne(dladdr(pc, di), 0);
	ck_assert_ptr_nonnull(di->dli_fname);
	return pc;
}

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];
	return realpath(a, ra) && realpath(b, rb) && !strcmp(ra, rb);
}

START_TEST(maps_agree_with_dladdr)
{
	size_t len, n;
	struct ju_err err;
	char *t = self_maps(&len);
	struct uw_map *m;
	ck_assert_msg(uw_maps_parse(t, len, &m, &n, &err) == 0, "%s", err.msg);
	Dl_info di;
	uint64_t pc = (uint64_t)(uintptr_t)libc_fn(&di);
	size_t hits = 0;
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_lt(m[i].start, m[i].end);
		if (pc >= m[i].start && pc < m[i].end) {
			hits++;
			ck_assert_msg(m[i].path && same_file(m[i].path, di.dli_fname), "map of %#llx: %s, dladdr: %s",
				      (unsigned long long)pc, m[i].path ? m[i].path : "(none)", di.dli_fname);
			ck_assert_msg(m[i].prot[2] == 'x', "map of a function is %s", m[i].prot);
		}
	}
	ck_assert_uint_eq(hits, 1);
	uw_maps_free(m, n);
	free(t);
}
END_TEST

/* malformed maps lines: refused with the line named */
START_TEST(maps_bad_line_refused)
{
	static const char *const bad[] = {
		"7f00-7e00 r-xp 00000000 08:01 12 /lib/x.so\n",       /* end before start */
		"7f00 r-xp 00000000 08:01 12 /lib/x.so\n",            /* no range */
		"00400000-00401000 r-xp 00000000 08:01 12 /a\nzz\n",  /* second line */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct uw_map *m = NULL;
		size_t n = 0;
		struct ju_err err = { 0 };
		int rc = uw_maps_parse(bad[i], strlen(bad[i]), &m, &n, &err);
		ck_assert_msg(rc == -EINVAL && strstr(err.msg, "line"), "case %zu: rc %d, '%s'", i, rc, err.msg);
		uw_maps_free(m, n);
	}
}
END_TEST

/* libc's region: the file dladdr names, the bias it reports as the base,
 * and CFI exactly when readelf lists an .eh_frame in the file */
START_TEST(view_finds_libc)
{
	size_t len, n;
	struct ju_err err;
	char *t = self_maps(&len);
	struct uw_map *m;
	ck_assert_msg(uw_maps_parse(t, len, &m, &n, &err) == 0, "%s", err.msg);
	struct uw_view v;
	ck_assert_msg(uw_view_init(&v, uw_arch_host(), m, n, NULL, &err) == 0, "%s", err.msg);
	Dl_info di;
	uint64_t pc = (uint64_t)(uintptr_t)libc_fn(&di);
	const struct uw_region *r = uw_view_find(&v, pc);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(r->kind, UW_REGION_ELF);
	ck_assert_msg(r->start <= pc && pc < r->end, "region %#llx-%#llx", (unsigned long long)r->start,
		      (unsigned long long)r->end);
	ck_assert_msg(same_file(r->name, di.dli_fname), "%s vs %s", r->name, di.dli_fname);
	ck_assert_uint_eq(r->bias, (uint64_t)(uintptr_t)di.dli_fbase);
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null | grep -q ' \\.eh_frame '", di.dli_fname);
	if (system("readelf --version >/dev/null 2>&1") == 0)
		ck_assert_int_eq(r->has_cfi, system(cmd) == 0);
	else
		printf("view: readelf not installed, libc's .eh_frame not cross-checked\n");
	/* negative: an address no map holds */
	ck_assert_ptr_null(uw_view_find(&v, 0x10));
	uw_view_fini(&v);
	uw_maps_free(m, n);
	free(t);
}
END_TEST

/* the golden dumps' loads as perf maps them */
START_TEST(jit_loads_as_perf_maps_them)
{
	int nloads = 0;
	for (unsigned pid = 28006; pid <= 28013; pid++) {
		struct ju_err err;
		char path[128];
		snprintf(path, sizeof(path), "tests/golden/perfview/jit-%u.dump", pid);
		struct jd_file jd;
		struct ju_err je;
		ck_assert_msg(jd_open(&jd, path, &je) == 0, "%s: %s (run from the repository root)", path, je.msg);
		struct uw_view v;
		ck_assert_msg(uw_view_init(&v, uw_arch_host(), NULL, 0, &jd, &err) == 0, "%s", err.msg);
		for (size_t i = 0; i < jd.nloads; i++) {
			const struct jd_load *l = &jd.loads[i];
			uint64_t want = l->has_unwind && l->mapped_size ? ((l->code_size + 7) & ~7ull) + l->mapped_size
									 : l->code_size;
			ck_assert_msg(uw_jit_map_len(l) == want, "%s load %zu: %llu, perf maps %llu", path, i,
				      (unsigned long long)uw_jit_map_len(l), (unsigned long long)want);
			const struct uw_region *r = uw_view_find(&v, l->code_addr);
			ck_assert_ptr_nonnull(r);
			ck_assert_int_eq(r->kind, UW_REGION_JIT);
			ck_assert_uint_eq(r->start, l->code_addr);
			nloads++;
		}
		uw_view_fini(&v);
		jd_close(&jd);
	}
	ck_assert_int_ge(nloads, 10);
}
END_TEST

Suite *suite_view(void);
Suite *suite_view(void)
{
	Suite *s = suite_create("view");
	TCase *tc = tcase_create("view");
	tcase_add_test(tc, maps_agree_with_dladdr);
	tcase_add_test(tc, maps_bad_line_refused);
	tcase_add_test(tc, view_finds_libc);
	tcase_add_test(tc, jit_loads_as_perf_maps_them);
	suite_add_tcase(s, tc);
	return s;
}
