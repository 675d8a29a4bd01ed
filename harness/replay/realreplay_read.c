/* `jitunwind replay FILE.data`: reading the recording (realreplay_int.h).
 * The perf.data's MMAP/MMAP2/FORK events, the jitdumps their marker mappings
 * (or perf inject -j's maps, or --jitdump) name, their CODE_LOADs as the
 * MMAP2s perf inject would add at their timestamps, and the perf maps of
 * anonymous code: one map tree over time and the samples to replay. */
#include "harness/replay/realreplay.h"
#include "harness/run/session.h"
#include "harness/run/pidtmp.h"
#include "harness/replay/realreplay_int.h"
#include "harness/case/say.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define RR_PMAP_MAX_LINES 10000000          /* bound on a perf map's lines */
#define RR_RELEASE (16u << 20)              /* file bytes read before their pages are dropped */

bool hx_is_perf_data(const char *path)
{
	FILE *f = fopen(path, "rb");
	char m[8];
	bool yes = f && fread(m, 1, 8, f) == 8 && (!memcmp(m, PD_MAGIC, 8) || !memcmp(m, PD_MAGIC_SWAPPED, 8));
	if (f)
		fclose(f);
	return yes;
}

bool hx_perf_data_why(const char *path, char *why, size_t len)
{
	FILE *f = fopen(path, "rb");
	unsigned char m[8];
	size_t n = f ? fread(m, 1, 8, f) : 0;
	int e = errno;
	if (f)
		fclose(f);
	if (!f)
		snprintf(why, len, "cannot open it: %s", strerror(e));
	else if (n < 8)
		snprintf(why, len, "%zu bytes, shorter than the 8-byte magic \"%s\"", n, PD_MAGIC);
	else if (!memcmp(m, PD_MAGIC, 8) || !memcmp(m, PD_MAGIC_SWAPPED, 8))
		return true;
	else if (!memcmp(m, "\0\0\0\0\0\0\0\0", 8))
		snprintf(why, len, "offset 0: a zero header, which perf writes last: perf record or perf "
			 "inject did not finish it");
	else {
		char shown[8 * 4 + 1];
		size_t k = 0;
		for (size_t i = 0; i < 8; i++)
			k += (size_t)snprintf(shown + k, sizeof(shown) - k, m[i] >= 0x20 && m[i] < 0x7f ? "%c" : "\\x%02x", m[i]);
		snprintf(why, len, "offset 0: magic \"%s\", expected \"%s\"", shown, PD_MAGIC);
	}
	return false;
}

char *hx_rr_with_symfs(const struct rr *r, const char *p)
{
	char *s = NULL;
	if (r->symfs && p[0] == '/') {
		if (asprintf(&s, "%s%s", r->symfs, p) < 0)
			s = NULL;
	} else {
		s = strdup(p);
	}
	return s;
}

/* jitted-<pid>-<index>.so: a map `perf inject -j` added for a CODE_LOAD */
static bool is_injected(const char *path)
{
	const char *b = strrchr(path, '/');
	unsigned pid;
	unsigned long long idx;
	int n = 0;
	return sscanf(b ? b + 1 : path, "jitted-%u-%llu.so%n", &pid, &idx, &n) == 2 && n > 0 &&
	       (b ? b + 1 : path)[n] == 0;
}

/* jit-<pid>.dump: the marker perf inject -j opens the dump through */
static bool is_marker(const char *path)
{
	const char *b = strrchr(path, '/');
	unsigned pid;
	char tail[8];
	return b && sscanf(b + 1, "jit-%u.dump%7s", &pid, tail) == 1;
}

/* A dump the recording names (its marker mapping) whose header perf refuses
 * (a version above 1, a header flag but ARCH_TIMESTAMP: LLVM 19's
 * uninitialized flags): perf inject -j exits 255 on it, so the user's perf
 * sees the recording without it.  So does the replay, saying so.  A dump
 * named with --jitdump stays an error. */
static bool perf_refuses(const struct ju_err *je)
{
	return je->offset == JD_HDR_VERSION || je->offset == JD_HDR_FLAGS;
}

