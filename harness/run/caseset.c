/* The parsed cases in use: the set's names checked unique, an [expect] looked up
 * per unwinder, profile and stack size, and the case files a run is given listed. */
#include "harness/run/case.h"
#include "harness/run/session.h"
#include "unwinders/unwind.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int hx_case_unique(const struct hx_case *cases, int n, char *err, size_t errlen)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(cases[i].name, cases[j].name)) {
				snprintf(err, errlen, "%s and %s both name their case '%s' (names must differ within one run)",
					 cases[j].path, cases[i].path, cases[i].name);
				return -1;
			}
	return 0;
}

static bool item_matches(const struct hx_where *w, const char *where, int offset)
{
	if (w->where[0])
		return !strcmp(w->where, where);
	return offset >= 0 && w->offset == offset;
}

/* The most specific key wins (profile and size, profile, size, none); among
 * keys of one form, the highest "@VERSION+" the unwinder's library reaches,
 * then the key without a version. */
static const struct hx_expect *find_expect(const struct hx_case *c, const char *unwinder,
					   const char *profile, int stack_size)
{
	char keys[4][64];
	snprintf(keys[0], sizeof(keys[0]), "%s@%s@%d", unwinder, profile ? profile : "", stack_size);
	snprintf(keys[1], sizeof(keys[1]), "%s@%s", unwinder, profile ? profile : "");
	snprintf(keys[2], sizeof(keys[2]), "%s@%d", unwinder, stack_size);
	snprintf(keys[3], sizeof(keys[3]), "%s", unwinder);
	const struct uw_unwinder *u = hx_column_by_name(unwinder);
	int have = u && u->lib_version ? hx_case_version_code(u->lib_version()) : -1;
	for (int k = 0; k < 4; k++) {
		const struct hx_expect *best = NULL;
		for (int i = 0; i < c->nexpect; i++) {
			const struct hx_expect *x = &c->expect[i];
			if (strcmp(x->base, keys[k]) || (x->min_version && x->min_version > have))
				continue;
			if (!best || x->min_version > best->min_version)
				best = x;
		}
		if (best)
			return best;
	}
	return NULL;
}

bool hx_case_has_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			int stack_size)
{
	return find_expect(c, unwinder, profile, stack_size) != NULL;
}

const char *hx_case_expect(const struct hx_case *c, const char *unwinder, const char *profile,
			   int stack_size, const char *where, int offset)
{
	const struct hx_expect *x = find_expect(c, unwinder, profile, stack_size);
	if (!x)
		return NULL;
	/* the last matching exception wins, like a later line overriding */
	const char *v = x->verdict;
	for (int e = 0; e < x->nexc; e++)
		for (int k = 0; k < x->exc[e].nitems; k++)
			if (item_matches(&x->exc[e].items[k], where, offset))
				v = x->exc[e].verdict;
	return v;
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
			return -1;
		*out = q;
	}
	(*out)[(*n)++] = strdup(p);
	return 0;
}

int hx_case_glob(const char *const *paths, int npaths, char ***out, int *n,
		 char *err, size_t errlen)
{
	int cap = 0;
	*out = NULL;
	*n = 0;
	for (int i = 0; i < npaths; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0) {
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			return -1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (push_path(out, n, &cap, paths[i]))
				return -1;
			continue;
		}
		DIR *d = opendir(paths[i]);
		if (!d) {
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			return -1;
		}
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
				return -1;
			}
		}
		closedir(d);
		qsort(*out + first, (size_t)(*n - first), sizeof(char *), cmpstr);
	}
	return 0;
}
