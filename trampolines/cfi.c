/* CFA programs: the CIE's entry state, an FDE program derived from the truth
 * rows, and .cfi_* directives compiled with GNU as semantics. */
#include <ctype.h>
#include <dwarf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trampolines/buf.h"
#include "trampolines/tramp.h"
#include "juerr.h"

/* Smallest advance form for delta code units. */
static void cfa_advance(struct tr_buf *b, uint64_t delta)
{
	if (!delta)
		return;
	if (delta < 0x40) {
		tr_buf_u8(b, (uint8_t)(DW_CFA_advance_loc | delta));
	} else if (delta <= 0xff) {
		tr_buf_u8(b, DW_CFA_advance_loc1);
		tr_buf_le(b, delta, 1);
	} else if (delta <= 0xffff) {
		tr_buf_u8(b, DW_CFA_advance_loc2);
		tr_buf_le(b, delta, 2);
	} else {
		tr_buf_u8(b, DW_CFA_advance_loc4);
		tr_buf_le(b, delta, 4);
	}
}

/* def_cfa family: the unsigned forms take bytes, the _sf forms factored bytes. */
static void cfa_def_cfa(struct tr_buf *b, int data_align, int reg, int64_t off)
{
	if (off >= 0) {
		tr_buf_u8(b, DW_CFA_def_cfa);
		tr_buf_uleb(b, (uint64_t)reg);
		tr_buf_uleb(b, (uint64_t)off);
	} else {
		tr_buf_u8(b, DW_CFA_def_cfa_sf);
		tr_buf_uleb(b, (uint64_t)reg);
		tr_buf_sleb(b, off / data_align);
	}
}

static void cfa_def_cfa_offset(struct tr_buf *b, int data_align, int64_t off)
{
	if (off >= 0) {
		tr_buf_u8(b, DW_CFA_def_cfa_offset);
		tr_buf_uleb(b, (uint64_t)off);
	} else {
		tr_buf_u8(b, DW_CFA_def_cfa_offset_sf);
		tr_buf_sleb(b, off / data_align);
	}
}

/* reg saved at CFA + factored * data_align. */
static void cfa_offset(struct tr_buf *b, unsigned reg, int64_t factored)
{
	if (factored < 0) {
		tr_buf_u8(b, DW_CFA_offset_extended_sf);
		tr_buf_uleb(b, reg);
		tr_buf_sleb(b, factored);
	} else if (reg < 64) {
		tr_buf_u8(b, (uint8_t)(DW_CFA_offset | reg));
		tr_buf_uleb(b, (uint64_t)factored);
	} else {
		tr_buf_u8(b, DW_CFA_offset_extended);
		tr_buf_uleb(b, reg);
		tr_buf_uleb(b, (uint64_t)factored);
	}
}

static void cfa_restore(struct tr_buf *b, unsigned reg)
{
	if (reg < 64) {
		tr_buf_u8(b, (uint8_t)(DW_CFA_restore | reg));
	} else {
		tr_buf_u8(b, DW_CFA_restore_extended);
		tr_buf_uleb(b, reg);
	}
}

static void cfa_op_reg(struct tr_buf *b, uint8_t opcode, unsigned reg)
{
	tr_buf_u8(b, opcode);
	tr_buf_uleb(b, reg);
}

int tr_cfi_cie_init(const struct tr_arch *a, uint8_t *buf, size_t cap, size_t *len)
{
	struct tr_buf b = { .p = buf, .cap = cap };
	cfa_def_cfa(&b, a->data_align, a->facts->dw_sp, a->facts->entry_cfa_off);
	if (tr_entry_ra_where(a) == TR_RA_AT_CFA)
		cfa_offset(&b, (unsigned)a->facts->dw_ra, a->facts->ra_cfa_off / a->data_align);
	else if (a->facts->dw_lr != a->facts->dw_ra) {
		tr_buf_u8(&b, DW_CFA_register);
		tr_buf_uleb(&b, (uint64_t)a->facts->dw_ra);
		tr_buf_uleb(&b, (uint64_t)a->facts->dw_lr);
	}
	*len = b.len;
	return b.overflow ? -ENOSPC : 0;
}

/* A column's rule as a row states it: where the caller's value is. */
enum col_kind { COL_SAME, COL_OFFSET, COL_REG };
struct col_rule {
	enum col_kind kind;
	int64_t v;
};

