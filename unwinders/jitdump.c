/* Strict jitdump reader: perf's semantics, every length checked. */
#include "jitdump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define JD_HDR_SIZE 40
#define JD_PREFIX 16
#define JD_LOAD_FIXED 56
#define JD_UNWIND_FIXED 40
#define JD_MAX_RECORDS (1u << 24)

static int jd_fail(struct jd_err *err, uint64_t off, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		err->offset = off;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return -1;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static int jd_push(void **arr, size_t *n, size_t *cap, size_t elem)
{
	if (*n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, nc * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

int jd_parse_mem(struct jd_file *f, const uint8_t *data, size_t size, struct jd_err *err)
{
	size_t rcap = 0, lcap = 0;
	f->data = data;
	f->size = size;
	if (size < JD_HDR_SIZE)
		return jd_fail(err, 0, "file of %zu bytes is shorter than the 40-byte jitdump header", size);
	uint32_t magic = rd32(data);
	if (magic != JD_MAGIC) {
		if (magic == __builtin_bswap32(JD_MAGIC))
			return jd_fail(err, 0, "byte-swapped jitdump (magic 0x%08x): only host byte order is supported", magic);
		return jd_fail(err, 0, "bad magic 0x%08x, expected 0x4a695444 (\"JiTD\")", magic);
	}
	f->version = rd32(data + 4);
	f->total_size = rd32(data + 8);
	f->elf_mach = rd32(data + 12);
	f->pid = rd32(data + 20);
	f->timestamp = rd64(data + 24);
	f->flags = rd64(data + 32);
	if (f->version != 1)
		return jd_fail(err, 4, "version %u, expected 1 (perf rejects versions above 1)", f->version);
	if (f->total_size < JD_HDR_SIZE || f->total_size > size)
		return jd_fail(err, 8, "header total_size %u, expected 40..%zu", f->total_size, size);
	if (f->flags & ~1ull)
		return jd_fail(err, 32, "unknown header flags 0x%llx (perf rejects every bit but ARCH_TIMESTAMP)",
			       (unsigned long long)f->flags);

	const uint8_t *pend_unwind = NULL;
	uint64_t pend_off = 0, pend_usize = 0, pend_hsize = 0, pend_msize = 0;
	size_t off = f->total_size;
	while (off < size) {
		if (f->nrecs >= JD_MAX_RECORDS)
			return jd_fail(err, off, "more than %u records", JD_MAX_RECORDS);
		if (size - off < JD_PREFIX)
			return jd_fail(err, off, "truncated record prefix: %zu bytes left, expected 16", size - off);
		struct jd_record r = { .file_off = off, .id = rd32(data + off),
				       .total_size = rd32(data + off + 4), .timestamp = rd64(data + off + 8) };
		if (r.total_size < JD_PREFIX)
			return jd_fail(err, off + 4, "record total_size %u is smaller than the 16-byte prefix", r.total_size);
		if (r.total_size > size - off)
			return jd_fail(err, off + 4, "record total_size %u runs past the end of the file (%zu bytes left)",
				       r.total_size, size - off);
		if (jd_push((void **)&f->recs, &f->nrecs, &rcap, sizeof(r)))
			return jd_fail(err, off, "out of memory");
		f->recs[f->nrecs++] = r;
		const uint8_t *p = data + off;
		switch (r.id) {
		case JD_CODE_LOAD: {
			if (r.total_size < JD_LOAD_FIXED + 1)
				return jd_fail(err, off + 4, "CODE_LOAD total_size %u, expected at least 57", r.total_size);
			struct jd_load l = { .file_off = off, .timestamp = r.timestamp,
					     .pid = rd32(p + 16), .tid = rd32(p + 20), .vma = rd64(p + 24),
					     .code_addr = rd64(p + 32), .code_size = rd64(p + 40),
					     .code_index = rd64(p + 48) };
			const uint8_t *name = p + JD_LOAD_FIXED;
			size_t room = r.total_size - JD_LOAD_FIXED;
			const uint8_t *nul = memchr(name, 0, room);
			if (!nul)
				return jd_fail(err, off + JD_LOAD_FIXED, "CODE_LOAD name is not NUL-terminated inside the record");
			size_t namelen = (size_t)(nul - name) + 1;
			if (l.code_size > room - namelen)
				return jd_fail(err, off + 40, "CODE_LOAD code_size %llu does not fit the record (%zu bytes after the name)",
					       (unsigned long long)l.code_size, room - namelen);
			if (l.code_addr + l.code_size < l.code_addr)
				return jd_fail(err, off + 32, "CODE_LOAD code_addr + code_size overflows");
			l.name = (const char *)name;
			/* perf takes the code as the LAST code_size bytes of the record */
			l.code = p + r.total_size - l.code_size;
			if (pend_unwind) {
				l.has_unwind = true;
				l.unwind = pend_unwind;
				l.unwind_file_off = pend_off;
				l.unwinding_size = pend_usize;
				l.eh_frame_hdr_size = pend_hsize;
				l.mapped_size = pend_msize;
				/* perf clears it only when eh_frame_hdr_size != 0 */
				if (pend_hsize)
					pend_unwind = NULL;
			}
			if (jd_push((void **)&f->loads, &f->nloads, &lcap, sizeof(l)))
				return jd_fail(err, off, "out of memory");
			f->loads[f->nloads++] = l;
			break;
		}
		case JD_CODE_UNWINDING_INFO: {
			if (r.total_size < JD_UNWIND_FIXED)
				return jd_fail(err, off + 4, "CODE_UNWINDING_INFO total_size %u, expected at least 40", r.total_size);
			uint64_t us = rd64(p + 16), hs = rd64(p + 24), ms = rd64(p + 32);
			if (us > r.total_size - JD_UNWIND_FIXED)
				return jd_fail(err, off + 16, "unwinding_size %llu runs past the record (%u bytes of data)",
					       (unsigned long long)us, r.total_size - JD_UNWIND_FIXED);
			if (hs > us)
				return jd_fail(err, off + 24, "eh_frame_hdr_size %llu is larger than unwinding_size %llu",
					       (unsigned long long)hs, (unsigned long long)us);
			if (pend_unwind)
				f->nunwind_lost++;
			pend_unwind = p + JD_UNWIND_FIXED;
			pend_off = off;
			pend_usize = us;
			pend_hsize = hs;
			pend_msize = ms;
			break;
		}
		case JD_CODE_MOVE:
			if (r.total_size < 64)
				return jd_fail(err, off + 4, "CODE_MOVE total_size %u, expected 64", r.total_size);
			break;
		case JD_CODE_DEBUG_INFO:
			if (r.total_size < 32)
				return jd_fail(err, off + 4, "CODE_DEBUG_INFO total_size %u, expected at least 32", r.total_size);
			break;
		case JD_CODE_CLOSE:
		default:
			break;
		}
		off += r.total_size;
	}
	if (pend_unwind && f->nloads && f->loads[f->nloads - 1].unwind != pend_unwind)
		f->nunwind_lost++;
	else if (pend_unwind && !f->nloads)
		f->nunwind_lost++;
	return 0;
}

int jd_open(struct jd_file *f, const char *path, struct jd_err *err)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return jd_fail(err, 0, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return jd_fail(err, 0, "cannot stat: %s", strerror(errno));
	}
	if (st.st_size == 0) {
		close(fd);
		return jd_fail(err, 0, "empty file, expected a 40-byte jitdump header");
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return jd_fail(err, 0, "cannot mmap: %s", strerror(errno));
	int rc = jd_parse_mem(f, m, (size_t)st.st_size, err);
	f->data = m;
	f->size = (size_t)st.st_size;
	if (rc) {
		jd_close(f);
		return -1;
	}
	return 0;
}

void jd_close(struct jd_file *f)
{
	if (f->data && f->path[0])
		munmap((void *)f->data, f->size);
	free(f->recs);
	free(f->loads);
	f->recs = NULL;
	f->loads = NULL;
	f->data = NULL;
}
