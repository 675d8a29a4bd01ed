/* Running the real perf tool and reading `perf script`'s output (perfrun.h).
 * perf always runs with a private HOME and --buildid-dir, so nothing of the
 * user's perf configuration or build-id cache takes part. */
#include "harness/run/scratch.h"
#include "harness/run/pidtmp.h"
#include "harness/run/perfrun.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PR_SIGNALED 1000   /* run(): a status from here on is a death by signal */

#define PR_MAX_ARGS 512
#define PR_ZERO UINT64_MAX      /* perf prints a zero return address as ip - 1 */

static struct {
	char cmd[512];
	bool given;              /* --perf CMD, not the default */
	bool probed;
	bool bad_cmd;            /* the probe failed on the command itself */
	int ok;
	char why[768];
	struct hx_perf_build b;
} pr = { .cmd = "perf" };

void hx_perf_set_cmd(const char *cmd)
{
	snprintf(pr.cmd, sizeof(pr.cmd), "%s", cmd);
	pr.probed = false;
	pr.given = true;
}

bool hx_perf_cmd_given(void)
{
	return pr.given;
}

bool hx_perf_bad_cmd(void)
{
	return pr.ok && pr.bad_cmd;
}

const char *hx_perf_cmd(void)
{
	return pr.cmd;
}

/* argv of the perf command (split at spaces: "tools/in-root sid perf") + extra */
static void perf_argv(char *buf, size_t len, char **argv, const char *const *extra)
{
	snprintf(buf, len, "%s", pr.cmd);
	int n = 0;
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && n < 8; t = strtok_r(NULL, " ", &save))
		argv[n++] = t;
	for (; extra && *extra && n < PR_MAX_ARGS - 1; extra++)
		argv[n++] = (char *)*extra;
	argv[n] = NULL;
}

/* Run argv with stdout and stderr to files, HOME and env set; exit status,
 * PR_SIGNALED + the signal that killed it, or -errno (fork, waitpid). */
static int run(char *const *argv, const char *out, const char *errf, const char *home,
	       const char *const *env)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return ju_errno();
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
		for (; env && *env; env++)
			putenv((char *)*env);
		execvp(argv[0], argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return ju_errno();
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? PR_SIGNALED + WTERMSIG(st) : -ECHILD;
}

char *hx_slurp(const char *path, size_t *n)
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
	else
		errno = ENOMEM;
	*n = len;
	return b;
}

/* How to get a working perf, for the probe's messages */
#define PR_FIX "install linux-perf, or name a perf with --perf CMD (another Debian's: --perf \"tools/in-root SUITE perf\")"

/* which DWARF unwinder the build uses: libunwind when built in, else libdw */
static void probe_parse(const char *t)
{
	const char *v = strstr(t, "perf version ");
	if (!v) {
		snprintf(pr.why, sizeof(pr.why), "'%s version --build-options' printed no version: is it perf? " PR_FIX, pr.cmd);
		return;
	}
	if (sscanf(v, "perf version %63s", pr.b.version) != 1) {
		snprintf(pr.why, sizeof(pr.why), "'%s version' printed no version: is it perf? " PR_FIX, pr.cmd);
		return;
	}
	pr.b.major = atoi(pr.b.version);
	if (strstr(t, "libunwind: [ on"))
		snprintf(pr.b.engine, sizeof(pr.b.engine), "libunwind");
	else if (strstr(t, "libdw-dwarf-unwind: [ on") || strstr(t, "libdw: [ on"))
		snprintf(pr.b.engine, sizeof(pr.b.engine), "libdw");
	else
		snprintf(pr.why, sizeof(pr.why), "perf %s ('%s') has no DWARF unwinder built in (neither libunwind nor libdw "
			 "in 'perf version --build-options'); " PR_FIX, pr.b.version, pr.cmd);
	if (pr.b.engine[0])
		pr.ok = 0;
}

/* The probe's exit status rc (-1: not run) and output t (NULL: none): why
 * this perf cannot be used, and whether the command itself is bad. */
