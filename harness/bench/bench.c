/* `jitunwind bench [--no-run] [--lint DUMP] [PATH...]`: each speed figure
 * beside its target (docs/speed.md), and whether this run met it.  Figures,
 * never pass/fail: the exit code says only whether the bench could run.
 *
 * The machine is shared and noisy, so every rate is per CPU second of the
 * thread doing the work (CLOCK_THREAD_CPUTIME_ID, which other processes'
 * load does not inflate), and the whole run is given as wall time beside its
 * own CPU time and the load average: a wall figure over the target on a
 * loaded machine says so. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/capture/capture.h"
#include "harness/case/case.h"
#include "harness/case/judge.h"
#include "harness/case/say.h"
#include "harness/capture/ksampler.h"
#include "harness/run/scratch.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "harness/run/toperf.h"
#include "trampolines/tramp.h"
#include "unwinders/lint/lint.h"
#include "unwinders/view.h"
#include "unwinders/model/perfview.h"

#include "harness/bench/bench.h"

/* The targets of issue 12 that are not an unwinder's (uw_unwinder.bench_rate). */
#define BENCH_RUN_S 0.4           /* run of the arch's cases, wall */
#define BENCH_CAPTURE_US 50.0     /* capture per sample, amortized over one batch */
#define BENCH_LINT_MBS 300.0      /* lint throughput */
#define BENCH_FUZZ_CASES 1000.0   /* fuzz-cfi generated cases per second, 2 workers */
#define BENCH_FUZZ_N HX_BENCH_FUZZ_N

static double wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of this process and of its waited-for children. */
static double cpu_all(void)
{
	struct rusage s, c;
	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	return (double)(s.ru_utime.tv_sec + s.ru_stime.tv_sec + c.ru_utime.tv_sec + c.ru_stime.tv_sec) +
	       (double)(s.ru_utime.tv_usec + s.ru_stime.tv_usec + c.ru_utime.tv_usec + c.ru_stime.tv_usec) / 1e6;
}

/* One line: the figure, its target, met or not (and why not, if known). */
static void line(const char *what, const char *measured, const char *target, int met, const char *note)
{
	printf("  %-34s %-26s %-16s %s%s%s\n", what, measured, target,
	       met < 0 ? "" : met ? "met" : "NOT MET", note && note[0] ? ": " : "", note ? note : "");
}

static const char *si(double v, char *buf, size_t n)
{
	if (v >= 1e6)
		snprintf(buf, n, "%.2f M", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, n, "%.1f k", v / 1e3);
	else
		snprintf(buf, n, "%.0f ", v);
	return buf;
}

struct bench {
	const char *const *paths;
	int npaths;
	const struct tr_arch *host;
	char **files;
	int nf;
	struct hx_case *cases;
	struct hx_batch_case *batch;
	size_t nb;
	char dir[256];               /* the jitdumps where run keeps them (hx_scratch_root) */
	struct hx_batch_case *tmp;   /* the same cases, their jitdumps in tmpdir (/tmp); NULL: none */
	char tmpdir[64];
	struct hx_samples s;
	size_t nsamples;
	double cap_wall;
};

