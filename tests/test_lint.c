/* unwinders/lint/lint.c and `jitunwind lint` / `jitunwind dump`: every rule fires
 * on a crafted dump that breaks it and stays quiet on the same dump fixed;
 * the harness's own dumps lint clean (the negative cases yield their rule
 * ids); dump's row tables match the oracle (ehf_row_at) and the emitter's
 * truth rows; perf's layout matches the jitted ELF perfview writes. */
#include <check.h>
#include <dirent.h>
#include <dwarf.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/run/case.h"
#include "trampolines/tramp.h"
#include "unwinders/model/ehframe.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/lint/lint.h"
#include "unwinders/model/perfview.h"
#include "unwinders/uwarch.h"
#include "unwinders/view.h"

#define PID 4242u
#define ADDR 0x7f0000001000ull

static char err[1024];

/* ---- a jitdump builder ---- */

struct jb {
	uint8_t *p;
	size_t n, cap;
	uint64_t ts;
};

static void jb_put(struct jb *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		size_t nc = b->cap ? b->cap : 4096;
		while (nc < b->n + n)
			nc *= 2;
		b->p = realloc(b->p, nc);
		ck_assert_ptr_nonnull(b->p);
		b->cap = nc;
	}
	if (n)
		memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void jb_zero(struct jb *b, size_t n)
{
	static const uint8_t z[64];
	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);
		jb_put(b, z, k);
		n -= k;
	}
}

static void p32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void p64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static void jb_hdr(struct jb *b, uint32_t magic, uint32_t version, uint32_t total, uint32_t mach, uint64_t flags)
{
	uint8_t h[40] = { 0 };
	p32(h, magic);
	p32(h + 4, version);
	p32(h + 8, total);
	p32(h + 12, mach);
	p32(h + 20, PID);
	p64(h + 24, 1000);
	p64(h + 32, flags);
	b->n = 0;
	b->ts = 2000;
	jb_put(b, h, sizeof(h));
}

static void jb_std(struct jb *b)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, 0);
}

static size_t jb_prefix(struct jb *b, uint32_t id, uint32_t total)
{
	uint8_t pf[16];
	size_t at = b->n;
	p32(pf, id);
	p32(pf + 4, total);
	p64(pf + 8, b->ts);
	b->ts += 10;
	jb_put(b, pf, 16);
	return at;
}

/* CODE_LOAD with perf's layout: name, NUL, zero padding, then the code */
static size_t jb_load_pid(struct jb *b, uint32_t pid, const char *name, uint64_t addr, const uint8_t *code,
			  size_t n, uint64_t index)
{
	size_t nl = strlen(name) + 1;
	size_t pad = (8 - (56 + nl + n) % 8) % 8;
	size_t at = jb_prefix(b, JD_CODE_LOAD, (uint32_t)(56 + nl + pad + n));
	uint8_t f[40];
	p32(f, pid);
	p32(f + 4, pid);
	p64(f + 8, addr);
	p64(f + 16, addr);
	p64(f + 24, n);
	p64(f + 32, index);
	jb_put(b, f, sizeof(f));
	jb_put(b, name, nl);
	jb_zero(b, pad);
	jb_put(b, code, n);
	return at;
}

static size_t jb_load(struct jb *b, const char *name, uint64_t addr, const uint8_t *code, size_t n, uint64_t index)
{
	return jb_load_pid(b, PID, name, addr, code, n, index);
}

static size_t jb_unw(struct jb *b, const uint8_t *d, size_t dlen, uint64_t us, uint64_t hs, uint64_t ms)
{
	size_t pad = (8 - dlen % 8) % 8;
	size_t at = jb_prefix(b, JD_CODE_UNWINDING_INFO, (uint32_t)(40 + dlen + pad));
	uint8_t f[24];
	p64(f, us);
	p64(f + 8, hs);
	p64(f + 16, ms);
	jb_put(b, f, sizeof(f));
	jb_put(b, d, dlen);
	jb_zero(b, pad);
	return at;
}

static void jb_close(struct jb *b)
{
	jb_prefix(b, JD_CODE_CLOSE, 16);
}

static void jb_move(struct jb *b, uint64_t old, uint64_t neu, uint64_t size, uint64_t index)
{
	jb_prefix(b, JD_CODE_MOVE, 64);
	uint8_t f[48];
	p32(f, PID);
	p32(f + 4, PID);
	p64(f + 8, neu);
	p64(f + 16, old);
	p64(f + 24, neu);
	p64(f + 32, size);
	p64(f + 40, index);
	jb_put(b, f, sizeof(f));
}

/* DEBUG_INFO with `have` entries {addr, line, 0, "f.py"}, claiming nr entries */
static void jb_debug(struct jb *b, uint64_t code_addr, uint64_t nr, size_t have, uint64_t entry_addr)
{
	size_t len = 32 + have * (16 + 5);
	size_t pad = (8 - len % 8) % 8;
	jb_prefix(b, JD_CODE_DEBUG_INFO, (uint32_t)(len + pad));
	uint8_t f[16];
	p64(f, code_addr);
	p64(f + 8, nr);
	jb_put(b, f, sizeof(f));
	for (size_t i = 0; i < have; i++) {
		uint8_t e[16];
		p64(e, entry_addr + i);
		p32(e + 8, (uint32_t)(10 + i));
		p32(e + 12, 0);
		jb_put(b, e, sizeof(e));
		jb_put(b, "f.py", 5);
	}
	jb_zero(b, pad);
}

/* ---- code and unwinding data from the JIT side ---- */

static struct tr_func *emit_for(const struct tr_arch *a, const char *const *lines, size_t n)
{
	static struct tr_op ops[64];
	ck_assert_uint_le(n, 64);
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].line = (int)i + 1;
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], err, sizeof(err)) == 0, "%s: %s", lines[i], err);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(tr_emit(a, ops, n, f, err, sizeof(err)) == 0, "%s", err);
	return f;
}

static struct tr_func *emit(const char *const *lines, size_t n)
{
	return emit_for(&tr_arch_x86_64, lines, n);
}

static const char *const fp_ops[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
static const char *const nofp_ops[] = { "alloc 8", "call_target", "free 8", "ret" };
static const char *const big_ops[] = { "push_fp", "set_fp", "save_reg %rbx", "alloc 24", "call_target",
				       "free 24", "restore_reg %rbx", "pop_fp", "ret" };

static struct tr_func *F, *F11, *FB, *FA;

static void opts_clean(struct tr_unwind_opts *o)
{
	tr_unwind_opts_default(o);
	o->terminator = true;    /* the fully clean reference: no JD038 */
}

static void unw(const struct tr_func *f, const struct tr_unwind_opts *o, uint64_t addr, struct tr_unwind *u)
{
	ck_assert_msg(tr_unwind_build(f, o, addr, u, err, sizeof(err)) == 0, "%s", err);
}

/* UNWINDING_INFO + CODE_LOAD of f at addr, as the harness writes them */
static void jb_func(struct jb *b, const struct tr_func *f, const struct tr_unwind_opts *o, const char *name,
		    uint64_t addr, uint64_t index)
{
	struct tr_unwind u;
	unw(f, o, addr, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, name, addr, f->code, f->code_size, index);
}

/* ---- linting a buffer ---- */

struct got {
	size_t n;
	const struct lint_rule *r[512];
	char msg[512][480];
	uint64_t off[512];
	struct lint_where where[512];
};

static void collect(const struct lint_finding *f, void *arg)
{
	struct got *g = arg;
	if (g->n < 512) {
		g->r[g->n] = f->rule;
		g->off[g->n] = f->offset;
		g->where[g->n] = f->where;
		snprintf(g->msg[g->n], sizeof(g->msg[0]), "%s", f->msg);
		g->n++;
	}
}

static struct got G;

/* lint an exact-size heap copy, so ASan sees any read past the end */
static const char *lint_dir;      /* lint_opts.dump_dir of the next lint_buf */

static struct lint_summary lint_buf(const uint8_t *p, size_t n, enum pv_profile prof, const char *name)
{
	uint8_t *h = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(h);
	memcpy(h, p, n);
	struct lint_opts o = { prof, name, 0, 8192, lint_dir };
	lint_dir = NULL;
	struct lint_summary s;
	memset(&G, 0, sizeof(G));
	int rc = lint_mem(h, n, &o, collect, &G, &s);
	ck_assert_int_eq(rc, s.unreadable ? -1 : 0);
	free(h);
	return s;
}

static bool fired(const char *id)
{
	for (size_t i = 0; i < G.n; i++)
		if (!strcmp(G.r[i]->id, id))
			return true;
	return false;
}

static void show(char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < G.n && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "  0x%" PRIx64 " %s %s: %s\n", G.off[i], G.r[i]->id, G.r[i]->name,
				      G.msg[i]);
}

/* ---- one builder per rule: bad breaks the rule, !bad is the same dump fixed ---- */

struct ctx {
	enum pv_profile prof;
	const char *name;
	size_t cut;              /* bytes to cut off the end */
};

typedef void (*mk_fn)(struct jb *b, bool bad, struct ctx *c);

static void base(struct jb *b)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	jb_std(b);
	jb_func(b, F, &o, "tramp", ADDR, 0);
}

static void mk_magic(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, bad ? 0x12345678 : JD_MAGIC, 1, 40, EM_X86_64, 0);
	jb_close(b);
}

static void mk_version(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, bad ? 2 : 1, 40, EM_X86_64, 0);
	jb_close(b);
}

static void mk_hdrsize(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, bad ? 48 : 40, EM_X86_64, 0);
	if (bad)
		jb_zero(b, 8);
	jb_close(b);
}

static void mk_flags(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, bad ? 6 : 0);
	jb_close(b);
}

static void mk_archts(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, bad ? 1 : 0);
	jb_close(b);
}

static void mk_mach(struct jb *b, bool bad, struct ctx *c)
{
	jb_hdr(b, JD_MAGIC, 1, 40, bad ? 9999 : EM_X86_64, 0);
	jb_close(b);
}

/* perf reads the dump outside /tmp: perf >= 6.8's libdw gets no module */
static void mk_dumpdir(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_close(b);
	lint_dir = bad ? "/home/x/bench" : "/tmp";
}

static void mk_fname(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_close(b);
	c->name = bad ? "/tmp/x/perf.dump" : "/tmp/x/jit-4242.dump";
}

static void mk_truncated(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_close(b);
	c->cut = bad ? 4 : 0;
}

static void mk_recsize(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_prefix(b, JD_CODE_CLOSE, bad ? 8 : 16);
}

static void mk_unknown(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_prefix(b, bad ? 9 : JD_CODE_CLOSE, 16);
}

static void mk_afterclose(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	jb_std(b);
	if (bad)
		jb_close(b);
	jb_func(b, F, &o, "tramp", ADDR, 0);
	if (!bad)
		jb_close(b);
}

static void mk_tsback(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	if (bad)
		b->ts = 5;
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_close(b);
}

static void mk_pid(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load_pid(b, bad ? 777 : PID, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_name(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad) {
		jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
		return;
	}
	/* "trampxxx" without a NUL, then code without a zero byte */
	jb_prefix(b, JD_CODE_LOAD, (uint32_t)(56 + 8 + F->code_size));
	uint8_t f[40];
	p32(f, PID);
	p32(f + 4, PID);
	p64(f + 8, ADDR);
	p64(f + 16, ADDR);
	p64(f + 24, F->code_size);
	p64(f + 32, 0);
	jb_put(b, f, sizeof(f));
	jb_put(b, "trampxxx", 8);
	jb_put(b, F->code, F->code_size);
}

static void mk_codesize(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	size_t at = jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		p64(b->p + at + 40, 1000);
}

static void mk_trailing(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad) {
		jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
		return;
	}
	/* name, NUL, code, then the padding: perf's code starts 2 bytes late */
	size_t n = 56 + 6 + F->code_size;
	size_t pad = (8 - n % 8) % 8;
	ck_assert_uint_gt(pad, 0);
	jb_prefix(b, JD_CODE_LOAD, (uint32_t)(n + pad));
	uint8_t f[40];
	p32(f, PID);
	p32(f + 4, PID);
	p64(f + 8, ADDR);
	p64(f + 16, ADDR);
	p64(f + 24, F->code_size);
	p64(f + 32, 0);
	jb_put(b, f, sizeof(f));
	jb_put(b, "tramp", 6);
	jb_put(b, F->code, F->code_size);
	jb_zero(b, pad);
}

