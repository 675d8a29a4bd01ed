/* Generations of a case's code ([code 2] .. [code N]): parsed beside the
 * case parser and checked whole before any capture (docs/case-format.md
 * "Generations"): what each does to the code (reload, patch, late, move),
 * that it fits where it goes, and that "@gN" items name its instructions. */
#include "harness/case/casegen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const hows[] = { [HX_GEN_RELOAD] = "reload", [HX_GEN_PATCH] = "patch",
				    [HX_GEN_LATE] = "late", [HX_GEN_MOVE] = "move" };
#define HOW_CHOICES "reload, patch, late or move"

const char *hx_gen_how_name(int how)
{
	return how >= HX_GEN_RELOAD && how <= HX_GEN_MOVE ? hows[how] : "?";
}

int hx_gen_section(struct hx_case *c, const char *s, int line, int *gi, struct ju_err *err)
{
	int n = 0, len = 0;
	if (sscanf(s, "[code %d]%n", &n, &len) != 1 || (size_t)len != strlen(s))
		return 1;
	if (n != c->ngens + 2 || n > HX_MAX_GENS)
		return ju_err_line(err, EINVAL, c->path, line, "'%s': expected [code %d] (generations follow [code] in order, up to [code %d])",
			           s, c->ngens + 2, HX_MAX_GENS);
	struct hx_gen *g = &c->gens[c->ngens++];
	memset(g, 0, offsetof(struct hx_gen, ops));   /* its ops are left, as [code]'s (case_clear) */
	g->nops = 0;
	g->line = line;
	*gi = c->ngens - 1;
	return 0;
}

