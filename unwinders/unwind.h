/* The profiler side's inputs and the one small unwinder interface.
 * Everything here sees only what a profiler sees: a sample (perf-layout
 * registers + a stack copy), the process maps, and the files the JIT emitted. */
#ifndef UW_UNWIND_H
#define UW_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#define UW_MAX_FRAMES 128      /* the kernel's default perf_event_max_stack is 127 */

#include "unwinders/uwarch.h"
#include "juerr.h"

struct uw_sample {
	const struct uw_arch *arch;
	uint64_t abi;
	uint64_t mask;
	uint64_t regs[UW_PERF_REGS];  /* indexed by perf register id */
	uint64_t stack_addr;          /* address of stack[0] (the sampled SP) */
	const uint8_t *stack;
	uint64_t stack_size;          /* bytes available */
	/* a kernel sample's PERF_SAMPLE_CALLCHAIN, user part (context markers
	 * dropped; [0] is the ip); NULL for a breakpoint sample */
	const uint64_t *callchain;
	uint32_t ncallchain;
	/* perf >= 7's libdw path keeps one Dwfl per process for the whole
	 * recording (its address-space cache): a module reported for an earlier
	 * sample stays, and a later load over the same addresses cannot be
	 * reported (dwfl_report_elf refuses an overlap).  Nonzero (the replay of
	 * a real recording: the pid + 1): the libdw emulation shares one Dwfl
	 * per value across all its views.  0: one Dwfl per view (a case). */
	uint64_t dwfl_proc;
	/* perf < 7 makes one Dwfl per sample: with dwfl_proc 0, the view's own
	 * Dwfl is begun again for this sample (a case) */
	bool dwfl_fresh;
	/* perf's libunwind keeps one address space per process
	 * (unwind-libunwind-local.c: UNW_CACHE_GLOBAL, flushed only on exec by
	 * unwind__flush_access), whose per-ip register-state cache answers a pc
	 * with the rules first found there.  Nonzero: the libunwind emulation
	 * keeps one address space per value across views and samples, in the
	 * order they come (uw_libunwind_flush at exec).  0: nothing survives the
	 * sample. */
	uint64_t lu_proc;
};
/* The same process's state as a --call-graph fp perf run keeps it (arm64's
 * leaf step, lrstep.c): another perf run, its own address space and Dwfl,
 * keyed lu_proc ^ UW_PROC_FP_RUN (and dwfl_proc ^ UW_PROC_FP_RUN). */
#define UW_PROC_FP_RUN (UINT64_C(1) << 61)

static inline uint64_t uw_reg(const struct uw_sample *s, int perf_id)
{
	return perf_id >= 0 && perf_id < UW_PERF_REGS ? s->regs[perf_id] : 0;
}

