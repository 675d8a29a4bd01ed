/* --hw-breakpoints: boundaries sampled by the kernel's hardware execute
 * breakpoints (perf_event_open PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X) instead
 * of int3 stops.  Each traced thread gets the arch's debug registers (4 on
 * x86_64) as one perf event each, all writing to one ring buffer per thread;
 * the events watch the same few boundaries in every thread (the unsampled
 * ones of the load whose entry trapped last), moved with
 * PERF_EVENT_IOC_MODIFY_ATTRIBUTES, the int3 at those boundaries lifted.
 * Not armed for a count (PERF_EVENT_IOC_REFRESH): on this kernel (6.18) an
 * event its count disabled never fires again, whatever is asked; hits past
 * --hits before the next stop are dropped, counted.  The
 * kernel writes each hit as perf record does (IP, TID, TIME, REGS_USER,
 * STACK_USER) and the thread runs on.
 *
 * The truth: a thread's shadow stack changes only at its own ptrace stops,
 * and the kernel writes a hit to the ring before the thread goes on, so
 * every ring is read at every stop of any thread, before that stop is
 * handled: a hit read there happened after its thread's last stop, under
 * the activations that stop left.  It is judged through the same pop rule
 * as an int3 hit (tr_act_on_trap: an activation its SP has left ends).
 * Entries are never watched (an entry's activation starts at its int3,
 * which the hardware hit precedes); a hit found at one is dropped, counted. */
#include "harness/trace/trace_int.h"
#include "unwinders/uwarch.h"

#include <errno.h>
#include <inttypes.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HW_SLOTS 4              /* x86_64's DR0-DR3 */
#define HW_PAGES 64             /* ring data pages per thread (256 KiB: ~30 hits of 8 KiB) */

struct hw_thread {
	pid_t tid;
	int fd[HW_SLOTS];       /* fd[0] owns the ring, the others write into it */
	uint64_t at[HW_SLOTS];  /* the address each event watches now (0: disabled) */
	uint64_t last_pc, last_sp;      /* its latest hit read at this stop (fresh) */
	bool fresh;
	uint64_t refire;        /* resumed at this address after its int3 trap: the hit next there is
				 * the same execution's (0: none) */
	void *ring;
	size_t ring_len;
};

struct tr_hw {
	struct perf_event_attr attr;
	int nslots;             /* debug registers per thread */
	uint64_t slot[HW_SLOTS];        /* the boundaries watched (0: free) */
	long want_load;         /* the load whose boundaries the slots take (-1: none yet) */
	struct hw_thread *th;
	size_t nth, capth;
	uint8_t *rec;           /* one record copied out of the ring (it may wrap) */
};

static long perf_open(struct perf_event_attr *a, pid_t tid, int group)
{
	return syscall(SYS_perf_event_open, a, tid, -1, group, PERF_FLAG_FD_CLOEXEC);
}

static void say_off(struct tr_state *t, const char *what, int e)
{
	snprintf(t->res->hw_note, sizeof(t->res->hw_note), "%s: %s%s", what, strerror(e),
		 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid, or no CAP_PERFMON)"
		 : e == ENOSPC ? " (the thread's debug registers are taken: a debugger, or ptrace's own)"
		 : e == ENODEV || e == ENOENT || e == EOPNOTSUPP ? " (no hardware breakpoints here: qemu-user, a VM)"
		 : e == EINVAL ? " (--stack-size above what a kernel sample holds, about 65,000 bytes, or a kernel "
		   "without execute breakpoints or PERF_EVENT_IOC_MODIFY_ATTRIBUTES, before 4.17)" : "");
	fprintf(t->cfg->log, "trace: hardware breakpoints not used (%s): every boundary sampled by int3\n",
		t->res->hw_note);
}

