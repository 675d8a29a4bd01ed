/* Capture: build the case's trampolines in a W^X arena, write their jitdump,
 * stop at every chosen pc with a breakpoint and write perf-layout samples
 * (registers + the whole stack from SP to its top) with the truth chain,
 * known by construction.  Runs in a forked child. */
#include "harness/capture/capture.h"
#include "harness/capture/host.h"
#include "harness/capture/samples.h"
#include "harness/case/casegen.h"
#include "trampolines/tramp.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include HX_CAPTURE_ARCH_H   /* the build's harness/capture_<arch>.h (Makefile) */

#define HX_STACK_MAX (1u << 20)
#define HX_MAX_BP (HX_MAX_DEPTH * TR_MAX_INSNS)

struct hx_bp {
	uint8_t *addr;
	uint8_t orig[8];
	uint32_t func, offset;
	int row;
	int armed;
};

/* The child's whole state: static, so the signal handlers need no malloc. */
struct hx_ctx {
	int fd;
	int depth;
	int level;                           /* trampoline level the C target runs under */
	bool in_callee;
	struct tr_arena arena;
	void *tramp[HX_MAX_DEPTH + 1];       /* 1-based */
	uint64_t tramp_size[HX_MAX_DEPTH + 1];
	uint64_t stub_ra[HX_MAX_DEPTH + 1];  /* hx_call's return address, per level */
	uint64_t target_ra[HX_MAX_DEPTH + 1];/* __builtin_return_address in the C target */
	struct tr_func *func;                /* the case's code (same at every level) */
	int64_t call_row;                    /* row index of call_target */
	void *target;                        /* what level 1's call_target calls */
	void *leaf;                          /* the case's [leaf], or NULL */
	uint64_t leaf_size;
	struct hx_bp bp[HX_MAX_BP];
	int nbp;
	uint64_t stack_top;
	int truth_error;
	uint64_t spin_ns;                    /* JU_SPIN_MS: busy time in the innermost callee */
	const struct hx_host *host;          /* [sample] host: the C around the trampolines */
	size_t last_len;                     /* the last SAMPLE payload in cap.rec */
	uint32_t last_func, last_offset;
	int last_k, last_row;
};

extern const char hx_callee_trap[];

/* The capture child's one static object.  The breakpoint, spin and crash
 * handlers work on it (signal context: nothing they touch may be malloc'd
 * or live on the interrupted stack: the records they write are built in
 * rec and again, on altstack), and it lives as long as the child: hx is
 * reset for each case (cap_reset); the arena's place, the handlers and the
 * dirty arena bytes carry over between a batch's cases; the rest is
 * scratch too big for a stack. */
static struct hx_child {
	struct hx_ctx hx;                    /* this case's state */
	struct tr_func code, leaf_code;      /* the case's code and its [leaf] */
	uint8_t rec[HX_STACK_MAX + 4096] __attribute__((aligned(16)));   /* a record being written */
	uint8_t again[HX_STACK_MAX + 4096];  /* a spin point's state, compared with rec */
	uint8_t altstack[1 << 16];           /* the handlers' stack */
	bool handlers_done;
	char maps[1 << 20];                  /* /proc/self/maps as the case sees it */
	size_t maps_len;
	size_t arena_dirty;                  /* bytes of the kept arena the last case wrote */
	uintptr_t arena_place;               /* where arenas go (arena_place) */
	bool arena_known;
	struct tr_unwind unw_slot, unw_install;
	uint8_t funcbuf[56 + TR_MAX_INSNS * 56];
	uint8_t codebuf[TR_MAX_CODE];         /* a function's code as placed (hx_install: rel32 set) */
	struct jdw jdw;
} cap;

static void hx_write_error(const char *msg)
{
	hx_rec_write(cap.hx.fd, HX_REC_ERROR, msg, strlen(msg) + 1, NULL, 0);
}

/* The stack is read byte-exact, below ASan's view of it (redzones are data
 * here, as perf's copy sees them): volatile loads, a word at a time where
 * the source is aligned (not libc's memcpy: ASan's interceptor would check
 * the source against its redzones). */
__attribute__((no_sanitize_address, no_sanitize("undefined")))
static void hx_copy_stack(uint8_t *dst, uint64_t src, uint64_t n)
{
	uint64_t i = 0;
	for (; i < n && (src + i) % 8; i++)
		dst[i] = *(const volatile uint8_t *)(uintptr_t)(src + i);
	for (; n - i >= 8; i += 8) {
		uint64_t w = *(const volatile uint64_t *)(uintptr_t)(src + i);
		memcpy(dst + i, &w, 8);
	}
	for (; i < n; i++)
		dst[i] = *(const volatile uint8_t *)(uintptr_t)(src + i);
}

static void put32(uint8_t **p, uint32_t v) { memcpy(*p, &v, 4); *p += 4; }
static void put64(uint8_t **p, uint64_t v) { memcpy(*p, &v, 8); *p += 8; }

/* What an FP walk reports for the return address a generated function's
 * frame record would hold, at this row (samples.h, HX_FP_*). */
static uint8_t fp_flag(const struct tr_row *r)
{
	return !r->fp_frame ? HX_FP_SKIPPED : r->fp_ra_ok ? HX_FP_REPORTED : HX_FP_NOT_RA;
}

/* Truth chain for a sample in trampoline `k` at row `row` (row < 0: in the
 * C target under trampoline k).  fpflag[i] (HX_FP_*): whether the frame
 * that owns truth[i] has its frame record established, so the FP convention
 * reports it, and whether the record's return-address slot holds it. */
