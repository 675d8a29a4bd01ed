/* perf.data reader (format in perfdata.h; the writer is perfdata_write.c): it
 * trusts nothing: every length is checked against what is left before use. */
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

/* ---- reader ---- */

static uint32_t g32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t g16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* [off, off + n) lies inside [0, size) */
static bool in_file(uint64_t size, uint64_t off, uint64_t n)
{
	return off <= size && n <= size - off;
}

static void get_attr(const uint8_t *p, uint32_t sz, struct pd_attr *a)
{
	uint8_t full[PD_ATTR_SIZE_VER8];
	memset(full, 0, sizeof(full));
	memcpy(full, p, sz < sizeof(full) ? sz : sizeof(full));
	memset(a, 0, sizeof(*a));
	a->type = g32(full);
	a->size = g32(full + 4);
	a->config = pd_u64(full + 8);
	a->sample_period = pd_u64(full + 16);
	a->sample_type = pd_u64(full + 24);
	a->read_format = pd_u64(full + 32);
	a->flags = pd_u64(full + 40);
	a->wakeup_events = g32(full + 48);
	a->bp_type = g32(full + 52);
	a->config1 = pd_u64(full + 56);
	a->config2 = pd_u64(full + 64);
	a->branch_sample_type = pd_u64(full + 72);
	a->sample_regs_user = pd_u64(full + 80);
	a->sample_stack_user = g32(full + 88);
	a->clockid = (int32_t)g32(full + 92);
	a->sample_regs_intr = pd_u64(full + 96);
	a->aux_watermark = g32(full + 104);
	a->sample_max_stack = g16(full + 108);
	a->aux_sample_size = g32(full + 112);
	a->sig_data = pd_u64(full + 120);
	a->config3 = pd_u64(full + 128);
}

static int read_attrs(struct pd_file *f, struct ju_err *err)
{
	const struct pd_section *s = &f->attrs_sec;
	if (!in_file(f->size, s->offset, s->size))
		return ju_err_at(err, EINVAL, f->path, 24, "attrs section [0x%llx, +0x%llx) runs past the end (file size 0x%zx)",
			     (unsigned long long)s->offset, (unsigned long long)s->size, f->size);
	if (f->attr_size < PD_ATTR_SIZE_VER0 + 16 || f->attr_size > 4096 || f->attr_size % 8)
		return ju_err_at(err, EINVAL, f->path, 16, "attr_size %llu, expected a multiple of 8 in %d..4096",
			     (unsigned long long)f->attr_size, PD_ATTR_SIZE_VER0 + 16);
	if (s->size % f->attr_size || s->size / f->attr_size > PD_MAX_ATTRS || !s->size)
		return ju_err_at(err, EINVAL, f->path, 32, "attrs section of %llu bytes is not 1..%d attrs of %llu bytes",
			     (unsigned long long)s->size, PD_MAX_ATTRS, (unsigned long long)f->attr_size);
	f->nattrs = (size_t)(s->size / f->attr_size);
	for (size_t i = 0; i < f->nattrs; i++) {
		uint64_t at = s->offset + i * f->attr_size;
		const uint8_t *p = f->data + at;
		uint32_t sz = g32(p + 4);
		if (sz == 0)
			sz = PD_ATTR_SIZE_VER0;       /* ABI 0: perf assumes the first revision */
		/* the attr's own size must agree with the header's stride */
		if (sz != f->attr_size - 16)
			return ju_err_at(err, EINVAL, f->path, at + 4, "attr size %u, but the header says %llu bytes per attr (+16 for ids)",
				     sz, (unsigned long long)(f->attr_size - 16));
		struct pd_attr *a = &f->attrs[i];
		get_attr(p, sz, a);
		uint64_t ioff = pd_u64(p + sz), isz = pd_u64(p + sz + 8);
		if (isz % 8 || !in_file(f->size, ioff, isz))
			return ju_err_at(err, EINVAL, f->path, at + sz, "attr %zu: ids [0x%llx, +0x%llx) outside the file",
				     i, (unsigned long long)ioff, (unsigned long long)isz);
		a->ids = f->data + ioff;
		a->nids = isz / 8;
		if (a->sample_type & ~(uint64_t)PD_SAMPLE_KNOWN)
			return ju_err_at(err, EINVAL, f->path, at + 24, "attr %zu: sample_type 0x%llx has bits this reader does not know",
				     i, (unsigned long long)a->sample_type);
		if (a->sample_stack_user % 8)
			return ju_err_at(err, EINVAL, f->path, at + 88, "attr %zu: sample_stack_user %u is not a multiple of 8",
				     i, a->sample_stack_user);
	}
	/* several attrs: events are told apart by IDENTIFIER (perf requires it then) */
	for (size_t i = 1; i < f->nattrs; i++)
		if (!(f->attrs[i].sample_type & PD_SAMPLE_IDENTIFIER) || !(f->attrs[0].sample_type & PD_SAMPLE_IDENTIFIER))
			return ju_err_at(err, EINVAL, f->path, s->offset + i * f->attr_size + 24,
				     "%zu attrs without PERF_SAMPLE_IDENTIFIER: events cannot be assigned", f->nattrs);
	return 0;
}