/* one event per debug register on tid, one ring; the slots it got, or -errno */
static int thread_open(struct tr_state *t, struct tr_hw *h, struct hw_thread *w)
{
	for (int s = 0; s < HW_SLOTS; s++)
		w->fd[s] = -1;
	int got = 0;
	for (int s = 0; s < h->nslots; s++) {
		long fd = perf_open(&h->attr, w->tid, -1);
		if (fd < 0) {
			if (s == 0)
				return -errno;
			break;          /* fewer debug registers: take what there is */
		}
		w->fd[s] = (int)fd;
		got++;
		if (s == 0) {           /* the ring first: SET_OUTPUT needs one to point at */
			long pg = sysconf(_SC_PAGESIZE);
			w->ring_len = (size_t)pg * (1 + HW_PAGES);
			w->ring = mmap(NULL, w->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd[0], 0);
			if (w->ring == MAP_FAILED) {
				w->ring = NULL;
				return -errno;
			}
		} else if (ioctl(w->fd[s], PERF_EVENT_IOC_SET_OUTPUT, w->fd[0]) < 0) {
			return -errno;
		}
	}
	return got;
}

static void thread_close(struct hw_thread *w)
{
	if (w->ring)
		munmap(w->ring, w->ring_len);
	w->ring = NULL;
	for (int s = 0; s < HW_SLOTS; s++)
		if (w->fd[s] >= 0)
			close(w->fd[s]);
	for (int s = 0; s < HW_SLOTS; s++)
		w->fd[s] = -1;
}

/* does b still want samples: a traced, open load's boundary with fewer than
 * --hits, no byte of the program's own or the JIT's patch there, sampling
 * not stopped */
static bool bp_wants(struct tr_state *t, const struct hx_trace_load *l, const struct hx_trace_bp *b)
{
	if (!l->traced || l->closed || b->foreign || b->hits >= t->cfg->hits || t->res->capped || t->bp_off)
		return false;
	const struct tr_site *k = tr_site_find(t, b->addr);
	return !k || !k->lost;
}

/* may a slot watch b: it wants samples and no other user of an int3 is
 * there (an entry, a live activation's return): the hit and the trap of one
 * execution would both count, and an entry's activation starts at its trap */
static bool hw_fit(struct tr_state *t, const struct hx_trace_load *l, const struct hx_trace_bp *b)
{
	if (!bp_wants(t, l, b) || b->addr == l->addr)
		return false;
	const struct tr_site *k = tr_site_find(t, b->addr);
	return !k || (!k->entry && !k->refs);
}

/* slot s watches nothing; its boundary, still wanting samples, gets its int3 back */
static void slot_free(struct tr_state *t, int s)
{
	struct tr_hw *h = t->hw;
	struct hx_trace_load *l;
	struct hx_trace_bp *b = h->slot[s] ? tr_bp_find(t, h->slot[s], &l) : NULL;
	if (b) {
		b->hw = false;
		if (bp_wants(t, l, b))
			tr_bp_plant(t, b);
	}
	h->slot[s] = 0;
}

/* hardware breakpoints off for good: every boundary they held gets its int3 back */
static void hw_off(struct tr_state *t)
{
	struct tr_hw *h = t->hw;
	tr_hw_drain(t);
	for (int s = 0; s < h->nslots; s++)
		slot_free(t, s);
	for (size_t i = 0; i < h->nth; i++)
		thread_close(&h->th[i]);
	h->nth = 0;
	t->res->hw_slots = 0;
}

int tr_hw_thread_new(struct tr_state *t, pid_t tid)
{
	struct tr_hw *h = t->hw;
	if (!h || !t->res->hw_slots)
		return 0;
	if (h->nth == h->capth) {
		size_t nc = h->capth ? h->capth * 2 : 8;
		struct hw_thread *p = realloc(h->th, nc * sizeof(*p));
		if (!p)
			return -ENOMEM;
		h->th = p;
		h->capth = nc;
	}
	struct hw_thread *w = &h->th[h->nth];
	memset(w, 0, sizeof(*w));
	w->tid = tid;
	int got = thread_open(t, h, w);
	if (got == -ESRCH) {
		thread_close(w);        /* gone already */
		return 0;
	}
	if (got < 0) {
		thread_close(w);
		char what[96];
		snprintf(what, sizeof(what), "perf_event_open of a breakpoint on thread %d", (int)tid);
		say_off(t, what, -got);
		hw_off(t);
		return 0;
	}
	h->nth++;
	if (got < h->nslots) {
		/* every thread watches the same boundaries: the fewest decide */
		for (int s = got; s < h->nslots; s++)
			slot_free(t, s);
		h->nslots = got;
		t->res->hw_slots = (unsigned)got;
	}
	return 0;
}

