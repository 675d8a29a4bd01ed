/* perf.data: the file `perf record` writes and `perf script`/`inject` read
 * (tools/perf/Documentation/perf.data-file-format.txt; record layouts from
 * the kernel's include/uapi/linux/perf_event.h).  One writer and one reader,
 * shared by `record --perf-data` and the replay of real recordings.
 * All integers little-endian (the only byte order this project runs on);
 * a byte-swapped magic is rejected with its offset. */
#ifndef UW_PERFDATA_H
#define UW_PERFDATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "juerr.h"

/* perf_event_attr.sample_type bits (perf_event.h enum perf_event_sample_format) */
enum {
	PD_SAMPLE_IP = 1u << 0, PD_SAMPLE_TID = 1u << 1, PD_SAMPLE_TIME = 1u << 2,
	PD_SAMPLE_ADDR = 1u << 3, PD_SAMPLE_READ = 1u << 4, PD_SAMPLE_CALLCHAIN = 1u << 5,
	PD_SAMPLE_ID = 1u << 6, PD_SAMPLE_CPU = 1u << 7, PD_SAMPLE_PERIOD = 1u << 8,
	PD_SAMPLE_STREAM_ID = 1u << 9, PD_SAMPLE_RAW = 1u << 10, PD_SAMPLE_BRANCH_STACK = 1u << 11,
	PD_SAMPLE_REGS_USER = 1u << 12, PD_SAMPLE_STACK_USER = 1u << 13, PD_SAMPLE_WEIGHT = 1u << 14,
	PD_SAMPLE_DATA_SRC = 1u << 15, PD_SAMPLE_IDENTIFIER = 1u << 16, PD_SAMPLE_TRANSACTION = 1u << 17,
	PD_SAMPLE_REGS_INTR = 1u << 18, PD_SAMPLE_PHYS_ADDR = 1u << 19, PD_SAMPLE_AUX = 1u << 20,
	PD_SAMPLE_CGROUP = 1u << 21, PD_SAMPLE_DATA_PAGE_SIZE = 1u << 22,
	PD_SAMPLE_CODE_PAGE_SIZE = 1u << 23, PD_SAMPLE_WEIGHT_STRUCT = 1u << 24,
	PD_SAMPLE_KNOWN = (1u << 25) - 1,
};

/* perf_event_attr flag bits (the bitfield after read_format, in declaration order) */
enum {
	PD_ATTR_DISABLED = 0, PD_ATTR_INHERIT = 1, PD_ATTR_EXCLUDE_KERNEL = 5, PD_ATTR_EXCLUDE_HV = 6,
	PD_ATTR_MMAP = 8, PD_ATTR_COMM = 9, PD_ATTR_FREQ = 10, PD_ATTR_ENABLE_ON_EXEC = 12,
	PD_ATTR_TASK = 13, PD_ATTR_MMAP_DATA = 17, PD_ATTR_SAMPLE_ID_ALL = 18,
	PD_ATTR_EXCLUDE_CALLCHAIN_USER = 22, PD_ATTR_MMAP2 = 23, PD_ATTR_COMM_EXEC = 24,
	PD_ATTR_USE_CLOCKID = 25,
};

/* record types (perf_event.h enum perf_event_type; 64+ are perf's own) */
enum {
	PD_REC_MMAP = 1, PD_REC_LOST = 2, PD_REC_COMM = 3, PD_REC_EXIT = 4, PD_REC_FORK = 7,
	PD_REC_SAMPLE = 9, PD_REC_MMAP2 = 10, PD_REC_FINISHED_ROUND = 68,
};

/* header.misc */
enum {
	PD_MISC_CPUMODE_MASK = 7, PD_MISC_KERNEL = 1, PD_MISC_USER = 2,
	PD_MISC_MMAP_DATA = 1 << 13, PD_MISC_COMM_EXEC = 1 << 13, PD_MISC_MMAP_BUILD_ID = 1 << 14,
	PD_MISC_BUILD_ID_SIZE = 1 << 15,   /* in a HEADER_BUILD_ID entry: byte 20 is the size */
};

