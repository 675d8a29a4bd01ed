/* `jitunwind trace -- CMD`: a real JIT's own code at every instruction
 * boundary.  The tracer runs CMD under ptrace, follows every thread, finds the
 * jitdump the process writes (its marker mapping, or --jitdump), reads it as it
 * grows through the one jitdump walk, and plants a one-shot breakpoint at every
 * instruction boundary of every CODE_LOAD (decoded from the process's memory).
 * A hit takes a sample as perf would (its user registers, the user stack from
 * SP, the maps of that moment), restores the byte and lets the thread go on.
 * The tracee is always ended or detached, never left stopped. */
#ifndef HX_TRACE_H
#define HX_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define HX_TRACE_MAX_TRUTH 64
#define HX_TRACE_MAX_EXPECT 16

struct hx_trace_cfg {
	char **argv;            /* CMD and its arguments, NULL-terminated (NULL with pid) */
	int pid;                /* --pid PID: attach to this running process instead (0: none) */
	const char *jitdump;    /* --jitdump FILE, or NULL: the marker mapping jit-<pid>.dump */
	double time_s;          /* --time S: end the trace (and the process) after S seconds; 0: none */
	unsigned hits;          /* --hits N: sample each boundary up to N times (default 1) */
	size_t stack_size;      /* --stack-size N: bytes of user stack per sample (default 8192) */
	FILE *log;              /* findings and events as they happen (stderr) */
	const char *samples_text;   /* --samples-text F (written by the CLI) */
	bool no_flush;          /* --no-flush: CMD's jitdump writes left as buffered as it made them */
	const char *flush_so;   /* the LD_PRELOAD shim that flushes them (harness/trace/shim), or NULL */
	/* judging (tracejudge.c) */
	int profile;            /* --perf-profile: enum pv_profile */
	const char *unwinders;  /* --unwinders LIST (NULL: fp,libunwind,libdw,oracle) */
	const char *perf_cmd;   /* --perf CMD: the perf column's perf (NULL: perf on PATH) */
	const char *json, *junit, *html;
	bool tap;
	const char *write_cases; /* --write-cases DIR (tracecases.c) */
	const char *only;       /* --only GLOB: boundary breakpoints only in loads so named (NULL: all) */
	size_t max_loads;       /* --max-loads N: in the first N such loads (0: no limit) */
	size_t max_samples;     /* --max-samples N: sampling stops after N (0: no limit) */
	/* the gate: --expect 'UNWINDER = VERDICT[; exceptions]' (repeatable), a
	 * case's [expect] line; parsed into gate by hx_trace_gate_parse */
	const char *expect[HX_TRACE_MAX_EXPECT];
	int nexpect;
	struct hx_case *gate;   /* NULL: no --expect (the exit status does not judge) */
	bool hw_bp;             /* --hw-breakpoints: boundaries sampled by hardware execute
				 * breakpoints where the kernel gives them (tracehw.c) */
};

/* One sample as perf would take it. */
struct hx_trace_sample {
	uint64_t pc, sp, tid;
	uint64_t abi, mask;
	uint64_t regs[64];      /* by perf register id */
	uint8_t *stack;         /* stack_len bytes from sp */
	size_t stack_len;
	char *maps;             /* /proc/PID/maps at the hit (shared with the samples before it
				 * while it did not change: owned by the result's maps_pool) */
	/* the truth by execution: pc, the return addresses of the live JIT
	 * activations, the native frames beyond the outermost (libdw, full memory) */
	uint64_t truth[HX_TRACE_MAX_TRUTH];
	int ntruth;
	/* the first ncopy frames of the truth are what an unwinder can reach
	 * from the sample: each return address's slot lies in the stack copy
	 * (below sp + stack_len); the rest only a full-memory unwind sees */
	int ncopy;
	bool truth_known;       /* false: no activation established (judged for agreement only) */
	bool jit_end;           /* the truth ends at a return address into JIT code no activation
				 * accounts for (an interpreter, a stub): judged up to that frame */
	size_t load;            /* the load (index in the result) pc lies in */
	size_t nloads_seen;     /* the dump's loads read when it was taken: perf's view of its moment
				 * holds these (0: taken before any, or by a path that does not say) */
	bool hw;                /* taken by a hardware breakpoint (the kernel's copy), not at an int3 stop */
};