static int hx_truth(int k, int row, uint64_t pc, uint64_t *t, uint8_t *fl)
{
	int n = 0;
	t[n] = pc;
	fl[n++] = 1;
	if (cap.hx.leaf && k > cap.hx.depth) {
		/* in the [leaf]: its return address into the trampoline, which is
		 * parked at its call_target like a C target's caller */
		k = cap.hx.depth;
		t[n] = (uint64_t)(uintptr_t)cap.hx.tramp[k] + (uint64_t)cap.code.ret_off;
		fl[n++] = fp_flag(&cap.leaf_code.rows[row]);
		row = -1;
	} else if (row < 0) {
		if (cap.hx.host->leaf) {   /* in the host's C leaf, under the target */
			t[n] = hx_host_leaf_ra;
			fl[n++] = cap.hx.host->leaf_fp;
		}
		t[n] = cap.hx.target_ra[k];
		fl[n++] = cap.hx.host->target_fp;
	}
	for (int j = k; j >= 1; j--) {
		int r = (j == k && row >= 0) ? row : (int)cap.hx.call_row;
		t[n] = (uint64_t)(uintptr_t)cap.hx.host->call_ret;
		fl[n++] = fp_flag(&cap.code.rows[r]);
		t[n] = cap.hx.stub_ra[j];
		fl[n++] = cap.hx.host->call_fp;
		if (j > 1) {
			t[n] = cap.hx.target_ra[j - 1];
			fl[n++] = cap.hx.host->target_fp;
		}
	}
	return n;
}

/* One SAMPLE payload into buf; its length.  m (if not NULL): the truth for a spin point's message. */
static size_t hx_sample_build(const ucontext_t *uc, uint32_t func, uint32_t offset, int k, int row,
			      uint8_t *buf, struct hx_spin_msg *m)
{
	struct hx_sample s = { .func = func, .offset = offset };
	hx_cap_host.regs(uc, &s.abi, &s.mask, s.regs);
	s.stack_addr = hx_cap_host.sp(uc);
	s.stack_size = s.stack_addr < cap.hx.stack_top ? cap.hx.stack_top - s.stack_addr : 0;
	if (s.stack_size > HX_STACK_MAX)
		s.stack_size = HX_STACK_MAX;
	s.ntruth = (uint32_t)hx_truth(k, row, hx_cap_host.pc(uc), s.truth, s.fpflag);
	size_t n = hx_sample_encode(buf, &s, hx_copy_stack);
	if (m) {
		memset(m, 0, sizeof(*m));
		m->pc = hx_cap_host.pc(uc);
		m->func = func;
		m->offset = offset;
		m->ntruth = s.ntruth;
		memcpy(m->truth, s.truth, sizeof(uint64_t) * s.ntruth);
		memcpy(m->fpflag, s.fpflag, s.ntruth);
	}
	return n;
}

/* Writes the sample; with spin points on, the child then spins at this pc
 * (addr: arena code to patch, NULL: the callee's own spin site). */
static void hx_sample(const ucontext_t *uc, uint32_t func, uint32_t offset, int k, int row,
		      uint8_t *addr, uint64_t resume)
{
	struct hx_spin_msg m;
	bool spin = hx_spin_enabled();
	cap.hx.last_len = hx_sample_build(uc, func, offset, k, row, cap.rec, spin ? &m : NULL);
	hx_rec_write(cap.hx.fd, HX_REC_SAMPLE, cap.rec, cap.hx.last_len, NULL, 0);
	cap.hx.last_func = func;
	cap.hx.last_offset = offset;
	cap.hx.last_k = k;
	cap.hx.last_row = row;
	if (spin && hx_spin_begin(addr, resume, &m)) {
		hx_write_error("cannot start a spin point (tr_patch or the parent pipe failed)");
		_exit(71);
	}
}

/* The release of a spin point: the state there must be the breakpoint's.
 * snprintf in a handler is safe here: the interrupted code is the spin
 * (generated code or the callee's jump), never inside libc. */
static void hx_spin_check(ucontext_t *uc)
{
	size_t n = hx_sample_build(uc, cap.hx.last_func, cap.hx.last_offset, cap.hx.last_k, cap.hx.last_row, cap.again, NULL);
	char msg[200], full[300];
	if (hx_spin_diff(cap.rec, cap.hx.last_len, cap.again, n, msg, sizeof(msg))) {
		snprintf(full, sizeof(full), "spin point func %d offset 0x%x: %s", (int)cap.hx.last_func,
			 cap.hx.last_offset, msg);
		hx_write_error(full);
		_exit(72);
	}
}

static int hx_func_of(uint64_t pc, uint64_t *off)
{
	for (int k = 1; k <= cap.hx.depth; k++) {
		uint64_t a = (uint64_t)(uintptr_t)cap.hx.tramp[k];
		if (pc >= a && pc < a + cap.hx.tramp_size[k]) {
			*off = pc - a;
			return k;
		}
	}
	uint64_t l = (uint64_t)(uintptr_t)cap.hx.leaf;
	if (cap.hx.leaf && pc >= l && pc < l + cap.hx.leaf_size) {
		*off = pc - l;
		return cap.hx.depth + 1;
	}
	return 0;
}

static void hx_on_crash(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t pc = hx_cap_host.pc(uc), off = 0;
	int k = hx_func_of(pc, &off);
	uint8_t b[32], *p = b;
	put32(&p, (uint32_t)sig);
	put32(&p, k ? (uint32_t)(k - 1) : HX_FUNC_CALLEE);
	put64(&p, pc);
	put64(&p, off);
	put64(&p, (uint64_t)(uintptr_t)si->si_addr);
	hx_rec_write(cap.hx.fd, HX_REC_CRASH, b, sizeof(b), NULL, 0);
	_exit(70);
}

