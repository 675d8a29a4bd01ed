/* jitunwind perf-check: `perf record` end to end at every sample point.
 *
 * Per mode (--call-graph dwarf, then fp): perf records `jitunwind record
 * --spin-points` over the cases (cpu-clock, user only), the capture child
 * spinning at each sample point for a budget of its own CPU time
 * (JU_SPIN_CPU_US, harness/capture/spin.c), so perf's timer samples it there with
 * the exact state of the breakpoint sample written for that point.  Then
 * `perf inject -j` and `perf script` give perf's chains; each perf sample of
 * a case's process goes to its spin point by pc, in time order; its chain is
 * judged against the point's truth and compared, as perf prints it, with
 * jitunwind's emulation of that perf replayed on the breakpoint sample (the
 * perf build's DWARF engine in dwarf mode, `fp` in fp mode). */
#include "harness/realperf/perfcheck.h"
#include "harness/case/case.h"
#include "harness/case/say.h"
#include "harness/case/jsonw.h"
#include "harness/case/judge.h"
#include "harness/run/perfrun.h"
#include "harness/run/perfcol.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "trampolines/tramp.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"

#include <errno.h>
#include <glob.h>
#include <libgen.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness/realperf/perfcheck_int.h"

static double pk_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every case must load (else -EINVAL before perf runs); another arch's is refused. */
static int check_cases(const struct pk_opts *o, const char *arch)
{
	char def[64], **paths = NULL;
	struct ju_err err;
	const char *defp[1] = { def };
	snprintf(def, sizeof(def), "cases/%s", arch);
	int n = 0, rc = 0;
	if (hx_case_glob(o->npaths ? (const char *const *)o->paths : defp, o->npaths ? o->npaths : 1,
			 &paths, &n, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind perf-check", "%s", err.msg);
		rc = -EINVAL;
	} else if (!n) {
		ju_say(JU_SAY_ERROR, "jitunwind perf-check", "no .case files found");
		rc = -EINVAL;
	}
	struct hx_case *cs = calloc(n ? (size_t)n : 1, sizeof(*cs));
	int loaded = 0;
	for (int i = 0; i < n && cs && !rc; i++) {
		if (hx_case_load(&cs[i], paths[i], &err)) {
			ju_say(JU_SAY_ERROR, "jitunwind perf-check", "%s", err.msg);
			rc = -EINVAL;
			break;
		}
		loaded++;
		if (strcmp(cs[i].arch, arch)) {
			ju_say(JU_SAY_ERROR, "jitunwind perf-check", "%s: case arch %s cannot run on this %s host", paths[i],
				cs[i].arch, arch);
			rc = -EINVAL;
		}
	}
	/* two cases of one name would be one case in the report */
	if (!rc && cs && hx_case_unique(cs, loaded, &err)) {
		ju_say(JU_SAY_ERROR, "jitunwind perf-check", "%s", err.msg);
		rc = -EINVAL;
	}
	for (int i = 0; i < loaded; i++)
		hx_case_free(&cs[i]);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(cs);
	free(paths);
	return cs || rc ? rc : -ENOMEM;
}

int hx_perf_event_probe(void)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 100000;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

/* perf_event_open as perf record will ask for it: refused is a skip */
static int probe_event(char *why, size_t wl)
{
	int e = hx_perf_event_probe();
	if (!e)
		return 0;
	snprintf(why, wl, "perf_event_open refused a cpu-clock event: %s%s", strerror(e),
		 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid)" :
		 e == ENOSYS ? " (no perf events here, e.g. under qemu-user)" : "");
	return -e;
}