/* One instruction boundary of a load. */
struct hx_trace_bp {
	uint64_t addr;
	bool planted;           /* a user of the site at addr (tracebp.c keeps its byte) */
	bool foreign;           /* a breakpoint instruction of the program's own is there: none of ours */
	bool hw;                /* a hardware breakpoint watches it (its int3 lifted) */
	unsigned hits;
	char insn[40];          /* the instruction there, as capstone writes it */
};

/* the tail of a load's code bytes a JIT may fill with a salt in its jitdump
 * copy (CPython 3.15: the last 8, so genelf's build-ids differ per load) */
#define HX_TRACE_SALT 8

struct hx_trace_load {
	char name[256];
	uint64_t addr, size, index;
	bool code_differs;      /* memory differs from the dump's bytes (a finding) */
	uint64_t first_diff;    /* offset of the first differing byte */
	bool salted;            /* ... and every differing byte in the code's last HX_TRACE_SALT
				 * bytes: a salt in the dump's copy, not the code (CPython 3.15) */
	bool undecodable;       /* decoding stopped before the end (a finding) */
	uint64_t decoded;       /* bytes decoded */
	bool closed;            /* CODE_MOVE / CODE_CLOSE removed its breakpoints */
	unsigned patches;       /* bytes the JIT rewrote under the tracer's breakpoints (a finding) */
	uint64_t first_patch;   /* offset of the first */
	unsigned foreign_bps;   /* boundaries holding a breakpoint instruction not the tracer's */
	bool dump_has_bp;       /* the dump's copy holds the tracer's breakpoint (copied from memory) */
	bool copied;            /* its code a copy of another load's holding the tracer's bytes (put back) */
	uint64_t dump_bp_off;
	bool traced;            /* its boundaries got breakpoints (--only, --max-loads, --max-samples) */
	struct hx_trace_bp *bps;
	size_t nbps;
};

enum hx_trace_end {
	HX_TRACE_EXITED,        /* the process exited (status in end_status) */
	HX_TRACE_SIGNALED,      /* killed by signal end_status */
	HX_TRACE_EXEC,          /* it exec'd mid-trace: breakpoints gone, detached */
	HX_TRACE_TIMEOUT,       /* --time ran out: the process was ended */
	HX_TRACE_INTERRUPTED,   /* -- CMD: SIGINT or SIGTERM of the tracer: breakpoints gone, the process ended */
	HX_TRACE_DETACHED,      /* --pid: --time ran out or the tracer was interrupted: breakpoints
				 * gone, every thread detached, the process runs on */
};

struct hx_trace_result {
	pid_t pid;
	enum hx_trace_end end;
	int end_status;
	char jitdump[4096];     /* the file read, "" if none appeared */
	uint64_t jd_read;       /* bytes of it read */
	uint8_t *jd_bytes;      /* what was read, kept for the judging (owned) */
	uint64_t jd_end;        /* the whole records end here: judged up to it */
	bool jd_half;           /* from jd_end on a record not wholly written (a finding) */
	uint64_t nrecs;
	struct hx_trace_load *loads;
	size_t nloads;
	uint64_t samples, foreign_traps, threads_seen;
	uint64_t activations;   /* entries seen (activations pushed) */
	uint64_t unknown;       /* samples whose truth is unknown */
	uint64_t native_fail;   /* activations whose native unwind failed (libdw) */
	uint64_t not_called;    /* entries whose [sp] follows no call: entered by a jump (no activation) */
	uint64_t tail_jumps;    /* activations replaced by one entered at the same SP (a tail jump) */
	char **maps_pool;       /* the distinct maps texts the samples point at */
	size_t nmaps_pool, capmaps_pool;
	uint64_t execs;         /* execs followed before any JIT code (a wrapper's) */
	uint64_t forks;         /* children forked: the breakpoints taken out of their memory, detached */
	uint64_t cut;           /* samples whose truth goes on past the stack copy (judged up to it) */
	uint64_t jit_end;       /* samples whose truth ends in JIT code without an activation */
	uint64_t salted;        /* loads whose dump copy differs from memory only in its salt */
	uint64_t undecodable;   /* loads not all decodable: no breakpoint of ours in them */
	uint64_t copies;        /* loads copied by the JIT from code holding the tracer's bytes (repaired) */
	uint64_t loads_traced;  /* loads whose boundaries got breakpoints */
	uint64_t patches;       /* bytes the JIT rewrote under the tracer's breakpoints, left as written */
	uint64_t late_acts;     /* activations whose chain went through code announced after (no truth) */
	bool capped;            /* --max-samples (or the maps' memory bound) reached: sampling stopped */
	uint64_t maps_bytes;    /* bytes of the distinct maps texts kept */
	/* --hw-breakpoints: the debug registers used per thread (0: int3 only),
	 * why not where refused, the samples they took, hits dropped (a boundary
	 * done or moved, an entry's), rings overflowed, ioctls refused */
	unsigned hw_slots;
	char hw_note[256];
	uint64_t hw_samples, hw_dropped, hw_lost, hw_errors;
	/* the steps over a breakpoint kept planted: the tracer did the
	 * instruction (the int3 never left memory), or the thread single-stepped
	 * it with the program's byte back (other threads ran past it meanwhile) */
	uint64_t steps_emulated, steps_lifted;
	struct hx_trace_sample *smp;   /* every sample, in order */
	size_t nsmp, capsmp;
	char why[512];          /* what failed, for a negative return */
};

