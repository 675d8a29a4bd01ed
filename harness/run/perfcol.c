/* The `perf` column: real perf unwinds the case's own samples.  Per case and
 * dump size: the group is written as a perf.data (toperf.c) as that perf's
 * own `perf record` would have (its attr size), `perf inject -j` turns the
 * jitdump into jitted-<pid>-<n>.so files, `perf script` prints every chain
 * (addresses, never symbols) and the mmap events that place them; each chain
 * goes back to its sample point by sample order.  perf runs with a private
 * HOME and --buildid-dir in a temporary directory, removed after.
 * `perf-fp` is the same over arm64's --call-graph fp with the LR record. */
#include "harness/run/perfcol.h"
#include "harness/case/columns.h"
#include "harness/run/session.h"
#include "harness/run/perfrun.h"
#include "harness/run/scratch.h"
#include "harness/capture/samples.h"
#include "harness/run/toperf.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/model/perfview.h"
#include "unwinders/unwind.h"
#include "unwinders/view.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PC_MAX_SIZES 4
#define PC_ZERO UINT64_MAX      /* perf prints a zero return address as ip - 1 */

/* the profile whose jitted-ELF layout this perf's inject -j wrote ("" until seen) */
static char pc_profile[16];

void hx_perfcol_set_cmd(const char *cmd)
{
	hx_perf_set_cmd(cmd);
	pc_profile[0] = 0;
}

static int probe(char *why, size_t len)
{
	return hx_perf_probe(NULL, why, len);
}


/* The perf_event_attr size that perf writes itself (PERF_ATTR_SIZE_VER* of
 * its perf_event.h): a perf refuses a larger one ("incompatible file format"),
 * so each reads a file as its own perf record would have made it. */
static uint32_t attr_size_of(const char *version)
{
	int maj = 0, min = 0;
	if (sscanf(version, "%d.%d", &maj, &min) != 2)
		return PD_ATTR_SIZE_VER7;
	if (maj < 5 || (maj == 5 && min < 13))
		return PD_ATTR_SIZE_VER6;
	if (maj == 5 || (maj == 6 && min < 3))
		return PD_ATTR_SIZE_VER7;
	return PD_ATTR_SIZE_VER8;
}

/* The profile a perf stands for is the one whose jitted-ELF layout its own
 * `perf inject -j` wrote (.text sh_addr and PT_LOAD p_vaddr tell them apart,
 * see hx_perfcol_layout_profile): only under it is the emulation compared.  Before any
 * inject ran: perf 5 for the 5.x profiles, perf 6+ for the others. */
static const char *emulated_by(const char *profile)
{
	const struct hx_perf_build *b;
	if (hx_perf_probe(&b, NULL, 0))
		return NULL;
	if (pc_profile[0])
		return strcmp(profile, pc_profile) ? NULL : b->engine;
	bool old = b->major < 6, p5 = !strncmp(profile, "5.", 2);
	return old == p5 ? b->engine : NULL;
}

/* perf-fp's leaf step runs on the perf build's DWARF engine: the LR-splice
 * unwinder whose step uses that engine */
static const char *lr_step_of(const char *engine)
{
	size_t n;
	const struct uw_unwinder *const *all = uw_unwinders(&n);
	for (size_t i = 0; engine && i < n; i++)
		if (all[i]->ref == UW_REF_LR_SPLICE && all[i]->step_engine && !strcmp(all[i]->step_engine, engine))
			return all[i]->name;
	return NULL;
}

static const char *emulated_by_fp(const char *profile)
{
	return lr_step_of(emulated_by(profile));
}

/* Which profile lays a jitted ELF out as this one: .text sh_addr and the
 * PT_LOAD's p_vaddr; "" when none does or the file cannot be read. */
void hx_perfcol_layout_profile(const char *path, char *out, size_t len)
{
	out[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstr, nph;
	uint64_t text = UINT64_MAX, vaddr = UINT64_MAX;
	if (e && !elf_getshdrstrndx(e, &shstr) && !elf_getphdrnum(e, &nph)) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
			GElf_Shdr sh;
			const char *n = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstr, sh.sh_name) : NULL;
			if (n && !strcmp(n, ".text"))
				text = sh.sh_addr;
		}
		for (size_t i = 0; i < nph && i < 64; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				vaddr = ph.p_vaddr;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	for (int p = 0; p < 16; p++) {
		enum pv_profile pp = (enum pv_profile)p;
		if (!strcmp(pv_profile_name(pp), "?"))
			break;
		if (pv_text_addr(pp) == text && pv_load_vaddr(pp) == vaddr) {
			snprintf(out, len, "%s", pv_profile_name(pp));
			return;
		}
	}
}

