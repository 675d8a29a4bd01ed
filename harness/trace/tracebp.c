/* The one owner of every byte the tracer plants (gdb's and uprobes' way): a
 * site per address keeps the program's original bytes once, beside the
 * address, read when the first user came and never again, and counts its
 * users (a load's boundary, a load's entry, live activations returning
 * there).  tr_site_sync is the only writer of the tracer's bytes: before it
 * puts the original back (or the breakpoint again) it checks the live bytes
 * are what it left there; where the JIT rewrote them it leaves the JIT's
 * bytes alone for good and reports the patch with the load and offset.  A
 * breakpoint byte found where no site is never becomes an original: the
 * program's own (int3 padding, a debugger's), no breakpoint goes there. */
#include "harness/trace/trace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tr_mem_read(struct tr_state *t, uint64_t addr, void *buf, size_t n)
{
	ssize_t r = pread(t->memfd, buf, n, (off_t)addr);
	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EIO;
}

int tr_mem_write(struct tr_state *t, uint64_t addr, const void *buf, size_t n)
{
	ssize_t r = pwrite(t->memfd, buf, n, (off_t)addr);
	if (r < 0)
		return -errno;
	return (size_t)r == n ? 0 : -EIO;
}

static size_t site_slot(uint64_t addr, size_t cap)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

struct tr_site *tr_site_find(struct tr_state *t, uint64_t addr)
{
	if (!t->skh) {                 /* no index (it could not be allocated): the walk */
		for (size_t i = 0; i < t->nsites; i++)
			if (t->sites[i].addr == addr)
				return &t->sites[i];
		return NULL;
	}
	for (size_t s = site_slot(addr, t->skcap), n = 0; n < t->skcap && t->skh[s]; s = (s + 1) & (t->skcap - 1), n++)
		if (t->sites[t->skh[s] - 1].addr == addr)
			return &t->sites[t->skh[s] - 1];
	return NULL;
}

/* sites[i] into the index, grown (rebuilt) to keep it at most half full;
 * without memory the index goes and the walk answers */
static void site_index(struct tr_state *t, size_t i)
{
	if (t->nsites * 2 > t->skcap) {
		size_t nc = t->skcap ? t->skcap * 2 : 64;
		uint32_t *h = calloc(nc, sizeof(*h));
		free(t->skh);
		t->skh = h;
		t->skcap = h ? nc : 0;
		for (size_t k = 0; h && k + 1 < t->nsites; k++) {
			size_t s = site_slot(t->sites[k].addr, nc);
			while (h[s])
				s = (s + 1) & (nc - 1);
			h[s] = (uint32_t)(k + 1);
		}
	}
	if (!t->skh)
		return;
	size_t s = site_slot(t->sites[i].addr, t->skcap);
	while (t->skh[s])
		s = (s + 1) & (t->skcap - 1);
	t->skh[s] = (uint32_t)(i + 1);
}

