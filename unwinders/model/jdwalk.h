/* The profiler side's one jitdump walk (facts section 1): the field offsets
 * of the jitdump specification by name, a bounds-checked record iterator over
 * bytes in memory, and perf's pending UNWINDING_INFO / DEBUG_INFO rules.  The
 * strict reader (jitdump.c), lint and dump all read through it, so a fix to
 * how perf reads a record lands once.  The JIT side's writer
 * (trampolines/jitdump.c) does not use it on purpose: a writer and a reader
 * written apart are what let a reader test catch a writer bug. */
#ifndef UW_JDWALK_H
#define UW_JDWALK_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "juerr.h"

#define JD_MAGIC 0x4A695444u                 /* "JiTD" in host order */
#define JD_FLAGS_ARCH_TIMESTAMP 1ull
enum { JD_CODE_LOAD = 0, JD_CODE_MOVE = 1, JD_CODE_DEBUG_INFO = 2, JD_CODE_CLOSE = 3,
       JD_CODE_UNWINDING_INFO = 4 };

/* struct jitheader */
enum { JD_HDR_MAGIC = 0, JD_HDR_VERSION = 4, JD_HDR_TOTAL_SIZE = 8, JD_HDR_ELF_MACH = 12,
       JD_HDR_PAD1 = 16, JD_HDR_PID = 20, JD_HDR_TIMESTAMP = 24, JD_HDR_FLAGS = 32, JD_HDR_SIZE = 40 };
/* struct jr_prefix, at the start of every record */
enum { JD_REC_ID = 0, JD_REC_TOTAL_SIZE = 4, JD_REC_TIMESTAMP = 8, JD_REC_PREFIX = 16 };
/* JIT_CODE_LOAD: fixed part, then the name (NUL-terminated), then the code */
enum { JD_LOAD_PID = 16, JD_LOAD_TID = 20, JD_LOAD_VMA = 24, JD_LOAD_CODE_ADDR = 32,
       JD_LOAD_CODE_SIZE = 40, JD_LOAD_CODE_INDEX = 48, JD_LOAD_FIXED = 56 };
/* JIT_CODE_MOVE */
enum { JD_MOVE_PID = 16, JD_MOVE_TID = 20, JD_MOVE_VMA = 24, JD_MOVE_OLD_CODE_ADDR = 32,
       JD_MOVE_NEW_CODE_ADDR = 40, JD_MOVE_CODE_SIZE = 48, JD_MOVE_CODE_INDEX = 56, JD_MOVE_FIXED = 64 };
/* JIT_CODE_DEBUG_INFO: fixed part, then nr_entry {u64 addr, i32 lineno, i32 discrim, name\0} */
enum { JD_DEBUG_CODE_ADDR = 16, JD_DEBUG_NR_ENTRY = 24, JD_DEBUG_FIXED = 32,
       JD_DEBUG_ENTRY_NAME = 16 };
/* JIT_CODE_UNWINDING_INFO: fixed part, then .eh_frame and .eh_frame_hdr */
enum { JD_UNW_UNWINDING_SIZE = 16, JD_UNW_EH_FRAME_HDR_SIZE = 24, JD_UNW_MAPPED_SIZE = 32,
       JD_UNW_FIXED = 40 };

struct jdr_hdr {
	uint32_t magic, version, total_size, elf_mach, pad1, pid;
	uint64_t timestamp, flags;
};

struct jdr_load {             /* CODE_LOAD */
	uint32_t pid, tid;
	uint64_t vma, code_addr, code_size, code_index;
	const char *name;         /* NULL unless NUL-terminated inside the record */
	size_t name_len;
	const uint8_t *code;      /* perf's: the record's LAST code_size bytes; NULL if they overlap the name */
	size_t gap;               /* bytes between the name's NUL and the code */
};
struct jdr_move {             /* CODE_MOVE */
	uint32_t pid, tid;
	uint64_t vma, old_code_addr, new_code_addr, code_size, code_index;
};
struct jdr_debug {            /* CODE_DEBUG_INFO */
	uint64_t code_addr, nr_entry;
	const uint8_t *entries;   /* the bytes after the 32-byte fixed part */
	size_t len;
};
struct jdr_unw {              /* CODE_UNWINDING_INFO */
	uint64_t unwinding_size, eh_frame_hdr_size, mapped_size;
	const uint8_t *data;      /* the bytes after the 40-byte fixed part */
	size_t avail;             /* how many there are (perf copies them all) */
};

struct jdr_rec {
	uint64_t off;
	uint32_t id, size;
	uint64_t timestamp;
	const uint8_t *p;         /* size bytes */
	bool short_fixed;         /* smaller than its id's fixed part: its fields are not decoded */
	union {
		struct jdr_load load;
		struct jdr_move move;
		struct jdr_debug debug;
		struct jdr_unw unw;
	} u;
};

struct jdr_iter {
	const uint8_t *data;
	size_t size, off;
	struct jdr_hdr hdr;
	uint64_t nrecs;
};

/* Why the walk could not start or go on; each reader words it its own way. */
enum jdr_errkind {
	JDR_SHORT_HEADER,     /* fewer than 40 bytes */
	JDR_SWAPPED,          /* the magic of the other byte order */
	JDR_BAD_MAGIC,
	JDR_PREFIX_TRUNCATED, /* fewer than 16 bytes left for a record prefix */
	JDR_SIZE_SMALL,       /* total_size below the 16-byte prefix: perf stops */
	JDR_PAST_END,         /* total_size runs past the end of the file: perf stops */
};
/* An error of the walk is a struct ju_err (juerr.h) with kind = one of these,
 * offset = the byte at fault and msg = lint's and dump's wording; the strict
 * reader (jitdump.c) words it its own way from kind and the bytes at offset. */

/* 0, or -EINVAL when the bytes are not a jitdump (err says why).  Records start at
 * the header's total_size when it lies in (40, size], else at 40. */
int jdr_init(struct jdr_iter *it, const uint8_t *data, size_t size, struct ju_err *err);
/* 1 a record in r, 0 end of file, -EINVAL perf stops reading here (err). */
int jdr_next(struct jdr_iter *it, struct jdr_rec *r, struct ju_err *err);

/* perf's pending state (jit_repipe_*): UNWINDING_INFO and DEBUG_INFO apply to
 * the next CODE_LOAD; the unwinding info is cleared after it only when
 * eh_frame_hdr_size != 0.  An info record with a short fixed part changes
 * nothing; any CODE_LOAD, even a short one, takes what is pending. */
struct jdr_pending {
	bool unw_set;
	uint64_t unw_off;
	struct jdr_unw unw;
	bool dbg_set;
	uint64_t dbg_off;
	struct jdr_debug dbg;
};
/* Feed one record.  For a CODE_LOAD, unw and dbg (either may be NULL) get what
 * perf attaches to it, or NULL; *unw points into s and stays valid until the
 * next call. */
void jdr_pending_step(struct jdr_pending *s, const struct jdr_rec *r,
		      const struct jdr_unw **unw, uint64_t *unw_off,
		      const struct jdr_debug **dbg, uint64_t *dbg_off);

#endif
