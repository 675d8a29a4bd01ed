/* Strict jitdump reader (facts section 1), memory-mapped, every length
 * checked before use.  Records are kept as perf reads them: an
 * UNWINDING_INFO applies to the next CODE_LOAD. */
#ifndef UW_JITDUMP_H
#define UW_JITDUMP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "unwinders/model/jdwalk.h"


struct jd_load {
	uint64_t file_off;
	uint64_t timestamp;
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
	const char *name;
	const uint8_t *code;
	/* the UNWINDING_INFO perf attaches to this load, if any */
	bool has_unwind;
	uint64_t unwind_file_off;
	const uint8_t *unwind;        /* unwinding_size bytes: eh_frame then eh_frame_hdr */
	uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;
};

/* A CODE_MOVE as perf inject takes it (jit_repipe_code_move): no new file,
 * an MMAP2 of jitted-<pid>-<code_index>.so at new_code_addr, pgoff
 * GEN_ELF_TEXT_OFFSET, its length from the UNWINDING_INFO still PENDING
 * then (ALIGN_8(code_size) + its mapped_size, else code_size alone: the
 * moved map then ends with the code, its .eh_frame outside it).  The old
 * map stays in perf's tree (a move writes no unmap). */
struct jd_move {
	uint64_t file_off;
	uint64_t timestamp;
	uint32_t pid, tid;
	uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
	uint64_t mapped_size;         /* the pending UNWINDING_INFO's, 0 if none was pending */
	size_t nloads_before;         /* CODE_LOADs before it in the file: where it falls among them */
};

struct jd_record {
	uint64_t file_off;
	uint32_t id, total_size;
	uint64_t timestamp;
};

struct jd_file {
	char path[4096];
	const uint8_t *data;
	size_t size;
	uint32_t version, total_size, elf_mach, pid;
	uint64_t timestamp, flags;
	struct jd_record *recs;
	size_t nrecs;
	struct jd_load *loads;
	size_t nloads;
	struct jd_move *moves;        /* in file order */
	size_t nmoves;
	size_t nunwind_lost;          /* UNWINDING_INFO records no load picked up */
	bool heap;                    /* jd_open read data into memory (else mapped it) */
};

/* 0, or a negative errno with err (offset + what was expected): -EINVAL not a
 * valid jitdump, -ENOMEM, or the errno of open/fstat/read/mmap. */
int jd_open(struct jd_file *f, const char *path, struct ju_err *err);
/* jd_open, but a last record cut short by the end of the file (a JIT still
 * writing, a copy cut off) ends the dump as perf inject's reader ends it,
 * after the whole records before it: 0 with tail->msg naming it (offset,
 * what was expected), "" when the file ends on a record boundary. */
int jd_open_whole_records(struct jd_file *f, const char *path, struct ju_err *err, struct ju_err *tail);
int jd_parse_mem(struct jd_file *f, const uint8_t *data, size_t size, struct ju_err *err);
void jd_close(struct jd_file *f);

#endif
