/* Spin points: the child stops at a sample point by turning the instruction
 * there into a jump to itself (through tr_patch, the one code writer), so a
 * profiler's timer interrupts it with exactly that point's registers and
 * stack.  HX_SPIN_SIG releases it: the handler puts the original bytes back
 * and returns to the same pc, after checking the state is still the
 * breakpoint's.  The release comes from the parent (its kernel sampler got
 * its samples) or, without one, from a timer of the child's own: one shot
 * after 0.2 ms, or (JU_SPIN_CPU_US=N, perf-check) a 0.1 ms tick that releases
 * once the spin has used N us of the child's CPU time, so that an outside
 * profiler's cpu-clock, which counts only time on the CPU, gets its samples
 * there however busy the machine is. */
#include "harness/capture/capture.h"
#include "harness/capture/samples.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HX_SPIN_SELF_NS 200000     /* the child's own release: 0.2 ms of spinning */
#define HX_SPIN_TICK_NS 100000     /* JU_SPIN_CPU_US: how often the budget is checked */
#define HX_SPIN_CPU_MAX_US 100000  /* at most 0.1 s of CPU per point */

/* The child's spin state, static: the release handler (signal context)
 * reads it; hx_spin_configure sets it up in each new child. */
static struct {
	bool on;
	int req_fd;
	int tamper;                    /* hx_kcfg.spin_tamper: tests only */
	struct tr_arena *arena;
	void (*check)(ucontext_t *uc);
	timer_t timer;
	bool have_timer;
	bool spinning;
	uint8_t *addr;                 /* patched bytes (NULL: the callee's own spin site) */
	uint8_t saved[8];
	uint64_t pc, resume;
	uint64_t cpu_ns;               /* JU_SPIN_CPU_US: CPU time to spend per point (0: off) */
	uint64_t cpu0;                 /* the thread's CPU time when the spin began */
} sp = { .req_fd = -1 };

static uint64_t cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void hx_spin_do_tamper(ucontext_t *uc)
{
	if (sp.tamper == 1)
		hx_cap_host.tamper(uc);
	if (sp.tamper == 2)
		*(volatile uint8_t *)(uintptr_t)(hx_cap_host.sp(uc) + 8) ^= 0x40;
}

void hx_spin_configure(bool on, int req_fd, int tamper)
{
	sp.on = on;
	sp.tamper = tamper;
	sp.req_fd = req_fd;
}

bool hx_spin_enabled(void)
{
	return sp.on;
}

static void hx_spin_release(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	/* a stray release (not spinning, or not yet at the spin pc) changes nothing */
	if (!sp.spinning || hx_cap_host.pc(uc) != sp.pc)
		return;
	/* the CPU budget's tick: spin on until it is used */
	if (sp.cpu_ns && sp.req_fd < 0) {
		if (cpu_now() - sp.cpu0 < sp.cpu_ns)
			return;
		struct itimerspec off = { { 0, 0 }, { 0, 0 } };
		timer_settime(sp.timer, 0, &off, NULL);
	}
	sp.spinning = false;
	if (sp.tamper)
		hx_spin_do_tamper(uc);
	sp.check(uc);
	if (sp.addr && tr_patch(sp.arena, sp.addr, sp.saved, hx_cap_host.spin_len))
		_exit(73);
	hx_cap_host.resume_at(uc, sp.resume);
}

int hx_spin_install(struct tr_arena *a, void (*check)(ucontext_t *uc))
{
	sp.arena = a;
	sp.check = check;
	struct sigaction sa = { 0 };
	sa.sa_sigaction = hx_spin_release;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(HX_SPIN_SIG, &sa, NULL))
		return -errno;
	if (sp.req_fd >= 0)
		return 0;
	const char *cpu = getenv("JU_SPIN_CPU_US");
	if (cpu) {
		char *end;
		unsigned long v = strtoul(cpu, &end, 10);
		if (*end || !v || v > HX_SPIN_CPU_MAX_US)
			return -EINVAL;
		sp.cpu_ns = v * 1000u;
	}
	/* one timer for the child's life: a batch's child installs this per case */
	if (sp.have_timer)
		return 0;
	struct sigevent ev = { 0 };
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = HX_SPIN_SIG;
	if (timer_create(CLOCK_MONOTONIC, &ev, &sp.timer))
		return -errno;
	sp.have_timer = true;
	return 0;
}

int hx_spin_begin(uint8_t *addr, uint64_t resume, const struct hx_spin_msg *m)
{
	sp.addr = addr;
	sp.pc = m->pc;
	sp.resume = resume;
	if (addr) {
		/* x86_64: 2 bytes may cover the next instruction (and its armed
		 * breakpoint): whatever is there goes back on release */
		memcpy(sp.saved, addr, hx_cap_host.spin_len);
		int rc = tr_patch(sp.arena, addr, hx_cap_host.spin, hx_cap_host.spin_len);
		if (rc)
			return rc;
	}
	sp.spinning = true;
	if (sp.req_fd >= 0) {
		ssize_t w = write(sp.req_fd, m, sizeof(*m));
		return w == (ssize_t)sizeof(*m) ? 0 : -EIO;
	}
	struct itimerspec its = { .it_value = { 0, HX_SPIN_SELF_NS } };
	if (sp.cpu_ns) {
		sp.cpu0 = cpu_now();
		its.it_value.tv_nsec = its.it_interval.tv_nsec = HX_SPIN_TICK_NS;
	}
	return timer_settime(sp.timer, 0, &its, NULL) ? -errno : 0;
}

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Layout as hx_sample_build writes it (samples.h SAMPLE). */
int hx_spin_diff(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen, char *msg, size_t ml)
{
	if (alen < 48 || blen < 48) {
		snprintf(msg, ml, "sample payload shorter than its header");
		return 1;
	}
	uint64_t mask = rd64(a + 16);
	uint32_t nregs = rd32(a + 24), nt = rd32(a + 28);
	if (memcmp(a, b, 48)) {
		snprintf(msg, ml, "header differs (sp 0x%llx vs 0x%llx, stack %llu vs %llu bytes)",
			 (unsigned long long)rd64(a + 32), (unsigned long long)rd64(b + 32),
			 (unsigned long long)rd64(a + 40), (unsigned long long)rd64(b + 40));
		return 1;
	}
	size_t regs = 48, stack = regs + 8ull * nregs + 8ull * nt + ((nt + 7) & ~7u);
	if (nregs > 64 || stack > alen || alen != blen) {
		snprintf(msg, ml, "payload sizes %zu and %zu", alen, blen);
		return 1;
	}
	for (uint32_t i = 0, bit = 0; i < nregs; i++, bit++) {
		while (bit < 64 && !(mask >> bit & 1))
			bit++;
		if (rd64(a + regs + 8 * i) != rd64(b + regs + 8 * i)) {
			snprintf(msg, ml, "perf register %u: 0x%llx at the breakpoint, 0x%llx at the spin", bit,
				 (unsigned long long)rd64(a + regs + 8 * i), (unsigned long long)rd64(b + regs + 8 * i));
			return 1;
		}
	}
	for (size_t i = stack; i < alen; i++)
		if (a[i] != b[i]) {
			snprintf(msg, ml, "stack byte at SP+0x%zx: 0x%02x at the breakpoint, 0x%02x at the spin",
				 i - stack, a[i], b[i]);
			return 1;
		}
	if (memcmp(a + regs + 8ull * nregs, b + regs + 8ull * nregs, stack - regs - 8ull * nregs)) {
		snprintf(msg, ml, "truth differs");
		return 1;
	}
	return 0;
}