static int read_features(struct pd_file *f, struct ju_err *err)
{
	uint64_t at = f->data_sec.offset + f->data_sec.size;
	for (int bit = 1; bit < PD_FEAT_BITS; bit++) {
		if (!(f->features[bit / 64] >> (bit % 64) & 1))
			continue;
		if (!in_file(f->size, at, 16))
			return ju_err_at(err, EINVAL, f->path, at, "feature table entry for bit %d runs past the end", bit);
		struct pd_section *s = &f->feat[bit];
		s->offset = pd_u64(f->data + at);
		s->size = pd_u64(f->data + at + 8);
		if (!in_file(f->size, s->offset, s->size))
			return ju_err_at(err, EINVAL, f->path, at, "feature %d section [0x%llx, +0x%llx) outside the file",
				     bit, (unsigned long long)s->offset, (unsigned long long)s->size);
		at += 16;
	}
	return 0;
}

int pd_parse_mem(struct pd_file *f, const uint8_t *data, size_t size, const char *path,
		 struct ju_err *err)
{
	memset(f, 0, sizeof(*f));
	snprintf(f->path, sizeof(f->path), "%s", path);
	f->data = data;
	f->size = size;
	if (size < 8 || memcmp(data, PD_MAGIC, 8)) {
		if (size >= 8 && !memcmp(data, PD_MAGIC_SWAPPED, 8))
			return ju_err_at(err, EINVAL, path, 0, "foreign-endian perf.data (byte-swapped magic): not supported");
		if (size >= 8 && !memcmp(data, "PERFFILE", 8))
			return ju_err_at(err, EINVAL, path, 0, "perf.data version 1 (PERFFILE): not supported");
		return ju_err_at(err, EINVAL, path, 0, "not a perf.data file (expected magic \"PERFILE2\")");
	}
	if (size < 16)
		return ju_err_at(err, EINVAL, path, 8, "truncated header: %zu bytes", size);
	f->header_size = pd_u64(data + 8);
	if (f->header_size != PD_HEADER_SIZE && f->header_size != 72)
		return ju_err_at(err, EINVAL, path, 8, "header size %llu, expected %d (or 72 without feature flags)",
			     (unsigned long long)f->header_size, PD_HEADER_SIZE);
	if (size < f->header_size)
		return ju_err_at(err, EINVAL, path, size, "truncated header: %zu bytes of %llu", size,
			     (unsigned long long)f->header_size);
	f->attr_size = pd_u64(data + 16);
	f->attrs_sec = (struct pd_section){ pd_u64(data + 24), pd_u64(data + 32) };
	f->data_sec = (struct pd_section){ pd_u64(data + 40), pd_u64(data + 48) };
	if (f->header_size == PD_HEADER_SIZE)
		for (int i = 0; i < PD_FEAT_BITS / 64; i++)
			f->features[i] = pd_u64(data + 72 + 8 * i);
	if (!in_file(size, f->data_sec.offset, f->data_sec.size))
		return ju_err_at(err, EINVAL, path, 40, "data section [0x%llx, +0x%llx) runs past the end (file size 0x%zx)",
			     (unsigned long long)f->data_sec.offset, (unsigned long long)f->data_sec.size, size);
	int rc = read_attrs(f, err);
	if (!rc)
		rc = read_features(f, err);
	return rc;
}