int tr_site_get(struct tr_state *t, uint64_t addr, struct tr_site **out)
{
	struct tr_site *k = tr_site_find(t, addr);
	if (k) {
		*out = k;
		return 0;
	}
	uint8_t live[sizeof(k->orig)];
	size_t n = t->bp_len;
	if (n > sizeof(live) || tr_mem_read(t, addr, live, n))
		return -EIO;
	if (!memcmp(live, t->bp, n))
		return -EEXIST;         /* a breakpoint not ours: its original is not known */
	if (t->nsites == t->capsites) {
		size_t nc = t->capsites ? t->capsites * 2 : 32;
		struct tr_site *p = realloc(t->sites, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		t->sites = p;
		t->capsites = nc;
	}
	k = &t->sites[t->nsites++];
	*k = (struct tr_site){ .addr = addr };
	memcpy(k->orig, live, n);
	site_index(t, t->nsites - 1);
	*out = k;
	return 0;
}

static bool site_wanted(const struct tr_site *k)
{
	return !k->lost && (k->entry || k->refs || k->bounds);
}

/* the JIT rewrote bytes under a breakpoint of ours: they stay as it wrote
 * them, the site is never written again, the load and offset reported */
static void site_patched(struct tr_state *t, struct tr_site *k, const uint8_t *live)
{
	k->lost = true;
	k->in_mem = false;
	t->res->patches++;
	long li = tr_load_at(t, k->addr);
	struct hx_trace_load *l = li < 0 ? NULL : &t->res->loads[li];
	if (l && !l->patches++)
		l->first_patch = k->addr - l->addr;
	fprintf(t->cfg->log, "trace: finding: %s+0x%" PRIx64 " (0x%" PRIx64 "): the JIT rewrote the instruction "
		"under a breakpoint (byte 0x%02x where the tracer's was, 0x%02x before): left as the JIT wrote it, "
		"no breakpoint there from now on\n", l ? l->name : "(no load)", l ? k->addr - l->addr : 0,
		k->addr, live[0], k->orig[0]);
}

/* the live bytes are what the tracer left there (its breakpoint when in_mem,
 * else the original); else the JIT's patch, reported.  0 as expected, 1 patched */
static int site_check(struct tr_state *t, struct tr_site *k, int *e)
{
	uint8_t live[sizeof(k->orig)];
	size_t n = t->bp_len;
	if ((*e = tr_mem_read(t, k->addr, live, n)))
		return 0;
	if (!memcmp(live, k->in_mem ? t->bp : k->orig, n))
		return 0;
	site_patched(t, k, live);
	return 1;
}

int tr_site_sync(struct tr_state *t, struct tr_site *k)
{
	bool want = site_wanted(k);
	if (k->lost || want == k->in_mem)
		return 0;
	int e = 0;
	if (site_check(t, k, &e) || e)
		return e;
	e = tr_mem_write(t, k->addr, want ? t->bp : k->orig, t->bp_len);
	if (!e)
		k->in_mem = want;
	return e;
}

int tr_site_lift(struct tr_state *t, struct tr_site *k)
{
	if (k->lost || !k->in_mem)
		return 0;
	int e = 0;
	if (site_check(t, k, &e) || e)
		return e;
	e = tr_mem_write(t, k->addr, k->orig, t->bp_len);
	if (!e)
		k->in_mem = false;
	return e;
}

int tr_bp_sync(struct tr_state *t, uint64_t addr)
{
	struct tr_site *k = tr_site_find(t, addr);
	return k ? tr_site_sync(t, k) : 0;
}

bool tr_bp_wanted(struct tr_state *t, uint64_t addr)
{
	struct tr_site *k = tr_site_find(t, addr);
	return k && site_wanted(k);
}

int tr_bp_plant(struct tr_state *t, struct hx_trace_bp *b)
{
	if (b->planted)
		return 0;
	struct tr_site *k;
	int e = tr_site_get(t, b->addr, &k);
	if (e)
		return e;
	k->bounds++;
	b->planted = true;
	return tr_site_sync(t, k);
}

int tr_bp_remove(struct tr_state *t, struct hx_trace_bp *b)
{
	if (!b->planted)
		return 0;
	b->planted = false;
	struct tr_site *k = tr_site_find(t, b->addr);
	if (!k)
		return 0;
	k->bounds -= k->bounds > 0;
	return tr_site_sync(t, k);
}

int tr_entry_add(struct tr_state *t, uint64_t addr)
{
	struct tr_site *k;
	int e = tr_site_get(t, addr, &k);
	if (e)
		return e;
	k->entry = true;
	return tr_site_sync(t, k);
}

void tr_bp_remove_all(struct tr_state *t)
{
	t->bp_off = true;
	for (size_t i = 0; i < t->res->nloads; i++)
		for (size_t j = 0; j < t->res->loads[i].nbps; j++)
			t->res->loads[i].bps[j].planted = false;
	for (size_t i = 0; i < t->nsites; i++) {
		t->sites[i].entry = false;
		t->sites[i].refs = 0;
		t->sites[i].bounds = 0;
		tr_site_sync(t, &t->sites[i]);
	}
}

/* n bytes of memory at addr as the program has them: the originals under
 * the tracer's breakpoints put back */
void tr_site_unplant(struct tr_state *t, uint64_t addr, uint8_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (buf[i] != t->bp[0])
			continue;
		struct tr_site *k = tr_site_find(t, addr + i);
		if (k && k->in_mem)
			memcpy(buf + i, k->orig, n - i < t->bp_len ? n - i : t->bp_len);
	}
}

int tr_sites_unplant_fd(struct tr_state *t, int memfd)
{
	int e = 0;
	for (size_t i = 0; i < t->nsites; i++) {
		const struct tr_site *k = &t->sites[i];
		if (!k->in_mem)
			continue;
		ssize_t w = pwrite(memfd, k->orig, t->bp_len, (off_t)k->addr);
		if (w != (ssize_t)t->bp_len && !e)
			e = w < 0 ? -errno : -EIO;
	}
	return e;
}