/* Load the host arch's cases; 0, or -errno with a message printed. */
static int bench_load(struct bench *b)
{
	struct ju_err err;
	if (hx_case_glob(b->paths, b->npaths, &b->files, &b->nf, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind bench", "%s", err.msg);
		return -EINVAL;
	}
	b->cases = calloc((size_t)b->nf + 1, sizeof(*b->cases));
	b->batch = calloc((size_t)b->nf + 1, sizeof(*b->batch));
	if (!b->cases || !b->batch)
		return -ENOMEM;
	for (int i = 0; i < b->nf; i++) {
		struct hx_case *c = &b->cases[b->nb];
		if (hx_case_load(c, b->files[i], &err)) {
			ju_say(JU_SAY_ERROR, "jitunwind bench", "%s", err.msg);
			return -EINVAL;
		}
		if (!b->host || strcmp(c->arch, b->host->facts->name)) {
			hx_case_free(c);
			continue;
		}
		b->batch[b->nb] = (struct hx_batch_case){ .c = c, .path = b->files[i] };
		b->nb++;
	}
	if (hx_scratch_mkdtemp(b->dir, sizeof(b->dir), "bench", &err) ||
	    hx_batch_dirs(b->batch, b->nb, b->dir, 0, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind bench", "%s", err.msg);
		return -EINVAL;
	}
	/* where run keeps its jitdumps on tmpfs, the capture again with them in
	 * /tmp: what the file system's inode allocation adds */
	if (strcmp(hx_scratch_root(), "/dev/shm"))
		return 0;
	snprintf(b->tmpdir, sizeof(b->tmpdir), "/tmp/jitunwind-bench-XXXXXX");
	if (!mkdtemp(b->tmpdir)) {
		b->tmpdir[0] = 0;
		return 0;
	}
	hx_scratch_register(b->tmpdir);
	b->tmp = calloc((size_t)b->nf + 1, sizeof(*b->tmp));
	for (size_t k = 0; b->tmp && k < b->nb; k++)
		b->tmp[k] = (struct hx_batch_case){ .c = b->batch[k].c, .path = b->batch[k].path };
	if (b->tmp && hx_batch_dirs(b->tmp, b->nb, b->tmpdir, 0, &err)) {
		free(b->tmp);
		b->tmp = NULL;
	}
	return 0;
}

/* What one breakpoint restore costs here: tr_patch of one byte in the middle
 * page of a 4-page arena, directly (/proc/self/mem, as the capture does where
 * it can) or by the mprotect pair (which splits and re-merges the mapping).
 * CPU us per patch, best of 5 rounds; 0 if it could not be measured. */
static double patch_us(bool direct)
{
	struct tr_arena a;
	if (tr_arena_init(&a, 4 * 4096))
		return 0;
	if (direct && tr_arena_direct(&a)) {
		tr_arena_fini(&a);
		return 0;
	}
	static const uint8_t b = 0xc3;
	double best = 0;
	for (int round = 0; round < 5; round++) {
		double c0 = cpu();
		for (int i = 0; i < 100; i++)
			tr_patch(&a, a.base + a.page + (size_t)i, &b, 1);
		double d = (cpu() - c0) * 1e6 / 100;
		if (!round || d < best)
			best = d;
	}
	tr_arena_fini(&a);
	return best;
}

/* One batch of every case in bc: its CPU (children and parent) and wall
 * seconds; the samples in *s.  0, or
 * -EINVAL with a message printed.  Inlined: the captured stacks (the replay
 * figures' samples) have the frames above the capture they had before. */
static inline __attribute__((always_inline)) int capture_once(const struct hx_batch_case *bc, size_t n, struct hx_samples *s, struct hx_batch_run *st,
			double *c, double *w)
{
	struct ju_err err;
	double t0 = wall(), c0 = cpu_all();
	if (hx_capture_samples(bc, n, s, st, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind bench", "%s", err.msg);
		return -EINVAL;
	}
	*w = wall() - t0;
	*c = cpu_all() - c0;
	return 0;
}

/* Capture every case in one batch, its jitdumps where run keeps them
 * (hx_scratch_root: tmpfs where there is one): the amortized cost per
 * sample, the least CPU of three batches (the machine may be shared).  Where
 * that is /dev/shm, each round first captures the same cases with their
 * jitdumps in /tmp: there creating a case's jitdump and perf map is the file
 * system's inode allocation, which on an ext4 without a journal skips every
 * inode deleted in the last minutes, reading each: other processes'
 * deletions cost this one CPU (docs/speed.md). */
static int bench_capture(struct bench *b)
{
	char m[64], note[300];
	double c = 0, cs = 0, w, cr;
	struct hx_batch_run st = { 0 };
	for (int round = 0; round < 3; round++) {
		struct hx_samples s2;
		if (round)
			hx_samples_free(&b->s);   /* first: each batch reuses the kept samples memfd */
		if (b->tmp && !capture_once(b->tmp, b->nb, &s2, &st, &cr, &w)) {
			hx_samples_free(&s2);
			if (!cs || cr < cs)
				cs = cr;
		}
		if (capture_once(b->batch, b->nb, &b->s, &st, &cr, &w))
			return -EINVAL;
		if (!round || cr < c) {
			c = cr;
			b->cap_wall = w;
		}
	}
	for (size_t g = 0; g < b->s.ngroups; g++)
		b->nsamples += b->s.groups[g].nsamples;
	double per = b->nsamples ? c * 1e6 / (double)b->nsamples : 0;
	snprintf(m, sizeof(m), "%.1f us/sample", per);
	snprintf(note, sizeof(note), "least CPU of 3 batches, %u child(ren) and parent, %zu cases, %zu samples: %.1f ms (%.1f ms wall)",
		 st.children, b->nb, b->nsamples, c * 1e3, b->cap_wall * 1e3);
	char name[48];
	snprintf(name, sizeof(name), "capture (jitdumps in %.20s)", hx_scratch_root());
	line(name, m, "<= 50 us", per <= BENCH_CAPTURE_US, note);
	double pert = b->nsamples ? cs * 1e6 / (double)b->nsamples : 0;
	if (b->tmp && pert > 0) {
		snprintf(m, sizeof(m), "%.1f us/sample", pert);
		snprintf(note, sizeof(note), "the same, jitdumps in /tmp: creating each case's jitdump and perf map there cost %.0f us more per file",
			 b->nb ? (cs - c) * 1e6 / (double)(2 * b->nb) : 0.0);
		line("capture (jitdumps in /tmp)", m, "<= 50 us", pert <= BENCH_CAPTURE_US, note);
	}
	if (per > BENCH_CAPTURE_US) {
		double d = patch_us(true), mp = patch_us(false);
		char dm[48] = "";
		if (d > 0)
			snprintf(dm, sizeof(dm), "%.1f us through /proc/self/mem, ", d);
		printf("  %-34s a case creates its jitdump and perf map, reads its maps and writes its arena;\n"
		       "  %-34s a sample is a trap (its signal frame), a breakpoint restore (%s%.1f us by\n"
		       "  %-34s the mprotect pair) and its stack written (docs/speed.md)\n",
		       "", "", dm, mp, "");
	}
	return 0;
}

/* Replay timings summed over every map set, per unwinder of the table. */
struct btimes {
	const struct uw_unwinder *const *uws;
	size_t nu;
	double *secs, *topen, tjudge;
	size_t *done, *frames, judged;
	struct uw_result r;
};

/* The samples of one map set as the unwinders get them: the first n with
 * perf's default 8 KB dump (DWARF unwinders), the next n with the whole
 * stack (the FP walk, the oracle). */
static struct uw_sample *bench_samples(const struct hx_group *gr, const struct uw_arch *a)
{
	size_t n = gr->nsamples;
	struct uw_sample *us = calloc(2 * n + 1, sizeof(*us));
	for (size_t k = 0; us && k < n; k++) {
		const struct hx_sample *x = &gr->samples[k];
		us[k] = (struct uw_sample){ .arch = a, .abi = x->abi, .mask = x->mask,
					    .stack_addr = x->stack_addr, .stack = x->stack,
					    .stack_size = x->stack_size > 8192 ? 8192 : x->stack_size };
		memcpy(us[k].regs, x->regs, sizeof(us[k].regs));
		us[n + k] = us[k];
		us[n + k].stack_size = x->stack_size;
	}
	return us;
}

/* One unwinder of the session (su; table index u) over one map set's
 * samples, in BENCH_ROUNDS rounds of reps replays each: the fastest round's
 * CPU time counts (a round another process preempted, or whose caches it
 * emptied, is slower: the best round is this code's own speed). */
#define BENCH_ROUNDS 5
static void bench_one(struct btimes *t, size_t u, struct hx_sess *ss, int su, const struct hx_group *gr,
		      const struct uw_sample *us, size_t reps)
{
	double best = 0;
	for (int round = 0; round < BENCH_ROUNDS; round++) {
		double c0 = cpu();
		for (size_t rep = 0; rep < reps; rep++)
			for (size_t k = 0; k < gr->nsamples; k++) {
				hx_sess_unwind(ss, su, &us[gr->nsamples + k], &us[k], &t->r);
				t->frames[u] += round ? 0 : (size_t)t->r.n;
				t->done[u] += round ? 0 : 1;
			}
		double d = cpu() - c0;
		if (!round || d < best)
			best = d;
	}
	t->secs[u] += best;
}

/* The session over one map set: every replayed unwinder (the host's
 * defaults that need no probe: the perf column runs perf per case, timed
 * with the whole run), each state's open timed (CPU) into tm.  0, or a
 * negative errno. */
static int bench_open(struct hx_sess *ss, const struct hx_group *gr, const struct uw_arch *a, const struct uw_map *maps,
		      size_t nmaps, const struct jd_file *jd, const char *host, const struct btimes *t, size_t *of,
		      struct hx_replay_times *tm)
{
	struct hx_sess_cfg cfg = { .arch = a, .maps = maps, .nmaps = nmaps, .jd = jd, .profile = PV_CURRENT,
				   .dump_dir = "/tmp", .times = tm, .clock = cpu };
	for (size_t u = 0; u < t->nu && cfg.nuw < HX_SESS_MAX_UW; u++)
		if (uw_unwinder_default_on(t->uws[u], host) && !t->uws[u]->probe) {
			of[cfg.nuw] = u;
			cfg.uws[cfg.nuw++] = t->uws[u];
		}
	struct ju_err e;
	int rc = hx_sess_open(ss, &cfg, &e);
	if (rc == 0 && !ss->have_pv) {
		snprintf(e.msg, sizeof(e.msg), "%s", ss->pv_err);
		hx_sess_close(ss);
		rc = -EINVAL;
	}
	if (rc)
		ju_say(JU_SAY_ERROR, "jitunwind bench", "%s: %s", gr->case_path, e.msg);
	/* the states' figure is their open alone (CPU); the unwinds are timed
	 * by rounds here, without a clock read per unwind */
	ss->cfg.times = NULL;
	return rc;
}

/* Every replayed unwinder and the judge over one map set, its views built
 * once (not timed), as the runner does. */
static int bench_group(const struct hx_group *gr, uint32_t mach, const char *host, struct btimes *t)
{
	struct jd_file jd;
	struct ju_err je;
	struct uw_map *maps = NULL;
	size_t nmaps = 0, of[HX_SESS_MAX_UW];
	struct hx_sess ss;
	struct hx_replay_times tm = { 0 };
	struct ju_err err;
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)mach);
	if (!gr->dump_path || !a || jd_open(&jd, gr->dump_path, &je))
		return -EINVAL;
	if (uw_maps_parse(gr->maps, gr->maps_len, &maps, &nmaps, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind bench", "%s: %s", gr->case_path, err.msg);
		jd_close(&jd);
		return -EINVAL;
	}
	if (bench_open(&ss, gr, a, maps, nmaps, &jd, host, t, of, &tm)) {
		uw_maps_free(maps, nmaps);
		jd_close(&jd);
		return -EINVAL;
	}
	struct uw_sample *us = bench_samples(gr, a);
	size_t reps = gr->nsamples ? 1000 / gr->nsamples + 1 : 0;
	for (int su = 0; us && su < ss.cfg.nuw; su++)
		bench_one(t, of[su], &ss, su, gr, us, reps);
	for (size_t k = 0; us && k < gr->nsamples; k++) {
		struct hx_judgement j;
		uw_fp.unwind(NULL, &ss.view, &us[k], &t->r);
		double c0 = cpu();
		for (size_t rep = 0; rep < reps; rep++)
			hx_judge(gr->samples[k].truth, (int)gr->samples[k].ntruth, t->r.addr, t->r.n, &j);
		t->tjudge += cpu() - c0;
		t->judged += reps;
	}
	free(us);
	hx_sess_close(&ss);
	for (int su = 0; su < ss.cfg.nuw; su++)
		t->topen[of[su]] += tm.open[su];
	uw_maps_free(maps, nmaps);
	jd_close(&jd);
	return us ? 0 : -1;
}

static void bench_replay(struct bench *b)
{
	struct btimes t = { 0 };
	t.uws = hx_columns(&t.nu);
	t.secs = calloc(t.nu, sizeof(double));
	t.topen = calloc(t.nu, sizeof(double));
	t.done = calloc(t.nu, sizeof(size_t));
	t.frames = calloc(t.nu, sizeof(size_t));
	for (size_t g = 0; t.secs && t.topen && t.done && t.frames && g < b->s.ngroups; g++)
		bench_group(&b->s.groups[g], b->s.elf_mach, b->host->facts->name, &t);
	for (size_t u = 0; t.done && u < t.nu; u++) {
		if (!t.done[u])
			continue;
		char w[48], m[64], tg[32], note[160], x[32];
		double rate = t.secs[u] > 0 ? (double)t.done[u] / t.secs[u] : 0;
		snprintf(w, sizeof(w), "replay %s", t.uws[u]->name);
		snprintf(m, sizeof(m), "%ssamples/s", si(rate, x, sizeof(x)));
		snprintf(tg, sizeof(tg), ">= %ssamples/s", si(t.uws[u]->bench_rate, x, sizeof(x)));
		snprintf(note, sizeof(note), "%.1f frames/sample, state %.2f ms per map set", (double)t.frames[u] / (double)t.done[u],
			 t.topen[u] * 1e3 / (double)(b->s.ngroups ? b->s.ngroups : 1));
		line(w, m, t.uws[u]->bench_rate > 0 ? tg : "-", t.uws[u]->bench_rate > 0 ? rate >= t.uws[u]->bench_rate : -1, note);
	}
	char m[64], x[32];
	snprintf(m, sizeof(m), "%ssamples/s", si(t.tjudge > 0 ? (double)t.judged / t.tjudge : 0, x, sizeof(x)));
	line("judge", m, "-", -1, NULL);
	free(t.secs);
	free(t.topen);
	free(t.done);
	free(t.frames);
}

/* perf.data writing (record --perf-data, the perf column's input): every
 * case's samples written as their own perf.data, as the column writes them
 * (dwarf mode, an 8 KB stack per sample); samples and MB per CPU second. */
static void bench_perfdata(struct bench *b)
{
	const struct uw_arch *a = uw_arch_by_mach((uint16_t)b->s.elf_mach);
	struct hx_toperf_opts o = { .stack_size = 8192 };
	char out[128], m[64], note[160], x[32];
	struct ju_err je;
	if (!a || hx_toperf_abi("6.1", &o.attr_size))
		return;
	snprintf(out, sizeof(out), "%s/bench.data", b->dir);
	size_t n = 0;
	double bytes = 0, c0 = cpu(), w0 = wall();
	for (size_t g = 0; g < b->s.ngroups; g++) {
		if (hx_toperf_write_group(&b->s.groups[g], a, out, &o, &je)) {
			printf("  perf.data write: %s\n", je.msg);
			return;
		}
		struct stat st;
		if (!stat(out, &st))
			bytes += (double)st.st_size;
		n += b->s.groups[g].nsamples;
	}
	double c = cpu() - c0, w = wall() - w0;
	unlink(out);
	snprintf(m, sizeof(m), "%ssamples/s", si(c > 0 ? (double)n / c : 0, x, sizeof(x)));
	snprintf(note, sizeof(note), "%zu samples in %zu files (%.1f ms CPU each: the DSOs' build-ids), %.1f MB, %.3f s wall",
		 n, b->s.ngroups, b->s.ngroups ? c * 1e3 / (double)b->s.ngroups : 0, bytes / 1e6, w);
	line("perf.data write", m, "-", -1, note);
}

/* Spin-point sampling cost: every case captured again with the kernel
 * sampler (3 samples per point, one child per case); the time per point. */
static void bench_kernel(struct bench *b)
{
	struct ju_err je;
	struct hx_kstats ks = { 0 };
	struct hx_kcfg kcfg = HX_KCFG_INIT;
	kcfg.nsamples = 3;
	kcfg.stats = &ks;
	struct hx_batch_run run = { .kcfg = &kcfg };
	struct hx_samples s;
	double t0 = wall();
	int rc = hx_capture_samples(b->batch, b->nb, &s, &run, &je);
	double tk = wall() - t0;
	if (rc) {
		printf("  spin points: %s\n", je.msg);
		return;
	}
	size_t nk = 0;
	const char *skip = NULL;
	for (size_t g = 0; g < s.ngroups; g++) {
		nk += s.groups[g].nkernel;
		if (s.groups[g].kskip && !skip)
			skip = s.groups[g].kskip;
	}
	char m[64], note[200];
	snprintf(m, sizeof(m), "%.2f ms/point", ks.points ? (double)ks.ns / 1e6 / (double)ks.points : 0.0);
	snprintf(note, sizeof(note), "%llu points, %zu kernel samples; capture %.2f s wall vs %.3f s without",
		 (unsigned long long)ks.points, nk, tk, b->cap_wall);
	if (skip)
		printf("  spin points: skipped (%s)\n", skip);
	else
		line("spin points (3 kernel samples)", m, "-", -1, note);
	hx_samples_free(&s);
}

/* `jitunwind run` of the bench's paths as a child: its wall time, its CPU
 * time (children included) and peak RSS.  0, or -1 if it could not run. */
static int run_child(const struct bench *b, const char *unwinders, double *w, double *c, long *rss, int *status)
{
	char *argv[64];
	int n = 0;
	argv[n++] = "jitunwind";
	argv[n++] = "run";
	if (unwinders) {
		argv[n++] = "--unwinders";
		argv[n++] = (char *)unwinders;
	}
	for (int i = 0; i < b->npaths && n < 62; i++)
		argv[n++] = (char *)b->paths[i];
	argv[n] = NULL;
	fflush(NULL);
	double t0 = wall();
	pid_t pid = fork();
	if (pid < 0)
		return ju_errno();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	struct rusage ru;
	int st;
	while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR)
		;
	*w = wall() - t0;
	*c = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	*rss = ru.ru_maxrss;
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return 0;
}

/* The whole run, without the perf column and with it (where a perf works). */
static void bench_run(const struct bench *b)
{
	char list[256], def[256], what[96], m[96], note[300];
	hx_column_list(b->host->facts->name, list, sizeof(list));
	hx_column_defaults(b->host->facts->name, def, sizeof(def));
	double load[1] = { 0 };
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	for (int k = 0; k < 2; k++) {
		bool perf = k == 1;
		if (perf && !strcmp(list, def)) {
			printf("  run with the perf column: skipped (no working perf here: the column is off by default)\n");
			continue;
		}
		double w, c;
		long rss;
		int st;
		if (getloadavg(load, 1) < 1)
			load[0] = 0;
		if (run_child(b, perf ? NULL : list, &w, &c, &rss, &st)) {
			printf("  run: cannot fork\n");
			return;
		}
		snprintf(what, sizeof(what), "run %s%s", b->npaths == 1 ? b->paths[0] : "PATHS", perf ? " +perf" : "");
		snprintf(m, sizeof(m), "%.2f s wall (%.2f s CPU)", w, c);
		int met = w <= BENCH_RUN_S;
		const char *why = perf ? "the perf column runs real perf (perf inject -j, perf script) once per case: most of the figure is perf itself"
			 : !met && c <= BENCH_RUN_S && load[0] > (double)ncpu ? "the machine is loaded: the run's own CPU time is within the target"
			 : "";
		snprintf(note, sizeof(note), "--unwinders %s; peak RSS %.1f MB; load average %.1f on %ld CPUs%s%s%s",
			 perf ? def : list, (double)rss / 1024.0, load[0], ncpu, st > 1 ? "; EXIT " : "",
			 st > 1 ? (st == 77 ? "77" : "non-zero") : "", met ? "" : "");
		line(what, m, "<= 0.4 s wall", met, note);
		if (perf && b->nsamples)
			printf("  %-34s %.2f ms wall per sample over %zu samples (perf inject and perf script per case and dump size)\n",
			       "perf column", w * 1e3 / (double)b->nsamples, b->nsamples);
		if (!met && why[0])
			printf("  %-34s %s\n", "", why);
	}
}

/* `jitunwind fuzz-cfi --cases N --jobs 2` as a child (no minimization): its
 * evaluation rate from its summary's first line, and where the time went. */
static void bench_fuzz(void)
{
	char dir[HX_SCRATCH_PATH], out[HX_SCRATCH_PATH + 16], cmd[1200], l1[1024] = "", l2[1024] = "";
	struct ju_err se;
	if (hx_scratch_mkdtemp(dir, sizeof(dir), "bench-fuzz", &se)) {
		printf("  fuzz-cfi: cannot create its directory: %s\n", se.msg);
		return;
	}
	char self[200];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);   /* system()'s shell is not us */
	self[sl > 0 ? sl : 0] = 0;
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	snprintf(cmd, sizeof(cmd), "'%s' fuzz-cfi --seed 1 --cases %s --jobs 2 --per-signature 0 --out '%s' >'%s' 2>&1",
		 self, BENCH_FUZZ_N, dir, out);
	fflush(NULL);
	int st = system(cmd);
	FILE *f = fopen(out, "r");
	if (f) {
		if (!fgets(l1, sizeof(l1), f) || !fgets(l2, sizeof(l2), f))
			l2[0] = 0;
		fclose(f);
	}
	hx_scratch_remove(dir);    /* a scratch directory left behind is no figure's business */
	double secs = 0, rate = 0, cpu_s = 0, per_cpu = 0;
	unsigned long long n = 0;
	const char *p = strstr(l1, "cases, ");
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1 || !p ||
	    sscanf(strstr(l1, "seed 1, ") ? strstr(l1, "seed 1, ") + 8 : "", "%llu", &n) != 1 ||
	    !strstr(l1, "evaluated in ") || sscanf(strstr(l1, "evaluated in ") + 13, "%lf s: %lf", &secs, &rate) != 2 ||
	    !strstr(l1, "samples/s (") || sscanf(strstr(l1, "samples/s (") + 11, "%lf s CPU: %lf", &cpu_s, &per_cpu) != 2) {
		printf("  fuzz-cfi: did not run (exit %d): %s", WIFEXITED(st) ? WEXITSTATUS(st) : -1, l1[0] ? l1 : "no output\n");
		return;
	}
	char m[64], note[200];
	snprintf(m, sizeof(m), "%.0f cases/s", rate);
	snprintf(note, sizeof(note), "--jobs 2, %llu cases in %.2f s wall; %.0f cases per CPU second (2 cores: at most %.0f/s)",
		 n, secs, per_cpu, 2 * per_cpu);
	line("fuzz-cfi (all unwinders)", m, ">= 1000 cases/s", rate >= BENCH_FUZZ_CASES, note);
	/* the time per case by phase (docs/measurements.md "fuzz-cfi: rate") */
	char *t = strstr(l2, "time per case");
	if (t && rate < BENCH_FUZZ_CASES)
		printf("  %-34s %s", "", t);
}