static int gen_at(struct hx_gen *g, const char *val)
{
	char tmp[128];
	snprintf(tmp, sizeof(tmp), "%s", val);
	g->have_at = true;
	for (char *save = NULL, *t = strtok_r(tmp, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		if (!strcmp(t, "every-insn"))
			g->every_insn = true;
		else if (!strcmp(t, "in-callee"))
			g->in_callee = true;
		else
			return -EINVAL;
	}
	return g->every_insn || g->in_callee ? 0 : -EINVAL;
}

/* "how = ..", "to = ..", "at = .." or an op of generation gi */
int hx_gen_line(struct hx_case *c, int gi, const char *s, int line, struct ju_err *err)
{
	struct hx_gen *g = &c->gens[gi];
	const char *eq = strchr(s, '=');
	if (!eq) {
		if (g->nops >= HX_GEN_MAX_OPS)
			return ju_err_line(err, EINVAL, c->path, line, "more than %d ops in [code %d]", HX_GEN_MAX_OPS, gi + 2);
		struct tr_op *op = &g->ops[g->nops];
		struct ju_err operr;
		if (tr_op_parse(s, op, &operr))
			return ju_err_line(err, EINVAL, c->path, line, "%s", operr.msg);
		op->line = line;
		g->nops++;
		return 0;
	}
	char key[32], val[128];
	snprintf(key, sizeof(key), "%.*s", (int)(eq - s), s);
	key[strcspn(key, " \t")] = 0;
	const char *v = eq + 1 + strspn(eq + 1, " \t");
	snprintf(val, sizeof(val), "%s", v);
	if (!strcmp(key, "how")) {
		for (int h = HX_GEN_RELOAD; h <= HX_GEN_MOVE; h++)
			if (!strcmp(val, hows[h])) {
				g->how = h;
				g->how_line = line;
				return 0;
			}
		return ju_err_line(err, EINVAL, c->path, line, "how: expected %s, got '%s'", HOW_CHOICES, val);
	}
	if (!strcmp(key, "to")) {
		char *end;
		long long t = strtoll(val, &end, 0);
		if ((val[0] != '+' && val[0] != '-') || *end || end == val + 1 || t == 0 || t > 1 << 20 || t < -(1 << 20))
			return ju_err_line(err, EINVAL, c->path, line,
				           "to: expected a signed byte distance from the code's address, e.g. +0x100 or -0x40, got '%s'", val);
		g->to = t;
		g->to_line = line;
		return 0;
	}
	if (!strcmp(key, "at")) {
		if (gen_at(g, val))
			return ju_err_line(err, EINVAL, c->path, line, "at: expected every-insn and/or in-callee, got '%s'", val);
		return 0;
	}
	return ju_err_line(err, EINVAL, c->path, line, "unknown [code %d] key '%s' (expected how, to, at, or an op)", gi + 2, key);
}

const struct tr_op *hx_case_gen_ops(const struct hx_case *c, int gen, size_t *nops)
{
	for (int k = gen - 2; k >= 0 && k < c->ngens; k--)
		if (c->gens[k].how != HX_GEN_MOVE) {
			*nops = c->gens[k].nops;
			return c->gens[k].ops;
		}
	*nops = c->nops;
	return c->ops;
}

/* What the case as a whole allows with generations. */
static int gen_case_limits(const struct hx_case *c, struct ju_err *err)
{
	int line = c->gens[0].line;
	if (c->depth != 1)
		return ju_err_line(err, EINVAL, c->path, line, "generations need depth = 1 (one function whose code changes)");
	if (c->has_leaf)
		return ju_err_line(err, EINVAL, c->path, line, "generations and a [leaf] do not go together");
	if (c->stride)
		return ju_err_line(err, EINVAL, c->path, line, "generations and a stride do not go together");
	return 0;
}

/* One generation against the one before it: size (the first's region; a
 * patch within the code it patches), a move's distance and place.  *at is
 * the code's offset from the first's address before it, then after. */
static int gen_fits(const struct hx_case *c, int gi, size_t first, size_t prev, size_t size, long long *at,
		    struct ju_err *err)
{
	const struct hx_gen *g = &c->gens[gi];
	int n = gi + 2;
	if (g->how == HX_GEN_MOVE) {
		if (g->nops)
			return ju_err_line(err, EINVAL, c->path, g->ops[0].line, "[code %d] moves the code as it is: no ops", n);
		if (!g->to_line)
			return ju_err_line(err, EINVAL, c->path, g->how_line, "a move needs 'to = +0xN' (bytes from the code's address)");
		long long dst = *at + g->to;
		if ((g->to < 0 ? -g->to : g->to) < (long long)prev)
			return ju_err_line(err, EINVAL, c->path, g->to_line,
				           "move to %+lld overlaps the code it moves (%zu bytes at +0x%llx): expected |to| >= %zu",
				           g->to, prev, *at, prev);
		if (dst < 0 || dst + (long long)prev > HX_GEN_AREA)
			return ju_err_line(err, EINVAL, c->path, g->to_line,
				           "move to %+lld puts the code at %+lld..%+lld, outside the case's code area "
				           "(+0..+%d from the first's address): unmapped", g->to, dst, dst + (long long)prev,
				           HX_GEN_AREA);
		*at = dst;
		return 0;
	}
	if (g->to_line)
		return ju_err_line(err, EINVAL, c->path, g->to_line, "'to' is for how = move only");
	if (!g->nops)
		return ju_err_line(err, EINVAL, c->path, g->line, "[code %d] has no ops", n);
	if (g->how == HX_GEN_PATCH && size > prev)
		return ju_err_line(err, EINVAL, c->path, g->line,
			           "a patch past the code: [code %d] is %zu bytes, the code it patches %zu (a patch rewrites bytes in place)",
			           n, size, prev);
	size_t region = (first + HX_GEN_BLOCK - 1) & ~(size_t)(HX_GEN_BLOCK - 1);
	if (size > region)
		return ju_err_line(err, EINVAL, c->path, g->line,
			           "[code %d] is %zu bytes: it does not fit the first's region (%zu bytes: its %zu rounded up to %d)",
			           n, size, region, first, HX_GEN_BLOCK);
	return 0;
}

/* Every "@gN" item: N a generation of the case, the offset one of its instructions. */
static int gen_items(const struct hx_case *c, const struct tr_func *fs, struct ju_err *err)
{
	for (int i = 0; i < c->nexpect; i++)
		for (int e = 0; e < c->expect[i].nexc; e++)
			for (int k = 0; k < c->expect[i].exc[e].nitems; k++) {
				const struct hx_where *w = &c->expect[i].exc[e].items[k];
				if (!w->gen)
					continue;
				int line = c->expect[i].line;
				if (w->gen > c->ngens + 1)
					return ju_err_line(err, EINVAL, c->path, line, "'@g%d': the case has %d generation(s)", w->gen,
						           c->ngens + 1);
				if (w->gen == 1 || w->offset < 0 || w->inner)
					continue;
				const struct tr_func *f = &fs[w->gen - 1];
				bool start = false;
				for (size_t r = 0; r < f->nrows; r++)
					start |= f->rows[r].offset == (uint32_t)w->offset;
				if (!start)
					return ju_err_line(err, EINVAL, c->path, line, "offset %d@g%d is no instruction start of generation %d",
						           w->offset, w->gen, w->gen);
			}
	return 0;
}

int hx_gen_check(struct hx_case *c, struct ju_err *err)
{
	if (!c->ngens)
		return 0;
	for (int k = 0; k < c->ngens; k++) {
		struct hx_gen *g = &c->gens[k];
		if (!g->how)
			return ju_err_line(err, EINVAL, c->path, g->line, "[code %d] needs 'how = ' (%s)", k + 2, HOW_CHOICES);
		if (!g->have_at) {
			g->every_insn = c->every_insn;
			g->in_callee = c->in_callee;
		}
	}
	int lrc = gen_case_limits(c, err);
	if (lrc)
		return lrc;
	const struct tr_arch *a = tr_arch_by_name(c->arch);
	struct tr_func *fs = calloc((size_t)c->ngens + 1, sizeof(*fs));
	if (!fs)
		return ju_err_line(err, ENOMEM, c->path, 0, "out of memory");
	struct ju_err eerr;
	int rc = 0;
	long long at = 0;
	/* code the generator cannot encode is the capture's error to report */
	for (int gen = 1; gen <= c->ngens + 1 && !rc && a; gen++) {
		size_t n;
		const struct tr_op *ops = hx_case_gen_ops(c, gen, &n);
		if (tr_emit(a, ops, n, &fs[gen - 1], &eerr))
			goto out;
		if (gen > 1)
			rc = gen_fits(c, gen - 2, fs[0].code_size, fs[gen - 2].code_size, fs[gen - 1].code_size, &at,
				      err);
	}
	if (!rc && a)
		rc = gen_items(c, fs, err);
out:
	free(fs);
	return rc;
}

int hx_gen_suffix(char *t, int *gen)
{
	*gen = 0;
	char *at = strstr(t, "@g");
	if (!at)
		return 0;
	char *end;
	long g = strtol(at + 2, &end, 10);
	if (*end || end == at + 2 || g < 1 || g > HX_MAX_GENS || at[2] == '0')
		return -EINVAL;
	*gen = (int)g;
	*at = 0;
	return 0;
}
