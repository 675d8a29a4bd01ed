/* Executable arena, W^X: pages are r-x except inside tr_patch, the one
 * function that changes code bytes (MIR's _MIR_change_code), and never
 * writable at all once tr_arena_direct has switched it to forced writes
 * through /proc/self/mem.  tr_patch runs in a SIGTRAP handler: only
 * async-signal-safe calls, errno preserved. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "trampolines/tramp.h"

static int arena_map(struct tr_arena *a, size_t size, uintptr_t at)
{
	a->base = NULL;
	a->size = a->used = 0;
	a->direct = false;
	a->mem_fd = -1;
	long pg = sysconf(_SC_PAGESIZE);
	a->page = pg > 0 ? (size_t)pg : 4096;
	if (!size || size > SIZE_MAX - a->page || (at & (a->page - 1)))
		return -EINVAL;
	size = (size + a->page - 1) & ~(a->page - 1);
	int flags = MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0);
	void *p = mmap((void *)at, size, PROT_READ | PROT_EXEC, flags, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	if (at && p != (void *)at) {
		/* a kernel older than 4.17 takes the flag as a hint only */
		munmap(p, size);
		return -EEXIST;
	}
	a->base = p;
	a->size = size;
	return 0;
}

int tr_arena_init(struct tr_arena *a, size_t size)
{
	return arena_map(a, size, 0);
}

int tr_arena_init_at(struct tr_arena *a, size_t size, uintptr_t at)
{
	return at ? arena_map(a, size, at) : -EINVAL;
}

int tr_arena_alloc(struct tr_arena *a, size_t size, size_t align, uint8_t **out)
{
	if (!align)
		align = 1;
	if (align & (align - 1))
		return -EINVAL;
	uintptr_t start = ((uintptr_t)a->base + a->used + align - 1) & ~(uintptr_t)(align - 1);
	size_t off = (size_t)(start - (uintptr_t)a->base);
	if (off > a->size || size > a->size - off)
		return -ENOMEM;
	a->used = off + size;
	*out = a->base + off;
	return 0;
}

/* n bytes at d through /proc/self/mem; 0 or -errno.  Bounded: each pwrite
 * that returns advances, at most n of them. */
static int patch_direct(struct tr_arena *a, uintptr_t d, const uint8_t *src, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t w = pwrite(a->mem_fd, src + done, n - done, (off_t)(d + done));
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		done += (size_t)w;
	}
	return 0;
}

int tr_arena_direct(struct tr_arena *a)
{
	if (!a->base)
		return -EINVAL;
	if (a->direct)
		return 0;
	int saved_errno = errno;
	int fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	int rc = fd < 0 ? -errno : 0;
	if (!rc) {
		/* the probe: the arena's first byte written over with itself */
		uint8_t b;
		a->mem_fd = fd;
		if (pread(fd, &b, 1, (off_t)(uintptr_t)a->base) != 1)
			rc = -EIO;
		else
			rc = patch_direct(a, (uintptr_t)a->base, &b, 1);
		if (rc) {
			close(fd);
			a->mem_fd = -1;
		}
	}
	a->direct = !rc;
	errno = saved_errno;
	return rc;
}

int tr_patch(struct tr_arena *a, void *dst, const void *src, size_t n)
{
	uintptr_t d = (uintptr_t)dst, b = (uintptr_t)a->base;
	if (!a->base || d < b || d > b + a->size || n > b + a->size - d)
		return -EINVAL;
	if (!n)
		return 0;
	int saved_errno = errno;
	int ret = 0;
	if (a->direct) {
		if (!patch_direct(a, d, src, n))
			goto done;
		/* refused now: mprotect from here on, writing every byte again */
		close(a->mem_fd);
		a->mem_fd = -1;
		a->direct = false;
	}
	uintptr_t lo = d & ~(uintptr_t)(a->page - 1);
	uintptr_t hi = (d + n + a->page - 1) & ~(uintptr_t)(a->page - 1);
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE)) {
		ret = -errno;
		goto out;
	}
	/* A byte loop, not memcpy: nothing here may depend on libc being reentrant. */
	volatile uint8_t *to = dst;
	const uint8_t *from = src;
	for (size_t i = 0; i < n; i++)
		to[i] = from[i];
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC)) {
		ret = -errno;
		goto out;
	}
done:
	__builtin___clear_cache((char *)dst, (char *)dst + n);
out:
	errno = saved_errno;
	return ret;
}

void tr_arena_fini(struct tr_arena *a)
{
	if (a->base)
		munmap(a->base, a->size);
	if (a->direct)
		close(a->mem_fd);
	a->direct = false;
	a->mem_fd = -1;
	a->base = NULL;
	a->size = a->used = 0;
}
