/* Temporary files named by their maker's pid, and the sweep of those whose
 * maker is gone (docs/HACKING.md "Temporary files"): a process killed by a
 * timeout (SIGKILL) cannot remove what it made in /dev/shm, where a replay's
 * views hold up to 1.5 GB of memory; the next one removes it. */
#ifndef HX_PIDTMP_H
#define HX_PIDTMP_H

#include <stdbool.h>
#include <stddef.h>

#define HX_PIDTMP_SWEEP_MAX 4096   /* entries of the parent looked at by one sweep */

/* Make parent/tag-PID-XXXXXX (a directory, or with dir false an empty file,
 * whose open descriptor is returned) and put its path in path.  Returns 0
 * (a directory), the descriptor (a file), or a negative errno. */
int hx_pidtmp_make(char *path, size_t len, const char *parent, const char *tag, bool dir);

/* Remove every parent/tag-PID-XXXXXX (file or directory, its tree not
 * followed through links or across mounts) owned by this uid whose PID is
 * no process (kill(PID, 0) fails with ESRCH).  Returns how many were
 * removed, or a negative errno when parent cannot be read. */
int hx_pidtmp_sweep(const char *parent, const char *tag);

#endif