/* where the dump's last whole record ends (the header's 40 bytes without one) */
static uint64_t whole_end(const struct jd_file *f)
{
	return f->nrecs ? f->recs[f->nrecs - 1].file_off + f->recs[f->nrecs - 1].total_size : 40;
}

static int add_dump_as(struct rr *r, const char *recorded, bool found)
{
	for (size_t i = 0; i < r->ndumps; i++)
		if (!strcmp(r->recorded[i], recorded))
			return 0;
	for (size_t i = 0; i < r->nrefused; i++)
		if (!strcmp(r->refused[i], recorded))
			return 0;
	if (r->ndumps == RR_MAX_DUMPS) {
		snprintf(r->err, sizeof(r->err), "%s: more than %d jitdumps", recorded, RR_MAX_DUMPS);
		return -ERANGE;
	}
	size_t i = r->ndumps;
	char *real = hx_rr_with_symfs(r, recorded);
	struct ju_err je, tail;
	int orc = real ? jd_open_whole_records(&r->jd[i], real, &je, &tail) : ju_errf(&je, ENOMEM, 0, "out of memory");
	if (orc) {
		if (real && found && perf_refuses(&je) && r->nrefused < RR_MAX_DUMPS &&
		    (r->refused[r->nrefused] = strdup(recorded))) {
			r->nrefused++;
			ju_say(JU_SAY_WARNING, "jitunwind", "%s: offset 0x%" PRIx64 ": %s: perf inject -j refuses this dump, so "
				"the recording is replayed without it, as perf sees it (its code: no symbols, no "
				"unwinding info)", real, je.offset, je.msg);
			free(real);
			return 0;
		}
		/* a dump that moved: say where the perf.data names it and how to point there */
		const char *hint = orc == -ENOENT ? "; the perf.data names the dump at this path: if it moved, "
			"name it with --jitdump FILE, or replay with --symfs DIR (DIR + this path)" : "";
		snprintf(r->err, sizeof(r->err), "%s: offset 0x%" PRIx64 ": %s%s", real ? real : recorded,
			 je.offset, je.msg, hint);
		free(real);
		return orc;
	}
	if (tail.msg[0])
		ju_say(JU_SAY_WARNING, "jitunwind", "%s: offset 0x%" PRIx64 ": %s: judged up to the last whole record (%zu "
			"records, %zu loads), as perf inject -j reads it; the %zu bytes from offset 0x%" PRIx64 " are not",
			real, tail.offset, tail.msg, r->jd[i].nrecs, r->jd[i].nloads,
			r->jd[i].size - (size_t)whole_end(&r->jd[i]), whole_end(&r->jd[i]));
	r->dump_path[i] = real;
	r->recorded[i] = strdup(recorded);
	/* perf names the jitted .so files after the dump's directory as recorded */
	const char *sl = strrchr(recorded, '/');
	r->dump_dir[i] = sl ? strndup(recorded, sl == recorded ? 1 : (size_t)(sl - recorded)) : strdup(".");
	r->ndumps++;
	return 0;
}

static int add_dump(struct rr *r, const char *recorded)
{
	return add_dump_as(r, recorded, true);
}

static int note_seq(struct rr *r, bool jit)
{
	size_t seq = r->mt.n - 1;
	if (seq >= r->is_jit_cap) {
		size_t cap = r->is_jit_cap ? r->is_jit_cap * 2 : 256;
		while (cap <= seq)
			cap *= 2;
		uint8_t *p = realloc(r->is_jit, cap);
		if (!p)
			return -ENOMEM;
		r->is_jit = p;
		r->is_jit_cap = cap;
	}
	r->is_jit[seq] = jit;
	return 0;
}

static int add_exec(struct rr *r, const struct pd_event *ev)
{
	if (r->nexe == r->cexe) {
		size_t c = r->cexe ? r->cexe * 2 : 16;
		struct rr_exec *p = realloc(r->exe, c * sizeof(*p));
		if (!p)
			return -ENOMEM;
		r->exe = p;
		r->cexe = c;
	}
	r->exe[r->nexe++] = (struct rr_exec){ ev->offset, ev->time, ev->pid };
	return 0;
}

