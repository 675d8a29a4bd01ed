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
#include "harness/run/case.h"
#include "harness/report/jsonw.h"
#include "harness/run/judge.h"
#include "harness/realperf/perfrun.h"
#include "harness/realperf/perfcol.h"
#include "harness/run/runner.h"
#include "harness/capture/samples.h"
#include "trampolines/tramp.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"

#include <errno.h>
#include <getopt.h>
#include <glob.h>
#include <libgen.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum pk_mode { PK_DWARF, PK_FP, PK_NMODES };
/* perf's --call-graph modes; fp mode's chain is the kernel's walk, which the
 * `fp` unwinder emulates (dwarf mode's emulation is the perf build's engine) */
static const char *const pk_mode_names[] = { "dwarf", "fp" };
static const char *const pk_fp_emulation = "fp";

struct pk_opts {
	const char *json;
	bool mode_on[PK_NMODES];
	int stack_size, spin_us, period_us;
	double min_agree;
	bool profile_set;
	enum pv_profile profile;
	const char *emulation;          /* dwarf mode's emulation, when not the perf build's engine */
	const char *dump_dir;           /* where the jitdumps go (perf inject writes the .so files there) */
	bool names;                     /* also read the symbols perf script prints for JIT frames (doctor) */
	char **paths;
	int npaths;
};

struct pk_point {
	const struct hx_sample_res *sr; /* the replay: where, truth, the emulation's chain */
	uint64_t pc;
	int samples, agree;
	int ok;                         /* samples whose perf chain reached the anchor (verdict ok) */
};

struct pk_dis {                     /* one perf sample that disagrees with the emulation */
	size_t point;
	uint64_t time;
	int frame;                      /* first frame that differs */
	enum hx_verdict perf_v;
	int n;
	uint64_t printed[UW_MAX_FRAMES];
	char why[320];
};

struct pk_case {
	char name[64];
	const char *file;
	uint32_t pid;
	struct hx_case_res res;
	bool have_res;
	struct pk_point *pts;
	size_t npts;
	struct pk_dis *dis;
	size_t ndis, capdis;
	size_t samples, agree, sampled, outside;
	size_t points_agree;            /* points where every perf sample agrees */
	size_t whole;                   /* samples whose whole chain, past the anchor too, agrees */
	int perf_v[6], emu_v[6];
	char problem[512];
};

#define PK_RETRIES 2                /* more records of a case a point of which got no sample */

struct pk_run {                     /* one mode (one attempt of it) */
	enum pk_mode mode;
	int attempt;                    /* 0, then the retries of cases left unsampled */
	const char *const *paths;       /* what the workload records (none: its default) */
	int npaths;
	struct pk_run *retry;           /* the next attempt, whose cases replaced some of these */
	size_t recorded_again;          /* cases recorded again, over all retries */
	size_t retried;                 /* cases taken from retries */
	const char *emu;
	char why[600];                  /* the mode did not run to the end: why */
	char lost[200];                 /* perf record's word on lost events, if any */
	struct hx_samples smp;
	bool have_smp;
	struct hx_ps ps;
	size_t jit_frames, jit_named;   /* with o.names: frames in jitted .so files perf script printed, named */
	struct pk_case *cases;
	size_t ncases;
	size_t points, sampled, samples, agree, points_agree, whole;
	double seconds;
	bool pass;
};

struct pk {
	struct pk_opts o;
	const struct hx_perf_build *perf;
	enum pv_profile profile;
	char dir[64];
	char self[4096];
	struct pk_run runs[PK_NMODES];
	int nruns;
	double seconds;
};

