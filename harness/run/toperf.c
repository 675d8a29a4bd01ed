/* Samples file -> perf.data (toperf.h).  Per case: the child's COMM, an MMAP2
 * for every mapping perf record would synthesize from its maps (mmap_data is
 * on with --call-graph dwarf), the jitdump marker (perf inject -j opens the
 * dump through it) and the code arena (//anon, after the marker, as the
 * capture created them), then one SAMPLE per sample point, stamped after the
 * jitdump's last record so every CODE_LOAD precedes the samples that hit it. */
#include "harness/run/toperf.h"
#include "harness/capture/samples.h"
#include "unwinders/model/jitdump.h"
#include "unwinders/model/perfdata.h"
#include "unwinders/unwind.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#define SAMPLE_STEP_NS 1000          /* samples 1 us apart, in sample order */

struct mline {
	uint64_t start, end, pgoff, ino;
	uint32_t maj, min;
	char perms[5];
	char path[PD_PATH_MAX];
};

int hx_toperf_abi(const char *s, uint32_t *attr_size)
{
	static const struct { const char *name; uint32_t size; } abis[] = {
		{ "5.10", PD_ATTR_SIZE_VER6 }, { "6.1", PD_ATTR_SIZE_VER7 }, { "6.3", PD_ATTR_SIZE_VER8 },
	};
	for (size_t i = 0; i < sizeof(abis) / sizeof(abis[0]); i++)
		if (!strcmp(s, abis[i].name)) {
			*attr_size = abis[i].size;
			return 0;
		}
	return -EINVAL;
}

/* one /proc/<pid>/maps line: start-end perms offset maj:min inode [path] */
static int parse_mline(const char *line, struct mline *m)
{
	unsigned long long s, e, off, ino;
	unsigned maj, min;
	int n = 0;
	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &s, &e, m->perms, &off, &maj, &min, &ino, &n) != 7)
		return -EINVAL;
	m->start = s;
	m->end = e;
	m->pgoff = off;
	m->maj = maj;
	m->min = min;
	m->ino = ino;
	snprintf(m->path, sizeof(m->path), "%s", line + n);
	return s < e ? 0 : -EINVAL;
}

/* GNU build-id of an ELF file, through elfutils */
static int file_build_id(const char *path, uint8_t *id, uint8_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ju_errno();
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *bid = NULL;
	ssize_t n = e ? dwelf_elf_gnu_build_id(e, &bid) : -1;
	if (n > 0) {
		*size = (uint8_t)(n > PD_BUILD_ID_MAX ? PD_BUILD_ID_MAX : n);
		memcpy(id, bid, *size);
	}
	if (e)
		elf_end(e);
	close(fd);
	return n > 0 ? 0 : -ENODATA;
}

static bool is_arena(const struct hx_group *g, const struct mline *m)
{
	if (m->path[0])
		return false;
	for (uint32_t i = 0; i < g->nfuncs; i++)
		if (g->funcs[i].addr >= m->start && g->funcs[i].addr < m->end)
			return true;
	return false;
}

static bool is_marker(const struct mline *m, uint32_t pid)
{
	char tail[64];
	snprintf(tail, sizeof(tail), "/jit-%u.dump", pid);
	size_t n = strlen(m->path), t = strlen(tail);
	return n >= t && !strcmp(m->path + n - t, tail);
}

/* The MMAP2 perf record would write for a maps line (perf's synthesized events:
 * non-exec mappings only when readable, as MMAP_DATA; no name is //anon). */