int pd_open(struct pd_file *f, const char *path, struct ju_err *err)
{
	memset(f, 0, sizeof(*f));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = -errno;
		ju_errf(err, EINVAL, 0, "%s: cannot open: %s", path, strerror(errno));
		return e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		return ju_err_at(err, EINVAL, path, 0, "empty or unreadable file");
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		ju_errf(err, EINVAL, 0, "%s: mmap: %s", path, strerror(errno));
		return -EIO;
	}
	int rc = pd_parse_mem(f, m, (size_t)st.st_size, path, err);
	f->mapped = true;
	if (rc)
		pd_close(f);
	return rc;
}

void pd_close(struct pd_file *f)
{
	if (f->mapped && f->data)
		munmap((void *)(uintptr_t)f->data, f->size);
	memset(f, 0, sizeof(*f));
}

/* A cursor over one record's payload: every take checks what is left. */
struct rcur {
	const uint8_t *p;
	uint64_t left, off;          /* off: file offset of p, for messages */
	bool bad;
};

static const uint8_t *take(struct rcur *c, uint64_t n)
{
	if (c->bad || n > c->left) {
		c->bad = true;
		return NULL;
	}
	const uint8_t *p = c->p;
	c->p += n;
	c->left -= n;
	c->off += n;
	return p;
}

static uint64_t take64(struct rcur *c)
{
	const uint8_t *p = take(c, 8);
	return p ? pd_u64(p) : 0;
}

static const struct pd_attr *attr_by_id(const struct pd_file *f, uint64_t id)
{
	if (f->nattrs == 1)
		return &f->attrs[0];
	for (size_t i = 0; i < f->nattrs; i++)
		for (uint64_t k = 0; k < f->attrs[i].nids && k < (1u << 20); k++)
			if (pd_u64(f->attrs[i].ids + 8 * k) == id)
				return &f->attrs[i];
	return NULL;
}

/* the read_format block of PERF_SAMPLE_READ (perf_event.h struct read_format) */
static void skip_read(struct rcur *c, uint64_t rf)
{
	uint64_t per = 1 + !!(rf & (1u << 2)) + !!(rf & (1u << 4));   /* value, id, lost */
	if (rf & (1u << 3)) {                                          /* GROUP */
		uint64_t nr = take64(c);
		take(c, 8 * (!!(rf & 1u) + !!(rf & 2u)));
		if (nr > c->left / (8 * per))
			c->bad = true;
		else
			take(c, nr * 8 * per);
	} else {
		take(c, 8 * (per + !!(rf & 1u) + !!(rf & 2u)));
	}
}

static void take_regs(struct rcur *c, uint64_t mask, struct pd_sample *s, bool keep)
{
	uint64_t abi = take64(c);
	if (keep) {
		s->abi = abi;
		s->mask = mask;
	}
	if (!abi)
		return;
	for (int bit = 0; bit < 64 && !c->bad; bit++)
		if (mask >> bit & 1) {
			uint64_t v = take64(c);
			if (keep)
				s->regs[bit] = v;
		}
}

/* PERF_RECORD_SAMPLE's body under attr a, fields in perf_event.h order (and
 * the kernel's for the tail); path, rec_off and rec_size name the record in
 * messages. */
