/* Strict jitdump reader: perf's semantics over the one walk (jdwalk.c); it
 * refuses what perf refuses or would misread, where lint reports it. */
#include "unwinders/model/jitdump.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define JD_MAX_RECORDS (1u << 24)

/* Every failure here but the system calls' and the allocations' is a
 * malformed dump: -EINVAL. */
#define jd_fail(err, off, ...) ju_errf(err, EINVAL, off, __VA_ARGS__)

static int jd_push(void **arr, size_t *n, size_t *cap, size_t elem)
{
	if (*n < *cap)
		return 0;
	size_t nc = *cap ? *cap * 2 : 16;
	void *p = realloc(*arr, nc * elem);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = nc;
	return 0;
}

static uint32_t jd_u32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

/* The strict reader's wording of why the walk stopped (e from jdwalk.c); the
 * details are read back from the bytes at fault. */
static int walk_fail(struct ju_err *err, const struct ju_err *e, const uint8_t *data, size_t size)
{
	uint64_t rec = e->kind == JDR_SIZE_SMALL || e->kind == JDR_PAST_END ? e->offset - JD_REC_TOTAL_SIZE :
		       e->offset;
	size_t left = rec <= size ? size - (size_t)rec : 0;
	uint32_t rsize = rec + 8 <= size ? jd_u32(data + rec + 4) : 0;
	switch (e->kind) {
	case JDR_SHORT_HEADER:
		return jd_fail(err, 0, "file of %zu bytes is shorter than the 40-byte jitdump header", size);
	case JDR_SWAPPED:
		return jd_fail(err, 0, "byte-swapped jitdump (magic 0x%08x): only host byte order is supported",
			       jd_u32(data));
	case JDR_BAD_MAGIC:
		return jd_fail(err, 0, "bad magic 0x%08x, expected 0x4a695444 (\"JiTD\")", jd_u32(data));
	case JDR_PREFIX_TRUNCATED:
		return jd_fail(err, e->offset, "truncated record prefix: %zu bytes left, expected 16", left);
	case JDR_SIZE_SMALL:
		return jd_fail(err, e->offset, "record total_size %u is smaller than the 16-byte prefix", rsize);
	case JDR_PAST_END:
		return jd_fail(err, e->offset, "record total_size %u runs past the end of the file (%zu bytes left)",
			       rsize, left);
	}
	return jd_fail(err, e->offset, "unreadable");
}

/* The header fields perf rejects a dump for; the walk checked size and magic. */
static int check_header(struct jd_file *f, const struct jdr_hdr *h, size_t size, struct ju_err *err)
{
	f->version = h->version;
	f->total_size = h->total_size;
	f->elf_mach = h->elf_mach;
	f->pid = h->pid;
	f->timestamp = h->timestamp;
	f->flags = h->flags;
	if (f->version != 1)
		return jd_fail(err, JD_HDR_VERSION, "version %u, expected 1 (perf rejects versions above 1)", f->version);
	if (f->total_size < JD_HDR_SIZE || f->total_size > size)
		return jd_fail(err, JD_HDR_TOTAL_SIZE, "header total_size %u, expected 40..%zu", f->total_size, size);
	if (f->flags & ~JD_FLAGS_ARCH_TIMESTAMP)
		return jd_fail(err, JD_HDR_FLAGS, "unknown header flags 0x%llx (perf rejects every bit but ARCH_TIMESTAMP)",
			       (unsigned long long)f->flags);
	return 0;
}

/* A CODE_LOAD as the strict reader keeps it, with the info perf attaches. */
static int take_load(struct jd_file *f, size_t *lcap, const struct jdr_rec *r, const struct jdr_unw *u,
		     uint64_t uoff, struct ju_err *err)
{
	const struct jdr_load *w = &r->u.load;
	uint64_t off = r->off;
	if (r->short_fixed)
		return jd_fail(err, off + JD_REC_TOTAL_SIZE, "CODE_LOAD total_size %u, expected at least 57", r->size);
	if (!w->name)
		return jd_fail(err, off + JD_LOAD_FIXED, "CODE_LOAD name is not NUL-terminated inside the record");
	if (!w->code)
		return jd_fail(err, off + JD_LOAD_CODE_SIZE, "CODE_LOAD code_size %llu does not fit the record (%zu bytes after the name)",
			       (unsigned long long)w->code_size, (size_t)r->size - JD_LOAD_FIXED - w->name_len - 1);
	if (w->code_addr + w->code_size < w->code_addr)
		return jd_fail(err, off + JD_LOAD_CODE_ADDR, "CODE_LOAD code_addr + code_size overflows");
	struct jd_load l = { .file_off = off, .timestamp = r->timestamp, .pid = w->pid, .tid = w->tid,
			     .vma = w->vma, .code_addr = w->code_addr, .code_size = w->code_size,
			     .code_index = w->code_index, .name = w->name, .code = w->code };
	if (u) {
		l.has_unwind = true;
		l.unwind = u->data;
		l.unwind_file_off = uoff;
		l.unwinding_size = u->unwinding_size;
		l.eh_frame_hdr_size = u->eh_frame_hdr_size;
		l.mapped_size = u->mapped_size;
	}
	if (jd_push((void **)&f->loads, &f->nloads, lcap, sizeof(l)))
		return ju_errf(err, ENOMEM, off, "out of memory");
	f->loads[f->nloads++] = l;
	return 0;
}