int tr_hw_begin(struct tr_state *t)
{
	if (!t->cfg->hw_bp)
		return 0;
	if (!t->arch->hw_bp_len) {
		snprintf(t->res->hw_note, sizeof(t->res->hw_note), "the tracer has no hardware breakpoints for this arch");
		fprintf(t->cfg->log, "trace: hardware breakpoints not used (%s): every boundary sampled by int3\n",
			t->res->hw_note);
		return 0;
	}
	struct tr_hw *h = calloc(1, sizeof(*h));
	uint8_t *rec = malloc(65536);
	if (!h || !rec) {
		free(h);
		free(rec);
		say_off(t, "memory for the rings", ENOMEM);
		return -ENOMEM;
	}
	h->rec = rec;
	h->want_load = -1;
	h->nslots = HW_SLOTS;
	struct perf_event_attr *a = &h->attr;
	a->type = PERF_TYPE_BREAKPOINT;
	a->size = sizeof(*a);
	a->bp_type = HW_BREAKPOINT_X;
	a->bp_len = t->arch->hw_bp_len;
	a->bp_addr = 0;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_REGS_USER |
			 PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = uw_arch_host()->facts->perf_mask;
	a->sample_stack_user = (uint32_t)((t->cfg->stack_size + 7) & ~(size_t)7);
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->disabled = 1;
	t->hw = h;
	t->res->hw_slots = HW_SLOTS;
	for (size_t i = 0; i < t->ntids; i++)
		tr_hw_thread_new(t, t->tids[i].tid);
	return 0;
}

/* n bytes of the ring from position at (the data area wraps) */
static void ring_copy(void *dst, const uint8_t *data, uint64_t size, uint64_t at, size_t n)
{
	size_t off = (size_t)(at % size), first = n < size - off ? n : (size_t)(size - off);
	memcpy(dst, data + off, first);
	memcpy((uint8_t *)dst + first, data, n - first);
}

/* the ring's records, each handed to fn with its bytes contiguous */
static void ring_read(struct tr_state *t, struct hw_thread *w,
		      void (*fn)(struct tr_state *, struct hw_thread *, const struct perf_event_header *))
{
	struct perf_event_mmap_page *mp = w->ring;
	uint8_t *data = (uint8_t *)w->ring + mp->data_offset;
	uint64_t size = mp->data_size, head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	/* bounded: each record is at least its header */
	for (uint64_t n = 0; tail < head && n < size / sizeof(struct perf_event_header) + 1; n++) {
		struct perf_event_header hd;
		ring_copy(&hd, data, size, tail, sizeof(hd));
		if (hd.size < sizeof(hd) || tail + hd.size > head)
			break;
		ring_copy(t->hw->rec, data, size, tail, hd.size);
		fn(t, w, (const struct perf_event_header *)t->hw->rec);
		tail += hd.size;
	}
	__atomic_store_n(&mp->data_tail, head, __ATOMIC_RELEASE);
}

/* PERF_RECORD_SAMPLE in attr's order: ip, pid/tid, time, abi + regs, stack size + bytes + dyn size */
static int parse_sample(const struct perf_event_header *hd, uint64_t mask, struct hx_trace_sample *s,
			const uint8_t **stack)
{
	const uint8_t *p = (const uint8_t *)(hd + 1), *end = (const uint8_t *)hd + hd->size;
	uint64_t v[3];
	if (end - p < 24)
		return -EBADMSG;
	memcpy(v, p, 24);
	p += 24;
	s->pc = v[0];
	s->tid = v[1] >> 32;
	if (end - p < 8)
		return -EBADMSG;
	memcpy(&s->abi, p, 8);
	p += 8;
	if (!s->abi)
		return -EBADMSG;        /* no user registers (not a user hit) */
	s->mask = mask;
	for (int r = 0; r < 64 && s->abi; r++) {
		if (!(mask >> r & 1))
			continue;
		if (end - p < 8)
			return -EBADMSG;
		memcpy(&s->regs[r], p, 8);
		p += 8;
	}
	uint64_t size, dyn = 0;
	if (end - p < 8)
		return -EBADMSG;
	memcpy(&size, p, 8);
	p += 8;
	if (size > (uint64_t)(end - p) || (uint64_t)(end - p) - size < (size ? 8u : 0u))
		return -EBADMSG;        /* no overflow of size + 8 whatever the record says */
	*stack = p;
	if (size)
		memcpy(&dyn, p + size, 8);
	s->stack_len = dyn < size ? dyn : size;
	return 0;
}

