/* perf.data writer (format in perfdata.h): a cursor over one growing buffer with
 * back-patched lengths and offsets. */
#include "unwinders/model/perfdata.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "juerr.h"

/* ---- writer: cursor helpers ---- */

static void b_reserve(struct pd_buf *b, size_t n)
{
	if (b->err || b->cap - b->len >= n)
		return;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			b->err = -ENOMEM;
			return;
		}
		cap *= 2;
	}
	uint8_t *p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void b_bytes(struct pd_buf *b, const void *src, size_t n)
{
	b_reserve(b, n);
	if (b->err)
		return;
	if (n)
		memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void b_zero(struct pd_buf *b, size_t n)
{
	b_reserve(b, n);
	if (b->err)
		return;
	memset(b->p + b->len, 0, n);
	b->len += n;
}

static void le_put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void b_le(struct pd_buf *b, uint64_t v, int n)
{
	uint8_t t[8];
	le_put(t, v, n);
	b_bytes(b, t, (size_t)n);
}

static void b_u16(struct pd_buf *b, uint16_t v) { b_le(b, v, 2); }
static void b_u32(struct pd_buf *b, uint32_t v) { b_le(b, v, 4); }
static void b_u64(struct pd_buf *b, uint64_t v) { b_le(b, v, 8); }

static void b_patch(struct pd_buf *b, size_t at, uint64_t v, int n)
{
	if (!b->err && at + (size_t)n <= b->len)
		le_put(b->p + at, v, n);
}

static void b_align(struct pd_buf *b, size_t a)
{
	b_zero(b, (a - b->len % a) % a);
}

/* A string NUL-terminated and zero-padded to a multiple of `align`. */
static void b_padded_str(struct pd_buf *b, const char *s, size_t align)
{
	size_t n = strlen(s) + 1;
	b_bytes(b, s, n);
	b_zero(b, (align - n % align) % align);
}

/* ---- writer: records ---- */

static size_t ev_begin(struct pd_writer *w, uint32_t type, uint16_t misc)
{
	size_t at = w->b.len;
	b_u32(&w->b, type);
	b_u16(&w->b, misc);
	b_u16(&w->b, 0);             /* size, patched by ev_end */
	return at;
}

static void ev_end(struct pd_writer *w, size_t at)
{
	b_align(&w->b, 8);
	size_t n = w->b.len - at;
	if (n > PD_MAX_EVENT && !w->b.err)
		w->b.err = -E2BIG;   /* header.size is 16 bits */
	b_patch(&w->b, at + 6, n, 2);
}

/* sample_id_all: the identity fields after the payload (perf_event.h struct sample_id) */
static void ev_sample_id(struct pd_writer *w, uint32_t pid, uint32_t tid, uint64_t time)
{
	uint64_t st = w->attr.sample_type;
	if (st & PD_SAMPLE_TID) {
		b_u32(&w->b, pid);
		b_u32(&w->b, tid);
	}
	if (st & PD_SAMPLE_TIME)
		b_u64(&w->b, time);
	if (st & PD_SAMPLE_ID)
		b_u64(&w->b, 0);
	if (st & PD_SAMPLE_STREAM_ID)
		b_u64(&w->b, 0);
	if (st & PD_SAMPLE_CPU)
		b_u64(&w->b, 0);
	if (st & PD_SAMPLE_IDENTIFIER)
		b_u64(&w->b, 0);
}

static void note_time(struct pd_writer *w, uint64_t t)
{
	if (!w->first_time || t < w->first_time)
		w->first_time = t;
	if (t > w->last_time)
		w->last_time = t;
}

/* perf_event_attr up to attr_size bytes, field by field (perf_event.h) */
static void put_attr(struct pd_buf *b, const struct pd_attr *a)
{
	size_t at = b->len;
	b_u32(b, a->type);
	b_u32(b, a->size);
	b_u64(b, a->config);
	b_u64(b, a->sample_period);
	b_u64(b, a->sample_type);
	b_u64(b, a->read_format);
	b_u64(b, a->flags);
	b_u32(b, a->wakeup_events);
	b_u32(b, a->bp_type);
	b_u64(b, a->config1);
	b_u64(b, a->config2);                 /* VER1: 72 */
	b_u64(b, a->branch_sample_type);      /* VER2: 80 */
	b_u64(b, a->sample_regs_user);
	b_u32(b, a->sample_stack_user);
	b_u32(b, (uint32_t)a->clockid);       /* VER3: 96 */
	b_u64(b, a->sample_regs_intr);        /* VER4: 104 */
	b_u32(b, a->aux_watermark);
	b_u16(b, a->sample_max_stack);
	b_u16(b, 0);                          /* VER5: 112 */
	b_u32(b, a->aux_sample_size);
	b_u32(b, 0);                          /* VER6: 120 */
	b_u64(b, a->sig_data);                /* VER7: 128 */
	b_u64(b, a->config3);                 /* VER8: 136 */
	if (!b->err)
		b->len = at + a->size;        /* the fields this ABI revision has */
}

int pd_writer_init(struct pd_writer *w, const struct pd_writer_opts *o)
{
	memset(w, 0, sizeof(*w));
	switch (o->attr_size) {
	case PD_ATTR_SIZE_VER5: case PD_ATTR_SIZE_VER6: case PD_ATTR_SIZE_VER7: case PD_ATTR_SIZE_VER8:
		break;
	default:
		return -EINVAL;
	}
	if (o->sample_type & ~(uint64_t)(PD_SAMPLE_IP | PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_CALLCHAIN |
					 PD_SAMPLE_PERIOD | PD_SAMPLE_REGS_USER | PD_SAMPLE_STACK_USER))
		return -EINVAL;
	if (o->stack_size % 8 || o->stack_size > 65528)
		return -EINVAL;
	struct pd_attr *a = &w->attr;
	a->type = 1;                  /* PERF_TYPE_SOFTWARE */
	a->config = 0;                /* PERF_COUNT_SW_CPU_CLOCK: the event perf-e2e records */
	a->size = o->attr_size;
	a->sample_period = 1;
	a->sample_type = o->sample_type;
	a->sample_regs_user = o->regs_mask;
	a->sample_stack_user = o->stack_size;
	a->clockid = 1;               /* CLOCK_MONOTONIC: perf record -k 1, as jitdump needs */
	a->sample_max_stack = 127;
	static const int bits[] = { PD_ATTR_DISABLED, PD_ATTR_INHERIT, PD_ATTR_EXCLUDE_KERNEL,
				    PD_ATTR_EXCLUDE_HV, PD_ATTR_MMAP, PD_ATTR_COMM, PD_ATTR_ENABLE_ON_EXEC,
				    PD_ATTR_TASK, PD_ATTR_SAMPLE_ID_ALL, PD_ATTR_MMAP2, PD_ATTR_COMM_EXEC,
				    PD_ATTR_USE_CLOCKID };
	for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
		a->flags |= 1ull << bits[i];
	/* --call-graph dwarf: the user stack instead of the kernel's user
	 * callchain, and data mappings too; --call-graph fp: neither */
	if (o->sample_type & PD_SAMPLE_STACK_USER)
		a->flags |= 1ull << PD_ATTR_EXCLUDE_CALLCHAIN_USER | 1ull << PD_ATTR_MMAP_DATA;

	struct pd_buf *b = &w->b;
	b_bytes(b, PD_MAGIC, 8);
	b_u64(b, PD_HEADER_SIZE);
	b_u64(b, (uint64_t)a->size + 16);     /* perf_file_attr: the attr and its ids section */
	w->attrs_at = b->len;
	b_zero(b, PD_HEADER_SIZE - b->len);   /* sections and flags, patched by pd_w_finish */
	size_t attrs_off = b->len;
	put_attr(b, a);
	b_u64(b, attrs_off);                  /* ids: none, one event */
	b_u64(b, 0);
	b_patch(b, w->attrs_at, attrs_off, 8);
	b_patch(b, w->attrs_at + 8, b->len - attrs_off, 8);
	w->data_at = b->len;
	return b->err;
}

void pd_writer_free(struct pd_writer *w)
{
	free(w->b.p);
	free(w->bids);
	memset(w, 0, sizeof(*w));
}

void pd_w_comm(struct pd_writer *w, uint32_t pid, uint32_t tid, const char *comm, uint64_t time)
{
	size_t at = ev_begin(w, PD_REC_COMM, PD_MISC_USER);
	b_u32(&w->b, pid);
	b_u32(&w->b, tid);
	b_padded_str(&w->b, comm, 8);
	ev_sample_id(w, pid, tid, time);
	ev_end(w, at);
	note_time(w, time);
}

void pd_w_mmap2(struct pd_writer *w, const struct pd_mmap2 *m)
{
	uint16_t misc = m->misc | (m->has_build_id ? PD_MISC_MMAP_BUILD_ID : 0);
	size_t at = ev_begin(w, PD_REC_MMAP2, misc);
	struct pd_buf *b = &w->b;
	b_u32(b, m->pid);
	b_u32(b, m->tid);
	b_u64(b, m->start);
	b_u64(b, m->len);
	b_u64(b, m->pgoff);
	if (m->has_build_id) {
		uint8_t n = m->build_id_size > PD_BUILD_ID_MAX ? PD_BUILD_ID_MAX : m->build_id_size;
		b_le(b, n, 1);
		b_zero(b, 3);
		b_bytes(b, m->build_id, n);
		b_zero(b, PD_BUILD_ID_MAX - n);
	} else {
		b_u32(b, m->maj);
		b_u32(b, m->min);
		b_u64(b, m->ino);
		b_u64(b, m->ino_generation);
	}
	b_u32(b, m->prot);
	b_u32(b, m->flags);
	b_padded_str(b, m->filename, 8);
	ev_sample_id(w, m->pid, m->tid, m->time);
	ev_end(w, at);
	note_time(w, m->time);
}

void pd_w_sample(struct pd_writer *w, const struct pd_sample *s)
{
	const struct pd_attr *a = &w->attr;
	uint64_t st = a->sample_type;
	struct pd_buf *b = &w->b;
	size_t at = ev_begin(w, PD_REC_SAMPLE, s->misc ? s->misc : PD_MISC_USER);
	if (st & PD_SAMPLE_IP)
		b_u64(b, s->ip);
	if (st & PD_SAMPLE_TID) {
		b_u32(b, s->pid);
		b_u32(b, s->tid);
	}
	if (st & PD_SAMPLE_TIME)
		b_u64(b, s->time);
	if (st & PD_SAMPLE_PERIOD)
		b_u64(b, s->period);
	if (st & PD_SAMPLE_CALLCHAIN) {
		b_u64(b, s->nr);
		for (uint64_t i = 0; i < s->nr; i++)
			b_u64(b, s->ips_w[i]);
	}
	if (st & PD_SAMPLE_REGS_USER) {
		/* the attr's mask decides the layout: a register the sample lacks is 0 */
		b_u64(b, s->abi);
		for (int bit = 0; s->abi && bit < 64; bit++)
			if (a->sample_regs_user >> bit & 1)
				b_u64(b, s->mask >> bit & 1 ? s->regs[bit] : 0);
	}
	if (st & PD_SAMPLE_STACK_USER) {
		uint64_t size = a->sample_stack_user;
		/* the kernel's perf_sample_ustack_size: a dump that would overflow the
		 * 16-bit record size shrinks to fit (header so far + size + dyn_size) */
		uint64_t hs = (uint64_t)(b->len - at) + 2 * sizeof(uint64_t);
		if (size && hs + size > UINT16_MAX)
			size = (UINT16_MAX - hs - sizeof(uint64_t) + 7) & ~UINT64_C(7);
		uint64_t dyn = s->dyn_size < size ? s->dyn_size : size;
		b_u64(b, size);
		if (size) {
			b_bytes(b, s->stack, (size_t)dyn);
			b_zero(b, (size_t)(size - dyn));
			b_u64(b, dyn);
		}
	}
	ev_end(w, at);
	note_time(w, s->time);
	w->nsamples++;
}

void pd_w_finished_round(struct pd_writer *w)
{
	size_t at = ev_begin(w, PD_REC_FINISHED_ROUND, 0);
	ev_end(w, at);
}

void pd_w_build_id(struct pd_writer *w, const char *path, const uint8_t *id, uint8_t size)
{
	if (w->b.err)
		return;
	if (w->nbids == w->bcap) {
		size_t cap = w->bcap ? w->bcap * 2 : 16;
		struct pd_build_id *n = realloc(w->bids, cap * sizeof(*n));
		if (!n) {
			w->b.err = -ENOMEM;
			return;
		}
		w->bids = n;
		w->bcap = cap;
	}
	struct pd_build_id *e = &w->bids[w->nbids++];
	memset(e, 0, sizeof(*e));
	snprintf(e->path, sizeof(e->path), "%s", path);
	e->size = size > PD_BUILD_ID_MAX ? PD_BUILD_ID_MAX : size;
	memcpy(e->id, id, e->size);
}

/* perf_header_string: u32 length (padded), the string, zeros */
static void feat_string(struct pd_buf *b, const char *s)
{
	size_t n = strlen(s) + 1;
	size_t len = (n + PD_NAME_ALIGN - 1) / PD_NAME_ALIGN * PD_NAME_ALIGN;
	b_u32(b, (uint32_t)len);
	b_bytes(b, s, n);
	b_zero(b, len - n);
}

/* HEADER_BUILD_ID: one build_id_event per DSO, of the host machine (pid -1) */
static void feat_build_ids(struct pd_writer *w)
{
	struct pd_buf *b = &w->b;
	for (size_t i = 0; i < w->nbids; i++) {
		const struct pd_build_id *e = &w->bids[i];
		size_t at = b->len;
		b_u32(b, 0);
		b_u16(b, PD_MISC_USER | PD_MISC_BUILD_ID_SIZE);
		b_u16(b, 0);                  /* size, patched below */
		b_u32(b, 0xffffffffu);        /* pid: HOST_KERNEL_ID */
		b_bytes(b, e->id, e->size);
		b_zero(b, PD_BUILD_ID_MAX - e->size);
		b_le(b, e->size, 1);
		b_zero(b, 3);
		b_padded_str(b, e->path, PD_NAME_ALIGN);
		b_patch(b, at + 6, b->len - at, 2);
	}
}

static void feat_payload(struct pd_writer *w, int bit, const struct pd_features *ft)
{
	struct pd_buf *b = &w->b;
	switch (bit) {
	case PD_FEAT_BUILD_ID: feat_build_ids(w); break;
	case PD_FEAT_HOSTNAME: feat_string(b, ft->hostname); break;
	case PD_FEAT_OSRELEASE: feat_string(b, ft->osrelease); break;
	case PD_FEAT_VERSION: feat_string(b, ft->version); break;
	case PD_FEAT_ARCH: feat_string(b, ft->arch); break;
	case PD_FEAT_NRCPUS:
		b_u32(b, ft->nr_cpus);
		b_u32(b, ft->nr_cpus);
		break;
	case PD_FEAT_CPUID: feat_string(b, ft->cpuid); break;
	case PD_FEAT_SAMPLE_TIME:
		b_u64(b, w->first_time);
		b_u64(b, w->last_time);
		break;
	case PD_FEAT_CLOCKID:
		b_u64(b, 1);                  /* CLOCK_MONOTONIC's resolution in ns */
		break;
	default: break;
	}
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t done = 0;
	while (done < n) {
		ssize_t r = write(fd, p + done, n - done);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? -errno : -EIO;
			close(fd);
			return e;
		}
		done += (size_t)r;
	}
	return close(fd) < 0 ? -errno : 0;
}