static void hx_on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t at = hx_trap_addr(hx_cap_host.pc(uc));
	for (int i = 0; i < cap.hx.nbp; i++) {
		struct hx_bp *b = &cap.hx.bp[i];
		if ((uint64_t)(uintptr_t)b->addr != at || !b->armed)
			continue;
		/* the pc the sample reports is the breakpoint's own address */
		hx_cap_host.resume_at(uc, at);
		int rc = tr_patch(&cap.hx.arena, b->addr, b->orig, hx_cap_host.tr->facts->bkpt_len);
		b->armed = 0;
		if (rc) {
			hx_write_error("tr_patch failed restoring a breakpoint");
			_exit(71);
		}
		hx_sample(uc, b->func, b->offset, (int)b->func + 1, b->row, b->addr, at);
		return;
	}
	if (at == (uint64_t)(uintptr_t)cap.hx.host->trap) {
		hx_cap_host.skip_trap(uc);
		/* the pc is after the trap, a jump to itself: the sample's pc; the
		 * child goes on past it now, or when its spin point is released */
		uint64_t out = (uint64_t)(uintptr_t)cap.hx.host->trap + hx_cap_host.tr->facts->bkpt_len +
			       hx_cap_host.spin_len;
		hx_sample(uc, HX_FUNC_CALLEE, 0, cap.hx.level, -1, NULL, out);
		if (!hx_spin_enabled())
			hx_cap_host.resume_at(uc, out);
		return;
	}
	hx_on_crash(sig, si, ucv);
}

void hx_target(struct hx_ctx *ctx);

static uint64_t hx_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* host.h: hx_target's bookkeeping for the other host builds' targets */
int hx_host_enter(struct hx_ctx *ctx, void *ra, void **tramp, uint64_t **slot)
{
	int k = ctx->level;
	ctx->target_ra[k] = (uint64_t)(uintptr_t)ra;
	if ((uint64_t)(uintptr_t)ctx->tramp[k] + (uint64_t)ctx->func->ret_off != ctx->target_ra[k])
		ctx->truth_error = k;
	if (k >= ctx->depth)
		return 0;
	ctx->level = k + 1;
	*tramp = ctx->tramp[k + 1];
	*slot = &ctx->stub_ra[k + 1];
	return k + 1;
}

void hx_host_leave(struct hx_ctx *ctx, int k)
{
	ctx->level = k - 1;
}

bool hx_host_in_callee(struct hx_ctx *ctx, uint64_t *loops)
{
	*loops = ctx->spin_ns;
	return ctx->in_callee;
}

