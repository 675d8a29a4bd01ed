/* Samples file I/O (format in samples.h).  The reader trusts nothing. */
#include "harness/capture/samples.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "juerr.h"

#define HX_MAX_SAMPLES_FILE (1ull << 34)

static int write_all(int fd, const struct iovec *iov, int n)
{
	struct iovec v[8];
	if (n > 8)
		return -EINVAL;
	memcpy(v, iov, (size_t)n * sizeof(*v));
	int i = 0;
	while (i < n) {
		ssize_t w = writev(fd, v + i, n - i);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		size_t left = (size_t)w;
		while (i < n && left >= v[i].iov_len) {
			left -= v[i].iov_len;
			i++;
		}
		if (i < n) {
			v[i].iov_base = (char *)v[i].iov_base + left;
			v[i].iov_len -= left;
		}
	}
	return 0;
}

/* async-signal-safe: writev only */
int hx_rec_write(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	return hx_rec_write_flags(fd, type, 0, a, alen, b, blen);
}

int hx_rec_write_flags(int fd, uint32_t type, uint32_t flags, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	static const uint8_t zero[8];
	uint64_t len = alen + blen;
	uint8_t hdr[16];
	memcpy(hdr, &type, 4);
	memcpy(hdr + 4, &flags, 4);
	memcpy(hdr + 8, &len, 8);
	struct iovec iov[4] = {
		{ hdr, 16 }, { (void *)a, alen }, { (void *)b, blen },
		{ (void *)zero, (8 - len % 8) % 8 },
	};
	return write_all(fd, iov, 4);
}

int hx_samples_write_header(int fd, uint32_t elf_mach)
{
	uint8_t h[16];
	uint32_t v = HX_SAMPLES_VERSION;
	memcpy(h, HX_SAMPLES_MAGIC, 8);
	memcpy(h + 8, &v, 4);
	memcpy(h + 12, &elf_mach, 4);
	struct iovec iov = { h, 16 };
	return write_all(fd, &iov, 1);
}

static void put32(uint8_t **p, uint32_t v) { memcpy(*p, &v, 4); *p += 4; }
static void put64(uint8_t **p, uint64_t v) { memcpy(*p, &v, 8); *p += 8; }

size_t hx_sample_encode(uint8_t *buf, const struct hx_sample *s,
			void (*copy)(uint8_t *dst, uint64_t src, uint64_t n))
{
	uint32_t nregs = (uint32_t)__builtin_popcountll(s->mask);
	uint32_t nt = s->ntruth < HX_MAX_TRUTH ? s->ntruth : HX_MAX_TRUTH;
	uint8_t *p = buf;
	put32(&p, s->func);
	put32(&p, s->offset);
	put64(&p, s->abi);
	put64(&p, s->mask);
	put32(&p, nregs);
	put32(&p, nt);
	put64(&p, s->stack_addr);
	put64(&p, s->stack_size);
	for (int b = 0; b < 64; b++)
		if (s->mask >> b & 1)
			put64(&p, s->regs[b]);
	for (uint32_t i = 0; i < nt; i++)
		put64(&p, s->truth[i]);
	memset(p, 0, (nt + 7) & ~7u);
	memcpy(p, s->fpflag, nt);
	p += (nt + 7) & ~7u;
	if (copy)
		copy(p, s->stack_addr, s->stack_size);
	else
		memcpy(p, s->stack, s->stack_size);
	p += s->stack_size;
	if (!s->kernel)
		return (size_t)(p - buf);
	memset(p, 0, (8 - s->stack_size % 8) % 8);
	p += (8 - s->stack_size % 8) % 8;
	put64(&p, s->nchain);
	for (uint32_t i = 0; i < s->nchain; i++)
		put64(&p, s->chain[i]);
	return (size_t)(p - buf);
}

static int read_whole(const char *path, uint8_t **data, size_t *size, struct ju_err *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ju_errf(err, errno, 0, "%s: cannot open: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_size > HX_MAX_SAMPLES_FILE) {
		close(fd);
		return ju_errf(err, EFBIG, 0, "%s: cannot stat or too large", path);
	}
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return ju_errf(err, ENOMEM, 0, "%s: out of memory", path);
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	*data = buf;
	*size = got;
	return 0;
}

int hx_copy_records(int dst, const char *src_path, char *err, size_t errlen)
{
	uint8_t *d;
	size_t n;
	struct ju_err je;
	int rc = read_whole(src_path, &d, &n, &je);
	if (rc)
		return snprintf(err, errlen, "%s", je.msg), rc;
	if (n > 16) {
		struct iovec iov = { d + 16, n - 16 };
		rc = write_all(dst, &iov, 1);
	}
	free(d);
	if (rc)
		snprintf(err, errlen, "write: %s", strerror(-rc));
	return rc;
}

