/* jitdump writer (facts section 1) and the perf map beside it.  Fields are
 * host byte order, as perf reads them. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trampolines/tramp.h"

enum {
	JDW_MAGIC = 0x4A695444,     /* "JiTD" */
	JDW_VERSION = 1,
	JDW_HEADER_SIZE = 40,
	JDW_CODE_LOAD = 0,
	JDW_CODE_MOVE = 1,
	JDW_CODE_CLOSE = 3,
	JDW_CODE_UNWINDING_INFO = 4,
	JDW_PREFIX_SIZE = 16,
	JDW_LOAD_FIXED = 56,
	JDW_MOVE_SIZE = 64,            /* prefix, pid, tid, vma, old, new, size, index */
	JDW_UNWIND_FIXED = 40,
};

uint64_t jdw_timestamp(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Host-order field stores into a record buffer. */
static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* One record in one writev (a JIT emits thousands; a write per field
 * would be a system call per field).  Partial writes go on from where
 * they stopped. */
static int write_allv(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static const uint8_t jdw_zeros[8];

static void prefix(uint8_t *p, uint32_t id, uint64_t total)
{
	put32(p, id);
	put32(p + 4, (uint32_t)total);
	put64(p + 8, jdw_timestamp());
}

/* Error path of jdw_open: undo without writing anything. */
static void jdw_release(struct jdw *w)
{
	if (w->marker) {
		munmap(w->marker, w->marker_len);
		w->marker = NULL;
	}
	if (w->fd >= 0)
		close(w->fd);
	if (w->map_fd >= 0)
		close(w->map_fd);
	w->fd = -1;
	w->map_fd = -1;
}

int jdw_open(struct jdw *w, const char *dir, uint16_t elf_mach)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->map_fd = -1;
	w->marker = NULL;
	w->pid = (uint32_t)getpid();
	if ((size_t)snprintf(w->dir, sizeof(w->dir), "%s", dir) >= sizeof(w->dir) ||
	    (size_t)snprintf(w->path, sizeof(w->path), "%s/jit-%u.dump", dir, w->pid) >= sizeof(w->path))
		return -ENAMETOOLONG;
	char map_path[4200];
	snprintf(map_path, sizeof(map_path), "%s/perf-%u.map", dir, w->pid);

	int err;
	w->fd = open(w->path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return -errno;
	uint8_t h[JDW_HEADER_SIZE] = { 0 };
	put32(h, JDW_MAGIC);
	put32(h + 4, JDW_VERSION);
	put32(h + 8, JDW_HEADER_SIZE);
	put32(h + 12, elf_mach);
	put32(h + 16, 0);                        /* pad1 */
	put32(h + 20, w->pid);
	put64(h + 24, jdw_timestamp());
	put64(h + 32, 0);                        /* flags: CLOCK_MONOTONIC stamps */
	if ((err = write_all(w->fd, h, sizeof(h))))
		goto fail;
	/* The marker perf record sees as an MMAP event of jit-<pid>.dump. */
	long page = sysconf(_SC_PAGESIZE);
	w->marker_len = page > 0 ? (size_t)page : 4096;
	void *m = mmap(NULL, w->marker_len, PROT_READ | PROT_EXEC, MAP_PRIVATE, w->fd, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	w->marker = m;
	w->map_fd = open(map_path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (w->map_fd < 0) {
		err = -errno;
		goto fail;
	}
	return 0;
fail:
	jdw_release(w);
	return err;
}

int jdw_unwinding_info(struct jdw *w, const uint8_t *data, uint64_t unwinding_size,
		       uint64_t eh_frame_hdr_size, uint64_t mapped_size)
{
	if (eh_frame_hdr_size > unwinding_size)
		return -EINVAL;
	uint64_t pad = (8 - unwinding_size % 8) % 8;
	uint64_t total = JDW_UNWIND_FIXED + unwinding_size + pad;
	if (total > UINT32_MAX)
		return -EFBIG;
	uint8_t r[JDW_UNWIND_FIXED];
	prefix(r, JDW_CODE_UNWINDING_INFO, total);
	put64(r + 16, unwinding_size);
	put64(r + 24, eh_frame_hdr_size);
	put64(r + 32, mapped_size);
	struct iovec iov[3] = { { r, sizeof(r) }, { (void *)data, unwinding_size },
				{ (void *)jdw_zeros, pad } };
	return write_allv(w->fd, iov, 3);
}

int jdw_code_load(struct jdw *w, const char *name, uint64_t code_addr,
		  const uint8_t *code, uint64_t size, uint64_t *index_out)
{
	size_t nlen = strlen(name) + 1;
	/* perf takes the code as the record's last `size` bytes: pad before it. */
	uint64_t pad = (8 - (JDW_LOAD_FIXED + nlen + size) % 8) % 8;
	uint64_t total = JDW_LOAD_FIXED + nlen + pad + size;
	if (total > UINT32_MAX)
		return -EFBIG;
	uint64_t index = w->next_index;
	uint8_t r[JDW_LOAD_FIXED];
	prefix(r, JDW_CODE_LOAD, total);
	put32(r + 16, w->pid);
	put32(r + 20, (uint32_t)syscall(SYS_gettid));
	put64(r + 24, code_addr);                /* vma */
	put64(r + 32, code_addr);
	put64(r + 40, size);
	put64(r + 48, index);
	struct iovec iov[4] = { { r, sizeof(r) }, { (void *)name, nlen }, { (void *)jdw_zeros, pad },
				{ (void *)code, size } };
	int err = write_allv(w->fd, iov, 4);
	if (err)
		return err;
	w->next_index++;
	if (index_out)
		*index_out = index;
	if (w->map_fd >= 0) {
		char line[512];
		int n = snprintf(line, sizeof(line), "%llx %llx %s\n", (unsigned long long)code_addr,
				 (unsigned long long)size, name);
		if (n < 0 || (size_t)n >= sizeof(line))
			return -ENAMETOOLONG;
		if ((err = write_all(w->map_fd, line, (size_t)n)))
			return err;
	}
	return 0;
}

int jdw_code_move(struct jdw *w, uint64_t old_addr, uint64_t new_addr, uint64_t size, uint64_t index)
{
	uint8_t r[JDW_MOVE_SIZE];
	prefix(r, JDW_CODE_MOVE, sizeof(r));
	put32(r + 16, w->pid);
	put32(r + 20, (uint32_t)syscall(SYS_gettid));
	put64(r + 24, new_addr);                 /* vma */
	put64(r + 32, old_addr);
	put64(r + 40, new_addr);
	put64(r + 48, size);
	put64(r + 56, index);
	return write_all(w->fd, r, sizeof(r));
}

int jdw_unmap_marker(struct jdw *w)
{
	int err = 0;
	if (w->marker && munmap(w->marker, w->marker_len))
		err = -errno;
	w->marker = NULL;
	return err;
}

int jdw_close(struct jdw *w)
{
	int err = 0;
	if (w->fd >= 0) {
		uint8_t r[JDW_PREFIX_SIZE];
		prefix(r, JDW_CODE_CLOSE, sizeof(r));
		err = write_all(w->fd, r, sizeof(r));
	}
	if (w->marker && munmap(w->marker, w->marker_len) && !err)
		err = -errno;
	w->marker = NULL;
	if (w->fd >= 0 && close(w->fd) && !err)
		err = -errno;
	if (w->map_fd >= 0 && close(w->map_fd) && !err)
		err = -errno;
	w->fd = -1;
	w->map_fd = -1;
	return err;
}