static void mk_empty(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_load(b, "tramp", ADDR, F->code, bad ? 0 : F->code_size, 0);
}

static void mk_vma(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	size_t at = jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		p64(b->p + at + 24, ADDR + 0x100);
}

/* Two loads of the same code: perf 6.1's perf inject -j gives their jitted
 * .so files different build-ids (checked with readelf -n on its output for
 * CPython 3.13.0's 205 identical trampolines: 205 build-ids), so it is not a
 * finding (JD025 identical-code was removed). */
START_TEST(identical_code_is_clean)
{
	struct jb b = { 0 };
	struct tr_unwind_opts o;
	opts_clean(&o);
	base(&b);
	jb_func(&b, F, &o, "tramp2", ADDR + 0x1000, 1);
	jb_close(&b);
	struct lint_summary s = lint_buf(b.p, b.n, PV_CURRENT, "/x/jit-4242.dump");
	free(b.p);
	char buf[4096];
	show(buf, sizeof(buf));
	ck_assert_uint_eq(s.loads, 2);
	ck_assert_msg(G.n == 0, "findings on two loads of the same code:\n%s", buf);
}
END_TEST

static void mk_dupindex(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	base(b);
	jb_func(b, FB, &o, "other", ADDR + 0x1000, bad ? 0 : 1);
}

static void mk_wrap(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_load(b, "tramp", bad ? UINT64_MAX - 4 : ADDR, F->code, F->code_size, 0);
}

static void mk_after(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	if (!bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_close(b);
}

/* written after its load, and picked up by the next load of another size */
static void mk_after2(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	if (!bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad) {
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
		jb_load(b, "big", ADDR + 0x1000, FB->code, FB->code_size, 1);
	} else {
		jb_func(b, FB, &o, "big", ADDR + 0x1000, 1);
	}
}

static void mk_noload(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	if (!bad)
		jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_close(b);
}

static void mk_overwritten(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	if (bad)
		jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

/* unwinding data from opts, with a hook to damage it */
static void mk_unw_with(struct jb *b, const struct tr_func *f, const struct tr_unwind_opts *o,
			void (*damage)(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms))
{
	struct tr_unwind u;
	jb_std(b);
	unw(f, o, ADDR, &u);
	uint64_t us = u.size, hs = u.hdr_size, ms = u.mapped_size;
	if (damage)
		damage(&u, &us, &hs, &ms);
	jb_unw(b, u.data, u.size, us, hs, ms);
	jb_load(b, "tramp", ADDR, f->code, f->code_size, 0);
	jb_close(b);
}

static void dmg_usize(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*us += 64;
}

static void dmg_hs0(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*hs = 0;
}

static void dmg_hs_big(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*hs += 4;
}

static void dmg_cie_version(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	u->data[8] = 9;
}

static void dmg_hdr_version(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	u->data[u->eh_frame_size] = 2;
}

static void add32(uint8_t *p, int32_t d)
{
	int32_t v;
	memcpy(&v, p, 4);
	v += d;
	memcpy(p, &v, 4);
}

static void dmg_table(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	add32(u->data + u->eh_frame_size + 12, 4);   /* initial_loc of entry 0 */
}

static void dmg_ehptr(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	add32(u->data + u->eh_frame_size + 4, 8);
}

static void dmg_ms0(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*ms = 0;
}

static void dmg_ms16(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*ms = 16;
}

static void dmg_empty(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	*us = *hs = 0;
}

/* misplaced terminator: 8 bytes of .eh_frame after it (the header then moves) */
static void dmg_after_term(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	size_t es = u->eh_frame_size;
	memmove(u->data + es + 8, u->data + es, u->hdr_size);
	memset(u->data + es, 0x5a, 8);
	u->size += 8;
	u->eh_frame_size += 8;
	*us += 8;
}

/* only the CIE, and a header with fde_count 0 */
static void dmg_no_fde(struct tr_unwind *u, uint64_t *us, uint64_t *hs, uint64_t *ms)
{
	uint32_t len;
	memcpy(&len, u->data, 4);
	size_t cie = 4 + len;
	uint8_t h[12] = { 1, 0x1b, 0x03, 0x3b };
	p32(h + 4, (uint32_t)-(int32_t)(cie + 4));
	p32(h + 8, 0);
	memcpy(u->data + cie, h, sizeof(h));
	u->size = cie + sizeof(h);
	*us = u->size;
	*hs = sizeof(h);
}

#define MK_DMG(fn, dmg)                                            \
	static void fn(struct jb *b, bool bad, struct ctx *c)      \
	{                                                          \
		struct tr_unwind_opts o;                           \
		opts_clean(&o);                                    \
		mk_unw_with(b, F, &o, bad ? dmg : NULL);           \
	}
MK_DMG(mk_usize, dmg_usize)
MK_DMG(mk_hs0, dmg_hs0)
MK_DMG(mk_hsbig, dmg_hs_big)
MK_DMG(mk_cie, dmg_cie_version)
MK_DMG(mk_hdrver, dmg_hdr_version)
MK_DMG(mk_table, dmg_table)
MK_DMG(mk_ehptr, dmg_ehptr)
MK_DMG(mk_ms0, dmg_ms0)
MK_DMG(mk_ms16, dmg_ms16)
MK_DMG(mk_unwempty, dmg_empty)
MK_DMG(mk_term_misplaced, dmg_after_term)
MK_DMG(mk_nofde, dmg_no_fde)

static void mk_hdrfirst(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.hdr = bad ? TR_HDR_BEFORE : TR_HDR_AFTER;
	mk_unw_with(b, F, &o, NULL);
}

static void mk_noterm(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.terminator = !bad;
	mk_unw_with(b, F, &o, NULL);
}

static void mk_tableenc(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	if (bad)
		o.table_enc = DW_EH_PE_datarel | DW_EH_PE_sdata8;
	mk_unw_with(b, F, &o, NULL);
}

static void mk_notable(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.hdr_table = !bad;
	mk_unw_with(b, F, &o, NULL);
}

static void mk_unaligned(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.eh_unaligned = bad;
	ck_assert_uint_eq(F11->code_size, 11);
	mk_unw_with(b, F11, &o, NULL);
}

static void mk_gap(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	uint8_t code[64];
	opts_clean(&o);
	jb_std(b);
	unw(F, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	memcpy(code, F->code, F->code_size);
	memset(code + F->code_size, 0xcc, 8);      /* int3 padding after the function */
	jb_load(b, "tramp", ADDR, code, F->code_size + (bad ? 8 : 0), 0);
}

static void mk_outside(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	o.fde_enc = DW_EH_PE_absptr | DW_EH_PE_udata8;
	jb_std(b);
	unw(F, &o, bad ? ADDR - 0x10000 : ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_absolute(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	if (bad)
		o.fde_enc = DW_EH_PE_absptr | DW_EH_PE_udata8;
	mk_unw_with(b, F, &o, NULL);
}

static void mk_overlap(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	base(b);
	jb_func(b, FB, &o, "tramp2", ADDR + (bad ? 16 : 0x1000), 1);
}

/* CPython's program, its def_cfa_offset 24 after the push when bad (the truth is 16) */
static void mk_cfa(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t good_prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07,
					     0x08, 0xc6 };
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, good_prog, sizeof(good_prog));
	o.prog_len = sizeof(good_prog);
	if (bad)
		o.prog[2] = 0x18;
	mk_unw_with(b, F, &o, NULL);
}

/* arm64: CPython's FDE (its trailing block names x29 at the ret, after ldp
 * restored it) against the program derived from the truth */
static void mk_cfa_a64(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t cpython[] = { 0x41, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01, 0x43, 0xde, 0xdd, 0x0e, 0x00,
					   0x0d, 0x1d, 0x0e, 0x10, 0x9d, 0x02, 0x9e, 0x01 };
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	if (bad) {
		o.cfi = TR_CFI_BYTES;
		memcpy(o.prog, cpython, sizeof(cpython));
		o.prog_len = sizeof(cpython);
	}
	jb_hdr(b, JD_MAGIC, 1, 40, EM_AARCH64, 0);
	unw(FA, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, FA->code, FA->code_size, 0);
}

static void mk_ra(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x07, 0x10, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43,
					0x0c, 0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, prog + (bad ? 0 : 2), sizeof(prog) - (bad ? 0 : 2));
	o.prog_len = sizeof(prog) - (bad ? 0 : 2);
	mk_unw_with(b, F, &o, NULL);
}

/* CPython's x86_64 FDE ends without restoring rbp's rule after the pop
 * (facts: real CPython ships it): at the ret the slot is below SP */
static void mk_below_sp(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, prog, sizeof(prog));
	o.prog_len = sizeof(prog) - (bad ? 1 : 0);
	mk_unw_with(b, F, &o, NULL);
}

/* rbp's rule names cfa-8 (the return address's slot) where push stored it at cfa-16 */
static void mk_saved_early(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	memcpy(o.prog, prog, sizeof(prog));
	o.prog_len = sizeof(prog);
	if (bad)
		o.prog[4] = 0x01;
	mk_unw_with(b, F, &o, NULL);
}

/* arm64: a program without a rule for x30, which blr overwrites: after the
 * call the rows still say the return address is in x30 */
static void mk_ra_code(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x9d, 0x02, 0x41, 0x0d, 0x1d, 0x42, 0x0c, 0x1f, 0x10,
					0x41, 0x0e, 0x00, 0xdd };
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	if (bad) {
		o.cfi = TR_CFI_BYTES;
		memcpy(o.prog, prog, sizeof(prog));
		o.prog_len = sizeof(prog);
	}
	jb_hdr(b, JD_MAGIC, 1, 40, EM_AARCH64, 0);
	unw(FA, &o, ADDR, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, "tramp", ADDR, FA->code, FA->code_size, 0);
}

/* A load of code bytes with a CFA program of its own (the CIE's: CFA = rsp+8,
 * the return address at cfa-8) */
static void jb_code_prog(struct jb *b, const uint8_t *code, size_t n, const uint8_t *prog, size_t plen)
{
	static struct tr_func f;
	memcpy(&f, F, sizeof(f));
	ck_assert_uint_le(n, sizeof(f.code));
	memcpy(f.code, code, n);
	f.code_size = n;
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	ck_assert_uint_le(plen, sizeof(o.prog));
	memcpy(o.prog, prog, plen);
	o.prog_len = plen;
	jb_std(b);
	jb_func(b, &f, &o, "tramp", ADDR, 0);
	jb_close(b);
}

/* CPython's frame-pointer trampoline with 06 (push %es, invalid in 64-bit
 * mode: capstone does not decode it either) where its call is: the code
 * check cannot go on there and says so (the fixed dump has the call) */
static void mk_undecoded(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3 };
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x42, 0x0c, 0x07, 0x10, 0x41,
					0x0e, 0x08, 0xc6 };
	uint8_t k[sizeof(code)];
	memcpy(k, code, sizeof(code));
	if (bad)
		k[4] = k[5] = 0x06;
	jb_code_prog(b, k, sizeof(k), prog, sizeof(prog));
}

/* the fixed dump of mk_undecoded is clean, and the bad one has JD081 alone,
 * naming +0x4 and the bytes (the check takes up again at +0x6's row) */
START_TEST(undecoded_names_the_bytes)
{
	char buf[4096];
	for (int bad = 1; bad >= 0; bad--) {
		struct jb b = { 0 };
		mk_undecoded(&b, bad, NULL);
		lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		show(buf, sizeof(buf));
		ck_assert_msg(G.n == (size_t)bad, "%s", buf);
		if (bad)
			ck_assert_msg(!strcmp(G.r[0]->id, "JD081") && G.where[0].npc == 1 && G.where[0].pc[0] == 4 &&
				      strstr(G.msg[0], "at +0x4 lint's x86_64 decoder cannot decode the instruction that "
					     "starts with the bytes 06 06 5d c3 (4 of the 4 left)") &&
				      strstr(G.msg[0], "[+0x4, +0x6)"), "%s", buf);
	}
}
END_TEST

