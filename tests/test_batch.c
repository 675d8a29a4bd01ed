/* Batch capture (harness/run/batch.c): the jitdump directories it
 * makes, and how many processes capture a batch, checked against the file
 * system (the directories, and the jit-<pid>.dump files each child leaves:
 * one pid per process, perf's naming) rather than the batch's own counts
 * alone; a directory that cannot be made is refused with its name.  The
 * scratch root (harness/run/scratch.c) against the mount table. */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "harness/capture/capture.h"
#include "harness/run/scratch.h"
#include "tests/hostarch.h"

#define NC 3
static char root[64];
static struct hx_case cs[NC];
static struct hx_batch_case b[NC];

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/jubatch-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	for (int i = 0; i < NC; i++) {
		char text[512], name[16], err[512];
		snprintf(name, sizeof(name), "c%d", i);
		snprintf(text, sizeof(text), "[case]\nname=%s\narch=%s\nabout=a\n[code]\npush_fp\nset_fp\ncall_target\n"
			 "pop_fp\nret\n[sample]\nat=in-callee\ndepth=%d\n[expect]\nfp=ok\n", name, host_facts()->name, i + 1);
		ck_assert_msg(hx_case_parse(&cs[i], name, text, strlen(text), err, sizeof(err)) == 0, "%s", err);
		b[i] = (struct hx_batch_case){ &cs[i], cs[i].name, NULL };
	}
}

static void teardown(void)
{
	hx_batch_dirs_free(b, NC);
	for (int i = 0; i < NC; i++)
		hx_case_free(&cs[i]);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

/* the pids of the jit-<pid>.dump files in dir, into pids; how many */
static int dump_pids(const char *dir, unsigned *pids, int max)
{
	DIR *d = opendir(dir);
	ck_assert_msg(d, "%s", dir);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		unsigned pid;
		char tail[8];
		if (sscanf(de->d_name, "jit-%u.%7s", &pid, tail) == 2 && !strcmp(tail, "dump") && n < max)
			pids[n++] = pid;
	}
	closedir(d);
	return n;
}

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* one child for the batch: a directory per case (they share a pid) */
START_TEST(one_child_dirs_per_case)
{
	struct ju_err je;
	ck_assert_msg(hx_batch_dirs(b, NC, root, 0, &je) == 0, "%s", je.msg);
	struct hx_batch_run run = { 0 };
	struct hx_samples s;
	ck_assert_msg(hx_capture_samples(b, NC, &s, &run, &je) == 0, "%s", je.msg);
	ck_assert_uint_eq(s.ngroups, NC);
	ck_assert_uint_eq(run.children, 1);
	ck_assert_uint_eq(run.ended, 0);
	unsigned first = 0;
	for (int i = 0; i < NC; i++) {
		char want[256];
		snprintf(want, sizeof(want), "%s/c%d", root, i);
		ck_assert_str_eq(b[i].dumpdir, want);
		ck_assert_msg(is_dir(want), "%s is not a directory", want);
		unsigned pids[4];
		ck_assert_int_eq(dump_pids(want, pids, 4), 1);
		if (i == 0)
			first = pids[0];
		ck_assert_uint_eq(pids[0], first);               /* one process */
		ck_assert_str_eq(s.groups[i].case_path, cs[i].name);
		ck_assert_uint_ge(s.groups[i].nsamples, 1);
	}
	hx_samples_free(&s);
}
END_TEST

/* a process per case: the root for all, one dump per pid */
START_TEST(child_per_case_shares_root)
{
	struct ju_err je;
	ck_assert_msg(hx_batch_dirs(b, NC, root, 1, &je) == 0, "%s", je.msg);
	for (int i = 0; i < NC; i++)
		ck_assert_str_eq(b[i].dumpdir, root);
	struct hx_batch_run run = { .per_child = 1 };
	struct hx_samples s;
	ck_assert_msg(hx_capture_samples(b, NC, &s, &run, &je) == 0, "%s", je.msg);
	ck_assert_uint_eq(run.children, NC);
	unsigned pids[8];
	ck_assert_int_eq(dump_pids(root, pids, 8), NC);
	for (int i = 0; i < NC; i++)
		for (int j = 0; j < i; j++)
			ck_assert_uint_ne(pids[i], pids[j]);
	ck_assert_uint_eq(s.ngroups, NC);
	hx_samples_free(&s);
}
END_TEST

