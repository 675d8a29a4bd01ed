/* The `perf` column: real perf unwinds the case's own samples.  Per case and
 * dump size: the group is written as a perf.data (toperf.c), `perf inject -j`
 * turns the jitdump into jitted-<pid>-<n>.so files, `perf script` prints every
 * chain (addresses, never symbols) and the mmap events that place them; each
 * chain goes back to its sample point by sample order.  perf runs with a
 * private HOME and --buildid-dir in a temporary directory, removed after. */
#include "perfcol.h"
#include "samples.h"
#include "toperf.h"
#include "unwinders/unwind.h"
#include "unwinders/view.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PC_MAX_ARGS 40
#define PC_MAX_SIZES 4
#define PC_MAX_MAPS 4096
#define PC_ZERO UINT64_MAX      /* perf prints a zero return address as ip - 1 */

/* the perf command (--perf) and what its probe found */
static struct {
	char cmd[512];
	bool probed;
	int ok;
	char why[256];
	char version[64];
	char emulation[16];
} pc = { .cmd = "perf" };

void hx_perfcol_set_cmd(const char *cmd)
{
	snprintf(pc.cmd, sizeof(pc.cmd), "%s", cmd);
	pc.probed = false;
}


/* argv of the perf command (split at spaces: "tools/in-root sid perf") + extra */
static int perf_argv(char *buf, size_t len, char **argv, const char *const *extra)
{
	snprintf(buf, len, "%s", pc.cmd);
	int n = 0;
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < PC_MAX_ARGS - 24;
	     t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	for (; extra && *extra && n < PC_MAX_ARGS - 1; extra++)
		argv[n++] = (char *)*extra;
	argv[n] = NULL;
	return n;
}

/* Run argv with stdout and stderr to files, HOME set; exit status, or -1. */
static int run(char *const *argv, const char *out, const char *errf, const char *home)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(127);
		dup2(o, 1);
		dup2(e, 2);
		int nul = open("/dev/null", O_RDONLY);
		if (nul >= 0)
			dup2(nul, 0);
		if (home)
			setenv("HOME", home, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, len = 0;
	char *b = malloc(cap + 1);
	size_t r;
	while (b && (r = fread(b + len, 1, cap - len, f)) > 0) {
		len += r;
		if (len == cap) {
			char *nb = realloc(b, cap * 2 + 1);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
			cap *= 2;
		}
	}
	fclose(f);
	if (b)
		b[len] = 0;
	*n = len;
	return b;
}

/* `perf version --build-options`: the version, and which DWARF unwinder this
 * build uses (libunwind when built in, else libdw): its emulation is the
 * `faithful` reference. */
static int probe(char *why, size_t len)
{
	if (!pc.probed) {
		pc.probed = true;
		pc.ok = -1;
		pc.emulation[0] = pc.version[0] = pc.why[0] = 0;
		char tmpl[] = "/tmp/jitunwind-perfprobe-XXXXXX";
		char buf[512], *argv[PC_MAX_ARGS], out[64], err[64];
		static const char *const extra[] = { "version", "--build-options", NULL };
		perf_argv(buf, sizeof(buf), argv, extra);
		int fd = mkstemp(tmpl);
		if (fd >= 0)
			close(fd);
		snprintf(out, sizeof(out), "%s", tmpl);
		snprintf(err, sizeof(err), "%s.err", tmpl);
		int rc = fd >= 0 ? run(argv, out, err, NULL) : -1;
		size_t n = 0;
		char *t = rc == 0 ? slurp(out, &n) : NULL;
		unlink(out);
		unlink(err);
		char *v = t ? strstr(t, "perf version ") : NULL;
		if (rc == 127 || rc < 0)
			snprintf(pc.why, sizeof(pc.why), "'%s' cannot be run (not installed?)", pc.cmd);
		else if (!v)
			snprintf(pc.why, sizeof(pc.why), "'%s version --build-options' failed (exit %d)", pc.cmd, rc);
		else if (sscanf(v, "perf version %63s", pc.version) != 1)
			snprintf(pc.why, sizeof(pc.why), "'%s version' printed no version", pc.cmd);
		else if (strstr(t, "libunwind: [ on"))
			snprintf(pc.emulation, sizeof(pc.emulation), "libunwind");
		else if (strstr(t, "libdw-dwarf-unwind: [ on") || strstr(t, "libdw: [ on"))
			snprintf(pc.emulation, sizeof(pc.emulation), "libdw");
		else
			snprintf(pc.why, sizeof(pc.why), "perf %s has no DWARF unwinder built in", pc.version);
		if (pc.emulation[0])
			pc.ok = 0;
		free(t);
	}
	if (pc.ok && why)
		snprintf(why, len, "%s", pc.why);
	return pc.ok;
}

