/* Private scratch directories (scratch.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include "harness/run/scratch.h"
#include "harness/run/pidtmp.h"

const char *hx_scratch_root(void)
{
	const char *t = getenv("TMPDIR");
	if (t && t[0] && strlen(t) < 200)
		return t;
	struct statvfs fs;
	if (!access("/dev/shm", W_OK | X_OK) && !statvfs("/dev/shm", &fs) && !(fs.f_flag & ST_NOEXEC) &&
	    (unsigned long long)fs.f_bavail * fs.f_frsize >= HX_SCRATCH_SHM_MIN)
		return "/dev/shm";
	return "/tmp";
}

/* The directories a signal removes: the process that made them (a capture
 * child forked later must not), a slot each, "" when free. */
#define NSLOTS 8
static char slots[NSLOTS][HX_SCRATCH_PATH];
static volatile sig_atomic_t owner;
static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };

/* Remove what is in the directory open at fd, depth levels of
 * subdirectories deep, with system calls alone (async-signal-safe: no
 * readdir, no malloc).  Bounded: entries of one buffer at a time, and a
 * round that removes nothing ends the loop. */
static void rm_at(int fd, int depth)
{
	char buf[1024] __attribute__((aligned(8)));   /* HX_SCRATCH_DEPTH of them on a signal's stack */
	for (int round = 0; round < 100000; round++) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0)
			return;
		int gone = 0;
		for (long off = 0; off < n;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			const char *name = buf + off + 19;
			off += reclen ? reclen : n;
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			if (!unlinkat(fd, name, 0)) {
				gone++;
				continue;
			}
			if (errno != EISDIR || depth <= 0)
				continue;
			int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				rm_at(sub, depth - 1);
				close(sub);
			}
			gone += !unlinkat(fd, name, AT_REMOVEDIR);
		}
		if (!gone)
			return;
		lseek(fd, 0, SEEK_SET);
	}
}

static void rm_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOTDIR || errno == ELOOP)
			unlink(dir);             /* a file or a link registered: itself */
		return;
	}
	rm_at(fd, HX_SCRATCH_DEPTH);
	close(fd);
	rmdir(dir);
}

static void on_signal(int sig)
{
	int e = errno;
	if (owner == getpid())
		for (int i = 0; i < NSLOTS; i++)
			if (slots[i][0])
				rm_dir(slots[i]);
	signal(sig, SIG_DFL);
	errno = e;
	raise(sig);
}

void hx_scratch_register(const char *dir)
{
	if (owner != getpid()) {
		/* first here (or a child registering its own): catch the signals
		 * that end the process by default, none a caller handles or ignores */
		for (int i = 0; i < NSLOTS; i++)
			slots[i][0] = 0;
		for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
			struct sigaction was, sa = { .sa_handler = on_signal };
			sigemptyset(&sa.sa_mask);
			if (!sigaction(sigs[k], NULL, &was) && was.sa_handler == SIG_DFL)
				sigaction(sigs[k], &sa, NULL);
		}
		owner = getpid();
	}
	if (strlen(dir) >= HX_SCRATCH_PATH)
		return;
	for (int i = 0; i < NSLOTS; i++)
		if (!slots[i][0]) {
			sigset_t all, old;
			sigfillset(&all);
			sigprocmask(SIG_BLOCK, &all, &old);
			snprintf(slots[i], sizeof(slots[i]), "%s", dir);
			sigprocmask(SIG_SETMASK, &old, NULL);
			return;
		}
}

void hx_scratch_forget(const char *dir)
{
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	for (int i = 0; i < NSLOTS; i++)
		if (slots[i][0] && !strcmp(slots[i], dir))
			slots[i][0] = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int hx_scratch_remove(const char *dir)
{
	if (!dir || !dir[0])
		return 0;
	rm_dir(dir);
	hx_scratch_forget(dir);
	return access(dir, F_OK) ? 0 : -ENOTEMPTY;
}

int hx_scratch_mkdtemp(char *dir, size_t len, const char *tag, struct ju_err *err)
{
	const char *root = hx_scratch_root();
	char pre[64];
	snprintf(pre, sizeof(pre), "jitunwind-%s", tag);
	hx_pidtmp_sweep(root, pre);          /* a SIGKILLed command's (a timeout's) */
	int rc = hx_pidtmp_make(dir, len, root, pre, true);
	if (rc)
		return ju_errf(err, -rc, 0, "mkdtemp %s/%s-%ld-XXXXXX: %s", root, pre, (long)getpid(), strerror(-rc));
	hx_scratch_register(dir);
	return 0;
}