static uint32_t g32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t g64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static char *dup_str(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

/* One record being parsed: its file offset, payload and the group it belongs to. */
struct rec_ctx {
	struct hx_samples *s;
	const uint8_t *data;
	const char *path;
	struct ju_err *err;
	size_t off;
	const uint8_t *p;
	uint64_t len;
	struct hx_group *g;
	size_t gcap, scap;
};

static int parse_case(struct rec_ctx *c)
{
	struct hx_samples *s = c->s;
	const uint8_t *p = c->p;
	uint64_t len = c->len;
	if (s->ngroups == c->gcap) {
		c->gcap = c->gcap ? c->gcap * 2 : 16;
		struct hx_group *ng = realloc(s->groups, c->gcap * sizeof(*ng));
		if (!ng)
			return ju_err_at(c->err, ENOMEM, c->path, c->off, "out of memory");
		s->groups = ng;
	}
	struct hx_group *g = c->g = &s->groups[s->ngroups++];
	memset(g, 0, sizeof(*g));
	c->scap = 0;
	const uint8_t *nul = memchr(p, 0, len);
	if (!nul)
		return ju_err_at(c->err, EINVAL, c->path, c->off + 16, "CASE record: path is not NUL-terminated");
	g->case_path = dup_str(p, (size_t)(nul - p));
	g->case_text = (const char *)nul + 1;
	g->case_len = len - (size_t)(nul - p) - 1;
	return 0;
}

static int parse_func(struct rec_ctx *c)
{
	struct hx_group *g = c->g;
	const uint8_t *p = c->p;
	uint64_t len = c->len;
	size_t off = c->off;
	if (len < 56)
		return ju_err_at(c->err, EINVAL, c->path, off + 16, "FUNC record of %llu bytes, expected at least 56",
			     (unsigned long long)len);
	if (g->nfuncs >= HX_MAX_FUNCS)
		return ju_err_at(c->err, EINVAL, c->path, off, "more than %d FUNC records in a case", HX_MAX_FUNCS);
	struct hx_func *f = &g->funcs[g->nfuncs];
	f->index = g32(p);
	f->nrows = g32(p + 4);
	f->addr = g64(p + 8);
	f->size = g64(p + 16);
	memcpy(f->name, p + 24, 32);
	f->name[31] = 0;
	if (f->nrows > 4096 || (uint64_t)f->nrows * 56 != len - 56)
		return ju_err_at(c->err, EINVAL, c->path, off + 16, "FUNC record: %u rows do not match its length %llu",
			     f->nrows, (unsigned long long)len);
	f->rows = calloc(f->nrows ? f->nrows : 1, sizeof(*f->rows));
	if (!f->rows)
		return ju_err_at(c->err, ENOMEM, c->path, off, "out of memory");
	for (uint32_t i = 0; i < f->nrows; i++) {
		const uint8_t *r = p + 56 + (size_t)i * 56;
		f->rows[i].offset = g32(r);
		f->rows[i].len = g32(r + 4);
		memcpy(f->rows[i].insn, r + 8, 48);
		f->rows[i].insn[47] = 0;
	}
	f->gen = g->gen ? g->gen : 1;
	g->nfuncs++;
	return 0;
}

/* GEN: the code's next generation begins */
static int parse_gen(struct rec_ctx *c)
{
	struct hx_group *g = c->g;
	if (c->len < 16)
		return ju_err_at(c->err, EINVAL, c->path, c->off + 16, "GEN record of %llu bytes, expected 16",
			     (unsigned long long)c->len);
	uint32_t gen = g32(c->p);
	if (gen != g->ngens + 1 || gen > HX_GROUP_MAX_GENS)
		return ju_err_at(c->err, EINVAL, c->path, c->off + 16, "GEN record of generation %u, expected %u (at most %d)",
			     gen, g->ngens + 1, HX_GROUP_MAX_GENS);
	g->gen = g->ngens = gen;
	g->gen_how[gen] = g32(c->p + 4);
	g->gen_time[gen] = g64(c->p + 8);
	return 0;
}

/* The CALLCHAIN that follows a kernel sample's stack; need = bytes before the stack. */
static int parse_kernel_chain(struct rec_ctx *c, struct hx_sample *x, uint64_t need)
{
	const uint8_t *p = c->p;
	uint64_t len = c->len;
	uint64_t at = need + ((x->stack_size + 7) & ~7ull);
	if (at > len || len - at < 8 || g64(p + at) > HX_MAX_CHAIN ||
	    len - at - 8 < 8 * g64(p + at))
		return ju_err_at(c->err, EINVAL, c->path, c->off + 16, "kernel SAMPLE: its CALLCHAIN (at most %d frames) does not fit its length %llu",
			     HX_MAX_CHAIN, (unsigned long long)len);
	x->kernel = true;
	x->nchain = (uint32_t)g64(p + at);
	x->chain = (const uint64_t *)(const void *)(p + at + 8);
	c->g->nkernel++;
	return 0;
}

static int parse_sample(struct rec_ctx *c)
{
	struct hx_group *g = c->g;
	const uint8_t *p = c->p;
	uint64_t len = c->len;
	size_t off = c->off;
	if (len < 56)
		return ju_err_at(c->err, EINVAL, c->path, off + 16, "SAMPLE record of %llu bytes, expected at least 56",
			     (unsigned long long)len);
	if (g->nsamples == c->scap) {
		c->scap = c->scap ? c->scap * 2 : 64;
		struct hx_sample *ns = realloc(g->samples, c->scap * sizeof(*ns));
		if (!ns)
			return ju_err_at(c->err, ENOMEM, c->path, off, "out of memory");
		g->samples = ns;
	}
	struct hx_sample *x = &g->samples[g->nsamples];
	memset(x, 0, sizeof(*x));
	x->gen = g->gen ? g->gen : 1;
	x->func = g32(p);
	x->offset = g32(p + 4);
	x->abi = g64(p + 8);
	x->mask = g64(p + 16);
	uint32_t nregs = g32(p + 24);
	x->ntruth = g32(p + 28);
	x->stack_addr = g64(p + 32);
	x->stack_size = g64(p + 40);
	if (nregs > 64 || nregs != (uint32_t)__builtin_popcountll(x->mask))
		return ju_err_at(c->err, EINVAL, c->path, off + 40, "SAMPLE: %u registers for mask 0x%llx", nregs,
			     (unsigned long long)x->mask);
	if (x->ntruth > HX_MAX_TRUTH)
		return ju_err_at(c->err, EINVAL, c->path, off + 44, "SAMPLE: %u truth frames, at most %d", x->ntruth, HX_MAX_TRUTH);
	uint64_t need = 48 + 8ull * nregs + 8ull * x->ntruth + ((x->ntruth + 7) & ~7u);
	if (need > len || x->stack_size > len - need)
		return ju_err_at(c->err, EINVAL, c->path, off + 16, "SAMPLE: %llu bytes of registers, truth and stack do not fit its length %llu",
			     (unsigned long long)(need + x->stack_size), (unsigned long long)len);
	const uint8_t *q = p + 48;
	int bit = 0;
	for (uint32_t i = 0; i < nregs; i++) {
		while (!(x->mask >> bit & 1))
			bit++;
		x->regs[bit++] = g64(q + 8 * i);
	}
	q += 8 * nregs;
	for (uint32_t i = 0; i < x->ntruth; i++)
		x->truth[i] = g64(q + 8 * i);
	q += 8 * x->ntruth;
	memcpy(x->fpflag, q, x->ntruth);
	for (uint32_t i = 0; i < x->ntruth; i++)
		if (x->fpflag[i] > HX_FP_NOT_RA)
			return ju_err_at(c->err, EINVAL, c->path, (size_t)(q - c->data) + i,
				     "SAMPLE: FP flag %u of truth frame %u, expected 0 (skipped), 1 (reported) or 2 "
				     "(a record whose FP + 8 is not the return address)", x->fpflag[i], i);
	q += (x->ntruth + 7) & ~7u;
	x->stack = q;
	if (g32(c->data + off + 4) & HX_REC_F_KERNEL) {
		int rc = parse_kernel_chain(c, x, need);
		if (rc)
			return rc;
	}
	g->nsamples++;
	return 0;
}

static int parse_crash(struct rec_ctx *c)
{
	struct hx_group *g = c->g;
	const uint8_t *p = c->p;
	if (c->len < 32)
		return ju_err_at(c->err, EINVAL, c->path, c->off + 16, "CRASH record of %llu bytes, expected 32", (unsigned long long)c->len);
	g->crashed = true;
	g->crash.signo = g32(p);
	g->crash.func = g32(p + 4);
	g->crash.pc = g64(p + 8);
	g->crash.offset = g64(p + 16);
	g->crash.fault_addr = g64(p + 24);
	return 0;
}

/* DUMP, ERROR and KSKIP: a string that need not be NUL-terminated; a repeat replaces it. */
static void set_str(char **dst, const struct rec_ctx *c)
{
	free(*dst);
	*dst = dup_str(c->p, strnlen((const char *)c->p, c->len));
}

static int parse_record(struct rec_ctx *c, uint32_t type)
{
	struct hx_group *g = c->g;
	switch (type) {
	case HX_REC_CASE:
		return parse_case(c);
	case HX_REC_DUMP:
		set_str(&g->dump_path, c);
		return 0;
	case HX_REC_MAPS:
		g->maps = (const char *)c->p;
		g->maps_len = c->len;
		return 0;
	case HX_REC_FUNC:
		return parse_func(c);
	case HX_REC_SAMPLE:
		return parse_sample(c);
	case HX_REC_CRASH:
		return parse_crash(c);
	case HX_REC_ERROR:
		set_str(&g->error, c);
		return 0;
	case HX_REC_END:
		g->ended = true;
		return 0;
	case HX_REC_KSKIP:
		set_str(&g->kskip, c);
		return 0;
	case HX_REC_GEN:
		return parse_gen(c);
	default:
		return ju_err_at(c->err, EINVAL, c->path, c->off, "unknown record type %u (expected 1..10)", type);
	}
}

static int samples_parse(struct hx_samples *s, uint8_t *data, size_t size, const char *path,
			 struct ju_err *err)
{
	memset(s, 0, sizeof(*s));
	s->data = data;
	s->size = size;
	if (size < 16 || memcmp(data, HX_SAMPLES_MAGIC, 8))
		return ju_err_at(err, EINVAL, path, 0, "not a jitunwind samples file (expected magic \"JUSAMPLE\")");
	if (g32(data + 8) != HX_SAMPLES_VERSION)
		return ju_err_at(err, EINVAL, path, 8, "samples format version %u, expected %u", g32(data + 8), HX_SAMPLES_VERSION);
	s->elf_mach = g32(data + 12);
	struct rec_ctx c = { .s = s, .data = data, .path = path, .err = err };
	size_t off = 16;
	while (off < size) {
		if (size - off < 16)
			return ju_err_at(err, EINVAL, path, off, "truncated record header (%zu bytes left, expected 16)", size - off);
		uint32_t type = g32(data + off);
		uint64_t len = g64(data + off + 8);
		uint64_t room = size - off - 16;
		if (len > room)
			return ju_err_at(err, EINVAL, path, off + 8, "record length %llu runs past the end (%llu bytes left)",
				     (unsigned long long)len, (unsigned long long)room);
		if (type != HX_REC_CASE && !c.g)
			return ju_err_at(err, EINVAL, path, off, "record type %u before the first CASE record", type);
		c.off = off;
		c.p = data + off + 16;
		c.len = len;
		int rc = parse_record(&c, type);
		if (rc)
			return rc;
		off += 16 + len + ((8 - len % 8) % 8);
	}
	return 0;
}

int hx_samples_parse(struct hx_samples *s, uint8_t *data, size_t size, const char *path,
		     char *err, size_t errlen)
{
	struct ju_err je;
	int rc = samples_parse(s, data, size, path, &je);
	if (rc)
		snprintf(err, errlen, "%s", je.msg);   /* the callers' buffer, until they take a ju_err */
	return rc;
}

/* The file mapped (copy-on-write): a replay reads a few KB of each sample's
 * stack, so most of a large file is never paged in.  0, or -errno (the caller
 * reads it instead: an empty file cannot be mapped). */
static int map_whole(const char *path, uint8_t **data, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ju_errno();
	struct stat st;
	void *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= HX_MAX_SAMPLES_FILE)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -ENODATA;
	*data = m;
	*size = (size_t)st.st_size;
	return 0;
}

int hx_samples_read(struct hx_samples *s, const char *path, char *err, size_t errlen)
{
	uint8_t *d;
	size_t n;
	memset(s, 0, sizeof(*s));
	bool mapped = map_whole(path, &d, &n) == 0;
	struct ju_err je;
	int rc = mapped ? 0 : read_whole(path, &d, &n, &je);
	if (!rc && (rc = samples_parse(s, d, n, path, &je))) {
		s->mapped = mapped;
		hx_samples_free(s);
	}
	if (rc)
		return snprintf(err, errlen, "%s", je.msg), rc;
	s->mapped = mapped;
	return 0;
}

void hx_samples_free(struct hx_samples *s)
{
	for (size_t i = 0; i < s->ngroups; i++) {
		struct hx_group *g = &s->groups[i];
		free(g->case_path);
		free(g->dump_path);
		free(g->error);
		free(g->kskip);
		free(g->samples);
		for (uint32_t f = 0; f < g->nfuncs; f++)
			free(g->funcs[f].rows);
	}
	free(s->groups);
	if (s->release)
		s->release();
	else if (s->mapped)
		munmap(s->data, s->size);
	else
		free(s->data);
	memset(s, 0, sizeof(*s));
}