static double pk_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jitunwind perf-check [--json FILE] [--perf CMD] [--modes dwarf,fp] [--stack-size N]\n"
		"                            [--spin-us N] [--period-us N] [--min-agreement PCT]\n"
		"                            [--perf-profile P] [--emulation U] [--jitdump-dir DIR] [PATH...]\n"
		"  perf record the cases (default cases/<host arch>) while the capture spins at every sample\n"
		"  point, in --call-graph dwarf and fp mode; perf inject -j, perf script; judge every perf\n"
		"  sample at a spin point against the truth and against jitunwind's emulation of that perf.\n"
		"  --json FILE          write the report as JSON\n"
		"  --perf CMD           the perf to run (default perf on PATH)\n"
		"  --modes LIST         dwarf, fp or both (default dwarf,fp)\n"
		"  --stack-size N       DWARF dump size (perf --call-graph dwarf,N; default 8192)\n"
		"  --spin-us N          CPU time the child spins at each point (default 500)\n"
		"  --period-us N        cpu-clock sample period (default 100)\n"
		"  --min-agreement PCT  agreement with the emulation each mode needs (default 99)\n"
		"  --perf-profile P     the emulation's perf profile (default: current for perf >= 6, else 5.x-0x40)\n"
		"  --emulation U        dwarf mode's emulation (default: the perf build's engine, libunwind or libdw)\n"
		"  --jitdump-dir DIR    where the cases write their jitdumps (default /tmp, as CPython)\n"
		"exit: 0 every point sampled and agreement reached, 1 not, 2 bad usage or input,\n"
		"      77 no perf or perf_event_open refused\n");
}

static int parse_int(const char *opt, const char *v, int lo, int hi, int mult, int *out)
{
	char *end;
	long x = strtol(v, &end, 10);
	if (*end || x < lo || x > hi || x % mult) {
		fprintf(stderr, "jitunwind perf-check: %s %s: expected %s%d..%d\n", opt, v,
			mult > 1 ? "a multiple of 8 in " : "", lo, hi);
		return -1;
	}
	*out = (int)x;
	return 0;
}

static int parse_modes(struct pk_opts *o, const char *list)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%s", list);
	o->mode_on[PK_DWARF] = o->mode_on[PK_FP] = false;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int m = PK_NMODES;
		while (m > 0 && strcmp(t, pk_mode_names[m - 1]))
			m--;
		m--;
		if (m < 0) {
			fprintf(stderr, "jitunwind perf-check: --modes %s: expected dwarf, fp or dwarf,fp\n", list);
			return -1;
		}
		o->mode_on[m] = true;
	}
	return o->mode_on[PK_DWARF] || o->mode_on[PK_FP] ? 0 : -1;
}

/* 0, 1 help printed, 2 usage error */
static int parse_opts(int argc, char **argv, struct pk_opts *o)
{
	static const struct option lo[] = {
		{ "json", required_argument, 0, 'j' }, { "perf", required_argument, 0, 'f' },
		{ "modes", required_argument, 0, 'm' }, { "stack-size", required_argument, 0, 's' },
		{ "spin-us", required_argument, 0, 'S' }, { "period-us", required_argument, 0, 'p' },
		{ "min-agreement", required_argument, 0, 'a' }, { "perf-profile", required_argument, 0, 'P' },
		{ "emulation", required_argument, 0, 'e' }, { "jitdump-dir", required_argument, 0, 'd' },
		{ "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 },
	};
	*o = (struct pk_opts){ .mode_on = { true, true }, .stack_size = 8192, .spin_us = 500,
			       .period_us = 100, .min_agree = 99.0, .dump_dir = "/tmp" };
	optind = 1;
	int ch;
	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		char *end;
		switch (ch) {
		case 'j': o->json = optarg; break;
		case 'f': hx_perf_set_cmd(optarg); break;
		case 'm': if (parse_modes(o, optarg)) return 2; break;
		case 's': if (parse_int("--stack-size", optarg, 8, 65528, 8, &o->stack_size)) return 2; break;
		case 'S': if (parse_int("--spin-us", optarg, 100, 100000, 1, &o->spin_us)) return 2; break;
		case 'p': if (parse_int("--period-us", optarg, 10, 10000, 1, &o->period_us)) return 2; break;
		case 'a':
			o->min_agree = strtod(optarg, &end);
			if (*end || o->min_agree < 0 || o->min_agree > 100) {
				fprintf(stderr, "jitunwind perf-check: --min-agreement %s: expected 0..100\n", optarg);
				return 2;
			}
			break;
		case 'P':
			if (pv_profile_parse(optarg, &o->profile)) {
				fprintf(stderr, "jitunwind perf-check: --perf-profile %s: expected current, v6.1 or 5.x-0x40\n", optarg);
				return 2;
			}
			o->profile_set = true;
			break;
		case 'e':
			if (!uw_unwinder_by_name(optarg)) {
				fprintf(stderr, "jitunwind perf-check: --emulation %s: no such unwinder\n", optarg);
				return 2;
			}
			o->emulation = optarg;
			break;
		case 'd': o->dump_dir = optarg; break;
		case 'h': usage(stdout); return 1;
		default: usage(stderr); return 2;
		}
	}
	o->paths = argv + optind;
	o->npaths = argc - optind;
	return 0;
}