struct pc_run {
	int size;
	uint64_t (*chain)[UW_MAX_FRAMES];   /* as perf printed them, placed at addresses */
	int *n;
	size_t nsamples;
	char why[600];           /* the run failed: why (every sample errors) */
};

struct pc_state {
	const struct hx_group *g;
	bool fp;                 /* perf-fp: --call-graph fp with arm64's LR record */
	uint32_t pid;
	char dir[128];
	/* where perf takes the jitdump to be (the view's dump dir: /tmp unless
	 * --perf-dump-dir), its marker there, and whether that is our symlink */
	char dump_dir[PATH_MAX];
	char marker[PATH_MAX + 32];
	bool linked;
	int lockfd;              /* held from the marker's placing to its removal */
	struct pc_run runs[PC_MAX_SIZES];
	int nruns;
};

/* perf script's chains, in sample order (only this case's process is in the
 * file), as printed: made return addresses in pc_unwind (it needs the view) */
static void take_chains(struct pc_run *r, const struct hx_ps *ps)
{
	if (ps->why[0])
		snprintf(r->why, sizeof(r->why), "%s", ps->why);
	if (ps->n > r->nsamples)
		snprintf(r->why, sizeof(r->why), "perf printed more samples than the %zu taken", r->nsamples);
	for (size_t k = 0; k < ps->n && k < r->nsamples; k++) {
		const struct hx_ps_sample *s = &ps->s[k];
		memcpy(r->chain[k], s->addr, sizeof(uint64_t) * (size_t)s->n);
		r->n[k] = s->n;
	}
}

/* The jitted .so files perf inject -j wrote for this case: DIR/jitted-PID-N.so */
static bool is_ours(const struct pc_state *st, const char *name)
{
	char pre[32];
	snprintf(pre, sizeof(pre), "jitted-%u-", st->pid);
	size_t n = strlen(name);
	return !strncmp(name, pre, strlen(pre)) && n > 3 && !strcmp(name + n - 3, ".so");
}

/* The layout of the first jitted-PID-N.so in dir written since `since` (when
 * the inject began) names its profile.  The dump dir is /tmp unless
 * --perf-dump-dir, and a capture's pid comes round again (pid_max 32768), so
 * a jitted-PID-N.so there may be another run's, of another perf. */
void hx_perfcol_fresh_profile(const char *dir, uint32_t pid, const struct timespec *since, char *out, size_t len)
{
	char pre[32];
	snprintf(pre, sizeof(pre), "jitted-%u-", pid);
	out[0] = 0;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t n = strlen(e->d_name);
		if (strncmp(e->d_name, pre, strlen(pre)) || n <= 3 || strcmp(e->d_name + n - 3, ".so"))
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		struct stat sb;
		if (stat(p, &sb) || sb.st_mtim.tv_sec < since->tv_sec ||
		    (sb.st_mtim.tv_sec == since->tv_sec && sb.st_mtim.tv_nsec < since->tv_nsec))
			continue;
		hx_perfcol_layout_profile(p, out, len);
		break;
	}
	if (d)
		closedir(d);
}

static void inject_profile(struct pc_state *st, const struct timespec *t0)
{
	hx_perfcol_fresh_profile(st->dump_dir, st->pid, t0, pc_profile, sizeof(pc_profile));
}

/* The marker jit-PID.dump and perf's jitted-PID-N.so files are named by the
 * capture's pid, which comes round again (pid_max): two jitunwind runs whose
 * captures had one pid would clobber each other's files in the dump dir.  A
 * lock per dump dir and pid keeps them apart: the name of an abstract unix
 * socket (no file: the kernel frees it when the holder closes it or dies), so
 * no lock file is left in /tmp; another run holding it is waited for.  Where
 * no socket can be made, the run goes on without it. */
static void lock_pid(struct pc_state *st)
{
	struct stat sb;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	st->lockfd = -1;
	if (stat(st->dump_dir, &sb))
		return;
	int n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "jitunwind-perf-%llx-%llx-%u",
			 (unsigned long long)sb.st_dev, (unsigned long long)sb.st_ino, st->pid);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	while (bind(fd, (const struct sockaddr *)&a, len)) {
		if (errno != EADDRINUSE) {
			close(fd);
			return;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	}
	st->lockfd = fd;
}