static void probe_fail(int rc, const char *t, const char *errf)
{
	size_t n = 0;
	char *e = rc != 0 ? hx_slurp(errf, &n) : NULL;
	char *nl = e ? strchr(e, '\n') : NULL;
	if (nl)
		*nl = 0;
	pr.bad_cmd = rc == 127 || rc == -1 || rc == 2;
	if (rc == -2)
		snprintf(pr.why, sizeof(pr.why), "no temporary file for '%s version' in /tmp: %s", pr.cmd, strerror(errno));
	else if (rc == 127 || rc < 0)
		snprintf(pr.why, sizeof(pr.why), "'%s' cannot be run: no such program (a wrong path, or perf not installed); "
			 PR_FIX, pr.cmd);
	else if (rc >= PR_SIGNALED)
		snprintf(pr.why, sizeof(pr.why), "'%s version --build-options' was killed by signal %d (%s); " PR_FIX,
			 pr.cmd, rc - PR_SIGNALED, strsignal(rc - PR_SIGNALED));
	else if (!t)
		snprintf(pr.why, sizeof(pr.why), "'%s version --build-options' failed (exit %d%s%s)%s; " PR_FIX,
			 pr.cmd, rc, e && e[0] ? ": " : "", e ? e : "",
			 rc == 2 ? ": the command refused its arguments" : rc == 77 ? ": it cannot run on this machine" : "");
	else
		probe_parse(t);
	if (pr.ok && t && !pr.why[0])
		snprintf(pr.why, sizeof(pr.why), "'%s version' printed nothing perf prints", pr.cmd);
	free(e);
}

int hx_perf_probe(const struct hx_perf_build **b, char *why, size_t len)
{
	if (!pr.probed) {
		pr.probed = true;
		pr.ok = -1;
		memset(&pr.b, 0, sizeof(pr.b));
		pr.why[0] = 0;
		char tmpl[] = "/tmp/jitunwind-perfprobe-XXXXXX";
		char buf[512], *argv[PR_MAX_ARGS], out[64], err[64];
		static const char *const extra[] = { "version", "--build-options", NULL };
		perf_argv(buf, sizeof(buf), argv, extra);
		int fd = mkstemp(tmpl);
		if (fd >= 0)
			close(fd);
		snprintf(out, sizeof(out), "%s", tmpl);
		snprintf(err, sizeof(err), "%s.err", tmpl);
		int rc = fd >= 0 ? run(argv, out, err, NULL, NULL) : -2;
		size_t n = 0;
		char *t = rc == 0 ? hx_slurp(out, &n) : NULL;
		unlink(out);
		probe_fail(rc, t, err);
		unlink(err);
		free(t);
	}
	if (pr.ok && why)
		snprintf(why, len, "%s", pr.why);
	if (b)
		*b = pr.ok ? NULL : &pr.b;
	return pr.ok;
}

int hx_perf_workdir(char *dir, size_t len, const char *tag, struct ju_err *err)
{
	const char *tmp = getenv("TMPDIR");
	const char *root = tmp && strlen(tmp) < 32 ? tmp : "/tmp";
	char pre[64];
	snprintf(pre, sizeof(pre), "jitunwind-%s", tag);
	hx_pidtmp_sweep(root, pre);          /* a SIGKILLed command's (a timeout's) */
	int rc = hx_pidtmp_make(dir, len, root, pre, true);
	if (rc)
		return ju_errf(err, -rc, 0, "%s/%s-%ld-XXXXXX: %s", root, pre, (long)getpid(), strerror(-rc));
	if (!getenv("JU_PERF_KEEP"))
		hx_scratch_register(dir);    /* removed if a signal ends the command */
	char home[4200];
	snprintf(home, sizeof(home), "%s/home", dir);
	if (mkdir(home, 0700) < 0)
		return ju_errf(err, errno, 0, "%s: %s", home, strerror(errno));
	/* perf 7 in a root without binutils aborts inject unless addr2line goes
	 * through libdw; older perfs ignore the key */
	char cfg[4300];
	snprintf(cfg, sizeof(cfg), "%s/.perfconfig", home);
	FILE *f = fopen(cfg, "w");
	int bad = !f || fputs("[addr2line]\n\tstyle = libdw\n", f) < 0;
	if ((f && fclose(f)) || bad)
		return ju_errf(err, errno, 0, "%s: %s", cfg, strerror(errno));
	return 0;
}

