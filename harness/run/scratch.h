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

/* mkdtemp of ROOT/jitunwind-TAG-XXXXXX (ROOT: hx_scratch_root()).  0 with
 * dir set, or -errno with err. */
int hx_scratch_mkdtemp(char *dir, size_t len, const char *tag, struct ju_err *err);

#endif
