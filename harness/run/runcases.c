/* The run and record pipeline (runcases.h). */
#include "harness/run/runcases.h"
#include "harness/run/scratch.h"
#include "trampolines/tramp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double hx_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *hx_host_arch(void)
{
	const struct tr_arch *a = tr_arch_host();
	return a ? a->facts->name : "unknown";
}

/* The default cases: cases/<arch> here (a source tree), else the installed
 * ones, <bindir>/../share/jitunwind/cases/<arch> (make install), else the
 * ones beside the binary (a source tree's binary run from elsewhere). */
void hx_default_cases(char *buf, size_t n)
{
	struct stat st;
	snprintf(buf, n, "cases/%s", hx_host_arch());
	if (stat(buf, &st) == 0)
		return;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return;
	exe[len] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = 0;
	static const char *const rel[] = { "../share/jitunwind/cases", "cases" };
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		snprintf(buf, n, "%s/%s/%s", exe, rel[i], hx_host_arch());
		if (stat(buf, &st) == 0)
			return;
	}
	snprintf(buf, n, "cases/%s", hx_host_arch());
}

/* the first k cases and every path freed (a load that failed at case k - 1) */
static void free_loaded(struct hx_runset *r, int k)
{
	for (int i = 0; i < r->n; i++) {
		if (i < k)
			hx_case_free(&r->cases[i]);
		free(r->paths[i]);
	}
	free(r->cases);
	free(r->paths);
	r->cases = NULL;
	r->paths = NULL;
	r->n = 0;
}

int hx_runset_load(struct hx_runset *r, const char *const *paths, int npaths, struct ju_err *err)
{
	char def[4200];
	const char *defp[1];
	r->t0 = hx_now();
	if (!npaths) {
		hx_default_cases(def, sizeof(def));
		defp[0] = def;
		paths = defp;
		npaths = 1;
	}
	int rc = hx_case_glob(paths, npaths, &r->paths, &r->n, err);
	if (rc) {
		r->cases = NULL;
		free_loaded(r, 0);
		return rc;
	}
	r->cases = calloc(r->n ? (size_t)r->n : 1, sizeof(*r->cases));
	if (!r->cases) {
		free_loaded(r, 0);
		return ju_errf(err, ENOMEM, 0, "out of memory");
	}
	for (int i = 0; i < r->n; i++)
		if ((rc = hx_case_load_ex(&r->cases[i], r->paths[i], r->o->observe ? HX_CASE_NO_EXPECT : 0, err))) {
			free_loaded(r, i + 1);
			return rc;
		}
	if ((rc = hx_case_unique(r->cases, r->n, err))) {
		free_loaded(r, r->n);
		return rc;
	}
	return 0;
}

int hx_runset_dir(struct hx_runset *r, struct ju_err *err)
{
	if (r->o->jitdump_dir) {
		snprintf(r->dir, sizeof(r->dir), "%s", r->o->jitdump_dir);
		r->private_dir = false;
		if (mkdir(r->dir, 0755) < 0 && errno != EEXIST)
			return ju_errf(err, errno, 0, "%s: %s", r->dir, strerror(errno));
		return 0;
	}
	if (!r->record) {
		/* removed at the end: scratch, on tmpfs where there is one (scratch.h) */
		int rc = hx_scratch_mkdtemp(r->dir, sizeof(r->dir), "run", err);
		r->private_dir = !rc;
		return rc;
	}
	snprintf(r->dir, sizeof(r->dir), "/tmp/jitunwind-XXXXXX");
	if (!mkdtemp(r->dir))
		return ju_errf(err, errno, 0, "mkdtemp: %s", strerror(errno));
	r->private_dir = false;        /* record's dumps stay with its samples */
	return 0;
}

/* a case of another arch is a visible skip, not a failure */
static bool skip_other_arch(const struct hx_case *c, const char *path, struct hx_case_res *res)
{
	if (!strcmp(c->arch, hx_host_arch()))
		return false;
	res->skipped = true;
	snprintf(res->name, sizeof(res->name), "%s", c->name);
	snprintf(res->file, sizeof(res->file), "%s", path);
	snprintf(res->problem, sizeof(res->problem), "case arch %s cannot run on this %s host (use make check ARCH=%s)",
		 c->arch, hx_host_arch(), c->arch);
	return true;
}