static void on_record(struct tr_state *t, struct hw_thread *w, const struct perf_event_header *hd)
{
	struct tr_hw *h = t->hw;
	if (hd->type == PERF_RECORD_LOST) {
		t->res->hw_lost++;
		return;
	}
	if (hd->type != PERF_RECORD_SAMPLE)
		return;
	struct hx_trace_sample s;
	const uint8_t *stack;
	memset(&s, 0, sizeof(s));
	if (parse_sample(hd, h->attr.sample_regs_user, &s, &stack)) {
		t->res->hw_dropped++;
		return;
	}
	s.sp = s.regs[uw_arch_host()->perf_sp];
	w->last_pc = s.pc;
	w->last_sp = s.sp;
	w->fresh = true;
	if (w->refire && w->refire == s.pc) {
		w->refire = 0;          /* the execution its int3 trap already counted */
		t->res->hw_dropped++;
		return;
	}
	w->refire = 0;
	struct hx_trace_load *l;
	struct hx_trace_bp *b = tr_bp_find(t, s.pc, &l);
	struct tr_site *k = tr_site_find(t, s.pc);
	/* not a boundary wanted (its hits taken, the slot moved since), or an
	 * entry (its activation starts at the int3 the hit preceded) */
	if (!b || b->hits >= t->cfg->hits || !l->traced || l->closed || t->res->capped || (k && k->entry)) {
		t->res->hw_dropped++;
		return;
	}
	s.stack = (uint8_t *)stack;     /* the record's copy, until the sample keeps its own */
	if (tr_act_on_trap(t, w->tid, s.pc, &s))
		return;
	struct hx_trace_sample *o = tr_sample_new(t);
	if (!o)
		return;
	*o = s;
	o->stack = malloc(s.stack_len ? s.stack_len : 1);
	if (!o->stack)
		return;
	memcpy(o->stack, stack, s.stack_len);
	if (tr_sample_commit(t, o))
		return;
	o->hw = true;
	tr_act_truth(t, w->tid, o);
	t->res->unknown += !o->truth_known;
	t->res->hw_samples++;
	b->hits++;
	tr_sample_cap(t);
}

void tr_hw_drain(struct tr_state *t)
{
	struct tr_hw *h = t->hw;
	if (!h)
		return;
	for (size_t i = 0; i < h->nth; i++)
		if (h->th[i].ring)
			ring_read(t, &h->th[i], on_record);
}

void tr_hw_thread_gone(struct tr_state *t, pid_t tid)
{
	struct tr_hw *h = t->hw;
	for (size_t i = 0; h && i < h->nth; i++)
		if (h->th[i].tid == tid) {
			if (h->th[i].ring)
				ring_read(t, &h->th[i], on_record);
			thread_close(&h->th[i]);
			h->th[i] = h->th[--h->nth];
			return;
		}
}

static struct hw_thread *hw_thread_of(struct tr_state *t, pid_t tid)
{
	for (size_t i = 0; t->hw && i < t->hw->nth; i++)
		if (t->hw->th[i].tid == tid)
			return &t->hw->th[i];
	return NULL;
}

bool tr_hw_fresh(struct tr_state *t, pid_t tid, uint64_t addr, uint64_t sp)
{
	struct hw_thread *w = hw_thread_of(t, tid);
	return w && w->fresh && w->last_pc == addr && w->last_sp == sp;
}

void tr_hw_resume_at(struct tr_state *t, pid_t tid, uint64_t addr)
{
	struct hw_thread *w = hw_thread_of(t, tid);
	for (int s = 0; w && s < t->hw->nslots; s++)
		if (w->at[s] == addr)
			w->refire = addr;
}

void tr_hw_entry(struct tr_state *t, long load)
{
	if (t->hw && load >= 0)
		t->hw->want_load = load;
}