/* feature bits of the header's flags bitmap */
enum {
	PD_FEAT_BUILD_ID = 2, PD_FEAT_HOSTNAME = 3, PD_FEAT_OSRELEASE = 4, PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6, PD_FEAT_NRCPUS = 7, PD_FEAT_CPUID = 9, PD_FEAT_CMDLINE = 11, PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_SAMPLE_TIME = 21, PD_FEAT_CLOCKID = 23, PD_FEAT_BITS = 256,
};

/* sizes of perf_event_attr per ABI revision (perf_event.h PERF_ATTR_SIZE_VER*):
 * perf reads a file whose attr is no larger than its own */
enum {
	PD_ATTR_SIZE_VER0 = 64, PD_ATTR_SIZE_VER5 = 112,
	PD_ATTR_SIZE_VER6 = 120,   /* perf 5.5 .. 5.12 (Debian 11's perf 5.10) */
	PD_ATTR_SIZE_VER7 = 128,   /* perf 5.13 .. 6.2 (Debian 12's perf 6.1) */
	PD_ATTR_SIZE_VER8 = 136,   /* perf 6.3 on */
};

#define PD_MAX_ATTRS 64
#define PD_BUILD_ID_MAX 20
#define PD_PATH_MAX 4096
#define PD_MAGIC "PERFILE2"
#define PD_MAGIC_SWAPPED "2ELIFREP"    /* a perf.data of the other byte order */
#define PD_HEADER_SIZE 104           /* magic, size, attr_size, 3 sections, 256-bit flags */
#define PD_NAME_ALIGN 64             /* perf pads header strings and build-id names to 64 */
#define PD_MAX_EVENT 0xffffu

struct pd_attr {
	uint32_t type, size;
	uint64_t config, sample_period, sample_type, read_format, flags;
	uint32_t wakeup_events, bp_type;
	uint64_t config1, config2, branch_sample_type, sample_regs_user;
	uint32_t sample_stack_user;
	int32_t clockid;
	uint64_t sample_regs_intr;
	uint32_t aux_watermark;
	uint16_t sample_max_stack;
	uint32_t aux_sample_size;
	uint64_t sig_data, config3;
	/* from the attrs section: the event ids this attr owns */
	const uint8_t *ids;
	uint64_t nids;
};

static inline bool pd_attr_flag(const struct pd_attr *a, int bit) { return a->flags >> bit & 1; }

/* ---- writer ---- */

struct pd_buf {
	uint8_t *p;
	size_t len, cap;
	int err;                     /* sticky: the first -errno, checked once at the end */
};

struct pd_build_id {
	char path[PD_PATH_MAX];
	uint8_t id[PD_BUILD_ID_MAX];
	uint8_t size;
};

struct pd_writer {
	struct pd_buf b;
	struct pd_attr attr;
	size_t attrs_at, data_at;    /* where the header's sections are back-patched */
	uint64_t first_time, last_time;
	uint64_t nsamples;
	struct pd_build_id *bids;
	size_t nbids, bcap;
};

/* What the writer needs to know about the recording (pd_writer_init). */
struct pd_writer_opts {
	uint32_t attr_size;          /* PD_ATTR_SIZE_VER6 for perf 5.10, VER7 for 6.1, VER8 newer */
	uint64_t sample_type;        /* IP|TID|TIME|REGS_USER|STACK_USER, CALLCHAIN optional */
	uint64_t regs_mask;          /* perf register ids of the arch */
	uint32_t stack_size;         /* sample_stack_user: a multiple of 8 */
};

struct pd_mmap2 {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	bool has_build_id;           /* MMAP2 carries a build-id instead of maj/min/ino */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint8_t build_id[PD_BUILD_ID_MAX], build_id_size;
	uint32_t prot, flags;
	uint16_t misc;               /* PD_MISC_USER, | PD_MISC_MMAP_DATA for a non-exec map */
	const char *filename;
	uint64_t time;
};

struct pd_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time, addr, id, stream_id, period;
	uint32_t cpu;
	uint64_t nr;                 /* callchain entries */
	const uint8_t *ips;          /* nr little-endian u64 (reader: into the file) */
	const uint64_t *ips_w;       /* writer: nr entries */
	uint64_t abi;                /* PERF_SAMPLE_REGS_ABI_64 = 2, 0 = no registers */
	uint64_t mask;
	uint64_t regs[64];           /* by perf register id */
	uint64_t stack_size;         /* the attr's dump size (0: no stack) */
	const uint8_t *stack;        /* writer: dyn_size bytes; reader: into the file */
	uint64_t dyn_size;           /* bytes really copied */
	uint16_t misc;
};