/* a 16 KiB frame: the return address is above perf's 8192-byte copy */
/* a rule for xmm0 (DWARF 17) after the push: libunwind's x86_64 table ends at 16 */
static void mk_past_libunwind(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t with[] = { 0x41, 0x08, 0x11, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c,
					0x07, 0x08, 0xc6 };
	struct tr_unwind_opts o;
	opts_clean(&o);
	o.cfi = TR_CFI_BYTES;
	/* fixed: the same program without same_value r17 */
	static const uint8_t without[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08,
					   0xc6 };
	memcpy(o.prog, bad ? with : without, bad ? sizeof(with) : sizeof(without));
	o.prog_len = bad ? sizeof(with) : sizeof(without);
	mk_unw_with(b, F, &o, NULL);
}

/* the CFA exactly at the end of perf's 8192-byte copy: the return address is
 * its last word, which perf's libunwind path never reads (fuzz-074669363064) */
static void mk_deep_edge(struct jb *b, bool bad, struct ctx *c)
{
	static struct tr_func *edge, *room;
	static const char *const e_ops[] = { "alloc 0x1ff8", "call_target", "free 0x1ff8", "ret" };
	static const char *const r_ops[] = { "alloc 0x1fe0", "call_target", "free 0x1fe0", "ret" };
	if (!edge) {
		edge = emit(e_ops, 4);
		room = emit(r_ops, 4);
	}
	struct tr_unwind_opts o;
	opts_clean(&o);
	jb_std(b);
	jb_func(b, bad ? edge : room, &o, "tramp", ADDR, 0);
}

static void mk_deep(struct jb *b, bool bad, struct ctx *c)
{
	static struct tr_func *deep, *shallow;
	static const char *const d_ops[] = { "alloc 0x4008", "call_target", "free 0x4008", "ret" };
	static const char *const s_ops[] = { "alloc 0x1008", "call_target", "free 0x1008", "ret" };
	if (!deep) {
		deep = emit(d_ops, 4);
		shallow = emit(s_ops, 4);
	}
	struct tr_unwind_opts o;
	opts_clean(&o);
	jb_std(b);
	jb_func(b, bad ? deep : shallow, &o, "tramp", ADDR, 0);
}

/* one line entry whose file name holds garbage (V8 in node 20), or whose
 * entries end before the record does */
static void jb_debug_name(struct jb *b, const char *name, size_t nlen, size_t tail)
{
	size_t len = 32 + 16 + nlen + 1 + tail;
	size_t pad = (8 - len % 8) % 8;
	jb_prefix(b, JD_CODE_DEBUG_INFO, (uint32_t)(len + pad));
	uint8_t f[32] = { 0 };
	p64(f, ADDR);
	p64(f + 8, 1);
	p64(f + 16, ADDR);
	p32(f + 24, 10);
	jb_put(b, f, sizeof(f));
	jb_put(b, name, nlen);
	jb_zero(b, 1);
	for (size_t i = 0; i < tail; i++)
		jb_put(b, "x", 1);
	jb_zero(b, pad);
}

