/* Each file of the process mapped once per run (files.h). */
#include "unwinders/model/files.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define UW_FILES_IDLE_MAX 64     /* unreferenced files kept mapped */

struct derived {
	enum uw_file_kind kind;
	uint64_t key;
	void *p;
	void (*fr)(void *);
	struct derived *next;
};

struct entry {
	struct uw_file pub;          /* first: a uw_file pointer is an entry pointer */
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int refs;
	bool stale;                  /* the path now names another file: not served again */
	unsigned long pass;          /* the pass it was last checked against its path in */
	struct derived *derived;
	struct entry *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static unsigned long nopened;
static unsigned long pass_now, pass_last;   /* uw_files_pass_begin; 0: none */

static bool same_file(const struct entry *e, const struct stat *st)
{
	return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
	       e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void entry_free(struct entry *e)
{
	for (struct derived *d = e->derived, *n; d; d = n) {
		n = d->next;
		d->fr(d->p);
		free(d);
	}
	if (e->pub.data)
		munmap((void *)e->pub.data, e->pub.size);
	free(e->path);
	free(e);
}

/* Unlinks and frees unreferenced entries that are stale, then the oldest
 * idle ones beyond the limit.  Called with the lock held. */
static void prune(void)
{
	size_t idle = 0;
	for (struct entry **pp = &entries; *pp;) {
		struct entry *e = *pp;
		if (!e->refs && (e->stale || idle >= UW_FILES_IDLE_MAX)) {
			*pp = e->next;
			entry_free(e);
			continue;
		}
		idle += !e->refs;
		pp = &e->next;
	}
}

/* open + map; the entry is new (not linked). */
static int entry_map(const char *path, struct entry **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
		close(fd);
		return -EINVAL;
	}
	struct entry *e = calloc(1, sizeof(*e));
	char *p = strdup(path);
	void *data = NULL;
	if (st.st_size > 0) {
		/* writable copy-on-write pages: libelf's elf_memory takes its
		 * buffer as ELF_C_READ_MMAP_PRIVATE, which it may convert in place */
		data = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		if (data == MAP_FAILED)
			data = NULL;
		/* not in a forked child: a capture child's /proc/self/maps must list
		 * only what the case maps (perf keeps every file map it is told of) */
		if (data && madvise(data, (size_t)st.st_size, MADV_DONTFORK)) {
			munmap(data, (size_t)st.st_size);
			data = NULL;
		}
	}
	int err = errno;
	close(fd);
	if (!e || !p || (st.st_size > 0 && !data)) {
		if (data)
			munmap(data, (size_t)st.st_size);
		free(e);
		free(p);
		return e && p ? -err : -ENOMEM;
	}
	e->path = p;
	e->pub.path = p;
	e->pub.data = data;
	e->pub.size = (size_t)st.st_size;
	e->dev = st.st_dev;
	e->ino = st.st_ino;
	e->size = st.st_size;
	e->mtime = st.st_mtim;
	*out = e;
	return 0;
}

void uw_files_pass_begin(void)
{
	pthread_mutex_lock(&lock);
	pass_now = ++pass_last;
	pthread_mutex_unlock(&lock);
}

void uw_files_pass_end(void)
{
	pthread_mutex_lock(&lock);
	pass_now = 0;
	pthread_mutex_unlock(&lock);
}

/* An entry already checked against its path in the current pass. */
static struct entry *checked_in_pass(const char *path)
{
	for (struct entry *e = entries; pass_now && e; e = e->next)
		if (!e->stale && e->pass == pass_now && !strcmp(e->path, path))
			return e;
	return NULL;
}

int uw_file_get(const char *path, const struct uw_file **out)
{
	struct stat st;
	*out = NULL;
	pthread_mutex_lock(&lock);
	struct entry *seen = checked_in_pass(path);
	if (seen) {
		seen->refs++;
		*out = &seen->pub;
		pthread_mutex_unlock(&lock);
		return 0;
	}
	unsigned long pass = pass_now;
	pthread_mutex_unlock(&lock);
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	pthread_mutex_lock(&lock);
	for (struct entry *e = entries; e; e = e->next) {
		if (e->stale || strcmp(e->path, path))
			continue;
		if (same_file(e, &st)) {
			e->refs++;
			e->pass = pass;
			*out = &e->pub;
			pthread_mutex_unlock(&lock);
			return 0;
		}
		e->stale = true;
	}
	struct entry *e = NULL;
	int rc = entry_map(path, &e);
	if (!rc) {
		e->refs = 1;
		e->pass = pass;
		e->next = entries;
		entries = e;
		nopened++;
		*out = &e->pub;
	}
	prune();
	pthread_mutex_unlock(&lock);
	return rc;
}

void uw_file_put(const struct uw_file *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&lock);
	((struct entry *)(uintptr_t)f)->refs--;
	prune();
	pthread_mutex_unlock(&lock);
}

void uw_file_hold(const struct uw_file *f)
{
	pthread_mutex_lock(&lock);
	((struct entry *)(uintptr_t)f)->refs++;
	pthread_mutex_unlock(&lock);
}

void *uw_file_derived(const struct uw_file *f, enum uw_file_kind kind, uint64_t key)
{
	const struct entry *e = (const struct entry *)f;
	void *p = NULL;
	pthread_mutex_lock(&lock);
	for (const struct derived *d = e->derived; d && !p; d = d->next)
		if (d->kind == kind && d->key == key)
			p = d->p;
	pthread_mutex_unlock(&lock);
	return p;
}

void *uw_file_set_derived(const struct uw_file *f, enum uw_file_kind kind, uint64_t key, void *p,
			  void (*fr)(void *))
{
	struct entry *e = (struct entry *)(uintptr_t)f;
	pthread_mutex_lock(&lock);
	for (const struct derived *d = e->derived; d; d = d->next)
		if (d->kind == kind && d->key == key) {
			void *theirs = d->p;
			pthread_mutex_unlock(&lock);
			fr(p);
			return theirs;
		}
	struct derived *d = malloc(sizeof(*d));
	if (d) {
		*d = (struct derived){ .kind = kind, .key = key, .p = p, .fr = fr, .next = e->derived };
		e->derived = d;
	}
	pthread_mutex_unlock(&lock);
	if (!d) {
		fr(p);
		return NULL;
	}
	return p;
}

void uw_files_flush(void)
{
	pthread_mutex_lock(&lock);
	for (struct entry *e = entries; e; e = e->next)
		e->stale = true;
	prune();
	pthread_mutex_unlock(&lock);
}

unsigned long uw_files_opened(void)
{
	pthread_mutex_lock(&lock);
	unsigned long n = nopened;
	pthread_mutex_unlock(&lock);
	return n;
}

static void (*child_hooks[4])(void);

int uw_files_on_child(void (*fn)(void))
{
	for (size_t i = 0; i < sizeof(child_hooks) / sizeof(child_hooks[0]); i++)
		if (!child_hooks[i] || child_hooks[i] == fn) {
			child_hooks[i] = fn;
			return 0;
		}
	return -ENOSPC;
}

void uw_files_child(void)
{
	for (size_t i = 0; i < sizeof(child_hooks) / sizeof(child_hooks[0]) && child_hooks[i]; i++)
		child_hooks[i]();
	for (struct entry *e = entries; e; e = e->next)
		if (e->pub.data)
			munmap((void *)e->pub.data, e->pub.size);
	entries = NULL;
}