static void map_event(struct pd_writer *w, const struct mline *m, uint32_t pid, uint64_t t,
		      const struct hx_toperf_opts *o)
{
	if (!strcmp(m->path, "[vsyscall]"))
		return;               /* a kernel address: not a user mapping perf resolves */
	bool exec = m->perms[2] == 'x';
	/* data mappings only with mmap_data, which --call-graph dwarf sets */
	if (!exec && (m->perms[0] != 'r' || o->callchain_fp))
		return;
	struct pd_mmap2 e = {
		.pid = pid, .tid = pid, .start = m->start, .len = m->end - m->start, .pgoff = m->pgoff,
		.maj = m->maj, .min = m->min, .ino = m->ino,
		.prot = (m->perms[0] == 'r' ? 1u : 0) | (m->perms[1] == 'w' ? 2u : 0) | (exec ? 4u : 0),
		.flags = m->perms[3] == 's' ? 1u : 2u,       /* MAP_SHARED : MAP_PRIVATE */
		.misc = (uint16_t)(PD_MISC_USER | (exec ? 0 : PD_MISC_MMAP_DATA)),
		.filename = m->path[0] ? m->path : "//anon", .time = t,
	};
	bool file = m->path[0] == '/';
	uint8_t id[PD_BUILD_ID_MAX], idn = 0;
	if (file && !file_build_id(m->path, id, &idn)) {
		pd_w_build_id(w, m->path, id, idn);
		if (o->buildid_mmap) {
			e.has_build_id = true;
			memcpy(e.build_id, id, idn);
			e.build_id_size = idn;
		}
	}
	pd_w_mmap2(w, &e);
}

/* first and last timestamp of the jitdump (its header and every record) */
static void dump_times(const struct jd_file *jd, uint64_t *first, uint64_t *last)
{
	*first = jd->timestamp;
	*last = jd->timestamp;
	for (size_t i = 0; i < jd->nrecs; i++) {
		uint64_t t = jd->recs[i].timestamp;
		if (t && t < *first)
			*first = t;
		if (t > *last)
			*last = t;
	}
}

/* Does [a, a + n) overlap any mapping of the MAPS text? */
static bool maps_overlap(const struct hx_group *g, uint64_t a, uint64_t n)
{
	const char *end = g->maps + g->maps_len;
	for (const char *l = g->maps; l < end;) {
		const char *nl = memchr(l, '\n', (size_t)(end - l));
		size_t len = nl ? (size_t)(nl - l) : (size_t)(end - l);
		char line[PD_PATH_MAX + 128];
		snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1), l);
		l += len + 1;
		struct mline m;
		if (!parse_mline(line, &m) && a < m.end && m.start < a + n)
			return true;
	}
	return false;
}

/* The marker: the capture unmaps it before it reads its maps (perf never sees
 * a munmap), so its address is reconstructed: the first free page next to
 * the arena, where the kernel's top-down allocator put it.  perf inject -j
 * reads only its name and pid, and consumes the event. */
static void marker_event(struct pd_writer *w, const struct hx_group *g, uint32_t pid, uint64_t t,
			 const struct hx_toperf_opts *o)
{
	const uint64_t page = 4096;
	uint64_t hi = 0;
	for (uint32_t i = 0; i < g->nfuncs; i++) {
		if (g->funcs[i].addr + g->funcs[i].size > hi)
			hi = g->funcs[i].addr + g->funcs[i].size;
	}
	uint64_t at = (hi + page - 1) & ~(page - 1);
	for (int k = 0; k < 4096 && maps_overlap(g, at, page); k++)
		at += page;
	struct stat st;
	memset(&st, 0, sizeof(st));
	stat(g->dump_path, &st);
	/* the kernel names a mapping by its absolute path */
	char abs[PATH_MAX];
	const char *name = o->marker_path ? o->marker_path : realpath(g->dump_path, abs) ? abs : g->dump_path;
	struct pd_mmap2 e = {
		.pid = pid, .tid = pid, .start = at, .len = page, .pgoff = 0,
		.maj = major(st.st_dev), .min = minor(st.st_dev), .ino = st.st_ino,
		.prot = 1u | 4u, .flags = 2u,           /* PROT_READ|PROT_EXEC, MAP_PRIVATE */
		.misc = PD_MISC_USER, .filename = name, .time = t,
	};
	pd_w_mmap2(w, &e);
}

