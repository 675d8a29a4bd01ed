/* `jitunwind fuzz-cfi`: generate, run, classify, minimize, write (docs/fuzzing.md
 * "fuzz-cfi").  Cases are drawn from (seed, index) and examined in batches:
 * the workers evaluate a batch, the parent picks in index order which
 * findings to minimize, the workers minimize them, the parent writes the
 * results in task order.  So a run with --cases N writes the same files
 * whatever --jobs is. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <libunwind.h>
#include <elfutils/libdwfl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/fuzz/fuzzcfi.h"
#include "harness/case/say.h"
#include "harness/run/runner.h"
#include "harness/run/scratch.h"
#include "harness/capture/samples.h"
#include "unwinders/model/files.h"
#include "unwinders/view.h"

#include "harness/fuzz/fuzzcfi_int.h"

/* ---- workers: batches of evaluations, then of minimizations ---- */

static void generate(const struct fz_ctx *x, uint64_t index, struct hx_fz_gen *g)
{
	hx_fz_generate(g, x->arch, x->o.seed, index, x->o.mutate);
	g->plant = x->plant;
}

static void eval_error(struct eval_rec *rec, const char *what, const char *err)
{
	rec->flags |= EF_ERROR;
	snprintf(rec->problem, sizeof(rec->problem), "%s%s", what, err);
}

/* One replayed case's findings into its record. */
static void eval_take(struct fz_ctx *x, struct eval_rec *rec, const struct hx_case_res *res)
{
	struct fz_class k;
	double t0 = fz_now();
	fz_classify(x, res, &k);
	rec->t.classify += fz_now() - t0;
	rec->nsamples = (uint32_t)res->nsamples;
	rec->nsig = (uint32_t)k.nsig;
	memcpy(rec->sig, k.sig, sizeof(rec->sig));
	rec->flags |= k.any_inconsistent ? EF_INCONSISTENT : 0;
	if (k.problem[0])
		eval_error(rec, "", k.problem);
}

/* A worker's batch slot: one generated case, parsed, with its jitdump directory. */
struct fz_slot {
	struct hx_case c;
	bool parsed;
	char label[48];
	char dir[300];
};

/* Draws and parses case idx into slot (its record says what went wrong):
 * true when it is ready for the capture. */
static bool eval_prepare(struct fz_ctx *x, uint64_t idx, struct fz_slot *sl, size_t k, struct eval_rec *rec)
{
	struct hx_fz_gen *g = &x->scr->eval_gen;
	struct ju_err err;
	char *text = fz_text_buf(x);
	memset(rec, 0, sizeof(*rec));
	rec->index = idx;
	double t0 = fz_now();
	generate(x, idx, g);
	snprintf(rec->aug, sizeof(rec->aug), "%s", g->unw.cie_aug);
	rec->fde_enc = strchr(g->unw.cie_aug, 'R') ? g->unw.fde_enc : 0;
	int rc = hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, &rec->features,
				 &err);
	double t1 = fz_now();
	rec->t.gen = t1 - t0;
	if (rc) {
		eval_error(rec, "", err.msg);
		return false;
	}
	snprintf(sl->label, sizeof(sl->label), "fuzz-cfi-%llu.case", (unsigned long long)idx);
	if (hx_case_parse(&sl->c, sl->label, text, strlen(text), err.msg, sizeof(err.msg))) {
		hx_case_free(&sl->c);
		eval_error(rec, "not a valid case: ", err.msg);
		return false;
	}
	rec->t.parse = fz_now() - t1;
	sl->parsed = true;
	snprintf(sl->dir, sizeof(sl->dir), "%s/c%zu", x->dir, k);
	if (mkdir(sl->dir, 0700) && errno != EEXIST) {
		eval_error(rec, sl->dir, ": cannot create");
		return false;
	}
	return true;
}

/* CPU seconds of the waited-for children (the capture children) */
static double children_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* Evaluates cases idx[0..n): all of them captured by one child (the batch
 * capture: a crash ends only its case), then each replayed through the fuzz
 * unwinders and classified; writes their records in order. */