int hx_perf_probe(const char *cmd, char *version, size_t vl, char *emulation, size_t el,
		  char *why, size_t wl)
{
	hx_perfcol_set_cmd(cmd ? cmd : "perf");
	if (probe(why, wl))
		return -1;
	snprintf(version, vl, "%s", pc.version);
	snprintf(emulation, el, "%s", pc.emulation);
	return 0;
}

int hx_perf_exec(const char *const *args, const char *out, const char *errf, const char *home)
{
	char buf[512], *argv[PC_MAX_ARGS];
	perf_argv(buf, sizeof(buf), argv, args);
	return run(argv, out, errf, home);
}

/* perf before 6 is what the 5.x-0x40 profile stands for; every other
 * profile (current, v6.1) for perf 6 and later */
static const char *emulated_by(const char *profile)
{
	if (!pc.emulation[0])
		return NULL;
	bool old = atoi(pc.version) < 6, p5 = !strncmp(profile, "5.", 2);
	return old == p5 ? pc.emulation : NULL;
}

struct pc_map { uint64_t time, start, len, pgoff; char dso[160]; };

struct pc_run {
	int size;
	uint64_t (*chain)[UW_MAX_FRAMES];
	int *n;
	size_t nsamples;
	char why[160];           /* the run failed: why (every sample errors) */
};

struct pc_state {
	const struct hx_group *g;
	char dir[64];
	struct pc_run runs[PC_MAX_SIZES];
	int nruns;
	struct pc_map *maps;
	size_t nmaps;
};

static bool identity_dso(const char *d)
{
	static const char *const id[] = { "[unknown]", "unknown", "[stack", "[heap]", "//anon",
					  "/SYSV", "/dev/zero", "/anon_hugepage", "[vdso]" };
	for (size_t i = 0; i < sizeof(id) / sizeof(id[0]); i++)
		if (!strncmp(d, id[i], strlen(id[i])))
			return true;
	return false;
}

/* perf script prints a frame in a DSO as its file offset: back to the address
 * through the newest mapping of that DSO perf had at the sample's time */
static bool absolute(const struct pc_state *st, uint64_t t, const char *dso, uint64_t v, uint64_t *a)
{
	if (v == PC_ZERO || identity_dso(dso)) {
		*a = v;
		return true;
	}
	const struct pc_map *best = NULL;
	for (size_t i = 0; i < st->nmaps; i++) {
		const struct pc_map *m = &st->maps[i];
		if (!strcmp(m->dso, dso) && m->time <= t && v >= m->pgoff && v - m->pgoff < m->len &&
		    (!best || m->time >= best->time))
			best = m;
	}
	if (!best)
		return false;
	*a = v - best->pgoff + best->start;
	return true;
}

/* One chain line "\t    ADDR (DSO)" into the current sample. */
static void add_frame(struct pc_state *st, struct pc_run *r, size_t k, uint64_t t, const char *line)
{
	unsigned long long v;
	char dso[160] = "";
	if (sscanf(line, " %llx (%159[^)])", &v, dso) < 1 || r->n[k] >= UW_MAX_FRAMES)
		return;
	uint64_t a;
	if (!absolute(st, t, dso, v, &a)) {
		if (!r->why[0])
			snprintf(r->why, sizeof(r->why), "sample %zu: no mapping of %s holds offset 0x%llx", k, dso, v);
		return;
	}
	/* every frame after the first is a return address minus 1 (perf's
	 * callchain); a zero return address is printed as -1 */
	if (r->n[k] > 0)
		a = a == PC_ZERO ? 0 : a + 1;
	r->chain[k][r->n[k]++] = a;
}

/* perf script -F pid,time,ip,dso --ns --show-mmap-events: the mmap events
 * (kept for placing frames) and the samples, in the order they were written */
