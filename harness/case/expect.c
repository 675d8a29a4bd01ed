/* A case's expectations as the run looks them up (case.h): the function
 * names an exception list may give, and each expectation in the slots of its
 * column (in the column table's order, columns.h) and profile. */
#include "harness/case/case.h"
#include "harness/case/columns.h"

#include <stdio.h>
#include <string.h>

int hx_case_fn_id(const char *name)
{
	if (!strcmp(name, "callee"))
		return HX_FN_CALLEE;
	if (!strcmp(name, "leaf"))
		return HX_FN_LEAF;
	if (!strcmp(name, "tramp"))
		return 0;
	/* tramp2 .. tramp8, no leading zero */
	if (!strncmp(name, "tramp", 5) && name[5] >= '2' && name[5] <= '9' && !name[6] &&
	    name[5] - '0' <= HX_MAX_DEPTH)
		return name[5] - '1';
	return HX_FN_NONE;
}

/* 3: profile and size, 2: profile, 1: size, 0: neither (the most specific wins) */
static int form_rank(const struct hx_expect *x)
{
	return (x->profile >= 0) * 2 + (x->stack_size != 0);
}

/* Each expectation into the slots of its column and of every profile its key
 * allows, most specific form first, then the highest version (a key without
 * one last): a lookup takes the first that fits its size and version. */
int hx_case_compile(struct hx_case *c, struct ju_err *err)
{
	size_t ncol = hx_case_ncolumns();
	memset(c->nxtab, 0, sizeof(c->nxtab));
	if (ncol > HX_MAX_COLS) {
		return ju_errf(err, ERANGE, 0, "%s: %zu columns, more than HX_MAX_COLS (%d)", c->path, ncol,
			       HX_MAX_COLS);
	}
	for (int i = 0; i < c->nexpect; i++) {
		const struct hx_expect *x = &c->expect[i];
		int col = hx_case_column_index(x->uw);
		if (col < 0 || x->profile >= HX_MAX_PROFILES) {
			return ju_err_line(err, EINVAL, c->path, x->line, "'%s' names no column or profile of this build",
					   x->unwinder);
		}
		for (int p = 0; p < HX_MAX_PROFILES; p++) {
			if (x->profile >= 0 && x->profile != p)
				continue;
			unsigned char *slot = c->xtab[col][p];
			int n = c->nxtab[col][p]++, k = n;
			/* insertion: after every entry at least as specific (stable for equals) */
			while (k > 0) {
				const struct hx_expect *y = &c->expect[slot[k - 1]];
				int ry = form_rank(y), rx = form_rank(x);
				if (ry > rx || (ry == rx && y->min_version >= x->min_version))
					break;
				slot[k] = slot[k - 1];
				k--;
			}
			slot[k] = (unsigned char)i;
		}
	}
	return 0;
}
