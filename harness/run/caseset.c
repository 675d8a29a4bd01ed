/* The parsed cases in use: the set's names checked unique, an [expect]
 * compiled at load into a table by column, profile and stack size and looked
 * up per sample, and the case files a run is given listed. */
#include "harness/case/case.h"
#include "harness/run/session.h"
#include "harness/case/columns.h"
#include "harness/run/perfrun.h"
#include "unwinders/unwind.h"
#include "unwinders/model/perfview.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int hx_case_unique(const struct hx_case *cases, int n, struct ju_err *err)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(cases[i].name, cases[j].name)) {
				return ju_errf(err, EEXIST, 0,
					       "%s and %s both name their case '%s' (names must differ within one run)",
					       cases[j].path, cases[i].path, cases[i].name);
			}
	return 0;
}

int hx_case_load(struct hx_case *c, const char *path, struct ju_err *err)
{
	return hx_case_load_ex(c, path, 0, err);
}

#define HX_CASE_MAX_BYTES (1 << 20)

int hx_case_load_ex(struct hx_case *c, const char *path, unsigned flags, struct ju_err *err)
{
	hx_case_clear(c);
	FILE *f = fopen(path, "rb");
	if (!f)
		return ju_errf(err, errno, 0, "%s: cannot open: %s", path, strerror(errno));
	char *buf = malloc(HX_CASE_MAX_BYTES + 1);
	if (!buf) {
		fclose(f);
		return ju_errf(err, ENOMEM, 0, "%s: out of memory", path);
	}
	size_t n = fread(buf, 1, HX_CASE_MAX_BYTES + 1, f);
	fclose(f);
	if (n > HX_CASE_MAX_BYTES) {
		free(buf);
		return ju_errf(err, EFBIG, 0, "%s: larger than %d bytes", path, HX_CASE_MAX_BYTES);
	}
	int rc = hx_case_parse_ex(c, path, buf, n, flags, err);
	free(buf);
	return rc;
}

void hx_case_free(struct hx_case *c)
{
	free(c->text);
	c->text = NULL;
}

static int column_of(const char *name)
{
	return hx_case_column_index(name);
}

const struct hx_expect *hx_case_find(const struct hx_case *c, int col, int profile, int stack_size)
{
	if (col < 0 || col >= HX_MAX_COLS || profile < 0 || profile >= HX_MAX_PROFILES)
		return NULL;
	int have = -2;    /* the column's library version, read once when a key needs it */
	for (int k = 0; k < c->nxtab[col][profile]; k++) {
		const struct hx_expect *x = &c->expect[c->xtab[col][profile][k]];
		if (x->stack_size && x->stack_size != stack_size)
			continue;
		if (x->by_perf) {
			/* the perf that runs, as the runner's emulation of its memory reads it */
			const struct hx_perf_build *b;
			if (hx_perf_probe(&b, NULL, 0) || hx_case_version_code(b->version) < x->min_version)
				continue;
		} else if (x->min_version) {
			if (have == -2) {
				size_t n;
				const struct uw_unwinder *u = hx_columns(&n)[col];
				have = u->lib_version ? hx_case_version_code(u->lib_version()) : -1;
			}
			if (x->min_version > have)
				continue;
		}
		return x;
	}
	return NULL;
}

const char *hx_case_verdict_at(const struct hx_expect *x, int fn, int offset)
{
	return hx_case_verdict_gen(x, fn, offset, 1);
}

const char *hx_case_verdict_gen(const struct hx_expect *x, int fn, int offset, int gen)
{
	/* the last matching exception wins, like a later line overriding */
	const char *v = x->verdict;
	for (int e = 0; e < x->nexc; e++)
		for (int k = 0; k < x->exc[e].nitems; k++) {
			const struct hx_where *w = &x->exc[e].items[k];
			if (w->gen && w->gen != gen)
				continue;
			if (w->offset == offset && (w->fn == fn || (w->fn == HX_FN_ANY && fn >= 0)))
				v = x->exc[e].verdict;
		}
	return v;
}

static const struct hx_expect *find_by_names(const struct hx_case *c, const char *unwinder, const char *profile,
					     int stack_size)
{
	enum pv_profile p = PV_CURRENT;
	if (profile && pv_profile_parse(profile, &p))
		return NULL;
	return hx_case_find(c, column_of(unwinder), (int)p, stack_size);
}

bool hx_case_has_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			int stack_size)
{
	return find_by_names(c, unwinder, profile, stack_size) != NULL;
}

/* where as printed: "callee", "tramp2+0x3" */
const char *hx_case_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			   int stack_size, const char *where, int offset)
{
	const struct hx_expect *x = find_by_names(c, unwinder, profile, stack_size);
	if (!x)
		return NULL;
	char fn[32];
	snprintf(fn, sizeof(fn), "%.*s", (int)strcspn(where, "+"), where);
	return hx_case_verdict_at(x, hx_case_fn_id(fn), strcmp(where, "callee") ? offset : -1);
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push_path(char ***out, int *n, int *cap, const char *p)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 32;
		char **q = realloc(*out, (size_t)*cap * sizeof(char *));
		if (!q)
			return -ENOMEM;
		*out = q;
	}
	if (!((*out)[*n] = strdup(p)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

int hx_case_glob(const char *const *paths, int npaths, char ***out, int *n,
		 struct ju_err *err)
{
	int cap = 0;
	*out = NULL;
	*n = 0;
	for (int i = 0; i < npaths; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0)
			return ju_errf(err, errno, 0, "%s: %s", paths[i], strerror(errno));
		if (!S_ISDIR(st.st_mode)) {
			if (push_path(out, n, &cap, paths[i]))
				return ju_errf(err, ENOMEM, 0, "%s: out of memory", paths[i]);
			continue;
		}
		DIR *d = opendir(paths[i]);
		if (!d)
			return ju_errf(err, errno, 0, "%s: %s", paths[i], strerror(errno));
		int first = *n;
		struct dirent *de;
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			if (l < 6 || strcmp(de->d_name + l - 5, ".case"))
				continue;
			char p[2048];
			snprintf(p, sizeof(p), "%s/%s", paths[i], de->d_name);
			if (push_path(out, n, &cap, p)) {
				closedir(d);
				return ju_errf(err, ENOMEM, 0, "%s: out of memory", p);
			}
		}
		closedir(d);
		if (*n == first) {
			return ju_errf(err, ENOENT, 0, "%s: no .case files in this directory (expected NAME.case "
				       "files, or a case file's path)", paths[i]);
		}
		qsort(*out + first, (size_t)(*n - first), sizeof(char *), cmpstr);
	}
	return 0;
}
