/* The files of the sampled process (libc, ld.so, the binary), each opened and
 * mapped once per run and shared by every reader of it: the oracle's regions
 * (view.c), perf's view (perfview.c) and, through that view, every unwinder.
 * An entry is keyed by path + device + inode + size + mtime, so a file rebuilt
 * during a run is mapped again, never served stale.  Data computed from a
 * file (its parsed .eh_frame at one load address, perf's symbol table) is kept
 * with it, made once by whichever reader needs it first.  The mappings are
 * MADV_DONTFORK: a capture child forked later lists only its own maps.
 *
 * Only files that nobody rewrites during the run belong here (mmap: a file
 * truncated under its mapping would fault); the jitted .so files perfview.c
 * writes itself are read into memory instead. */
#ifndef UW_FILES_H
#define UW_FILES_H

#include <stddef.h>
#include <stdint.h>

struct uw_file {
	const char *path;
	const uint8_t *data;      /* the whole file, read-only (NULL when empty) */
	size_t size;
};

/* Derived data kinds (one per reader). */
enum uw_file_kind { UW_FILE_VIEW_ELF, UW_FILE_VIEW_CFI, UW_FILE_PV_SCAN, UW_FILE_NKINDS };

/* The file at path, mapped (a reference; uw_file_put gives it back).
 * 0, or -errno: -EINVAL for a file that is not a regular file. */
int uw_file_get(const char *path, const struct uw_file **out);
void uw_file_put(const struct uw_file *f);
/* One more reference to a file already held (uw_file_put gives it back):
 * while held, the entry is never freed, so its address names that file. */
void uw_file_hold(const struct uw_file *f);

/* A pass (one replay's readers): between begin and end, a path checked once
 * (stat) is served again unchecked, so every reader of the pass gets the
 * same file for it and the check costs one stat per file and pass, not per
 * reader.  Outside a pass every uw_file_get checks. */
void uw_files_pass_begin(void);
void uw_files_pass_end(void);

/* Derived data of (kind, key) kept with f, or NULL when nobody made it yet. */
void *uw_file_derived(const struct uw_file *f, enum uw_file_kind kind, uint64_t key);
/* Keep p as f's (kind, key) data, freed by fr with the file.  If another
 * reader set it first, p is freed and theirs returned; NULL if out of memory
 * (p freed). */
void *uw_file_set_derived(const struct uw_file *f, enum uw_file_kind kind, uint64_t key, void *p,
			  void (*fr)(void *));

/* In a forked child, first thing: no file of the cache stays mapped there
 * (MADV_DONTFORK already keeps them out, except under qemu-user, which
 * ignores it) and the child's cache starts empty. */
void uw_files_child(void);
/* fn runs first in uw_files_child: another cache that maps the process's
 * files without MADV_DONTFORK (libdw's kept Dwfl) gives them up there.
 * Registering one fn twice runs it once; 0, or -ENOSPC when the table is full. */
int uw_files_on_child(void (*fn)(void));

/* Unmaps every file nobody holds (tests; the cache otherwise lives for the run). */
void uw_files_flush(void);
/* Files opened and mapped since the start (a file served again is not counted). */
unsigned long uw_files_opened(void);

#endif