/* perf record of `jitunwind record --spin-points` over the paths, one mode */
static int pk_record(struct pk *k, struct pk_run *r, const char *data, const char *smp)
{
	const struct pk_opts *o = &k->o;
	char cg[32], period[32], spin[48], out[128];
	if (r->mode == PK_DWARF)
		snprintf(cg, sizeof(cg), "dwarf,%d", o->stack_size);
	else
		snprintf(cg, sizeof(cg), "fp");
	snprintf(period, sizeof(period), "%d", o->period_us * 1000);
	snprintf(spin, sizeof(spin), "JU_SPIN_CPU_US=%d", o->spin_us);
	snprintf(out, sizeof(out), "%s/%s%d.record.txt", k->dir, pk_mode_names[r->mode], r->attempt);
	/* -k 1: jitdump timestamps are CLOCK_MONOTONIC; cpu-clock:u: user-mode
	 * samples only, as the harness's own sampler; no BPF side band (its
	 * thread keeps perf waiting a second at exit) */
	const char *fixed[] = { "record", "-k", "1", "-e", "cpu-clock:u", "-c", period, "--call-graph", cg,
				"--no-bpf-event", "-m", "1024", "-o", data, "--", k->self, "record",
				"--spin-points", "--unwinders", "fp", "-o", smp, "--jitdump-dir", o->dump_dir };
	size_t nf = sizeof(fixed) / sizeof(fixed[0]);
	const char **args = calloc(nf + (size_t)r->npaths + 1, sizeof(*args));
	if (!args) {
		snprintf(r->why, sizeof(r->why), "out of memory");
		return -ENOMEM;
	}
	memcpy(args, fixed, sizeof(fixed));
	for (int i = 0; i < r->npaths; i++)
		args[nf + (size_t)i] = r->paths[i];
	const char *env[] = { spin, NULL };
	int rc = hx_perf_run(k->dir, args, env, out, r->why, sizeof(r->why));
	free(args);
	return rc;
}

/* "Processed N events and lost M chunks!": a point may then have no sample */
static void pk_lost(const struct pk *k, struct pk_run *r)
{
	char path[128];
	size_t n;
	snprintf(path, sizeof(path), "%s/record.stderr", k->dir);
	char *t = hx_slurp(path, &n);
	char *l = t ? strstr(t, " lost ") : NULL;
	if (l) {
		while (l > t && l[-1] != '\n')
			l--;
		char *e = strchr(l, '\n');
		snprintf(r->lost, sizeof(r->lost), "%.*s", (int)(e ? e - l : (long)strlen(l)), l);
	}
	free(t);
}

/* perf script's symbols: of the frames it prints in jitted .so files
 * ("ADDR SYM (DSO)"), how many have a name ([unknown]: none) */
static int pk_names(struct pk *k, struct pk_run *r, const char *jit)
{
	char out[128];
	snprintf(out, sizeof(out), "%s/%s%d.names.txt", k->dir, pk_mode_names[r->mode], r->attempt);
	const char *scr[] = { "script", "-i", jit, "-F", "ip,sym,dso", "--no-inline", NULL };
	int rc = hx_perf_run(k->dir, scr, NULL, out, r->why, sizeof(r->why));
	if (rc)
		return rc;
	size_t n;
	char *text = hx_slurp(out, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", out, strerror(errno));
		return ju_errno();
	}
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char sym[256], *d = strrchr(l, '(');
		unsigned long long ip;
		if (!d || !strstr(d, "/jitted-") || sscanf(l, " %llx %255s", &ip, sym) != 2)
			continue;
		r->jit_frames++;
		r->jit_named += sym[0] != '(' && strcmp(sym, "[unknown]") != 0;
	}
	free(text);
	return 0;
}

/* record, inject, script; the samples file and perf's chains into r */
static int pk_perf(struct pk *k, struct pk_run *r)
{
	const char *m = pk_mode_names[r->mode];
	char data[128], jit[128], smp[128], script[128], out[128], err[1024];
	int a = r->attempt;
	snprintf(data, sizeof(data), "%s/%s%d.data", k->dir, m, a);
	snprintf(jit, sizeof(jit), "%s/%s%d.jit.data", k->dir, m, a);
	snprintf(smp, sizeof(smp), "%s/%s%d.samples", k->dir, m, a);
	snprintf(script, sizeof(script), "%s/%s%d.script.txt", k->dir, m, a);
	snprintf(out, sizeof(out), "%s/%s%d.inject.txt", k->dir, m, a);
	int rc = pk_record(k, r, data, smp);
	if (rc)
		return rc;
	pk_lost(k, r);
	const char *inj[] = { "inject", "-j", "-i", data, "-o", jit, NULL };
	const char *scr[] = { "script", "-i", jit, "-F", "pid,time,ip,dso", "--ns", "--no-inline",
			      "--show-mmap-events", NULL };
	if ((rc = hx_perf_run(k->dir, inj, NULL, out, r->why, sizeof(r->why))) ||
	    (rc = hx_perf_run(k->dir, scr, NULL, script, r->why, sizeof(r->why))) ||
	    (k->o.names && (rc = pk_names(k, r, jit))))
		return rc;
	if (hx_samples_read(&r->smp, smp, err, sizeof(err))) {
		snprintf(r->why, sizeof(r->why), "%s", err);
		return -EINVAL;
	}
	r->have_smp = true;
	size_t n;
	char *text = hx_slurp(script, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", script, strerror(errno));
		return ju_errno();
	}
	rc = hx_ps_parse(&r->ps, text);
	free(text);
	if (rc) {
		snprintf(r->why, sizeof(r->why), "out of memory reading perf script's output");
		return -ENOMEM;
	}
	return 0;
}