static int on_event(struct rr *r, const struct pd_event *ev, const char *const *dumps, int ndumps)
{
	int rc = 0;
	if (ev->type == PD_REC_MMAP || ev->type == PD_REC_MMAP2) {
		const struct pd_mmap2 *m = &ev->mmap;
		uint32_t prot = ev->type == PD_REC_MMAP2 ? m->prot :
				(ev->misc & PD_MISC_MMAP_DATA) ? 1u : 5u;
		if (!m->len)
			return 0;
		/* an injected recording: the loads come from the dump, at the
		 * same timestamps perf inject gave these maps */
		if (is_injected(m->filename)) {
			r->ninjected++;
			/* perf inject drops the marker: the dump is jit-<pid>.dump
			 * where perf inject wrote the .so files */
			char dp[PD_PATH_MAX + 32];
			const char *sl = strrchr(m->filename, '/');
			snprintf(dp, sizeof(dp), "%.*sjit-%u.dump", sl ? (int)(sl - m->filename + 1) : 0,
				 m->filename, m->pid);
			if (!ndumps && (rc = add_dump(r, dp)))
				return rc;
			return 0;
		}
		rc = mt_add_mmap(&r->mt, m->pid, m->start, m->len, m->pgoff, prot, m->filename, ev->time);
		if (rc == -EINVAL) {
			snprintf(r->err, sizeof(r->err), "%s: offset 0x%" PRIx64 ": mapping 0x%" PRIx64
				 " + 0x%" PRIx64 " wraps around", r->path, ev->offset, m->start, m->len);
			return rc;
		}
		if (!rc)
			rc = note_seq(r, false);
		if (!rc)
			rc = mt_add_mmap(&r->mtf, m->pid, m->start, m->len, m->pgoff, prot, m->filename, ev->time);
		if (!rc && !ndumps && is_marker(m->filename) && (rc = add_dump(r, m->filename)))
			return rc;
	} else if (ev->type == PD_REC_FORK) {
		rc = mt_add_fork(&r->mt, ev->pid, ev->ppid, ev->time);
		if (!rc)
			rc = note_seq(r, false);
		if (!rc)
			rc = mt_add_fork(&r->mtf, ev->pid, ev->ppid, ev->time);
	} else if (ev->type == PD_REC_COMM && (ev->misc & PD_MISC_COMM_EXEC)) {
		rc = add_exec(r, ev);
	} else if (ev->type == PD_REC_SAMPLE) {
		if (r->nsmp == r->csmp) {
			size_t c = r->csmp ? r->csmp * 2 : 1024;
			struct rr_sample *p = realloc(r->smp, c * sizeof(*p));
			if (!p)
				rc = -ENOMEM;
			else {
				r->smp = p;
				r->csmp = c;
			}
		}
		if (!rc)
			r->smp[r->nsmp++] = (struct rr_sample){ ev->offset, ev->sample.time, ev->sample.pid,
							       ev->sample.tid };
	}
	if (rc) {
		snprintf(r->err, sizeof(r->err), "%s: %s", r->path, strerror(-rc));
		return rc;
	}
	(void)dumps;
	return 0;
}

/* Each CODE_LOAD and CODE_MOVE as the MMAP2 perf inject adds for it, at its
 * timestamp (all at 0 when perf's clock is not the dump's CLOCK_MONOTONIC). */
static int add_loads(struct rr *r)
{
	for (size_t d = 0; d < r->ndumps; d++)
		for (size_t i = 0; i < r->jd[d].nloads; i++) {
			const struct jd_load *l = &r->jd[d].loads[i];
			struct pv_layout ly;
			pv_layout_load(r->prof, l, &ly);
			int rc = mt_add_mmap(&r->mt, r->jd[d].pid, ly.map_start, ly.map_len, ly.map_pgoff, 5,
					     l->name, r->clock_ok ? l->timestamp : 0);
			if (rc == -EINVAL)
				continue;     /* pv_build reports it with the dump offset */
			if (rc || note_seq(r, true)) {
				snprintf(r->err, sizeof(r->err), "out of memory");
				return -ENOMEM;
			}
		}
	for (size_t d = 0; d < r->ndumps; d++)
		for (size_t i = 0; i < r->jd[d].nmoves; i++) {
			const struct jd_move *m = &r->jd[d].moves[i];
			uint64_t start, len, pgoff;
			pv_layout_move(r->prof, m, &start, &len, &pgoff);
			/* named as the load it moves (the last of its code_index before it) */
			const char *name = "";
			for (size_t k = m->nloads_before; k-- > 0 && !name[0];)
				if (r->jd[d].loads[k].code_index == m->code_index && r->jd[d].loads[k].name)
					name = r->jd[d].loads[k].name;
			int rc = mt_add_mmap(&r->mt, r->jd[d].pid, start, len, pgoff, 5, name,
					     r->clock_ok ? m->timestamp : 0);
			if (rc == -EINVAL)
				continue;
			if (rc || note_seq(r, true)) {
				snprintf(r->err, sizeof(r->err), "out of memory");
				return -ENOMEM;
			}
		}
	return 0;
}

