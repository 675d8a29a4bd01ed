/* jitunwind doctor: what this machine's perf will do with JIT code.
 *
 * Facts, each with how it was found (perf's build options, a cpu-clock
 * perf_event_open of this process, /proc and the file systems, a `perf
 * record -k 1`); the pitfalls of this perf's generation, each from a rule
 * the project codes (the perf profiles of unwinders/model/perfview.c, the
 * libdw /tmp/jitted- rule of unwinders/libdw.c, the private .perfconfig of
 * perfrun.c); then perf-check's record, inject -j and script of a
 * CPython-shaped trampoline with CFI and one without, in dwarf and fp mode:
 * which step, if any, lost the JIT's names or its chains. */
#include "harness/realperf/doctor.h"
#include "harness/realperf/perfcheck.h"
#include "harness/run/perfcol.h"
#include "harness/run/perfrun.h"
#include "harness/case/jsonw.h"
#include "harness/case/say.h"
#include "trampolines/tramp.h"
#include "unwinders/model/perfview.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DR_MAX_FACTS 16
#define DR_MAX_PROBES 4
#define DR_CAP_SYS_ADMIN 21
#define DR_CAP_PERFMON 38

struct dr_fact {
	const char *name;
	char value[320];
	char how[200];
	bool bad;                   /* a problem for JIT profiling (a pitfall names it) */
};

struct dr_probe {
	char path[4200];
	const char *name;           /* the case file's name */
	bool cfi;
	const char *mode;
	int rc;                     /* hx_perfcheck_probe's */
	char why[600];
	struct hx_pk_probe p;
	char lost[400];             /* the step that lost names or chains, "" none */
};

struct dr {
	const char *json, *dump_dir, *cases_dir;
	bool perf_given;
	const struct hx_perf_build *b;
	int major, minor;
	char *opts;                 /* `perf version --build-options` output */
	char dir[128];
	struct dr_fact facts[DR_MAX_FACTS];
	int nfacts;
	char unusable[700];         /* perf cannot work here: why */
	bool noexec, unwritable, k1_refused, addr2line_missing, libdw_only;
	char addr2line[32];         /* "libbfd", "llvm" or "external" */
	bool layout_known;          /* the probe's perf inject -j wrote a jitted .so of this layout */
	enum pv_profile layout;
	struct dr_probe probes[DR_MAX_PROBES];
	int nprobes;
	char probe_skip[300];
};

static struct dr_fact *fact(struct dr *d, const char *name, const char *how)
{
	struct dr_fact *f = &d->facts[d->nfacts < DR_MAX_FACTS - 1 ? d->nfacts++ : DR_MAX_FACTS - 1];
	f->name = name;
	f->bad = false;
	const char *p = strstr(how, "@PERF@");   /* the perf command as given */
	if (p)
		snprintf(f->how, sizeof(f->how), "%.*s%s%s", (int)(p - how), how, hx_perf_cmd(), p + 6);
	else
		snprintf(f->how, sizeof(f->how), "%s", how);
	f->value[0] = 0;
	return f;
}

/* The first word of the perf command, found as execvp would: 0, or -EINVAL
 * (empty), -errno of access(2), -ENOENT (not on PATH). */
static int cmd_runnable(const char *cmd, char *why, size_t wl)
{
	char w[512];
	if (sscanf(cmd, "%511s", w) != 1) {
		snprintf(why, wl, "--perf '%s': an empty command", cmd);
		return -EINVAL;
	}
	if (strchr(w, '/')) {
		if (access(w, X_OK)) {
			int e = errno;
			snprintf(why, wl, "--perf '%s': %s: %s", cmd, w, strerror(e));
			return -e;
		}
		return 0;
	}
	const char *path = getenv("PATH");
	char buf[4096], p[4700];
	snprintf(buf, sizeof(buf), "%s", path ? path : "/usr/bin:/bin");
	for (char *save = NULL, *t = strtok_r(buf, ":", &save); t; t = strtok_r(NULL, ":", &save)) {
		snprintf(p, sizeof(p), "%s/%s", t, w);
		if (!access(p, X_OK))
			return 0;
	}
	snprintf(why, wl, "--perf '%s': %s not found on PATH", cmd, w);
	return -ENOENT;
}

static bool opt_on(const struct dr *d, const char *name)
{
	char key[64];
	snprintf(key, sizeof(key), " %s: [ on", name);
	return d->opts && strstr(d->opts, key);
}