/* Every case must load (else exit 2 before perf runs); another arch's is refused. */
static int check_cases(const struct pk_opts *o, const char *arch)
{
	char def[64], err[1024], **paths = NULL;
	const char *defp[1] = { def };
	snprintf(def, sizeof(def), "cases/%s", arch);
	int n = 0, rc = 0;
	if (hx_case_glob(o->npaths ? (const char *const *)o->paths : defp, o->npaths ? o->npaths : 1,
			 &paths, &n, err, sizeof(err))) {
		fprintf(stderr, "jitunwind perf-check: %s\n", err);
		rc = 2;
	} else if (!n) {
		fprintf(stderr, "jitunwind perf-check: no .case files found\n");
		rc = 2;
	}
	struct hx_case *cs = calloc(n ? (size_t)n : 1, sizeof(*cs));
	int loaded = 0;
	for (int i = 0; i < n && cs && !rc; i++) {
		if (hx_case_load(&cs[i], paths[i], err, sizeof(err))) {
			fprintf(stderr, "jitunwind perf-check: %s\n", err);
			rc = 2;
			break;
		}
		loaded++;
		if (strcmp(cs[i].arch, arch)) {
			fprintf(stderr, "jitunwind perf-check: %s: case arch %s cannot run on this %s host\n", paths[i],
				cs[i].arch, arch);
			rc = 2;
		}
	}
	/* two cases of one name would be one case in the report */
	if (!rc && cs && hx_case_unique(cs, loaded, err, sizeof(err))) {
		fprintf(stderr, "jitunwind perf-check: %s\n", err);
		rc = 2;
	}
	for (int i = 0; i < loaded; i++)
		hx_case_free(&cs[i]);
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(cs);
	free(paths);
	return cs || rc ? rc : 2;
}

/* perf_event_open as perf record will ask for it: refused is a skip */
static int probe_event(char *why, size_t wl)
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
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	int e = errno;
	snprintf(why, wl, "perf_event_open refused a cpu-clock event: %s%s", strerror(e),
		 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid)" :
		 e == ENOSYS ? " (no perf events here, e.g. under qemu-user)" : "");
	return -1;
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
		return -1;
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
	if (hx_perf_run(k->dir, scr, NULL, out, r->why, sizeof(r->why)))
		return -1;
	size_t n;
	char *text = hx_slurp(out, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", out, strerror(errno));
		return -1;
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
	if (pk_record(k, r, data, smp))
		return -1;
	pk_lost(k, r);
	const char *inj[] = { "inject", "-j", "-i", data, "-o", jit, NULL };
	const char *scr[] = { "script", "-i", jit, "-F", "pid,time,ip,dso", "--ns", "--no-inline",
			      "--show-mmap-events", NULL };
	if (hx_perf_run(k->dir, inj, NULL, out, r->why, sizeof(r->why)) ||
	    hx_perf_run(k->dir, scr, NULL, script, r->why, sizeof(r->why)) ||
	    (k->o.names && pk_names(k, r, jit)))
		return -1;
	if (hx_samples_read(&r->smp, smp, err, sizeof(err))) {
		snprintf(r->why, sizeof(r->why), "%s", err);
		return -1;
	}
	r->have_smp = true;
	size_t n;
	char *text = hx_slurp(script, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", script, strerror(errno));
		return -1;
	}
	int rc = hx_ps_parse(&r->ps, text);
	free(text);
	if (rc) {
		snprintf(r->why, sizeof(r->why), "out of memory reading perf script's output");
		return -1;
	}
	return 0;
}

/* the value perf prints for the emulation's frame f: a caller's return
 * address minus one in DWARF mode unless the engine calls it an activation
 * (a signal frame); the kernel's FP chain as it is */