static int parse_script(struct pc_state *st, struct pc_run *r, char *text)
{
	size_t k = 0, seen = 0;
	bool in = false;
	uint64_t t = 0;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned pid;
		unsigned long long sec, ns, start, len, pgoff;
		int off = 0;
		char *mm = strstr(l, "PERF_RECORD_MMAP");
		if (mm) {
			in = false;
			char *br = strchr(mm, '['), *name = strstr(mm, "]: ");
			if (sscanf(l, " %u %llu.%llu:", &pid, &sec, &ns) != 3 || !br || !name ||
			    st->nmaps >= PC_MAX_MAPS || sscanf(br, "[0x%llx(0x%llx) @ %lli", &start, &len, &pgoff) != 3)
				continue;
			name = strchr(name + 3, ' ');
			struct pc_map *m = &st->maps[st->nmaps++];
			*m = (struct pc_map){ .time = sec * 1000000000ull + ns, .start = start, .len = len,
					      .pgoff = pgoff };
			snprintf(m->dso, sizeof(m->dso), "%s", name ? name + 1 : "");
			continue;
		}
		if (sscanf(l, " %u %llu.%llu:%n", &pid, &sec, &ns, &off) == 3 && strspn(l + off, " ") == strlen(l + off)) {
			k = seen++;
			in = true;
			t = sec * 1000000000ull + ns;
			if (k >= r->nsamples) {   /* only this case's process is in the file */
				snprintf(r->why, sizeof(r->why), "perf printed more samples than the %zu taken", r->nsamples);
				return -1;
			}
			continue;
		}
		if (in && (l[0] == '\t' || l[0] == ' '))
			add_frame(st, r, k, t, l);
	}
	return 0;
}

/* perf SUB... with the private build-id cache and HOME; 0, or -1 with why */
static int perf_do(struct pc_state *st, const char *const *args, const char *out, char *why, size_t wl)
{
	char buf[512], *argv[PC_MAX_ARGS], home[96], bid[96], errf[96];
	snprintf(home, sizeof(home), "%s/home", st->dir);
	snprintf(bid, sizeof(bid), "%s/buildid", st->dir);
	snprintf(errf, sizeof(errf), "%s/stderr", st->dir);
	const char *extra[PC_MAX_ARGS], *sub = args[0];
	int n = 0;
	extra[n++] = "--buildid-dir";
	extra[n++] = bid;
	for (; *args && n < PC_MAX_ARGS - 1; args++)
		extra[n++] = *args;
	extra[n] = NULL;
	perf_argv(buf, sizeof(buf), argv, extra);
	int rc = run(argv, out, errf, home);
	if (rc == 0)
		return 0;
	size_t len = 0;
	char *e = slurp(errf, &len);
	char *nl = e ? strchr(e, '\n') : NULL;
	if (nl)
		*nl = 0;
	snprintf(why, wl, "perf %s: exit %d%s%s", sub, rc, e && e[0] ? ": " : "", e ? e : "");
	free(e);
	return -1;
}