/* perf's version, engine and build options: 0, -ENOENT a --perf command
 * that cannot be run, HX_CMD_CANNOT_RUN unusable */
static int fact_perf(struct dr *d)
{
	char why[600];
	if (cmd_runnable(hx_perf_cmd(), why, sizeof(why))) {
		snprintf(d->unusable, sizeof(d->unusable), "%s", why);
		return d->perf_given ? -ENOENT : HX_CMD_CANNOT_RUN;
	}
	struct dr_fact *f = fact(d, "perf", "`@PERF@ version --build-options`");
	struct ju_err je;
	if (hx_perf_workdir(d->dir, sizeof(d->dir), "doctor", &je)) {
		snprintf(d->unusable, sizeof(d->unusable), "%s", je.msg);
		return HX_CMD_CANNOT_RUN;
	}
	char out[128], said[600];
	snprintf(out, sizeof(out), "%s/build-options.txt", d->dir);
	const char *args[] = { "version", "--build-options", NULL };
	size_t n;
	/* the same query with perf's stderr kept: its first line says why it failed */
	int run = hx_perf_run(d->dir, args, NULL, out, said, sizeof(said));
	if (!run)
		d->opts = hx_slurp(out, &n);
	if (hx_perf_probe(&d->b, why, sizeof(why))) {
		snprintf(d->unusable, sizeof(d->unusable), "%s%s%s", why, run ? "; " : "", run ? said : "");
		snprintf(f->value, sizeof(f->value), "unusable: %s", d->unusable);
		f->bad = true;
		return HX_CMD_CANNOT_RUN;
	}
	if (sscanf(d->b->version, "%d.%d", &d->major, &d->minor) < 1)
		d->major = d->b->major;
	snprintf(f->value, sizeof(f->value), "%s ('%s'), DWARF engine %s", d->b->version, hx_perf_cmd(),
		 d->b->engine);
	d->libdw_only = !opt_on(d, "libunwind");
	return 0;
}

/* a cpu-clock event of this process, user mode only, as perf record asks */
static int fact_events(struct dr *d)
{
	struct dr_fact *f = fact(d, "perf_event_open", "perf_event_open(cpu-clock, this process, user only)");
	int e = hx_perf_event_probe();
	if (!e) {
		snprintf(f->value, sizeof(f->value), "works");
		return 0;
	}
	snprintf(f->value, sizeof(f->value), "refused: %s", strerror(e));
	f->bad = true;
	if (!d->unusable[0])        /* the first reason stands: perf itself failing comes before */
		snprintf(d->unusable, sizeof(d->unusable), "perf_event_open refused a user-space cpu-clock event: %s%s",
			 strerror(e), e == EACCES || e == EPERM ? " (lower kernel.perf_event_paranoid, or grant CAP_PERFMON)" :
			 e == ENOSYS ? " (no perf events here, e.g. under qemu-user)" : "");
	return HX_CMD_CANNOT_RUN;
}

/* paranoid, capabilities, container: what decides perf_event_open */
static void fact_privilege(struct dr *d)
{
	size_t n;
	struct dr_fact *f = fact(d, "perf_event_paranoid", "/proc/sys/kernel/perf_event_paranoid");
	char *t = hx_slurp("/proc/sys/kernel/perf_event_paranoid", &n);
	snprintf(f->value, sizeof(f->value), "%s", t ? strtok(t, "\n") ? t : "" : "unreadable");
	free(t);
	f = fact(d, "capabilities", "CapEff in /proc/self/status");
	t = hx_slurp("/proc/self/status", &n);
	char *c = t ? strstr(t, "CapEff:") : NULL;
	unsigned long long eff = 0;
	if (c && sscanf(c, "CapEff: %llx", &eff) == 1)
		snprintf(f->value, sizeof(f->value), "CAP_PERFMON %s, CAP_SYS_ADMIN %s",
			 eff >> DR_CAP_PERFMON & 1 ? "yes" : "no", eff >> DR_CAP_SYS_ADMIN & 1 ? "yes" : "no");
	else
		snprintf(f->value, sizeof(f->value), "unreadable");
	free(t);
	f = fact(d, "container", "/run/.containerenv (podman), /.dockerenv (docker)");
	bool pod = !access("/run/.containerenv", F_OK), dock = !access("/.dockerenv", F_OK);
	snprintf(f->value, sizeof(f->value), "%s", pod ? "yes (podman)" : dock ? "yes (docker)" : "none seen");
}