/* 0 traced to the end (res->end says how), or a negative errno with res->why:
 * -ENOENT / -EACCES / -ENOEXEC CMD could not be started, -EPERM ptrace refused,
 * -ENOSYS no tracer for this arch (or no ptrace: qemu-user), -ESRCH no jitdump
 * appeared while traced, -EBADMSG the jitdump is not one. */
int hx_trace_run(const struct hx_trace_cfg *cfg, struct hx_trace_result *res);
void hx_trace_result_free(struct hx_trace_result *res);
/* the terminal report: one row per load, boundaries sampled / in the load,
 * never-executed boundaries, findings */
void hx_trace_report(FILE *f, const struct hx_trace_result *res);
/* the samples as text, one line each (--samples-text); 0 or -EIO */
int hx_trace_samples_text(FILE *f, const struct hx_trace_result *res);

/* the jitdump as the trace read it, up to its last whole record (jd_open's
 * contract: 0, or -errno with je; jd_close frees it) */
struct jd_file;
struct ju_err;
int hx_trace_jd_open(const struct hx_trace_result *res, struct jd_file *jd, struct ju_err *je);
/* trace's own options (tracecmd.c): 0 taken (*i past its value), 1 not one
 * of them, -1 a bad value */
/* --expect's lines into cfg->gate, read as a case's [expect]; 0, or -errno with
 * the message naming the --expect at fault in err */
int hx_trace_gate_parse(struct hx_trace_cfg *cfg, struct ju_err *err);
void hx_trace_gate_free(struct hx_trace_cfg *cfg);
/* judge the samples through the session and write the reports (the
 * terminal matrix on stdout).  With --expect: 0 every judged sample met it
 * and each column it names judged some, 1 not, 2 an error; without: 0, or
 * 2 an error (the verdicts are the report's) */
int hx_trace_judge_report(const struct hx_trace_cfg *c, const struct hx_trace_result *res);
/* the samples without a truth by execution: judged against real perf's
 * chain, not judged (no perf column), and each pair of columns' identical
 * chains among them (same[a][b] of both[a][b] compared, a < b) */
#define HX_TRACE_MAX_COLS 8
struct hx_trace_agree {
	size_t judged, unjudged;
	size_t same[HX_TRACE_MAX_COLS][HX_TRACE_MAX_COLS], both[HX_TRACE_MAX_COLS][HX_TRACE_MAX_COLS];
};
/* --write-cases: a case file per distinct (code, unwinding info) of a
 * function with a sample not ok, each line of what was done on out; 0 or
 * -errno (the directory or a file could not be written, the dump not read) */
struct hx_report;
int hx_trace_write_cases(const struct hx_trace_cfg *cfg, const struct hx_trace_result *res,
			 const struct hx_report *rep, FILE *out);

#endif
