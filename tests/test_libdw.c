/* libdw as perf feeds it, on the samples of uwt.h: a real stack of this
 * process and generated trampolines spliced on top of it. */
#include <check.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/uwt.h"
#include "tests/hostarch.h"
#include "trampolines/tramp.h"
#include "unwinders/model/files.h"

extern const struct uw_unwinder uw_libdw;

static void set_libdw(void)
{
	uwt_unwinder = &uw_libdw;
}

static const char *const cpython_fp[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };

static struct uwt_self self;
static struct uwt_tramp tr;
static struct uw_result res;

static void run(const struct uw_view *v, const struct uw_sample *s)
{
	void *st = NULL;
	struct ju_err err = { 0 };
	ck_assert_msg(uw_libdw.open(v, &st, &err) == 0, "%s", err.msg);
	uw_libdw.unwind(st, v, s, &res);
	uw_libdw.close(st);
}

/* a dump outside /tmp: perf inject writes jitted-*.so beside it, perf >= 6.8
 * reports those at start - pgoff, the module then starts 0x80 early and
 * ends before the code, and perf gets no chain at all for a sample in it */
START_TEST(jitted_outside_tmp_no_module)
{
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, NULL, PV_CURRENT, NULL, 2);
	run(&tr.w.v, &tr.s);
	ck_assert_msg(res.n == 0 && res.stop == UW_STOP_NO_INFO, "%s", uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

/* libdw reads .eh_frame from the jitted ELF itself: mapped_size 0 hides
 * nothing from it, the chain stays CFI-based */
START_TEST(mapped_zero_still_cfi)
{
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.mapped = 0;
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, &o, PV_CURRENT, "/tmp", 2);
	run(&tr.w.v, &tr.s);
	ck_assert_msg(res.n >= 3 && res.addr[1] == self.ip && res.addr[2] == self.ra[0], "%s",
		      uwt_chain(&res));
	ck_assert_msg(!(res.flags[1] & UW_F_FALLBACK), "%s", uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

/* an .eh_frame with a CIE and no FDE (V8 without CFI): libdw's x86_64
 * backend walks rbp; the caller is right (a frame-pointer trampoline) and
 * flagged */
START_TEST(no_cfi_fp_fallback)
{
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.cfi = TR_CFI_NONE;
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, &o, PV_CURRENT, "/tmp", 2);
	run(&tr.w.v, &tr.s);
	if (!host_cases()->libdw_fp) {
		/* riscv64: no backend hook, so no CFI ends the chain at the pc */
		ck_assert_msg(res.n == 1 && res.stop == UW_STOP_NO_INFO, "%s", uwt_chain(&res));
		uwt_tramp_free(&tr);
		return;
	}
	ck_assert_msg(res.n >= 3 && res.addr[1] == self.ip && res.addr[2] == self.ra[0], "%s",
		      uwt_chain(&res));
	ck_assert_msg(res.flags[1] & UW_F_FALLBACK, "not flagged: %s", uwt_chain(&res));
	ck_assert_msg(!(res.flags[2] & UW_F_FALLBACK), "f3's CFI flagged: %s", uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

/* A view whose process files are mapped as the last view's takes its Dwfl
 * over; the JIT's modules must not come with it.  Four trampolines in a row
 * at one address, their jitted ELF written to one path, without CFI (libdw
 * walks rbp: flagged) and with it, alternately: each chain as a Dwfl of its
 * own gives it, and every view after the first began no Dwfl.  A stale
 * module of the previous trampoline would flip the flag. */
START_TEST(kept_dwfl_no_stale_jit)
{
	struct tr_unwind_opts none, cfi;
	tr_unwind_opts_default(&none);
	tr_unwind_opts_default(&cfi);
	none.cfi = TR_CFI_NONE;
	uwt_capture_self(&self);
	uint64_t code = 0;
	for (int k = 0; k < 4; k++) {
		bool with = k & 1;
		unsigned long begun = uw_libdw_dwfls_begun();
		uwt_tramp(&tr, &self, cpython_fp, 5, with ? &cfi : &none, PV_CURRENT, "/tmp", 2);
		ck_assert_msg(!k || tr.code == code, "the trampolines moved: 0x%llx, 0x%llx",
			      (unsigned long long)code, (unsigned long long)tr.code);
		code = tr.code;
		run(&tr.w.v, &tr.s);
		if (!with && !host_cases()->libdw_fp) {
			/* no fallback (riscv64): a stale module's CFI would give more than the pc */
			ck_assert_msg(res.n == 1, "view %d: %s", k, uwt_chain(&res));
			ck_assert_msg(!k || uw_libdw_dwfls_begun() == begun, "view %d began a Dwfl of its own", k);
			uwt_tramp_free(&tr);
			continue;
		}
		ck_assert_msg(res.n >= 3 && res.addr[1] == self.ip && res.addr[2] == self.ra[0], "view %d: %s", k,
			      uwt_chain(&res));
		ck_assert_msg(!(res.flags[1] & UW_F_FALLBACK) == with, "view %d (%s CFI): frame 1 %sflagged: %s", k,
			      with ? "with" : "without", with ? "" : "not ", uwt_chain(&res));
		ck_assert_msg(!k || uw_libdw_dwfls_begun() == begun, "view %d began a Dwfl of its own", k);
		uwt_tramp_free(&tr);
	}
}
END_TEST

/* The file mappings of /proc/self/maps (start addresses, up to max), sorted
 * as listed. */
static size_t file_maps(unsigned long long *out, size_t max)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4608];
	size_t n = 0;
	while (f && fgets(line, sizeof(line), f) && n < max) {
		unsigned long long a;
		if (strchr(line, '/') && sscanf(line, "%llx-", &a) == 1)
			out[n++] = a;
	}
	if (f)
		fclose(f);
	return n;
}

/* A kept Dwfl holds libelf's mappings of the process files (without
 * MADV_DONTFORK): a capture child (after uw_files_child) must list none of
 * them, or perf would be told of maps the case never made. */
START_TEST(kept_dwfl_not_in_child_maps)
{
	static unsigned long long before[4096];
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, NULL, PV_CURRENT, "/tmp", 2);
	size_t nb = file_maps(before, 4096);
	run(&tr.w.v, &tr.s);     /* its Dwfl is kept */
	ck_assert_msg(res.n >= 3, "%s", uwt_chain(&res));
	fflush(NULL);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		static unsigned long long after[4096];
		uw_files_child();
		size_t na = file_maps(after, 4096);
		for (size_t i = 0; i < na; i++) {
			bool known = false;
			for (size_t j = 0; j < nb && !known; j++)
				known = after[i] == before[j];
			if (!known)
				_exit(1);
		}
		_exit(0);
	}
	int st = 0;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child lists a file mapping the parent's kept Dwfl made");
	uwt_tramp_free(&tr);
}
END_TEST

Suite *suite_libdw(void);
Suite *suite_libdw(void)
{
	Suite *s = suite_create("libdw");
	TCase *tc = tcase_create("libdw");
	tcase_add_checked_fixture(tc, set_libdw, NULL);
	tcase_set_timeout(tc, 60);
	uwt_add_common(tc);
	tcase_add_test(tc, jitted_outside_tmp_no_module);
	tcase_add_test(tc, mapped_zero_still_cfi);
	tcase_add_test(tc, no_cfi_fp_fallback);
	tcase_add_test(tc, kept_dwfl_no_stale_jit);
	tcase_add_test(tc, kept_dwfl_not_in_child_maps);
	suite_add_tcase(s, tc);
	return s;
}