static void eval_chunk(struct fz_ctx *x, const uint64_t *idx, size_t n, FILE *out)
{
	/* The worker's parsed cases, kept from one chunk to the next: 256 of
	 * them are 107 MB, whose pages are dear to meet afresh on this kind of VM
	 * (a calloc per chunk cleared them all; a mapping per chunk faulted them
	 * in again).  A parse never relies on what a slot held before
	 * (hx_case_parse sets every field it reads). */
	if (!x->slots) {
		void *m = mmap(NULL, FZ_CHUNK * sizeof(*x->slots), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		x->slots = m == MAP_FAILED ? NULL : m;
	}
	struct fz_slot *slots = x->slots;
	struct eval_rec *recs = calloc(n, sizeof(*recs));
	struct hx_batch_case *b = calloc(n, sizeof(*b));
	size_t *of = calloc(n, sizeof(*of)), nb = 0;
	char err[512];
	if (!recs || !slots || !b || !of || n > FZ_CHUNK)
		_exit(3);                   /* the parent reports a failed worker */
	for (size_t k = 0; k < n; k++) {
		slots[k].parsed = false;
		slots[k].dir[0] = 0;
	}
	for (size_t k = 0; k < n; k++)
		if (eval_prepare(x, idx[k], &slots[k], k, &recs[k])) {
			b[nb] = (struct hx_batch_case){ &slots[k].c, slots[k].label, slots[k].dir };
			of[nb++] = k;
		}
	struct hx_samples s;
	memset(&s, 0, sizeof(s));
	double t0 = fz_now(), c0 = children_cpu();
	struct ju_err ce;
	int crc = nb ? hx_capture_samples(b, nb, &s, NULL, &ce) : 0;
	if (crc)
		snprintf(err, sizeof(err), "%s", ce.msg);
	double tc = (fz_now() - t0) / (double)(nb ? nb : 1), cc = (children_cpu() - c0) / (double)(nb ? nb : 1);
	size_t m = 0;
	for (size_t j = 0; !crc && j < s.ngroups; j++) {
		const struct hx_group *gr = &s.groups[j];
		while (m < nb && (!gr->case_path || strcmp(gr->case_path, b[m].path)))
			eval_error(&recs[of[m++]], "", "the batch capture has no group for it");
		if (m == nb)
			break;
		struct eval_rec *rec = &recs[of[m]];
		struct hx_opts o = x->fuzz_uw;
		struct hx_case_res res;
		o.times = &rec->t.rp;
		/* parsed as the replay would parse it (flags 0): not again */
		o.parsed = o.observe ? NULL : &slots[of[m]].c;
		o.jitted_dir = slots[of[m++]].dir;
		if (hx_replay_group(gr, s.elf_mach, &o, &res, err, sizeof(err)))
			eval_error(rec, "", err);
		else
			eval_take(x, rec, &res);
		hx_case_res_free(&res);
	}
	for (; m < nb; m++)
		eval_error(&recs[of[m]], "", crc ? err : "the batch capture has no group for it");
	for (size_t j = 0; j < nb; j++) {
		recs[of[j]].t.capture = tc;
		recs[of[j]].t.capture_cpu = cc;
	}
	if (!crc)
		hx_samples_free(&s);
	fwrite(recs, sizeof(*recs), n, out);
	for (size_t k = 0; k < n; k++) {
		if (slots[k].parsed)
			hx_case_free(&slots[k].c);
		if (slots[k].dir[0]) {
			fz_clean_dir(slots[k].dir);
			rmdir(slots[k].dir);
		}
	}
	free(recs);
	free(b);
	free(of);
}

static void min_one(struct fz_ctx *x, const struct task *t, uint32_t task, FILE *out)
{
	struct hx_fz_gen *g = &x->scr->min_gen;
	struct min_rec rec;
	char *text = malloc(FZ_TEXT_MAX);
	memset(&rec, 0, sizeof(rec));
	rec.index = t->index;
	rec.task = task;
	snprintf(rec.sig, sizeof(rec.sig), "%s", t->sig);
	generate(x, t->index, g);
	struct ju_err err;
	uint64_t f;
	/* fill the tape as the evaluation did */
	if (!text || hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, &f, &err)) {
		rec.mr.status = 3;
		snprintf(rec.mr.note, sizeof(rec.mr.note), "%s", text ? err.msg : "out of memory");
	} else {
		fz_minimize(x, g, t->sig, &rec.mr);
		if (!rec.mr.status && !fz_finalize(x, g, t->sig, &rec.mr, text, FZ_TEXT_MAX)) {
			rec.textlen = (uint32_t)strlen(text);
			fz_case_name(text, rec.name, sizeof(rec.name));
		}
	}
	fwrite(&rec, sizeof(rec), 1, out);
	if (rec.textlen)
		fwrite(text, 1, rec.textlen, out);
	free(text);
}

/* Forks `jobs` workers; worker w runs fn on items w, w + jobs, ... writing to
 * dir/w.res.  0, or -1 when a worker could not start or died. */