/* perf's printed frame f back to a return address, for the verdict: as the
 * emulation's frame there when that is an activation with this value */
static uint64_t return_of(enum pk_mode m, const struct uw_result *e, const struct hx_ps_sample *p, int f)
{
	uint64_t v = p->addr[f];
	if (f == 0 || m == PK_FP || (f < e->n && (e->flags[f] & UW_F_ACTIVATION) && e->addr[f] == v))
		return v;
	return v + 1;   /* a zero return address was printed as -1 */
}

/* perf's printed chain against the emulation's, down to the anchor's return
 * address (the whole chain where the emulation stops before it) */
static bool pk_agrees(enum pk_mode m, const struct hx_sample_res *sr, const struct uw_result *e,
		      const struct hx_ps_sample *p, int *frame, char *why, size_t wl)
{
	int len = e->n;
	bool whole = true;
	for (int f = 0; f < e->n; f++)
		if (sr->nt && e->addr[f] == sr->truth[sr->nt - 1]) {
			len = f + 1;
			whole = false;
			break;
		}
	for (int f = 0; f < len; f++) {
		*frame = f;
		if (f >= p->n) {
			snprintf(why, wl, "perf's chain ends after %d frame(s)%s; the emulation's goes on to 0x%llx",
				 p->n, p->unplaced ? " (a frame no mapping holds was left out)" : "",
				 (unsigned long long)printed_of(m, e, f));
			return false;
		}
		if (p->addr[f] != printed_of(m, e, f)) {
			snprintf(why, wl, "frame %d: perf printed 0x%llx, the emulation predicts 0x%llx", f,
				 (unsigned long long)p->addr[f], (unsigned long long)printed_of(m, e, f));
			return false;
		}
	}
	*frame = len;
	if (whole && p->n != e->n) {
		snprintf(why, wl, "perf's chain has %d frame(s); the emulation's ends after %d (%s%s%s)", p->n,
			 e->n, uw_stop_name(e->stop), e->why[0] ? ": " : "", e->why);
		return false;
	}
	return true;
}