static int cmp_psym(const void *a, const void *b)
{
	const struct rr_pmap_sym *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* One line of a perf map: "START SIZE NAME" in hex, without 0x (perf's
 * own parser also accepts it). 0, or -1 when it is not such a line. */
static int pmap_line(char *l, struct rr_pmap_sym *s)
{
	char *e;
	errno = 0;
	unsigned long long st = strtoull(l, &e, 16);
	if (e == l || *e != ' ' || errno)
		return -EINVAL;
	char *e2;
	unsigned long long sz = strtoull(e + 1, &e2, 16);
	if (e2 == e + 1 || *e2 != ' ' || errno || st + sz < st)
		return -EINVAL;
	size_t n = strcspn(e2 + 1, "\n");
	s->start = st;
	s->end = st + sz;
	s->name = strndup(e2 + 1, n);
	return s->name ? 0 : -1;
}

/* /tmp/perf-<pid>.map (under --symfs), which perf reads for the symbols of
 * a process's anonymous mappings (CPython -X perf, V8 --perf-basic-prof). */
static int load_pmap(struct rr *r, uint32_t pid)
{
	char rec[64];
	snprintf(rec, sizeof(rec), "/tmp/perf-%u.map", pid);
	char *path = hx_rr_with_symfs(r, rec);
	FILE *f = path ? fopen(path, "r") : NULL;
	if (!f) {
		free(path);
		return 0;                /* none: perf leaves such maps unnamed too */
	}
	struct rr_pmap *pm = &r->pmaps[r->npmaps++];
	*pm = (struct rr_pmap){ .pid = pid, .path = path };
	size_t cap = 0, line = 0;
	char buf[4096];
	while (fgets(buf, sizeof(buf), f) && ++line <= RR_PMAP_MAX_LINES) {
		if (buf[0] == '\n')
			continue;
		if (pm->n == cap) {
			size_t c = cap ? cap * 2 : 256;
			struct rr_pmap_sym *p = realloc(pm->syms, c * sizeof(*p));
			if (!p)
				goto oom;
			pm->syms = p;
			cap = c;
		}
		if (pmap_line(buf, &pm->syms[pm->n])) {
			snprintf(r->err, sizeof(r->err), "%s: line %zu: expected \"START SIZE NAME\" (hex)", path, line);
			fclose(f);
			return -EINVAL;
		}
		pm->n++;
	}
	fclose(f);
	if (pm->n)
		qsort(pm->syms, pm->n, sizeof(*pm->syms), cmp_psym);
	return 0;
oom:
	fclose(f);
	snprintf(r->err, sizeof(r->err), "out of memory");
	return -ENOMEM;
}

static int load_pmaps(struct rr *r)
{
	for (size_t i = 0; i < r->nsmp; i++) {
		bool seen = false;
		for (size_t k = 0; k < r->npmaps && !seen; k++)
			seen = r->pmaps[k].pid == r->smp[i].pid;
		for (size_t k = 0; k < i && !seen; k++)
			seen = r->smp[k].pid == r->smp[i].pid;   /* tried: no map */
		int rc = !seen && r->npmaps < RR_MAX_DUMPS ? load_pmap(r, r->smp[i].pid) : 0;
		if (rc)
			return rc;
	}
	return 0;
}

const struct rr_pmap_sym *hx_rr_pmap_find(const struct rr *r, uint32_t pid, uint64_t a)
{
	for (size_t k = 0; k < r->npmaps; k++) {
		const struct rr_pmap *pm = &r->pmaps[k];
		if (pm->pid != pid)
			continue;
		size_t lo = 0, hi = pm->n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (pm->syms[mid].start <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo && a < pm->syms[lo - 1].end ? &pm->syms[lo - 1] : NULL;
	}
	return NULL;
}

/* Drop the pages of the file's [a, b) from memory (the kernel reads them
 * again if they are used again; MMAP names point into them): the replay's
 * memory stays flat in the file size. */
void hx_rr_release(const struct rr *r, uint64_t a, uint64_t b)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), s = (a + pg - 1) & ~(pg - 1), e = b & ~(pg - 1);
	if (r->pf.mapped && e > s && e <= r->pf.size)
		madvise((void *)(r->pf.data + s), (size_t)(e - s), MADV_DONTNEED);
}