static int fan_out(struct fz_ctx *x, size_t nitems, void (*fn)(struct fz_ctx *, size_t, size_t, FILE *),
		   const char *tag)
{
	pid_t pids[64];
	int jobs = x->o.jobs;
	fflush(NULL);
	for (int w = 0; w < jobs; w++) {
		pids[w] = fork();
		if (pids[w] < 0)
			return ju_errno();
		if (pids[w])
			continue;
		char p[320];
		snprintf(p, sizeof(p), "%s/%s%d.res", x->dir, tag, w);
		FILE *out = fopen(p, "wb");
		snprintf(x->dir + strlen(x->dir), sizeof(x->dir) - strlen(x->dir), "/w%d", w);
		if (!out || mkdir(x->dir, 0700))
			_exit(3);
		uw_files_child();          /* the worker's own file cache */
		fn(x, (size_t)w, nitems, out);
		fclose(out);
		fz_clean_dir(x->dir);
		rmdir(x->dir);
		_exit(0);
	}
	int bad = 0;
	for (int w = 0; w < jobs; w++) {
		int st;
		while (waitpid(pids[w], &st, 0) < 0 && errno == EINTR)
			;
		bad |= !WIFEXITED(st) || WEXITSTATUS(st);
	}
	return bad ? -1 : 0;
}

/* ---- the run: batches, statistics, files ---- */

struct sig_stat {
	char sig[FZ_SIG_LEN];
	uint64_t cases, first;
	int tasks;
	char file[96];
	struct min_result mr;
};

struct fz_stats {
	uint64_t cases, samples, errors, inconsistent;
	double eval_secs, eval_cpu;    /* wall; CPU of the workers and their capture children */
	double min_cpu;                /* the minimizations' CPU (workers and children) */
	uint64_t min_runs;
	struct fz_times t;             /* summed over the cases */
	size_t tasks;
	uint64_t feature[FZF__COUNT];
	struct { char aug[8]; uint64_t n; } aug[32];
	int naug;
	struct { uint8_t enc; uint64_t n; } enc[16];
	int nenc;
	struct sig_stat sig[FZ_MAX_SIGS_RUN];
	int nsig;
	uint64_t first_error_index;
	char first_error[200];
	int written, unstable, lost;
};

/* A worker takes the batch's chunks in turn, FZ_CHUNK cases each (one
 * capture child), from a counter the workers share, until the batch or the
 * time is over: a worker that is done early takes more, none waits for the
 * slowest's share; what a case gives does not depend on which worker ran it
 * (the records are put in index order after the batch). */
static void eval_items(struct fz_ctx *x, size_t w, size_t nitems, FILE *out)
{
	(void)w;
	uint64_t idx[FZ_CHUNK];
	while (!fz_past_deadline(x)) {
		size_t start = __atomic_fetch_add(x->next_chunk, 1, __ATOMIC_RELAXED) * FZ_CHUNK;
		if (start >= nitems)
			break;
		size_t n = nitems - start < FZ_CHUNK ? nitems - start : FZ_CHUNK;
		for (size_t i = 0; i < n; i++)
			idx[i] = x->batch0 + start + i;
		eval_chunk(x, idx, n, out);
	}
}

/* A worker's tasks are i, i + jobs, ...: each gets an equal share of the time left. */
static void min_items(struct fz_ctx *x, size_t w, size_t nitems, FILE *out)
{
	for (size_t i = w; i < nitems; i += (size_t)x->o.jobs) {
		size_t mine_left = (x->ntasks - i + (size_t)x->o.jobs - 1) / (size_t)x->o.jobs;
		x->task_deadline = x->deadline > 0 ? fz_now() + (x->deadline - fz_now()) / (double)mine_left : 0;
		min_one(x, &x->tasks[i], (uint32_t)i, out);
	}
}

static struct sig_stat *sig_entry(struct fz_stats *st, const char *sig)
{
	for (int i = 0; i < st->nsig; i++)
		if (!strcmp(st->sig[i].sig, sig))
			return &st->sig[i];
	if (st->nsig == FZ_MAX_SIGS_RUN)
		return NULL;
	struct sig_stat *s = &st->sig[st->nsig++];
	memset(s, 0, sizeof(*s));
	snprintf(s->sig, sizeof(s->sig), "%s", sig);
	return s;
}

static void count_encodings(struct fz_stats *st, const struct eval_rec *r)
{
	int i = 0;
	while (i < st->naug && strcmp(st->aug[i].aug, r->aug))
		i++;
	if (i == st->naug && st->naug < 32)
		snprintf(st->aug[st->naug++].aug, sizeof(st->aug[0].aug), "%s", r->aug);
	if (i < 32)
		st->aug[i].n++;
	for (i = 0; i < st->nenc && st->enc[i].enc != r->fde_enc; i++)
		;
	if (i == st->nenc && st->nenc < 16)
		st->enc[st->nenc++].enc = r->fde_enc;
	if (i < 16)
		st->enc[i].n++;
}

