/* The kernel sampler: one perf_event_open cpu-clock event on the capture
 * child, disabled except while the child spins at a sample point.  Each
 * sample whose ip is the spin pc becomes a kernel SAMPLE record: the
 * kernel's registers, its 8192-byte user stack dump and its CALLCHAIN (the
 * kernel's own frame-pointer walk), with the point's truth from the child. */
#include "harness/capture/ksampler.h"
#include "harness/capture/capture.h"
#include "harness/capture/samples.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/uwarch.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define KS_STACK HX_KS_STACK
_Static_assert(HX_KS_OUT_MAX >= KS_STACK + 4096 + 8 * HX_MAX_CHAIN, "room for a kernel SAMPLE");
#define KS_PAGES 64                     /* ring buffer data pages (a power of 2) */

struct ks {
	int fd;
	uint8_t *ring;
	size_t page, data_size;
	const struct uw_arch *arch;
	const struct hx_kcfg *cfg;   /* the settings it serves under */
	struct pd_attr attr;         /* what ks_open asked for: the decoder's layout */
	int nbad;                    /* records the decoder refused; the first one's reason: */
	char bad[256];
	uint8_t rec[65536];                 /* one perf record, unwrapped */
	uint8_t out[HX_KS_OUT_MAX];
};

static uint64_t ks_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* 0, or -errno of perf_event_open / mmap (a refusal: the caller skips). */
static int ks_open(struct ks *k, pid_t child, uint32_t stack_user)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = k->cfg->period_ns;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN |
			PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a.sample_regs_user = k->arch->facts->perf_mask;
	a.sample_stack_user = stack_user;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.exclude_callchain_kernel = 1;
	a.wakeup_events = 1;
	k->attr.sample_type = a.sample_type;
	k->attr.sample_regs_user = a.sample_regs_user;
	k->attr.sample_stack_user = a.sample_stack_user;
	k->fd = (int)syscall(SYS_perf_event_open, &a, child, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (k->fd < 0)
		return -errno;
	long pg = sysconf(_SC_PAGESIZE);
	k->page = pg > 0 ? (size_t)pg : 4096;
	k->data_size = KS_PAGES * k->page;
	void *m = mmap(NULL, k->page + k->data_size, PROT_READ | PROT_WRITE, MAP_SHARED, k->fd, 0);
	if (m == MAP_FAILED) {
		int e = -errno;
		close(k->fd);
		k->fd = -1;
		return e;
	}
	k->ring = m;
	return 0;
}

static void ks_close(struct ks *k)
{
	if (k->ring)
		munmap(k->ring, k->page + k->data_size);
	if (k->fd >= 0)
		close(k->fd);
}

int hx_ksample_record(const struct pd_attr *a, const struct uw_arch *arch, const uint8_t *b, size_t n,
		      uint64_t off, pid_t child, const struct hx_spin_msg *m, uint8_t *out, size_t *outlen, char *err, size_t errlen)
{
	struct pd_sample ps;
	struct ju_err je;
	int rc = pd_decode_sample(a, b, n, off, "kernel sample", &ps, &je);
	if (rc)
		return snprintf(err, errlen, "%s", je.msg), rc;
	if (ps.ip != m->pc || (pid_t)ps.pid != child)
		return 0;                                   /* another point's, or another task's */
	if (!ps.abi || ps.stack_size > KS_STACK)
		return 0;                                   /* no user registers or stack */
	struct hx_sample s = { .func = m->func, .offset = m->offset, .abi = ps.abi, .mask = ps.mask,
			       .ntruth = m->ntruth < HX_MAX_TRUTH ? m->ntruth : HX_MAX_TRUTH,
			       .stack = ps.stack, .stack_size = ps.dyn_size, .kernel = true };
	memcpy(s.regs, ps.regs, sizeof(s.regs));
	memcpy(s.truth, m->truth, sizeof(uint64_t) * s.ntruth);
	memcpy(s.fpflag, m->fpflag, s.ntruth);
	s.stack_addr = ps.regs[arch->perf_sp];
	uint64_t chain[HX_MAX_CHAIN];
	for (uint64_t i = 0; i < ps.nr; i++) {
		uint64_t v = pd_u64(ps.ips + 8 * i);
		if (v >= (uint64_t)PERF_CONTEXT_MAX)        /* PERF_CONTEXT_USER and friends */
			continue;
		if (s.nchain < HX_MAX_CHAIN)
			chain[s.nchain++] = v;
	}
	s.chain = chain;
	*outlen = hx_sample_encode(out, &s, NULL);
	return 1;
}

/* One PERF_RECORD_SAMPLE (body after the header, n bytes) at the spin point
 * m: a kernel SAMPLE record to out_fd.  1 if written, 0 if not this point's;
 * a record the decoder refuses is counted, the first one's reason kept. */
