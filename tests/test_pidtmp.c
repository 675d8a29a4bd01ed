/* Temporary files named by their maker's pid (harness/run/pidtmp.c): the
 * name carries this process's pid; the sweep removes exactly the entries of
 * its tag whose pid is no process and that this uid owns, and nothing else
 * (a live pid, another tag, a name that is not tag-PID-XXXXXX, a link,
 * another user's).  Run in a directory of its own, never in /dev/shm. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "harness/run/pidtmp.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jupidtmp-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* a pid that was a process and is none now (its child reaped) */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	ck_assert_int_ge(p, 0);
	if (!p)
		_exit(0);
	ck_assert_int_eq(waitpid(p, NULL, 0), p);
	ck_assert_int_eq(kill(p, 0), -1);
	return p;
}

static void put(const char *name, bool isdir)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (isdir) {
		ck_assert_int_eq(mkdir(p, 0700), 0);
		char f[300];
		snprintf(f, sizeof(f), "%s/jitted-1-1.so", p);   /* a view's file inside */
		FILE *fp = fopen(f, "w");
		ck_assert_ptr_nonnull(fp);
		fputs("x", fp);
		fclose(fp);
	} else {
		FILE *fp = fopen(p, "w");
		ck_assert_ptr_nonnull(fp);
		fclose(fp);
	}
}

static bool there(const char *name)
{
	char p[256];
	struct stat sb;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return lstat(p, &sb) == 0;
}

START_TEST(name_has_pid)
{
	char p[128], want[96];
	ck_assert_int_eq(hx_pidtmp_make(p, sizeof(p), dir, "jitunwind-rr", true), 0);
	snprintf(want, sizeof(want), "%s/jitunwind-rr-%ld-", dir, (long)getpid());
	ck_assert_msg(!strncmp(p, want, strlen(want)) && strlen(p) == strlen(want) + 6, "%s", p);
	struct stat sb;
	ck_assert(stat(p, &sb) == 0 && S_ISDIR(sb.st_mode));
	int fd = hx_pidtmp_make(p, sizeof(p), dir, "jitunwind-vdso", false);
	ck_assert_int_gt(fd, 0);
	close(fd);
	ck_assert(stat(p, &sb) == 0 && S_ISREG(sb.st_mode));
	/* its own entries are alive: the sweep keeps them */
	ck_assert_int_eq(hx_pidtmp_sweep(dir, "jitunwind-rr"), 0);
	ck_assert_int_eq(hx_pidtmp_sweep(dir, "jitunwind-vdso"), 0);
	ck_assert(stat(p, &sb) == 0);
	char small[16];
	ck_assert_int_eq(hx_pidtmp_make(small, sizeof(small), dir, "jitunwind-rr", true), -ENAMETOOLONG);
}
END_TEST

START_TEST(sweep_dead_only)
{
	pid_t dead = dead_pid();
	char n[8][64];
	snprintf(n[0], 64, "jitunwind-rr-%ld-abcdef", (long)dead);        /* dead, a dir: removed */
	snprintf(n[1], 64, "jitunwind-rr-%ld-ghijkl", (long)dead);        /* dead, a file: removed */
	snprintf(n[2], 64, "jitunwind-rr-%ld-mnopqr", (long)getpid());    /* alive: kept */
	snprintf(n[3], 64, "jitunwind-rr-1-stuvwx");                      /* init, alive: kept */
	snprintf(n[4], 64, "jitunwind-vdso-%ld-abcdef", (long)dead);      /* another tag: kept */
	snprintf(n[5], 64, "jitunwind-rr-%ldx-abcdef", (long)dead);       /* not tag-PID-XXXXXX: kept */
	snprintf(n[6], 64, "jitunwind-rr-%ld-abcdefg", (long)dead);       /* 7 letters: kept */
	snprintf(n[7], 64, "jitunwind-rr-%ld-linkxx", (long)dead);        /* a link: kept, target too */
	put(n[0], true);
	put(n[1], false);
	put(n[2], true);
	put(n[3], true);
	put(n[4], true);
	put(n[5], true);
	put(n[6], true);
	char l[256], t[256];
	snprintf(l, sizeof(l), "%s/%s", dir, n[7]);
	snprintf(t, sizeof(t), "%s/%s", dir, n[2]);
	ck_assert_int_eq(symlink(t, l), 0);
	ck_assert_int_eq(hx_pidtmp_sweep(dir, "jitunwind-rr"), 2);
	ck_assert(!there(n[0]) && !there(n[1]));
	for (int i = 2; i < 8; i++)
		ck_assert_msg(there(n[i]), "%s removed", n[i]);
	char in[300];
	snprintf(in, sizeof(in), "%s/jitted-1-1.so", n[2]);
	ck_assert(there(in));
	/* another user's directory of a dead pid is not ours to remove */
	if (geteuid() == 0) {
		char p[256];
		snprintf(p, sizeof(p), "%s/%s", dir, n[0]);
		put(n[0], true);
		ck_assert_int_eq(chown(p, 65534, 65534), 0);
		ck_assert_int_eq(hx_pidtmp_sweep(dir, "jitunwind-rr"), 0);
		ck_assert(there(n[0]));
	}
	ck_assert_int_eq(hx_pidtmp_sweep("/nonexistent-jitunwind", "jitunwind-rr"), -ENOENT);
}
END_TEST

Suite *suite_pidtmp(void)
{
	Suite *s = suite_create("pidtmp");
	TCase *tc = tcase_create("pidtmp");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, name_has_pid);
	tcase_add_test(tc, sweep_dead_only);
	suite_add_tcase(s, tc);
	return s;
}
