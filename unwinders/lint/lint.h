/* jitdump linter (facts sections 1, 2, 7): any producer's dump read the way
 * perf reads it, by a streaming walk over a memory-mapped file.  Every rule
 * has a stable id, a severity and one sentence saying what perf will do.
 *
 * Memory is independent of the file size: the walk keeps perf's pending
 * UNWINDING_INFO/DEBUG_INFO (pointers into the map) and three bounded
 * histories, each a fixed-capacity table that forgets its oldest entries:
 * live mappings (LINT_MAX_MAPS, for overlaps and CODE_MOVE), seen code_index
 * intervals (LINT_MAX_INDEX, sequential indices cost one entry), and code
 * hashes (LINT_CODE_SLOTS, direct-mapped, a hit is confirmed by comparing
 * the bytes in the map; they only say which loads the code check's memo
 * may serve).  When one of the first two forgets, rule JD099 says so once. */
#ifndef UW_LINT_H
#define UW_LINT_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "unwinders/model/perfview.h"
#include "unwinders/model/jdwalk.h"
#include "juerr.h"

#define LINT_MAX_MAPS 65536
#define LINT_MAX_INDEX 65536
#define LINT_CODE_SLOTS 65536
#define LINT_MAX_ROWS 4096        /* CFI rows per FDE the code check follows */
#define LINT_MAX_INSNS 65536      /* instructions per FDE the code check follows */

enum lint_sev { LINT_INFO, LINT_WARNING, LINT_ERROR };

/* Stable ids: never renumber, only append.  Removed, their ids not reused:
 * JD025 identical-code (perf 6.1 gives two jitted .so files of the same code
 * different build-ids: it was a false finding). */
enum lint_rule_id {
	LR_NOT_JITDUMP,         /* JD001 */
	LR_VERSION,             /* JD002 */
	LR_HEADER_SIZE,         /* JD003 */
	LR_HEADER_FLAGS,        /* JD004 */
	LR_ARCH_TIMESTAMP,      /* JD005 */
	LR_ELF_MACH,            /* JD006 */
	LR_FILE_NAME,           /* JD007 */
	LR_RECORD_TRUNCATED,    /* JD010 */
	LR_RECORD_SIZE,         /* JD011 */
	LR_RECORD_UNKNOWN,      /* JD012 */
	LR_AFTER_CLOSE,         /* JD014 */
	LR_TIMESTAMP_BACKWARDS, /* JD015 */
	LR_RECORD_PID,          /* JD016 */
	LR_LOAD_NAME,           /* JD020 */
	LR_LOAD_CODE_SIZE,      /* JD021 */
	LR_LOAD_TRAILING,       /* JD022 */
	LR_LOAD_EMPTY,          /* JD023 */
	LR_LOAD_VMA,            /* JD024 */
	LR_DUPLICATE_INDEX,     /* JD026 */
	LR_ADDR_WRAP,           /* JD027 */
	LR_UNWIND_AFTER_LOAD,   /* JD030 */
	LR_UNWIND_NO_LOAD,      /* JD031 */
	LR_UNWIND_OVERWRITTEN,  /* JD032 */
	LR_UNWIND_SIZE,         /* JD033 */
	LR_HDR_SIZE_ZERO,       /* JD034 */
	LR_HDR_FIRST,           /* JD035 */
	LR_HDR_SIZE_MISMATCH,   /* JD036 */
	LR_EH_FRAME_PARSE,      /* JD037 */
	LR_NO_TERMINATOR,       /* JD038 */
	LR_TERMINATOR_MISPLACED,/* JD039 */
	LR_HDR_PARSE,           /* JD040 */
	LR_HDR_ENCODING,        /* JD041 */
	LR_HDR_NO_TABLE,        /* JD042 */
	LR_HDR_TABLE,           /* JD043 */
	LR_HDR_EH_FRAME_PTR,    /* JD044 */
	LR_FDE_COVERAGE,        /* JD045 */
	LR_FDE_GAP,             /* JD046 */
	LR_FDE_OUTSIDE,         /* JD047 */
	LR_NO_FDE,              /* JD048 */
	LR_MAPPED_ZERO,         /* JD049 */
	LR_MAPPED_SMALL,        /* JD050 */
	LR_MAPPING_OVERLAP,     /* JD051 */
	LR_CFA_VS_CODE,         /* JD052 */
	LR_RA_RULE,             /* JD053 */
	LR_FDE_ABSOLUTE,        /* JD054 */
	LR_UNWIND_EMPTY,        /* JD056 */
	LR_MOVE_UNKNOWN,        /* JD060 */
	LR_MOVE_MISMATCH,       /* JD061 */
	LR_DEBUG_AFTER_LOAD,    /* JD070 */
	LR_DEBUG_NO_LOAD,       /* JD071 */
	LR_DEBUG_MISMATCH,      /* JD072 */
	LR_DEBUG_ENTRIES,       /* JD073 */
	LR_DEBUG_OVERWRITTEN,   /* JD074 */
	LR_DEBUG_RANGE,         /* JD075 */
	LR_PERF_PROFILE,        /* JD090 */
	LR_LIMIT,               /* JD099 */
	LR_REG_BELOW_SP,        /* JD057 */
	LR_REG_SAVED_EARLY,     /* JD058 */
	LR_RA_VS_CODE,          /* JD059 */
	LR_FRAME_BEYOND_STACK,  /* JD080 */
	LR_DEBUG_NAME,          /* JD076 */
	LR_DUMP_DIR,            /* JD091 */
	LR_REG_PAST_LIBUNWIND,  /* JD055 */
	LR_CODE_UNDECODED,      /* JD081 */
	LR_LOAD_NO_UNWIND,      /* JD028 */
	LR_NO_UNWIND_INFO,      /* JD029 */
	LR_CODE_UNRELOCATED,    /* JD082 */
	LR_NO_FDE_NO_FALLBACK,  /* JD083 */
	LR_RECORD_TID,          /* JD017 */
	LR_FP_NO_FRAME,         /* JD084 */
	LR_FP_CLOBBERED,        /* JD085 */
	LR_FP_WINDOW,           /* JD086 */
	LR_CODE_NOT_CODE,       /* JD087 */
	LR_CODE_REUSED,         /* JD062 */
	LR__COUNT
};