void hx_perf_workdir_remove(const char *dir)
{
	if (dir && dir[0] && !getenv("JU_PERF_KEEP"))
		hx_scratch_remove(dir);
	else if (dir && dir[0])
		hx_scratch_forget(dir);
}

int hx_perf_run(const char *dir, const char *const *args, const char *const *env, const char *out,
		char *why, size_t wl)
{
	char buf[512], *argv[PR_MAX_ARGS], home[4200], bid[4200], errf[4200];
	snprintf(home, sizeof(home), "%s/home", dir);
	snprintf(bid, sizeof(bid), "%s/buildid", dir);
	const char *extra[PR_MAX_ARGS], *sub = args[0];
	snprintf(errf, sizeof(errf), "%s/%s.stderr", dir, sub);
	int n = 0;
	extra[n++] = "--buildid-dir";
	extra[n++] = bid;
	for (; *args; args++) {
		if (n >= PR_MAX_ARGS - 10) {
			snprintf(why, wl, "perf %s: more than %d arguments", sub, PR_MAX_ARGS - 12);
			return -E2BIG;
		}
		extra[n++] = *args;
	}
	extra[n] = NULL;
	perf_argv(buf, sizeof(buf), argv, extra);
	int rc = run(argv, out, errf, home, env);
	if (rc == 0)
		return 0;
	size_t len = 0;
	char *all = hx_slurp(errf, &len), *e = all;
	char fix[320] = "";
	/* a crash is perf's own: no advice about files it could not find */
	if (rc < PR_SIGNALED)
		hx_perf_advice(sub, all ? all : "", fix, sizeof(fix));
	/* perf's first line that says something ("  Error:" alone does not) */
	for (int k = 0; e && k < 8; k++) {
		size_t sp = strspn(e, " \t\n");
		char *nl = strchr(e + sp, '\n');
		size_t ll = nl ? (size_t)(nl - e - sp) : strlen(e + sp);
		if (!nl || !(ll == 0 || (ll == 6 && !strncmp(e + sp, "Error:", 6))))
			break;
		e = nl + 1;
	}
	char *nl = e ? strchr(e, '\n') : NULL;
	if (nl)
		*nl = 0;
	while (e && (*e == ' ' || *e == '\t'))
		e++;
	/* what ran: "perf inject -j -i FILE" (its first arguments) */
	char what[300];
	size_t off = (size_t)snprintf(what, sizeof(what), "%s", pr.cmd);
	for (int i = 2; i < n && i < 6 && off < sizeof(what); i++)
		off += (size_t)snprintf(what + off, sizeof(what) - off, " %s", extra[i]);
	char how[64];
	if (rc >= PR_SIGNALED)
		snprintf(how, sizeof(how), "killed by signal %d (%s)", rc - PR_SIGNALED, strsignal(rc - PR_SIGNALED));
	else if (rc < 0)
		snprintf(how, sizeof(how), "could not start: %s", strerror(-rc));
	else
		snprintf(how, sizeof(how), "exit %d", rc);
	snprintf(why, wl, "perf %s: %s%s%s (ran '%s%s')%s%s", sub, how, e && e[0] ? ": " : "", e ? e : "", what,
		 n > 6 ? " ..." : "", fix[0] ? "; " : "", fix);
	free(all);
	return rc < 0 ? rc : -EIO;
}