static void unlock_pid(struct pc_state *st)
{
	if (st->lockfd >= 0)
		close(st->lockfd);           /* frees the socket's name */
	st->lockfd = -1;
}

/* perf inject -j reads the dump through the marker's name and writes the
 * jitted .so files next to it; perf >= 6.8's libdw path treats them as JIT
 * code only under /tmp/jitted-.  The view took the dump to be in a directory
 * (--perf-dump-dir, default /tmp): the marker is put there, a symlink to the
 * dump, so real perf names the files as the emulation does. */
static int place_dump(struct pc_state *st, const struct uw_view *v, struct ju_err *err)
{
	char real[PATH_MAX];
	if (!realpath(st->g->dump_path, real))
		return ju_errf(err, errno, 0, "%s: %s", st->g->dump_path, strerror(errno));
	const char *pn = NULL;
	for (size_t i = 0; v->pv && i < v->pv->ndsos && !pn; i++)
		if (v->pv->dsos[i].jitted && v->pv->dsos[i].perf_name)
			pn = v->pv->dsos[i].perf_name;
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", pn ? pn : real);
	snprintf(st->dump_dir, sizeof(st->dump_dir), "%s", dirname(tmp));
	snprintf(st->marker, sizeof(st->marker), "%s/jit-%u.dump", st->dump_dir, st->pid);
	lock_pid(st);
	if (!strcmp(st->marker, real))
		return 0;
	char was[PATH_MAX];
	ssize_t wn = readlink(st->marker, was, sizeof(was) - 1);
	if (wn > 0 && (size_t)wn < sizeof(was) && (was[wn] = 0, !strcmp(was, real)))
		return 0;             /* already there (another perf column, JU_PERF_KEEP) */
	if (symlink(real, st->marker)) {
		int rc = ju_errf(err, errno, 0,
				 "%s: %s (perf would read the jitdump there; remove it or use --perf-dump-dir)",
				 st->marker, strerror(errno));
		st->marker[0] = 0;
		return rc;
	}
	st->linked = true;
	hx_scratch_register(st->marker);   /* removed if a signal ends the command */
	return 0;
}