/* hx_batch_run.progress: the case the capture is on, as "[i/n] name" */
static void capture_progress(void *arg, size_t k)
{
	struct hx_runset *r = arg;
	if (r->shown_k == k + 1)
		return;   /* drawn already: redrawn when the capture moves on */
	size_t i = (size_t)(r->batch[k].c - r->cases);
	double t = hx_now() - r->t0;
	r->progress(i, (size_t)r->n, r->cases[i].name, t);
	if (t >= 1.0)   /* the progress line is drawn from the first second on */
		r->shown_k = k + 1;
}

/* One batch: run's child captures every case in turn into a samples file
 * read back here; record's children (a process per case, as separate
 * programs: its perf.data, its dumps) capture into out. */
static int capture_batch(struct hx_runset *r, struct ju_err *err)
{
	char msg[1024], sp[4352];
	snprintf(sp, sizeof(sp), "%s/all.samples", r->dir);
	struct hx_batch_run br = { .per_child = r->record ? 1 : 0, .kcfg = &r->o->kcfg };
	if (r->progress && r->progress_tty) {
		br.progress = capture_progress;
		br.progress_arg = r;
	}
	int rc = hx_batch_dirs(r->batch, r->nb, r->dir, br.per_child, err);
	if (!rc)
		rc = hx_capture_to_file(r->batch, r->nb, r->record ? r->out : sp, &br, err);
	if (!rc && !r->record && hx_samples_read(&r->s, sp, msg, sizeof(msg)))
		rc = ju_errf(err, EINVAL, 0, "%s", msg);
	if (!r->record)
		unlink(sp);
	return rc;
}

int hx_runset_capture(struct hx_runset *r, double *per_case, struct ju_err *err)
{
	*per_case = 0;
	r->res = calloc(r->n ? (size_t)r->n : 1, sizeof(*r->res));
	r->batch = calloc(r->n ? (size_t)r->n : 1, sizeof(*r->batch));
	if (!r->res || !r->batch)
		return ju_errf(err, ENOMEM, 0, "out of memory");
	for (int i = 0; i < r->n; i++)
		if (!skip_other_arch(&r->cases[i], r->paths[i], &r->res[i]))
			r->batch[r->nb++] = (struct hx_batch_case){ .c = &r->cases[i], .path = r->paths[i] };
	double t = hx_now();
	int rc = capture_batch(r, err);
	*per_case = r->nb ? (hx_now() - t) / (double)r->nb : 0;
	return rc;
}

int hx_runset_replay(struct hx_runset *r, double per_case, struct ju_err *err)
{
	char msg[1024];
	for (int i = 0, g = 0; i < r->n; i++) {
		double t1 = hx_now();
		if (r->progress)
			r->progress((size_t)i, (size_t)r->n, r->cases[i].name, t1 - r->t0);
		struct hx_case_res *res = &r->res[i];
		if (res->skipped)
			continue;
		if ((size_t)g >= r->s.ngroups || strcmp(r->s.groups[g].case_path, r->paths[i])) {
			snprintf(res->name, sizeof(res->name), "%s", r->cases[i].name);
			snprintf(res->file, sizeof(res->file), "%s", r->paths[i]);
			snprintf(res->problem, sizeof(res->problem), "the capture did not start");
			continue;
		}
		if (hx_replay_group(&r->s.groups[g++], r->s.elf_mach, r->o, res, msg, sizeof(msg)))
			return ju_errf(err, EINVAL, 0, "%s", msg);
		res->seconds = per_case + hx_now() - t1;
	}
	return 0;
}

void hx_runset_remove_dir(struct hx_runset *r)
{
	if (r->private_dir)
		hx_scratch_remove(r->dir);
	r->private_dir = false;
}

void hx_runset_free(struct hx_runset *r)
{
	hx_samples_free(&r->s);
	if (r->batch)
		hx_batch_dirs_free(r->batch, r->nb);
	free(r->batch);
	for (int i = 0; i < r->n; i++) {
		if (r->res)
			hx_case_res_free(&r->res[i]);
		hx_case_free(&r->cases[i]);
		free(r->paths[i]);
	}
	free(r->res);
	free(r->cases);
	free(r->paths);
	memset(r, 0, sizeof(*r));
}