static int decode_sample(const struct pd_attr *a, struct rcur *c, struct pd_sample *s, const char *path,
			 uint64_t rec_off, uint32_t rec_size, struct ju_err *err)
{
	uint64_t st = a->sample_type;
	if (st & PD_SAMPLE_IDENTIFIER) s->id = take64(c);
	if (st & PD_SAMPLE_IP) s->ip = take64(c);
	if (st & PD_SAMPLE_TID) {
		const uint8_t *p = take(c, 8);
		if (p) { s->pid = g32(p); s->tid = g32(p + 4); }
	}
	if (st & PD_SAMPLE_TIME) s->time = take64(c);
	if (st & PD_SAMPLE_ADDR) s->addr = take64(c);
	if (st & PD_SAMPLE_ID) s->id = take64(c);
	if (st & PD_SAMPLE_STREAM_ID) s->stream_id = take64(c);
	if (st & PD_SAMPLE_CPU) s->cpu = (uint32_t)take64(c);
	if (st & PD_SAMPLE_PERIOD) s->period = take64(c);
	if (st & PD_SAMPLE_READ) skip_read(c, a->read_format);
	if (st & PD_SAMPLE_CALLCHAIN) {
		uint64_t at = c->off;
		s->nr = take64(c);
		if (!c->bad && s->nr > c->left / 8)
			return ju_err_at(err, EINVAL, path, at, "callchain of %llu entries, only %llu bytes left in the record",
				     (unsigned long long)s->nr, (unsigned long long)c->left);
		s->ips = take(c, s->nr * 8);
	}
	if (st & PD_SAMPLE_RAW) {
		const uint8_t *p = take(c, 4);
		if (p) take(c, g32(p));
	}
	if (st & PD_SAMPLE_BRANCH_STACK) {
		uint64_t nr = take64(c);
		if (a->branch_sample_type & (1u << 17)) take64(c);      /* HW_INDEX */
		if (nr > c->left / 24) c->bad = true; else take(c, nr * 24);
	}
	if (st & PD_SAMPLE_REGS_USER) take_regs(c, a->sample_regs_user, s, true);
	if (st & PD_SAMPLE_STACK_USER) {
		uint64_t at = c->off;
		s->stack_size = take64(c);
		if (!c->bad && s->stack_size > c->left)
			return ju_err_at(err, EINVAL, path, at, "user stack of %llu bytes, only %llu bytes left in the record",
				     (unsigned long long)s->stack_size, (unsigned long long)c->left);
		if (s->stack_size) {
			s->stack = take(c, s->stack_size);
			uint64_t dat = c->off;
			s->dyn_size = take64(c);
			if (!c->bad && s->dyn_size > s->stack_size)
				return ju_err_at(err, EINVAL, path, dat, "stack dyn_size %llu larger than its size %llu",
					     (unsigned long long)s->dyn_size, (unsigned long long)s->stack_size);
		}
	}
	if (st & (PD_SAMPLE_WEIGHT | PD_SAMPLE_WEIGHT_STRUCT)) take64(c);
	if (st & PD_SAMPLE_DATA_SRC) take64(c);
	if (st & PD_SAMPLE_TRANSACTION) take64(c);
	if (st & PD_SAMPLE_REGS_INTR) take_regs(c, a->sample_regs_intr, s, false);
	if (st & PD_SAMPLE_PHYS_ADDR) take64(c);
	if (st & PD_SAMPLE_CGROUP) take64(c);
	if (st & PD_SAMPLE_DATA_PAGE_SIZE) take64(c);
	if (st & PD_SAMPLE_CODE_PAGE_SIZE) take64(c);
	if (st & PD_SAMPLE_AUX) {
		uint64_t n = take64(c);
		take(c, n);
	}
	if (c->bad)
		return ju_err_at(err, EINVAL, path, rec_off, "sample record of %u bytes is shorter than its sample_type 0x%llx needs",
			     rec_size, (unsigned long long)st);
	return 0;
}