/* Remove the marker symlink and the jitted .so files perf wrote beside it. */
static void unplace_dump(struct pc_state *st)
{
	if (!st->dump_dir[0] || getenv("JU_PERF_KEEP")) {
		unlock_pid(st);
		return;
	}
	DIR *d = opendir(st->dump_dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		char p[PATH_MAX + 300];
		if (!is_ours(st, e->d_name))
			continue;
		snprintf(p, sizeof(p), "%s/%s", st->dump_dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	if (st->linked) {
		hx_scratch_forget(st->marker);
		unlink(st->marker);
	}
	st->linked = false;
	unlock_pid(st);
}

/* perf 6.5 up to its ELF-machine register rework (sid's 7.2 has it) finds
 * registers by the arch's name, which knows none of some arches
 * (uw_arch.perf_name_unknown): there such a perf stands for profile v6.12,
 * whose jitted-ELF layout is current's */
bool hx_perf_regs_by_name(const struct uw_arch *arch, int major, int minor)
{
	return arch && arch->perf_name_unknown && major == 6 && minor >= 5;
}

static void version_profile(const struct uw_arch *arch, const struct hx_perf_build *b)
{
	int maj = 0, min = 0;
	if (b && !strcmp(pc_profile, pv_profile_name(PV_CURRENT)) && sscanf(b->version, "%d.%d", &maj, &min) == 2 &&
	    hx_perf_regs_by_name(arch, maj, min))
		snprintf(pc_profile, sizeof(pc_profile), "%s", pv_profile_name(PV_V612));
}

/* One dump size: write, inject, script, parse. */
static void run_size(struct pc_state *st, const struct uw_arch *arch, struct pc_run *r)
{
	char data[96], jit[96], out[96];
	snprintf(data, sizeof(data), "%s/p.data", st->dir);
	snprintf(jit, sizeof(jit), "%s/p.jit.data", st->dir);
	snprintf(out, sizeof(out), "%s/script.txt", st->dir);
	const struct hx_perf_build *b;
	hx_perf_probe(&b, NULL, 0);
	struct hx_toperf_opts o = { .stack_size = st->fp ? 0 : (uint32_t)r->size,
				    .attr_size = attr_size_of(b ? b->version : ""), .marker_path = st->marker,
				    .callchain_fp = st->fp };
	struct ju_err je;
	if (hx_toperf_write_group(st->g, arch, data, &o, &je)) {
		snprintf(r->why, sizeof(r->why), "writing the perf.data: %s", je.msg);
		return;
	}
	const char *inj[] = { "inject", "-j", "-i", data, "-o", jit, NULL };
	const char *scr[] = { "script", "-i", jit, "-F", "pid,time,ip,dso", "--ns", "--no-inline",
			      "--show-mmap-events", NULL };
	char inj_out[96];
	snprintf(inj_out, sizeof(inj_out), "%s/inject.txt", st->dir);
	struct timespec t0;
	clock_gettime(CLOCK_REALTIME_COARSE, &t0);
	if (hx_perf_run(st->dir, inj, NULL, inj_out, r->why, sizeof(r->why)))
		return;
	if (!pc_profile[0]) {
		inject_profile(st, &t0);
		version_profile(arch, b);
	}
	if (hx_perf_run(st->dir, scr, NULL, out, r->why, sizeof(r->why)))
		return;
	size_t n;
	char *text = hx_slurp(out, &n);
	if (!text) {
		snprintf(r->why, sizeof(r->why), "%s: %s", out, strerror(errno));
		return;
	}
	struct hx_ps ps;
	if (hx_ps_parse(&ps, text))
		snprintf(r->why, sizeof(r->why), "out of memory reading perf script's output");
	else
		take_chains(r, &ps);
	hx_ps_free(&ps);
	free(text);
}

static void pc_close(void *state)
{
	struct pc_state *st = state;
	if (!st)
		return;
	unplace_dump(st);
	for (int i = 0; i < st->nruns; i++) {
		free(st->runs[i].chain);
		free(st->runs[i].n);
	}
	hx_perf_workdir_remove(st->dir);
	free(st);
}

static int pc_new(const struct hx_col_in *in, bool fp, struct pc_state **out, struct ju_err *err)
{
	const struct uw_view *v = in->v;
	struct pc_state *st = calloc(1, sizeof(*st));
	if (!st)
		return ju_errf(err, ENOMEM, 0, "out of memory");
	st->g = in->capture;
	st->fp = fp;
	st->lockfd = -1;
	st->pid = v->jd ? v->jd->pid : 0;
	int rc = hx_perf_workdir(st->dir, sizeof(st->dir), "perf", err);
	if (!rc)
		rc = place_dump(st, v, err);
	if (rc) {
		pc_close(st);
		return rc;
	}
	*out = st;
	return 0;
}

static int pc_open_mode(const struct hx_col_in *in, void **state, struct ju_err *err, bool fp)
{
	const struct uw_view *v = in->v;
	const struct hx_group *g = in->capture;
	char why[256];
	if (probe(why, sizeof(why)))
		return ju_errf(err, ENODEV, 0, "%s", why);
	int rc;
	if (!g)
		return ju_errf(err, ENODATA, 0, "no capture to replay (the perf column needs the case's samples)");
	struct pc_state *st = NULL;
	if ((rc = pc_new(in, fp, &st, err)))
		return rc;
	/* fp mode copies no stack: one run answers every dump size */
	for (int i = 0; i < in->ndump_sizes && i < PC_MAX_SIZES && !(fp && i); i++) {
		struct pc_run *r = &st->runs[st->nruns++];
		r->size = fp ? 65528 : in->dump_sizes[i];
		r->nsamples = g->nsamples;
		r->chain = calloc(g->nsamples ? g->nsamples : 1, sizeof(*r->chain));
		r->n = calloc(g->nsamples ? g->nsamples : 1, sizeof(*r->n));
		if (!r->chain || !r->n) {
			pc_close(st);
			return ju_errf(err, ENOMEM, 0, "out of memory");
		}
		run_size(st, v->arch, r);
	}
	unplace_dump(st);
	/* perf found on PATH, not asked for, that cannot read this case's files:
	 * a visible skip of the column (the session's open returns 1), not
	 * every sample an error */
	bool none = true;
	for (int i = 0; i < st->nruns; i++)
		for (size_t k = 0; k < st->runs[i].nsamples && none; k++)
			none = st->runs[i].n[k] == 0;
	if (none && st->nruns && st->runs[0].why[0] && !hx_perf_cmd_given()) {
		ju_errf(err, 0, 0, "%s", st->runs[0].why);
		pc_close(st);
		return 1;
	}
	*state = st;
	return 0;
}

static int pc_open(const struct hx_col_in *in, void **state, struct ju_err *err)
{
	return pc_open_mode(in, state, err, false);
}

static int pc_open_fp(const struct hx_col_in *in, void **state, struct ju_err *err)
{
	return pc_open_mode(in, state, err, true);
}

/* Whether the FDE covering pc in the process (the emitted CFI for JIT code)
 * has a CIE with augmentation 'S' (a signal frame). */
static bool cie_signal(const struct uw_view *v, uint64_t at)
{
	const struct uw_region *reg = uw_view_find(v, at);
	const struct ehf_fde *fde = reg && reg->has_cfi ? ehf_find_fde(&reg->cfi, at) : NULL;
	return fde && fde->cie && fde->cie->signal;
}

/* DWARF mode: perf stores every frame after the first as pc - 1 unless its
 * unwinder calls it an activation: the frame it stepped from has an 'S' CIE
 * (libunwind's unw_is_signal_frame), or with libdw (dwfl_frame_pc) also the
 * frame's own; a zero return address is printed as -1.  Back to return
 * addresses, as the emulations report them. */
static void to_return_addresses(const struct uw_view *v, const uint64_t *printed, int n, uint64_t *out)
{
	const struct hx_perf_build *b;
	const struct uw_unwinder *eng = hx_perf_probe(&b, NULL, 0) ? NULL : uw_unwinder_by_name(b->engine);
	bool self = eng && eng->signal_self;
	for (int f = 0; f < n; f++) {
		uint64_t a = printed[f];
		if (f == 0) {
			out[f] = a;
			continue;
		}
		if (a == PC_ZERO) {
			out[f] = 0;
			continue;
		}
		bool exact = cie_signal(v, printed[f - 1]) || (self && cie_signal(v, a));
		out[f] = exact ? a : a + 1;
	}
}

/* FP mode: perf prints the kernel's callchain as recorded (return addresses)
 * and, after the pc, the leaf's caller from its one-step unwind, which is
 * pc - 1 of that step (get_leaf_frame_caller_aarch64): a chain one longer
 * than the kernel's carries it, back to a return address here. */
static void fp_return_addresses(const struct uw_view *v, const struct uw_sample *s, const uint64_t *printed,
				int n, uint64_t *out)
{
	struct uw_result k;
	uw_fp.unwind(NULL, v, s, &k);
	for (int f = 0; f < n; f++)
		out[f] = printed[f] == PC_ZERO ? 0 : printed[f];
	if (n == k.n + 1 && n > 1 && printed[1] != PC_ZERO)
		out[1] = printed[1] + 1;
}

/* The run whose perf.data holds this sample: in DWARF mode the smallest dump
 * size >= the sample's stack copy; in fp mode the one run, whatever the size
 * of the whole stack it is handed (UW_SEES_WHOLE: arm64's capture starts
 * 256 KiB below the stack's top, more than any dump size). */
int hx_perfcol_pick_run(const int *sizes, int n, bool fp, uint64_t stack_size)
{
	if (fp)
		return n > 0 ? 0 : -1;
	int best = -1;
	for (int i = 0; i < n; i++)
		if ((uint64_t)sizes[i] >= stack_size && (best < 0 || sizes[i] < sizes[best]))
			best = i;
	return best;
}

static int pc_unwind(void *state, const struct uw_view *v, const struct uw_sample *s, struct uw_result *r)
{
	struct pc_state *st = state;
	r->n = 0;
	r->stop = UW_STOP_ERROR;
	r->why[0] = r->fallback_why[0] = 0;
	if (!st) {
		snprintf(r->why, sizeof(r->why), "perf did not run for this case");
		return -ENODATA;
	}
	size_t k = 0;
	while (k < st->g->nsamples && st->g->samples[k].stack != s->stack)
		k++;
	int sizes[PC_MAX_SIZES];
	for (int i = 0; i < st->nruns; i++)
		sizes[i] = st->runs[i].size;
	int ri = hx_perfcol_pick_run(sizes, st->nruns, st->fp, s->stack_size);
	const struct pc_run *run = ri < 0 ? NULL : &st->runs[ri];
	if (k == st->g->nsamples || !run) {
		snprintf(r->why, sizeof(r->why), "not a sample of this case's perf.data");
		return -ENOENT;
	}
	if (run->n[k] == 0) {
		snprintf(r->why, sizeof(r->why), "%s", run->why[0] ? run->why : "perf printed no chain for it");
		return -ENODATA;
	}
	if (st->fp)
		fp_return_addresses(v, s, run->chain[k], run->n[k], r->addr);
	else
		to_return_addresses(v, run->chain[k], run->n[k], r->addr);
	memset(r->flags, 0, sizeof(r->flags));
	r->n = run->n[k];
	r->stop = UW_STOP_END;
	/* tools/perf-agree reads the emulation and its profile from here */
	const struct hx_perf_build *b;
	bool ok = !hx_perf_probe(&b, NULL, 0);
	const char *emu = ok ? (st->fp ? lr_step_of(b->engine) : b->engine) : NULL;
	snprintf(r->why, sizeof(r->why), "perf %s script printed %d frames; compared with %s under profile %s",
		 ok ? b->version : "?", r->n, emu ? emu : "?", pc_profile[0] ? pc_profile : "?");
	return 0;
}

/* Case keys by perf version (?perf@6.13+: perf builds libunwind only on
 * request from 6.13 on, so it unwinds with libdw): the perf that runs */
static const char *perf_lib_version(void)
{
	const struct hx_perf_build *b;
	return hx_perf_probe(&b, NULL, 0) ? NULL : b->version;
}

static const struct uw_unwinder uw_perf = {
	HX_COL_PERF_META,
	.unwind = pc_unwind,            /* opened over the capture: columns[] */
	.close = pc_close,
	.probe = probe,
	.emulated_by = emulated_by,
	.lib_version = perf_lib_version,
};

/* perf-fp: arm64's --call-graph fp (the kernel's frame-pointer chain, LR in
 * the user registers, perf script's one-step leaf record).  Named with
 * --unwinders: a run under emulation finds this machine's perf, which cannot
 * unwind arm64, so it is never on by default, and has no probe (pc_open
 * probes) so no default selection names it (hx_col_no_arches). */
static const struct uw_unwinder uw_perf_fp = {
	HX_COL_PERF_FP_META,
	.unwind = pc_unwind,
	.close = pc_close,
	.emulated_by = emulated_by_fp,
	.lib_version = perf_lib_version,
};

/* The run layer's column table: the unwinders, then real perf's columns,
 * each opened over the capture the session hands it. */
#define COL_ADDR(id) &id,
static const struct uw_unwinder *const columns[] = {
	UW_UNWINDERS(COL_ADDR)
	&uw_perf,         /* real perf, run per case */
	&uw_perf_fp,      /* the same, arm64 --call-graph fp with the LR record */
};
#define NCOL (sizeof(columns) / sizeof(columns[0]))
static const hx_col_open_fn openers[NCOL] = { [NCOL - 2] = pc_open, [NCOL - 1] = pc_open_fp };

const struct uw_unwinder *const *hx_columns(size_t *n)
{
	*n = NCOL;
	return columns;
}

const struct uw_unwinder *hx_column_by_name(const char *name)
{
	return uw_table_find(columns, NCOL, name);
}

void hx_column_list(const char *arch, char *buf, size_t len)
{
	uw_table_list(columns, NCOL, arch, false, buf, len);
}

void hx_column_defaults(const char *arch, char *buf, size_t len)
{
	uw_table_list(columns, NCOL, arch, true, buf, len);
}

hx_col_open_fn hx_column_opener(const struct uw_unwinder *uw)
{
	for (size_t i = 0; i < NCOL; i++)
		if (columns[i] == uw)
			return openers[i];
	return NULL;
}

enum hx_perfcol_status hx_perfcol_check(const char *const *names, int n, bool named, const char *arch,
					char *why, size_t len)
{
	bool asked = false;
	for (int i = 0; named && i < n; i++) {
		const struct uw_unwinder *u = hx_column_by_name(names[i]);
		asked |= u && hx_column_opener(u);
	}
	for (size_t i = 0; !named && hx_perf_cmd_given() && i < NCOL; i++)
		asked |= openers[i] && arch && uw_unwinder_default_on(columns[i], arch);
	why[0] = 0;
	if (!asked || !hx_perf_probe(NULL, why, len))
		return HX_PERFCOL_OK;
	return hx_perf_bad_cmd() ? HX_PERFCOL_BAD_CMD : HX_PERFCOL_UNUSABLE;
}