static int write_maps(struct pd_writer *w, const struct hx_group *g, uint32_t pid, uint64_t t0,
		      const struct hx_toperf_opts *o, struct ju_err *err)
{
	const char *end = g->maps + g->maps_len;
	/* in time order: mappings from before the dump, the marker, then the
	 * arena created after it (facts section 1) */
	for (int pass = 0; pass < 3; pass++) {
		if (pass == 1) {
			marker_event(w, g, pid, t0 - 2, o);
			continue;
		}
		for (const char *l = g->maps; l < end;) {
			const char *nl = memchr(l, '\n', (size_t)(end - l));
			size_t n = nl ? (size_t)(nl - l) : (size_t)(end - l);
			char line[PD_PATH_MAX + 128];
			snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) - 1 ? n : sizeof(line) - 1), l);
			l += n + 1;
			struct mline m;
			if (parse_mline(line, &m))
				return ju_errf(err, EINVAL, 0, "%s: MAPS record: cannot parse \"%s\"", g->case_path, line);
			if (is_marker(&m, pid))
				continue;     /* written above, once */
			if (is_arena(g, &m) != (pass == 2))
				continue;
			map_event(w, &m, pid, t0 - (pass == 0 ? 1000 : 1), o);
		}
	}
	return 0;
}

/* The user callchain the kernel records in FP mode (perf_callchain_user):
 * PERF_CONTEXT_USER, the pc, then its frame-record walk over live memory,
 * which is the fp unwinder over the sample's whole stack copy (the kernel-fp
 * column checks that equality where perf_event_open works). */
static uint64_t kernel_chain(const struct hx_sample *s, const struct uw_arch *arch, uint64_t *ips)
{
	struct uw_sample us = { .arch = arch, .abi = s->abi, .mask = s->mask, .stack_addr = s->stack_addr,
				.stack = s->stack, .stack_size = s->stack_size };
	memcpy(us.regs, s->regs, sizeof(us.regs));
	struct uw_result r;
	uw_fp.unwind(NULL, NULL, &us, &r);
	ips[0] = UINT64_C(0xfffffffffffffe00);      /* PERF_CONTEXT_USER */
	for (int f = 0; f < r.n && f < UW_MAX_FRAMES; f++)
		ips[1 + f] = r.addr[f];
	return 1 + (uint64_t)(r.n < UW_MAX_FRAMES ? r.n : UW_MAX_FRAMES);
}

/* When perf is told the sample was taken: after every record of the dump,
 * or, in a case whose code has generations, in its generation: after the
 * records written before its GEN record, before any written after (a
 * sample's capture takes microseconds, the step is a nanosecond). */
static uint64_t sample_time(const struct hx_group *g, const struct hx_sample *s, size_t i, uint64_t last)
{
	if (g->ngens && s->gen <= g->ngens)
		return g->gen_time[s->gen] + i + 1;
	return last + SAMPLE_STEP_NS * (i + 1);
}

static int write_group(struct pd_writer *w, const struct hx_group *g, const struct uw_arch *arch,
		       const struct hx_toperf_opts *o, struct ju_err *err)
{
	if (!g->dump_path || !g->maps)
		return ju_errf(err, EINVAL, 0, "%s: the case has no %s record", g->case_path,
			       g->dump_path ? "MAPS" : "DUMP");
	struct jd_file jd;
	int rc = jd_open(&jd, g->dump_path, err);
	if (rc) {
		ju_err_prefix(err, "%s: offset 0x%llx: ", g->dump_path, (unsigned long long)err->offset);
		return rc;
	}
	uint32_t pid = jd.pid;
	uint64_t first, last;
	dump_times(&jd, &first, &last);
	jd_close(&jd);
	if (first < 10000)
		return ju_errf(err, EINVAL, 0, "%s: timestamps start at %llu: not CLOCK_MONOTONIC", g->dump_path,
			       (unsigned long long)first);
	pd_w_comm(w, pid, pid, "jitunwind", first - 2000);
	if ((rc = write_maps(w, g, pid, first, o, err)))
		return rc;
	uint32_t size = w->attr.sample_stack_user;
	uint64_t ips[UW_MAX_FRAMES + 1];
	for (size_t i = 0; i < g->nsamples; i++) {
		const struct hx_sample *s = &g->samples[i];
		struct pd_sample ps = {
			.ip = s->regs[arch->perf_ip], .pid = pid, .tid = pid,
			.time = sample_time(g, s, i, last), .period = 1,
			.abi = s->abi, .mask = s->mask, .stack = s->stack,
			.dyn_size = s->stack_size < size ? s->stack_size : size,
		};
		memcpy(ps.regs, s->regs, sizeof(ps.regs));
		if (o->callchain_fp) {
			ps.nr = kernel_chain(s, arch, ips);
			ps.ips_w = ips;
		}
		pd_w_sample(w, &ps);
	}
	return 0;
}