static struct col_rule row_col(const struct tr_arch *a, const struct tr_row *r, int c)
{
	if (c == a->facts->dw_ra) {
		if (r->ra_where == TR_RA_AT_CFA)
			return (struct col_rule){ COL_OFFSET, r->ra_off };
		if (r->ra_reg != a->facts->dw_ra)
			return (struct col_rule){ COL_REG, r->ra_reg };
		return (struct col_rule){ COL_SAME, 0 };
	}
	if (c < TR_NREGS && (r->saved_mask >> c & 1))
		return (struct col_rule){ COL_OFFSET, r->saved_off[c] };
	return (struct col_rule){ COL_SAME, 0 };
}

static bool col_eq(struct col_rule x, struct col_rule y)
{
	return x.kind == y.kind && x.v == y.v;
}

/* The entry state as a row, i.e. what the CIE's initial instructions say. */
static void entry_row(const struct tr_arch *a, struct tr_row *r)
{
	memset(r, 0, sizeof(*r));
	r->cfa_reg = a->facts->dw_sp;
	r->cfa_off = a->facts->entry_cfa_off;
	r->ra_where = tr_entry_ra_where(a);
	r->ra_off = a->facts->ra_cfa_off;
	r->ra_reg = a->facts->dw_lr;
}

static int factor(int64_t off, int data_align, int64_t *out)
{
	if (off % data_align)
		return -EINVAL;
	*out = off / data_align;
	return 0;
}

int tr_cfi_derive(const struct tr_func *f, uint8_t *prog, size_t cap, size_t *len,
		  struct ju_err *err)
{
	const struct tr_arch *a = f->arch;
	struct tr_buf b = { .p = prog, .cap = cap };
	struct tr_row init, prev;
	entry_row(a, &init);
	prev = init;
	uint32_t loc = 0;
	for (size_t i = 0; i < f->nrows; i++) {
		const struct tr_row *r = &f->rows[i];
		bool cfa_reg_ch = r->cfa_reg != prev.cfa_reg;
		bool cfa_off_ch = r->cfa_off != prev.cfa_off;
		bool col_ch = false;
		for (int c = 0; c < TR_NREGS && !col_ch; c++)
			col_ch = !col_eq(row_col(a, r, c), row_col(a, &prev, c));
		if (!cfa_reg_ch && !cfa_off_ch && !col_ch)
			continue;
		if ((r->offset - loc) % a->code_align) {
			ju_errf(err, EINVAL, 0, "offset 0x%x is not a multiple of the code alignment %u",
				 r->offset, a->code_align);
			return -EINVAL;
		}
		cfa_advance(&b, (r->offset - loc) / a->code_align);
		loc = r->offset;
		int64_t fo = 0;
		if (r->cfa_off < 0 && factor(r->cfa_off, a->data_align, &fo)) {
			ju_errf(err, EINVAL, 0, "offset 0x%x: CFA offset %lld cannot be encoded",
				 r->offset, (long long)r->cfa_off);
			return -ERANGE;
		}
		if (cfa_reg_ch && (cfa_off_ch || r->cfa_off < 0))
			cfa_def_cfa(&b, a->data_align, r->cfa_reg, r->cfa_off);
		else if (cfa_reg_ch)
			cfa_op_reg(&b, DW_CFA_def_cfa_register, (unsigned)r->cfa_reg);
		else if (cfa_off_ch)
			cfa_def_cfa_offset(&b, a->data_align, r->cfa_off);
		for (int c = 0; c < TR_NREGS; c++) {
			struct col_rule now = row_col(a, r, c);
			if (col_eq(now, row_col(a, &prev, c)))
				continue;
			if (col_eq(now, row_col(a, &init, c))) {
				cfa_restore(&b, (unsigned)c);
			} else if (now.kind == COL_OFFSET) {
				if (factor(now.v, a->data_align, &fo)) {
					ju_errf(err, EINVAL, 0, "offset 0x%x: register %d saved at CFA%+lld, not a multiple of %d",
						 r->offset, c, (long long)now.v, a->data_align);
					return -EINVAL;
				}
				cfa_offset(&b, (unsigned)c, fo);
			} else if (now.kind == COL_REG) {
				tr_buf_u8(&b, DW_CFA_register);
				tr_buf_uleb(&b, (uint64_t)c);
				tr_buf_uleb(&b, (uint64_t)now.v);
			} else {
				cfa_op_reg(&b, DW_CFA_same_value, (unsigned)c);
			}
		}
		prev = *r;
	}
	if (b.overflow) {
		ju_errf(err, EINVAL, 0, "derived CFA program longer than %zu bytes", cap);
		return -ENOSPC;
	}
	*len = b.len;
	return 0;
}