/* Accounts one evaluation; queues its new signatures for minimization. */
static void account(struct fz_ctx *x, struct fz_stats *st, const struct eval_rec *r, struct task *tasks, size_t *nt)
{
	st->cases++;
	st->samples += r->nsamples;
	st->t.gen += r->t.gen;
	st->t.parse += r->t.parse;
	st->t.capture += r->t.capture;
	st->t.capture_cpu += r->t.capture_cpu;
	st->t.classify += r->t.classify;
	st->t.rp.load += r->t.rp.load;
	st->t.rp.pv += r->t.rp.pv;
	st->t.rp.oracle += r->t.rp.oracle;
	st->t.rp.total += r->t.rp.total;
	for (int u = 0; u < HX_MAX_UW; u++) {
		st->t.rp.open[u] += r->t.rp.open[u];
		st->t.rp.unwind[u] += r->t.rp.unwind[u];
	}
	for (int f = 0; f < FZF__COUNT; f++)
		st->feature[f] += r->features >> f & 1;
	count_encodings(st, r);
	st->inconsistent += (r->flags & EF_INCONSISTENT) != 0;
	if (r->flags & EF_ERROR) {
		if (!st->errors++) {
			st->first_error_index = r->index;
			snprintf(st->first_error, sizeof(st->first_error), "%s", r->problem);
		}
		return;
	}
	for (uint32_t k = 0; k < r->nsig && k < FZ_MAX_SIG; k++) {
		struct sig_stat *s = sig_entry(st, r->sig[k]);
		if (!s)
			continue;
		if (!s->cases++)
			s->first = r->index;
		if (s->tasks < x->o.per_sig && *nt < FZ_MAX_TASKS) {
			s->tasks++;
			tasks[*nt].index = r->index;
			snprintf(tasks[(*nt)++].sig, sizeof(tasks[0].sig), "%s", r->sig[k]);
		}
	}
}

static void *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	size_t r;
	while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
			}
			buf = nb;
		}
	}
	fclose(f);
	*len = n;
	return buf;
}

static int cmp_eval(const void *a, const void *b)
{
	uint64_t x = ((const struct eval_rec *)a)->index, y = ((const struct eval_rec *)b)->index;
	return x < y ? -1 : x > y;
}

/* Evaluates one batch; the tasks it yields, in index order. */
static int eval_batch(struct fz_ctx *x, struct fz_stats *st, size_t n, struct task *tasks, size_t *nt)
{
	struct eval_rec *recs = x->scr->recs;
	size_t nrec = 0;
	*x->next_chunk = 0;
	if (fan_out(x, n, eval_items, "e"))
		return -EINVAL;
	for (int w = 0; w < x->o.jobs; w++) {
		char p[320];
		size_t len = 0;
		snprintf(p, sizeof(p), "%s/e%d.res", x->dir, w);
		struct eval_rec *r = read_all(p, &len);
		for (size_t i = 0; r && i < len / sizeof(*r) && nrec < FZ_CHUNK * FZ_BATCH_CHUNKS; i++)
			recs[nrec++] = r[i];
		free(r);
		unlink(p);
	}
	qsort(recs, nrec, sizeof(recs[0]), cmp_eval);
	for (size_t i = 0; i < nrec; i++)
		account(x, st, &recs[i], tasks, nt);
	return 0;
}