/* every thread's event s onto the slot's address, or off */
static int slot_arm(struct tr_state *t, int s)
{
	struct tr_hw *h = t->hw;
	for (size_t i = 0; i < h->nth; i++) {
		struct hw_thread *w = &h->th[i];
		if (w->fd[s] < 0 || w->at[s] == h->slot[s])
			continue;
		if (w->refire == w->at[s])
			w->refire = 0;  /* moved away before the thread ran on */
		if (!h->slot[s]) {
			ioctl(w->fd[s], PERF_EVENT_IOC_DISABLE, 0);
			w->at[s] = 0;
			continue;
		}
		struct perf_event_attr a = h->attr;
		a.bp_addr = h->slot[s];
		a.disabled = 0;         /* moved and enabled in one */
		if (ioctl(w->fd[s], PERF_EVENT_IOC_MODIFY_ATTRIBUTES, &a) < 0)
			return -errno;  /* before Linux 4.17 there is no moving them */
		w->at[s] = h->slot[s];
	}
	return 0;
}

/* after a stop: slots whose boundary is done or gone freed, the others kept;
 * the free ones onto the unsampled boundaries of the load entered last (their
 * int3 lifted), a boundary left unsampled given its int3 back */
void tr_hw_place(struct tr_state *t)
{
	struct tr_hw *h = t->hw;
	if (!h || !t->res->hw_slots)
		return;
	const struct hx_trace_load *want = h->want_load >= 0 && (size_t)h->want_load < t->res->nloads
					   ? &t->res->loads[h->want_load] : NULL;
	for (int s = 0; s < h->nslots; s++) {
		if (!h->slot[s])
			continue;
		struct hx_trace_load *l;
		struct hx_trace_bp *b = tr_bp_find(t, h->slot[s], &l);
		if (b && hw_fit(t, l, b) && (!want || l == want))
			continue;
		slot_free(t, s);        /* done, or moved away unsampled: int3 again */
	}
	for (size_t j = 0, s = 0; want && !t->res->capped && j < want->nbps && (int)s < h->nslots; j++) {
		struct hx_trace_bp *b = &want->bps[j];
		if (b->hw || !hw_fit(t, want, b))
			continue;
		while ((int)s < h->nslots && h->slot[s])
			s++;
		if ((int)s == h->nslots)
			break;
		h->slot[s] = b->addr;
		b->hw = true;
	}
	/* the events moved before the int3 lifted, the int3 planted (slot_free)
	 * before the events moved away: a thread running meanwhile meets one of
	 * them or both (both: tr_hw_fresh, the refire), never neither */
	int e = 0;
	for (int s = 0; s < h->nslots && !e; s++)
		e = slot_arm(t, s);
	for (int s = 0; s < h->nslots && !e; s++) {
		struct hx_trace_load *l;
		struct hx_trace_bp *b = h->slot[s] ? tr_bp_find(t, h->slot[s], &l) : NULL;
		if (b && b->planted)
			tr_bp_remove(t, b);
	}
	for (size_t i = 0; i < h->nth; i++)
		h->th[i].fresh = false;     /* this stop's reading is spent */
	if (e) {
		t->res->hw_errors++;
		say_off(t, "PERF_EVENT_IOC_MODIFY_ATTRIBUTES", -e);
		hw_off(t);
	}
}

void tr_hw_end(struct tr_state *t)
{
	if (!t->hw)
		return;
	tr_hw_drain(t);
	for (int s = 0; s < t->hw->nslots; s++) {
		struct hx_trace_load *l;
		struct hx_trace_bp *b = t->hw->slot[s] ? tr_bp_find(t, t->hw->slot[s], &l) : NULL;
		if (b)
			b->hw = false;
		t->hw->slot[s] = 0;
	}
	unsigned slots = t->res->hw_slots;
	for (size_t i = 0; i < t->hw->nth; i++)
		thread_close(&t->hw->th[i]);
	t->hw->nth = 0;
	t->res->hw_slots = slots;     /* what was used, for the report */
}

void tr_hw_free(struct tr_state *t)
{
	if (!t->hw)
		return;
	tr_hw_end(t);
	free(t->hw->th);
	free(t->hw->rec);
	free(t->hw);
	t->hw = NULL;
}