static uint64_t printed_of(enum pk_mode m, const struct uw_result *e, int f)
{
	if (f == 0 || m == PK_FP || (e->flags[f] & UW_F_ACTIVATION))
		return e->addr[f];
	return e->addr[f] - 1;
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

static double pct(size_t a, size_t n)
{
	return n ? 100.0 * (double)a / (double)n : 0.0;
}

static void verdict_counts(FILE *f, const int *v)
{
	for (int i = 0; i < 6; i++)
		if (v[i])
			fprintf(f, " %s %d", hx_verdict_name((enum hx_verdict)i), v[i]);
}

/* every disagreement, grouped by sample point (its samples usually print one chain) */
static void print_disagreements(const struct pk_case *kc)
{
	for (size_t i = 0; i < kc->ndis; i++) {
		const struct pk_dis *d = &kc->dis[i];
		if (i && kc->dis[i - 1].point == d->point && !strcmp(kc->dis[i - 1].why, d->why))
			continue;
		const struct pk_point *pt = &kc->pts[d->point];
		size_t same = 0;
		for (size_t k = i; k < kc->ndis && kc->dis[k].point == d->point; k++)
			same += !strcmp(kc->dis[k].why, d->why);
		printf("    %s %s (%s): %zu of %d sample(s): perf %s, emulation %s: %s\n", kc->name, pt->sr->where,
		       pt->sr->insn, same, pt->samples, hx_verdict_name(d->perf_v),
		       hx_verdict_name(pt->sr->uw[0].j.v), d->why);
	}
}

static void print_unsampled(const struct pk_case *kc)
{
	size_t shown = 0;
	for (size_t i = 0; i < kc->npts; i++)
		if (!kc->pts[i].samples)
			printf("%s%s", shown++ ? ", " : "    never sampled: ", kc->pts[i].sr->where);
	if (shown)
		printf("\n");
}

static void print_mode(const struct pk *k, const struct pk_run *r)
{
	const char *m = pk_mode_names[r->mode];
	char cg[32] = "fp";
	if (r->mode == PK_DWARF)
		snprintf(cg, sizeof(cg), "dwarf,%d", k->o.stack_size);
	printf("\n%s mode (perf record --call-graph %s; emulation: %s, profile %s)\n", m, cg, r->emu,
	       pv_profile_name(k->profile));
	if (r->why[0]) {
		printf("  %s: %s\n", m, r->why);
		return;
	}
	printf("  %-28s %6s %7s %7s %7s %7s  perf vs truth\n", "case", "points", "sampled", "agree", "samples",
	       "agree");
	for (size_t i = 0; i < r->ncases; i++) {
		const struct pk_case *kc = &r->cases[i];
		printf("  %-28s %6zu %7zu %6.1f%% %7zu %6.1f%% ", kc->name, kc->npts, kc->sampled,
		       pct(kc->points_agree, kc->npts), kc->samples, pct(kc->agree, kc->samples));
		verdict_counts(stdout, kc->perf_v);
		printf("\n");
		if (kc->problem[0])
			printf("    problem: %s\n", kc->problem);
		print_unsampled(kc);
		print_disagreements(kc);
	}
	size_t outside = 0;
	for (size_t i = 0; i < r->ncases; i++)
		outside += r->cases[i].outside;
	printf("  %s: %zu/%zu points sampled; perf agrees with %s at %zu points (%.2f %%; needed %.2f %%),"
	       " in %zu of %zu samples (%.2f %%; %zu more samples elsewhere in the cases' processes): %s (%.1f s)\n",
	       m, r->sampled, r->points, r->emu, r->points_agree, pct(r->points_agree, r->points), k->o.min_agree,
	       r->agree, r->samples, pct(r->agree, r->samples), outside, r->pass ? "pass" : "FAIL", r->seconds);
	printf("  %s: whole chains (past the anchor, not judged) equal in %zu of %zu samples\n", m, r->whole,
	       r->samples);
	for (const struct pk_run *x = r; x; x = x->retry) {
		if (x->lost[0])
			printf("  %s: perf record%s: %s\n", m, x->attempt ? " (retry)" : "", x->lost);
		if (x->attempt && x->why[0])
			printf("  %s: retry %d: %s\n", m, x->attempt, x->why);
	}
	if (r->retry)
		printf("  %s: %zu case(s) recorded again for points without a sample; %zu taken from a retry\n", m,
		       r->recorded_again, r->retried);
}

static void json_verdicts(FILE *f, const char *key, const int *v)
{
	fprintf(f, ",\"%s\":{", key);
	for (int i = 0, n = 0; i < 6; i++)
		if (v[i])
			fprintf(f, "%s\"%s\":%d", n++ ? "," : "", hx_verdict_name((enum hx_verdict)i), v[i]);
	fprintf(f, "}");
}

static void json_dis(FILE *f, enum pk_mode m, const struct pk_case *kc, const struct pk_dis *d)
{
	const struct pk_point *pt = &kc->pts[d->point];
	const struct uw_result *e = &pt->sr->uw[0].r;
	uint64_t pred[UW_MAX_FRAMES];
	for (int i = 0; i < e->n; i++)
		pred[i] = printed_of(m, e, i);
	fprintf(f, "{\"where\":");
	hx_jsonw_str(f, pt->sr->where, 0);
	fprintf(f, ",\"offset\":");
	if (pt->sr->offset < 0)
		fprintf(f, "null");
	else
		fprintf(f, "%d", pt->sr->offset);
	fprintf(f, ",\"insn\":");
	hx_jsonw_str(f, pt->sr->insn, 0);
	fprintf(f, ",\"time_ns\":%llu,\"perf_verdict\":\"%s\",\"emulation_verdict\":\"%s\",\"frame\":%d,\"why\":",
		(unsigned long long)d->time, hx_verdict_name(d->perf_v), hx_verdict_name(pt->sr->uw[0].j.v),
		d->frame);
	hx_jsonw_str(f, d->why, 0);
	fprintf(f, ",\"perf\":");
	hx_jsonw_addrs(f, d->printed, d->n);
	fprintf(f, ",\"emulation\":");
	hx_jsonw_addrs(f, pred, e->n);
	fprintf(f, ",\"truth\":");
	hx_jsonw_addrs(f, pt->sr->truth, pt->sr->nt);
	fprintf(f, "}");
}

static void json_case(FILE *f, enum pk_mode m, const struct pk_case *kc)
{
	fprintf(f, "{\"name\":");
	hx_jsonw_str(f, kc->name, 0);
	fprintf(f, ",\"file\":");
	hx_jsonw_str(f, kc->file, 0);
	fprintf(f, ",\"pid\":%u,\"problem\":", kc->pid);
	hx_jsonw_str(f, kc->problem[0] ? kc->problem : NULL, 0);
	fprintf(f, ",\"points\":%zu,\"sampled\":%zu,\"points_agree\":%zu,\"samples\":%zu,\"samples_agree\":%zu,"
		"\"whole_equal\":%zu,\"elsewhere\":%zu", kc->npts, kc->sampled, kc->points_agree, kc->samples, kc->agree,
		kc->whole, kc->outside);
	json_verdicts(f, "perf_verdicts", kc->perf_v);
	json_verdicts(f, "emulation_verdicts", kc->emu_v);
	fprintf(f, ",\"unsampled\":[");
	for (size_t i = 0, n = 0; i < kc->npts; i++)
		if (!kc->pts[i].samples) {
			fprintf(f, "%s", n++ ? "," : "");
			hx_jsonw_str(f, kc->pts[i].sr->where, 0);
		}
	fprintf(f, "],\"disagreements\":[");
	for (size_t i = 0; i < kc->ndis; i++) {
		fprintf(f, "%s", i ? "," : "");
		json_dis(f, m, kc, &kc->dis[i]);
	}
	fprintf(f, "]}");
}

static int write_json(const struct pk *k, const char *path, bool pass)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\"tool\":\"jitunwind\",\"command\":\"perf-check\",\"schema\":1,\"arch\":\"%s\",\"perf\":{\"cmd\":",
		tr_arch_host()->name);
	hx_jsonw_str(f, hx_perf_cmd(), 0);
	fprintf(f, ",\"version\":");
	hx_jsonw_str(f, k->perf->version, 0);
	fprintf(f, ",\"engine\":\"%s\"},\"profile\":\"%s\",\"stack_size\":%d,\"period_us\":%d,\"spin_us\":%d,"
		"\"min_agreement\":%.2f,\"modes\":[", k->perf->engine, pv_profile_name(k->profile),
		k->o.stack_size, k->o.period_us, k->o.spin_us, k->o.min_agree);
	for (int i = 0; i < k->nruns; i++) {
		const struct pk_run *r = &k->runs[i];
		fprintf(f, "%s{\"mode\":\"%s\",\"emulation\":\"%s\",\"error\":", i ? "," : "",
			pk_mode_names[r->mode], r->emu);
		hx_jsonw_str(f, r->why[0] ? r->why : NULL, 0);
		fprintf(f, ",\"lost\":");
		hx_jsonw_str(f, r->lost[0] ? r->lost : NULL, 0);
		fprintf(f, ",\"recorded_again\":%zu,\"retried\":%zu", r->recorded_again, r->retried);
		fprintf(f, ",\"points\":%zu,\"sampled\":%zu,\"points_agree\":%zu,\"agreement\":%.2f,\"samples\":%zu,"
			"\"samples_agree\":%zu,\"whole_equal\":%zu,\"pass\":%s,\"seconds\":%.2f,\"cases\":[", r->points,
			r->sampled, r->points_agree, pct(r->points_agree, r->points), r->samples, r->agree, r->whole,
			r->pass ? "true" : "false", r->seconds);
		for (size_t c = 0; c < r->ncases; c++) {
			fprintf(f, "%s", c ? "," : "");
			json_case(f, r->mode, &r->cases[c]);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "],\"result\":\"%s\",\"seconds\":%.2f}\n", pass ? "pass" : "fail", k->seconds);
	return fclose(f) ? -errno : 0;
}