/* writable (a file made there), noexec (statvfs, and a PROT_EXEC mmap of a
 * file there, as a JIT maps its jitdump's marker) */
static void fact_dir(struct dr *d, const char *name, const char *dir, bool dump)
{
	struct dr_fact *f = fact(d, name, "mkstemp, statvfs ST_NOEXEC, mmap(PROT_READ|PROT_EXEC) of a file there");
	char p[4200];
	snprintf(p, sizeof(p), "%s/jitunwind-doctor-XXXXXX", dir);
	int fd = mkstemp(p);
	struct statvfs sv;
	bool flag = !statvfs(dir, &sv) && (sv.f_flag & ST_NOEXEC);
	if (fd < 0) {
		snprintf(f->value, sizeof(f->value), "%s: not writable (%s)%s", dir, strerror(errno),
			 flag ? ", mounted noexec" : "");
		f->bad = true;
		d->unwritable |= dump;
		d->noexec |= dump && flag;
		return;
	}
	long page = sysconf(_SC_PAGESIZE);
	size_t len = page > 0 ? (size_t)page : 4096;
	void *m = ftruncate(fd, (off_t)len) ? MAP_FAILED : mmap(NULL, len, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	int e = errno;
	if (m != MAP_FAILED)
		munmap(m, len);
	close(fd);
	unlink(p);
	f->bad = flag || m == MAP_FAILED;
	d->noexec |= dump && f->bad;
	snprintf(f->value, sizeof(f->value), "%s: writable, %s%s%s", dir, flag ? "mounted noexec" : "exec allowed",
		 m == MAP_FAILED ? "; PROT_EXEC mmap of a file there: " : "", m == MAP_FAILED ? strerror(e) : "");
}

/* perf's default build-id cache: $PERF_BUILDID_DIR, else ~/.debug */
static void fact_buildid(struct dr *d)
{
	struct dr_fact *f = fact(d, "build-id cache", "$PERF_BUILDID_DIR, else $HOME/.debug (perf's default; "
			       "a buildid.dir in ~/.perfconfig is not read)");
	const char *env = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char p[4200];
	snprintf(p, sizeof(p), "%s%s", env ? env : home ? home : "", env ? "" : "/.debug");
	if (!access(p, W_OK)) {
		snprintf(f->value, sizeof(f->value), "%s: writable", p);
		return;
	}
	int e = errno;
	char parent[4200];
	snprintf(parent, sizeof(parent), "%s", p);
	char *sl = strrchr(parent, '/');
	if (sl && sl != parent)
		*sl = 0;
	bool can = e == ENOENT && !access(parent, W_OK);
	snprintf(f->value, sizeof(f->value), "%s: %s", p, can ? "absent, its directory writable (perf makes it)" :
		 strerror(e));
	f->bad = !can;
}

/* in-process (libbfd, llvm) or binutils' addr2line run per lookup */
static void fact_addr2line(struct dr *d)
{
	struct dr_fact *f = fact(d, "addr2line", "libbfd/llvm in `@PERF@ version --build-options`; addr2line on PATH");
	if (opt_on(d, "libbfd"))
		snprintf(d->addr2line, sizeof(d->addr2line), "libbfd");
	else if (opt_on(d, "llvm") || opt_on(d, "libllvm"))
		snprintf(d->addr2line, sizeof(d->addr2line), "llvm");
	else
		snprintf(d->addr2line, sizeof(d->addr2line), "external");
	char why[300];
	bool found = !strcmp(d->addr2line, "external") ? !cmd_runnable("addr2line", why, sizeof(why)) : true;
	d->addr2line_missing = !found;
	if (strcmp(d->addr2line, "external"))
		snprintf(f->value, sizeof(f->value), "in perf (%s)", d->addr2line);
	else
		snprintf(f->value, sizeof(f->value), "no libbfd or llvm built in: perf runs an external addr2line per "
			 "source line (slow srcline sorting)%s", found ? "; addr2line found on PATH" :
			 "; no addr2line on PATH");
}

/* perf record -k 1 (CLOCK_MONOTONIC, as jitdump stamps): 0, or HX_CMD_CANNOT_RUN when
 * perf record does not run at all */
static int fact_k1(struct dr *d)
{
	struct dr_fact *f = fact(d, "perf record -k 1", "`@PERF@ record -k 1 -e cpu-clock:u -- true`, then without -k 1");
	char data[128], out[128], why[600], why2[600];
	snprintf(data, sizeof(data), "%s/k1.data", d->dir);
	snprintf(out, sizeof(out), "%s/k1.txt", d->dir);
	const char *k1[] = { "record", "-k", "1", "-e", "cpu-clock:u", "-o", data, "--", "true", NULL };
	if (!hx_perf_run(d->dir, k1, NULL, out, why, sizeof(why))) {
		snprintf(f->value, sizeof(f->value), "accepted");
		return 0;
	}
	const char *plain[] = { "record", "-e", "cpu-clock:u", "-o", data, "--", "true", NULL };
	if (hx_perf_run(d->dir, plain, NULL, out, why2, sizeof(why2))) {
		snprintf(f->value, sizeof(f->value), "perf record fails: %s", why2);
		if (!d->unusable[0])
			snprintf(d->unusable, sizeof(d->unusable), "perf record does not run: %s", why2);
		f->bad = true;
		return HX_CMD_CANNOT_RUN;
	}
	snprintf(f->value, sizeof(f->value), "refused (%s); perf record without it works", why);
	f->bad = true;
	d->k1_refused = true;
	return 0;
}

/* ---- the pitfalls: a rule of the project's own, and whether it applies ---- */

struct dr_pitfall {
	const char *id;
	bool (*applies)(const struct dr *d);
	const char *line;           /* what goes wrong for JIT code, and what to do */
	const char *source;         /* where the project codes the rule */
};

/* the layout perf inject -j wrote in the probe, else the one of this version */
static bool is_510(const struct dr *d)
{
	bool v = d->layout_known ? d->layout == PV_510 : d->major == 5 && d->minor == 10;
	return v && !d->libdw_only;
}

static bool is_0x40(const struct dr *d)
{
	if (d->layout_known)
		return d->layout == PV_5X_0X40;
	return (d->major == 5 && d->minor != 10) || (d->major == 6 && d->minor == 0) || (d->major && d->major < 5);
}

static bool is_v61(const struct dr *d)
{
	return d->layout_known && d->layout == PV_V61;
}

static bool tmp_rule(const struct dr *d)
{
	return d->libdw_only && (d->major > 6 || (d->major == 6 && d->minor >= 8));
}

static bool libdw_only(const struct dr *d)
{
	return d->libdw_only && (d->major > 6 || (d->major == 6 && d->minor >= 13));
}

static bool addr2line_abort(const struct dr *d)
{
	return d->major >= 7 && d->addr2line_missing;
}

static bool regs_by_name(const struct dr *d)
{
	return hx_perf_regs_by_name(uw_arch_host(), d->major, d->minor);
}

static bool noexec(const struct dr *d)
{
	return d->noexec;
}

static bool unwritable(const struct dr *d)
{
	return d->unwritable;
}

static bool k1(const struct dr *d)
{
	return d->k1_refused;
}

static const struct dr_pitfall pitfalls[] = {
	{ "5.10-segbase", is_510,
	  "perf 5.10 (profile 5.10.y): in dwarf mode libunwind takes the .eh_frame_hdr table 0x40 past where it is "
	  "(segbase from its file offset): no JIT frame's caller unwinds, names do resolve; record "
	  "--call-graph fp with frame pointers in the JIT code, or use perf >= 6.1",
	  "unwinders/model/perfview.c, profile 5.10.y" },
	{ "text-0x40", is_0x40,
	  "perf 5.x/6.0 (profile 5.x-0x40): the jitted .so's .text is at address 0x40 but file offset 0x80: small "
	  "trampolines lose their name and their unwinding info ('symbols missing'); use perf >= 6.1",
	  "unwinders/model/perfview.c, profile 5.x-0x40" },
	{ "v6.1-layout", is_v61,
	  "perf inject -j wrote the v6.1-v6.7 layout (PT_LOAD at 0; libunwind's base without '- pgoff'): both "
	  "DWARF unwinders lose every JIT frame's caller; use a perf with 'perf genelf: Set ELF program header "
	  "addresses properly' (>= 6.8, or a stable tree with it such as Debian 12's 6.1.y)",
	  "unwinders/model/perfview.c, profile v6.1 (seen in the probe's jitted .so)" },
	{ "tmp-jitted", tmp_rule,
	  "libdw (perf >= 6.8) uses a jitted .so's unwinding info only under /tmp/jitted-, i.e. for a jitdump "
	  "written to /tmp: a JIT writing jit-<pid>.dump elsewhere gets no DWARF chain through its code; have it "
	  "write the dump to /tmp",
	  "unwinders/libdw.c dw_base, the current profile" },
	{ "libdw-only", libdw_only,
	  "no libunwind built in (perf >= 6.13 builds it only on request): dwarf mode unwinds with libdw alone, so "
	  "the /tmp/jitted- rule decides every JIT chain (a perf with libunwind has no such rule)",
	  "harness/run/perfcol.c ?perf@6.13+ keys, unwinders/libunwind.c" },
	{ "addr2line-abort", addr2line_abort,
	  "perf >= 7 without libbfd/llvm and without binutils' addr2line aborts `perf inject`; put "
	  "'[addr2line] style = libdw' in ~/.perfconfig or install binutils",
	  "harness/run/perfrun.c hx_perf_workdir" },
	{ "regs-by-name", regs_by_name,
	  "perf 6.5-6.x (profile v6.12) finds sample registers by the arch's name, which it does not know as this "
	  "arch's: the stack pointer's lookup gives register 0, the pc, so the libdw path reads the stack "
	  "dump as if it began there: dwarf chains keep only the frames whose return address is in a register "
	  "(the leaf's caller), none beyond; use perf >= 7 (its registers by ELF machine), or --call-graph fp with "
	  "frame records in the JIT code",
	  "unwinders/libdw.c and unwinders/uwarch.c perf_name_unknown, profile v6.12" },
	{ "noexec-dump-dir", noexec,
	  "the jitdump directory is mounted noexec: a JIT's PROT_EXEC marker mmap of jit-<pid>.dump fails, so perf "
	  "record never sees the dump and inject -j adds no JIT code (no names); write the dump to an exec mount",
	  "trampolines/jitdump.c, the marker mmap" },
	{ "dump-dir-unwritable", unwritable,
	  "the jitdump directory is not writable: the JIT cannot create jit-<pid>.dump; pick a writable directory",
	  "trampolines/jitdump.c" },
	{ "no-k1", k1,
	  "perf record refuses -k 1: without CLOCK_MONOTONIC sample times perf inject -j cannot place the "
	  "jitdump's records; a perf/kernel that accepts -k 1 is needed",
	  "harness/realperf/perfcheck.c pk_record" },
};
#define DR_NPITFALLS (sizeof(pitfalls) / sizeof(pitfalls[0]))

/* ---- the probe: perf-check of two CPython-shaped cases in both modes ---- */

/* the trampoline with CFI (CPython 3.13's push-rbp one, or arm64's), and the
 * same code without unwinding info (CPython -X perf's perf map alone) */
static const char *const probe_cfi[] = { "cpython-3.13-fp.case", "cpython-aarch64.case" };
static const char *const probe_nocfi[] = { "hybrid-plain-fp-none.case" };
static const char *const probe_modes[] = { "dwarf", "fp" };

static const char *find_case(const char *dir, const char *const *names, size_t n, char *out, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		snprintf(out, len, "%s/%s", dir, names[i]);
		if (!access(out, R_OK))
			return names[i];
	}
	return NULL;
}