static int write_case(const struct fz_ctx *x, const char *sub, const char *name, const char *text, size_t len,
		      char *path, size_t plen)
{
	char dir[640];
	snprintf(dir, sizeof(dir), "%s/%s%s", x->o.out, x->arch->facts->name, sub);
	mkdir(x->o.out, 0755);
	char adir[640];
	snprintf(adir, sizeof(adir), "%s/%s", x->o.out, x->arch->facts->name);
	mkdir(adir, 0755);
	if (mkdir(dir, 0755) && errno != EEXIST)
		return ju_errno();
	snprintf(path, plen, "%s/%s.case", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return ju_errno();
	size_t w = fwrite(text, 1, len, f);
	return fclose(f) || w != len ? -1 : 0;
}

/* One minimization's outcome into the statistics and, with a case, a file
 * (the first task of a name wins: later ones of the same reproducer are counted). */
static void take_result(struct fz_ctx *x, struct fz_stats *st, const struct min_rec *rec, const char *text,
			char (*names)[32], size_t *nnames)
{
	struct sig_stat *s = sig_entry(st, rec->sig);
	char path[800] = "";
	st->min_runs += rec->mr.runs;
	bool dup = false;
	for (size_t i = 0; i < *nnames && rec->textlen; i++)
		dup |= !strcmp(names[i], rec->name);
	if (rec->textlen && !dup) {
		if (*nnames < 4096)
			snprintf(names[(*nnames)++], 32, "%s", rec->name);
		if (write_case(x, rec->mr.status == 2 ? "/unstable" : "", rec->name, text, rec->textlen, path,
			       sizeof(path))) {
			st->lost++;
			path[0] = 0;
		} else {
			rec->mr.status == 2 ? st->unstable++ : st->written++;
		}
	} else if (!rec->textlen) {
		st->lost++;
	}
	if (s && !s->file[0]) {
		s->mr = rec->mr;
		if (path[0] || dup)
			snprintf(s->file, sizeof(s->file), "%s", path[0] ? path : rec->name);
	}
}

/* Minimizes the batch's tasks; takes the results in task order. */
static int min_batch(struct fz_ctx *x, struct fz_stats *st, const struct task *tasks, size_t nt)
{
	char (*names)[32] = x->scr->names;
	size_t *nnames = &x->scr->nnames;
	x->tasks = tasks;
	x->ntasks = nt;
	if (fan_out(x, nt, min_items, "m"))
		return -EINVAL;
	char *bufs[64] = { NULL };
	size_t lens[64] = { 0 };
	const char **texts = calloc(nt ? nt : 1, sizeof(*texts));
	struct min_rec *recs = calloc(nt ? nt : 1, sizeof(*recs));
	bool *have = calloc(nt ? nt : 1, sizeof(*have));
	for (int w = 0; w < x->o.jobs && texts && recs && have; w++) {
		char p[320];
		snprintf(p, sizeof(p), "%s/m%d.res", x->dir, w);
		bufs[w] = read_all(p, &lens[w]);
		unlink(p);
		for (size_t off = 0; bufs[w] && off + sizeof(struct min_rec) <= lens[w];) {
			struct min_rec rec;
			memcpy(&rec, bufs[w] + off, sizeof(rec));
			off += sizeof(rec);
			if (rec.textlen > lens[w] - off || rec.task >= nt)
				break;
			recs[rec.task] = rec;
			texts[rec.task] = bufs[w] + off;
			have[rec.task] = true;
			off += rec.textlen;
		}
	}
	for (size_t t = 0; t < nt && texts && recs && have; t++)
		if (have[t])
			take_result(x, st, &recs[t], texts[t], names, nnames);
	for (int w = 0; w < x->o.jobs; w++)
		free(bufs[w]);
	free(texts);
	free(recs);
	free(have);
	return 0;
}

/* Where the evaluation's time went, per case (docs/measurements.md "fuzz-cfi: rate"). */
static void summary_times(const struct fz_ctx *x, const struct fz_stats *st, FILE *f)
{
	double n = st->cases ? (double)st->cases : 1, ms = 1e3 / n;
	const struct hx_replay_times *r = &st->t.rp;
	double rest = r->total - r->load - r->pv - r->oracle;
	fprintf(f, "time per case (ms, each worker's clock): generate %.3f, parse %.3f, capture %.3f (its child's CPU %.3f), "
		"replay %.3f [case and process view %.3f, perf's view %.3f, oracle %.3f", st->t.gen * ms, st->t.parse * ms,
		st->t.capture * ms, st->t.capture_cpu * ms, r->total * ms, r->load * ms, r->pv * ms, r->oracle * ms);
	for (int u = 0; u < x->fuzz_uw.nuw && u < HX_MAX_UW; u++) {
		fprintf(f, ", %s %.3f (state %.3f)", x->fuzz_uw.unwinders[u], r->unwind[u] * ms, r->open[u] * ms);
		rest -= r->unwind[u] + r->open[u];
	}
	fprintf(f, ", judging and symbols %.3f], classify %.3f\n", rest * ms, st->t.classify * ms);
	if (st->tasks)
		fprintf(f, "minimization: %llu runs (a capture child each) in %.1f s CPU: %.1f ms CPU per run\n",
			(unsigned long long)st->min_runs, st->min_cpu,
			st->min_runs ? st->min_cpu * 1e3 / (double)st->min_runs : 0);
}

static void summary(const struct fz_ctx *x, const struct fz_stats *st, FILE *f)
{
	double secs = fz_now() - x->t0;
	char libs[96], e[32];
	fz_lib_versions(libs, sizeof(libs));
	double es = st->eval_secs > 0 ? st->eval_secs : secs;
	fprintf(f, "fuzz-cfi %s: seed %llu%s, %llu cases, %llu samples evaluated in %.1f s: %.2f cases/s, %.1f samples/s "
		"(%.1f s CPU: %.1f cases per CPU second); %zu minimization(s) in %.1f s (--jobs %d; up to %d cases per "
		"capture child; %s)\n", x->arch->facts->name,
		(unsigned long long)x->o.seed, x->o.mutate ? ", --mutate" : "", (unsigned long long)st->cases,
		(unsigned long long)st->samples, es, es > 0 ? (double)st->cases / es : 0,
		es > 0 ? (double)st->samples / es : 0, st->eval_cpu, st->eval_cpu > 0 ? (double)st->cases / st->eval_cpu : 0,
		st->tasks, secs - es, x->o.jobs, FZ_CHUNK, libs);
	summary_times(x, st, f);
	fprintf(f, "unwinders: %s\n", x->fuzz_names);
	if (x->o.mutate)
		fprintf(f, "mutants the oracle saw (the CFI differs from the truth at a sample): %llu of %llu\n",
			(unsigned long long)st->inconsistent, (unsigned long long)st->cases);
	fprintf(f, "findings: %d signature(s); %d case(s) written, %d unstable, %d not written\n", st->nsig,
		st->written, st->unstable, st->lost);
	for (int i = 0; i < st->nsig; i++) {
		const struct sig_stat *s = &st->sig[i];
		fprintf(f, "  %-34s %6llu case(s), first %llu", s->sig, (unsigned long long)s->cases,
			(unsigned long long)s->first);
		if (s->file[0])
			fprintf(f, " -> %s (%u ops, %u CFA instructions; from %u and %u in %u runs)", s->file,
				s->mr.ops1, s->mr.insns1, s->mr.ops0, s->mr.insns0, s->mr.runs);
		if (s->mr.note[0])
			fprintf(f, " [%s]", s->mr.note);
		fprintf(f, "\n");
	}
	if (st->errors)
		fprintf(f, "cases that did not build or run: %llu (first: case %llu: %s)\n",
			(unsigned long long)st->errors, (unsigned long long)st->first_error_index, st->first_error);
	fprintf(f, "coverage (cases using each):");
	for (int i = 0; i < FZF__COUNT; i++)
		fprintf(f, "%s %s %llu", i ? "," : "", hx_fz_feature_name((enum hx_fz_feature)i),
			(unsigned long long)st->feature[i]);
	fprintf(f, "\nCIE augmentations:");
	for (int i = 0; i < st->naug; i++)
		fprintf(f, " %s %llu", st->aug[i].aug[0] ? st->aug[i].aug : "none", (unsigned long long)st->aug[i].n);
	fprintf(f, "\nFDE pointer encodings:");
	for (int i = 0; i < st->nenc; i++)
		fprintf(f, " %s %llu", hx_fz_enc_name(st->enc[i].enc, e, sizeof(e)), (unsigned long long)st->enc[i].n);
	fprintf(f, "\n");
}

/* Evaluates batches until --cases or the evaluation's share of --time, then
 * minimizes what it found, in index order, in the time left. */
static int fuzz_arch(struct fz_ctx *x)
{
	struct fz_stats *st = calloc(1, sizeof(*st));
	struct task *tasks = calloc(FZ_MAX_TASKS, sizeof(*tasks));
	int rc = 0;
	size_t per = FZ_CHUNK * FZ_BATCH_CHUNKS, nt = 0;
	double end = x->deadline, c0 = children_cpu();
	if (end > 0)
		x->deadline = x->t0 + (end - x->t0) * FZ_EVAL_SHARE;
	for (uint64_t start = 0; st && tasks && !fz_past_deadline(x); start += per) {
		if (x->o.ncases && start >= x->o.ncases)
			break;
		size_t n = per;
		if (x->o.ncases && start + n > x->o.ncases)
			n = (size_t)(x->o.ncases - start);
		x->batch0 = start;
		if (eval_batch(x, st, n, tasks, &nt)) {
			rc = -ECHILD;
			break;
		}
	}
	x->deadline = end;
	if (st) {
		st->eval_secs = fz_now() - x->t0;
		st->eval_cpu = children_cpu() - c0;
		st->tasks = nt;
	}
	c0 = children_cpu();
	if (!rc && st && tasks && nt && min_batch(x, st, tasks, nt))
		rc = -ECHILD;
	if (st)
		st->min_cpu = children_cpu() - c0;
	if (rc < 0)
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "a worker failed (fork, or it died)");
	if (!st || !tasks) {
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "out of memory");
		rc = -ENOMEM;
	} else {
		summary(x, st, stdout);
		char p[700];
		snprintf(p, sizeof(p), "%s/%s", x->o.out, x->arch->facts->name);
		mkdir(x->o.out, 0755);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/%s/summary.txt", x->o.out, x->arch->facts->name);
		FILE *f = fopen(p, "w");
		if (f) {
			summary(x, st, f);
			fclose(f);
		}
		if (!rc && (st->written || st->unstable || st->lost || st->errors))
			rc = HX_CMD_FINDINGS;
		if (!rc && !st->cases)
			rc = HX_CMD_CANNOT_RUN;
	}
	free(st);
	free(tasks);
	return rc;
}