int pd_decode_sample(const struct pd_attr *a, const uint8_t *body, size_t n, uint64_t off, const char *what,
		     struct pd_sample *s, struct ju_err *err)
{
	memset(s, 0, sizeof(*s));
	if (n > PD_MAX_EVENT - 8)
		return ju_err_at(err, EINVAL, what, off, "sample body of %zu bytes, a record holds at most %u",
			     n, PD_MAX_EVENT - 8);
	struct rcur c = { body, n, off, false };
	return decode_sample(a, &c, s, what, off >= 8 ? off - 8 : 0, (uint32_t)n + 8, err);
}

static int parse_sample(const struct pd_file *f, struct rcur *c, struct pd_event *ev, struct ju_err *err)
{
	const struct pd_attr *a = f->nattrs == 1 ? &f->attrs[0] : NULL;
	if (!a) {
		uint64_t id = c->left >= 8 ? pd_u64(c->p) : 0;   /* IDENTIFIER comes first */
		a = attr_by_id(f, id);
		if (!a)
			return ju_err_at(err, EINVAL, f->path, c->off, "sample of event id %llu, which no attr owns", (unsigned long long)id);
	}
	ev->attr = a;
	int rc = decode_sample(a, c, &ev->sample, f->path, ev->offset, ev->size, err);
	if (a->sample_type & PD_SAMPLE_TID) {
		ev->pid = ev->sample.pid;
		ev->tid = ev->sample.tid;
	}
	if (a->sample_type & PD_SAMPLE_TIME)
		ev->time = ev->sample.time;
	return rc;
}

/* sample_id_all: the identity fields at the end of a non-sample record, read backwards */
static int parse_sample_id(const struct pd_file *f, const uint8_t *rec, uint64_t body, struct pd_event *ev,
			   struct ju_err *err)
{
	const struct pd_attr *a = &f->attrs[0];
	if (f->nattrs > 1) {
		if (ev->size < 16)
			return ju_err_at(err, EINVAL, f->path, ev->offset, "record of %u bytes has no room for its sample id", ev->size);
		a = attr_by_id(f, pd_u64(rec + ev->size - 8));
		if (!a)
			return 0;              /* an event perf would not attribute either */
	}
	if (!pd_attr_flag(a, PD_ATTR_SAMPLE_ID_ALL))
		return 0;
	uint64_t st = a->sample_type;
	uint64_t need = 8 * (!!(st & PD_SAMPLE_TID) + !!(st & PD_SAMPLE_TIME) + !!(st & PD_SAMPLE_ID) +
			     !!(st & PD_SAMPLE_STREAM_ID) + !!(st & PD_SAMPLE_CPU) + !!(st & PD_SAMPLE_IDENTIFIER));
	if (need > ev->size - body)
		return ju_err_at(err, EINVAL, f->path, ev->offset, "record of %u bytes: payload %llu + sample id %llu do not fit",
			     ev->size, (unsigned long long)body, (unsigned long long)need);
	const uint8_t *p = rec + ev->size;
	if (st & PD_SAMPLE_IDENTIFIER) p -= 8;
	if (st & PD_SAMPLE_CPU) p -= 8;
	if (st & PD_SAMPLE_STREAM_ID) p -= 8;
	if (st & PD_SAMPLE_ID) p -= 8;
	if (st & PD_SAMPLE_TIME) { p -= 8; ev->time = pd_u64(p); }
	if (st & PD_SAMPLE_TID) { p -= 8; ev->pid = g32(p); ev->tid = g32(p + 4); }
	ev->attr = a;
	return 0;
}

/* NUL-terminated string at rec[at..] before rec[end] */
static int rec_string(const struct pd_file *f, const uint8_t *rec, uint64_t at, uint64_t end, const struct pd_event *ev,
		      const char **s, size_t *len, struct ju_err *err)
{
	if (at >= end)
		return ju_err_at(err, EINVAL, f->path, ev->offset + at, "record of %u bytes too short for its name", ev->size);
	const uint8_t *nul = memchr(rec + at, 0, end - at);
	if (!nul)
		return ju_err_at(err, EINVAL, f->path, ev->offset + at, "name is not NUL-terminated inside its record");
	*s = (const char *)rec + at;
	*len = (size_t)(nul - (rec + at));
	return 0;
}