static int pk_add_dis(struct pk_case *kc, const struct pk_dis *d)
{
	if (kc->ndis == kc->capdis) {
		size_t cap = kc->capdis ? kc->capdis * 2 : 8;
		struct pk_dis *n = realloc(kc->dis, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		kc->dis = n;
		kc->capdis = cap;
	}
	kc->dis[kc->ndis++] = *d;
	return 0;
}

/* Frames past the anchor are no verdict's business, but equal whole chains
 * say the emulation also models what perf does below it (reported only). */
static bool whole_equal(enum pk_mode m, const struct uw_result *e, const struct hx_ps_sample *p)
{
	if (p->n != e->n)
		return false;
	for (int f = 0; f < p->n; f++)
		if (p->addr[f] != printed_of(m, e, f))
			return false;
	return true;
}

/* One perf sample at spin point j: its verdict, agreement, a disagreement's record. */
static int pk_judge(struct pk_case *kc, enum pk_mode m, size_t j, const struct hx_ps_sample *p)
{
	struct pk_point *pt = &kc->pts[j];
	const struct hx_sample_res *sr = pt->sr;
	const struct uw_result *e = &sr->uw[0].r;
	uint64_t ret[UW_MAX_FRAMES];
	for (int f = 0; f < p->n; f++)
		ret[f] = return_of(m, e, p, f);
	struct hx_judgement jd;
	hx_judge(sr->truth, sr->nt, ret, p->n, &jd);
	kc->perf_v[jd.v]++;
	pt->ok += jd.v == HX_OK;
	kc->emu_v[sr->uw[0].j.v]++;
	if (!pt->samples++)
		kc->sampled++;
	kc->samples++;
	kc->whole += whole_equal(m, e, p);
	struct pk_dis d = { .point = j, .time = p->time, .perf_v = jd.v, .n = p->n };
	if (pk_agrees(m, sr, e, p, &d.frame, d.why, sizeof(d.why))) {
		pt->agree++;
		kc->agree++;
		return 0;
	}
	memcpy(d.printed, p->addr, sizeof(uint64_t) * (size_t)p->n);
	return pk_add_dis(kc, &d);
}

/* perf's samples of the case's process, in time order, to their spin points:
 * the first point at or after the last one matched whose pc is the sample's
 * ip (the child visits each point once, in the samples file's order) */
static int pk_match(struct pk_case *kc, enum pk_mode m, const struct hx_ps *ps)
{
	size_t cur = 0;
	for (size_t i = 0; i < ps->n; i++) {
		const struct hx_ps_sample *p = &ps->s[i];
		if (p->pid != kc->pid || p->n == 0)
			continue;
		size_t j = cur;
		while (j < kc->npts && kc->pts[j].pc != p->addr[0])
			j++;
		if (j == kc->npts) {
			kc->outside++;
			continue;
		}
		cur = j;
		if (pk_judge(kc, m, j, p))
			return -ENOMEM;
	}
	return 0;
}

/* the case's pid: its jitdump is DIR/jit-<pid>.dump */
static uint32_t dump_pid(const char *path)
{
	const char *b = path ? strrchr(path, '/') : NULL;
	unsigned pid = 0;
	if (!b || sscanf(b, "/jit-%u.dump", &pid) != 1)
		return 0;
	return pid;
}

/* The emulation on every breakpoint sample of the group, then perf's samples. */
static int pk_case_run(struct pk *k, struct pk_run *r, const struct hx_group *g, struct pk_case *kc)
{
	char err[1024], dir[4096];
	snprintf(kc->name, sizeof(kc->name), "%s", g->case_path ? g->case_path : "?");
	kc->file = g->case_path;
	kc->pid = dump_pid(g->dump_path);
	snprintf(dir, sizeof(dir), "%s", g->dump_path ? g->dump_path : ".");
	struct hx_opts ho = { .unwinders = { r->emu }, .nuw = 1, .stack_size = k->o.stack_size,
			      .profile = k->profile, .profile_set = true, .perf_dump_dir = dirname(dir) };
	if (hx_replay_group(g, r->smp.elf_mach, &ho, &kc->res, err, sizeof(err))) {
		snprintf(kc->problem, sizeof(kc->problem), "%s", err);
		return 0;
	}
	kc->have_res = true;
	snprintf(kc->name, sizeof(kc->name), "%s", kc->res.name);
	/* a capture problem (a crash, a spin whose state was not the breakpoint's) */
	if (g->error || g->crashed || !g->ended)
		snprintf(kc->problem, sizeof(kc->problem), "%s", kc->res.problem);
	if (!kc->pid)
		snprintf(kc->problem, sizeof(kc->problem), "no jitdump named jit-<pid>.dump in the capture");
	kc->npts = kc->res.nsamples;
	kc->pts = calloc(kc->npts ? kc->npts : 1, sizeof(*kc->pts));
	if (!kc->pts)
		return -ENOMEM;
	for (size_t i = 0; i < kc->npts; i++) {
		kc->pts[i].sr = &kc->res.samples[i];
		kc->pts[i].pc = kc->res.samples[i].truth[0];
	}
	if (pk_match(kc, r->mode, &r->ps))
		return -ENOMEM;
	for (size_t i = 0; i < kc->npts; i++)
		kc->points_agree += kc->pts[i].samples && kc->pts[i].agree == kc->pts[i].samples;
	return 0;
}

static void pk_totals(const struct pk *k, struct pk_run *r)
{
	r->points = r->sampled = r->samples = r->agree = r->points_agree = r->whole = 0;
	bool problems = false;
	for (size_t i = 0; i < r->ncases; i++) {
		const struct pk_case *kc = &r->cases[i];
		r->points += kc->npts;
		r->sampled += kc->sampled;
		r->samples += kc->samples;
		r->agree += kc->agree;
		r->points_agree += kc->points_agree;
		r->whole += kc->whole;
		problems |= kc->problem[0] != 0;
	}
	/* a point is one state, its samples repeated measurements of it */
	r->pass = !r->why[0] && !problems && r->points && r->sampled == r->points &&
		  100.0 * (double)r->points_agree / (double)r->points >= k->o.min_agree;
}

/* One attempt: perf's steps, then every case of the samples file. */
static int pk_attempt(struct pk *k, struct pk_run *r)
{
	const char *engine = k->o.emulation ? k->o.emulation : k->perf->engine;
	r->emu = r->mode == PK_DWARF ? engine : pk_fp_emulation;
	if (pk_perf(k, r))
		return 0;
	r->cases = calloc(r->smp.ngroups ? r->smp.ngroups : 1, sizeof(*r->cases));
	if (!r->cases)
		return -ENOMEM;
	for (size_t i = 0; i < r->smp.ngroups; i++)
		if (pk_case_run(k, r, &r->smp.groups[i], &r->cases[r->ncases++]))
			return -ENOMEM;
	return 0;
}

/* A case a point of which perf never sampled (a busy machine: the point's
 * samples all landed elsewhere, or were lost) is recorded again, in a new
 * process, up to PK_RETRIES times; its new capture replaces the old one if
 * it has no such point.  Each attempt hangs off the previous one. */
static int pk_retry(struct pk *k, struct pk_run *top)
{
	struct pk_run *last = top;
	for (int a = 1; a <= PK_RETRIES; a++) {
		const char **paths = calloc(top->ncases ? top->ncases : 1, sizeof(*paths));
		int n = 0;
		if (!paths)
			return -ENOMEM;
		for (size_t i = 0; i < top->ncases; i++)
			if (!top->cases[i].problem[0] && top->cases[i].sampled < top->cases[i].npts && top->cases[i].file)
				paths[n++] = top->cases[i].file;
		if (!n || !(last->retry = calloc(1, sizeof(*last->retry)))) {
			free(paths);
			return n ? -ENOMEM : 0;
		}
		struct pk_run *x = last = last->retry;
		*x = (struct pk_run){ .mode = top->mode, .attempt = a, .paths = paths, .npaths = n };
		top->recorded_again += (size_t)n;
		if (pk_attempt(k, x))
			return -ENOMEM;
		for (size_t i = 0; i < x->ncases; i++) {
			struct pk_case *nc = &x->cases[i];
			for (size_t j = 0; j < top->ncases && !nc->problem[0] && nc->sampled == nc->npts; j++) {
				struct pk_case *oc = &top->cases[j];
				if (strcmp(oc->name, nc->name))
					continue;
				struct pk_case t = *oc;   /* the old one stays with x, freed with it */
				*oc = *nc;
				*nc = t;
				top->retried++;
				break;
			}
		}
	}
	return 0;
}

/* One mode: an attempt over the paths, retries of unsampled cases, totals. */
static int pk_mode_run(struct pk *k, struct pk_run *r)
{
	double t0 = pk_now();
	r->paths = (const char *const *)k->o.paths;
	r->npaths = k->o.npaths;
	int rc = pk_attempt(k, r);
	if (!rc && !r->why[0])
		rc = pk_retry(k, r);
	pk_totals(k, r);
	r->seconds = pk_now() - t0;
	return rc;
}

static void remove_jit_files(const struct pk_run *r)
{
	for (size_t i = 0; i < r->smp.ngroups; i++) {
		const char *dump = r->smp.groups[i].dump_path;
		uint32_t pid = dump_pid(dump);
		if (!pid)
			continue;
		char dir[4096], pat[4200];
		snprintf(dir, sizeof(dir), "%s", dump);
		char *d = dirname(dir);
		unlink(dump);
		snprintf(pat, sizeof(pat), "%s/perf-%u.map", d, pid);
		unlink(pat);
		snprintf(pat, sizeof(pat), "%s/jitted-%u-*.so", d, pid);
		glob_t gl;
		if (glob(pat, 0, NULL, &gl) == 0)
			for (size_t k = 0; k < gl.gl_pathc; k++)
				unlink(gl.gl_pathv[k]);
		globfree(&gl);
	}
}

static void run_free(struct pk_run *r)
{
	for (size_t c = 0; c < r->ncases; c++) {
		struct pk_case *kc = &r->cases[c];
		if (kc->have_res)
			hx_case_res_free(&kc->res);
		free(kc->pts);
		free(kc->dis);
	}
	free(r->cases);
	if (r->have_smp) {
		if (!getenv("JU_PERF_KEEP"))
			remove_jit_files(r);
		hx_samples_free(&r->smp);
	}
	hx_ps_free(&r->ps);
	if (r->attempt)
		free((void *)r->paths);
	if (r->retry) {
		run_free(r->retry);
		free(r->retry);
	}
}

static void pk_free(struct pk *k)
{
	for (int i = 0; i < k->nruns; i++)
		run_free(&k->runs[i]);
	if (k->dir[0] && getenv("JU_PERF_KEEP"))
		printf("perf-check: kept %s\n", k->dir);
	hx_perf_workdir_remove(k->dir);
	free(k);
}

/* What must hold before perf runs: cases load, perf runs, events open. */
static int pk_setup(struct pk *k, const struct pk_opts *o, struct hx_cmd_outcome *out)
{
	char *skip = out->reason;
	size_t sl = sizeof(out->reason);
	int rc;
	k->o = *o;
	if (o->perf_cmd)
		hx_perf_set_cmd(o->perf_cmd);
	const char *arch = tr_arch_host() ? tr_arch_host()->facts->name : "unknown";
	if ((rc = check_cases(&k->o, arch)))
		return rc;
	if (hx_perf_probe(&k->perf, skip, sl) || probe_event(skip, sl)) {
		out->kind = HX_CMD_CANNOT_RUN;
		return 0;
	}
	ssize_t n = readlink("/proc/self/exe", k->self, sizeof(k->self) - 1);
	if (n <= 0) {
		int e = errno;
		ju_say(JU_SAY_ERROR, "jitunwind perf-check", "/proc/self/exe: %s", strerror(e));
		return -e;
	}
	k->self[n] = 0;
	k->profile = k->o.profile_set ? k->o.profile : k->perf->major < 6 ? PV_5X_0X40 : PV_CURRENT;
	struct ju_err je;
	if (hx_perf_workdir(k->dir, sizeof(k->dir), "perfcheck", &je)) {
		ju_say(JU_SAY_ERROR, "jitunwind perf-check", "%s", je.msg);
		return -EIO;
	}
	return 0;
}

int hx_perfcheck_run(const struct pk_opts *o, struct hx_cmd_outcome *out)
{
	double t0 = pk_now();
	*out = (struct hx_cmd_outcome){ .kind = HX_CMD_CLEAN };
	struct pk *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	int rc = pk_setup(k, o, out);
	if (!rc && out->kind == HX_CMD_CANNOT_RUN)
		printf("jitunwind perf-check: skip: %s\n", out->reason);
	if (rc || out->kind == HX_CMD_CANNOT_RUN) {
		pk_free(k);
		return rc;
	}
	printf("perf-check: perf %s ('%s', DWARF engine %s); cpu-clock every %d us, %d us of CPU per spin point\n",
	       k->perf->version, hx_perf_cmd(), k->perf->engine, k->o.period_us, k->o.spin_us);
	bool pass = true;
	for (int m = 0; m < PK_NMODES; m++) {
		if (!k->o.mode_on[m])
			continue;
		struct pk_run *r = &k->runs[k->nruns++];
		r->mode = (enum pk_mode)m;
		if (pk_mode_run(k, r)) {
			ju_say(JU_SAY_ERROR, "jitunwind perf-check", "out of memory");
			pk_free(k);
			return -ENOMEM;
		}
		pk_print_mode(k, r);
		pass &= r->pass;
	}
	k->seconds = pk_now() - t0;
	printf("\nperf-check: %s (%.1f s)\n", pass ? "pass" : "FAIL", k->seconds);
	if (k->o.json && (rc = pk_write_json(k, k->o.json, pass))) {
		ju_say(JU_SAY_ERROR, "jitunwind perf-check", "cannot write %s: %s", k->o.json, strerror(-rc));
		pk_free(k);
		return rc;
	}
	pk_free(k);
	out->kind = pass ? HX_CMD_CLEAN : HX_CMD_FINDINGS;
	return 0;
}

/* One mode's run of the one case into the probe's summary. */
static void pk_summary(const struct pk_run *r, struct hx_pk_probe *p)
{
	snprintf(p->emulation, sizeof(p->emulation), "%s", r->emu ? r->emu : "?");
	snprintf(p->why, sizeof(p->why), "%s", r->why);
	p->jit_frames = r->jit_frames;
	p->jit_named = r->jit_named;
	for (size_t i = 0; i < r->ps.nmaps; i++) {
		bool jitted = strstr(r->ps.maps[i].dso, "/jitted-") != NULL;
		p->jit_maps += jitted;
		/* the files are still there: run_free removes them */
		if (jitted && !p->layout[0])
			hx_perfcol_layout_profile(r->ps.maps[i].dso, p->layout, sizeof(p->layout));
	}
	for (size_t c = 0; c < r->ncases; c++) {
		const struct pk_case *kc = &r->cases[c];
		if (kc->problem[0] && !p->problem[0])
			snprintf(p->problem, sizeof(p->problem), "%s", kc->problem);
		p->points += kc->npts;
		p->sampled += kc->sampled;
		p->samples += kc->samples;
		p->agree += kc->agree;
		p->elsewhere += kc->outside;
		for (size_t i = 0; i < kc->npts; i++) {
			const struct pk_point *pt = &kc->pts[i];
			bool callee = !strcmp(pt->sr->where, "callee");
			bool ok = pt->samples && pt->ok == pt->samples;
			bool emu_ok = pt->sr->uw[0].j.v == HX_OK;
			if (!pt->samples)
				continue;
			p->ok_points += ok;
			p->emu_ok_points += emu_ok;
			p->anchor_points += callee;
			p->anchor_ok += callee && ok;
			p->anchor_emu_ok += callee && emu_ok;
		}
	}
}

int hx_perfcheck_probe(const char *case_path, const char *dump_dir, const char *mode, struct hx_pk_probe *out,
		       char *why, size_t wl)
{
	memset(out, 0, sizeof(*out));
	struct pk *k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	struct pk_opts o = PK_OPTS_DEFAULTS;
	char *paths[] = { (char *)case_path };
	bool fp = !strcmp(mode, pk_mode_names[PK_FP]);
	o.mode_on[PK_DWARF] = !fp;
	o.mode_on[PK_FP] = fp;
	o.dump_dir = dump_dir;
	o.paths = paths;
	o.npaths = 1;
	struct hx_cmd_outcome setup = { .kind = HX_CMD_CLEAN };
	int rc = pk_setup(k, &o, &setup);
	if (rc || setup.kind == HX_CMD_CANNOT_RUN) {
		if (rc)
			snprintf(why, wl, "perf-check could not start on %s (%s)", case_path, strerror(-rc));
		else
			snprintf(why, wl, "%s", setup.reason);
		pk_free(k);
		return rc ? rc : HX_CMD_CANNOT_RUN;
	}
	k->o.names = true;
	struct pk_run *r = &k->runs[k->nruns++];
	r->mode = k->o.mode_on[PK_DWARF] ? PK_DWARF : PK_FP;
	if (pk_mode_run(k, r)) {
		pk_free(k);
		return -ENOMEM;
	}
	snprintf(out->version, sizeof(out->version), "%s", k->perf->version);
	snprintf(out->profile, sizeof(out->profile), "%s", pv_profile_name(k->profile));
	pk_summary(r, out);
	pk_free(k);
	return 0;
}