void hx_perf_advice(const char *sub, const char *err, char *out, size_t len)
{
	out[0] = 0;
	if (strstr(err, "incompatible file format") || strstr(err, "not a perf data file") ||
	    strstr(err, "unsupported") || strstr(err, "Unknown"))
		snprintf(out, len, "this perf (%s) cannot read a file a newer perf wrote: name one that can, "
			 "e.g. --perf \"tools/in-root sid perf\"", pr.cmd);
	else if (!strcmp(sub, "inject"))
		snprintf(out, len, "perf inject -j reads each jitdump at the path recorded in the perf.data: "
			 "keep it there (run --jitdump-dir DIR), or replay with --symfs DIR where the files moved");
	else if (!strcmp(sub, "script"))
		snprintf(out, len, "perf script reads the mapped files at their recorded paths: "
			 "give --symfs DIR where they moved; JU_PERF_KEEP=1 keeps perf's work directory");
}

static bool identity_dso(const char *d)
{
	static const char *const id[] = { "[unknown]", "unknown", "[stack", "[heap]", "//anon",
					  "/SYSV", "/dev/zero", "/anon_hugepage", "[vdso]" };
	for (size_t i = 0; i < sizeof(id) / sizeof(id[0]); i++)
		if (!strncmp(d, id[i], strlen(id[i])))
			return true;
	return false;
}

/* perf 6.1 prints a frame in a DSO as its file offset, perf 6.12 and later
 * as its address.  A value inside a mapping of that DSO perf had at the
 * sample's time can be an address, a value below a mapping's length past
 * its pgoff an offset; where both hold (a non-PIE executable mapped at
 * 0x400000, whose offsets are addresses of its own mappings too) the way
 * this perf prints, voted by the frames only one reading fits (ps->mode),
 * decides; with no vote, the address.  Placed through the newest mapping. */
enum { PS_ADDR = 1, PS_OFF = 2 };
static int readings(const struct hx_ps *ps, uint64_t t, const char *dso, uint64_t v,
		    const struct hx_ps_map **best)
{
	int r = 0;
	*best = NULL;
	for (size_t i = 0; i < ps->nmaps; i++) {
		const struct hx_ps_map *m = &ps->maps[i];
		if (m->time > t || strcmp(m->dso, dso))
			continue;
		if (v >= m->start && v - m->start < m->len)
			r |= PS_ADDR;
		if (v >= m->pgoff && v - m->pgoff < m->len) {
			r |= PS_OFF;
			if (!*best || m->time >= (*best)->time)
				*best = m;
		}
	}
	return r;
}

static bool absolute(const struct hx_ps *ps, uint64_t t, const char *dso, uint64_t v, uint64_t *a)
{
	if (v == PR_ZERO || identity_dso(dso)) {
		*a = v;
		return true;
	}
	const struct hx_ps_map *best;
	int r = readings(ps, t, dso, v, &best);
	if ((r & PS_ADDR) && !((r & PS_OFF) && ps->mode == PS_OFF)) {
		*a = v;
		return true;
	}
	if (!best)
		return false;
	*a = v - best->pgoff + best->start;
	return true;
}

/* One chain line "\t    VALUE (DSO)" into sample s. */
static void add_frame(struct hx_ps *ps, struct hx_ps_sample *s, const char *line)
{
	unsigned long long v;
	char dso[160] = "";
	if (sscanf(line, " %llx (%159[^)])", &v, dso) < 1 || s->n >= UW_MAX_FRAMES)
		return;
	uint64_t a;
	if (!absolute(ps, s->time, dso, v, &a)) {
		if (!ps->why[0])
			snprintf(ps->why, sizeof(ps->why), "sample %zu (pid %u): no mapping of %s holds offset 0x%llx",
				 (size_t)(s - ps->s), s->pid, dso, v);
		s->unplaced = true;
		return;
	}
	s->addr[s->n++] = a;
}

