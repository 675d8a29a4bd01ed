/* libunwind as perf feeds it, on samples whose chains are known: a real
 * stack of this process, and generated trampolines (written to a jitdump by
 * the project's own writer) spliced on top of it.  Also the fixtures the
 * libdw suite shares (uwt.h). */
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#include "tests/uwt.h"
#include "harness/capture/capture.h"
#include "trampolines/tramp.h"

extern const struct uw_unwinder uw_libunwind, uw_libdw;

const struct uw_unwinder *uwt_unwinder;

/* ---- a real stack: f1 -> f2 -> f3 ---- */

/* byte-exact, below ASan's view of the stack (redzones are data here) */
__attribute__((no_sanitize_address, no_sanitize("undefined"), noinline))
static void uwt_copy(uint8_t *dst, uint64_t src, uint64_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
	for (uint64_t i = 0; i < n; i++)
		dst[i] = p[i];
}

static void uwt_read_maps(struct uwt_self *c)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	c->maps_len = fread(c->maps, 1, sizeof(c->maps) - 1, f);
	c->maps[c->maps_len] = 0;
	fclose(f);
	ck_assert_uint_gt(c->maps_len, 0);
	ck_assert_uint_lt(c->maps_len, sizeof(c->maps) - 1);
}

static uint64_t uwt_stack_top(const struct uwt_self *c, uint64_t sp)
{
	const char *p = c->maps;
	while (p && *p) {
		unsigned long long s, e;
		if (sscanf(p, "%llx-%llx", &s, &e) == 2 && sp >= s && sp < e)
			return e;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

/* The host's register facts: the samples, the emitter and the jitdump are
 * the host's own (x86_64 natively, aarch64 natively or under qemu-aarch64). */
const struct uw_arch *uwt_arch(void)
{
	const struct tr_arch *h = tr_arch_host();
	const struct uw_arch *a = h ? uw_arch_by_mach(h->facts->elf_mach) : NULL;
	ck_assert_msg(a != NULL, "no register facts for this host");
	return a;
}

__attribute__((noinline)) static void uwt_take(struct uwt_self *c, const ucontext_t *uc)
{
	uint64_t abi, mask;
	memset(&c->s, 0, sizeof(c->s));
	hx_cap_host.regs(uc, &abi, &mask, c->s.regs);
	const struct uw_arch *a = uwt_arch();
	c->s.arch = a;
	c->s.abi = abi;
	c->s.mask = mask;
	/* getcontext's pc is its own return address (aarch64: x30, stored as the pc) */
	uint64_t sp = c->s.regs[a->perf_sp], top = uwt_stack_top(c, sp);
	ck_assert_uint_gt(top, sp);
	uint64_t n = top - sp < UWT_STACK_MAX ? top - sp : UWT_STACK_MAX;
	uwt_copy(c->stack, sp, n);
	c->s.stack_addr = sp;
	c->s.stack = c->stack;
	c->s.stack_size = n;
	c->ip = c->s.regs[a->perf_ip];
}

__attribute__((noinline, noclone)) static void uwt_f3(struct uwt_self *c)
{
	static ucontext_t uc;
	c->ra[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	getcontext(&uc);
	/* the sample: f3 right after a call (getcontext's return address) */
	uwt_take(c, &uc);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void uwt_f2(struct uwt_self *c)
{
	c->ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uwt_f3(c);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) static void uwt_f1(struct uwt_self *c)
{
	c->ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	uwt_f2(c);
	__asm__ volatile("" ::: "memory");
}

void uwt_capture_self(struct uwt_self *c)
{
	uwt_read_maps(c);
	uwt_f1(c);
	ck_assert_uint_ne(c->ip, 0);
}

/* ---- perf's view ---- */

/* Made by the parent (unchecked fixture) and removed by it, so what a
 * failing test leaves in it goes too. */
static char uwt_base[64];

static void uwt_rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char p[512];
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	rmdir(dir);
}

static void uwt_view_build(struct uwt_view *w, const struct uwt_self *c, enum pv_profile prof)
{
	struct ju_err err;
	ck_assert_msg(uw_maps_parse(c->maps, c->maps_len, &w->maps, &w->nmaps, &err) == 0,
		      "%s", err.msg);
	ck_assert_msg(pv_build(&w->pv, prof, w->maps, w->nmaps, w->have_jd ? &w->jd : NULL, NULL,
			       &err) == 0, "%s", err.msg);
	ck_assert_msg(uw_view_init(&w->v, uwt_arch(), w->maps, w->nmaps, w->have_jd ? &w->jd : NULL, &err) == 0, "%s", err.msg);
	w->oracle = true;
	w->v.pv = &w->pv;
}

void uwt_view_self(struct uwt_view *w, const struct uwt_self *c, enum pv_profile prof)
{
	memset(w, 0, sizeof(*w));
	uwt_view_build(w, c, prof);
}

void uwt_view_free(struct uwt_view *w)
{
	pv_fini(&w->pv);
	if (w->oracle)
		uw_view_fini(&w->v);
	uw_maps_free(w->maps, w->nmaps);
	if (w->have_jd)
		jd_close(&w->jd);
	if (w->dumpdir[0])
		uwt_rm_dir(w->dumpdir);
	if (w->dump_path[0])
		unlink(w->dump_path);
	if (w->map_path[0])
		unlink(w->map_path);
	memset(w, 0, sizeof(*w));
}

/* ---- a trampoline called by f3 ---- */

static bool uwt_free_at(const struct uw_map *m, size_t n, uint64_t a, uint64_t len)
{
	for (size_t i = 0; i < n; i++)
		if (a < m[i].end && m[i].start < a + len)
			return false;
	return true;
}

/* The sample at row R of the trampoline at code, called from c's f3. */
static void uwt_lay_stack(struct uwt_tramp *t, const struct uwt_self *c, const struct tr_row *R, uint64_t code)
{
	/* f3 called the trampoline at c->ip: its CFA is f3's sp, its return
	 * address c->ip (aarch64: in x30 until saved, and x30 holds the
	 * trampoline's own return address once its call came back); lay out the
	 * stack the row says, on top of f3's */
	const struct uw_arch *a = c->s.arch;
	uint64_t cfa = c->s.regs[a->perf_sp], below = (uint64_t)R->sp_off;
	ck_assert_uint_le(below, sizeof(t->stack) - UWT_STACK_MAX);
	uint64_t sp = cfa - below, lr = c->ip;
	if (R->ra_where != TR_RA_IN_REG && t->ret_off && R->offset >= t->ret_off)
		lr = code + t->ret_off;
	memset(t->stack, 0, below);
	memcpy(t->stack + below, c->stack, c->s.stack_size);
	for (int r = 0; r < a->ndw && r < TR_NREGS; r++)
		if (R->saved_mask >> r & 1) {
			uint64_t val = r == a->facts->dw_lr ? c->ip : c->s.regs[a->perf_of_dw[r]];
			memcpy(t->stack + below + (uint64_t)(int64_t)R->saved_off[r], &val, 8);
		}
	if (R->ra_where == TR_RA_AT_CFA)
		memcpy(t->stack + below + (uint64_t)R->ra_off, &c->ip, 8);
	if (R->fp_saved) {
		uint64_t fp = c->s.regs[a->perf_fp];
		memcpy(t->stack + below + (uint64_t)R->fp_save_off, &fp, 8);
	}
	t->s = c->s;
	t->s.stack = t->stack;
	t->s.stack_addr = sp;
	t->s.stack_size = below + c->s.stack_size;
	t->s.regs[a->perf_sp] = sp;
	t->pc = code + R->offset;
	t->s.regs[a->perf_ip] = t->pc;
	if (R->fp_set)
		t->s.regs[a->perf_fp] = cfa - (uint64_t)R->fp_off;
	if (a->perf_lr >= 0)
		t->s.regs[a->perf_lr] = lr;
}

size_t uwt_tramp(struct uwt_tramp *t, struct uwt_self *c, const char *const *ops, size_t nops,
		 const struct tr_unwind_opts *opts, enum pv_profile prof, const char *dumpdir, size_t row)
{
	static struct tr_func f;
	static struct tr_unwind u;
	struct tr_op o[32];
	struct ju_err err;
	memset(t, 0, sizeof(*t));
	t->c = c;
	ck_assert_uint_le(nops, 32);
	for (size_t i = 0; i < nops; i++) {
		memset(&o[i], 0, sizeof(o[i]));
		ck_assert_msg(tr_op_parse(ops[i], &o[i], &err) == 0, "%s", err.msg);
	}
	ck_assert_msg(tr_emit(tr_arch_host(), o, nops, &f, &err) == 0, "%s", err.msg);
	ck_assert_uint_lt(row, f.nrows);
	t->row = row;
	t->nrows = f.nrows;
	for (size_t i = 0; i < f.nrows; i++)
		if (f.rows[i].is_call)
			t->call_row = i;
	t->ret_off = f.ret_off > 0 ? (uint64_t)f.ret_off : 0;

	/* an address no map of this process covers */
	struct uw_map *maps;
	size_t nmaps;
	ck_assert_msg(uw_maps_parse(c->maps, c->maps_len, &maps, &nmaps, &err) == 0, "%s", err.msg);
	uint64_t code = 0x10000000;
	for (int k = 0; k < 64 && !uwt_free_at(maps, nmaps, code, 0x10000); k++)
		code += 0x1000000;
	ck_assert(uwt_free_at(maps, nmaps, code, 0x10000));
	uw_maps_free(maps, nmaps);
	t->code = code;

	struct tr_unwind_opts uo;
	tr_unwind_opts_default(&uo);
	if (opts)
		uo = *opts;
	ck_assert_msg(tr_unwind_build(&f, &uo, code, &u, &err) == 0, "%s", err.msg);
	if (!dumpdir) {
		snprintf(t->w.dumpdir, sizeof(t->w.dumpdir), "%s/XXXXXX", uwt_base[0] ? uwt_base : "/tmp");
		ck_assert_ptr_nonnull(mkdtemp(t->w.dumpdir));
	}
	static struct jdw jw;
	ck_assert_int_eq(jdw_open(&jw, dumpdir ? dumpdir : t->w.dumpdir, tr_arch_host()->facts->elf_mach), 0);
	if (dumpdir) {
		snprintf(t->w.dump_path, sizeof(t->w.dump_path), "%s", jw.path);
		snprintf(t->w.map_path, sizeof(t->w.map_path), "%s/perf-%u.map", dumpdir, (unsigned)jw.pid);
	}
	/* as the capture does: no record when there is nothing to say */
	if (uo.cfi != TR_CFI_NONE || u.size)
		ck_assert_int_eq(jdw_unwinding_info(&jw, u.data, u.size, u.hdr_size, u.mapped_size), 0);
	ck_assert_int_eq(jdw_code_load(&jw, "tramp", code, f.code, f.code_size, NULL), 0);
	ck_assert_int_eq(jdw_close(&jw), 0);
	struct ju_err je;
	ck_assert_msg(jd_open(&t->w.jd, jw.path, &je) == 0, "%s", je.msg);
	t->w.have_jd = true;
	uwt_view_build(&t->w, c, prof);

	uwt_lay_stack(t, c, &f.rows[row], code);
	return f.nrows;
}

void uwt_tramp_free(struct uwt_tramp *t)
{
	uwt_view_free(&t->w);
}

int uwt_find(const struct uw_result *r, uint64_t v)
{
	for (int i = 0; i < r->n; i++)
		if (r->addr[i] == v)
			return i;
	return -1;
}

const char *uwt_chain(const struct uw_result *r)
{
	static char buf[2048];
	size_t n = 0;
	for (int i = 0; i < r->n && i < 24 && n < sizeof(buf) - 64; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "0x%llx%s ", (unsigned long long)r->addr[i],
				      r->flags[i] & UW_F_FALLBACK ? "(fb)" : "");
	snprintf(buf + n, sizeof(buf) - n, "[%s: %s]", uw_stop_name(r->stop), r->why);
	return buf;
}

static void uwt_run(const struct uw_unwinder *u, const struct uw_view *v, const struct uw_sample *s,
		    struct uw_result *r)
{
	void *st = NULL;
	struct ju_err err = { 0 };
	ck_assert_msg(!u->open || u->open(v, &st, &err) == 0, "%s open: %s", u->name, err.msg);
	u->unwind(st, v, s, r);
	if (u->close)
		u->close(st);
}

/* ---- tests both suites run ---- */

static const char *const cpython_fp[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
/* without a frame record: CPython 3.12's x86_64 trampoline; on aarch64 the
 * call clobbers x30, so the frameless form saves only x30 */
#if defined(__aarch64__)
static const char *const cpython_nofp[] = { "save_reg x30", "call_target", "restore_reg x30", "ret" };
#else
static const char *const cpython_nofp[] = { "alloc 8", "call_target", "free 8", "ret" };
#endif

static struct uwt_self self;
static struct uwt_tramp tr;
static struct uw_result res, orc;

START_TEST(self_stack)
{
	const struct uw_unwinder *u = uwt_unwinder;
	struct uwt_view w;
	uwt_capture_self(&self);
	uwt_view_self(&w, &self, PV_CURRENT);
	uwt_run(u, &w.v, &self.s, &res);
	ck_assert_msg(res.n >= 4, "%s: %s", u->name, uwt_chain(&res));
	ck_assert_uint_eq(res.addr[0], self.ip);
	for (int i = 0; i < 3; i++) {
		ck_assert_msg(res.addr[i + 1] == self.ra[i], "%s frame %d: want 0x%llx, chain %s", u->name,
			      i + 1, (unsigned long long)self.ra[i], uwt_chain(&res));
		ck_assert_msg(!(res.flags[i + 1] & UW_F_FALLBACK), "%s frame %d flagged fallback", u->name, i + 1);
	}
	uwt_view_free(&w);
}
END_TEST

/* every instruction boundary of a trampoline whose CFI is right: the chain
 * is the oracle's and the truth's, and no frame comes from a fallback */
static void uwt_tramp_cfi(const char *const *ops, size_t nops, int row)
{
	const struct uw_unwinder *u = uwt_unwinder;
	uwt_capture_self(&self);
	size_t nrows = uwt_tramp(&tr, &self, ops, nops, NULL, PV_CURRENT, "/tmp", 0);
	for (size_t k = 0; k < nrows; k++) {
		if (row >= 0 && k != (size_t)row)
			continue;
		if (k) {
			uwt_tramp_free(&tr);
			uwt_tramp(&tr, &self, ops, nops, NULL, PV_CURRENT, "/tmp", k);
		}
		uwt_run(u, &tr.w.v, &tr.s, &res);
		uw_oracle.unwind(NULL, &tr.w.v, &tr.s, &orc);
		const uint64_t want[] = { tr.pc, self.ip, self.ra[0], self.ra[1], self.ra[2] };
		for (int i = 0; i < 5; i++) {
			ck_assert_msg(orc.n > i && orc.addr[i] == want[i], "oracle row %zu frame %d: %s", k, i,
				      uwt_chain(&orc));
			ck_assert_msg(res.n > i && res.addr[i] == want[i], "%s row %zu frame %d: want 0x%llx, chain %s",
				      u->name, k, i, (unsigned long long)want[i], uwt_chain(&res));
			ck_assert_msg(!(res.flags[i] & UW_F_FALLBACK), "%s row %zu frame %d flagged fallback: %s",
				      u->name, k, i, uwt_chain(&res));
		}
	}
	uwt_tramp_free(&tr);
}

START_TEST(tramp_fp_cfi)
{
	uwt_tramp_cfi(cpython_fp, 5, -1);
}
END_TEST

START_TEST(tramp_nofp_cfi)
{
	uwt_tramp_cfi(cpython_nofp, 4, -1);
}
END_TEST

START_TEST(no_perf_view)
{
	const struct uw_unwinder *u = uwt_unwinder;
	struct uw_view v;
	memset(&v, 0, sizeof(v));
	v.arch = uwt_arch();
	uwt_capture_self(&self);
	uwt_run(u, &v, &self.s, &res);
	ck_assert_int_eq(res.stop, UW_STOP_ERROR);
	ck_assert_str_eq(res.why, "no perf view");
	/* and a state that failed to open (NULL) is refused the same way */
	u->unwind(NULL, &v, &self.s, &res);
	ck_assert_str_eq(res.why, "no perf view");
}
END_TEST

static void uwt_base_make(void)
{
	snprintf(uwt_base, sizeof(uwt_base), "/tmp/uwt-XXXXXX");
	if (!mkdtemp(uwt_base))
		uwt_base[0] = 0;
}

static void uwt_base_remove(void)
{
	DIR *d = uwt_base[0] ? opendir(uwt_base) : NULL;
	struct dirent *e;
	char p[128];
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(p, sizeof(p), "%s/%s", uwt_base, e->d_name);
			uwt_rm_dir(p);
		}
	if (d)
		closedir(d);
	if (uwt_base[0])
		rmdir(uwt_base);
}

void uwt_add_common(TCase *tc)
{
	tcase_add_unchecked_fixture(tc, uwt_base_make, uwt_base_remove);
	tcase_add_test(tc, self_stack);
	tcase_add_test(tc, tramp_fp_cfi);
	tcase_add_test(tc, tramp_nofp_cfi);
	tcase_add_test(tc, no_perf_view);
}

/* ---- libunwind only ---- */

static void set_libunwind(void)
{
	uwt_unwinder = &uw_libunwind;
}

#if defined(__x86_64__)
/* mapped_size 0: the .eh_frame_hdr table lies past perf's mapping, in the
 * JIT arena's address space, which perf drops (perf inject -j) and where no
 * other mapping answers (the capture places arenas where nothing was ever
 * mapped): perf's access_dso_mem fails and the chain stops at the
 * trampoline, no rbp fallback.  Real perf 6.1 gives the same chain at every
 * sample point of cases/x86_64/mapped-zero-* (the perf column). */
START_TEST(mapped_zero_stops)
{
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.mapped = 0;
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, &o, PV_CURRENT, "/tmp", 2);   /* at call *%rcx */
	uwt_run(&uw_libunwind, &tr.w.v, &tr.s, &res);
	ck_assert_msg(res.n == 1 && res.stop == UW_STOP_MEM && !(res.flags[0] & UW_F_FALLBACK),
		      "%s", uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

/* no .eh_frame_hdr: perf's find_proc_info answers -EINVAL (not
 * -UNW_ENOINFO), so libunwind does not walk rbp either (the same perf run
 * without an UNWINDING_INFO record: busy, tramp, nothing below) */
START_TEST(no_eh_frame_hdr_stops)
{
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.cfi = TR_CFI_NONE;
	o.hdr = TR_HDR_NONE;
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, &o, PV_CURRENT, "/tmp", 2);
	uwt_run(&uw_libunwind, &tr.w.v, &tr.s, &res);
	ck_assert_msg(res.n == 1 && res.stop == UW_STOP_NO_INFO, "%s", uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

/* an .eh_frame_hdr without its table (fde_count omitted): the lookup finds
 * no FDE, -UNW_ENOINFO, and x86_64 unw_step walks rbp.  A frame-pointer
 * trampoline comes out right by luck: its caller must be flagged */
START_TEST(no_fde_fp_fallback)
{
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.hdr_table = false;
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_fp, 5, &o, PV_CURRENT, "/tmp", 2);
	uwt_run(&uw_libunwind, &tr.w.v, &tr.s, &res);
	ck_assert_msg(res.n >= 3 && res.addr[1] == self.ip && res.addr[2] == self.ra[0], "%s",
		      uwt_chain(&res));
	ck_assert_msg(res.flags[1] & UW_F_FALLBACK, "caller not flagged: %s", uwt_chain(&res));
	ck_assert_msg(!(res.flags[2] & UW_F_FALLBACK), "f3's own CFI flagged: %s", uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

/* the same without a frame pointer: the rbp walk skips f3 (the
 * trampoline's caller) and lands in f2, flagged */
START_TEST(no_fde_nofp_loses_caller)
{
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	o.hdr_table = false;
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, cpython_nofp, 4, &o, PV_CURRENT, "/tmp", 1);  /* at call *%rcx */
	uwt_run(&uw_libunwind, &tr.w.v, &tr.s, &res);
	ck_assert_msg(uwt_find(&res, self.ip) < 0, "caller found without CFI: %s", uwt_chain(&res));
	ck_assert_msg(res.n >= 2 && res.addr[1] == self.ra[0] && (res.flags[1] & UW_F_FALLBACK), "%s",
		      uwt_chain(&res));
	uwt_tramp_free(&tr);
}
END_TEST

#elif defined(__aarch64__)
/* aarch64: when dwarf_step fails for any reason (the table unreadable, no
 * .eh_frame_hdr, no FDE), libunwind 1.6's unw_step tests for a PLT entry and
 * then takes x30 as the caller's pc, without moving the CFA.  Each row says
 * what that gives in a CPython trampoline; the caller's frame is always
 * flagged.  The option that hides the CFI, the row, and the outcome. */
enum uwt_lr_hide { UWT_MAPPED_ZERO, UWT_NO_HDR, UWT_NO_TABLE };
static const struct uwt_lr_case {
	enum uwt_lr_hide hide;
	bool nofp;
	size_t row;
	bool caller_found;   /* frame 1 is f3 (x30 still holds the RA), else the trampoline's own RA */
} uwt_lr_cases[] = {
	/* at blr x3, x30 still holds f3's return address: right by luck; the
	 * CFA stayed at the trampoline's sp, so f3's own CFI, applied there,
	 * does not find f2 (with the frame record below: f3 repeats) */
	{ UWT_MAPPED_ZERO, false, 2, true },
	{ UWT_NO_HDR, false, 2, true },
	{ UWT_NO_TABLE, false, 2, true },
	{ UWT_NO_TABLE, true, 1, true },
	/* after the call x30 is the trampoline's own return address (ldr x30
	 * is next): the caller is lost */
	{ UWT_NO_TABLE, true, 2, false },
};

START_TEST(lr_fallback)
{
	const struct uwt_lr_case *k = &uwt_lr_cases[_i];
	struct tr_unwind_opts o;
	tr_unwind_opts_default(&o);
	if (k->hide == UWT_MAPPED_ZERO) {
		o.mapped = 0;
	} else if (k->hide == UWT_NO_HDR) {
		o.cfi = TR_CFI_NONE;
		o.hdr = TR_HDR_NONE;
	} else {
		o.hdr_table = false;
	}
	uwt_capture_self(&self);
	uwt_tramp(&tr, &self, k->nofp ? cpython_nofp : cpython_fp, k->nofp ? 4 : 5, &o, PV_CURRENT, "/tmp",
		  k->row);
	uwt_run(&uw_libunwind, &tr.w.v, &tr.s, &res);
	ck_assert_msg(res.n >= 2 && (res.flags[1] & UW_F_FALLBACK), "%s", uwt_chain(&res));
	if (k->caller_found) {
		ck_assert_msg(res.addr[1] == self.ip, "%s", uwt_chain(&res));
		ck_assert_msg(res.n < 3 || res.addr[2] != self.ra[0], "the CFA moved: %s", uwt_chain(&res));
	} else {
		ck_assert_msg(res.addr[1] == tr.code + tr.ret_off, "%s", uwt_chain(&res));
		ck_assert_msg(uwt_find(&res, self.ip) < 0, "caller found without CFI: %s", uwt_chain(&res));
	}
	uwt_tramp_free(&tr);
}
END_TEST
#endif

/* perf's libunwind keeps one address space per process with UNW_CACHE_GLOBAL
 * and flushes it only at exec: a pc keeps the rules libunwind first found
 * there.  A JIT puts function A (a frame record) at an address, samples it,
 * then writes B (no frame record, the same call offset) over it with its
 * own CFI: B's sample at the call unwinds with A's rules (CFA = fp + 16), so
 * f3 (the caller) is lost and the chain lands in f2, as real perf 5.10, 6.1
 * and 6.12 do (issue 34).  Each row: which samples one process takes, and
 * whether B's chain finds its caller. */
static const char *const gen_a[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
#if defined(__x86_64__)
static const char *const gen_b[] = { "alloc 0x18", "call_target", "free 0x18", "ret" };
#elif defined(__aarch64__)
static const char *const gen_b[] = { "save_reg x30", "alloc 16", "call_target", "free 16", "restore_reg x30", "ret" };
#else
static const char *const gen_b[] = { "save_reg ra", "alloc 16", "nop", "call_target", "free 16", "restore_reg ra",
				     "ret" };
#endif
static const struct lu_mem_case {
	const char *what;
	uint64_t proc_a;       /* A sampled first under this process (0: A never runs) */
	uint64_t proc_b;       /* then B, at A's address, under this one (0: no process state) */
	bool exec;             /* an exec between them (perf's unwind__flush_access) */
	bool caller_found;
} lu_mem_cases[] = {
	{ "B over A in one process: A's rules", 1, 1, false, false },
	{ "B alone (the control)", 0, 2, false, true },
	{ "B over A after an exec", 3, 3, true, true },
	{ "B over A in another process", 4, 5, false, true },
	{ "B over A without process state (the cases)", 6, 0, false, true },
};

/* One generation at the trampolines' address, sampled at its call under proc;
 * its pc through *pc. */
static void lu_gen(const char *const *ops, size_t nops, uint64_t proc, struct uw_result *out, uint64_t *pc)
{
	uwt_tramp(&tr, &self, ops, nops, NULL, PV_CURRENT, NULL, 0);
	size_t row = tr.call_row;
	uwt_tramp_free(&tr);
	uwt_tramp(&tr, &self, ops, nops, NULL, PV_CURRENT, NULL, row);
	tr.s.lu_proc = proc;
	uwt_run(&uw_libunwind, &tr.w.v, &tr.s, out);
	*pc = tr.pc;
	uwt_tramp_free(&tr);
}

START_TEST(process_memory)
{
	const struct lu_mem_case *k = &lu_mem_cases[_i];
	uint64_t pc_a = 0, pc_b;
	uwt_capture_self(&self);
	if (k->proc_a) {
		lu_gen(gen_a, sizeof(gen_a) / sizeof(gen_a[0]), k->proc_a, &res, &pc_a);
		ck_assert_msg(res.n >= 2 && res.addr[1] == self.ip && !(res.flags[1] & UW_F_FALLBACK),
			      "%s: A: %s", k->what, uwt_chain(&res));
	}
	if (k->exec)
		uw_libunwind_flush(k->proc_a);
	lu_gen(gen_b, sizeof(gen_b) / sizeof(gen_b[0]), k->proc_b, &res, &pc_b);
	ck_assert_msg(!k->proc_a || pc_a == pc_b, "%s: A sampled at 0x%llx, B at 0x%llx", k->what,
		      (unsigned long long)pc_a, (unsigned long long)pc_b);
	ck_assert_msg(res.n >= 2 && !(res.flags[1] & UW_F_FALLBACK), "%s: B: %s", k->what, uwt_chain(&res));
	if (k->caller_found)
		ck_assert_msg(res.addr[1] == self.ip, "%s: B: %s", k->what, uwt_chain(&res));
	else
		ck_assert_msg(uwt_find(&res, self.ip) < 0 && res.addr[1] == self.ra[0],
			      "%s: B's caller 0x%llx kept, or not f2 next: %s", k->what,
			      (unsigned long long)self.ip, uwt_chain(&res));
	/* the frame A's rules gave is flagged, and says whose rules they were */
	for (int i = 0; i < res.n; i++)
		ck_assert_msg(!(res.flags[i] & UW_F_EARLIER_RULES) == (k->caller_found || i != 1),
			      "%s: frame %d flags 0x%x: %s", k->what, i, res.flags[i], uwt_chain(&res));
	ck_assert_msg(k->caller_found ? !res.earlier_why[0] : strstr(res.earlier_why, "rules of tramp") != NULL,
		      "%s: '%s'", k->what, res.earlier_why);
	uw_libunwind_forget();
}
END_TEST

/* libunwind's registers to perf's, as the unwinder maps them (the arch table's
 * perf_of_dw, libunwind numbering registers as DWARF does), against the pairs
 * perf's arch/<arch>/util/unwind-libunwind.c maps: libunwind's own register
 * constants and the kernel's perf register ids (asm/perf_regs.h). */
#include <libunwind.h>
#include <asm/perf_regs.h>

START_TEST(register_map_is_perfs)
{
	static const struct { int unw, perf; } pairs[] = {
#if defined(__x86_64__)
		{ UNW_X86_64_RAX, PERF_REG_X86_AX }, { UNW_X86_64_RDX, PERF_REG_X86_DX },
		{ UNW_X86_64_RCX, PERF_REG_X86_CX }, { UNW_X86_64_RBX, PERF_REG_X86_BX },
		{ UNW_X86_64_RSI, PERF_REG_X86_SI }, { UNW_X86_64_RDI, PERF_REG_X86_DI },
		{ UNW_X86_64_RBP, PERF_REG_X86_BP }, { UNW_X86_64_RSP, PERF_REG_X86_SP },
		{ UNW_X86_64_R8, PERF_REG_X86_R8 }, { UNW_X86_64_R9, PERF_REG_X86_R9 },
		{ UNW_X86_64_R10, PERF_REG_X86_R10 }, { UNW_X86_64_R11, PERF_REG_X86_R11 },
		{ UNW_X86_64_R12, PERF_REG_X86_R12 }, { UNW_X86_64_R13, PERF_REG_X86_R13 },
		{ UNW_X86_64_R14, PERF_REG_X86_R14 }, { UNW_X86_64_R15, PERF_REG_X86_R15 },
		{ UNW_X86_64_RIP, PERF_REG_X86_IP }, { UNW_REG_IP, PERF_REG_X86_IP },
		{ UNW_REG_SP, PERF_REG_X86_SP },
#elif defined(__aarch64__)
		{ UNW_AARCH64_X0, PERF_REG_ARM64_X0 }, { UNW_AARCH64_X1, PERF_REG_ARM64_X1 },
		{ UNW_AARCH64_X16, PERF_REG_ARM64_X16 }, { UNW_AARCH64_X19, PERF_REG_ARM64_X19 },
		{ UNW_AARCH64_X28, PERF_REG_ARM64_X28 }, { UNW_AARCH64_X29, PERF_REG_ARM64_X29 },
		{ UNW_AARCH64_X30, PERF_REG_ARM64_LR }, { UNW_AARCH64_SP, PERF_REG_ARM64_SP },
		{ UNW_AARCH64_PC, PERF_REG_ARM64_PC }, { UNW_REG_IP, PERF_REG_ARM64_LR },
		{ UNW_REG_SP, PERF_REG_ARM64_SP },
#elif defined(__riscv)
		/* libunwind's x1-x31 are the DWARF numbers; its pc comes after f0-f31 (lu_pc) */
		{ UNW_RISCV_X1, PERF_REG_RISCV_RA }, { UNW_RISCV_X2, PERF_REG_RISCV_SP },
		{ UNW_RISCV_X3, PERF_REG_RISCV_GP }, { UNW_RISCV_X8, PERF_REG_RISCV_S0 },
		{ UNW_RISCV_X10, PERF_REG_RISCV_A0 }, { UNW_RISCV_X27, PERF_REG_RISCV_S11 },
		{ UNW_RISCV_X31, PERF_REG_RISCV_T6 }, { UNW_RISCV_PC, PERF_REG_RISCV_PC },
		{ UNW_REG_IP, PERF_REG_RISCV_PC }, { UNW_REG_SP, PERF_REG_RISCV_SP },
#endif
	};
	const struct uw_arch *a = uw_arch_host();
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_gt(sizeof(pairs), 0);
	for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		int id;
		if (a->lu_pc && pairs[i].unw == a->lu_pc) {
			id = a->perf_ip;
		} else {
			ck_assert_int_lt(pairs[i].unw, a->ndw);
			id = a->perf_of_dw[pairs[i].unw];
		}
		ck_assert_msg(id == pairs[i].perf, "libunwind register %d: perf id %d, perf maps it to %d",
			      pairs[i].unw, id, pairs[i].perf);
	}
	/* past the table's DWARF registers (aarch64 PSTATE, V0..): no perf register */
	ck_assert_int_le(a->ndw, (int)(sizeof(a->perf_of_dw) / sizeof(a->perf_of_dw[0])));
}
END_TEST

Suite *suite_libunwind(void);
Suite *suite_libunwind(void)
{
	Suite *s = suite_create("libunwind");
	TCase *tc = tcase_create("libunwind");
	tcase_add_checked_fixture(tc, set_libunwind, NULL);
	tcase_set_timeout(tc, 60);
	uwt_add_common(tc);
	tcase_add_test(tc, register_map_is_perfs);
	tcase_add_loop_test(tc, process_memory, 0, (int)(sizeof(lu_mem_cases) / sizeof(lu_mem_cases[0])));
#if defined(__x86_64__)
	tcase_add_test(tc, mapped_zero_stops);
	tcase_add_test(tc, no_eh_frame_hdr_stops);
	tcase_add_test(tc, no_fde_fp_fallback);
	tcase_add_test(tc, no_fde_nofp_loses_caller);
#elif defined(__aarch64__)
	tcase_add_loop_test(tc, lr_fallback, 0, (int)(sizeof(uwt_lr_cases) / sizeof(uwt_lr_cases[0])));
#endif
	suite_add_tcase(s, tc);
	return s;
}