static void features(struct pd_features *ft, struct utsname *u, const struct uw_arch *arch)
{
	if (uname(u))
		memset(u, 0, sizeof(*u));
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	*ft = (struct pd_features){
		/* the recording's arch, not the host's: an aarch64 run under qemu-user */
		.arch = arch->facts->name, .osrelease = u->release, .hostname = u->nodename,
		.version = "jitunwind", .nr_cpus = n > 0 ? (uint32_t)n : 1, .cpuid = arch->perf_cpuid,
	};
}

/* Groups -> one perf.data at out. */
static int write_groups(const struct hx_group *gs, size_t n, const struct uw_arch *arch, const char *out,
			const struct hx_toperf_opts *o, struct ju_err *err)
{
	struct pd_writer_opts wo = {
		.attr_size = o->attr_size ? o->attr_size : PD_ATTR_SIZE_VER7,
		.sample_type = PD_SAMPLE_IP | PD_SAMPLE_TID | PD_SAMPLE_TIME | PD_SAMPLE_CALLCHAIN |
			       PD_SAMPLE_REGS_USER | PD_SAMPLE_STACK_USER,
		.regs_mask = arch->facts->perf_mask,
		.stack_size = o->stack_size ? o->stack_size : 8192,
	};
	if (o->callchain_fp) {
		/* perf record --call-graph fp on arm64 (arch__add_leaf_frame_record_opts):
		 * LR alone, so perf script can add the leaf's caller */
		if (arch->perf_lr < 0)
			return ju_errf(err, EINVAL, 0, "%s: fp mode with the LR record is arm64's; %s has no link register",
				       out, arch->facts->name);
		wo.sample_type &= ~(uint64_t)PD_SAMPLE_STACK_USER;
		wo.regs_mask = UINT64_C(1) << arch->perf_lr;
		wo.stack_size = 0;
	}
	struct pd_writer w;
	int rc = pd_writer_init(&w, &wo);
	if (rc) {
		rc = ju_errf(err, -rc, 0, "%s: attr size %u, stack size %u: %s", out, wo.attr_size, wo.stack_size,
			     strerror(-rc));
		pd_writer_free(&w);
		return rc;
	}
	for (size_t i = 0; !rc && i < n; i++)
		rc = write_group(&w, &gs[i], arch, o, err);
	if (!rc) {
		/* one round: perf sorts everything by time before it is processed */
		pd_w_finished_round(&w);
		struct pd_features ft;
		struct utsname u;
		features(&ft, &u, arch);
		rc = pd_w_finish(&w, &ft, out, err);
	}
	pd_writer_free(&w);
	return rc;
}

int hx_toperf_write_group(const struct hx_group *g, const struct uw_arch *arch, const char *out,
			  const struct hx_toperf_opts *o, struct ju_err *err)
{
	return write_groups(g, 1, arch, out, o, err);
}

int hx_toperf_write(const char *samples_path, const char *out, const struct hx_toperf_opts *o,
		    struct ju_err *err)
{
	struct hx_samples s;
	int rc = hx_samples_read(&s, samples_path, err->msg, sizeof(err->msg));
	if (rc)
		return rc < 0 ? rc : -EINVAL;
	const struct uw_arch *arch = uw_arch_by_mach((uint16_t)s.elf_mach);
	if (!arch)
		rc = ju_err_at(err, EINVAL, samples_path, 0xc, "ELF machine %u is not an arch jitunwind knows",
			       s.elf_mach);
	else
		rc = write_groups(s.groups, s.ngroups, arch, out, o, err);
	hx_samples_free(&s);
	return rc;
}