/* A CODE_MOVE with the mapped_size perf sizes its map by (the pending
 * UNWINDING_INFO's: jit_repipe_code_move reads jd->unwinding_mapped_size). */
static int take_move(struct jd_file *f, size_t *mcap, const struct jdr_rec *r, const struct jdr_pending *ps,
		     struct ju_err *err)
{
	const struct jdr_move *w = &r->u.move;
	if (w->new_code_addr + w->code_size < w->new_code_addr)
		return jd_fail(err, r->off + JD_MOVE_NEW_CODE_ADDR, "CODE_MOVE new_code_addr + code_size overflows");
	struct jd_move m = { .file_off = r->off, .timestamp = r->timestamp, .pid = w->pid, .tid = w->tid,
			     .vma = w->vma, .old_code_addr = w->old_code_addr, .new_code_addr = w->new_code_addr,
			     .code_size = w->code_size, .code_index = w->code_index,
			     .mapped_size = ps->unw_set ? ps->unw.mapped_size : 0, .nloads_before = f->nloads };
	if (jd_push((void **)&f->moves, &f->nmoves, mcap, sizeof(m)))
		return ju_errf(err, ENOMEM, r->off, "out of memory");
	f->moves[f->nmoves++] = m;
	return 0;
}

/* What perf stops at in a record the walk decoded (fixed parts, sizes). */
static int check_record(const struct jdr_rec *r, struct ju_err *err)
{
	uint64_t off = r->off;
	switch (r->id) {
	case JD_CODE_UNWINDING_INFO: {
		const struct jdr_unw *u = &r->u.unw;
		if (r->short_fixed)
			return jd_fail(err, off + JD_REC_TOTAL_SIZE, "CODE_UNWINDING_INFO total_size %u, expected at least 40", r->size);
		if (u->unwinding_size > u->avail)
			return jd_fail(err, off + JD_UNW_UNWINDING_SIZE, "unwinding_size %llu runs past the record (%zu bytes of data)",
				       (unsigned long long)u->unwinding_size, u->avail);
		if (u->eh_frame_hdr_size > u->unwinding_size)
			return jd_fail(err, off + JD_UNW_EH_FRAME_HDR_SIZE, "eh_frame_hdr_size %llu is larger than unwinding_size %llu",
				       (unsigned long long)u->eh_frame_hdr_size, (unsigned long long)u->unwinding_size);
		return 0;
	}
	case JD_CODE_MOVE:
		if (r->short_fixed)
			return jd_fail(err, off + JD_REC_TOTAL_SIZE, "CODE_MOVE total_size %u, expected 64", r->size);
		return 0;
	case JD_CODE_DEBUG_INFO:
		if (r->short_fixed)
			return jd_fail(err, off + JD_REC_TOTAL_SIZE, "CODE_DEBUG_INFO total_size %u, expected at least 32", r->size);
		return 0;
	default:
		return 0;
	}
}

static int parse_mem(struct jd_file *f, const uint8_t *data, size_t size, struct ju_err *err, struct ju_err *tail);

int jd_parse_mem(struct jd_file *f, const uint8_t *data, size_t size, struct ju_err *err)
{
	return parse_mem(f, data, size, err, NULL);
}

/* tail: a record cut short by the end of the file (perf inject's reader
 * stops there, having used every record before) ends the walk with tail
 * set, not an error; NULL: it is one. */
