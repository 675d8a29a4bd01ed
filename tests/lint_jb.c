/* Suite lint: the jitdump builder, code and unwinding data from the JIT side,
 * linting a buffer (tests/lint.h). */
#include "tests/lint.h"

static struct ju_err err;

/* ---- a jitdump builder ---- */

void jb_put(struct jb *b, const void *d, size_t n)
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

void jb_zero(struct jb *b, size_t n)
{
	static const uint8_t z[64];
	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);
		jb_put(b, z, k);
		n -= k;
	}
}

void jb_hdr(struct jb *b, uint32_t magic, uint32_t version, uint32_t total, uint32_t mach, uint64_t flags)
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

void jb_std(struct jb *b)
{
	jb_hdr(b, JD_MAGIC, 1, 40, EM_X86_64, 0);
}

size_t jb_prefix(struct jb *b, uint32_t id, uint32_t total)
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
size_t jb_load_pid(struct jb *b, uint32_t pid, const char *name, uint64_t addr, const uint8_t *code,
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

size_t jb_load(struct jb *b, const char *name, uint64_t addr, const uint8_t *code, size_t n, uint64_t index)
{
	return jb_load_pid(b, PID, name, addr, code, n, index);
}

size_t jb_unw(struct jb *b, const uint8_t *d, size_t dlen, uint64_t us, uint64_t hs, uint64_t ms)
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

void jb_close(struct jb *b)
{
	jb_prefix(b, JD_CODE_CLOSE, 16);
}

void jb_move(struct jb *b, uint64_t old, uint64_t neu, uint64_t size, uint64_t index)
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
void jb_debug(struct jb *b, uint64_t code_addr, uint64_t nr, size_t have, uint64_t entry_addr)
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

struct tr_func *lt_emit_for(const struct tr_arch *a, const char *const *lines, size_t n)
{
	static struct tr_op ops[64];
	ck_assert_uint_le(n, 64);
	for (size_t i = 0; i < n; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].line = (int)i + 1;
		ck_assert_msg(tr_op_parse(lines[i], &ops[i], &err) == 0, "%s: %s", lines[i], err.msg);
	}
	struct tr_func *f = calloc(1, sizeof(*f));
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(tr_emit(a, ops, n, f, &err) == 0, "%s", err.msg);
	return f;
}

struct tr_func *lt_emit(const char *const *lines, size_t n)
{
	return lt_emit_for(&tr_arch_x86_64, lines, n);
}

const char *const fp_ops[] = { "push_fp", "set_fp", "call_target", "pop_fp", "ret" };
const char *const nofp_ops[] = { "alloc 8", "call_target", "free 8", "ret" };
const char *const big_ops[] = { "push_fp", "set_fp", "save_reg %rbx", "alloc 24", "call_target",
				       "free 24", "restore_reg %rbx", "pop_fp", "ret" };

struct tr_func *F, *F11, *FB, *FA;

void lt_opts_clean(struct tr_unwind_opts *o)
{
	tr_unwind_opts_default(o);
	o->terminator = true;    /* the fully clean reference: no JD038 */
}

void lt_unw(const struct tr_func *f, const struct tr_unwind_opts *o, uint64_t addr, struct tr_unwind *u)
{
	ck_assert_msg(tr_unwind_build(f, o, addr, u, &err) == 0, "%s", err.msg);
}

/* UNWINDING_INFO + CODE_LOAD of f at addr, as the harness writes them */
void jb_func(struct jb *b, const struct tr_func *f, const struct tr_unwind_opts *o, const char *name,
		    uint64_t addr, uint64_t index)
{
	struct tr_unwind u;
	lt_unw(f, o, addr, &u);
	jb_unw(b, u.data, u.size, u.size, u.hdr_size, u.mapped_size);
	jb_load(b, name, addr, f->code, f->code_size, index);
}

/* ---- linting a buffer ---- */

void lt_collect(const struct lint_finding *f, void *arg)
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

struct got lt_G;

/* lint an exact-size heap copy, so ASan sees any read past the end */
const char *lt_lint_dir;      /* lint_opts.dump_dir of the next lint_buf */

struct lint_summary lt_lint_buf(const uint8_t *p, size_t n, enum pv_profile prof, const char *name)
{
	uint8_t *h = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(h);
	memcpy(h, p, n);
	struct lint_opts o = { prof, name, 0, 8192, lt_lint_dir };
	lt_lint_dir = NULL;
	struct lint_summary s;
	memset(&lt_G, 0, sizeof(lt_G));
	int rc = lint_mem(h, n, &o, lt_collect, &lt_G, &s);
	ck_assert_int_eq(rc, s.unreadable ? -EINVAL : 0);
	free(h);
	return s;
}

bool lt_fired(const char *id)
{
	for (size_t i = 0; i < lt_G.n; i++)
		if (!strcmp(lt_G.r[i]->id, id))
			return true;
	return false;
}

void lt_show(char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < lt_G.n && o < cap; i++)
		o += (size_t)snprintf(out + o, cap - o, "  0x%" PRIx64 " %s %s: %s\n", lt_G.off[i], lt_G.r[i]->id, lt_G.r[i]->name,
				      lt_G.msg[i]);
}