static int ks_sample(struct ks *k, const uint8_t *b, size_t n, uint64_t off, pid_t child,
		     const struct hx_spin_msg *m, int out_fd)
{
	size_t len = 0;
	char e[256];
	int rc = hx_ksample_record(&k->attr, k->arch, b, n, off, child, m, k->out, &len, e, sizeof(e));
	if (rc < 0 && k->nbad++ == 0)
		snprintf(k->bad, sizeof(k->bad), "%s", e);
	if (rc <= 0)
		return 0;
	hx_rec_write_flags(out_fd, HX_REC_SAMPLE, HX_REC_F_KERNEL, k->out, len, NULL, 0);
	return 1;
}

/* Drain the ring; with m, turn this point's samples into records (counted in *got). */
static void ks_drain(struct ks *k, pid_t child, const struct hx_spin_msg *m, int out_fd, int *got)
{
	struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)(void *)k->ring;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;
	const uint8_t *data = k->ring + k->page;
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;
		for (size_t i = 0; i < sizeof(h); i++)
			((uint8_t *)&h)[i] = data[(tail + i) % k->data_size];
		if (h.size < sizeof(h) || h.size > head - tail)
			break;
		for (size_t i = 0; i < h.size; i++)
			k->rec[i] = data[(tail + i) % k->data_size];
		if (m && h.type == PERF_RECORD_SAMPLE && *got < k->cfg->nsamples)
			*got += ks_sample(k, k->rec + sizeof(h), h.size - sizeof(h), tail + sizeof(h), child, m, out_fd);
		tail += h.size;
	}
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
}

/* One spin point: sample until nsamples land at its pc or the time is up. */
static int ks_point(struct ks *k, pid_t child, const struct hx_spin_msg *m, int out_fd)
{
	int got = 0;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ks_drain(k, child, NULL, out_fd, &got);
	ioctl(k->fd, PERF_EVENT_IOC_ENABLE, 0);
	uint64_t end = ks_now_ms() + (uint64_t)k->cfg->timeout_ms;
	while (got < k->cfg->nsamples) {
		uint64_t now = ks_now_ms();
		if (now >= end)
			break;
		struct pollfd pf = { .fd = k->fd, .events = POLLIN };
		poll(&pf, 1, (int)(end - now));
		ks_drain(k, child, m, out_fd, &got);
	}
	ioctl(k->fd, PERF_EVENT_IOC_DISABLE, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (k->cfg->stats) {
		k->cfg->stats->points++;
		k->cfg->stats->ns += (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000ll + (t1.tv_nsec - t0.tv_nsec));
	}
	return got;
}

int hx_ksample_serve(pid_t child, uint32_t stack_user, const struct hx_kcfg *cfg, int req_fd, int out_fd,
		     struct ju_err *err)
{
	static struct ks k;   /* the ring copy and output buffers: too big for a stack; one serve at a time */
	memset(&k, 0, sizeof(k));
	k.cfg = cfg;
	k.fd = -1;
	k.arch = uw_arch_by_mach(tr_arch_host()->facts->elf_mach);
	int rc = k.arch ? ks_open(&k, child, stack_user) : -ENOTSUP;
	bool told = false;
	struct hx_spin_msg m;
	char missed[512] = "";
	int nmissed = 0;
	for (;;) {
		ssize_t r = read(req_fd, &m, sizeof(m));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (r != (ssize_t)sizeof(m)) {
			rc = ju_errf(err, EIO, 0, "spin point message of %zd bytes, expected %zu", r, sizeof(m));
			break;
		}
		if (rc && !told) {
			/* written at a spin, when the child's CASE record precedes it */
			char w[200];
			snprintf(w, sizeof(w), "perf_event_open refused the kernel sampler: %s%s", strerror(-rc),
				 rc == -EACCES || rc == -EPERM ? " (kernel.perf_event_paranoid)" : "");
			hx_rec_write(out_fd, HX_REC_KSKIP, w, strlen(w) + 1, NULL, 0);
			told = true;
		}
		if (!rc && ks_point(&k, child, &m, out_fd) < cfg->nsamples && nmissed++ < 8) {
			size_t l = strlen(missed);
			snprintf(missed + l, sizeof(missed) - l, "%s func %d+0x%x", nmissed > 1 ? "," : "",
				 (int)m.func, m.offset);
		}
		kill(child, HX_SPIN_SIG);
	}
	if (nmissed) {
		char e[700];
		snprintf(e, sizeof(e), "%d spin point(s) got fewer than %d kernel samples in %d ms:%s", nmissed,
			 cfg->nsamples, cfg->timeout_ms, missed);
		hx_rec_write(out_fd, HX_REC_ERROR, e, strlen(e) + 1, NULL, 0);
	}
	if (k.nbad) {
		char e[400];
		snprintf(e, sizeof(e), "%d kernel sample record(s) refused, the first: %s", k.nbad, k.bad);
		hx_rec_write(out_fd, HX_REC_ERROR, e, strlen(e) + 1, NULL, 0);
	}
	ks_close(&k);
	return rc == -EIO ? rc : 0;
}