struct lint_rule {
	const char *id;           /* "JD030" */
	const char *name;         /* "unwind-after-load" */
	enum lint_sev sev;
	const char *perf;         /* one sentence: what perf will do */
};
extern const struct lint_rule lint_rules[LR__COUNT];
const char *lint_sev_name(enum lint_sev s);
/* By id ("JD030") or name ("unwind-after-load"); NULL if unknown. */
const struct lint_rule *lint_rule_find(const char *s);

#define LINT_MAX_PCS 16

/* Which code a finding is about, for tools that line findings up with
 * samples: the instructions of one load, every instruction of it, or (load
 * 0, whole) every load in the dump. */
struct lint_where {
	uint64_t load;            /* file offset of the CODE_LOAD; 0: none */
	bool whole;               /* every instruction of that load (of every load when load is 0) */
	unsigned npc;             /* else these offsets into its code (the first LINT_MAX_PCS) */
	uint64_t pc[LINT_MAX_PCS];
	/* bytes from pc[i] the finding is about; 0: the instruction at pc[i]
	 * (JD046 names the byte ranges no FDE covers) */
	uint64_t span[LINT_MAX_PCS];
};

#define LINT_FUNC_MAX 128          /* bytes of a load's name a finding keeps */
struct lint_finding {
	const struct lint_rule *rule;
	uint64_t offset;          /* file offset the finding is about */
	char msg[640];            /* the specifics, the load's name in them ('name' (the CODE_LOAD at 0x...)) */
	struct lint_where where;
	char func[LINT_FUNC_MAX]; /* the name of the CODE_LOAD at where.load ("" when none) */
};

/* The finding for a walk that cannot start (JD001) or go on (JD010, JD011). */
void lint_walk_error(const struct ju_err *e, struct lint_finding *f);

/* ---- perf's view of one load: perfview.c's pv_layout, fed a walked record ---- */
void lint_layout(enum pv_profile prof, uint64_t code_addr, uint64_t code_size,
		 const struct jdr_unw *u, struct pv_layout *out);

/* ---- linting ---- */

struct lint_opts {
	enum pv_profile profile;
	const char *name;         /* the file's path, for JD007; NULL skips it */
	unsigned max_per_rule;    /* report at most this many findings per rule (0: all) */
	uint64_t stack_size;      /* perf's user stack copy for JD080 (0: no check) */
	const char *dump_dir;     /* where perf reads the dump, for JD091 (NULL: no check) */
};

struct lint_summary {
	uint64_t bytes, records, loads;
	uint64_t count[3];        /* findings by severity, suppressed ones included */
	uint64_t per_rule[LR__COUNT];
	uint64_t memo_hits;       /* code checks served by the memo (lint_code.c; JU_LINT_MEMO=0: none) */
	bool unreadable;          /* JD001: not a jitdump */
	uint64_t fatal_offset;    /* unreadable: where, and why */
	char fatal[256];
};

typedef void (*lint_report_fn)(const struct lint_finding *f, void *arg);

/* Lint a dump in memory.  Every finding goes to cb (in file order, mostly).
 * 0 when the bytes were walked (even with findings), -1 when they are not a
 * jitdump (sum->unreadable, the JD001 finding was reported). */
int lint_mem(const uint8_t *data, size_t size, const struct lint_opts *o,
	     lint_report_fn cb, void *arg, struct lint_summary *sum);
/* mmap PATH read-only and lint it; pages behind the walk are released as it
 * goes.  -1 with err when the file cannot be opened or mapped, or is not a
 * jitdump (then also reported through cb). */
int lint_file(const char *path, const struct lint_opts *o, lint_report_fn cb, void *arg,
	      struct lint_summary *sum, struct ju_err *err);

/* 0 clean, 1 an error-level finding, 2 unreadable (the CLI's exit codes). */
int lint_exit_code(const struct lint_summary *sum);

#endif