/* which step lost the JIT's names or its chain at the callee ("" none) */
static void probe_judge(struct dr_probe *pr)
{
	const struct hx_pk_probe *p = &pr->p;
	char l[sizeof(pr->lost)];
	size_t ll = sizeof(l);
	if (pr->rc)
		snprintf(l, ll, "perf-check: %s", pr->why);
	else if (p->why[0])
		snprintf(l, ll, "%s", p->why);
	else if (p->problem[0])
		snprintf(l, ll, "capture: %s", p->problem);
	else if (!p->samples)
		snprintf(l, ll, "record: no perf sample at the case's %zu spin points (%zu elsewhere in its process)",
			 p->points, p->elsewhere);
	else if (!p->jit_maps)
		snprintf(l, ll, "inject: perf inject -j added no jitted .so (perf did not see the jitdump)");
	else if (!p->jit_frames)
		snprintf(l, ll, "script: no frame printed in a jitted .so");
	else if (p->jit_named < p->jit_frames)
		snprintf(l, ll, "the .so's symbols: %zu of %zu JIT frames printed without a name", p->jit_frames - p->jit_named,
			 p->jit_frames);
	else if (!p->anchor_points)
		snprintf(l, ll, "record: the callee was never sampled");
	else if (p->anchor_ok < p->anchor_points)
		snprintf(l, ll, "the unwinder: at the callee perf's chain does not reach the anchor (%s, the emulation "
			 "of this perf, %s)", p->emulation, p->anchor_emu_ok == p->anchor_points ? "does" :
			 "does not either: a rule of this perf");
	else
		l[0] = 0;
	memcpy(pr->lost, l, sizeof(l));
}

