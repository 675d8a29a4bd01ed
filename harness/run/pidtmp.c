/* Temporary files named by their maker's pid; the sweep of a dead maker's. */
#include "harness/run/pidtmp.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int hx_pidtmp_make(char *path, size_t len, const char *parent, const char *tag, bool dir)
{
	if ((size_t)snprintf(path, len, "%s/%s-%ld-XXXXXX", parent, tag, (long)getpid()) >= len) {
		path[0] = 0;
		return -ENAMETOOLONG;
	}
	if (dir) {
		if (mkdtemp(path))
			return 0;
	} else {
		int fd = mkstemp(path);
		if (fd >= 0)
			return fd;
	}
	int e = errno > 0 ? -errno : -EIO;
	path[0] = 0;
	return e;
}

/* tag-PID-XXXXXX: the PID (> 0), else 0 */
static pid_t name_pid(const char *name, const char *tag)
{
	size_t tl = strlen(tag);
	if (strncmp(name, tag, tl) || name[tl] != '-')
		return 0;
	const char *p = name + tl + 1;
	char *end;
	errno = 0;
	long pid = strtol(p, &end, 10);
	if (errno || end == p || *p < '1' || *p > '9' || pid <= 0 || pid > (1L << 30) || *end != '-' ||
	    strlen(end + 1) != 6)
		return 0;
	return (pid_t)pid;
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	remove(p);
	return 0;                    /* go on: remove what can be removed */
}

int hx_pidtmp_sweep(const char *parent, const char *tag)
{
	DIR *d = opendir(parent);
	if (!d)
		return errno > 0 ? -errno : -EIO;
	int gone = 0, seen = 0;
	for (struct dirent *e; seen < HX_PIDTMP_SWEEP_MAX && (e = readdir(d)); seen++) {
		pid_t pid = name_pid(e->d_name, tag);
		char p[4352];
		struct stat sb;
		if (!pid || (size_t)snprintf(p, sizeof(p), "%s/%s", parent, e->d_name) >= sizeof(p) ||
		    lstat(p, &sb) || sb.st_uid != geteuid() || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode)))
			continue;
		if (kill(pid, 0) == 0 || errno != ESRCH)
			continue;            /* alive, or another user's process of that pid */
		nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
		gone += access(p, F_OK) != 0;
	}
	closedir(d);
	return gone;
}
