/* Samples file, format version 1 (documented in docs/replay.md "Samples files").
 * All integers little-endian (host order on the supported arches).
 *
 *   file    := "JUSAMPLE" u32 version(=1) u32 elf_mach record*
 *   record  := u32 type, u32 flags(0), u64 len, payload[len], zero pad to 8
 *   CASE    (1): case file path\0 case text          starts a case group
 *   DUMP    (2): jitdump path\0
 *   MAPS    (3): /proc/<pid>/maps text
 *   FUNC    (4): u32 index, u32 nrows, u64 addr, u64 size, char name[32],
 *                nrows * { u32 offset, u32 len, char insn[48] }
 *   SAMPLE  (5): u32 func (0xffffffff = callee), u32 offset, u64 abi, u64 mask,
 *                u32 nregs, u32 ntruth, u64 stack_addr, u64 stack_size,
 *                u64 regs[nregs], u64 truth[ntruth], u8 fpflag[ntruth] (pad 8),
 *                u8 stack[stack_size]
 *   CRASH   (6): u32 signo, u32 func, u64 pc, u64 offset, u64 fault_addr
 *   ERROR   (7): message text
 *   END     (8): empty; the child finished its case
 *   KSKIP   (9): why kernel samples were not taken (perf_event_open refused)
 *   GEN    (10): u32 gen (1..), u32 how (hx_gen_how; 0 for the first), u64 time:
 *                the case's code is now in generation gen (docs/case-format.md
 *                "Generations"); the FUNC and SAMPLE records after it are its.
 *                time (CLOCK_MONOTONIC ns, the jitdump's clock) is taken after
 *                the generation's records and before its first sample.  A
 *                group without GEN records is all generation 1.
 * A SAMPLE with record flag 1 (kernel) was taken by the kernel at a spin
 * point: its stack is PERF_SAMPLE_STACK_USER's dump, and after the stack (pad
 * to 8) come u64 nchain, u64 chain[nchain]: the CALLCHAIN's user part.
 */
#ifndef HX_SAMPLES_H
#define HX_SAMPLES_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* fpflag[i], from the frame that owns truth[i] (the function whose frame
 * record, set up, would hold it): */
#define HX_FP_SKIPPED 0      /* no record set up: an FP walk passes over truth[i] */
#define HX_FP_REPORTED 1     /* its record holds truth[i] at FP + 8: reported */
#define HX_FP_NOT_RA 2       /* a record is set up, but FP + 8 is not its return address
			      * (push_fp was not the first push): a walk reports that word */

#define HX_SAMPLES_MAGIC "JUSAMPLE"
#define HX_SAMPLES_VERSION 1
#define HX_FUNC_CALLEE 0xffffffffu
#define HX_MAX_TRUTH 64
#define HX_MAX_FUNCS 16

enum { HX_REC_CASE = 1, HX_REC_DUMP, HX_REC_MAPS, HX_REC_FUNC, HX_REC_SAMPLE,
       HX_REC_CRASH, HX_REC_ERROR, HX_REC_END, HX_REC_KSKIP, HX_REC_GEN };
#define HX_GROUP_MAX_GENS 8
#define HX_REC_F_KERNEL 1u
#define HX_MAX_CHAIN 128

struct hx_insn { uint32_t offset, len; char insn[48]; };

struct hx_func {
	uint32_t index;
	uint32_t gen;                /* the generation of the code it describes (1..) */
	uint64_t addr, size;
	char name[32];
	struct hx_insn *rows;
	uint32_t nrows;
};

struct hx_sample {
	uint32_t gen;                /* the generation of the code it was taken in (1..) */
	uint32_t func;
	uint32_t offset;
	uint64_t abi, mask;
	uint64_t regs[64];           /* by perf register id */
	uint32_t ntruth;
	uint64_t truth[HX_MAX_TRUTH];
	uint8_t fpflag[HX_MAX_TRUTH];/* HX_FP_*: what the FP convention reports for truth[i] */
	uint64_t stack_addr, stack_size;
	const uint8_t *stack;        /* points into the file buffer */
	bool kernel;                 /* taken by the kernel's sampler at a spin point */
	uint32_t nchain;
	const uint64_t *chain;       /* kernel: its CALLCHAIN (user part), into the file buffer */
};

struct hx_crash { uint32_t signo, func; uint64_t pc, offset, fault_addr; };

struct hx_group {                /* one case's records */
	char *case_path;
	const char *case_text;
	size_t case_len;
	char *dump_path;
	const char *maps;
	size_t maps_len;
	struct hx_func funcs[HX_MAX_FUNCS];
	uint32_t nfuncs;
	struct hx_sample *samples;
	size_t nsamples;
	bool crashed;
	struct hx_crash crash;
	char *error;
	bool ended;
	char *kskip;                 /* why no kernel samples were taken, or NULL */
	uint32_t ngens;              /* GEN records (0: the code loaded once) */
	uint32_t gen;                /* the generation being read */
	uint64_t gen_time[HX_GROUP_MAX_GENS + 1];   /* by generation: its GEN record's time */
	uint32_t gen_how[HX_GROUP_MAX_GENS + 1];
	size_t nkernel;              /* kernel samples among samples */
};

struct hx_samples {
	uint8_t *data;
	size_t size;
	bool mapped;                 /* data is the file mapped (hx_samples_read), else malloc'd */
	void (*release)(void);       /* set: data belongs to its owner, told by this when freed */
	uint32_t elf_mach;
	struct hx_group *groups;
	size_t ngroups;
};

/* Read and validate a whole samples file. 0, or -1 with "file: offset 0x..: ..." in err. */
int hx_samples_read(struct hx_samples *s, const char *path, char *err, size_t errlen);
int hx_samples_parse(struct hx_samples *s, uint8_t *data, size_t size, const char *path,
		     char *err, size_t errlen);
void hx_samples_free(struct hx_samples *s);

/* Writer side (async-signal-safe where noted). */
int hx_rec_write(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen);
int hx_rec_write_flags(int fd, uint32_t type, uint32_t flags, const void *a, size_t alen,
		       const void *b, size_t blen);
int hx_samples_write_header(int fd, uint32_t elf_mach);
/* The one SAMPLE payload writer (the layout above; the reader is
 * hx_samples_parse): s into buf, which holds HX_SAMPLE_HEAD_MAX + 8 *
 * ntruth + stack_size (+ 8 + 8 * nchain for a kernel sample) bytes; its
 * length.  The stack's bytes come from s->stack, or with copy set from
 * copy(dst, s->stack_addr, n) (the capture child reads its own stack).
 * Async-signal-safe. */
#define HX_SAMPLE_HEAD_MAX (40 + 8 * 64 + HX_MAX_TRUTH + 8)
size_t hx_sample_encode(uint8_t *buf, const struct hx_sample *s,
			void (*copy)(uint8_t *dst, uint64_t src, uint64_t n));
/* Copy one file's bytes into fd (used to merge child files into a record file). */
int hx_copy_records(int dst, const char *src_path, char *err, size_t errlen);

#endif