/* Read 8 bytes from the stack copy; false if any byte is outside it. */
static inline bool uw_stack_read(const struct uw_sample *s, uint64_t addr, uint64_t *val)
{
	if (addr < s->stack_addr || addr - s->stack_addr > s->stack_size ||
	    s->stack_size - (addr - s->stack_addr) < 8)
		return false;
	/* the sample's bytes as little-endian (every arch here): one load, not
	 * eight (GCC -O2 kept the byte loop; make bench's fp rate rests on this) */
	uint64_t v;
	memcpy(&v, s->stack + (addr - s->stack_addr), 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	*val = v;
	return true;
}

enum uw_stop {
	UW_STOP_END,        /* reached a zero return address / end of the chain */
	UW_STOP_NO_INFO,    /* no unwinding info for the pc */
	UW_STOP_MEM,        /* a read fell outside the snapshot */
	UW_STOP_BAD_INFO,   /* the unwinding info could not be used (parse error, bad rule) */
	UW_STOP_MAX,        /* frame limit */
	UW_STOP_LOOP,       /* no progress */
	UW_STOP_ERROR,      /* the unwinder library failed */
};
const char *uw_stop_name(enum uw_stop s);
/* why = a "0x<hex of x>" b, as snprintf("%s0x%llx%s") would write it, at a
 * fraction of the cost: every replayed chain ends with a reason. */
void uw_why_hex(char *why, size_t n, const char *a, uint64_t x, const char *b);

#define UW_F_FALLBACK 1u    /* frame found without the emitted CFI */
/* a caller frame perf stores as it is, not as ip - 1: libunwind calls it a
 * signal frame, libdw an activation (perf-check predicts perf's printed chain) */
#define UW_F_ACTIVATION 2u
/* found with the rules perf's libunwind cached at this pc for an earlier load
 * (one address space per process, flushed only at exec: uw_sample.lu_proc) */
#define UW_F_EARLIER_RULES 4u

/* a stop reason: two 64-bit addresses in hex and a library's message fit whole */
#define UW_WHY_LEN 256
/* the longest uw_stop_name() ("no-unwind-info", "outside-snapshot") and its ": " */
#define UW_STOP_NAME_LEN 20

struct uw_result {
	uint64_t addr[UW_MAX_FRAMES];   /* return addresses, ip-1 adjustments undone */
	uint32_t flags[UW_MAX_FRAMES];
	int n;
	enum uw_stop stop;
	char why[UW_WHY_LEN];
	char fallback_why[UW_WHY_LEN];       /* why the first UW_F_FALLBACK frame was found without CFI */
	char earlier_why[UW_WHY_LEN];        /* the first UW_F_EARLIER_RULES frame: which load's rules */
};

struct uw_view;   /* view.h */

/* Which stack an unwinder is given. */
enum uw_sees {
	UW_SEES_DUMP,       /* perf's --call-graph dwarf copy: the first stack_size bytes */
	UW_SEES_WHOLE,      /* the whole stack, as the kernel reads live memory */
};

/* What a chain is compared with for `faithful`. */
enum uw_faithful_ref {
	UW_REF_ORACLE,      /* the oracle under the same perf view and dump size (DWARF) */
	UW_REF_FP,          /* the frame-pointer convention over the truth rows */
	UW_REF_LR_SPLICE,   /* the FP chain spliced with a registers-only CFI step */
	UW_REF_TRUTH,       /* is itself the reference: judged `consistent` with the truth */
	UW_REF_FP_EMU,      /* the `fp` unwinder's chain on the same sample */
	UW_REF_EMULATION,   /* a real profiler: the chain of the unwinder emulating it (emulated_by) */
};

struct uw_unwinder {
	const char *name;
	const char *about;           /* one line for --help */
	enum uw_sees sees;
	enum uw_faithful_ref ref;
	/* arches (uw_arch names) it runs on by default; NULL: every arch */
	const char *const *default_arches;
	bool quiet_why;              /* no stop reason to give: left out of run's "why" lines */
	bool kernel;                 /* reads a kernel sample's CALLCHAIN: the run takes kernel samples */
	const char *expect_as;       /* a case without this unwinder's [expect] key: use this one's */
	/* Build replay state once per view (map set); may be NULL. */
	int (*open)(const struct uw_view *v, void **state, struct ju_err *err);
	int (*unwind)(void *state, const struct uw_view *v, const struct uw_sample *s,
		      struct uw_result *r);
	void (*close)(void *state);
	/* Can it run on this machine? 0, or -1 with the reason (default selection
	 * leaves it out and says why); may be NULL: always. */
	int (*probe)(char *why, size_t len);
	/* UW_REF_EMULATION: the report key of the unwinder its chains are compared
	 * with under that perf profile, NULL when the profile stands for another perf */
	const char *(*emulated_by)(const char *profile);
	/* The version of the library it unwinds with ("1.6", "0.188"), for case
	 * keys that hold from a version on (libunwind@1.8+); NULL: none. */
	const char *(*lib_version)(void);
	/* UW_REF_LR_SPLICE: the DWARF engine of its leaf step (the perf build's
	 * engine picks the fp-mode emulation) */
	const char *step_engine;
	/* perf over this engine prints a signal frame's own pc without the -1 too,
	 * not only its caller's (libdw's dwfl_frame_pc) */
	bool signal_self;
	/* keeps perf's state of a process across its samples (uw_sample.lu_proc):
	 * a replay that tries a sample on several views runs it stateless there,
	 * then once with the state on the view it chose, in sample order */
	bool proc_state;
	/* make bench: the replay rate to reach (samples per CPU second; 0: none) */
	double bench_rate;
};

/* The unwinders of this layer, in report order: X(identifier) each. */
#define UW_UNWINDERS(X) X(uw_fp) X(uw_libunwind) X(uw_libdw) X(uw_oracle) X(uw_lrstep) X(uw_lrstep_dw) \
	X(uw_kernel_fp)
#define UW_EXTERN(id) extern const struct uw_unwinder id;
UW_UNWINDERS(UW_EXTERN)
/* The unwinders of this layer (the run layer adds its columns: harness/run/session.h). */
const struct uw_unwinder *uw_unwinder_by_name(const char *name);
/* Every unwinder of this layer, in report order; n set to the count. */
const struct uw_unwinder *const *uw_unwinders(size_t *n);
/* Does it run by default on this arch (a uw_arch name)?  By arch alone. */
bool uw_unwinder_default_on(const struct uw_unwinder *u, const char *arch);
/* ... and does its probe find what it needs on this machine (perf)? */
bool uw_unwinder_machine_default(const struct uw_unwinder *u, const char *arch);
/* Comma-separated names: all of them, or those every machine runs by default on
 * arch (an unwinder with a probe is machine-dependent: its case keys are `?`). */
void uw_unwinder_list(const char *arch, char *buf, size_t len);
/* Comma-separated names of what this machine runs by default on arch. */
void uw_unwinder_defaults(const char *arch, char *buf, size_t len);
/* The same over a table of n (a layer's own, in report order). */
const struct uw_unwinder *uw_table_find(const struct uw_unwinder *const *t, size_t n, const char *name);
void uw_table_list(const struct uw_unwinder *const *t, size_t n, const char *arch, bool machine,
		   char *buf, size_t len);

#endif