static void lint_quiet(const struct lint_finding *x, void *arg)
{
	(void)x;
	(void)arg;
}

/* lint over a dump (findings counted, not printed): throughput per CPU second. */
static void bench_lint(const char *path)
{
	struct lint_opts o = { .profile = PV_CURRENT, .name = path, .max_per_rule = 20, .stack_size = 8192 };
	struct lint_summary sum;
	struct ju_err err;
	char m[64], note[128];
	double c0 = cpu(), t0 = wall();
	int rc = lint_file(path, &o, lint_quiet, NULL, &sum, &err);
	double c = cpu() - c0, w = wall() - t0;
	if (rc && sum.unreadable) {
		printf("  lint: %s\n", err.msg);
		return;
	}
	double mbs = c > 0 ? (double)sum.bytes / c / 1e6 : 0;
	snprintf(m, sizeof(m), "%.0f MB/s", mbs);
	snprintf(note, sizeof(note), "%.1f MB, %llu loads in %.2f s CPU (%.2f s wall)", (double)sum.bytes / 1e6,
		 (unsigned long long)sum.loads, c, w);
	line("lint", m, ">= 300 MB/s", mbs >= BENCH_LINT_MBS, note);
	if (mbs < BENCH_LINT_MBS && sum.loads)
		printf("  %-34s %.2f us per load: every load's code is decoded and its FDEs' CFA programs run\n", "",
		       c * 1e6 / (double)sum.loads);
}