/* ---- .cfi_* directives ---- */

#define CFI_MAX_ARGS 16
#define CFI_STATE_MAX 16

struct cfi_ctx {
	const struct tr_arch *a;
	struct tr_buf b;
	int line;
	const char *name;
	struct ju_err *err;
	int cfa_reg;
	int64_t cfa_off;
	struct { int reg; int64_t off; } stack[CFI_STATE_MAX];
	int depth;
};

static int cfi_fail(struct cfi_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cfi_fail(struct cfi_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	ju_verrf(c->err, EINVAL, 0, fmt, ap);
	va_end(ap);
	if (c->line > 0)
		ju_err_prefix(c->err, "line %d: %s: ", c->line, c->name);
	else
		ju_err_prefix(c->err, "%s: ", c->name);
	return -EINVAL;
}

static int arg_num(struct cfi_ctx *c, const char *s, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (errno || !*s || *end)
		return cfi_fail(c, "'%s' is not a number", s);
	*out = v;
	return 0;
}

/* A register as GNU as takes it: a name of the arch, or a DWARF number. */
static int arg_reg(struct cfi_ctx *c, const char *s, unsigned *out)
{
	int r = c->a->dwarf_reg(s);
	if (r < 0 && isdigit((unsigned char)s[0])) {
		char *end;
		long v = strtol(s, &end, 10);
		if (!*end && v >= 0 && v < 4096)
			r = (int)v;
	}
	if (r < 0)
		return cfi_fail(c, "'%s' is not an %s register", s, c->a->facts->name);
	*out = (unsigned)r;
	return 0;
}

static int arg_factored(struct cfi_ctx *c, int64_t off, int64_t *out)
{
	if (factor(off, c->a->data_align, out))
		return cfi_fail(c, "offset %lld is not a multiple of the data alignment %d",
				(long long)off, c->a->data_align);
	return 0;
}

static int cfi_save(struct cfi_ctx *c, unsigned reg, int64_t cfa_rel)
{
	int64_t fo = 0;
	if (arg_factored(c, cfa_rel, &fo))
		return -EINVAL;
	cfa_offset(&c->b, reg, fo);
	return 0;
}

static int cfi_set_cfa_off(struct cfi_ctx *c, int64_t off)
{
	int64_t fo = 0;
	if (off < 0 && arg_factored(c, off, &fo))
		return -EINVAL;
	c->cfa_off = off;
	cfa_def_cfa_offset(&c->b, c->a->data_align, off);
	return 0;
}

/* Splits "a, b, c" in place. */
static int split_args(char *s, char *argv[CFI_MAX_ARGS])
{
	int n = 0;
	while (*s == ' ' || *s == '\t')
		s++;
	if (!*s)
		return 0;
	for (;;) {
		char *comma = strchr(s, ',');
		if (comma)
			*comma = '\0';
		char *e = s + strlen(s);
		while (e > s && isspace((unsigned char)e[-1]))
			*--e = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		if (n == CFI_MAX_ARGS)
			return -EINVAL;
		argv[n++] = s;
		if (!comma)
			return n;
		s = comma + 1;
	}
}

/* One handler per directive; cfi_one checks the argument count first. */
typedef int cfi_dir_fn(struct cfi_ctx *c, char **argv, int argc);

static int d_nothing(struct cfi_ctx *c, char **argv, int argc)
{
	return 0; /* the FDE's bounds are the code's; nothing to encode */
}

static int d_def_cfa(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	int64_t v = 0, fo = 0;
	if (arg_reg(c, argv[0], &r) || arg_num(c, argv[1], &v))
		return -EINVAL;
	if (v < 0 && arg_factored(c, v, &fo))
		return -EINVAL;
	cfa_def_cfa(&c->b, c->a->data_align, (int)r, v);
	c->cfa_reg = (int)r;
	c->cfa_off = v;
	return 0;
}

static int d_def_cfa_register(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	if (arg_reg(c, argv[0], &r))
		return -EINVAL;
	cfa_op_reg(&c->b, DW_CFA_def_cfa_register, r);
	c->cfa_reg = (int)r;
	return 0;
}

static int d_def_cfa_offset(struct cfi_ctx *c, char **argv, int argc)
{
	int64_t v = 0;
	return arg_num(c, argv[0], &v) || cfi_set_cfa_off(c, v) ? -1 : 0;
}

static int d_adjust_cfa_offset(struct cfi_ctx *c, char **argv, int argc)
{
	int64_t v = 0;
	return arg_num(c, argv[0], &v) || cfi_set_cfa_off(c, c->cfa_off + v) ? -1 : 0;
}

static int d_offset(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	int64_t v = 0;
	return arg_reg(c, argv[0], &r) || arg_num(c, argv[1], &v) || cfi_save(c, r, v) ? -1 : 0;
}

/* GNU as: relative to the CFA register, i.e. CFA + (off - cfa_offset). */
static int d_rel_offset(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	int64_t v = 0;
	return arg_reg(c, argv[0], &r) || arg_num(c, argv[1], &v) || cfi_save(c, r, v - c->cfa_off) ? -1 : 0;
}

static int d_val_offset(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	int64_t v = 0, fo = 0;
	if (arg_reg(c, argv[0], &r) || arg_num(c, argv[1], &v) || arg_factored(c, v, &fo))
		return -EINVAL;
	tr_buf_u8(&c->b, fo < 0 ? DW_CFA_val_offset_sf : DW_CFA_val_offset);
	tr_buf_uleb(&c->b, r);
	if (fo < 0)
		tr_buf_sleb(&c->b, fo);
	else
		tr_buf_uleb(&c->b, (uint64_t)fo);
	return 0;
}

static int d_restore(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	if (arg_reg(c, argv[0], &r))
		return -EINVAL;
	cfa_restore(&c->b, r);
	return 0;
}

static int d_undefined(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	if (arg_reg(c, argv[0], &r))
		return -EINVAL;
	cfa_op_reg(&c->b, DW_CFA_undefined, r);
	return 0;
}

static int d_same_value(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r = 0;
	if (arg_reg(c, argv[0], &r))
		return -EINVAL;
	cfa_op_reg(&c->b, DW_CFA_same_value, r);
	return 0;
}

static int d_register(struct cfi_ctx *c, char **argv, int argc)
{
	unsigned r1 = 0, r2 = 0;
	if (arg_reg(c, argv[0], &r1) || arg_reg(c, argv[1], &r2))
		return -EINVAL;
	tr_buf_u8(&c->b, DW_CFA_register);
	tr_buf_uleb(&c->b, r1);
	tr_buf_uleb(&c->b, r2);
	return 0;
}

static int d_remember_state(struct cfi_ctx *c, char **argv, int argc)
{
	if (c->depth == CFI_STATE_MAX)
		return cfi_fail(c, "more than %d nested states", CFI_STATE_MAX);
	c->stack[c->depth].reg = c->cfa_reg;
	c->stack[c->depth].off = c->cfa_off;
	c->depth++;
	tr_buf_u8(&c->b, DW_CFA_remember_state);
	return 0;
}

static int d_restore_state(struct cfi_ctx *c, char **argv, int argc)
{
	if (!c->depth)
		return cfi_fail(c, "no .cfi_remember_state to restore");
	c->depth--;
	c->cfa_reg = c->stack[c->depth].reg;
	c->cfa_off = c->stack[c->depth].off;
	tr_buf_u8(&c->b, DW_CFA_restore_state);
	return 0;
}

static int d_escape(struct cfi_ctx *c, char **argv, int argc)
{
	int64_t v = 0;
	if (!argc)
		return cfi_fail(c, "expected bytes");
	for (int i = 0; i < argc; i++) {
		if (arg_num(c, argv[i], &v))
			return -EINVAL;
		if (v < 0 || v > 255)
			return cfi_fail(c, "'%s' is not a byte", argv[i]);
		tr_buf_u8(&c->b, (uint8_t)v);
	}
	return 0;
}

static int d_negate_ra_state(struct cfi_ctx *c, char **argv, int argc)
{
	tr_buf_u8(&c->b, DW_CFA_AARCH64_negate_ra_state);
	return 0;
}

static int d_cie_only(struct cfi_ctx *c, char **argv, int argc)
{
	return cfi_fail(c, "changes the CIE, not the FDE program: use the [unwind] keys");
}

#define ANY_ARGS (-1)
static const struct {
	const char *name;
	int nargs;
	cfi_dir_fn *fn;
} cfi_dirs[] = {
	{ ".cfi_startproc", ANY_ARGS, d_nothing }, { ".cfi_endproc", ANY_ARGS, d_nothing },
	{ ".cfi_sections", ANY_ARGS, d_nothing },
	{ ".cfi_def_cfa", 2, d_def_cfa }, { ".cfi_def_cfa_register", 1, d_def_cfa_register },
	{ ".cfi_def_cfa_offset", 1, d_def_cfa_offset }, { ".cfi_adjust_cfa_offset", 1, d_adjust_cfa_offset },
	{ ".cfi_offset", 2, d_offset }, { ".cfi_rel_offset", 2, d_rel_offset },
	{ ".cfi_val_offset", 2, d_val_offset }, { ".cfi_restore", 1, d_restore },
	{ ".cfi_undefined", 1, d_undefined }, { ".cfi_same_value", 1, d_same_value },
	{ ".cfi_register", 2, d_register },
	{ ".cfi_remember_state", 0, d_remember_state }, { ".cfi_restore_state", 0, d_restore_state },
	{ ".cfi_escape", ANY_ARGS, d_escape },
	{ ".cfi_negate_ra_state", 0, d_negate_ra_state }, { ".cfi_window_save", 0, d_negate_ra_state },
	{ ".cfi_signal_frame", ANY_ARGS, d_cie_only }, { ".cfi_personality", ANY_ARGS, d_cie_only },
	{ ".cfi_lsda", ANY_ARGS, d_cie_only }, { ".cfi_return_column", ANY_ARGS, d_cie_only },
};

static int cfi_one(struct cfi_ctx *c, char *argstr)
{
	char *argv[CFI_MAX_ARGS];
	int argc = split_args(argstr, argv);
	if (argc < 0)
		return cfi_fail(c, "more than %d arguments", CFI_MAX_ARGS);
	for (size_t i = 0; i < sizeof(cfi_dirs) / sizeof(cfi_dirs[0]); i++) {
		if (strcmp(c->name, cfi_dirs[i].name))
			continue;
		int k = cfi_dirs[i].nargs;
		if (k != ANY_ARGS && argc != k)
			return cfi_fail(c, "expected %d argument%s, got %d", k, k == 1 ? "" : "s", argc);
		return cfi_dirs[i].fn(c, argv, argc);
	}
	return cfi_fail(c, "unsupported directive (supported: .cfi_def_cfa, .cfi_def_cfa_register, "
		       ".cfi_def_cfa_offset, .cfi_adjust_cfa_offset, .cfi_offset, .cfi_rel_offset, "
		       ".cfi_val_offset, .cfi_restore, .cfi_undefined, .cfi_same_value, .cfi_register, "
		       ".cfi_remember_state, .cfi_restore_state, .cfi_escape, .cfi_negate_ra_state)");
}

int tr_cfi_compile(const struct tr_func *f, uint8_t *prog, size_t cap, size_t *len,
		   struct ju_err *err)
{
	struct cfi_ctx c = {
		.a = f->arch, .b = { .p = prog, .cap = cap }, .err = err,
		.cfa_reg = f->arch->facts->dw_sp, .cfa_off = f->arch->facts->entry_cfa_off,
	};
	uint32_t loc = 0;
	for (size_t i = 0; i < f->ncfi; i++) {
		char text[TR_CFI_TEXT_MAX];
		snprintf(text, sizeof(text), "%s", f->cfi[i].text);
		size_t wl = strcspn(text, " \t");
		char *args = text + wl;
		if (*args)
			*args++ = '\0';
		c.name = text;
		c.line = f->cfi[i].line;
		uint32_t at = f->cfi[i].offset;
		if (at < loc)
			return cfi_fail(&c, "offset 0x%x goes backwards", at);
		if ((at - loc) % c.a->code_align)
			return cfi_fail(&c, "offset 0x%x is not a multiple of the code alignment %u",
					at, c.a->code_align);
		size_t mark = c.b.len;
		cfa_advance(&c.b, (at - loc) / c.a->code_align);
		size_t after_adv = c.b.len;
		if (cfi_one(&c, args))
			return -EINVAL;
		if (c.b.len == after_adv && !c.b.overflow)
			c.b.len = mark; /* nothing encoded (.cfi_startproc): no advance either */
		else
			loc = at;
	}
	if (c.b.overflow) {
		ju_errf(err, EINVAL, 0, "CFA program from directives longer than %zu bytes", cap);
		return -ENOSPC;
	}
	*len = c.b.len;
	return 0;
}