static void probe_run(struct dr *d)
{
	char cfi[4200], nocfi[4200];
	const char *a = find_case(d->cases_dir, probe_cfi, sizeof(probe_cfi) / sizeof(probe_cfi[0]), cfi, sizeof(cfi));
	const char *b = find_case(d->cases_dir, probe_nocfi, sizeof(probe_nocfi) / sizeof(probe_nocfi[0]), nocfi,
				  sizeof(nocfi));
	if (!a || !b) {
		snprintf(d->probe_skip, sizeof(d->probe_skip), "no %s in %s", !a ? "CPython trampoline case with CFI" :
			 "case without CFI (hybrid-plain-fp-none.case)", d->cases_dir);
		return;
	}
	for (int c = 0; c < 2; c++)
		for (int m = 0; m < 2; m++) {
			struct dr_probe *pr = &d->probes[d->nprobes++];
			snprintf(pr->path, sizeof(pr->path), "%s", c ? nocfi : cfi);
			pr->name = c ? b : a;
			pr->cfi = !c;
			pr->mode = probe_modes[m];
			pr->rc = hx_perfcheck_probe(pr->path, d->dump_dir, pr->mode, &pr->p, pr->why, sizeof(pr->why));
			if (pr->rc == -ENOMEM)
				snprintf(pr->why, sizeof(pr->why), "out of memory");
			probe_judge(pr);
			if (!d->layout_known && pr->p.layout[0] && !pv_profile_parse(pr->p.layout, &d->layout))
				d->layout_known = true;
		}
	struct dr_fact *f = fact(d, "inject -j layout", "the probe's jitted .so: .text sh_addr and PT_LOAD p_vaddr "
				 "against the perf profiles");
	if (d->layout_known)
		snprintf(f->value, sizeof(f->value), "profile %s", pv_profile_name(d->layout));
	else
		snprintf(f->value, sizeof(f->value), "unknown (no jitted .so of a known layout was written)");
}