int pd_w_finish(struct pd_writer *w, const struct pd_features *ft, const char *path,
		struct ju_err *err)
{
	struct pd_buf *b = &w->b;
	size_t data_end = b->len;
	b_patch(b, w->attrs_at + 16, w->data_at, 8);
	b_patch(b, w->attrs_at + 24, data_end - w->data_at, 8);
	/* features: a table of sections in bit order, then the payloads */
	int all[] = { PD_FEAT_BUILD_ID, PD_FEAT_HOSTNAME, PD_FEAT_OSRELEASE, PD_FEAT_VERSION,
		      PD_FEAT_ARCH, PD_FEAT_NRCPUS, PD_FEAT_CPUID, PD_FEAT_SAMPLE_TIME, PD_FEAT_CLOCKID };
	int bits[sizeof(all) / sizeof(all[0])], nb = 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (all[i] != PD_FEAT_CPUID || ft->cpuid)
			bits[nb++] = all[i];
	size_t table = b->len;
	b_zero(b, (size_t)nb * 16);
	for (int i = 0; i < nb; i++) {
		size_t start = b->len;
		feat_payload(w, bits[i], ft);
		b_patch(b, table + 16 * (size_t)i, start, 8);
		b_patch(b, table + 16 * (size_t)i + 8, b->len - start, 8);
		/* flags bitmap at header offset 72 (after magic, size, attr_size, 3 sections) */
		size_t word = w->attrs_at + 48 + 8 * (size_t)(bits[i] / 64);
		uint64_t cur = b->err ? 0 : pd_u64(b->p + word);
		b_patch(b, word, cur | 1ull << (bits[i] % 64), 8);
	}
	if (b->err) {
		ju_errf(err, EINVAL, 0, "%s: cannot build the perf.data: %s", path ? path : "perf.data", strerror(-b->err));
		return b->err;
	}
	if (!path)
		return 0;                     /* the caller takes the bytes from w->b */
	int rc = write_file(path, b->p, b->len);
	if (rc)
		ju_errf(err, EINVAL, 0, "%s: %s", path, strerror(-rc));
	return rc;
}