/* --print I: case I as a file, with the verdicts this machine gives it. */
static int print_case(struct fz_ctx *x, uint64_t index)
{
	struct hx_fz_gen *g = &x->scr->print_gen;
	char *expect = x->scr->expect, *about = x->scr->about, *name = x->scr->name;
	struct ju_err err;
	char *text = fz_text_buf(x), libs[96];
	struct hx_case_res res;
	memset(&res, 0, sizeof(res));
	generate(x, index, g);
	if (hx_fz_case_text(g, "fuzz-cfi", "a generated case", NULL, text, FZ_TEXT_MAX, NULL, &err) ||
	    fz_run_text(x, text, &x->final_uw, &res, &err)) {
		hx_case_res_free(&res);
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "case %llu: %s", (unsigned long long)index, err.msg);
		return HX_CMD_FINDINGS;
	}
	int rc = fz_observed_expect(x, &res, g->depth, expect, sizeof(x->scr->expect));
	hx_case_res_free(&res);
	fz_lib_versions(libs, sizeof(libs));
	snprintf(about, sizeof(x->scr->about), "Generated by jitunwind fuzz-cfi --seed %llu --print %llu%s (%s); [expect] as observed.",
		 (unsigned long long)x->o.seed, (unsigned long long)index, x->o.mutate ? " --mutate" : "", libs);
	fz_case_name(text, name, sizeof(x->scr->name));
	if (rc || hx_fz_case_text(g, name, about, expect, text, FZ_TEXT_MAX, NULL, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "case %llu: %s", (unsigned long long)index,
			rc ? "the observed verdicts do not fit an [expect] section" : err.msg);
		return HX_CMD_FINDINGS;
	}
	fputs(text, stdout);
	return 0;
}