/* a root that is a file: the directory it cannot make is named */
START_TEST(bad_root_refused)
{
	char file[128];
	struct ju_err je;
	snprintf(file, sizeof(file), "%s/plain", root);
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(hx_batch_dirs(b, NC, file, 0, &je), -ENOTDIR);
	ck_assert_msg(strstr(je.msg, file), "%s", je.msg);
	for (int i = 0; i < NC; i++)
		ck_assert_ptr_null(b[i].dumpdir);
}
END_TEST

/* /dev/shm's line in /proc/self/mountinfo: whether it is a tmpfs mounted
 * without noexec (the file the kernel writes, not statvfs) */
static bool shm_is_exec_tmpfs(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	ck_assert_ptr_nonnull(f);
	char line[4096];
	bool yes = false;
	while (fgets(line, sizeof(line), f)) {
		char mnt[512], opts[512], fstype[64];
		/* id parent maj:min root mountpoint options [optional...] - fstype source superopts */
		if (sscanf(line, "%*s %*s %*s %*s %511s %511s", mnt, opts) != 2 || strcmp(mnt, "/dev/shm"))
			continue;
		const char *dash = strstr(line, " - ");
		yes = dash && sscanf(dash + 3, "%63s", fstype) == 1 && !strcmp(fstype, "tmpfs") &&
		      !strstr(opts, "noexec");
	}
	fclose(f);
	return yes;
}

/* $TMPDIR first; else /dev/shm where the mount table says tmpfs with exec
 * (and it has room), else /tmp; the directory made there, named by tag */
START_TEST(scratch_root_tmpdir_then_shm)
{
	const char *was = getenv("TMPDIR");
	char keep[512] = "";
	if (was)
		snprintf(keep, sizeof(keep), "%s", was);
	struct ju_err je;
	char dir[256], want[128];
	setenv("TMPDIR", root, 1);
	ck_assert_str_eq(hx_scratch_root(), root);
	ck_assert_msg(hx_scratch_mkdtemp(dir, sizeof(dir), "t", &je) == 0, "%s", je.msg);
	snprintf(want, sizeof(want), "%s/jitunwind-t-", root);
	ck_assert_msg(!strncmp(dir, want, strlen(want)), "%s", dir);
	struct stat st;
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(rmdir(dir), 0);
	/* a TMPDIR that is not a directory: the mkdtemp's error names it */
	char file[128];
	snprintf(file, sizeof(file), "%s/plain", root);
	FILE *f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	setenv("TMPDIR", file, 1);
	ck_assert_int_eq(hx_scratch_mkdtemp(dir, sizeof(dir), "t", &je), -ENOTDIR);
	ck_assert_msg(strstr(je.msg, file), "%s", je.msg);
	unlink(file);
	unsetenv("TMPDIR");
	struct statvfs fs;
	bool room = !statvfs("/dev/shm", &fs) && (unsigned long long)fs.f_bavail * fs.f_frsize >= HX_SCRATCH_SHM_MIN;
	const char *exp = shm_is_exec_tmpfs() && room && !access("/dev/shm", W_OK) ? "/dev/shm" : "/tmp";
	ck_assert_str_eq(hx_scratch_root(), exp);
	ck_assert_msg(hx_scratch_mkdtemp(dir, sizeof(dir), "t", &je) == 0, "%s", je.msg);
	snprintf(want, sizeof(want), "%s/jitunwind-t-", exp);
	ck_assert_msg(!strncmp(dir, want, strlen(want)), "%s", dir);
	ck_assert_int_eq(rmdir(dir), 0);
	if (keep[0])
		setenv("TMPDIR", keep, 1);
}
END_TEST

Suite *suite_batch(void);
Suite *suite_batch(void)
{
	Suite *s = suite_create("batch");
	TCase *tc = tcase_create("batch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, one_child_dirs_per_case);
	tcase_add_test(tc, child_per_case_shares_root);
	tcase_add_test(tc, bad_root_refused);
	tcase_add_test(tc, scratch_root_tmpdir_then_shm);
	suite_add_tcase(s, tc);
	return s;
}
