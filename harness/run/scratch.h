/* Where the harness keeps files no one reads after the command ends: the
 * capture's private jitdumps and perf maps, fuzz-cfi's cases. */
#ifndef HX_SCRATCH_H
#define HX_SCRATCH_H

#include <stddef.h>
#include "juerr.h"

/* The directory private scratch directories are made in: $TMPDIR when set;
 * else /dev/shm where it is a writable directory mounted with exec and with
 * at least HX_SCRATCH_SHM_MIN bytes free (tmpfs: a file costs a fraction of
 * one on a disk file system, whose inode allocation on an ext4 without a
 * journal scans past every inode deleted in the last minutes; containers
 * mount /dev/shm noexec and small, and a jitdump's marker mapping is
 * PROT_EXEC, as perf needs it); else /tmp. */
#define HX_SCRATCH_SHM_MIN (256u << 20)
const char *hx_scratch_root(void);

/* mkdtemp of ROOT/jitunwind-TAG-PID-XXXXXX (ROOT: hx_scratch_root(); a dead
 * pid's of the tag removed first: harness/run/pidtmp.h),
 * registered (below).  0 with dir set, or -errno with err. */
int hx_scratch_mkdtemp(char *dir, size_t len, const char *tag, struct ju_err *err);

/* A scratch directory (or a file or link: itself) this process removes if SIGINT, SIGTERM, SIGHUP or
 * SIGPIPE ends it (each caught only where its action is the default; the
 * handler removes the registered directories, HX_SCRATCH_DEPTH levels of
 * subdirectories deep, then dies of the signal as before).  Up to 8 at a time, paths under
 * HX_SCRATCH_PATH bytes; a child forked later does not remove them. */
#define HX_SCRATCH_PATH 256
#define HX_SCRATCH_DEPTH 32          /* perf's build-id cache mirrors whole paths */
void hx_scratch_register(const char *dir);
/* Forgets it (the caller removed it, or keeps it on purpose). */
void hx_scratch_forget(const char *dir);
/* Removes the directory (as the handler would) and forgets it.  0, or
 * -ENOTEMPTY when it is still there. */
int hx_scratch_remove(const char *dir);

#endif
