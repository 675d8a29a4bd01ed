/* Private scratch directories (scratch.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>
#include "harness/run/scratch.h"

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

int hx_scratch_mkdtemp(char *dir, size_t len, const char *tag, struct ju_err *err)
{
	const char *root = hx_scratch_root();
	if ((size_t)snprintf(dir, len, "%s/jitunwind-%s-XXXXXX", root, tag) >= len) {
		dir[0] = 0;
		return ju_errf(err, ENAMETOOLONG, 0, "%s/jitunwind-%s-XXXXXX: name too long", root, tag);
	}
	if (!mkdtemp(dir)) {
		int rc = ju_errf(err, errno, 0, "mkdtemp %s: %s", dir, strerror(errno));
		dir[0] = 0;
		return rc;
	}
	return 0;
}