static int parse_mmap(const struct pd_file *f, const uint8_t *rec, struct pd_event *ev, struct ju_err *err)
{
	bool two = ev->type == PD_REC_MMAP2;
	uint64_t fixed = two ? 8 + 64 : 8 + 32;
	if (ev->size < fixed + 1)
		return ju_err_at(err, EINVAL, f->path, ev->offset, "%s record of %u bytes, expected at least %llu",
			     two ? "MMAP2" : "MMAP", ev->size, (unsigned long long)fixed + 1);
	struct pd_mmap2 *m = &ev->mmap;
	m->pid = g32(rec + 8);
	m->tid = g32(rec + 12);
	m->start = pd_u64(rec + 16);
	m->len = pd_u64(rec + 24);
	m->pgoff = pd_u64(rec + 32);
	m->misc = ev->misc;
	if (two) {
		if (ev->misc & PD_MISC_MMAP_BUILD_ID) {
			m->has_build_id = true;
			m->build_id_size = rec[40] > PD_BUILD_ID_MAX ? PD_BUILD_ID_MAX : rec[40];
			memcpy(m->build_id, rec + 44, PD_BUILD_ID_MAX);
		} else {
			m->maj = g32(rec + 40);
			m->min = g32(rec + 44);
			m->ino = pd_u64(rec + 48);
			m->ino_generation = pd_u64(rec + 56);
		}
		m->prot = g32(rec + 64);
		m->flags = g32(rec + 68);
	}
	int rc = rec_string(f, rec, fixed, ev->size, ev, &m->filename, &ev->name_len, err);
	if (rc)
		return rc;
	uint64_t body = (fixed + ev->name_len + 1 + 7) & ~7ull;
	ev->pid = m->pid;
	ev->tid = m->tid;
	return parse_sample_id(f, rec, body > ev->size ? ev->size : body, ev, err);
}

static int parse_other(const struct pd_file *f, const uint8_t *rec, struct pd_event *ev, struct ju_err *err)
{
	switch (ev->type) {
	case PD_REC_MMAP:
	case PD_REC_MMAP2:
		return parse_mmap(f, rec, ev, err);
	case PD_REC_COMM: {
		if (ev->size < 17)
			return ju_err_at(err, EINVAL, f->path, ev->offset, "COMM record of %u bytes, expected at least 17", ev->size);
		ev->pid = g32(rec + 8);
		ev->tid = g32(rec + 12);
		int rc = rec_string(f, rec, 16, ev->size, ev, &ev->comm, &ev->name_len, err);
		if (rc)
			return rc;
		uint32_t pid = ev->pid, tid = ev->tid;
		rc = parse_sample_id(f, rec, (16 + ev->name_len + 1 + 7) & ~7ull, ev, err);
		ev->pid = pid;                /* the record's own pid/tid win over the id's */
		ev->tid = tid;
		return rc;
	}
	case PD_REC_FORK:
	case PD_REC_EXIT:
		if (ev->size < 32)
			return ju_err_at(err, EINVAL, f->path, ev->offset, "%s record of %u bytes, expected at least 32",
				     ev->type == PD_REC_FORK ? "FORK" : "EXIT", ev->size);
		ev->pid = g32(rec + 8);
		ev->ppid = g32(rec + 12);
		ev->tid = g32(rec + 16);
		ev->ptid = g32(rec + 20);
		ev->time = pd_u64(rec + 24);
		{
			uint32_t pid = ev->pid, tid = ev->tid;
			uint64_t t = ev->time;
			int rc = parse_sample_id(f, rec, 32, ev, err);
			ev->pid = pid;
			ev->tid = tid;
			ev->time = t;
			return rc;
		}
	default:
		return 0;                     /* a record type replay does not need: skipped by its size */
	}
}