/* the cases' jitdumps, perf maps and the .so files perf inject wrote beside them */
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
static int pk_setup(struct pk *k, int argc, char **argv, char *skip, size_t sl)
{
	int rc = parse_opts(argc, argv, &k->o);
	if (rc)
		return rc == 1 ? -1 : 2;
	const char *arch = tr_arch_host() ? tr_arch_host()->name : "unknown";
	if ((rc = check_cases(&k->o, arch)))
		return rc;
	char why[600];
	if (hx_perf_probe(&k->perf, skip, sl) || probe_event(skip, sl))
		return 77;
	ssize_t n = readlink("/proc/self/exe", k->self, sizeof(k->self) - 1);
	if (n <= 0) {
		fprintf(stderr, "jitunwind perf-check: /proc/self/exe: %s\n", strerror(errno));
		return 2;
	}
	k->self[n] = 0;
	k->profile = k->o.profile_set ? k->o.profile : k->perf->major < 6 ? PV_5X_0X40 : PV_CURRENT;
	if (hx_perf_workdir(k->dir, sizeof(k->dir), "perfcheck", why, sizeof(why))) {
		fprintf(stderr, "jitunwind perf-check: %s\n", why);
		return 2;
	}
	return 0;
}

int hx_perfcheck_main(int argc, char **argv)
{
	double t0 = pk_now();
	struct pk *k = calloc(1, sizeof(*k));
	if (!k)
		return 2;
	char skip[600];
	int rc = pk_setup(k, argc, argv, skip, sizeof(skip));
	if (rc == 77)
		printf("jitunwind perf-check: skip: %s\n", skip);
	if (rc) {
		pk_free(k);
		return rc < 0 ? 0 : rc;
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
			fprintf(stderr, "jitunwind perf-check: out of memory\n");
			pk_free(k);
			return 2;
		}
		print_mode(k, r);
		pass &= r->pass;
	}
	k->seconds = pk_now() - t0;
	printf("\nperf-check: %s (%.1f s)\n", pass ? "pass" : "FAIL", k->seconds);
	if (k->o.json && (rc = write_json(k, k->o.json, pass))) {
		fprintf(stderr, "jitunwind perf-check: cannot write %s: %s\n", k->o.json, strerror(-rc));
		pk_free(k);
		return 2;
	}
	pk_free(k);
	return pass ? 0 : 1;
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
	char *av[] = { (char *)"perf-check", (char *)"--modes", (char *)mode, (char *)"--jitdump-dir",
		       (char *)dump_dir, (char *)case_path, NULL };
	int rc = pk_setup(k, (int)(sizeof(av) / sizeof(av[0])) - 1, av, why, wl);
	if (rc) {
		if (rc != 77)
			snprintf(why, wl, "perf-check could not start on %s (exit %d)", case_path, rc);
		pk_free(k);
		return rc < 0 ? 2 : rc;
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