/* o's unwinders: the arch's (machine: this machine's defaults), their
 * names in list, o pointing into copy */
static void set_unwinders(struct hx_opts *o, char *list, char *copy, size_t len, const char *arch, bool machine)
{
	memset(o, 0, sizeof(*o));
	if (machine)
		hx_column_defaults(arch, list, len);
	else
		hx_column_list(arch, list, len);
	snprintf(copy, len, "%s", list);
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && o->nuw < HX_MAX_UW; t = strtok_r(NULL, ",", &save))
		o->unwinders[o->nuw++] = t;
}

/* Another arch: its own build under its runner, with this run's options
 * (--arch and --time last: getopt keeps the last).  Its exit code. */
static int delegate(const char *arch, int argc, char **argv, double secs)
{
	char self[4096], bin[4400], runner[64], tbuf[32];
	const char *env_bin = getenv("JU_FUZZ_CROSS_BIN"), *env_run = getenv("JU_FUZZ_CROSS_RUNNER");
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(bin, sizeof(bin), "%s", env_bin ? env_bin : "");
	if (!env_bin)
		snprintf(bin, sizeof(bin), "%s/build/%s/jitunwind", self, arch);
	snprintf(runner, sizeof(runner), "%s", env_run ? env_run : "");
	if (!env_run)
		snprintf(runner, sizeof(runner), "qemu-%s", arch);
	if (access(bin, X_OK)) {
		printf("jitunwind: skip: fuzz-cfi --arch %s: no %s build at %s (make ARCH=%s)\n", arch, arch, bin, arch);
		return HX_CMD_CANNOT_RUN;
	}
	char **av = calloc((size_t)argc + 8, sizeof(*av));
	int k = 0;
	if (!av)
		return -ENOMEM;
	if (runner[0])
		av[k++] = runner;
	av[k++] = bin;
	av[k++] = "fuzz-cfi";
	for (int i = 1; i < argc; i++)
		av[k++] = argv[i];
	av[k++] = "--arch";
	av[k++] = (char *)arch;
	if (secs > 0) {
		snprintf(tbuf, sizeof(tbuf), "%.0f", secs < 1 ? 1 : secs);
		av[k++] = "--time";
		av[k++] = tbuf;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		execvp(av[0], av);
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "cannot run %s: %s", av[0], strerror(errno));
		_exit(127); /* as a shell says a command cannot be run */
	}
	free(av);
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -ECHILD;
	/* the other arch's jitunwind answers with its exit code (jitunwind(1)) */
	int ex = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return ex == 0 ? HX_CMD_CLEAN : ex == 1 ? HX_CMD_FINDINGS : ex == 77 || ex == 127 ? HX_CMD_CANNOT_RUN : -ECHILD;
}