int pd_next(const struct pd_file *f, struct pd_iter *it, struct pd_event *ev, struct ju_err *err)
{
	uint64_t start = f->data_sec.offset, end = start + f->data_sec.size;
	if (it->off < start)
		it->off = start;
	if (it->off >= end)
		return 0;
	memset(ev, 0, sizeof(*ev));
	ev->offset = it->off;
	if (end - it->off < 8)
		return ju_err_at(err, EINVAL, f->path, it->off, "truncated record header: %llu bytes left in the data section",
			     (unsigned long long)(end - it->off));
	const uint8_t *rec = f->data + it->off;
	ev->type = g32(rec);
	ev->misc = g16(rec + 4);
	ev->size = g16(rec + 6);
	if (ev->size < 8)
		return ju_err_at(err, EINVAL, f->path, it->off + 6, "record size %u, expected at least 8", ev->size);
	if (ev->size > end - it->off)
		return ju_err_at(err, EINVAL, f->path, it->off + 6, "record size %u runs past the end of the data section (%llu bytes left)",
			     ev->size, (unsigned long long)(end - it->off));
	int rc;
	if (ev->type == PD_REC_SAMPLE) {
		struct rcur c = { rec + 8, ev->size - 8u, it->off + 8, false };
		rc = parse_sample(f, &c, ev, err);
	} else {
		rc = parse_other(f, rec, ev, err);
	}
	if (rc)
		return rc;
	it->off += ev->size;              /* at least 8: the loop over the data is bounded */
	return 1;
}

int pd_feat_string(const struct pd_file *f, int feat, const char **s, struct ju_err *err)
{
	if (feat <= 0 || feat >= PD_FEAT_BITS || !(f->features[feat / 64] >> (feat % 64) & 1))
		return -ENOENT;
	const struct pd_section *sec = &f->feat[feat];
	if (sec->size < 4)
		return ju_err_at(err, EINVAL, f->path, sec->offset, "feature %d: %llu bytes, too short for a string", feat,
			     (unsigned long long)sec->size);
	uint32_t len = g32(f->data + sec->offset);
	if (len > sec->size - 4 || !len || !memchr(f->data + sec->offset + 4, 0, len))
		return ju_err_at(err, EINVAL, f->path, sec->offset, "feature %d: string of %u bytes does not fit its %llu-byte section or has no NUL",
			     feat, len, (unsigned long long)sec->size);
	*s = (const char *)f->data + sec->offset + 4;
	return 0;
}

int pd_feat_build_id(const struct pd_file *f, size_t n, struct pd_build_id *out, uint16_t *misc,
		     struct ju_err *err)
{
	if (!(f->features[0] >> PD_FEAT_BUILD_ID & 1))
		return 0;
	const struct pd_section *sec = &f->feat[PD_FEAT_BUILD_ID];
	uint64_t at = sec->offset, end = sec->offset + sec->size;
	for (size_t i = 0; at < end; i++) {
		if (end - at < 36)
			return ju_err_at(err, EINVAL, f->path, at, "build-id entry: %llu bytes left, expected at least 36",
				     (unsigned long long)(end - at));
		const uint8_t *p = f->data + at;
		uint16_t sz = g16(p + 6);
		if (sz < 37 || sz > end - at)
			return ju_err_at(err, EINVAL, f->path, at + 6, "build-id entry size %u outside 37..%llu", sz,
				     (unsigned long long)(end - at));
		if (i == n) {
			memset(out, 0, sizeof(*out));
			*misc = g16(p + 4);
			out->size = (*misc & PD_MISC_BUILD_ID_SIZE) && p[32] <= PD_BUILD_ID_MAX ? p[32] : PD_BUILD_ID_MAX;
			memcpy(out->id, p + 12, PD_BUILD_ID_MAX);
			const uint8_t *nul = memchr(p + 36, 0, sz - 36u);
			if (!nul)
				return ju_err_at(err, EINVAL, f->path, at + 36, "build-id entry: file name not NUL-terminated");
			snprintf(out->path, sizeof(out->path), "%s", (const char *)p + 36);
			return 1;
		}
		at += sz;                     /* sz >= 37: bounded */
	}
	return 0;
}