int pd_writer_init(struct pd_writer *w, const struct pd_writer_opts *o);
void pd_writer_free(struct pd_writer *w);
void pd_w_comm(struct pd_writer *w, uint32_t pid, uint32_t tid, const char *comm, uint64_t time);
void pd_w_mmap2(struct pd_writer *w, const struct pd_mmap2 *m);
void pd_w_sample(struct pd_writer *w, const struct pd_sample *s);
void pd_w_finished_round(struct pd_writer *w);
/* A DSO's build-id for the HEADER_BUILD_ID feature (perf checks the file against it). */
void pd_w_build_id(struct pd_writer *w, const char *path, const uint8_t *id, uint8_t size);

struct pd_features {
	const char *arch;            /* uname -m of the recording machine */
	const char *osrelease, *hostname, *version;
	uint32_t nr_cpus;
	const char *cpuid;           /* HEADER_CPUID, as perf record writes it there; NULL: none */
};
/* Ends the data section, writes the feature sections and the file (path NULL:
 * the file stays in w->b). 0 or -errno. */
int pd_w_finish(struct pd_writer *w, const struct pd_features *ft, const char *path,
		struct ju_err *err);

/* ---- reader ---- */

struct pd_section { uint64_t offset, size; };

struct pd_file {
	char path[PD_PATH_MAX];
	const uint8_t *data;
	size_t size;
	bool mapped;
	uint64_t header_size, attr_size;
	struct pd_section attrs_sec, data_sec;
	uint64_t features[PD_FEAT_BITS / 64];
	struct pd_section feat[PD_FEAT_BITS];
	struct pd_attr attrs[PD_MAX_ATTRS];
	size_t nattrs;
};

struct pd_event {
	uint64_t offset;             /* of the record in the file */
	uint32_t type;
	uint16_t misc, size;
	const struct pd_attr *attr;  /* the attr it belongs to (samples, and sample_id_all) */
	/* COMM, MMAP, MMAP2, FORK, EXIT; sample_id fields for every type */
	uint32_t pid, tid, ppid, ptid;
	uint64_t time;
	struct pd_mmap2 mmap;        /* MMAP and MMAP2 (filename points into the file) */
	size_t name_len;
	const char *comm;
	struct pd_sample sample;
};

struct pd_iter { uint64_t off; };

/* Memory-maps and validates header, attrs and feature table. 0, or -errno
 * with "PATH: offset 0x..: what was expected" in err. */
int pd_open(struct pd_file *f, const char *path, struct ju_err *err);
int pd_parse_mem(struct pd_file *f, const uint8_t *data, size_t size, const char *path,
		 struct ju_err *err);
void pd_close(struct pd_file *f);
/* Next event of the data section: 1 an event, 0 the end, -errno (err names the offset). */
int pd_next(const struct pd_file *f, struct pd_iter *it, struct pd_event *ev, struct ju_err *err);
/* One PERF_RECORD_SAMPLE body (the n bytes after its 8-byte header) as the
 * kernel lays it out for attr a's sample_type, sample_regs_user and
 * sample_stack_user (perf_event.h), for a reader that has a record but no
 * file (the kernel sampler's ring buffer).  off: the body's offset in what
 * names it (messages: "WHAT: offset 0x..: ...").  Every field is bounded by
 * n; s->ips and s->stack point into body.  0, or -EINVAL with err set. */
int pd_decode_sample(const struct pd_attr *a, const uint8_t *body, size_t n, uint64_t off, const char *what,
		     struct pd_sample *s, struct ju_err *err);
/* A perf_header_string feature (ARCH, OSRELEASE, ...): 0 and *s, or -ENOENT / -EINVAL. */
int pd_feat_string(const struct pd_file *f, int feat, const char **s, struct ju_err *err);
/* The n-th HEADER_BUILD_ID entry: 1 found, 0 past the last, -errno. */
int pd_feat_build_id(const struct pd_file *f, size_t n, struct pd_build_id *out, uint16_t *misc,
		     struct ju_err *err);
static inline uint64_t pd_u64(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
	       (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
}

#endif