/* One arch here, in x (zeroed, its scratch allocated) */
static int run_ctx(struct fz_ctx *x, const struct fz_opts *o, const struct tr_arch *arch)
{
	x->o = *o;
	x->arch = arch;
	const char *plant = getenv("JU_FUZZ_PLANT");
	x->plant = plant && !strcmp(plant, "cfa");
	set_unwinders(&x->fuzz_uw, x->fuzz_names, x->fuzz_copy, sizeof(x->fuzz_names), arch->facts->name, false);
	set_unwinders(&x->final_uw, x->final_names, x->final_copy, sizeof(x->final_names), arch->facts->name, true);
	/* jitdumps, perf maps, jitted .so files: several files per case, on
	 * tmpfs where there is one, removed if a signal ends the run, a killed
	 * run's by the next (harness/run/scratch.h) */
	struct ju_err se;
	int sd = hx_scratch_mkdtemp(x->dir, sizeof(x->dir), "fuzz", &se);
	if (sd) {
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "%s", se.msg);
		return sd;
	}
	x->next_chunk = mmap(NULL, sizeof(*x->next_chunk), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (x->next_chunk == MAP_FAILED) {
		int e = errno;
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "mmap: %s", strerror(e));
		hx_scratch_remove(x->dir);
		return -e;
	}
	x->t0 = fz_now();
	x->deadline = o->time_s > 0 ? x->t0 + o->time_s : 0;
	int rc = o->print_index >= 0 ? print_case(x, (uint64_t)o->print_index) : fuzz_arch(x);
	munmap((void *)x->next_chunk, sizeof(*x->next_chunk));
	if (x->slots)
		munmap(x->slots, FZ_CHUNK * sizeof(*x->slots));
	fz_clean_dir(x->dir);
	hx_scratch_remove(x->dir);
	return rc;
}

static int run_here(struct fz_opts *o, const struct tr_arch *arch)
{
	struct fz_ctx *x = calloc(1, sizeof(*x));
	if (!x || !(x->scr = calloc(1, sizeof(*x->scr)))) {
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "out of memory");
		free(x);
		return -ENOMEM;
	}
	int rc = run_ctx(x, o, arch);
	free(x->scr);
	free(x);
	return rc;
}

int hx_fuzzcfi_run(const struct fz_opts *opts, int argc, char **argv, struct hx_cmd_outcome *out)
{
	struct fz_opts o = *opts;
	*out = (struct hx_cmd_outcome){ .kind = HX_CMD_CLEAN };
	int rc;
	if (!o.time_s && !o.ncases)
		o.time_s = 60;
	const struct tr_arch *host = tr_arch_host();
	char list[64];
	snprintf(list, sizeof(list), "%s", o.arches ? o.arches : host ? host->facts->name : "");
	const char *arches[4];
	int n = 0;
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t && n < 4; t = strtok_r(NULL, ",", &save)) {
		const struct tr_arch *a = tr_arch_by_name(t);
		if (!a || strcmp(a->facts->name, t)) {
			char names[128];
			tr_arch_names(names, sizeof(names));
			ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "--arch %s: expected one of %s", t, names);
			return -EINVAL;
		}
		arches[n++] = a->facts->name;
	}
	if (!n) {
		ju_say(JU_SAY_ERROR, "jitunwind fuzz-cfi", "no arch to fuzz");
		return -EINVAL;
	}
	/* every arch gets its share of the time; the worst outcome wins (a failure
	 * over findings over clean; cannot-run only when every arch skipped) */
	int worst = HX_CMD_CLEAN, failed = 0;
	bool all_skip = true;
	for (int i = 0; i < n; i++) {
		const struct tr_arch *a = tr_arch_by_name(arches[i]);
		struct fz_opts oi = o;
		oi.time_s = o.time_s / n;
		rc = a == host ? run_here(&oi, a) : delegate(arches[i], argc, argv, oi.time_s);
		all_skip &= rc == HX_CMD_CANNOT_RUN;
		if (rc < 0 && !failed)
			failed = rc;
		else if (rc != HX_CMD_CANNOT_RUN && rc > worst)
			worst = rc;
	}
	if (failed)
		return failed;
	out->kind = all_skip ? HX_CMD_CANNOT_RUN : (enum hx_cmd_kind)worst;
	return 0;
}