/* ---- output ---- */

static int npit_applying(const struct dr *d)
{
	int n = 0;
	for (size_t i = 0; i < DR_NPITFALLS; i++)
		n += pitfalls[i].applies(d);
	for (int i = 0; i < d->nprobes; i++)
		n += d->probes[i].lost[0] != 0;
	return n;
}

/* lead, then text wrapped at COLUMNS (default 100) with continuation lines indented */
static void wrap(const char *lead, const char *text, int indent)
{
	const char *c = getenv("COLUMNS");
	int width = c && atoi(c) >= 40 && atoi(c) <= 1000 ? atoi(c) : 100;
	int col = printf("%s", lead);
	for (const char *w = text; *w;) {
		size_t n = strcspn(w, " ");
		if (col > indent && col + 1 + (int)n > width)
			col = printf("\n%*s", indent, "") - 1;
		else if (w != text)
			col += printf(" ");
		col += printf("%.*s", (int)n, w);
		w += n;
		w += strspn(w, " ");
	}
	printf("\n");
}

static void print_probe(const struct dr *d)
{
	printf("\nprobe (perf-check: record, inject -j, script; jitdump in %s):\n", d->dump_dir);
	if (d->probe_skip[0]) {
		printf("  skip: %s\n", d->probe_skip);
		return;
	}
	for (int i = 0; i < d->nprobes; i++) {
		const struct dr_probe *pr = &d->probes[i];
		const struct hx_pk_probe *p = &pr->p;
		char lead[64], text[1200];
		snprintf(lead, sizeof(lead), "  %-26s %-5s ", pr->name, pr->mode);
		if (pr->rc || p->why[0] || !p->samples) {
			snprintf(text, sizeof(text), "LOST at %s", pr->lost);
			wrap(lead, text, 6);
			continue;
		}
		snprintf(text, sizeof(text), "%s: JIT names in %zu/%zu frames; anchor reached at the callee %zu/%zu, "
			 "at %zu of %zu sampled points (%s predicts %zu); %zu/%zu samples as predicted%s%s",
			 pr->lost[0] ? "LOST" : "ok", p->jit_named, p->jit_frames, p->anchor_ok, p->anchor_points,
			 p->ok_points, p->sampled, p->emulation, p->emu_ok_points, p->agree, p->samples,
			 pr->lost[0] ? "; lost at " : "", pr->lost);
		wrap(lead, text, 6);
	}
}