struct rb_ent {
	const char *path;
	uint64_t base;
};

static int cmp_rb(const void *a, const void *b)
{
	const struct rb_ent *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	return c ? c : (x->base > y->base) - (x->base < y->base);
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The files mapped at two bases or more, by any process (a fork's child
 * keeps its parent's maps, then an exec maps the files again), the vDSO
 * among them (one DSO in perf, mapped anew by each exec). */
static int find_rebased(struct rr *r)
{
	size_t n = 0;
	struct rb_ent *e = malloc((r->mtf.n ? r->mtf.n : 1) * sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (size_t i = 0; i < r->mtf.n; i++) {
		const struct mt_event *ev = &r->mtf.ev[i];
		if (ev->kind == MT_MMAP && ev->map.path &&
		    ((ev->map.path[0] == '/' && !hx_rr_anon_path(ev->map.path)) || !strcmp(ev->map.path, "[vdso]")))
			e[n++] = (struct rb_ent){ ev->map.path, ev->map.start - ev->map.pgoff };
	}
	if (n)
		qsort(e, n, sizeof(*e), cmp_rb);
	for (size_t i = 1; i < n; i++) {
		if (strcmp(e[i].path, e[i - 1].path) || e[i].base == e[i - 1].base)
			continue;
		if (r->nrebased && !strcmp(r->rebased[r->nrebased - 1], e[i].path))
			continue;
		const char **g = realloc(r->rebased, (r->nrebased + 1) * sizeof(*g));
		if (!g) {
			free(e);
			return -ENOMEM;
		}
		r->rebased = g;
		r->rebased[r->nrebased++] = e[i].path;
	}
	free(e);
	return 0;
}

bool hx_rr_rebased(const struct rr *r, const char *path)
{
	return r->nrebased && bsearch(&path, r->rebased, r->nrebased, sizeof(*r->rebased), cmp_path);
}

/* perf script reads [vdso] frames of a recording that names no vDSO
 * build-id from its own vDSO (tools/perf/util/vdso.c copies the reading
 * process's vDSO map to /tmp/perf-vdso.so-XXXXXX): perf >= 7 writes build-ids
 * into the MMAP2 events and no HEADER_BUILD_ID, and its vDSO map carries none
 * (sid's 7.2.13, measured; under --symfs, even `--symfs /`, too).  The replay
 * does the same with its own vDSO, on the recording's arch only; the file is
 * removed with the views. */
static int own_vdso(struct rr *r)
{
	FILE *m = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo = 0, hi = 0;
	while (m && fgets(line, sizeof(line), m))   /* bounded by the maps file */
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	if (m)
		fclose(m);
	if (!lo || hi <= lo || hi - lo > 1u << 20)
		return 0;                   /* none (qemu-user may give none): chains end at [vdso] */
	hx_pidtmp_sweep("/dev/shm", "jitunwind-vdso");   /* a killed replay's */
	int fd = hx_pidtmp_make(r->vdso, sizeof(r->vdso), "/dev/shm", "jitunwind-vdso", false);
	if (fd < 0)
		return 0;
	bool ok = write(fd, (const void *)lo, hi - lo) == (ssize_t)(hi - lo);
	if (close(fd) || !ok) {
		unlink(r->vdso);
		r->vdso[0] = 0;
		return 0;
	}
	r->vdso_own = true;
	return 0;
}

/* perf records the vDSO's build-id (HEADER_BUILD_ID, "[vdso]") and copies the
 * vDSO into its build-id cache, as [vdso]/<build-id>/vdso; perf report and
 * script read [vdso] frames from there (without it, the [vdso] DSO has no
 * data: libunwind and libdw stop at its frame).  The emulation takes the same
 * file; the perf column's private cache gets a copy (realperf.c).  With no
 * [vdso] entry: own_vdso. */
static int find_vdso(struct rr *r)
{
	struct pd_build_id b;
	struct ju_err je;
	uint16_t misc;
	bool here = r->arch && r->arch == uw_arch_host();   /* --symfs too: 7.2.13 reads its own there */
	for (size_t n = 0; n < 1u << 20; n++) {
		int rc = pd_feat_build_id(&r->pf, n, &b, &misc, &je);
		if (rc < 0)
			snprintf(r->err, sizeof(r->err), "%s", je.msg);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		if (rc <= 0) {
			r->err[0] = 0;
			return here ? own_vdso(r) : 0;
		}
		if (strcmp(b.path, "[vdso]") || !b.size || b.size > PD_BUILD_ID_MAX)
			continue;
		for (unsigned i = 0; i < b.size; i++)
			snprintf(r->vdso_bid + 2 * i, 3, "%02x", b.id[i]);
		const char *env = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
		snprintf(r->vdso, sizeof(r->vdso), "%s%s/[vdso]/%s/vdso", env ? env : home ? home : "",
			 env ? "" : "/.debug", r->vdso_bid);
		/* perf with --symfs (even `--symfs /`) reads no vDSO data: its
		 * chains end at a [vdso] frame (perf 6.1 and 6.12, measured) */
		if (r->symfs || access(r->vdso, R_OK))
			r->vdso[0] = 0;
		return 0;
	}
	return 0;
}

int hx_rr_read_events(struct rr *r, const char *const *dumps, int ndumps)
{
	struct ju_err je;
	int rc = pd_open(&r->pf, r->path, &je);
	if (rc)
		return snprintf(r->err, sizeof(r->err), "%s", je.msg), rc;
	const char *arch = NULL;
	if ((rc = pd_feat_string(&r->pf, PD_FEAT_ARCH, &arch, &je)) == -EINVAL)
		return snprintf(r->err, sizeof(r->err), "%s", je.msg), rc;
	r->arch = arch ? uw_arch_by_name(arch) : NULL;   /* uname -m, or the table's other spelling of it */
	if (!r->arch) {
		snprintf(r->err, sizeof(r->err), "%s: HEADER_ARCH '%s': not an arch jitunwind knows", r->path,
			 arch ? arch : "(none)");
		return -EINVAL;
	}
	for (int i = 0; i < ndumps; i++)
		if ((rc = add_dump_as(r, dumps[i], false)))
			return rc;
	r->clock_ok = r->pf.nattrs && pd_attr_flag(&r->pf.attrs[0], PD_ATTR_USE_CLOCKID) &&
		      r->pf.attrs[0].clockid == 1;   /* CLOCK_MONOTONIC, perf record -k 1 */
	r->stack_size = r->pf.nattrs ? r->pf.attrs[0].sample_stack_user : 0;
	struct pd_iter it = { 0 };
	struct pd_event ev;
	uint64_t done = 0;
	while ((rc = pd_next(&r->pf, &it, &ev, &je)) == 1) {
		int erc = on_event(r, &ev, dumps, ndumps);
		if (erc)
			return erc;
		if (it.off - done > RR_RELEASE) {
			hx_rr_release(r, done, it.off);
			done = it.off;
		}
	}
	if (rc < 0)
		return snprintf(r->err, sizeof(r->err), "%s", je.msg), rc;
	if ((rc = find_vdso(r)))
		return rc;
	if (find_rebased(r)) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		return -ENOMEM;
	}
	if ((rc = add_loads(r)))
		return rc;
	return load_pmaps(r);
}