int hx_bench_run(const struct hx_bench_opts *o, struct hx_cmd_outcome *out)
{
	*out = (struct hx_cmd_outcome){ .kind = HX_CMD_CLEAN };
	struct bench b = { .host = tr_arch_host() };
	const char *lint = o->lint;
	bool run = !o->no_run, fuzz = !o->no_fuzz;
	char defp[64];
	const char *def[1] = { defp };
	snprintf(defp, sizeof(defp), "cases/%s", b.host ? b.host->facts->name : "unknown");
	b.paths = o->npaths ? (const char *const *)o->paths : def;
	b.npaths = o->npaths ? o->npaths : 1;
	if (!b.host || bench_load(&b) || (printf("jitunwind bench (%s%s): figure, target, met\n", b.paths[0], b.npaths > 1 ? ", ..." : ""),
					    bench_capture(&b)))
		return -EINVAL;
	bench_replay(&b);
	bench_perfdata(&b);
	bench_kernel(&b);
	if (run)
		bench_run(&b);
	if (fuzz)
		bench_fuzz();
	if (lint)
		bench_lint(lint);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("  peak RSS of the bench: %.1f MB\n", (double)ru.ru_maxrss / 1024.0);
	hx_samples_free(&b.s);
	hx_batch_dirs_free(b.batch, b.nb);
	if (b.tmp)
		hx_batch_dirs_free(b.tmp, b.nb);
	free(b.tmp);
	for (size_t k = 0; k < b.nb; k++)
		hx_case_free(&b.cases[k]);
	free(b.cases);
	free(b.batch);
	int rc = hx_scratch_remove(b.dir) | hx_scratch_remove(b.tmpdir);
	for (int k = 0; k < b.nf; k++)
		free(b.files[k]);
	free(b.files);
	return rc ? -EIO : 0;
}