static void print_report(const struct dr *d)
{
	printf("jitunwind doctor: perf '%s'\n\nfacts:\n", hx_perf_cmd());
	for (int i = 0; i < d->nfacts; i++) {
		char lead[64], how[240];
		snprintf(lead, sizeof(lead), "  %-20s %s", d->facts[i].name, d->facts[i].bad ? "! " : "");
		wrap(lead, d->facts[i].value, 23);
		snprintf(how, sizeof(how), "(%s)", d->facts[i].how);
		wrap("                       ", how, 24);
	}
	if (d->unusable[0]) {
		printf("\n");
		wrap("perf cannot work here: ", d->unusable, 2);
		return;
	}
	printf("\npitfalls of this perf:\n");
	int n = 0;
	for (size_t i = 0; i < DR_NPITFALLS; i++)
		if (pitfalls[i].applies(d)) {
			char lead[64];
			snprintf(lead, sizeof(lead), "  %s: ", pitfalls[i].id);
			wrap(lead, pitfalls[i].line, 4);
			n++;
		}
	if (!n)
		printf("  none of the %zu the project knows applies\n", DR_NPITFALLS);
	print_probe(d);
}

static void json_facts(FILE *f, const struct dr *d)
{
	fprintf(f, ",\"facts\":[");
	for (int i = 0; i < d->nfacts; i++) {
		fprintf(f, "%s{\"name\":", i ? "," : "");
		hx_jsonw_str(f, d->facts[i].name, 0);
		fprintf(f, ",\"value\":");
		hx_jsonw_str(f, d->facts[i].value, 0);
		fprintf(f, ",\"how\":");
		hx_jsonw_str(f, d->facts[i].how, 0);
		fprintf(f, ",\"problem\":%s}", d->facts[i].bad ? "true" : "false");
	}
	fprintf(f, "],\"pitfalls\":[");
	for (size_t i = 0, n = 0; !d->unusable[0] && i < DR_NPITFALLS; i++) {
		fprintf(f, "%s{\"id\":\"%s\",\"applies\":%s,\"line\":", n++ ? "," : "", pitfalls[i].id,
			pitfalls[i].applies(d) ? "true" : "false");
		hx_jsonw_str(f, pitfalls[i].line, 0);
		fprintf(f, ",\"source\":");
		hx_jsonw_str(f, pitfalls[i].source, 0);
		fprintf(f, "}");
	}
	fprintf(f, "]");
}

static void json_probe(FILE *f, const struct dr *d)
{
	fprintf(f, ",\"probe_skip\":");
	hx_jsonw_str(f, d->probe_skip[0] ? d->probe_skip : NULL, 0);
	fprintf(f, ",\"probe\":[");
	for (int i = 0; i < d->nprobes; i++) {
		const struct dr_probe *pr = &d->probes[i];
		const struct hx_pk_probe *p = &pr->p;
		fprintf(f, "%s{\"case\":", i ? "," : "");
		hx_jsonw_str(f, pr->path, 0);
		fprintf(f, ",\"cfi\":%s,\"mode\":\"%s\",\"emulation\":", pr->cfi ? "true" : "false", pr->mode);
		hx_jsonw_str(f, p->emulation[0] ? p->emulation : NULL, 0);
		fprintf(f, ",\"points\":%zu,\"sampled\":%zu,\"samples\":%zu,\"samples_agree\":%zu,\"ok_points\":%zu,"
			"\"emulation_ok_points\":%zu,\"callee_points\":%zu,\"callee_ok\":%zu,\"jit_maps\":%zu,"
			"\"jit_frames\":%zu,\"jit_named\":%zu,\"lost\":", p->points, p->sampled, p->samples, p->agree,
			p->ok_points, p->emu_ok_points, p->anchor_points, p->anchor_ok, p->jit_maps, p->jit_frames,
			p->jit_named);
		hx_jsonw_str(f, pr->lost[0] ? pr->lost : NULL, 0);
		fprintf(f, ",\"layout\":");
		hx_jsonw_str(f, p->layout[0] ? p->layout : NULL, 0);
		fprintf(f, "}");
	}
	fprintf(f, "]");
}