/* "PID SEC.NS: ...PERF_RECORD_MMAP2 ...[0xSTART(0xLEN) @ PGOFF ...]: PROT NAME" */
static int add_map(struct hx_ps *ps, const char *l, const char *mm)
{
	unsigned pid;
	unsigned long long sec, ns, start, len, pgoff;
	const char *br = strchr(mm, '['), *name = strstr(mm, "]: ");
	if (sscanf(l, " %u %llu.%llu:", &pid, &sec, &ns) != 3 || !br || !name ||
	    sscanf(br, "[0x%llx(0x%llx) @ %lli", &start, &len, &pgoff) != 3)
		return 0;
	name = strchr(name + 3, ' ');
	if (ps->nmaps == ps->capmaps) {
		size_t cap = ps->capmaps ? ps->capmaps * 2 : 256;
		struct hx_ps_map *m = realloc(ps->maps, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		ps->maps = m;
		ps->capmaps = cap;
	}
	struct hx_ps_map *m = &ps->maps[ps->nmaps++];
	*m = (struct hx_ps_map){ .time = sec * 1000000000ull + ns, .start = start, .len = len, .pgoff = pgoff };
	snprintf(m->dso, sizeof(m->dso), "%s", name ? name + 1 : "");
	return 0;
}

static struct hx_ps_sample *add_sample(struct hx_ps *ps, unsigned pid, uint64_t t)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 256;
		struct hx_ps_sample *s = realloc(ps->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		ps->s = s;
		ps->cap = cap;
	}
	struct hx_ps_sample *s = &ps->s[ps->n++];
	s->pid = pid;
	s->time = t;
	s->n = 0;
	s->unplaced = false;
	return s;
}

/* "PID SEC.NS:" alone on a line starts a sample; 1 and its time, else 0 */
static int sample_line(const char *l, unsigned *pid, uint64_t *t)
{
	unsigned long long sec, ns;
	int off = 0;
	if (sscanf(l, " %u %llu.%llu:%n", pid, &sec, &ns, &off) != 3 || strspn(l + off, " ") != strlen(l + off))
		return 0;
	*t = sec * 1000000000ull + ns;
	return 1;
}

/* the first pass: the mmap events, and the vote of the frames that only one
 * reading fits (perf prints all frames one way) */
static int first_pass(struct hx_ps *ps, char *text, size_t len)
{
	int votes[3] = { 0, 0, 0 };
	uint64_t t = 0;
	bool in_sample = false;
	for (char *l = text; l < text + len; l += strlen(l) + 1) {
		char *mm = strstr(l, "PERF_RECORD_MMAP");
		unsigned pid;
		if (mm) {
			in_sample = false;
			if (add_map(ps, l, mm))
				return -ENOMEM;
		} else if (sample_line(l, &pid, &t)) {
			in_sample = true;
		} else if (in_sample && (l[0] == '\t' || l[0] == ' ')) {
			unsigned long long v;
			char dso[160] = "";
			const struct hx_ps_map *best;
			if (sscanf(l, " %llx (%159[^)])", &v, dso) == 2 && !identity_dso(dso)) {
				int r = readings(ps, t, dso, v, &best);
				if (r == PS_ADDR || r == PS_OFF)
					votes[r]++;
			}
		}
	}
	ps->mode = votes[PS_OFF] > votes[PS_ADDR] ? PS_OFF : PS_ADDR;
	return 0;
}

int hx_ps_parse(struct hx_ps *ps, char *text)
{
	memset(ps, 0, sizeof(*ps));
	size_t len = strlen(text);
	for (char *c = strchr(text, '\n'); c; c = strchr(c + 1, '\n'))
		*c = 0;              /* lines, NUL-ended, walked twice */
	if (first_pass(ps, text, len))
		return -ENOMEM;
	struct hx_ps_sample *cur = NULL;
	for (char *l = text; l < text + len; l += strlen(l) + 1) {
		unsigned pid;
		uint64_t t;
		if (!*l)
			continue;
		if (strstr(l, "PERF_RECORD_MMAP")) {
			cur = NULL;
			continue;
		}
		if (sample_line(l, &pid, &t)) {
			cur = add_sample(ps, pid, t);
			if (!cur)
				return -ENOMEM;
			continue;
		}
		if (cur && (l[0] == '\t' || l[0] == ' '))
			add_frame(ps, cur, l);
	}
	return 0;
}

void hx_ps_free(struct hx_ps *ps)
{
	free(ps->maps);
	free(ps->s);
	memset(ps, 0, sizeof(*ps));
}