static int parse_mem(struct jd_file *f, const uint8_t *data, size_t size, struct ju_err *err, struct ju_err *tail)
{
	size_t rcap = 0, lcap = 0, mcap = 0;
	f->data = data;
	f->size = size;
	struct jdr_iter it;
	struct ju_err we;
	if (jdr_init(&it, data, size, &we))
		return walk_fail(err, &we, data, size);
	int rc = check_header(f, &it.hdr, size, err);
	if (rc)
		return rc;
	struct jdr_pending ps;
	memset(&ps, 0, sizeof(ps));
	struct jdr_rec r;
	while ((rc = jdr_next(&it, &r, &we)) > 0) {
		if (f->nrecs >= JD_MAX_RECORDS)
			return jd_fail(err, r.off, "more than %u records", JD_MAX_RECORDS);
		struct jd_record rec = { .file_off = r.off, .id = r.id, .total_size = r.size, .timestamp = r.timestamp };
		if (jd_push((void **)&f->recs, &f->nrecs, &rcap, sizeof(rec)))
			return ju_errf(err, ENOMEM, r.off, "out of memory");
		f->recs[f->nrecs++] = rec;
		if ((rc = check_record(&r, err)))
			return rc;
		if (r.id == JD_CODE_UNWINDING_INFO && ps.unw_set)
			f->nunwind_lost++;    /* replaced, or a sticky one (eh_frame_hdr_size 0) ends */
		if (r.id == JD_CODE_MOVE && (rc = take_move(f, &mcap, &r, &ps, err)))
			return rc;
		const struct jdr_unw *u;
		uint64_t uoff = 0;
		jdr_pending_step(&ps, &r, &u, &uoff, NULL, NULL);
		if (r.id == JD_CODE_LOAD && (rc = take_load(f, &lcap, &r, u, uoff, err)))
			return rc;
	}
	if (rc < 0 && tail && (we.kind == JDR_PAST_END || we.kind == JDR_PREFIX_TRUNCATED))
		walk_fail(tail, &we, data, size);
	else if (rc < 0)
		return walk_fail(err, &we, data, size);
	if (ps.unw_set && (!f->nloads || f->loads[f->nloads - 1].unwind_file_off != ps.unw_off ||
			   !f->loads[f->nloads - 1].has_unwind))
		f->nunwind_lost++;
	return 0;
}

#define JD_READ_MAX (1u << 20)   /* read, not mapped, up to this size */

/* The whole file into memory (at least one byte allocated); *size: what was
 * there to read (less if the file shrank).  NULL with errno set. */
static void *jd_read_fd(int fd, size_t *size)
{
	uint8_t *p = malloc(*size ? *size : 1);
	size_t got = 0;
	while (p && got < *size) {
		ssize_t n = pread(fd, p + got, *size - got, (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(p);
			return NULL;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*size = got;
	return p;
}

static int open_ex(struct jd_file *f, const char *path, struct ju_err *err, struct ju_err *tail);

int jd_open(struct jd_file *f, const char *path, struct ju_err *err)
{
	return open_ex(f, path, err, NULL);
}

int jd_open_whole_records(struct jd_file *f, const char *path, struct ju_err *err, struct ju_err *tail)
{
	tail->offset = 0;
	tail->msg[0] = 0;
	return open_ex(f, path, err, tail);
}

static int open_ex(struct jd_file *f, const char *path, struct ju_err *err, struct ju_err *tail)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ju_errf(err, errno, 0, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return ju_errf(err, errno, 0, "cannot stat: %s", strerror(errno));
	}
	if (st.st_size == 0) {
		close(fd);
		return jd_fail(err, 0, "empty file, expected a 40-byte jitdump header");
	}
	size_t size = (size_t)st.st_size;
	void *m;
	bool heap = size <= JD_READ_MAX;
	if (heap) {
		/* a small dump (a case's) is read: unmapping it again would cost a
		 * TLB flush per case, the bulk of its reading on a paravirtualized VM */
		m = jd_read_fd(fd, &size);
		close(fd);
		if (!m)
			return ju_errf(err, errno, 0, "cannot read: %s", strerror(errno));
	} else {
		m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED)
			return ju_errf(err, errno, 0, "cannot mmap: %s", strerror(errno));
	}
	int rc = parse_mem(f, m, size, err, tail);
	f->data = m;
	f->size = size;
	f->heap = heap;
	if (rc) {
		jd_close(f);
		return rc;
	}
	return 0;
}

void jd_close(struct jd_file *f)
{
	if (f->data && f->path[0] && f->heap)
		free((void *)(uintptr_t)f->data);
	else if (f->data && f->path[0])
		munmap((void *)f->data, f->size);
	f->heap = false;
	free(f->recs);
	free(f->loads);
	free(f->moves);
	f->recs = NULL;
	f->loads = NULL;
	f->moves = NULL;
	f->data = NULL;
}