static int write_json(const struct dr *d, int rc)
{
	FILE *f = fopen(d->json, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\"tool\":\"jitunwind\",\"command\":\"doctor\",\"schema\":1,\"arch\":\"%s\",\"perf\":{\"cmd\":",
		tr_arch_host() ? tr_arch_host()->facts->name : "unknown");
	hx_jsonw_str(f, hx_perf_cmd(), 0);
	fprintf(f, ",\"version\":");
	hx_jsonw_str(f, d->b ? d->b->version : NULL, 0);
	fprintf(f, ",\"engine\":");
	hx_jsonw_str(f, d->b ? d->b->engine : NULL, 0);
	fprintf(f, "},\"unusable\":");
	hx_jsonw_str(f, d->unusable[0] ? d->unusable : NULL, 0);
	json_facts(f, d);
	json_probe(f, d);
	fprintf(f, ",\"exit\":%d}\n", rc);
	return fclose(f) ? -errno : 0;
}

/* ---- main ---- */

/* the facts in order; 0, -ENOENT (a --perf that cannot run) or
 * HX_CMD_CANNOT_RUN (perf cannot work) */
static int gather(struct dr *d)
{
	int rc = fact_perf(d);
	if (rc < 0)
		return rc;
	fact_privilege(d);
	int ev = fact_events(d);
	fact_dir(d, "/tmp", "/tmp", !strcmp(d->dump_dir, "/tmp"));
	if (strcmp(d->dump_dir, "/tmp"))
		fact_dir(d, "jitdump directory", d->dump_dir, true);
	fact_buildid(d);
	if (rc)
		return rc;
	fact_addr2line(d);
	if (ev)
		return ev;
	return fact_k1(d);
}

int hx_doctor_run(const struct hx_doctor_opts *o, struct hx_cmd_outcome *out)
{
	*out = (struct hx_cmd_outcome){ .kind = HX_CMD_CLEAN };
	struct dr *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dump_dir = o->dump_dir;
	d->cases_dir = o->cases_dir;
	d->json = o->json;
	d->perf_given = o->perf_cmd != NULL;
	if (o->perf_cmd)
		hx_perf_set_cmd(o->perf_cmd);
	bool probe = o->probe;
	int rc = gather(d);
	if (rc < 0) {
		ju_say(JU_SAY_ERROR, "jitunwind doctor", "%s", d->unusable);
	} else {
		if (!rc && probe)
			probe_run(d);
		else if (!rc)
			snprintf(d->probe_skip, sizeof(d->probe_skip), "--no-probe");
		print_report(d);
		int lost = 0;
		for (int i = 0; i < d->nprobes; i++)
			lost += d->probes[i].lost[0] != 0;
		out->kind = rc ? HX_CMD_CANNOT_RUN : npit_applying(d) ? HX_CMD_FINDINGS : HX_CMD_CLEAN;
		snprintf(out->reason, sizeof(out->reason), "%s", rc ? d->unusable : "");
		int code = o->exit_codes[out->kind];
		rc = 0;
		if (out->kind == HX_CMD_FINDINGS)
			printf("\ndoctor: %d pitfall(s) apply, %d of %d probe(s) lost the JIT (exit %d)\n",
			       npit_applying(d) - lost, lost, d->nprobes, code);
		else
			printf("\ndoctor: %s (exit %d)\n", out->kind == HX_CMD_CANNOT_RUN ? "perf cannot work here" : "all well",
			       code);
		int jr = d->json ? write_json(d, code) : 0;
		if (jr) {
			ju_say(JU_SAY_ERROR, "jitunwind doctor", "cannot write %s: %s", d->json, strerror(-jr));
			rc = jr;
		}
	}
	if (d->dir[0])
		hx_perf_workdir_remove(d->dir);
	free(d->opts);
	free(d);
	return rc;
}