__attribute__((noinline, noclone)) void hx_target(struct hx_ctx *ctx)
{
	int k = ctx->level;
	ctx->target_ra[k] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	if ((uint64_t)(uintptr_t)ctx->tramp[k] + (uint64_t)ctx->func->ret_off != ctx->target_ra[k])
		ctx->truth_error = k;
	if (k < ctx->depth) {
		ctx->level = k + 1;
		hx_call(ctx, ctx->tramp[k + 1], &ctx->stub_ra[k + 1], (void *)hx_target);
		ctx->level = k;
	} else if (ctx->in_callee) {
		/* JU_SPIN_MS: stay here a while, so that a real profiler's timer
		 * samples land in the callee under the trampolines (tools/perf-e2e) */
		for (uint64_t t0 = ctx->spin_ns ? hx_now_ns() : 0, i = 0; ctx->spin_ns; i++)
			if (!(i & 0xffff) && hx_now_ns() - t0 >= ctx->spin_ns)
				break;
		__asm__ volatile(".globl hx_callee_trap\nhx_callee_trap:\n\t" HX_ARCH_TRAP_SPIN "\n" ::: "memory");
	}
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void hx_anchor(struct hx_ctx *ctx)
{
	ctx->level = 1;
	ctx->host->call(ctx, ctx->tramp[1], &ctx->stub_ra[1], ctx->target);
	__asm__ volatile("" ::: "memory");
}

/* The stack below the capture is defined before the trampolines run: a slot
 * they allocate but never write (alloc N) is copied into every sample, and a
 * wrong CFI makes unwinders read it, so its bytes must not be whatever libc
 * left there (the verdicts would differ between glibc versions).  Zero, as a
 * fresh stack page.  JU_STACK_LEFTOVER=zero|self (tests only) first plants
 * other leftovers there ("self": each word its own address, a mapped pointer)
 * to prove they no longer matter. */
#define HX_SCRUB (256u << 10)
__attribute__((noinline, no_sanitize_address)) static void hx_scrub_stack(void)
{
	uint64_t w[HX_SCRUB / 8];
	const char *l = getenv("JU_STACK_LEFTOVER");
	if (l && !strcmp(l, "self"))
		for (size_t i = 0; i < HX_SCRUB / 8; i++)
			w[i] = (uint64_t)(uintptr_t)&w[i];
	else if (l && !strcmp(l, "zero"))
		memset(w, 0, sizeof(w));
	__asm__ volatile("" : : "r"(w) : "memory");
	memset(w, 0, sizeof(w));
	__asm__ volatile("" : : "r"(w) : "memory");
}

/* The child's /proc/self/maps, read whole (one read per case: the MAPS
 * record; the stack's top and the arena's place come from the same text). */
static int maps_read(void)
{
	int m = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (m < 0)
		return ju_errno();
	size_t n = 0;
	for (;;) {
		ssize_t r = read(m, cap.maps + n, sizeof(cap.maps) - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof(cap.maps) - 1)
			break;
	}
	close(m);
	cap.maps[n] = 0;
	cap.maps_len = n;
	return 0;
}

/* Calls f(start, end, line) for each line of cap.maps until it returns true. */
static void maps_each(bool (*f)(uint64_t s, uint64_t e, const char *line, void *arg), void *arg)
{
	for (char *l = cap.maps; l && *l;) {
		char *nl = strchr(l, '\n');
		if (nl)
			*nl = 0;
		char *x, *y;   /* "start-end ...": strtoull, not sscanf (every line, every case) */
		unsigned long long s = strtoull(l, &x, 16), e = x > l && *x == '-' ? strtoull(x + 1, &y, 16) : 0;
		bool stop = x > l && *x == '-' && y > x + 1 && f(s, e, l, arg);
		if (nl)
			*nl = '\n';
		if (stop)
			return;
		l = nl ? nl + 1 : NULL;
	}
}

static bool lowest_so(uint64_t s, uint64_t e, const char *line, void *arg)
{
	uint64_t *low = arg;
	if (strstr(line, ".so") && s < *low)
		*low = s;
	return false;
}

struct stack_find { uint64_t sp, top; };
static bool stack_of(uint64_t s, uint64_t e, const char *line, void *arg)
{
	struct stack_find *f = arg;
	if (f->sp >= s && f->sp < e)
		f->top = e;
	return f->top != 0;
}

/* The bytes a capture child allocates before its first case, so that its
 * frame starts HX_ARCH_STACK_DEPTH below the stack's top (why: the arch's
 * capture header).  0 where the arch leaves the stack where it is, or the
 * frame is deeper already. */
size_t hx_stack_pad(uint64_t frame)
{
	const uint64_t depth = HX_ARCH_STACK_DEPTH;
	const char *off = getenv("JU_STACK_PAD");   /* "0": tests only, the control */
	if (!depth || (off && !strcmp(off, "0")) || maps_read())
		return 0;
	struct stack_find f = { .sp = frame };
	maps_each(stack_of, &f);
	if (f.top <= frame || f.top - frame >= depth)
		return 0;
	return (size_t)(depth - (f.top - frame));
}

/* Where the code arena goes: 2 GiB below the lowest shared library, in
 * address space nothing in this process was ever mapped at (the kernel's
 * top-down allocator fills the holes next to the libraries first).  A
 * profiler then sees the same thing past the code whatever this process
 * mapped and unmapped before (the parent's /etc/ld.so.cache, read buffers,
 * an earlier case's arena in a batch): nothing, as in a JIT whose arena is
 * fresh address space, which is what perf synthesizes from the final maps
 * and what a `perf record` of the run records too.  0 when no library is
 * mapped (a static build): anywhere.  The libraries stay where they are for
 * the child's life: found once. */
static uintptr_t arena_place(void)
{
	if (cap.arena_known)
		return cap.arena_place;
	if (maps_read())
		return 0;
	uint64_t low = UINT64_MAX;
	maps_each(lowest_so, &low);
	const uint64_t gib = 1ull << 30;
	cap.arena_known = true;
	cap.arena_place = low == UINT64_MAX || low < 8 * gib ? 0 : (uintptr_t)((low - 2 * gib) & ~(gib - 1));
	return cap.arena_place;
}

/* The MAPS record (the maps perf is told of) and the stack's top from it. */
__attribute__((noinline)) static int write_maps(int fd, uint64_t sp, uint64_t *stack_top)
{
	if (maps_read())
		return ju_errno();   /* open's */
	struct stack_find f = { .sp = sp };
	maps_each(stack_of, &f);
	*stack_top = f.top;
	return hx_rec_write(fd, HX_REC_MAPS, cap.maps, cap.maps_len, NULL, 0);
}

__attribute__((noinline, format(printf, 1, 2))) static int fail(const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	hx_write_error(msg);
	return -EIO;   /* the capture failed: the ERROR record says why */
}

/* Bytes one generated function occupies, its unwinding data and perf's
 * mapping of it included, so no two mappings overlap. */
static int hx_slot(const struct tr_func *f, const struct tr_unwind_opts *uo, size_t *slot,
		   struct ju_err *err)
{
	int rc = tr_unwind_build(f, uo, 0x10000, &cap.unw_slot, err);   /* *slot unused when rc < 0 */
	size_t sl = (cap.unw_slot.eh_off + cap.unw_slot.size + 15) & ~(size_t)15;
	if (cap.unw_slot.eh_off + cap.unw_slot.mapped_size > sl)
		sl = (cap.unw_slot.eh_off + cap.unw_slot.mapped_size + 15) & ~(size_t)15;
	*slot = (sl + 63) & ~(size_t)63;
	return rc;
}

/* FUNC record: where each instruction of f (function `index` at addr) is and what it is. */
static void write_func(const struct tr_func *f, uint64_t addr, uint32_t index, const char *name,
		       int out_fd)
{
	uint8_t *p = cap.funcbuf;
	memset(cap.funcbuf, 0, sizeof(cap.funcbuf));
	put32(&p, index);
	put32(&p, (uint32_t)f->nrows);
	put64(&p, addr);
	put64(&p, f->code_size);
	memcpy(p, name, strnlen(name, 31));
	p += 32;
	for (size_t i = 0; i < f->nrows; i++) {
		put32(&p, f->rows[i].offset);
		put32(&p, f->rows[i].len);
		memcpy(p, f->rows[i].insn, strnlen(f->rows[i].insn, 47));
		p += 48;
	}
	hx_rec_write(out_fd, HX_REC_FUNC, cap.funcbuf, (size_t)(p - cap.funcbuf), NULL, 0);
}

/* The arena's bytes as they are built, then written by one tr_patch (each
 * patch is two mprotects: one per case, not three per function). */
struct cap_image {
	uint8_t *bytes;          /* what goes at cap.hx.arena.base */
	size_t size, used;
};

/* n bytes at arena address `at` into the image; -ERANGE outside it. */
static int img_put(struct cap_image *im, const uint8_t *at, const void *src, size_t n)
{
	size_t off = (size_t)(at - cap.hx.arena.base);
	if (at < cap.hx.arena.base || off > im->size || n > im->size - off)
		return -ERANGE;
	memcpy(im->bytes + off, src, n);
	if (off + n > im->used)
		im->used = off + n;
	return 0;
}

#define CAP_THUNK 16     /* the arena's last bytes: call_target rel32's jump to the target */

/* call_target rel32 (x86_64): its displacement pointed at a thunk in the
 * arena's last CAP_THUNK bytes, the arch's tail_jump (jmp *%rcx: the target
 * the harness passes), so the target is called with the return address a
 * direct call gives; the code with the displacement set into code.  0, or -1
 * (message written). */
static int rel32_thunk(const struct tr_func *f, uint8_t *at, struct cap_image *im, uint8_t *code)
{
	memcpy(code, f->code, f->code_size);
	if (f->rel32_off < 0)
		return 0;
	struct tr_op op = { .kind = TR_OP_TAIL_JUMP };
	struct tr_eff eff[TR_MAX_EFF];
	uint8_t jmp[CAP_THUNK];
	char text[64];
	struct ju_err err;
	int neff = 0;
	int n = hx_cap_host.tr->encode(&op, jmp, sizeof(jmp), text, sizeof(text), eff, &neff, &err);
	uint8_t *thunk = cap.hx.arena.base + cap.hx.arena.size - CAP_THUNK;
	int64_t d = (int64_t)(thunk - (at + f->rel32_off + 4));
	if (n <= 0 || d != (int32_t)d || img_put(im, thunk, jmp, (size_t)n))
		return fail("call_target rel32: no thunk for it in the arena (%s)", n <= 0 ? err.msg : "out of reach");
	uint32_t u = (uint32_t)(int32_t)d;
	for (int i = 0; i < 4; i++)
		code[f->rel32_off + i] = (uint8_t)(u >> (8 * i));
	return 0;
}

/* Puts f at `at` (code, and its unwinding data when install_unwind) into the
 * image, writes its jitdump records and its FUNC record.  0, or -1 (message
 * written). */
static int hx_install(const struct tr_func *f, const struct tr_unwind_opts *uo, bool after_load,
		      bool install_unwind, uint8_t *at, uint32_t index, const char *name,
		      struct jdw *w, struct cap_image *im, int out_fd)
{
	struct ju_err err;
	uint64_t addr = (uint64_t)(uintptr_t)at;
	if (tr_unwind_build(f, uo, addr, &cap.unw_install, &err))
		return fail("%s", err.msg);
	uint8_t *code = cap.codebuf;
	int rc = rel32_thunk(f, at, im, code);
	if (rc)
		return rc;
	if (img_put(im, at, code, f->code_size) ||
	    (install_unwind && img_put(im, at + cap.unw_install.eh_off, cap.unw_install.data, cap.unw_install.size)))
		return fail("%s", "code outside the arena");
	bool unw = uo->cfi != TR_CFI_NONE || cap.unw_install.size;
	rc = 0;
	if (unw && !after_load)
		rc = jdw_unwinding_info(w, cap.unw_install.data, cap.unw_install.size, cap.unw_install.hdr_size, cap.unw_install.mapped_size);
	if (!rc)
		rc = jdw_code_load(w, name, addr, code, f->code_size, NULL);
	if (!rc && unw && after_load)
		rc = jdw_unwinding_info(w, cap.unw_install.data, cap.unw_install.size, cap.unw_install.hdr_size, cap.unw_install.mapped_size);
	if (rc)
		return fail("jitdump write: %s", strerror(-rc));
	write_func(f, addr, index, name, out_fd);
	return 0;
}

/* Arms a breakpoint at every instruction boundary of f (function `index`)
 * in the image, in order (a breakpoint's saved bytes include an earlier one
 * it overlaps). */
static int hx_arm_all(const struct tr_func *f, uint8_t *at, uint32_t index, struct cap_image *im)
{
	const struct tr_arch *a = hx_cap_host.tr;
	size_t base = (size_t)(at - cap.hx.arena.base);
	for (size_t i = 0; i < f->nrows; i++) {
		uint32_t off = f->rows[i].offset;
		if (base + off + a->facts->bkpt_len > im->size)
			return fail("%s", "a breakpoint past the end of the arena");
		if (base + off + a->facts->bkpt_len > im->used)
			im->used = base + off + a->facts->bkpt_len;
	}
	uint8_t *code = im->bytes + base;
	for (size_t i = 0; i < f->nrows; i++) {
		if (cap.hx.nbp >= HX_MAX_BP)
			return fail("more than %d breakpoints", HX_MAX_BP);
		uint32_t off = f->rows[i].offset;
		struct hx_bp *b = &cap.hx.bp[cap.hx.nbp++];
		b->addr = at + off;
		memcpy(b->orig, code + off, a->facts->bkpt_len);
		b->func = index;
		b->offset = off;
		b->row = (int)i;
		b->armed = 1;
		memcpy(code + off, a->facts->bkpt, a->facts->bkpt_len);
	}
	return 0;
}

/* The steps of hx_capture_case are never inlined into it: its frame is the
 * one above the anchor, sized on purpose (HX_ABOVE_ANCHOR). */

/* The case's code (and [leaf]) emitted for this host, with the checks that
 * need the emitted rows.  0, or -1 (message written). */
__attribute__((noinline)) static int cap_emit(const struct hx_case *c)
{
	struct ju_err err;
	const struct tr_arch *arch = tr_arch_by_name(c->arch);
	if (!arch || arch != hx_cap_host.tr)
		return fail("case arch %s cannot run on this host", c->arch);
	if (tr_emit(arch, c->ops, c->nops, &cap.code, &err))
		return fail("%s", err.msg);
	cap.hx.call_row = -1;
	for (size_t i = 0; i < cap.code.nrows; i++)
		if (cap.code.rows[i].is_call)
			cap.hx.call_row = (int64_t)i;
	if (cap.hx.call_row < 0 && cap.hx.depth > 1)
		return fail("%s", "depth > 1 needs a call_target in [code]");
	if (cap.hx.call_row < 0 && c->in_callee)
		return fail("%s", "in-callee needs a call_target in [code]");
	if (c->has_leaf) {
		if (tr_emit(arch, c->leaf_ops, c->nleaf, &cap.leaf_code, &err))
			return fail("[leaf]: %s", err.msg);
		if (cap.hx.call_row < 0)
			return fail("%s", "a [leaf] needs a call_target in [code] to call it");
	}
	return 0;
}

/* Where the generated functions go: one slot per level, spaced so perf's
 * mappings never overlap, and the [leaf]'s, in an arena of their size. */
struct cap_layout {
	size_t slot, leaf_slot;
	bool install_unwind;
	struct tr_unwind_opts leaf_unw;
};

/* Bytes of the arena the earlier cases of this child wrote (from its base). */

/* A batch's child keeps its arena for the next case when that one's is as
 * big and at the same place: the same line in the maps, so the case sees the
 * address space a fresh child would, without the mmap, the page-table pages
 * and the munmap per case (about 0.2 ms here).  cap_build then writes every
 * byte an earlier case wrote (zeros past the new code).  Only at the fixed
 * place (arena_place): elsewhere a fresh mmap might have gone anywhere. */
static bool arena_keep(uintptr_t place, size_t size)
{
	struct tr_arena *a = &cap.hx.arena;
	if (!a->base || !place || (uintptr_t)a->base != place ||
	    a->size != ((size + a->page - 1) & ~(a->page - 1)))
		return false;
	a->used = 0;
	return true;
}

/* JU_ARENA_CHECK (tests): past the case's code and data, the arena holds
 * what a fresh mapping would, zeros; =nozero (the control) leaves a kept
 * arena's old bytes for the check to find. */
static int arena_check(size_t used)
{
	if (!getenv("JU_ARENA_CHECK"))
		return 0;
	for (size_t i = used; i < cap.hx.arena.size; i++)
		if (cap.hx.arena.base[i])
			return fail("arena byte +0x%zx is 0x%02x past the code: left by an earlier case", i,
				    cap.hx.arena.base[i]);
	return 0;
}

static int cap_arena(const struct hx_case *c, struct cap_layout *ly)
{
	struct ju_err err;
	ly->leaf_slot = 0;
	if (hx_slot(&cap.code, &c->unw, &ly->slot, &err))
		return fail("%s", err.msg);
	/* a case may pack trampolines closer than their mappings (stride-overlap);
	 * their unwinding data then lives only in the jitdump, which is all perf reads */
	ly->install_unwind = true;
	if (c->stride) {
		if ((size_t)c->stride < cap.code.code_size)
			return fail("stride %d is smaller than the code (%zu bytes)", c->stride, cap.code.code_size);
		ly->install_unwind = (size_t)c->stride >= ly->slot;
		ly->slot = (size_t)c->stride;
	}
	/* the [leaf]'s CFI is always derived from its ops (none if the case has none) */
	ly->leaf_unw = c->unw;
	if (ly->leaf_unw.cfi != TR_CFI_NONE)
		ly->leaf_unw.cfi = TR_CFI_DERIVED;
	if (c->has_leaf && hx_slot(&cap.leaf_code, &ly->leaf_unw, &ly->leaf_slot, &err))
		return fail("[leaf]: %s", err.msg);
	size_t arena_size = ly->slot * (size_t)cap.hx.depth + ly->leaf_slot + 8192;   /* CAP_THUNK in the last */
	uintptr_t place = arena_place();
	if (arena_keep(place, arena_size))
		return 0;
	tr_arena_fini(&cap.hx.arena);
	cap.arena_dirty = 0;
	int rc = place ? tr_arena_init_at(&cap.hx.arena, arena_size, place) : -EEXIST;
	if (rc == -EEXIST)
		rc = tr_arena_init(&cap.hx.arena, arena_size);
	if (rc)
		return fail("arena: %s", strerror(-rc));
	/* breakpoints restored by forced writes where the arch's capture runs
	 * natively; JU_PATCH=mprotect (tests) keeps tr_patch's mprotect pair.  A
	 * kernel that refuses is no error: tr_patch stays on mprotect. */
	const char *how = getenv("JU_PATCH");
	if (HX_ARCH_DIRECT_PATCH && !(how && !strcmp(how, "mprotect")))
		(void)tr_arena_direct(&cap.hx.arena);
	return 0;
}

/* Every level's trampoline, then the [leaf], installed with their jitdump records. */
static int cap_install(const struct hx_case *c, const struct cap_layout *ly, struct jdw *w,
		       struct cap_image *im, int out_fd)
{
	int rc;
	for (int k = 1; k <= cap.hx.depth; k++) {
		uint8_t *at;
		if (tr_arena_alloc(&cap.hx.arena, ly->slot, c->stride ? 1 : 64, &at))
			return fail("%s", "arena full");
		char name[32];
		snprintf(name, sizeof(name), k == 1 ? "tramp" : "tramp%d", k);
		if ((rc = hx_install(&cap.code, &c->unw, c->unwind_after_load, ly->install_unwind, at,
				     (uint32_t)(k - 1), name, w, im, out_fd)))
			return rc;
		cap.hx.tramp[k] = at;
		cap.hx.tramp_size[k] = cap.code.code_size;
	}
	cap.hx.target = (void *)cap.hx.host->target;
	if (c->has_leaf) {
		uint8_t *at;
		if (tr_arena_alloc(&cap.hx.arena, ly->leaf_slot, 64, &at))
			return fail("%s", "arena full");
		if ((rc = hx_install(&cap.leaf_code, &ly->leaf_unw, c->unwind_after_load, true, at,
				     (uint32_t)cap.hx.depth, "leaf", w, im, out_fd)))
			return rc;
		cap.hx.leaf = at;
		cap.hx.leaf_size = cap.leaf_code.code_size;
		cap.hx.target = at;
	}
	return 0;
}

/* GEN: the code is now in generation gen (samples.h); its records are written. */
static void gen_record(int out_fd, uint32_t gen, uint32_t how)
{
	uint8_t b[16], *p = b;
	put32(&p, gen);
	put32(&p, how);
	put64(&p, jdw_timestamp());
	hx_rec_write(out_fd, HX_REC_GEN, b, sizeof(b), NULL, 0);
}

/* The jitdump (its marker before the code arena: facts section 1), the
 * arena, the code, the breakpoints at every instruction boundary: built in
 * an image, installed by one tr_patch. */
__attribute__((noinline)) static int cap_build(const struct hx_case *c, const char *dumpdir, int out_fd)
{
	struct cap_layout ly;
	int rc = jdw_open(&cap.jdw, dumpdir, hx_cap_host.tr->facts->elf_mach);
	if (rc)
		return fail("cannot create the jitdump: %s", strerror(-rc));
	hx_rec_write(out_fd, HX_REC_DUMP, cap.jdw.path, strlen(cap.jdw.path) + 1, NULL, 0);
	rc = cap_arena(c, &ly);
	struct cap_image im = { .size = cap.hx.arena.size };
	if (!rc && !(im.bytes = calloc(1, im.size)))
		rc = fail("%s", "out of memory for the arena's image");
	if (!rc)
		rc = cap_install(c, &ly, &cap.jdw, &im, out_fd);
	/* generations write more records after the maps are read */
	if (c->ngens)
		jdw_unmap_marker(&cap.jdw);
	else
		jdw_close(&cap.jdw);
	for (int k = 1; !rc && c->every_insn && k <= cap.hx.depth; k++)
		rc = hx_arm_all(&cap.code, cap.hx.tramp[k], (uint32_t)(k - 1), &im);
	if (!rc && c->every_insn && cap.hx.leaf)
		rc = hx_arm_all(&cap.leaf_code, cap.hx.leaf, (uint32_t)cap.hx.depth, &im);
	/* over whatever an earlier case of this child left in a kept arena, too */
	size_t n = im.used > cap.arena_dirty ? im.used : cap.arena_dirty;
	const char *chk = getenv("JU_ARENA_CHECK");
	if (chk && !strcmp(chk, "nozero"))
		n = im.used;   /* the control: what the check must catch */
	if (!rc && tr_patch(&cap.hx.arena, cap.hx.arena.base, im.bytes, n))
		rc = fail("%s", "tr_patch failed installing the code");
	if (!rc)
		cap.arena_dirty = n;
	if (!rc)
		rc = arena_check(im.used);
	free(im.bytes);
	if (!rc && c->ngens)
		gen_record(out_fd, 1, 0);
	return rc;
}

/* The trap handler (on an alternate stack), the crash handlers, the spin
 * points' release: once per child (a crash ends the child, so the crash
 * handlers' SA_RESETHAND never has to be undone).  0, or -1 (message written). */
__attribute__((noinline)) static int cap_handlers(void)
{
	if (cap.handlers_done)
		return 0;
	cap.handlers_done = true;
	stack_t ss = { .ss_sp = cap.altstack, .ss_size = sizeof(cap.altstack) };
	sigaltstack(&ss, NULL);
	struct sigaction sa = { 0 };
	sa.sa_sigaction = hx_on_trap;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	/* a spin point's release waits until the trap handler has returned to the spin */
	sigaddset(&sa.sa_mask, HX_SPIN_SIG);
	sigaction(SIGTRAP, &sa, NULL);
	sigdelset(&sa.sa_mask, HX_SPIN_SIG);
	sa.sa_sigaction = hx_on_crash;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	int rc;
	if (hx_spin_enabled() && (rc = hx_spin_install(&cap.hx.arena, hx_spin_check)))
		return fail("spin points: %s", strerror(-rc));
	return 0;
}

/* The case's state before its code runs (a batch's child has run others). */
__attribute__((noinline)) static void cap_reset(const struct hx_case *c, int out_fd)
{
	struct tr_arena kept = cap.hx.arena;   /* the last case's, for arena_keep */
	memset(&cap.hx, 0, sizeof(cap.hx));
	cap.hx.arena = kept;
	cap.hx.fd = out_fd;
	cap.hx.depth = c->depth;
	cap.hx.in_callee = c->in_callee;
	const char *spin = getenv("JU_SPIN_MS");
	if (spin && c->in_callee)
		cap.hx.spin_ns = strtoull(spin, NULL, 10) % 60000 * 1000000ull;
	cap.hx.func = &cap.code;
	cap.hx.host = hx_host_get(c->host);
}

/* A generation's UNWINDING_INFO + CODE_LOAD (order as [unwind] order says). */
static int gen_load(const struct hx_case *c, int gen, uint64_t addr)
{
	char name[32];
	struct ju_err err;
	snprintf(name, sizeof(name), "tramp@g%d", gen);   /* what perf prints for it */
	if (tr_unwind_build(&cap.code, &c->unw, addr, &cap.unw_install, &err))
		return fail("%s", err.msg);
	struct tr_unwind *u = &cap.unw_install;
	bool unw = c->unw.cfi != TR_CFI_NONE || u->size;
	int rc = 0;
	if (unw && !c->unwind_after_load)
		rc = jdw_unwinding_info(&cap.jdw, u->data, u->size, u->hdr_size, u->mapped_size);
	if (!rc)
		rc = jdw_code_load(&cap.jdw, name, addr, cap.code.code, cap.code.code_size, NULL);
	if (!rc && unw && c->unwind_after_load)
		rc = jdw_unwinding_info(&cap.jdw, u->data, u->size, u->hdr_size, u->mapped_size);
	return rc ? fail("jitdump write: %s", strerror(-rc)) : 0;
}

/* Generation gen (2..) of the code: emitted, written where it goes (over
 * the last one, or moved), its records as a JIT writes them (none for a
 * patch; a late one's after its samples: gen_after), breakpoints armed.
 * 0, or -1 (message written). */
__attribute__((noinline)) static int cap_gen(const struct hx_case *c, int gen, int out_fd)
{
	const struct hx_gen *g = &c->gens[gen - 2];
	struct ju_err err;
	size_t n;
	const struct tr_op *ops = hx_case_gen_ops(c, gen, &n);
	if (tr_emit(hx_cap_host.tr, ops, n, &cap.code, &err))
		return fail("[code %d]: %s", gen, err.msg);
	cap.hx.call_row = -1;
	for (size_t i = 0; i < cap.code.nrows; i++)
		if (cap.code.rows[i].is_call)
			cap.hx.call_row = (int64_t)i;
	if (cap.hx.call_row < 0 && g->in_callee)
		return fail("[code %d]: in-callee needs a call_target", gen);
	uint8_t *old = cap.hx.tramp[1], *at = g->how == HX_GEN_MOVE ? old + g->to : old;
	struct cap_image im = { .size = cap.hx.arena.size };
	if (!(im.bytes = malloc(im.size)))
		return fail("%s", "out of memory for the arena's image");
	memcpy(im.bytes, cap.hx.arena.base, im.size);
	int rc = img_put(&im, at, cap.code.code, cap.code.code_size) ? fail("%s", "code outside the arena") : 0;
	cap.hx.nbp = 0;
	if (!rc && g->every_insn)
		rc = hx_arm_all(&cap.code, at, 0, &im);
	if (!rc && tr_patch(&cap.hx.arena, cap.hx.arena.base, im.bytes, im.used))
		rc = fail("%s", "tr_patch failed writing a generation");
	if (im.used > cap.arena_dirty)
		cap.arena_dirty = im.used;
	free(im.bytes);
	uint64_t a = (uint64_t)(uintptr_t)at;
	if (!rc && (g->how == HX_GEN_RELOAD))
		rc = gen_load(c, gen, a);
	if (!rc && g->how == HX_GEN_MOVE && (rc = jdw_code_move(&cap.jdw, (uint64_t)(uintptr_t)old, a,
								cap.code.code_size, cap.jdw.next_index - 1)))
		rc = fail("jitdump write: %s", strerror(-rc));
	if (rc)
		return rc;
	cap.hx.tramp[1] = at;
	cap.hx.tramp_size[1] = cap.code.code_size;
	cap.hx.in_callee = g->in_callee;
	gen_record(out_fd, (uint32_t)gen, (uint32_t)g->how);
	write_func(&cap.code, a, 0, "tramp", out_fd);
	return 0;
}

/* The generations after the first, each run as the first was. */
__attribute__((noinline)) static int cap_gens(const struct hx_case *c, int out_fd)
{
	for (int gen = 2; gen <= c->ngens + 1; gen++) {
		int rc = cap_gen(c, gen, out_fd);
		if (rc)
			return rc;
		alarm(10);
		hx_scrub_stack();
		hx_anchor(&cap.hx);
		alarm(0);
		if (cap.hx.truth_error)
			return fail("truth mismatch in generation %d", gen);
		if (c->gens[gen - 2].how == HX_GEN_LATE && (rc = gen_load(c, gen, (uint64_t)(uintptr_t)cap.hx.tramp[1])))
			return rc;
	}
	int rc = jdw_close(&cap.jdw);
	return rc ? fail("jitdump close: %s", strerror(-rc)) : 0;
}

/* Stack the frames above the anchor are given, as a program's deep stack
 * has it: perf's default 8 KB dump then ends inside the harness's callers
 * (hx_capture_case, the batch, the CLI), where it ended before the capture
 * was split into small functions, and not at the stack's top.  Every golden
 * lists the frames the unwinders find there: this keeps them.  Zeroed, as
 * the stack below is (hx_scrub_stack): an unwinder misled into this frame
 * reads defined bytes, not whatever text the harness left there. */
#define HX_ABOVE_ANCHOR 6248

int hx_capture_case(const struct hx_case *c, const char *case_path, const char *dumpdir, int out_fd)
{
	volatile uint8_t above[HX_ABOVE_ANCHOR];
	for (size_t i = 0; i < sizeof(above); i++)
		above[i] = 0;
	cap_reset(c, out_fd);
	hx_rec_write(out_fd, HX_REC_CASE, case_path, strlen(case_path) + 1, c->text, c->text_len);
	if (cap_emit(c) || cap_build(c, dumpdir, out_fd))
		return -1;
	uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	if (write_maps(out_fd, here, &cap.hx.stack_top))
		return fail("%s", "cannot read /proc/self/maps");
	if (!cap.hx.stack_top)
		return fail("%s", "cannot find the stack mapping");
	if (cap_handlers())
		return -1;
	alarm(10);   /* a trampoline that never returns ends the child */
	hx_scrub_stack();
	hx_anchor(&cap.hx);
	alarm(0);
	if (cap.hx.truth_error)
		return fail("truth mismatch: the C target under level %d was not called from tramp+ret_off",
			    cap.hx.truth_error);
	if (c->ngens && cap_gens(c, out_fd))
		return -1;
	hx_rec_write(out_fd, HX_REC_END, NULL, 0, NULL, 0);
	/* the arena stays for the next case of the batch (arena_keep), or that
	 * one unmaps it and maps its own at the same place */
	return 0;
}