static void mk_dbg_name(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (bad)
		jb_debug_name(b, "f\x01\xfe\x80.py", 7, 0);
	else
		jb_debug_name(b, "caf\xc3\xa9.py", 8, 0);   /* UTF-8 is fine */
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_dbg_tail(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug_name(b, "f.py", 4, bad ? 12 : 0);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_move_unknown(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_move(b, ADDR, ADDR + 0x10000, F->code_size, bad ? 5 : 0);
}

static void mk_move_mismatch(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	jb_move(b, bad ? ADDR + 0x5000 : ADDR, ADDR + 0x10000, F->code_size, 0);
}

static void mk_dbg_after(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	if (bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "big", ADDR + 0x1000, FB->code, FB->code_size, 1);
}

static void mk_dbg_noload(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (!bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_close(b);
	if (bad)
		jb_debug(b, ADDR + 0x9000, 1, 1, ADDR + 0x9000);
}

static void mk_dbg_mismatch(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug(b, bad ? ADDR + 0x9000 : ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_dbg_entries(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug(b, ADDR, bad ? 5 : 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_dbg_over(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	if (bad)
		jb_debug(b, ADDR, 1, 1, ADDR);
	jb_debug(b, ADDR, 1, 1, ADDR);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

static void mk_dbg_range(struct jb *b, bool bad, struct ctx *c)
{
	jb_std(b);
	jb_debug(b, ADDR, 1, 1, bad ? ADDR + 0x1000 : ADDR + 1);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
}

/* The conventional terminating line entry at code_addr + code_size, the last
 * one (QEMU writes one to every DEBUG_INFO: "perf requires a terminating
 * entry"; Erlang a dummy line), is not JD075; an entry at the end that is not
 * the last, or one past it, is. */
START_TEST(debug_terminator_is_clean)
{
	/* entries at ADDR + start + k (k < n), over code of code_size bytes; out: JD075's count */
	const uint64_t cs = F->code_size;
	const struct { uint64_t start; size_t n; int out; } t[] = {
		{ cs - 1, 2, 0 },          /* the last code byte, then the terminator */
		{ cs, 1, 0 },              /* the terminator alone */
		{ 0, 1, 0 },
		{ cs + 1, 1, 1 },          /* past the end */
		{ cs, 2, 2 },              /* the end but not the last, then past it */
	};
	char buf[4096];
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct jb b = { 0 };
		jb_std(&b);
		jb_debug(&b, ADDR, t[i].n, t[i].n, ADDR + t[i].start);
		jb_load(&b, "tramp", ADDR, F->code, F->code_size, 0);
		lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		show(buf, sizeof(buf));
		char msg[64];
		snprintf(msg, sizeof(msg), ": %d line entr", t[i].out);
		ck_assert_msg(fired("JD075") == (t[i].out > 0) && (!t[i].out || strstr(buf, msg)),
			      "case %zu (%zu entries from +0x%" PRIx64 "):\n%s", i, t[i].n, t[i].start, buf);
	}
}
END_TEST

static void mk_profile(struct jb *b, bool bad, struct ctx *c)
{
	base(b);
	c->prof = bad ? PV_V61 : PV_CURRENT;
}

/* more loads than the histories hold: far-apart indices and addresses */
static void mk_limit(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t ret[] = { 0xc3 };
	jb_std(b);
	size_t n = bad ? LINT_MAX_INDEX + 10 : 1000;
	for (size_t i = 0; i < n; i++)
		jb_load(b, "f", ADDR + 0x100 * i, ret, 1, 2 * i);
}

/* JD028: the second load has no UNWINDING_INFO; JD029: neither has (fixed: both have) */
static void mk_nounw_some(struct jb *b, bool bad, struct ctx *c)
{
	struct tr_unwind_opts o;
	opts_clean(&o);
	base(b);
	if (bad)
		jb_load(b, "bare", ADDR + 0x1000, F->code, F->code_size, 1);
	else
		jb_func(b, F, &o, "bare", ADDR + 0x1000, 1);
}

static void mk_nounw_all(struct jb *b, bool bad, struct ctx *c)
{
	if (!bad) {
		mk_nounw_some(b, false, c);
		return;
	}
	jb_std(b);
	jb_load(b, "tramp", ADDR, F->code, F->code_size, 0);
	jb_load(b, "bare", ADDR + 0x1000, F->code, F->code_size, 1);
}

static const struct rule_case {
	const char *id;
	mk_fn mk;
} rule_cases[] = {
	{ "JD001", mk_magic }, { "JD002", mk_version }, { "JD003", mk_hdrsize }, { "JD004", mk_flags },
	{ "JD005", mk_archts }, { "JD006", mk_mach }, { "JD007", mk_fname }, { "JD010", mk_truncated },
	{ "JD011", mk_recsize }, { "JD012", mk_unknown }, { "JD014", mk_afterclose }, { "JD015", mk_tsback },
	{ "JD016", mk_pid }, { "JD020", mk_name }, { "JD021", mk_codesize }, { "JD022", mk_trailing },
	{ "JD023", mk_empty }, { "JD024", mk_vma }, { "JD026", mk_dupindex },
	{ "JD027", mk_wrap }, { "JD030", mk_after }, { "JD030", mk_after2 }, { "JD031", mk_noload },
	{ "JD032", mk_overwritten }, { "JD033", mk_usize }, { "JD034", mk_hs0 }, { "JD035", mk_hdrfirst },
	{ "JD036", mk_hsbig }, { "JD037", mk_cie }, { "JD038", mk_noterm }, { "JD039", mk_term_misplaced },
	{ "JD040", mk_hdrver }, { "JD041", mk_tableenc }, { "JD042", mk_notable }, { "JD043", mk_table },
	{ "JD044", mk_ehptr }, { "JD045", mk_unaligned }, { "JD046", mk_gap }, { "JD047", mk_outside },
	{ "JD048", mk_nofde }, { "JD049", mk_ms0 }, { "JD050", mk_ms16 }, { "JD051", mk_overlap },
	{ "JD052", mk_cfa }, { "JD052", mk_cfa_a64 }, { "JD053", mk_ra }, { "JD054", mk_absolute }, { "JD056", mk_unwempty },
	{ "JD060", mk_move_unknown }, { "JD061", mk_move_mismatch }, { "JD070", mk_dbg_after },
	{ "JD071", mk_dbg_noload }, { "JD072", mk_dbg_mismatch }, { "JD073", mk_dbg_entries },
	{ "JD074", mk_dbg_over }, { "JD075", mk_dbg_range }, { "JD090", mk_profile }, { "JD099", mk_limit },
	{ "JD057", mk_below_sp }, { "JD058", mk_saved_early }, { "JD059", mk_ra_code }, { "JD080", mk_deep },
	{ "JD076", mk_dbg_name }, { "JD076", mk_dbg_tail }, { "JD091", mk_dumpdir },
	{ "JD080", mk_deep_edge }, { "JD055", mk_past_libunwind }, { "JD081", mk_undecoded },
	{ "JD028", mk_nounw_some }, { "JD029", mk_nounw_all },
};
#define NRULE_CASES (sizeof(rule_cases) / sizeof(rule_cases[0]))

static void setup(void)
{
	if (!F) {
		F = emit(fp_ops, 5);
		F11 = emit(nofp_ops, 4);
		FB = emit(big_ops, 9);
		FA = emit_for(&tr_arch_aarch64, fp_ops, 5);
	}
}

/* write the crafted dump where `make fuzz` collects its seeds */
static void seed(const struct jb *b, const char *id, bool bad)
{
	const char *dir = getenv("JU_LINT_SEEDS");
	if (!dir || b->n > (1u << 20))
		return;
	char p[4096];
	snprintf(p, sizeof(p), "%s/%s-%s-%zu.dump", dir, id, bad ? "bad" : "good", b->n);
	FILE *f = fopen(p, "wb");
	if (f) {
		fwrite(b->p, 1, b->n, f);
		fclose(f);
	}
}

START_TEST(each_rule)
{
	const struct rule_case *rc = &rule_cases[_i];
	const struct lint_rule *r = lint_rule_find(rc->id);
	ck_assert_msg(r, "%s: no such rule", rc->id);
	char buf[16384];
	for (int bad = 1; bad >= 0; bad--) {
		struct jb b = { 0 };
		struct ctx c = { PV_CURRENT, NULL, 0 };
		rc->mk(&b, bad, &c);
		ck_assert_uint_le(c.cut, b.n);
		seed(&b, rc->id, bad);
		struct lint_summary s = lint_buf(b.p, b.n - c.cut, c.prof, c.name);
		show(buf, sizeof(buf));
		if (bad) {
			ck_assert_msg(fired(rc->id), "%s %s: the crafted dump does not fire it; got:\n%s", rc->id, r->name, buf);
			/* the exit code follows the severity */
			int want = !strcmp(rc->id, "JD001") ? 2 : r->sev == LINT_ERROR ? 1 : -1;
			if (want >= 0)
				ck_assert_int_eq(lint_exit_code(&s), want);
		} else {
			ck_assert_msg(!fired(rc->id), "%s %s: fires on the fixed dump:\n%s", rc->id, r->name, buf);
		}
		free(b.p);
	}
}
END_TEST

/* the reference dump (CPython's trampoline, eh_frame with terminator) has no finding at all */
START_TEST(reference_is_clean)
{
	struct jb b = { 0 };
	base(&b);
	struct tr_unwind_opts o;
	opts_clean(&o);
	jb_func(&b, FB, &o, "second", ADDR + 0x1000, 1);
	jb_debug(&b, ADDR + 0x2000, 2, 2, ADDR + 0x2000);
	jb_func(&b, F11, &o, "third", ADDR + 0x2000, 2);
	jb_move(&b, ADDR + 0x1000, ADDR + 0x8000, FB->code_size, 1);
	jb_close(&b);
	struct lint_summary s = lint_buf(b.p, b.n, PV_CURRENT, "/x/jit-4242.dump");
	char buf[8192];
	show(buf, sizeof(buf));
	ck_assert_msg(G.n == 0, "findings on the reference dump:\n%s", buf);
	ck_assert_uint_eq(s.records, 9);
	ck_assert_uint_eq(s.loads, 3);
	ck_assert_int_eq(lint_exit_code(&s), 0);
	free(b.p);
}
END_TEST

/* Is code offset off named by an error or warning finding (its offsets, or
 * the whole load)? */
static bool named_at(uint64_t off)
{
	for (size_t i = 0; i < G.n; i++) {
		const struct lint_where *w = &G.where[i];
		if (G.r[i]->sev == LINT_INFO || (!w->load && !w->whole))
			continue;
		if (w->whole)
			return true;
		for (unsigned k = 0; k < w->npc; k++)
			if (w->pc[k] == off)
				return true;
	}
	return false;
}

/* endbr64 in front of CPython's trampoline and an FDE that forgot it (its
 * rows 4 bytes early): every boundary after endbr64 is flagged, by offset;
 * the derived FDE (the negative control) has none. */
START_TEST(cet_forgot_every_boundary)
{
	static const char *const cet_ops[] = { "endbr64", "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
	static const uint8_t prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07, 0x08 };
	struct tr_func *f = emit(cet_ops, 6);
	for (int bad = 1; bad >= 0; bad--) {
		struct tr_unwind_opts o;
		opts_clean(&o);
		if (bad) {
			o.cfi = TR_CFI_BYTES;
			memcpy(o.prog, prog, sizeof(prog));
			o.prog_len = sizeof(prog);
		}
		struct jb b = { 0 };
		jb_std(&b);
		jb_func(&b, f, &o, "tramp", ADDR, 0);
		lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		char buf[8192];
		show(buf, sizeof(buf));
		for (size_t i = 1; i < f->nrows; i++) {
			uint64_t off = f->rows[i].offset;
			if (bad)
				ck_assert_msg(named_at(off), "+0x%" PRIx64 " (%s) not named:\n%s", off, f->rows[i].insn, buf);
			else
				ck_assert_msg(!named_at(off), "+0x%" PRIx64 " named on the derived FDE:\n%s", off, buf);
		}
		ck_assert_uint_ge(f->nrows, 6);
	}
	free(f);
}
END_TEST

/* The offsets rule id names (its findings' pcs) as a list "+0x1c +0x20 ...". */
static void named_by(const char *id, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < G.n; i++) {
		if (strcmp(G.r[i]->id, id))
			continue;
		for (unsigned k = 0; k < G.where[i].npc && o < cap; k++)
			o += (size_t)snprintf(out + o, cap - o, "%s+0x%" PRIx64, o ? " " : "", G.where[i].pc[k]);
	}
}

/* node 20's optimized JS function epilogue (V8, --perf-prof-unwinding-info),
 * shortened: a8 01 (test $1,%al, its small-integer check) and an SSE load
 * before it; after `pop %rbp` the rows keep "rbp at cfa-16", 8 bytes below
 * SP, up to the end of the epilogue, and after `pop %r10` (the return
 * address) they keep CFA = rsp+8 where the code has CFA = rsp+0.  Rows of
 * the bad program (the CIE: rsp+8, rip at cfa-8):
 *   [0x1, 0x4) rsp+16 rbp@-16, [0x4, 0x1b) rbp+16, [0x1b, 0x1c) rsp+16,
 *   [0x1c, 0x2e) rsp+8 rbp@-16, [0x2e, ...) rbp+16.
 * The fixed program restores rbp's rule after the pop and says CFA = rsp+0
 * with the return address in r10 after `pop %r10` (after the lea the check
 * follows sp no more). */
static void mk_v8(struct jb *b, bool bad, struct ctx *c)
{
	static const uint8_t code[] = {
		0x55, 0x48, 0x89, 0xe5, 0x56, 0x57, 0x50,   /* push %rbp; mov %rsp,%rbp; push %rsi, %rdi, %rax */
		0x48, 0x8b, 0x45, 0x18,                     /* +0x7  mov 0x18(%rbp),%rax */
		0xa8, 0x01,                                 /* +0xb  test $1,%al */
		0x75, 0x1f,                                 /* +0xd  jne +0x2e */
		0xf2, 0x0f, 0x10, 0x45, 0xf0,               /* +0xf  movsd -0x10(%rbp),%xmm0 */
		0x48, 0x8b, 0x4d, 0xe8,                     /* +0x14 mov -0x18(%rbp),%rcx */
		0x48, 0x8b, 0xe5,                           /* +0x18 mov %rbp,%rsp */
		0x5d,                                       /* +0x1b pop %rbp */
		0x48, 0x83, 0xf9, 0x02,                     /* +0x1c cmp $2,%rcx */
		0x7f, 0x03,                                 /* +0x20 jg +0x25 */
		0xc2, 0x10, 0x00,                           /* +0x22 ret $0x10 */
		0x41, 0x5a,                                 /* +0x25 pop %r10 */
		0x48, 0x8d, 0x24, 0xcc,                     /* +0x27 lea (%rsp,%rcx,8),%rsp */
		0x41, 0x52,                                 /* +0x2b push %r10 */
		0xc3,                                       /* +0x2d ret */
		0x41, 0xff, 0x55, 0xc8,                     /* +0x2e call *-0x38(%r13) (deoptimize) */
	};
	static const uint8_t v8[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x57, 0x0d, 0x07, 0x41, 0x0e,
				      0x08, 0x52, 0x0c, 0x06, 0x10 };
	static const uint8_t fixed[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x57, 0x0d, 0x07, 0x41, 0x0e,
					 0x08, 0xc6, 0x4b, 0x0e, 0x00, 0x09, 0x10, 0x0a, 0x46, 0x0e, 0x08, 0x90, 0x01,
					 0x41, 0x0c, 0x06, 0x10, 0x86, 0x02 };
	jb_code_prog(b, code, sizeof(code), bad ? v8 : fixed, bad ? sizeof(v8) : sizeof(fixed));
}

START_TEST(v8_epilogue)
{
	char buf[8192], at[256];
	for (int bad = 1; bad >= 0; bad--) {
		struct jb b = { 0 };
		mk_v8(&b, bad, NULL);
		struct lint_summary s = lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		show(buf, sizeof(buf));
		ck_assert_msg(!fired("JD081"), "the decoder stopped:\n%s", buf);
		named_by("JD057", at, sizeof(at));
		ck_assert_msg(!strcmp(at, bad ? "+0x1c +0x20 +0x22 +0x25 +0x27" : ""), "JD057 at '%s':\n%s", at, buf);
		named_by("JD052", at, sizeof(at));
		ck_assert_msg(!strcmp(at, bad ? "+0x27" : ""), "JD052 at '%s':\n%s", at, buf);
		if (bad) {
			ck_assert_int_eq(lint_exit_code(&s), 1);
			ck_assert_msg(strstr(buf, "at +0x1c rbp's rule says saved at cfa-16, 8 bytes below SP (CFA = sp+8)") &&
				      strstr(buf, "at +0x27 the CFI says CFA = rsp+8 but the instructions before it leave "
					     "CFA = rsp+0"), "%s", buf);
		}
	}
}
END_TEST

/* The findings of the last lint_buf but JD006, one a line: rule, offset, message. */
static void findings_but_mach(char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < G.n && o < cap; i++)
		if (strcmp(G.r[i]->id, "JD006"))
			o += (size_t)snprintf(out + o, cap - o, "%s 0x%" PRIx64 " %s\n", G.r[i]->id, G.off[i], G.msg[i]);
}

/* CPython 3.13.0 writes elf_mach 0; perf never reads it (genelf writes its
 * own machine): known-bad dumps of the host's arch with elf_mach zeroed get
 * the same findings and exit code as with the machine set, and one JD006
 * info saying the code was read as the host's. */
/* A machine of the arch table without lint's decoder (riscv64): JD006 says the
 * code check does not run; one with a decoder gets no JD006. */
START_TEST(elf_mach_without_decoder)
{
	static const uint32_t machs[] = { EM_RISCV, EM_AARCH64, EM_X86_64 };
	for (size_t i = 0; i < 3; i++) {
		struct jb b = { 0 };
		jb_hdr(&b, JD_MAGIC, 1, 40, machs[i], 0);
		jb_close(&b);
		lint_buf(b.p, b.n, PV_CURRENT, NULL);
		free(b.p);
		const struct uw_arch *a = uw_arch_by_mach((uint16_t)machs[i]);
		ck_assert_ptr_nonnull(a);
		bool want = !a->decoder;
		ck_assert_msg(fired("JD006") == want, "elf_mach %u: JD006 %d", machs[i], !want);
		for (size_t k = 0; want && k < G.n; k++)
			if (!strcmp(G.r[k]->id, "JD006"))
				ck_assert_msg(strstr(G.msg[k], "riscv64") && strstr(G.msg[k], "code check") &&
					      strstr(G.msg[k], "does not run"), "%s", G.msg[k]);
	}
}
END_TEST

START_TEST(elf_mach_zero_is_the_host)
{
	static const mk_fn bad_dumps[] = { mk_cfa, mk_below_sp, mk_saved_early, mk_v8, mk_cfa_a64,
					   mk_ra_code };
	const struct uw_arch *host = uw_arch_host();
	ck_assert_ptr_nonnull(host);
	static char with[16384], zero[16384];
	unsigned compared = 0;
	for (size_t i = 0; i < sizeof(bad_dumps) / sizeof(bad_dumps[0]); i++) {
		struct jb b = { 0 };
		struct ctx c = { PV_CURRENT, NULL, 0 };
		bad_dumps[i](&b, true, &c);
		uint32_t mach;
		memcpy(&mach, b.p + 12, 4);
		if (mach != host->facts->elf_mach) {
			free(b.p);
			continue;                 /* another arch's dump: read as the host's, it is other code */
		}
		struct lint_summary s = lint_buf(b.p, b.n, PV_CURRENT, NULL);
		findings_but_mach(with, sizeof(with));
		ck_assert_msg(!fired("JD006"), "JD006 with elf_mach %u:\n%s", mach, with);
		ck_assert_int_eq(lint_exit_code(&s), 1);
		memset(b.p + 12, 0, 4);
		struct lint_summary z = lint_buf(b.p, b.n, PV_CURRENT, NULL);
		findings_but_mach(zero, sizeof(zero));
		ck_assert_msg(!strcmp(with, zero), "dump %zu: elf_mach %u gives\n%s\nelf_mach 0 gives\n%s", i, mach, with, zero);
		ck_assert_int_eq(lint_exit_code(&z), 1);
		size_t n006 = 0;
		for (size_t k = 0; k < G.n; k++) {
			if (strcmp(G.r[k]->id, "JD006"))
				continue;
			n006++;
			ck_assert_int_eq(G.r[k]->sev, LINT_INFO);
			ck_assert_msg(strstr(G.msg[k], "elf_mach 0") && strstr(G.msg[k], host->facts->name), "%s", G.msg[k]);
		}
		ck_assert_uint_eq(n006, 1);
		compared++;
		free(b.p);
	}
	ck_assert_uint_ge(compared, 2);
}
END_TEST

/* the jitted .so of a dump with elf_mach 0 gets the host's machine, as
 * perf's genelf writes the machine perf was built for */
START_TEST(jitted_elf_mach_zero)
{
	struct jd_load l = { .code_addr = ADDR, .vma = ADDR, .code_size = F11->code_size, .code_index = 3,
			     .name = "tramp", .code = F11->code };
	char dir[] = "/tmp/julint-XXXXXX", path[256], e2[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jitted-1-3.so", dir);
	const uint16_t machs[] = { 0, EM_X86_64, EM_AARCH64 };
	for (size_t i = 0; i < 3; i++) {
		ck_assert_msg(pv_write_jitted_elf(path, PV_CURRENT, &l, machs[i], e2, sizeof(e2)) == 0, "%s", e2);
		elf_version(EV_CURRENT);
		int fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		Elf *e = elf_begin(fd, ELF_C_READ, NULL);
		GElf_Ehdr eh;
		ck_assert_ptr_nonnull(gelf_getehdr(e, &eh));
		ck_assert_uint_eq(eh.e_machine, machs[i] ? machs[i] : uw_arch_host()->facts->elf_mach);
		elf_end(e);
		close(fd);
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

/* every table entry has a distinct id/name; ids are JDnnn; every rule is tested */
START_TEST(rule_table)
{
	for (size_t i = 0; i < LR__COUNT; i++) {
		const struct lint_rule *r = &lint_rules[i];
		ck_assert_msg(r->id && r->name && r->perf, "rule %zu incomplete", i);
		ck_assert_msg(strlen(r->id) == 5 && !strncmp(r->id, "JD", 2), "%s", r->id);
		ck_assert_msg(r->perf[strlen(r->perf) - 1] == '.', "%s: one sentence, ending in a period", r->id);
		for (size_t k = 0; k < i; k++) {
			ck_assert_str_ne(r->id, lint_rules[k].id);
			ck_assert_str_ne(r->name, lint_rules[k].name);
		}
		ck_assert_ptr_eq(lint_rule_find(r->id), r);
		ck_assert_ptr_eq(lint_rule_find(r->name), r);
		bool tested = false;
		for (size_t k = 0; k < NRULE_CASES; k++)
			tested |= !strcmp(rule_cases[k].id, r->id);
		ck_assert_msg(tested, "%s %s has no crafted dump", r->id, r->name);
	}
}
END_TEST

/* truncation at every length: never a read outside, always a clean answer */
START_TEST(every_truncation)
{
	struct jb b = { 0 };
	base(&b);
	jb_debug(&b, ADDR + 0x1000, 1, 1, ADDR + 0x1000);
	struct tr_unwind_opts o;
	opts_clean(&o);
	jb_func(&b, FB, &o, "second", ADDR + 0x1000, 1);
	jb_move(&b, ADDR, ADDR + 0x8000, F->code_size, 0);
	jb_close(&b);
	/* the record boundaries, where a cut leaves whole records */
	bool *edge = calloc(b.n + 1, 1);
	ck_assert_ptr_nonnull(edge);
	struct jdr_iter it;
	struct jdr_rec r;
	struct jdr_err f;
	ck_assert_int_eq(jdr_init(&it, b.p, b.n, &f), 0);
	edge[it.off] = true;
	while (jdr_next(&it, &r, &f) > 0)
		edge[it.off] = true;
	ck_assert(edge[b.n]);
	for (size_t n = 0; n <= b.n; n++) {
		struct lint_summary s = lint_buf(b.p, n, PV_CURRENT, NULL);
		if (n < 40) {
			ck_assert(s.unreadable);
			ck_assert_int_eq(lint_exit_code(&s), 2);
		} else {
			ck_assert_msg(fired("JD010") == !edge[n], "cut at %zu", n);
		}
	}
	free(edge);
	free(b.p);
}
END_TEST

/* memory is bounded: the histories never grow past their caps */
START_TEST(bounded_history)
{
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	mk_limit(&b, true, &c);
	struct lint_summary s = lint_buf(b.p, b.n, PV_CURRENT, NULL);
	ck_assert_uint_eq(s.loads, LINT_MAX_INDEX + 10);
	ck_assert(fired("JD099"));
	ck_assert_int_eq(lint_exit_code(&s), 0);
	/* a duplicate of an index still remembered is caught after the wrap */
	jb_load(&b, "dup", ADDR + 0x100 * (LINT_MAX_INDEX + 20), (const uint8_t *)"\xc3", 1, 2 * (LINT_MAX_INDEX + 5));
	lint_buf(b.p, b.n, PV_CURRENT, NULL);
	ck_assert(fired("JD026"));
	free(b.p);
}
END_TEST

/* ---- perf's layout against the jitted ELF perfview writes ---- */

START_TEST(layout_matches_perfview)
{
	enum pv_profile prof = (enum pv_profile)_i;
	struct tr_unwind_opts o;
	struct tr_unwind u;
	opts_clean(&o);
	unw(F11, &o, ADDR, &u);
	struct jd_load l = { .code_addr = ADDR, .vma = ADDR, .code_size = F11->code_size, .code_index = 3,
			     .name = "tramp", .code = F11->code, .has_unwind = true, .unwind = u.data,
			     .unwinding_size = u.size, .eh_frame_hdr_size = u.hdr_size, .mapped_size = u.mapped_size };
	struct jdr_unw lu = { u.size, u.hdr_size, u.mapped_size, u.data, u.size };
	struct pv_layout ly;
	lint_layout(prof, ADDR, F11->code_size, &lu, &ly);
	/* genelf's fixed facts, independent of pv_layout: .text at file offset
	 * 0x80 in every generation, .eh_frame at ALIGN_8 after it, the header on 4 */
	ck_assert_uint_eq(ly.text_off, 0x80);
	ck_assert_uint_eq(ly.eh_off, (0x80 + F11->code_size + 7) & ~7ull);
	ck_assert_uint_eq(ly.hdr_off % 4, 0);
	char dir[] = "/tmp/julint-XXXXXX", path[256], e2[512];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/jitted-1-3.so", dir);
	ck_assert_msg(pv_write_jitted_elf(path, prof, &l, EM_X86_64, e2, sizeof(e2)) == 0, "%s", e2);
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	size_t shstrndx;
	ck_assert_int_eq(elf_getshdrstrndx(e, &shstrndx), 0);
	int seen = 0;
	for (Elf_Scn *s = elf_nextscn(e, NULL); s; s = elf_nextscn(e, s)) {
		GElf_Shdr sh;
		ck_assert_ptr_nonnull(gelf_getshdr(s, &sh));
		const char *n = elf_strptr(e, shstrndx, sh.sh_name);
		if (!strcmp(n, ".text")) {
			ck_assert_uint_eq(sh.sh_addr, ly.text_addr);
			ck_assert_uint_eq(sh.sh_offset, ly.text_off);
			ck_assert_uint_eq(sh.sh_size, ly.text_size);
			seen |= 1;
		} else if (!strcmp(n, ".eh_frame")) {
			ck_assert_uint_eq(sh.sh_addr, ly.eh_addr);
			ck_assert_uint_eq(sh.sh_offset, ly.eh_off);
			ck_assert_uint_eq(sh.sh_size, ly.eh_size);
			seen |= 2;
		} else if (!strcmp(n, ".eh_frame_hdr")) {
			ck_assert_uint_eq(sh.sh_addr, ly.hdr_addr);
			ck_assert_uint_eq(sh.sh_offset, ly.hdr_off);
			ck_assert_uint_eq(sh.sh_size, ly.hdr_size);
			seen |= 4;
		}
	}
	ck_assert_int_eq(seen, 7);
	GElf_Phdr ph;
	ck_assert_ptr_nonnull(gelf_getphdr(e, 0, &ph));
	ck_assert_uint_eq(ph.p_offset, ly.load_offset);
	ck_assert_uint_eq(ph.p_vaddr, ly.load_vaddr);
	ck_assert_uint_eq(ph.p_filesz, ly.load_size);
	/* perf's read_unwind_spec_eh_frame from the file read back: (start - pgoff,
	 * or start alone in v6.1-v6.7) less the PT_LOAD's page; libdw's module
	 * start: the map start for /tmp/jitted-* (not in v6.1), else start - pgoff */
	uint64_t lu_want = (prof == PV_V61 ? ly.map_start : ly.map_start - ly.map_pgoff) - (ph.p_vaddr & ~4095ull);
	ck_assert_uint_eq(ly.lu_base, lu_want);
	ck_assert_uint_eq(ly.dw_base_tmp, prof == PV_V61 ? ADDR - pv_text_addr(prof) : ADDR);
	ck_assert_uint_eq(ly.dw_base_other, ADDR - pv_text_addr(prof));
	elf_end(e);
	close(fd);
	/* the MMAP2 perfview puts in its map tree for the same load */
	ck_assert_uint_eq(ly.map_pgoff, pv_text_addr(prof));
	ck_assert_uint_eq(ly.map_len, uw_jit_map_len(&l));
	ck_assert_uint_eq(ly.rt_eh - ly.rt_text, uw_jit_eh_off(&l));
	unlink(path);
	rmdir(dir);
}
END_TEST

/* ---- the CLI, and the harness's own dumps ---- */

static char bin[1024];
static char tmp[256];

static void cli_setup(void)
{
	setup();
	const char *b = getenv("JU_BIN");
	char cwd[512];
	/* absolute: some commands run from the temp dir.  JU_BIN may carry a
	 * runner ("qemu-aarch64 /abs/jitunwind"): taken as it is */
	if (b && (b[0] == '/' || strchr(b, ' ')))
		snprintf(bin, sizeof(bin), "%s", b);
	else
		snprintf(bin, sizeof(bin), "%s/%s", getcwd(cwd, sizeof(cwd)) ? cwd : ".", b ? b : "jitunwind");
	snprintf(tmp, sizeof(tmp), "/tmp/julint-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void cli_teardown(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static char *out;
#define OUTCAP (4u << 20)

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);
	if (!out)
		out = malloc(OUTCAP);
	ck_assert_ptr_nonnull(out);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	size_t n = fread(out, 1, OUTCAP - 1, p);
	out[n] = 0;
	char drain[4096];
	while (fread(drain, 1, sizeof(drain), p) > 0)
		;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void write_buf(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* dump decodes a dump with elf_mach 0 as the host's arch: the same lines as
 * with the host's machine in the header, and one line saying so (lint: the
 * same findings and exit 1, JD006 aside) */
START_TEST(cli_elf_mach_zero)
{
	const struct uw_arch *host = uw_arch_host();
	ck_assert_ptr_nonnull(host);
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	if (host->facts->elf_mach == EM_X86_64)
		mk_v8(&b, true, &c);
	else
		mk_cfa_a64(&b, true, &c);
	char set[600], zero[600];
	snprintf(set, sizeof(set), "%s/set.dump", tmp);
	snprintf(zero, sizeof(zero), "%s/zero.dump", tmp);
	write_buf(set, b.p, b.n);
	memset(b.p + 12, 0, 4);
	write_buf(zero, b.p, b.n);
	free(b.p);
	ck_assert_int_eq(sh("%s dump %s", bin, zero), 0);
	ck_assert_msg(strstr(out, "elf_mach 0: read as ") && strstr(out, host->facts->name), "%s", out);
	ck_assert_int_eq(sh("cd %s && %s dump set.dump | grep -v '^set.dump:\\|header:' > a && "
			    "%s dump zero.dump | grep -v '^zero.dump:\\|header:\\|elf_mach 0:' > b && diff a b && "
			    "grep -c '^ *0x[0-9a-f]* +0x[0-9a-f]* ' a", tmp, bin, bin), 0);
	ck_assert_msg(atoi(out) >= 3, "too few instructions decoded: %s", out);
	ck_assert_int_eq(sh("cd %s && %s lint set.dump | grep ': error: \\|: warning: ' | sed 's/^set/X/' > a; "
			    "%s lint zero.dump | grep ': error: \\|: warning: ' | sed 's/^zero/X/' > b; diff a b && grep -c . a",
			    tmp, bin, bin), 0);
	ck_assert_msg(atoi(out) >= 1, "no error: %s", out);
	ck_assert_int_eq(sh("%s lint %s", bin, zero), 1);
}
END_TEST

START_TEST(cli_exit_codes)
{
	char clean[512], bad[512], junk[512], both[1100];
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	snprintf(clean, sizeof(clean), "%s/jit-4242.dump", tmp);
	base(&b);
	jb_close(&b);
	write_buf(clean, b.p, b.n);
	snprintf(bad, sizeof(bad), "%s/after.dump", tmp);
	mk_after(&b, true, &c);
	write_buf(bad, b.p, b.n);
	snprintf(junk, sizeof(junk), "%s/junk.dump", tmp);
	write_buf(junk, (const uint8_t *)"hello, this is not a jitdump at all....", 40);
	free(b.p);

	ck_assert_int_eq(sh("%s lint %s", bin, clean), 0);
	ck_assert_msg(strstr(out, "0 errors, 0 warnings, 0 infos"), "%s", out);
	ck_assert_int_eq(sh("%s lint %s", bin, bad), 1);
	ck_assert_msg(strstr(out, ": error: JD030 unwind-after-load: ") && strstr(out, "perf: perf attaches"), "%s", out);
	/* unreadable: exit 2, the message names the file and an offset */
	ck_assert_int_eq(sh("%s lint %s", bin, junk), 2);
	snprintf(both, sizeof(both), "%s: offset 0x0: bad magic", junk);
	ck_assert_msg(strstr(out, junk) && strstr(out, "offset 0x0") && strstr(out, "bad magic"), "%s", out);
	ck_assert_int_eq(sh("%s lint %s/missing.dump", bin, tmp), 2);
	ck_assert_msg(strstr(out, "missing.dump: offset 0x0: cannot open"), "%s", out);
	/* several files: the worst exit */
	ck_assert_int_eq(sh("%s lint %s %s", bin, clean, bad), 1);
	ck_assert_int_eq(sh("%s lint %s %s %s", bin, clean, bad, junk), 2);
	/* JSON: the finding with id, severity, offset, perf's sentence */
	ck_assert_int_eq(sh("%s lint --json %s %s", bin, clean, bad), 1);
	ck_assert_msg(strstr(out, "\"id\": \"JD030\", \"name\": \"unwind-after-load\", \"severity\": \"error\", \"offset\": "),
		      "%s", out);
	ck_assert_msg(strstr(out, "\"exit\": 1 } }"), "%s", out);
	if (!access("/usr/bin/python3", X_OK)) {
		ck_assert_int_eq(sh("%s lint --json %s %s %s 2>/dev/null | python3 -m json.tool >/dev/null", bin, clean, bad, junk), 0);
		ck_assert_int_eq(sh("%s dump --json %s | python3 -m json.tool >/dev/null", bin, clean), 0);
		ck_assert_int_eq(sh("%s lint --rules --json | python3 -m json.tool >/dev/null", bin), 0);
	} else {
		printf("cli_exit_codes: python3 not installed, JSON syntax not checked\n");
	}
	ck_assert_int_eq(sh("%s dump %s", bin, junk), 2);
	ck_assert_msg(strstr(out, "offset 0x0") && strstr(out, "junk.dump"), "%s", out);
	ck_assert_int_eq(sh("%s lint --perf-profile nope %s", bin, clean), 2);
	ck_assert_int_eq(sh("%s lint", bin), 2);
}
END_TEST

/* `lint --rules` is a contract: ids never change meaning */
START_TEST(golden_rules)
{
	const char *path = "tests/golden/lint/rules.txt";
	ck_assert_int_eq(sh("%s lint --rules", bin), 0);
	if (getenv("JU_UPDATE_GOLDEN")) {
		FILE *f = fopen(path, "w");
		ck_assert_ptr_nonnull(f);
		fputs(out, f);
		fclose(f);
	}
	ck_assert_int_eq(sh("%s lint --rules | diff -u %s -", bin, path), 0);
}
END_TEST

/* Errors first by default, file order with --sort offset; --min-severity
 * hides but still counts; the summary counts per rule; JSON names offsets. */
START_TEST(cli_order_and_filters)
{
	char p[512];
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	mk_after2(&b, true, &c);
	snprintf(p, sizeof(p), "%s/order.dump", tmp);
	write_buf(p, b.p, b.n);
	free(b.p);
	ck_assert_int_eq(sh("%s lint %s", bin, p), 1);
	char *e = strstr(out, "error: JD030"), *i = strstr(out, "info: JD007");
	ck_assert_msg(e && i && e < i, "errors not first:\n%s", out);
	ck_assert_msg(strstr(out, "[JD007 file-name x1, JD030 unwind-after-load x1]"), "no per-rule counts:\n%s", out);
	ck_assert_int_eq(sh("%s lint --sort offset %s", bin, p), 1);
	e = strstr(out, "error: JD030");
	i = strstr(out, "info: JD007");
	ck_assert_msg(e && i && i < e, "--sort offset is not file order:\n%s", out);
	ck_assert_int_eq(sh("%s lint --min-severity error %s", bin, p), 1);
	ck_assert_msg(strstr(out, "error: JD030") && !strstr(out, "info: JD007") && strstr(out, "1 info"),
		      "--min-severity error:\n%s", out);
	ck_assert_int_eq(sh("%s lint --min-severity nope %s", bin, p), 2);
	ck_assert_int_eq(sh("%s lint --sort nope %s", bin, p), 2);
	ck_assert_int_eq(sh("%s lint --stack-size -1 %s", bin, p), 2);
	ck_assert_int_eq(sh("%s lint --json %s", bin, p), 1);
	ck_assert_msg(strstr(out, "\"load\": 40, \"code_offsets\": \"all\"") && strstr(out, "\"rules\": { \"JD007\": 1, \"JD030\": 1 }"),
		      "JSON lacks the load or the rule counts:\n%s", out);	/* dump's filters: by name, by address, by record offset; the walk still
	 * gives each load what perf attaches to it */
	ck_assert_int_eq(sh("%s dump --no-code --name 'b*' %s", bin, p), 0);
	ck_assert_msg(strstr(out, "name \"big\"") && !strstr(out, "name \"tramp\"") &&
		      strstr(out, "unwinding info: the UNWINDING_INFO at"), "--name:\n%s", out);
	ck_assert_int_eq(sh("%s dump --no-code --at 0x%llx %s", bin, (unsigned long long)ADDR + 1, p), 0);
	ck_assert_msg(strstr(out, "name \"tramp\"") && !strstr(out, "name \"big\""), "--at:\n%s", out);
	ck_assert_int_eq(sh("%s dump --no-code --record 0x28 %s", bin, p), 0);
	ck_assert_msg(strstr(out, "0x000028  CODE_LOAD") && !strstr(out, "CODE_UNWINDING_INFO"), "--record:\n%s", out);
	ck_assert_int_eq(sh("%s dump --at 0x%llx %s", bin, (unsigned long long)ADDR + 0x9000, p), 0);
	ck_assert_msg(!strstr(out, "CODE_LOAD"), "--at outside every load shows one:\n%s", out);
	ck_assert_int_eq(sh("%s dump --at nope %s", bin, p), 2);
	ck_assert_int_eq(sh("%s dump --record -1 %s", bin, p), 2);
}
END_TEST

/* a crafted dump's text dump and lint output, byte for byte (regenerate with
 * JU_UPDATE_GOLDEN=1 and read the diff) */
START_TEST(golden_dump)
{
	char p[512], cwd[2048];
	struct jb b = { 0 };
	struct ctx c = { PV_CURRENT, NULL, 0 };
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	mk_after2(&b, true, &c);
	jb_debug(&b, ADDR + 0x1000, 1, 1, ADDR + 0x1000);
	jb_move(&b, ADDR, ADDR + 0x8000, F->code_size, 0);
	jb_close(&b);
	snprintf(p, sizeof(p), "%s/crafted.dump", tmp);
	write_buf(p, b.p, b.n);
	free(b.p);
	static const char *const what[] = { "dump", "lint" };
	for (int k = 0; k < 2; k++) {
		char gold[2304];
		snprintf(gold, sizeof(gold), "%s/tests/golden/lint/crafted.%s.txt", cwd, what[k]);
		/* run from the temp dir: the printed path is just the file name */
		if (getenv("JU_UPDATE_GOLDEN"))
			sh("cd %s && %s %s crafted.dump > %s", tmp, bin, what[k], gold);
		int rc = sh("cd %s && %s %s crafted.dump | diff -u %s -", tmp, bin, what[k], gold);
		ck_assert_msg(rc == 0, "%s differs from %s:\n%s", what[k], gold, out);
	}
}
END_TEST

struct expect_case {
	const char *name;
	const char *ids;         /* rule ids (warning and error) the case's dump must yield, sorted */
};

/* The harness's dumps lint clean, except those whose point is a broken dump,
 * and those where perf cannot use what the case writes (the case's replays say
 * so too: hdr-no-table and hdr-table-sdata8 fail libunwind, fde-absptr-udata8
 * fails libdw, and nested trampolines repeat the same code). */
static const struct expect_case expect_cases[] = {
	/* aarch64: CPython's own FDE (facts section 7) ends with a block naming x29
	 * after ldp restored it; with PAC its rows are also 4 bytes early */
	{ "cpython-aarch64-bytes", "JD052 JD057" },
	{ "cpython-aarch64-pac", "JD052 JD057" },
	{ "cpython-aarch64-pac-fixed", "" },
	{ "neg-ra-column", "JD052 JD057" },
	/* x86_64: CPython's FDE never restores rbp's rule after the pop */
	{ "cpython-3.13-fp-bytes", "JD057" },
	{ "stack-deep", "JD080" },
	/* found by fuzz-cfi: a rule for xmm0 (libunwind's table ends at 16), and a
	 * frame whose return address is the last word of perf's stack copy */
	{ "fuzz-7b6a3d518b5b", "JD055" },
	{ "fuzz-023ff9cfabd7", "JD055" },
	{ "fuzz-074669363064", "JD080" },
	{ "eh-frame-unaligned", "JD045" },
	{ "fde-absptr-udata8", "JD054" },
	{ "hdr-before", "JD035" },
	{ "hdr-no-table", "JD042" },
	{ "hdr-table-sdata8", "JD041" },
	{ "mapped-zero", "JD049" },
	{ "neg-cfa-off-by-8", "JD052" },
	{ "neg-rows-shifted", "JD052 JD057" },
	{ "nested-depth3", "" },
	{ "stride-overlap", "JD051" },
	{ "unwind-after-load", "JD030" },
	/* the hybrid cases run two levels of CPython's trampolines; with CPython's FDE, x86_64's never restores
	 * rbp's rule after the pop and aarch64's names x29/x30 after the ldp
	 * (JD057), and aarch64's rows are also checked against the code (JD052) */
	{ "hybrid", "" },
#if defined(__aarch64__)
#define HX_HYBRID_CFI "JD052 JD057"
	{ "hybrid-plain-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-leaf-cfi", HX_HYBRID_CFI },
	{ "hybrid-pac-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-pac-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-pac-nofp-leaf-cfi", HX_HYBRID_CFI },
#else
#define HX_HYBRID_CFI "JD057"
	{ "hybrid-plain-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-plain-nofp-leaf-cfi", HX_HYBRID_CFI },
	{ "hybrid-cet-fp-cfi", HX_HYBRID_CFI },
	{ "hybrid-cet-nofp-cfi", HX_HYBRID_CFI },
	{ "hybrid-cet-nofp-leaf-cfi", HX_HYBRID_CFI },
#endif
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* run one case with its own dump directory; the path of its dump */
static bool case_dump(const char *casefile, const char *name, char *dump, size_t n)
{
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
	int rc = sh("%s run --unwinders oracle --jitdump-dir %s %s", bin, dir, casefile);
	if (rc == 77)
		return false;
	ck_assert_msg(rc == 0 || rc == 1, "run %s: exit %d\n%s", casefile, rc, out);
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	struct dirent *de;
	bool found = false;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "jit-", 4) && strstr(de->d_name, ".dump")) {
			snprintf(dump, n, "%s/%s", dir, de->d_name);
			found = true;
		}
	closedir(d);
	ck_assert_msg(found, "%s: no jit-<pid>.dump in %s", casefile, dir);
	return true;
}

START_TEST(harness_dumps)
{
	const struct tr_arch *host = tr_arch_host();
	char cdir[64];
	snprintf(cdir, sizeof(cdir), "cases/%s", host ? host->facts->name : "x86_64");
	DIR *d = opendir(cdir);
	if (!d) {
		printf("harness_dumps: no %s for this host: skipped\n", cdir);
		return;
	}
	char *names[256];
	size_t nn = 0;
	struct dirent *de;
	while ((de = readdir(d)) && nn < 256) {
		size_t l = strlen(de->d_name);
		if (l > 5 && !strcmp(de->d_name + l - 5, ".case"))
			names[nn++] = strndup(de->d_name, l - 5);
	}
	closedir(d);
	qsort(names, nn, sizeof(names[0]), cmp_str);
	ck_assert_uint_gt(nn, 5);
	size_t checked = 0;
	for (size_t i = 0; i < nn; i++) {
		char cf[512], dump[1024], e2[512];
		snprintf(cf, sizeof(cf), "%s/%s.case", cdir, names[i]);
		if (!case_dump(cf, names[i], dump, sizeof(dump)))
			continue;
		struct lint_opts o = { PV_CURRENT, dump, 0, 8192, NULL };
		struct lint_summary s;
		memset(&G, 0, sizeof(G));
		ck_assert_msg(lint_file(dump, &o, collect, &G, &s, e2, sizeof(e2)) == 0, "%s", e2);
		/* the warning and error ids, sorted and unique */
		const char *ids[64];
		size_t ni = 0;
		for (size_t k = 0; k < G.n && ni < 64; k++) {
			if (G.r[k]->sev == LINT_INFO)
				continue;
			bool dup = false;
			for (size_t j = 0; j < ni; j++)
				dup |= !strcmp(ids[j], G.r[k]->id);
			if (!dup)
				ids[ni++] = G.r[k]->id;
		}
		qsort(ids, ni, sizeof(ids[0]), cmp_str);
		char got[512] = "";
		for (size_t k = 0; k < ni; k++)
			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s", k ? " " : "", ids[k]);
		/* an entry covers its name and its variants (name-*); the longest wins */
		const char *want = "";
		size_t best = 0;
		for (size_t k = 0; k < sizeof(expect_cases) / sizeof(expect_cases[0]); k++) {
			size_t l = strlen(expect_cases[k].name);
			if (!strncmp(expect_cases[k].name, names[i], l) && (!names[i][l] || names[i][l] == '-') &&
			    l > best) {
				want = expect_cases[k].ids;
				best = l;
			}
		}
		char buf[16384];
		show(buf, sizeof(buf));
		ck_assert_msg(!strcmp(got, want), "%s: expected {%s}, got {%s}:\n%s", names[i], want, got, buf);
		/* the exit code of the CLI agrees */
		int rc = sh("%s lint %s", bin, dump);
		ck_assert_int_eq(rc, lint_exit_code(&s));
		/* and dump decodes every record to the end */
		ck_assert_msg(sh("%s dump %s", bin, dump) == 0 && strstr(out, "end of file"), "%s", out);
		checked++;
		free(names[i]);
	}
	ck_assert_uint_gt(checked, 5);
}
END_TEST

/* ---- dump's rows against the oracle and the truth ---- */

static uint32_t rmach;   /* the dump's elf_mach, for register names */

static const char *rname(unsigned r, char *buf, size_t n)
{
	static const char *const x86[17] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
					     "r10", "r11", "r12", "r13", "r14", "r15", "rip" };
	if (rmach == EM_X86_64 && r < 17)
		return x86[r];
	if (rmach == EM_AARCH64 && r <= 31)
		snprintf(buf, n, r == 31 ? "sp" : "x%u", r);
	else
		snprintf(buf, n, "r%u", r);
	return buf;
}

/* the oracle's row, formatted here independently of lintcmd.c */
static void fmt_row(const struct ehf_row *row, char *buf, size_t n)
{
	char r[16];
	size_t o;
	if (row->cfa_kind == EHF_CFA_EXPR)
		o = (size_t)snprintf(buf, n, "cfa=expr(%zu bytes)", row->cfa_expr_len);
	else
		o = (size_t)snprintf(buf, n, "cfa=%s%+" PRId64, rname(row->cfa_reg, r, sizeof(r)), row->cfa_off);
	for (unsigned i = 0; i < EHF_NREGS; i++) {
		const struct ehf_rule *ru = &row->reg[i];
		switch (ru->kind) {
		case EHF_INITIAL: continue;
		case EHF_OFFSET:
			o += (size_t)snprintf(buf + o, n - o, " %s=cfa%+" PRId64, rname(i, r, sizeof(r)), ru->off);
			break;
		case EHF_VAL_OFFSET:
			o += (size_t)snprintf(buf + o, n - o, " %s=val(cfa%+" PRId64 ")", rname(i, r, sizeof(r)), ru->off);
			break;
		case EHF_UNDEF:
			o += (size_t)snprintf(buf + o, n - o, " %s=undef", rname(i, r, sizeof(r)));
			break;
		case EHF_SAME:
			o += (size_t)snprintf(buf + o, n - o, " %s=same", rname(i, r, sizeof(r)));
			break;
		default:
			o += (size_t)snprintf(buf + o, n - o, " %s=?", rname(i, r, sizeof(r)));
			break;
		}
	}
	if (row->ra_signed)
		snprintf(buf + o, n - o, " ra_signed");
}

/* Every pc of every FDE of the dump: the row dump printed covering it equals
 * ehf_row_at there; for derived CFI the CFA also equals the emitter's truth. */
static size_t rows_vs_oracle(const char *dump, const struct tr_func *truth)
{
	ck_assert_int_eq(sh("%s dump %s", bin, dump), 0);
	struct { uint64_t lo, hi; char text[512]; } *rows = calloc(4096, sizeof(*rows));
	ck_assert_ptr_nonnull(rows);
	size_t nr = 0;
	bool printed_error = strstr(out, "error: .eh_frame+0x") != NULL;
	for (char *line = out; line && *line && nr < 4096;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		unsigned long long lo, hi;
		int k = 0;
		if (sscanf(line, " [0x%llx, 0x%llx)  %n", &lo, &hi, &k) == 2 && k) {
			rows[nr].lo = lo;
			rows[nr].hi = hi;
			snprintf(rows[nr].text, sizeof(rows[nr].text), "%s", line + k);
			nr++;
		}
		line = nl ? nl + 1 : NULL;
	}
	struct jd_file f;
	struct jd_err je;
	ck_assert_msg(jd_open(&f, dump, &je) == 0, "%s", je.msg);
	rmach = f.elf_mach;
	size_t pcs = 0;
	for (size_t i = 0; i < f.nloads; i++) {
		const struct jd_load *l = &f.loads[i];
		if (!l->has_unwind)
			continue;
		struct ehf_table t;
		struct ehf_bases b = { l->code_addr + uw_jit_eh_off(l), 0, 0, 8 };
		struct ehf_err ee;
		if (ehf_parse(&t, l->unwind, l->unwinding_size - l->eh_frame_hdr_size, &b, &ee)) {
			/* dump prints the error instead of rows (hdr-before) */
			ck_assert_msg(printed_error, "%s: no parse error printed", dump);
			continue;
		}
		for (size_t k = 0; k < t.nfdes; k++) {
			const struct ehf_fde *fd = &t.fdes[k];
			for (uint64_t pc = fd->pc_begin; pc < fd->pc_end; pc++) {
				struct ehf_row row;
				char want[512];
				ck_assert_int_eq(ehf_row_at(fd, pc, &row, &ee), 0);
				fmt_row(&row, want, sizeof(want));
				const char *got = NULL;
				for (size_t r = 0; r < nr && !got; r++)
					if (rows[r].lo <= pc && pc < rows[r].hi)
						got = rows[r].text;
				ck_assert_msg(got, "%s: no row printed for pc 0x%" PRIx64, dump, pc);
				ck_assert_msg(!strcmp(got, want), "%s pc 0x%" PRIx64 ": dump '%s', oracle '%s'", dump, pc, got,
					      want);
				/* the truth is the case's trampoline: not its leaf, if it has one */
				if (truth && l->code_size == truth->code_size &&
				    !memcmp(l->code, truth->code, truth->code_size) && pc - l->code_addr < truth->code_size) {
					/* the truth row of the instruction holding pc */
					const struct tr_row *tr = NULL;
					for (size_t q = 0; q < truth->nrows; q++)
						if (truth->rows[q].offset <= pc - l->code_addr)
							tr = &truth->rows[q];
					char cfa[64], r2[16];
					size_t cl = (size_t)snprintf(cfa, sizeof(cfa), "cfa=%s%+" PRId64, rname((unsigned)tr->cfa_reg,
								     r2, sizeof(r2)), tr->cfa_off);
					ck_assert_msg(!strncmp(got, cfa, cl) && (!got[cl] || got[cl] == ' '), "%s +%" PRIu64
						      " (%s): dump '%s', truth %s", dump, pc - l->code_addr, tr->insn, got, cfa);
				}
				pcs++;
			}
		}
		ehf_table_free(&t);
	}
	jd_close(&f);
	free(rows);
	return pcs;
}

/* every dump of this host's cases: the rows match the oracle at every pc;
 * where the case derives its CFI from the truth (and lays .eh_frame out as perf
 * does) the CFA matches the emitter's truth rows too */
START_TEST(dump_rows_match_oracle)
{
	const struct tr_arch *host = tr_arch_host();
	char cdir[64];
	snprintf(cdir, sizeof(cdir), "cases/%s", host ? host->facts->name : "x86_64");
	DIR *d = opendir(cdir);
	if (!d) {
		printf("dump_rows_match_oracle: no %s for this host: skipped\n", cdir);
		return;
	}
	struct dirent *de;
	size_t pcs = 0, truths = 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l <= 5 || strcmp(de->d_name + l - 5, ".case"))
			continue;
		char cf[512], name[256], dump[1024], e2[512];
		snprintf(name, sizeof(name), "%.*s", (int)(l - 5), de->d_name);
		snprintf(cf, sizeof(cf), "%s/%s", cdir, de->d_name);
		if (!case_dump(cf, name, dump, sizeof(dump)))
			continue;
		struct hx_case hc;
		struct tr_func *truth = NULL;
		ck_assert_msg(hx_case_load(&hc, cf, e2, sizeof(e2)) == 0, "%s", e2);
		if (hc.unw.cfi == TR_CFI_DERIVED && !hc.unw.eh_unaligned && host) {
			truth = calloc(1, sizeof(*truth));
			ck_assert_ptr_nonnull(truth);
			ck_assert_msg(tr_emit(host, hc.ops, hc.nops, truth, e2, sizeof(e2)) == 0, "%s", e2);
			truths++;
		}
		hx_case_free(&hc);
		pcs += rows_vs_oracle(dump, truth);
		free(truth);
	}
	closedir(d);
	ck_assert_uint_gt(pcs, 100);
	ck_assert_uint_gt(truths, 2);
}
END_TEST

/* The code check keeps the rows of a CFA program and reuses them where the
 * same program bytes come again (unwinders/lint/lint_code.c): every load of a
 * dump where programs recur must get the findings it gets alone, in a walk
 * of its own.  The loads: the clean program, the same with a wrong CFA
 * offset (JD052), both again elsewhere, and the clean program under a CIE
 * whose data alignment is -4, not -8 (rbp's rule moves to cfa-8: JD058),
 * whose program bytes are those of the first load: a key without the
 * alignment would answer it with the first load's rows, and no finding. */
struct rc_load {
	bool bad, da4;
	uint64_t addr;
};

/* A frame-pointer function's CFA program as raw bytes (def_cfa_offset 16,
 * rbp at cfa-16, the CFA on rbp, back to rsp + 8), or (bad) the same with
 * def_cfa_offset 24 where 16 is right (JD052). */
static void prog_opts(struct tr_unwind_opts *o, bool bad)
{
	static const uint8_t good_prog[] = { 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07,
					     0x08, 0xc6 };
	opts_clean(o);
	o->cfi = TR_CFI_BYTES;
	memcpy(o->prog, good_prog, sizeof(good_prog));
	o->prog_len = sizeof(good_prog);
	if (bad)
		o->prog[2] = 0x18;
}

static size_t rc_put(struct jb *b, const struct rc_load *l, uint64_t index)
{
	struct tr_unwind_opts o;
	struct tr_unwind u;
	prog_opts(&o, l->bad);
	unw(F, &o, l->addr, &u);
	if (l->da4) {
		/* the CIE: length, id, version, "zR", code_align 1, data_align -8 */
		ck_assert_msg(!memcmp(u.data + 9, "zR", 3) && u.data[12] == 0x01 && u.data[13] == 0x78,
			      "the CIE's layout changed: data_align is not at .eh_frame+13");
		u.data[13] = 0x7c;
	}
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	return jb_load(b, "tramp", l->addr, F->code, F->code_size, index);
}

/* "JD052 +0x1 +0x4 ..": the findings about the load at off, in order */
static void rc_about(uint64_t off, char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < G.n && o < cap; i++) {
		if (G.where[i].load != off)
			continue;
		o += (size_t)snprintf(buf + o, cap - o, "%s", G.r[i]->id);
		for (unsigned k = 0; k < G.where[i].npc && o < cap; k++)
			o += (size_t)snprintf(buf + o, cap - o, " +0x%" PRIx64, G.where[i].pc[k]);
		if (o < cap)
			o += (size_t)snprintf(buf + o, cap - o, "; ");
	}
}

START_TEST(row_cache_keeps_findings)
{
	static const struct rc_load loads[] = {
		{ false, false, ADDR }, { true, false, ADDR + 0x10000 }, { false, false, ADDR + 0x20000 },
		{ true, false, ADDR + 0x30000 }, { false, true, ADDR + 0x40000 }, { false, false, ADDR + 0x50000 },
	};
	enum { N = sizeof(loads) / sizeof(loads[0]) };
	struct jb all = { 0 };
	size_t off[N];
	jb_std(&all);
	for (size_t i = 0; i < N; i++)
		off[i] = rc_put(&all, &loads[i], i);
	jb_close(&all);
	lint_buf(all.p, all.n, PV_CURRENT, NULL);
	static char together[N][2048], alone[2048];
	for (size_t i = 0; i < N; i++)
		rc_about(off[i], together[i], sizeof(together[i]));
	for (size_t i = 0; i < N; i++) {
		struct jb one = { 0 };
		jb_std(&one);
		size_t o1 = rc_put(&one, &loads[i], i);
		jb_close(&one);
		lint_buf(one.p, one.n, PV_CURRENT, NULL);
		rc_about(o1, alone, sizeof(alone));
		ck_assert_msg(!strcmp(together[i], alone), "load %zu: alone '%s', in the dump '%s'", i, alone,
			      together[i]);
		/* the controls: each variant is seen by a finding, the clean one by none */
		if (loads[i].bad)
			ck_assert_msg(strstr(alone, "JD052"), "load %zu: no JD052 alone: '%s'", i, alone);
		else if (loads[i].da4)
			ck_assert_msg(strstr(alone, "JD058"), "load %zu: no JD058 alone: '%s'", i, alone);
		else
			ck_assert_msg(!alone[0], "load %zu: the clean program has findings: '%s'", i, alone);
		free(one.p);
	}
	free(all.p);
}
END_TEST

/* The code check's memo (unwinders/lint/lint_code.c) serves a load whose code
 * bytes repeat an earlier load's with the findings of an earlier check of
 * the same code, rows and geometry: the walk must report what it reports
 * with the memo off (JU_LINT_MEMO=0), finding for finding, and the memo must
 * have served some.  The controls: the same code under a program one byte
 * different (a wrong CFA offset, JD052) and a program under code one byte
 * different (push %rbx for push %rbp, JD058) and the same program with its
 * FDE one byte into the code (its rows meet other instructions:
 * JD052, in code of nops; the same nops and program with the FDE one byte
 * shorter at the start: JD046, JD052 at other offsets), each twice (the second copy's code was seen before, so the memo
 * is asked): each must get its own finding, the one it gets in a walk of its
 * own. */
struct cm_load {
	bool bad_cfi, bad_code, padded, shifted;   /* shifted: padded, and the FDE one byte in */
};

static size_t cm_put(struct jb *b, const struct cm_load *l, uint64_t addr, uint64_t index)
{
	static uint8_t code[256];
	ck_assert_uint_le(F->code_size, sizeof(code));
	memcpy(code, F->code, F->code_size);
	if (l->bad_code) {
		ck_assert_uint_eq(code[0], 0x55);   /* push %rbp */
		code[0] = 0x53;                     /* push %rbx */
	}
	struct tr_unwind_opts o;
	struct tr_unwind u;
	prog_opts(&o, l->bad_cfi);
	size_t n = F->code_size;
	if (!l->padded && !l->shifted) {
		unw(F, &o, addr, &u);
	} else {
		/* code of nops only, one byte longer than F's, and an FDE one
		 * byte shorter: at its start, or one byte in (pc_begin and
		 * pc_range are sdata4 after the CIE and the FDE's length and CIE
		 * pointer): the same code bytes under the same rows either way */
		static struct tr_func g;
		g = *F;
		ck_assert_uint_lt(g.code_size, sizeof(g.code));
		g.code_size++;
		n++;
		memset(g.code, 0x90, g.code_size);
		memset(code, 0x90, n);
		unw(&g, &o, addr, &u);
		uint32_t cie, pb, len;
		memcpy(&cie, u.data, 4);
		ck_assert_uint_lt(4 + cie + 16, u.size);
		memcpy(&pb, u.data + 4 + cie + 8, 4);
		memcpy(&len, u.data + 4 + cie + 12, 4);
		ck_assert_uint_eq(len, n);
		pb += l->shifted;
		len--;
		memcpy(u.data + 4 + cie + 8, &pb, 4);
		memcpy(u.data + 4 + cie + 12, &len, 4);
	}
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	return jb_load(b, "tramp", addr, code, n, index);
}

/* every finding of the last walk, one a line */
static void cm_all(char *buf, size_t cap)
{
	size_t o = 0;
	buf[0] = 0;
	for (size_t i = 0; i < G.n && o < cap; i++) {
		o += (size_t)snprintf(buf + o, cap - o, "0x%" PRIx64 " %s load 0x%" PRIx64 " %s", G.off[i], G.r[i]->id,
				      G.where[i].load, G.msg[i]);
		for (unsigned k = 0; k < G.where[i].npc && o < cap; k++)
			o += (size_t)snprintf(buf + o, cap - o, " +0x%" PRIx64, G.where[i].pc[k]);
		if (o < cap)
			o += (size_t)snprintf(buf + o, cap - o, "\n");
	}
}

START_TEST(code_memo_keeps_findings)
{
	enum { N = 40 };
	static struct cm_load loads[N];
	for (size_t i = 0; i < N; i++)
		loads[i] = (struct cm_load){ i % 3 == 1, false, false, false };
	loads[20] = loads[21] = (struct cm_load){ false, true, false, false };
	loads[30] = loads[31] = (struct cm_load){ true, false, false, false };
	loads[33] = loads[34] = (struct cm_load){ false, false, true, false };
	loads[35] = loads[36] = (struct cm_load){ false, false, false, true };
	struct jb all = { 0 };
	size_t off[N];
	jb_std(&all);
	for (size_t i = 0; i < N; i++)
		off[i] = cm_put(&all, &loads[i], ADDR + i * 0x10000, i);
	jb_close(&all);
	static char with[64 * 1024], without[64 * 1024], alone[2048], there[2048];
	ck_assert_int_eq(setenv("JU_LINT_MEMO", "0", 1), 0);
	struct lint_summary s0 = lint_buf(all.p, all.n, PV_CURRENT, NULL);
	cm_all(without, sizeof(without));
	ck_assert_int_eq(unsetenv("JU_LINT_MEMO"), 0);
	ck_assert_uint_eq(s0.memo_hits, 0);
	struct lint_summary s1 = lint_buf(all.p, all.n, PV_CURRENT, NULL);
	cm_all(with, sizeof(with));
	ck_assert_msg(s1.memo_hits >= N / 2, "the memo served %" PRIu64 " of %d checks", s1.memo_hits, N);
	size_t d = 0;
	while (with[d] && with[d] == without[d])
		d++;
	while (d && with[d - 1] != '\n')
		d--;
	ck_assert_msg(!strcmp(with, without), "with the memo, from the first line that differs:\n%.600s\nwithout:\n%.600s",
		      with + d, without + d);
	ck_assert_msg(strstr(with, "JD052") && strlen(with) < sizeof(with) - 1, "%s", with);
	for (size_t i = 0; i < N; i++) {
		struct jb one = { 0 };
		jb_std(&one);
		size_t o1 = cm_put(&one, &loads[i], ADDR + i * 0x10000, i);
		jb_close(&one);
		lint_buf(one.p, one.n, PV_CURRENT, NULL);
		rc_about(o1, alone, sizeof(alone));
		free(one.p);
		lint_buf(all.p, all.n, PV_CURRENT, NULL);
		rc_about(off[i], there, sizeof(there));
		ck_assert_msg(!strcmp(there, alone), "load %zu: alone '%s', in the dump '%s'", i, alone, there);
		if (loads[i].shifted)
			ck_assert_msg(strstr(alone, "JD052"), "load %zu: no JD052 alone: '%s'", i, alone);
		else if (loads[i].padded)
			ck_assert_msg(strstr(alone, "JD046") && strstr(alone, "JD052"), "load %zu: not JD046 alone: '%s'", i, alone);
		else if (loads[i].bad_code)
			ck_assert_msg(strstr(alone, "JD058"), "load %zu: no JD058 alone: '%s'", i, alone);
		else if (loads[i].bad_cfi)
			ck_assert_msg(strstr(alone, "JD052"), "load %zu: no JD052 alone: '%s'", i, alone);
		else
			ck_assert_msg(!alone[0], "load %zu: the clean load has findings: '%s'", i, alone);
	}
	free(all.p);
}
END_TEST

Suite *suite_lint(void);
Suite *suite_lint(void)
{
	Suite *s = suite_create("lint");
	TCase *tc = tcase_create("rules");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, each_rule, 0, NRULE_CASES);
	tcase_add_test(tc, reference_is_clean);
	tcase_add_test(tc, rule_table);
	tcase_add_test(tc, cet_forgot_every_boundary);
	tcase_add_test(tc, v8_epilogue);
	tcase_add_test(tc, identical_code_is_clean);
	tcase_add_test(tc, debug_terminator_is_clean);
	tcase_add_test(tc, undecoded_names_the_bytes);
	tcase_add_test(tc, elf_mach_zero_is_the_host);
	tcase_add_test(tc, elf_mach_without_decoder);
	tcase_add_test(tc, jitted_elf_mach_zero);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, bounded_history);
	tcase_add_test(tc, row_cache_keeps_findings);
	tcase_add_test(tc, code_memo_keeps_findings);
	tcase_add_loop_test(tc, layout_matches_perfview, PV_CURRENT, PV_5X_0X40 + 1);
	suite_add_tcase(s, tc);
	tc = tcase_create("cli");
	tcase_add_checked_fixture(tc, cli_setup, cli_teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, cli_exit_codes);
	tcase_add_test(tc, cli_elf_mach_zero);
	tcase_add_test(tc, golden_rules);
	tcase_add_test(tc, golden_dump);
	tcase_add_test(tc, cli_order_and_filters);
	tcase_add_test(tc, harness_dumps);
	tcase_add_test(tc, dump_rows_match_oracle);
	suite_add_tcase(s, tc);
	return s;
}