/* One dump size: write, inject, script, parse. */
static void run_size(struct pc_state *st, const struct uw_arch *arch, struct pc_run *r)
{
	char data[96], jit[96], out[96], err[256];
	snprintf(data, sizeof(data), "%s/p.data", st->dir);
	snprintf(jit, sizeof(jit), "%s/p.jit.data", st->dir);
	snprintf(out, sizeof(out), "%s/script.txt", st->dir);
	struct hx_toperf_opts o = { .stack_size = (uint32_t)r->size };
	if (hx_toperf_write_group(st->g, arch, data, &o, err, sizeof(err))) {
		snprintf(r->why, sizeof(r->why), "writing the perf.data: %s", err);
		return;
	}
	const char *inj[] = { "inject", "-j", "-i", data, "-o", jit, NULL };
	const char *scr[] = { "script", "-i", jit, "-F", "pid,time,ip,dso", "--ns", "--no-inline",
			      "--show-mmap-events", NULL };
	char inj_out[96];
	snprintf(inj_out, sizeof(inj_out), "%s/inject.txt", st->dir);
	if (perf_do(st, inj, inj_out, r->why, sizeof(r->why)) || perf_do(st, scr, out, r->why, sizeof(r->why)))
		return;
	size_t n;
	char *text = slurp(out, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", out, strerror(errno));
		return;
	}
	st->nmaps = 0;
	parse_script(st, r, text);
	free(text);
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void pc_close(void *state)
{
	struct pc_state *st = state;
	if (!st)
		return;
	for (int i = 0; i < st->nruns; i++) {
		free(st->runs[i].chain);
		free(st->runs[i].n);
	}
	if (st->dir[0] && !getenv("JU_PERF_KEEP"))
		nftw(st->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(st->maps);
	free(st);
}

static int pc_open(const struct uw_view *v, void **state, char *err, size_t errlen)
{
	const struct hx_group *g = v->capture;
	char why[256];
	if (probe(why, sizeof(why))) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	if (!g) {
		snprintf(err, errlen, "no capture to replay (the perf column needs the case's samples)");
		return -1;
	}
	struct pc_state *st = calloc(1, sizeof(*st));
	if (!st || !(st->maps = calloc(PC_MAX_MAPS, sizeof(*st->maps)))) {
		free(st);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->g = g;
	const char *tmp = getenv("TMPDIR");
	snprintf(st->dir, sizeof(st->dir), "%s/jitunwind-perf-XXXXXX", tmp && strlen(tmp) < 32 ? tmp : "/tmp");
	if (!mkdtemp(st->dir)) {
		snprintf(err, errlen, "%s: %s", st->dir, strerror(errno));
		st->dir[0] = 0;
		pc_close(st);
		return -1;
	}
	char home[96];
	snprintf(home, sizeof(home), "%s/home", st->dir);
	mkdir(home, 0700);
	for (int i = 0; i < v->ndump_sizes && i < PC_MAX_SIZES; i++) {
		struct pc_run *r = &st->runs[st->nruns++];
		r->size = v->dump_sizes[i];
		r->nsamples = g->nsamples;
		r->chain = calloc(g->nsamples ? g->nsamples : 1, sizeof(*r->chain));
		r->n = calloc(g->nsamples ? g->nsamples : 1, sizeof(*r->n));
		if (!r->chain || !r->n) {
			snprintf(err, errlen, "out of memory");
			pc_close(st);
			return -1;
		}
		run_size(st, v->arch, r);
	}
	*state = st;
	return 0;
}

static int pc_unwind(void *state, const struct uw_view *v, const struct uw_sample *s, struct uw_result *r)
{
	struct pc_state *st = state;
	r->n = 0;
	r->stop = UW_STOP_ERROR;
	r->why[0] = r->fallback_why[0] = 0;
	if (!st) {
		snprintf(r->why, sizeof(r->why), "perf did not run for this case");
		return -1;
	}
	size_t k = 0;
	while (k < st->g->nsamples && st->g->samples[k].stack != s->stack)
		k++;
	/* the run whose dump holds this sample's stack copy: the smallest size >= it */
	const struct pc_run *run = NULL;
	for (int i = 0; i < st->nruns; i++)
		if ((uint64_t)st->runs[i].size >= s->stack_size &&
		    (!run || st->runs[i].size < run->size))
			run = &st->runs[i];
	if (k == st->g->nsamples || !run) {
		snprintf(r->why, sizeof(r->why), "not a sample of this case's perf.data");
		return -1;
	}
	if (run->n[k] == 0) {
		snprintf(r->why, sizeof(r->why), "%s", run->why[0] ? run->why : "perf printed no chain for it");
		return -1;
	}
	memcpy(r->addr, run->chain[k], sizeof(uint64_t) * (size_t)run->n[k]);
	memset(r->flags, 0, sizeof(r->flags));
	r->n = run->n[k];
	r->stop = UW_STOP_END;
	snprintf(r->why, sizeof(r->why), "perf %s script printed %d frames", pc.version, r->n);
	return 0;
}

static const char *const perf_arches[] = { "x86_64", NULL };

const struct uw_unwinder uw_perf = {
	.name = "perf",
	.about = "real perf (--perf CMD): perf inject -j + perf script over the case's samples as a perf.data",
	.sees = UW_SEES_DUMP,
	.ref = UW_REF_EMULATION,
	.default_arches = perf_arches,
	.quiet_why = true,
	.open = pc_open,
	.unwind = pc_unwind,
	.close = pc_close,
	.probe = probe,
	.emulated_by = emulated_by,
};
